/*
 * duet_tport.h — transports: how bytes reach a peer's symmetric heap.
 *
 * A transport is a versioned table of operations (first field: its size). Each peer of a
 * heap gets an endpoint bound to the transport chosen for it, once, when the heap is made:
 * shm (direct load/store into the peer's mapped segment) or net (UCP, for peers that cannot
 * map it, duet_tport_net.c). A heap's device part has its own endpoint per peer (h->dev_eps),
 * bound to its backend's transport (the CUDA backend's: stream-ordered copies and one-thread
 * kernels into the peer's GPU part, src/cuda/duet_cuda_rma.c). No slot is NULL: what a
 * transport cannot do points at a shared "unsupported" stub.
 *
 * Offsets are byte offsets inside the peer's segment (or device part); the RMA layer has
 * checked bounds.
 */
#ifndef DUET_TPORT_H
#define DUET_TPORT_H

#include <stddef.h>
#include <stdint.h>
#include "util/duet_util.h"

typedef enum {
    DUET_AMO_FETCH, DUET_AMO_SET, DUET_AMO_SWAP, DUET_AMO_CSWAP,
    DUET_AMO_ADD, DUET_AMO_AND, DUET_AMO_OR, DUET_AMO_XOR
} duet_amo_op_t;

typedef struct duet_tport_ep duet_tport_ep_t;

typedef struct duet_tport_ops {
    size_t size; /* sizeof(duet_tport_ops_t) of the table's author */
    const char *name;
    /* data movement. put returns once src may be reused (local completion: the data is
     * remotely complete only at quiet), get once the data is in dst; the _nbi forms may
     * complete later, at quiet (src must stay unchanged, dst unread, until then) */
    duet_status_t (*put)(duet_tport_ep_t *ep, size_t off, const void *src, size_t n);
    duet_status_t (*get)(duet_tport_ep_t *ep, void *dst, size_t off, size_t n);
    duet_status_t (*put_nbi)(duet_tport_ep_t *ep, size_t off, const void *src, size_t n);
    duet_status_t (*get_nbi)(duet_tport_ep_t *ep, void *dst, size_t off, size_t n);
    /* a p: a put of a small value in host memory (n <= 64); returns at once, as put */
    duet_status_t (*put_value)(duet_tport_ep_t *ep, size_t off, const void *value, size_t n);
    duet_status_t (*iput)(duet_tport_ep_t *ep, size_t off, const void *src, ptrdiff_t dst_stride,
                          ptrdiff_t src_stride, size_t nelems, size_t elem_size);
    duet_status_t (*iget)(duet_tport_ep_t *ep, void *dst, size_t off, ptrdiff_t dst_stride,
                          ptrdiff_t src_stride, size_t nelems, size_t elem_size);
    /* atomics on 4- or 8-byte integers; *fetched gets the old value (may be NULL) */
    duet_status_t (*amo)(duet_tport_ep_t *ep, duet_amo_op_t op, size_t off, size_t width,
                         uint64_t operand, uint64_t cond, uint64_t *fetched);
    /* ordering and completion of this endpoint's earlier operations (net: worker-wide, so
     * once per call for all net endpoints costs the same as once per endpoint: it does
     * nothing when no operation was issued since the last) */
    duet_status_t (*fence)(duet_tport_ep_t *ep);
    duet_status_t (*quiet)(duet_tport_ep_t *ep);
    /* wakes the peer's waiters after its memory changed (its doorbell): called after each
     * blocking write. A put_nbi rings nobody: its transport owes the ring to the endpoint's
     * next fence or quiet (nbi data is delivered by then at the latest; a waiter that sleeps
     * in between looks again within its sleep's bound) */
    void (*notify)(duet_tport_ep_t *ep);
    /* a load/store address for `off` at the peer, or NULL when not mappable */
    void *(*ptr)(duet_tport_ep_t *ep, size_t off);
    /* fault injection: from now on every operation on ep fails with `status`
     * (DUET_OK heals the link) */
    void (*inject_fault)(duet_tport_ep_t *ep, duet_status_t status);
    /* 1: amo is exactly duet_tport_cpu_amo on base + off, and notify rings the doorbell, while
     * ep->fault is 0; the RMA layer then does both inline (a heap atomic at a static-data
     * atomic's cost, docs/PERF.md). 0: always through the table. */
    int cpu_amo;
} duet_tport_ops_t;

