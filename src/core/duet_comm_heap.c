/*
 * Collective allocation on the symmetric heap: duet_malloc / calloc / align / free.
 *
 * Every rank runs the same deterministic allocator on the same sequence of requests, so
 * the same offset comes out everywhere without any communication. A small out-of-band
 * exchange first checks that all ranks really made the same request; it also stands in
 * for the barrier OpenSHMEM requires (no rank leaves before every rank has entered).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/duet_comm.h"
#include "core/duet_ft.h"
#include "heap/duet_heap_dev.h"
#include "duet/duet_cuda.h"

/* the GPU heap's requests are kinds of their own: a host call on one rank and a device call
 * on another disagree. Kind 0 is what the exchange gives for a rank that died before it. */
enum { REQ_ALLOC = 1, REQ_FREE = 2, REQ_ALLOC_DEVICE = 3, REQ_FREE_DEVICE = 4 };

/* What a rank brings to a heap call: the request, and its own verdict on it. */
typedef struct {
    uint32_t kind;
    int32_t status; /* DUET_OK, or why this rank cannot make the call (bad argument, revoked, ...) */
    uint64_t size, align; /* REQ_FREE: size = the block's offset */
} heap_req_t;

static const char *req_name(uint32_t kind)
{
    switch (kind) {
    case REQ_ALLOC: return "alloc";
    case REQ_FREE: return "free";
    case REQ_ALLOC_DEVICE: return "alloc_device";
    case REQ_FREE_DEVICE: return "free_device";
    default: return "?";
    }
}

/*
 * A heap call is a consensus: every live rank returns the same status, so the allocators stay
 * in step and the ranks' later exchanges stay matched (duet_finalize's closing barrier among
 * them). Each rank first judges its own arguments and its communicator's state (the revoke or
 * death it has seen so far), then
 *
 *   1. all ranks exchange (request, verdict); from that one table every rank decides alike:
 *      a rank that died (its part zeroed by the exchange), a rank's refusal (the first in rank
 *      order: its status for everyone), requests that differ -> the call fails everywhere;
 *   2. an allocation that may fail on one rank only (host or GPU memory) exchanges each rank's
 *      outcome once more; a rank whose block was taken gives it back if any other failed.
 *
 * The exchanges go over the bootstrap with the communicator's abort word unwatched, like the
 * closing barrier of duet_comm_destroy: on a revoked communicator a watched exchange stops on
 * some ranks and completes on others (whoever's peers had already sent), which split the
 * statuses and left the bootstrap's sequence numbers apart. A rank that dies is still seen
 * (the bootstrap's `gone`). Both exchanges together are the barrier OpenSHMEM requires.
 */
static duet_status_t exchange(duet_comm_t c, const void *mine, void *all, size_t bytes, const char *fn)
{
    const _Atomic int *watched = c->boot.abort;
    c->boot.abort = NULL;
    duet_status_t st = duet_boot_allgather(&c->boot, mine, all, bytes);
    c->boot.abort = watched;
    /* the root still gathered every live rank's part (a dead one's zeroed) and answered them */
    if (st == DUET_ERR_PEER_FAILED && c->rank == 0) st = DUET_OK;
    return st ? duet_error_wrap(st, fn) : DUET_OK;
}

/* My verdict on a call before the exchange: the communicator must be usable (not revoked,
 * no member lost) and allowed to allocate (duet_comm_heap_allocator). */
static duet_status_t verdict(duet_comm_t c, const char *fn)
{
    duet_status_t st = duet_comm_heap_allocator(c, fn);
    int a = st ? 0 : atomic_load_explicit(&duet_comm_ft(c)->abort, memory_order_acquire);
    return a ? duet_comm_unusable_(c, fn, a) : st;
}

/* Step 1. The decision is the same on every rank: it reads only the table. My own refusal
 * keeps its message; another rank's is named. */
