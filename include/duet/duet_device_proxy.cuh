/*
 * duet_device_proxy.cuh — internals of the device API (not API): the proxy path, how a
 * call reaches a remote pe through the host proxy's command ring (docs/NETWORK.md 2.9), and
 * the addressing of mapped pes.
 *
 * A part of the device API: include duet/duet_device.cuh (its conventions, memory model and
 * proxy path are described there), never this file alone.
 */
#ifndef DUET_DEVICE_PROXY_CUH
#define DUET_DEVICE_PROXY_CUH

#ifndef DUET_DEVICE_CUH
#error "include duet/duet_device.cuh, not duet/duet_device_proxy.cuh"
#endif

/* ------------------------------------------------------------------------------------
 * Internals (not API): the proxy path
 * ------------------------------------------------------------------------------------ */
namespace duet_dev_detail {

/* ---- the proxy path (remote pes: docs/NETWORK.md 2.9, the ring: duet_proxy_ring.h) */

/* pe's world (heap) pe number. */
static __device__ __forceinline__ int world_pe_(const duet_device_comm_t &h, int pe) { return __ldg(h.heap_pe + pe); }

/* 1 when pe is reached through the host proxy. One test of a kernel parameter when no pe is
 * remote (h.remote == NULL), so the load/store paths keep their cost. */
static __device__ __forceinline__ bool remote_(const duet_device_comm_t &h, int pe)
{
    return h.remote != nullptr && __ldg(h.remote + world_pe_(h, pe)) != 0;
}

/* pe's copy of my symmetric obj, for a pe whose part is mapped here (no remote check). */
template <typename T> static __device__ __forceinline__ T *mapped_ptr_(const duet_device_comm_t &h, T *obj, int pe)
{
    int w = world_pe_(h, pe);
    ptrdiff_t dist = h.stride ? (ptrdiff_t)(w - h.my_heap_pe) * (ptrdiff_t)h.stride : h.peer_heap[w] - h.heap;
    return (T *)((char *)obj + dist);
}

static __device__ __forceinline__ uint64_t heap_off_(const duet_device_comm_t &h, const void *sym)
{
    return (uint64_t)((const char *)sym - h.heap);
}

/* Posts one command: a ticket from the counter, a wait for the slot (its previous user done,
 * abort checked), the command as seven 8-byte stores into mapped host memory, then ready with
 * st.release.sys (the caller's earlier stores, and its group's after a group sync, are
 * visible to the proxy before it sees the command). Returns DUET_OK and the ticket, or the
 * abort status (the ticket is then lost: the ring's later commands stall, which is why an
 * aborted communicator's device state is undefined and the proxy's deadline ends it). */
static __device__ __noinline__ int px_post_(const duet_device_comm_t &h, unsigned op, int pe, uint64_t roff,
                                            const void *laddr, uint64_t bytes, uint64_t value, uint64_t cond,
                                            uint64_t sig_off, unsigned sig_op, unsigned amo_op, unsigned width,
                                            uint64_t *ticket)
{
    unsigned long long t = atomicAdd(h.proxy_head, 1ull);
    unsigned s = (unsigned)(t % DUET_PROXY_SLOTS);
    duet_proxy_done_t *d = &h.proxy_ring->done[s];
    for (unsigned spin = 1; ld_acquire_u64(&d->free) != t; spin++)
        if (spin % ABORT_EVERY == 0) {
            int st = abort_status(h);
            if (st) return st;
        }
    uint64_t *c = (uint64_t *)&h.proxy_ring->cmd[s];
    uint64_t w1 = (uint64_t)(op & 0xff) | (uint64_t)(sig_op & 0xff) << 8 | (uint64_t)(amo_op & 0xff) << 16 |
                  (uint64_t)(width & 0xff) << 24 | (uint64_t)(uint32_t)world_pe_(h, pe) << 32;
    st_relaxed_u64(c + 1, w1);
    st_relaxed_u64(c + 2, roff);
    st_relaxed_u64(c + 3, (uint64_t)(uintptr_t)laddr);
    st_relaxed_u64(c + 4, bytes);
    st_relaxed_u64(c + 5, value);
    st_relaxed_u64(c + 6, cond);
    st_relaxed_u64(c + 7, sig_off);
    st_release_u64(c, t + 1);
    *ticket = t;
    return DUET_OK;
}

/* Waits (abort checked) until the proxy completes blocking command t; its status, and its
 * result to *result; then frees the slot for ticket t + SLOTS. */
static __device__ __noinline__ int px_wait_(const duet_device_comm_t &h, uint64_t t, uint64_t *result)
{
    duet_proxy_done_t *d = &h.proxy_ring->done[t % DUET_PROXY_SLOTS];
    for (unsigned spin = 1; ld_acquire_u64(&d->done) != t + 1; spin++)
        if (spin % ABORT_EVERY == 0) {
            int st = abort_status(h);
            if (st) return st; /* the slot stays taken: see px_post_ */
        }
    int st = (int)ld_relaxed_u32(&d->status);
    if (result) *result = ld_relaxed_u64(&d->result);
    st_release_u64(&d->free, t + DUET_PROXY_SLOTS);
    return st;
}

/* A command, waited for when blocking. */
static __device__ __forceinline__ int px_call_(const duet_device_comm_t &h, unsigned op, bool blocking, int pe,
                                               uint64_t roff, const void *laddr, uint64_t bytes, uint64_t value,
                                               uint64_t cond, uint64_t sig_off, unsigned sig_op, unsigned amo_op,
                                               unsigned width, uint64_t *result = nullptr)
{
    uint64_t t;
    int st = px_post_(h, op | (blocking ? DUET_PROXY_BLOCKING : 0u), pe, roff, laddr, bytes, value, cond, sig_off,
                      sig_op, amo_op, width, &t);
    if (st || !blocking) return st;
    return px_wait_(h, t, result);
}

static __device__ __forceinline__ int px_put_(const duet_device_comm_t &h, void *dest, const void *src, size_t bytes,
                                              int pe, bool blocking, const uint64_t *sig = nullptr,
                                              uint64_t value = 0, int sig_op = 0)
{
    if (bytes == 0 && !sig) return DUET_OK;
    uint64_t sig_off = sig ? heap_off_(h, sig) : DUET_PROXY_NO_SIGNAL;
    if (bytes > 0 && bytes <= DUET_PROXY_INLINE_MAX) { /* the bytes ride in the command: no staging copy */
        uint64_t w = 0;
        for (size_t i = 0; i < bytes; i++) w |= (uint64_t)((const unsigned char *)src)[i] << (8 * i);
        return px_call_(h, DUET_PROXY_PUT | DUET_PROXY_INLINE, blocking, pe, heap_off_(h, dest), nullptr, bytes, value,
                        w, sig_off, (unsigned)sig_op, 0, 0);
    }
    return px_call_(h, DUET_PROXY_PUT, blocking, pe, heap_off_(h, dest), src, bytes, value, 0, sig_off,
                    (unsigned)sig_op, 0, 0);
}
static __device__ __forceinline__ int px_get_(const duet_device_comm_t &h, void *dest, const void *src, size_t bytes,
                                              int pe, bool blocking)
{
    if (bytes == 0) return DUET_OK;
    return px_call_(h, DUET_PROXY_GET, blocking, pe, heap_off_(h, src), dest, bytes, 0, 0, DUET_PROXY_NO_SIGNAL, 0, 0,
                    0);
}
static __device__ __forceinline__ int px_signal_(const duet_device_comm_t &h, const uint64_t *sig, uint64_t value,
                                                 int sig_op, int pe)
{
    return px_call_(h, DUET_PROXY_SIGNAL, false, pe, 0, nullptr, 0, value, 0, heap_off_(h, sig), (unsigned)sig_op, 0, 0);
}
/* An atomic of T's width on pe; fetching forms block and return the old value's bits. */
template <typename T>
static __device__ __forceinline__ uint64_t px_amo_(const duet_device_comm_t &h, const T *dest, unsigned amo_op,
                                                   bool fetch, uint64_t operand, uint64_t cond, int pe)
{
    uint64_t old = 0;
    (void)px_call_(h, DUET_PROXY_AMO, fetch, pe, heap_off_(h, dest), nullptr, 0, operand, cond, DUET_PROXY_NO_SIGNAL,
                   0, amo_op, (unsigned)sizeof(T), &old);
    return old;
}
/* The bits of a 4- or 8-byte value, widened. */
template <typename T> static __device__ __forceinline__ uint64_t wbits_(T v)
{
    if constexpr (sizeof(T) == 4) return (uint64_t)bits_<uint32_t>(v);
    else return bits_<uint64_t>(v);
}
template <typename T> static __device__ __forceinline__ T from_wbits_(uint64_t v)
{
    if constexpr (sizeof(T) == 4) return bits_<T>((uint32_t)v);
    else return bits_<T>(v);
}
/* A _warp / _block form's call to a remote pe: the group syncs (so one thread's release
 * covers every thread's stores), one thread posts the one command for the whole transfer
 * (post; the blocking forms' post waits for it), and, with `again`, the group syncs once more
 * so that every thread returns after it. */
template <typename Post> static __device__ __forceinline__ void px_warp_(Post post, bool again)
{
    __syncwarp();
    if (lane_id() == 0) post();
    if (again) __syncwarp();
}
template <typename Post> static __device__ __forceinline__ void px_block_(Post post, bool again)
{
    __syncthreads();
    if (block_tid() == 0) post();
    if (again) __syncthreads();
}

/* QUIET through the proxy: every command posted before it is complete at its target. */
static __device__ __forceinline__ int px_quiet_(const duet_device_comm_t &h)
{
    if (h.remote == nullptr) return DUET_OK;
    return px_call_(h, DUET_PROXY_QUIET, true, h.my_pe, 0, nullptr, 0, 0, 0, DUET_PROXY_NO_SIGNAL, 0, 0, 0);
}

} /* namespace duet_dev_detail */

#endif /* DUET_DEVICE_PROXY_CUH */