/* An atomic done by the CPU on a mapped 4- or 8-byte word (coherent between the processes
 * of a host); *fetched, when not NULL, gets the old value. DUET_ERR_INTERNAL for an op that
 * is not one. */
#define DUET_TPORT_CPU_AMO_(T)                                                               \
    do {                                                                                     \
        T *p_ = (T *)word, v_ = (T)operand, old_;                                            \
        switch (op) {                                                                        \
        case DUET_AMO_FETCH: old_ = __atomic_load_n(p_, __ATOMIC_SEQ_CST); break;           \
        case DUET_AMO_SET: __atomic_store_n(p_, v_, __ATOMIC_SEQ_CST); old_ = 0; break;     \
        case DUET_AMO_SWAP: old_ = __atomic_exchange_n(p_, v_, __ATOMIC_SEQ_CST); break;    \
        case DUET_AMO_CSWAP:                                                                 \
            old_ = (T)cond;                                                                  \
            __atomic_compare_exchange_n(p_, &old_, v_, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); \
            break;                                                                           \
        case DUET_AMO_ADD: old_ = __atomic_fetch_add(p_, v_, __ATOMIC_SEQ_CST); break;      \
        case DUET_AMO_AND: old_ = __atomic_fetch_and(p_, v_, __ATOMIC_SEQ_CST); break;      \
        case DUET_AMO_OR: old_ = __atomic_fetch_or(p_, v_, __ATOMIC_SEQ_CST); break;        \
        case DUET_AMO_XOR: old_ = __atomic_fetch_xor(p_, v_, __ATOMIC_SEQ_CST); break;      \
        default: return DUET_FAIL(DUET_ERR_INTERNAL, RMA, "unknown atomic op %d", (int)op); \
        }                                                                                    \
        if (fetched) *fetched = (uint64_t)old_;                                              \
    } while (0)
DUET_INLINE duet_status_t duet_tport_cpu_amo(void *word, duet_amo_op_t op, size_t width, uint64_t operand,
                                             uint64_t cond, uint64_t *fetched)
{
    if (width == 4) DUET_TPORT_CPU_AMO_(uint32_t);
    else DUET_TPORT_CPU_AMO_(uint64_t);
    return DUET_OK;
}

struct duet_tport_ep {
    const duet_tport_ops_t *ops;
    int pe;              /* the peer, as a heap (root communicator) rank */
    char *base;          /* shm: the peer's segment mapped here; a device part's: the
                          * peer's part mapped here (NULL: not mapped)    */
    size_t seg_size;
    duet_doorbell_t *doorbell; /* the peer's doorbell                     */
    _Atomic int ring_owed; /* shm: a put_nbi has not rung the doorbell yet  */
    _Atomic int fault;   /* injected failure status, 0 when healthy        */
    void *priv;          /* net: the UCP endpoint, rkey and remote base (duet_tport_net.c);
                          * a device part's: its backend's heap state      */
};

/* Whether a table can be bound: it must have this build's size (its author compiled against
 * this header); DUET_ERR_INTERNAL, naming it, otherwise. A backend's table is checked when
 * its endpoints are made. */
static inline duet_status_t duet_tport_usable(const duet_tport_ops_t *ops)
{
    if (DUET_LIKELY(ops->size == sizeof *ops)) return DUET_OK;
    return DUET_FAIL(DUET_ERR_INTERNAL, RMA, "transport %s: its table has %zu bytes, not %zu", ops->name, ops->size,
                     sizeof *ops);
}

extern const duet_tport_ops_t duet_tport_shm_ops;
/* shm for data, atomics through the net transport's UCP agent: mapped peers and myself in a
 * heap that has net peers (docs/NETWORK.md 4.8; bound by duet_tport_net_create only) */
extern const duet_tport_ops_t duet_tport_shm_netamo_ops;
duet_status_t duet_tport_net_agent_amo(duet_tport_ep_t *ep, duet_amo_op_t op, size_t off, size_t width,
                                       uint64_t operand, uint64_t cond, uint64_t *fetched);

/* Stubs for slots a transport does not support. */
extern const duet_tport_ops_t duet_tport_net_ops; /* only with DUET_HAVE_UCX */

duet_status_t duet_tport_unsupported_(const char *tport, const char *op);

#endif