static duet_status_t agree(duet_comm_t c, const heap_req_t *mine, const char *fn)
{
    heap_req_t *all = malloc(sizeof *all * (size_t)c->size);
    if (!all) return DUET_FAIL(DUET_ERR_NO_MEMORY, HEAP, "%s: out of host memory", fn);
    char why[512] = ""; /* my own refusal's message, said again whoever refused first */
    if (mine->status != DUET_OK) snprintf(why, sizeof why, "%s", duet_last_error());
    duet_status_t st = exchange(c, mine, all, sizeof *mine, fn);
    for (int r = 0; st == DUET_OK && r < c->size; r++)
        if (all[r].kind == 0)
            st = DUET_FAIL(DUET_ERR_PEER_FAILED, HEAP, "%s: rank %d died; no rank made the call", fn, r);
    for (int r = 0; st == DUET_OK && r < c->size; r++) {
        if (all[r].status == DUET_OK) continue;
        st = (duet_status_t)all[r].status; /* the first refusal in rank order: everyone's status */
        if (mine->status == DUET_OK)
            DUET_FAIL(st, HEAP, "%s: rank %d refused the call (%s); no rank made it", fn, r, duet_status_str(st));
        else if (mine->status == (int32_t)st)
            duet_error_set(st, "%s", why);
        else
            duet_error_set(st, "%s (and rank %d refused the call first: %s)", why, r, duet_status_str(st));
    }
    for (int r = 1; st == DUET_OK && r < c->size; r++)
        if (all[r].kind != all[0].kind || all[r].size != all[0].size || all[r].align != all[0].align)
            st = DUET_FAIL(DUET_ERR_INVALID_ARG, HEAP,
                           "%s: ranks disagree: rank 0 asked for %s(%llu, align %llu), rank %d for "
                           "%s(%llu, align %llu); every rank must make the same call",
                           fn, req_name(all[0].kind), (unsigned long long)all[0].size,
                           (unsigned long long)all[0].align, r, req_name(all[r].kind),
                           (unsigned long long)all[r].size, (unsigned long long)all[r].align);
    free(all);
    return st;
}

/* Step 2: every rank's outcome of its part of the call; the first failure (in rank order)
 * is everyone's status. */
static duet_status_t agree_outcome(duet_comm_t c, duet_status_t mine, const char *fn)
{
    int32_t my[2] = {1, (int32_t)mine}, *all = malloc(sizeof my * (size_t)c->size);
    if (!all) return DUET_FAIL(DUET_ERR_NO_MEMORY, HEAP, "%s: out of host memory", fn);
    char why[512] = ""; /* my own failure's message, kept whoever failed first */
    if (mine != DUET_OK) snprintf(why, sizeof why, "%s", duet_last_error());
    duet_status_t st = exchange(c, my, all, sizeof my, fn);
    for (int r = 0; st == DUET_OK && r < c->size; r++) {
        if (!all[2 * r]) {
            st = DUET_FAIL(DUET_ERR_PEER_FAILED, HEAP, "%s: rank %d died during the call", fn, r);
        } else if (all[2 * r + 1] != DUET_OK) {
            st = (duet_status_t)all[2 * r + 1];
            if (mine == DUET_OK)
                DUET_FAIL(st, HEAP, "%s: rank %d could not take its block (%s); no rank keeps one", fn, r,
                          duet_status_str(st));
            else if (mine == st)
                duet_error_set(st, "%s", why);
            else
                duet_error_set(st, "%s (and rank %d failed first: %s)", why, r, duet_status_str(st));
        }
    }
    free(all);
    return st;
}

/* 1 when team c holds every live rank of its root: then every rank that shares the heap's
 * allocator makes the same calls on c, and c may allocate (a shrunk communicator is one). A
 * rank not in c is looked at once more (duet_ft_refresh) before c is refused. */
static int covers_live_root(duet_comm_t c)
{
    duet_comm_t root = duet_ft_root(c);
    char *in = calloc((size_t)root->size, 1);
    if (!in) return 0;
    for (int r = 0; r < c->size; r++) in[c->heap_pe[r]] = 1;
    int ok = 1;
    for (int pass = 0; pass < 2; pass++) {
        ok = 1;
        for (int hp = 0; hp < root->size && ok; hp++)
            if (!in[hp] && !duet_ft_is_dead(root, hp)) ok = 0;
        if (ok || pass) break;
        duet_ft_refresh(root);
    }
    free(in);
    return ok;
}

