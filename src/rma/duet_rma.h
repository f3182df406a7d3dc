/*
 * duet_rma.h — argument checks shared by the one-sided calls. Everything a call needs
 * (is the communicator live, is the PE in range and alive, does [addr, addr+bytes) lie inside the
 * symmetric heap) is checked here before any byte moves, so bad input gets
 * DUET_ERR_INVALID_ARG with a message, never a crash.
 *
 * A symmetric address lies in one of two segments, each with an endpoint per peer in the one
 * transport table (tport/duet_tport.h): the host heap (h->eps: shm or net, chosen per peer
 * when the heap is made) or my part of the heap's device part (h->dev_eps: the device
 * backend's transport, made with it). duet_rma_where finds the segment and the offset in it;
 * the call then runs the endpoint's operation, whichever it is. The host heap costs the one
 * range compare it always did: the device part is looked at only when that fails.
 */
#ifndef DUET_RMA_H
#define DUET_RMA_H

#include "core/duet_comm.h"
#include "heap/duet_heap_dev.h"

/* DUET_CHECK_BOUNDS=1 (duet_rma_bounds.c): [addr, addr+bytes), already known to lie in the
 * heap at offset off, must also lie inside one live block; else DUET_ERR_INVALID_ARG with a
 * message saying the block and by how much the range overruns it. */
duet_status_t duet_rma_bounds_(duet_comm_t c, const void *addr, size_t bytes, size_t off, const char *fn,
                               const char *what);

/* The rare paths, out of line (duet_rma_bounds.c), so that the checks inlined into every
 * call keep few registers: DUET_ERR_INVALID_ARG for a range outside the symmetric heap, a pe
 * out of range, a NULL local buffer; c's own check for a handle duet_comm_enter refused. */
__attribute__((cold)) duet_status_t duet_rma_outside_(duet_comm_t c, const void *addr, size_t bytes, const char *fn,
                                                      const char *what);
__attribute__((cold)) duet_status_t duet_rma_pe_range_(duet_comm_t c, int pe, const char *fn);
__attribute__((cold)) duet_status_t duet_rma_null_(const char *fn, const char *what);
__attribute__((cold)) duet_status_t duet_rma_bad_comm_(duet_comm_t c, const char *fn);

/* Offset of [addr, addr+bytes) in the symmetric user heap, or an error. */
static inline duet_status_t duet_rma_offset(duet_comm_t c, const void *addr, size_t bytes,
                                            const char *fn, const char *what, size_t *off)
{
    const duet_heap_t *h = c->heap;
    uintptr_t lo = (uintptr_t)h->local_base + DUET_HEAP_USER_OFFSET;
    uintptr_t hi = (uintptr_t)h->local_base + h->user_end;
    uintptr_t a = (uintptr_t)addr;
    if (DUET_UNLIKELY(a < lo || a >= hi || bytes > hi - a)) return duet_rma_outside_(c, addr, bytes, fn, what);
    *off = a - (uintptr_t)h->local_base;
    return DUET_UNLIKELY(c->check_bounds) ? duet_rma_bounds_(c, addr, bytes, *off, fn, what) : DUET_OK;
}

/* Which segment [addr, addr + bytes) lies in, for heap pe hp: the host heap (*ep = &h->eps[hp],
 * *off from the start of the segment) or my part of the device heap (*ep = &h->dev_eps[hp],
 * *off from the start of the part); else DUET_ERR_INVALID_ARG naming `what`. */
DUET_INLINE duet_status_t duet_rma_where(duet_comm_t c, const void *addr, size_t bytes, int hp, const char *fn,
                                           const char *what, duet_tport_ep_t **ep, size_t *off)
{
    duet_heap_t *h = c->heap;
    uintptr_t lo = (uintptr_t)h->local_base + DUET_HEAP_USER_OFFSET;
    uintptr_t hi = (uintptr_t)h->local_base + h->user_end;
    uintptr_t a = (uintptr_t)addr;
    if (DUET_LIKELY(a >= lo && a < hi && bytes <= hi - a)) {
        *ep = &h->eps[hp];
        *off = a - (uintptr_t)h->local_base;
        return DUET_UNLIKELY(c->check_bounds) ? duet_rma_bounds_(c, addr, bytes, *off, fn, what) : DUET_OK;
    }
    if (duet_heap_dev_owns(h, addr, bytes ? bytes : 1)) {
        *ep = &h->dev_eps[hp];
        *off = h->dev_ops->offset(h, addr);
        return DUET_OK;
    }
    return duet_rma_offset(c, addr, bytes, fn, what, off); /* the error */
}

