/*
 * The shm transport: the peer's segment is mapped into this process, so a put is a
 * memcpy, an atomic is a CPU atomic on the mapping, and completion is a memory fence
 * (x86 and ARM caches are coherent between processes: a store is visible to the peer once
 * it leaves the store buffer).
 */
#include <stdio.h>
#include <string.h>
#include "tport/duet_tport.h"

/* The error of an injected fault (out of line: the hot paths keep few registers). */
__attribute__((cold, noinline)) static duet_status_t fault_status(const duet_tport_ep_t *ep, int f)
{
    return DUET_FAIL((duet_status_t)f, RMA, "shm link to rank %d is broken (injected fault: %s)", ep->pe,
                     duet_status_str((duet_status_t)f));
}

static inline duet_status_t check_fault(duet_tport_ep_t *ep)
{
    int f = atomic_load_explicit(&ep->fault, memory_order_relaxed);
    return DUET_LIKELY(f == 0) ? DUET_OK : fault_status(ep, f);
}

static duet_status_t shm_put(duet_tport_ep_t *ep, size_t off, const void *src, size_t n)
{
    duet_status_t st = check_fault(ep);
    if (DUET_UNLIKELY(st)) return st;
    duet_copy(ep->base + off, src, n);
    return DUET_OK;
}

static duet_status_t shm_get(duet_tport_ep_t *ep, void *dst, size_t off, size_t n)
{
    duet_status_t st = check_fault(ep);
    if (DUET_UNLIKELY(st)) return st;
    duet_copy(dst, ep->base + off, n);
    return DUET_OK;
}

static void strided_copy(char *dst, const char *src, ptrdiff_t dst_stride, ptrdiff_t src_stride,
                         size_t nelems, size_t es)
{
    switch (es) { /* fixed sizes compile to single moves */
    case 4:
        for (size_t i = 0; i < nelems; i++)
            memcpy(dst + (ptrdiff_t)i * dst_stride * 4, src + (ptrdiff_t)i * src_stride * 4, 4);
        break;
    case 8:
        for (size_t i = 0; i < nelems; i++)
            memcpy(dst + (ptrdiff_t)i * dst_stride * 8, src + (ptrdiff_t)i * src_stride * 8, 8);
        break;
    default:
        for (size_t i = 0; i < nelems; i++)
            memcpy(dst + (ptrdiff_t)i * dst_stride * (ptrdiff_t)es,
                   src + (ptrdiff_t)i * src_stride * (ptrdiff_t)es, es);
    }
}

static duet_status_t shm_iput(duet_tport_ep_t *ep, size_t off, const void *src, ptrdiff_t dst_stride,
                              ptrdiff_t src_stride, size_t nelems, size_t es)
{
    duet_status_t st = check_fault(ep);
    if (DUET_UNLIKELY(st)) return st;
    strided_copy(ep->base + off, src, dst_stride, src_stride, nelems, es);
    return DUET_OK;
}

static duet_status_t shm_iget(duet_tport_ep_t *ep, void *dst, size_t off, ptrdiff_t dst_stride,
                              ptrdiff_t src_stride, size_t nelems, size_t es)
{
    duet_status_t st = check_fault(ep);
    if (DUET_UNLIKELY(st)) return st;
    strided_copy(dst, ep->base + off, dst_stride, src_stride, nelems, es);
    return DUET_OK;
}

static duet_status_t shm_amo(duet_tport_ep_t *ep, duet_amo_op_t op, size_t off, size_t width,
                             uint64_t operand, uint64_t cond, uint64_t *fetched)
{
    duet_status_t st = check_fault(ep);
    if (DUET_UNLIKELY(st)) return st;
    return duet_tport_cpu_amo(ep->base + off, op, width, operand, cond, fetched);
}

static void shm_notify(duet_tport_ep_t *ep) { duet_doorbell_ring(ep->doorbell); }

/* A put_nbi: the copy now, the doorbell at the next fence or quiet (owed_ring), so that a
 * stream of nbi puts to a peer asleep in a wait does not wake it once per put. */
static duet_status_t shm_put_nbi(duet_tport_ep_t *ep, size_t off, const void *src, size_t n)
{
    duet_status_t st = shm_put(ep, off, src, n);
    if (!atomic_load_explicit(&ep->ring_owed, memory_order_relaxed))
        atomic_store_explicit(&ep->ring_owed, 1, memory_order_relaxed);
    return st;
}

static void owed_ring(duet_tport_ep_t *ep)
{
    if (atomic_load_explicit(&ep->ring_owed, memory_order_relaxed) &&
        atomic_exchange_explicit(&ep->ring_owed, 0, memory_order_seq_cst))
        duet_doorbell_ring(ep->doorbell);
}

static duet_status_t shm_fence(duet_tport_ep_t *ep)
{
    /* stores to one peer are already delivered in program order (TSO on x86; the release
     * fence orders them on weaker machines) */
    atomic_thread_fence(memory_order_release);
    owed_ring(ep);
    return check_fault(ep);
}

static duet_status_t shm_quiet(duet_tport_ep_t *ep)
{
    atomic_thread_fence(memory_order_seq_cst);
    owed_ring(ep);
    return check_fault(ep);
}

static void *shm_ptr(duet_tport_ep_t *ep, size_t off) { return ep->base + off; }

static void shm_inject_fault(duet_tport_ep_t *ep, duet_status_t status)
{
    atomic_store(&ep->fault, (int)status);
}

const duet_tport_ops_t duet_tport_shm_ops = {
    .size = sizeof(duet_tport_ops_t),
    .name = "shm",
    .put = shm_put,
    .get = shm_get,
    .put_nbi = shm_put_nbi, /* complete at once; the doorbell at the next fence or quiet */
    .get_nbi = shm_get,
    .put_value = shm_put,
    .iput = shm_iput,
    .iget = shm_iget,
    .amo = shm_amo,
    .fence = shm_fence,
    .quiet = shm_quiet,
    .notify = shm_notify,
    .ptr = shm_ptr,
    .inject_fault = shm_inject_fault,
    .cpu_amo = 1,
};

/* A mapped peer (or myself) in a heap that also has net peers: data by load/store as above,
 * but every atomic through the heap's one atomic agent, UCP (duet_tport_net_agent_amo), so
 * that no word is updated by CPU atomics here and by UCX/NIC atomics from elsewhere
 * (docs/NETWORK.md 4.8). Bound by duet_tport_net_create only. */
const duet_tport_ops_t duet_tport_shm_netamo_ops = {
    .size = sizeof(duet_tport_ops_t),
    .name = "shm+net-amo",
    .put = shm_put,
    .get = shm_get,
    .put_nbi = shm_put_nbi,
    .get_nbi = shm_get,
    .put_value = shm_put,
    .iput = shm_iput,
    .iget = shm_iget,
    .amo = duet_tport_net_agent_amo,
    .fence = shm_fence,
    .quiet = shm_quiet,
    .notify = shm_notify,
    .ptr = shm_ptr,
    .inject_fault = shm_inject_fault,
};

duet_status_t duet_tport_unsupported_(const char *tport, const char *op)
{
    return DUET_FAIL(DUET_ERR_UNSUPPORTED, RMA, "the %s transport does not support %s", tport, op);
}