duet_status_t duet_comm_heap_allocator(duet_comm_t c, const char *fn)
{
    duet_status_t st = duet_comm_check(c, fn);
    if (!st && c->parent && !covers_live_root(c))
        st = DUET_FAIL(DUET_ERR_INVALID_ARG, HEAP,
                       "%s: allocate on the communicator that owns the heap (from duet_init or "
                       "duet_comm_init_rank) or on one that holds all its live ranks (a shrunk one), "
                       "not on a team split from it: the ranks outside the team would not follow", fn);
    return st;
}

/* The host heap's allocation: agree, take, zero (calloc), agree on the outcome. The caller
 * has checked the handle (a bad one cannot take part); `mine` is its own verdict so far. */
static void *alloc_block(duet_comm_t c, size_t alignment, size_t size, int zero, duet_status_t mine,
                         const char *fn)
{
    if (!mine) mine = verdict(c, fn);
    if (!mine && (alignment == 0 || (alignment & (alignment - 1))))
        mine = DUET_FAIL(DUET_ERR_INVALID_ARG, HEAP, "%s: alignment %zu is not a power of two", fn, alignment);
    size_t max_align = duet_heap_base_align(c->heap->seg_size);
    if (!mine && alignment > max_align)
        mine = DUET_FAIL(DUET_ERR_INVALID_ARG, HEAP, "%s: alignment %zu exceeds the heap's %zu", fn, alignment,
                         max_align);
    heap_req_t req = {REQ_ALLOC, (int32_t)mine, size, alignment};
    if (agree(c, &req, fn)) return NULL;
    if (size == 0) { /* OpenSHMEM: malloc(0) gives NULL, no error */
        duet_error_clear();
        return NULL;
    }
    duet_heap_t *h = c->heap;
    size_t off = 0;
    pthread_mutex_lock(&h->lock);
    int rc = duet_alloc_take(h->alloc, size, alignment, &off);
    duet_alloc_stats_t s;
    if (rc) duet_alloc_stats(h->alloc, &s);
    pthread_mutex_unlock(&h->lock);
    duet_status_t st = DUET_OK;
    if (rc)
        st = DUET_FAIL(DUET_ERR_NO_MEMORY, HEAP,
                       "%s: the symmetric heap cannot fit %zu bytes (aligned %zu): %zu of %zu bytes free, "
                       "largest free range %zu; raise DUET_SYMMETRIC_SIZE", fn, size, alignment, s.free,
                       s.total, s.largest_free);
    else if (zero) /* before the outcome's exchange: nobody writes into a block its owner has not zeroed */
        memset(h->local_base + off, 0, size);
    if ((st = agree_outcome(c, st, fn)) != DUET_OK) {
        if (!rc) { /* another rank failed: mine goes back, so the allocators stay alike */
            pthread_mutex_lock(&h->lock);
            duet_alloc_give(h->alloc, off);
            pthread_mutex_unlock(&h->lock);
        }
        return NULL;
    }
    DUET_LOG(TRACE, HEAP, "%s(%zu, align %zu) -> offset %zu", fn, size, alignment, off);
    duet_error_clear();
    return h->local_base + off;
}

static void *malloc_(duet_comm_t c, size_t size)
{
    return duet_comm_check(c, "duet_malloc") ? NULL : alloc_block(c, 64, size, 0, DUET_OK, "duet_malloc");
}
void *duet_malloc(duet_comm_t c, size_t size) { DUET_COMM_CALL_PTR(c, "duet_malloc", malloc_(c, size)); }

static void *align_(duet_comm_t c, size_t alignment, size_t size)
{
    return duet_comm_check(c, "duet_align") ? NULL : alloc_block(c, alignment, size, 0, DUET_OK, "duet_align");
}
void *duet_align(duet_comm_t c, size_t alignment, size_t size)
{
    DUET_COMM_CALL_PTR(c, "duet_align", align_(c, alignment, size));
}

static void *calloc_(duet_comm_t c, size_t count, size_t size)
{
    size_t bytes = 0;
    duet_status_t mine = DUET_OK;
    if (duet_comm_check(c, "duet_calloc")) return NULL;
    if (__builtin_mul_overflow(count, size, &bytes)) /* still takes part: the others must not wait */
        mine = DUET_FAIL(DUET_ERR_INVALID_ARG, HEAP, "duet_calloc: %zu x %zu bytes overflows", count, size);
    return alloc_block(c, 64, bytes, 1, mine, "duet_calloc");
}
void *duet_calloc(duet_comm_t c, size_t count, size_t size)
{
    DUET_COMM_CALL_PTR(c, "duet_calloc", calloc_(c, count, size));
}

