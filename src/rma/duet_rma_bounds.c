/*
 * duet_rma_bounds.c — the bounds-checking mode (DUET_CHECK_BOUNDS=1): a one-sided range must
 * lie inside one live allocation, not merely inside the symmetric heap.
 *
 * By default a put that runs past the end of its block into the next one is accepted: the
 * fast path compares the range with the heap's two ends only. In this mode every checked range
 * is also looked up among the heap's live blocks (the allocator's sorted block table, a binary
 * search under the heap's lock). The allocator is symmetric — every rank holds the same blocks
 * at the same offsets — so my table answers for the target's heap too.
 *
 * Also here, the other error paths kept out of line (duet_rma.h): a target pe seen dead or out
 * of range, a range outside the heap, a NULL buffer, a handle that is no live communicator.
 */
#include "rma/duet_rma.h"

duet_status_t duet_rma_bounds_(duet_comm_t c, const void *addr, size_t bytes, size_t off, const char *fn,
                               const char *what)
{
    duet_heap_t *h = c->heap;
    size_t start = 0, len = 0;
    pthread_mutex_lock(&h->lock);
    int rc = duet_alloc_block_of(h->alloc, off, &start, &len);
    pthread_mutex_unlock(&h->lock);
    if (rc)
        return duet_error_set(DUET_ERR_INVALID_ARG, "%s: %s %p (+%zu bytes) is in no live allocation (freed, or "
                              "never allocated; DUET_CHECK_BOUNDS=1)", fn, what, addr, bytes);
    if (bytes > start + len - off)
        return duet_error_set(DUET_ERR_INVALID_ARG, "%s: %s %p (+%zu bytes) overruns its allocation [%p, +%zu "
                              "bytes) by %zu bytes (DUET_CHECK_BOUNDS=1)", fn, what, addr, bytes,
                              (void *)(h->local_base + start), len, bytes - (start + len - off));
    return DUET_OK;
}

duet_status_t duet_rma_pe_dead_(duet_comm_t c, int pe, const char *fn)
{
    char name[96]; /* "rank 1 (world rank 2)" on a shrunk communicator, else "rank 1" */
    return duet_error_set(DUET_ERR_PEER_FAILED, "%s: PE %d (%s died)", fn, pe,
                          duet_comm_rank_name(c, pe, name, sizeof name));
}

duet_status_t duet_rma_outside_(duet_comm_t c, const void *addr, size_t bytes, const char *fn, const char *what)
{
    const duet_heap_t *h = c->heap;
    uintptr_t lo = (uintptr_t)h->local_base + DUET_HEAP_USER_OFFSET, hi = (uintptr_t)h->local_base + h->user_end;
    return duet_error_set(DUET_ERR_INVALID_ARG, "%s: %s %p (+%zu bytes) is not inside the symmetric heap [%p, %p)",
                          fn, what, addr, bytes, (void *)lo, (void *)hi);
}

duet_status_t duet_rma_pe_range_(duet_comm_t c, int pe, const char *fn)
{
    return duet_error_set(DUET_ERR_INVALID_ARG, "%s: PE %d is out of range [0, %d)", fn, pe, c->size);
}

duet_status_t duet_rma_null_(const char *fn, const char *what)
{
    return duet_error_set(DUET_ERR_INVALID_ARG, "%s: %s is NULL", fn, what);
}

duet_status_t duet_rma_bad_comm_(duet_comm_t c, const char *fn)
{
    return duet_comm_check(c, fn); /* its error: NULL, destroyed or never made by Duet */
}