/* 1 when ep is a device part's endpoint (its words are not host memory: read them with get). */
static inline int duet_rma_on_device(const duet_heap_t *h, const duet_tport_ep_t *ep)
{
    return h->dev_eps && ep >= h->dev_eps && ep < h->dev_eps + h->npes;
}

/* DUET_ERR_PEER_FAILED, "fn: PE 1 (world rank 2) died" (duet_rma_bounds.c: the rare paths) */
duet_status_t duet_rma_pe_dead_(duet_comm_t c, int pe, const char *fn);

/* The checks of a target pe: in range, and not known dead. */
DUET_INLINE duet_status_t duet_rma_pe(duet_comm_t c, int pe, const char *fn)
{
    if (DUET_UNLIKELY((unsigned)pe >= (unsigned)c->size)) return duet_rma_pe_range_(c, pe, fn);
    if (DUET_UNLIKELY(atomic_load_explicit(&c->heap->deaths, memory_order_relaxed) != 0) && c->dead_pe &&
        atomic_load_explicit(&c->dead_pe[c->heap_pe[pe]], memory_order_relaxed))
        return duet_rma_pe_dead_(c, pe, fn);
    return DUET_OK;
}

/* The checks of a remote access on c, a live communicator (the call is inside it:
 * duet_comm_enter_rec returned 1): pe, and the symmetric target range (either segment): the
 * endpoint to pe of the segment it lies in, and the offset there. A call that gets this far
 * succeeds as far as its handle goes: the last error is cleared, as duet_comm_check does. */
DUET_INLINE duet_status_t duet_rma_target_in(duet_comm_t c, const void *addr, size_t bytes, int pe,
                                              const char *fn, duet_tport_ep_t **ep, size_t *off)
{
    duet_error_clear();
    duet_status_t st = duet_rma_pe(c, pe, fn);
    if (DUET_LIKELY(st == DUET_OK)) st = duet_rma_where(c, addr, bytes, c->heap_pe[pe], fn, "the remote address", ep, off);
    return st;
}

/* The same with c checked first (duet_comm_check). */
DUET_INLINE duet_status_t duet_rma_target(duet_comm_t c, const void *addr, size_t bytes, int pe,
                                           const char *fn, duet_tport_ep_t **ep, size_t *off)
{
    duet_status_t st = duet_comm_check(c, fn);
    return DUET_LIKELY(st == DUET_OK) ? duet_rma_target_in(c, addr, bytes, pe, fn, ep, off) : st;
}

/* A public RMA call's body `call` run inside c (DUET_COMM_CALL), where c is known live, or
 * c's check (the error of a NULL, destroyed or foreign handle) where it is not. */
#define DUET_RMA_CALL(c, fn, call)                                                                  \
    do {                                                                                            \
        duet_inflight_rec_t *rec_ = NULL;                                                           \
        int in_ = duet_comm_enter_rec((c), (fn), &rec_);                                            \
        if (in_ < 0) return (duet_status_t)in_;                                                     \
        if (!in_) return duet_rma_bad_comm_((c), (fn));                                             \
        duet_status_t st_ = (call);                                                                 \
        duet_inflight_leave_rec(rec_);                                                              \
        return st_;                                                                                 \
    } while (0)

static inline duet_status_t duet_rma_local(const void *buf, size_t bytes, const char *fn, const char *what)
{
    if (DUET_UNLIKELY(!buf && bytes)) return duet_rma_null_(fn, what);
    return DUET_OK;
}

/* elems * size without overflow */
static inline duet_status_t duet_rma_bytes(size_t nelems, size_t size, const char *fn, size_t *bytes)
{
    if (DUET_UNLIKELY(__builtin_mul_overflow(nelems, size, bytes)))
        return duet_error_set(DUET_ERR_INVALID_ARG, "%s: %zu elements of %zu bytes overflow", fn, nelems, size);
    return DUET_OK;
}

/* Every heap pe's endpoint: completion and ordering act on all of them. */
duet_status_t duet_rma_quiet_all(duet_comm_t c);

#endif