/* GPU heap blocks: the same agreement, the GPU heap's own allocator (src/cuda). */
static void *malloc_device_(duet_comm_t c, size_t size)
{
    static const char fn[] = "duet_malloc_device";
    if (duet_comm_check(c, fn)) return NULL;
    duet_status_t mine = verdict(c, fn);
    if (!mine && !c->heap->dev) {
        const duet_heap_dev_ops_t *ops = duet_heap_dev_builtin;
        if (ops)
            mine = DUET_FAIL(DUET_ERR_UNSUPPORTED, CUDA, "%s: no GPU heap on this communicator (%s)", fn,
                             ops->available() ? "some rank has no GPU, or its DUET_CUDA=off"
                                              : "no usable GPU here, or DUET_CUDA=off");
        else
            mine = DUET_FAIL(DUET_ERR_UNSUPPORTED, CUDA, "%s: this Duet is built without the CUDA backend "
                             "(configure with -DDUET_CUDA=ON where nvcc is installed)", fn);
    }
    heap_req_t req = {REQ_ALLOC_DEVICE, (int32_t)mine, size, 256};
    if (agree(c, &req, fn)) return NULL;
    if (size == 0) {
        duet_error_clear();
        return NULL;
    }
    void *p = NULL;
    duet_status_t st = c->heap->dev_ops->alloc(c->heap, &c->boot, c->heap_pe, size, &p, fn);
    if ((st = agree_outcome(c, st, fn)) != DUET_OK) {
        if (p) c->heap->dev_ops->free(c->heap, p, fn);
        return NULL;
    }
    duet_error_clear();
    return p;
}
void *duet_malloc_device(duet_comm_t c, size_t size)
{
    DUET_COMM_CALL_PTR(c, "duet_malloc_device", malloc_device_(c, size));
}

static duet_status_t duet_free_(duet_comm_t c, void *ptr)
{
    static const char fn[] = "duet_free";
    duet_status_t st = duet_comm_check(c, fn);
    if (st) return st;
    duet_status_t mine = verdict(c, fn);
    duet_heap_t *h = c->heap;
    int device = ptr && duet_heap_dev_owns(h, ptr, 1);
    size_t off = 0;
    if (device) {
        off = h->dev_ops->offset(h, ptr);
    } else if (ptr) {
        uintptr_t lo = (uintptr_t)h->local_base + DUET_HEAP_USER_OFFSET;
        off = (uintptr_t)ptr - (uintptr_t)h->local_base;
        if (!mine && ((uintptr_t)ptr < lo || (uintptr_t)ptr >= (uintptr_t)h->local_base + h->user_end))
            mine = DUET_FAIL(DUET_ERR_INVALID_ARG, HEAP, "%s: %p is not in the symmetric heap", fn, ptr);
        pthread_mutex_lock(&h->lock);
        size_t live = mine ? 1 : duet_alloc_block_size(h->alloc, off);
        pthread_mutex_unlock(&h->lock);
        if (!live)
            mine = DUET_FAIL(DUET_ERR_INVALID_ARG, HEAP, "%s: %p is not a live block (double free?)", fn, ptr);
    }
    /* free is collective: agree on the block (also the OpenSHMEM barrier before freeing) */
    heap_req_t req = {device ? REQ_FREE_DEVICE : REQ_FREE, (int32_t)mine, ptr ? off : UINT64_MAX, 0};
    if ((st = agree(c, &req, fn)) || !ptr) return st;
    if (device) { /* the GPU heap checks its block itself: its outcome is agreed on too */
        st = agree_outcome(c, h->dev_ops->free(h, ptr, fn), fn);
        return duet_error_ok(st);
    }
    pthread_mutex_lock(&h->lock);
    duet_alloc_give(h->alloc, off); /* a live block (checked above, on every rank): cannot fail */
    pthread_mutex_unlock(&h->lock);
    return DUET_OK;
}
duet_status_t duet_free(duet_comm_t c, void *ptr)
{
    DUET_COMM_CALL(c, "duet_free", duet_free_(c, ptr));
}
