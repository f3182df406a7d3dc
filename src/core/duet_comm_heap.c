/*
 * Collective allocation on the symmetric heap: duet_malloc / calloc / align / free.
 *
 * Every rank runs the same deterministic allocator on the same sequence of requests, so
 * the same offset comes out everywhere without any communication. A small out-of-band
 * exchange first checks that all ranks really made the same request; it also stands in
 * for the barrier OpenSHMEM requires (no rank leaves before every rank has entered).
 */
#include <stdlib.h>
#include <string.h>
#include "core/duet_comm.h"
#include "core/duet_ft.h"
#include "cuda/duet_cuda_heap.h"
#include "duet/duet_cuda.h"

/* the GPU heap's requests are kinds of their own: a host call on one rank and a device call
 * on another disagree */
enum { REQ_ALLOC = 1, REQ_FREE = 2, REQ_ALLOC_DEVICE = 3, REQ_FREE_DEVICE = 4 };

typedef struct {
    uint32_t kind, pad;
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

static duet_status_t agree(duet_comm_t c, const heap_req_t *mine, const char *fn)
{
    heap_req_t *all = malloc(sizeof *all * (size_t)c->size);
    if (!all) return DUET_FAIL(DUET_ERR_NO_MEMORY, HEAP, "%s: out of host memory", fn);
    duet_status_t st = duet_boot_allgather(&c->boot, mine, all, sizeof *mine);
    for (int r = 0; st == DUET_OK && r < c->size; r++)
        if (memcmp(&all[r], mine, sizeof *mine) != 0)
            st = DUET_FAIL(DUET_ERR_INVALID_ARG, HEAP,
                           "%s: ranks disagree: rank %d asked for %s(%llu, align %llu), rank %d for "
                           "%s(%llu, align %llu); every rank must make the same call",
                           fn, r, req_name(all[r].kind), (unsigned long long)all[r].size,
                           (unsigned long long)all[r].align, c->rank, req_name(mine->kind),
                           (unsigned long long)mine->size,
                           (unsigned long long)mine->align);
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

static void *alloc_block(duet_comm_t c, size_t alignment, size_t size, const char *fn)
{
    if (duet_comm_heap_allocator(c, fn)) return NULL;
    if (alignment == 0 || (alignment & (alignment - 1))) {
        DUET_FAIL(DUET_ERR_INVALID_ARG, HEAP, "%s: alignment %zu is not a power of two", fn, alignment);
        return NULL;
    }
    size_t max_align = duet_heap_base_align(c->heap->seg_size);
    if (alignment > max_align) {
        DUET_FAIL(DUET_ERR_INVALID_ARG, HEAP, "%s: alignment %zu exceeds the heap's %zu", fn, alignment,
                  max_align);
        return NULL;
    }
    heap_req_t req = {REQ_ALLOC, 0, size, alignment};
    if (agree(c, &req, fn)) return NULL;
    if (size == 0) return NULL; /* OpenSHMEM: malloc(0) gives NULL, no error */
    duet_heap_t *h = c->heap;
    size_t off;
    pthread_mutex_lock(&h->lock);
    int rc = duet_alloc_take(h->alloc, size, alignment, &off);
    duet_alloc_stats_t s;
    if (rc) duet_alloc_stats(h->alloc, &s);
    pthread_mutex_unlock(&h->lock);
    if (rc) {
        DUET_FAIL(DUET_ERR_NO_MEMORY, HEAP,
                  "%s: the symmetric heap cannot fit %zu bytes (aligned %zu): %zu of %zu bytes free, "
                  "largest free range %zu; raise DUET_SYMMETRIC_SIZE", fn, size, alignment, s.free,
                  s.total, s.largest_free);
        return NULL;
    }
    DUET_LOG(TRACE, HEAP, "%s(%zu, align %zu) -> offset %zu", fn, size, alignment, off);
    return h->local_base + off;
}

void *duet_malloc(duet_comm_t c, size_t size) { return alloc_block(c, 64, size, "duet_malloc"); }

void *duet_align(duet_comm_t c, size_t alignment, size_t size)
{
    return alloc_block(c, alignment, size, "duet_align");
}

void *duet_calloc(duet_comm_t c, size_t count, size_t size)
{
    size_t bytes;
    if (__builtin_mul_overflow(count, size, &bytes)) {
        DUET_FAIL(DUET_ERR_INVALID_ARG, HEAP, "duet_calloc: %zu x %zu bytes overflows", count, size);
        return NULL;
    }
    void *p = alloc_block(c, 64, bytes, "duet_calloc");
    if (p) {
        memset(p, 0, bytes);
        /* nobody writes into the block before its owner has zeroed it */
        duet_status_t st = duet_sync(c);
        if (st) { /* the sync's own status (timeout, revoked, ...) stays the last status */
            duet_error_wrap(st, "duet_calloc");
            return NULL;
        }
    }
    return p;
}

/* GPU heap blocks: the same agreement, the GPU heap's own allocator (src/cuda). */
void *duet_malloc_device(duet_comm_t c, size_t size)
{
    static const char fn[] = "duet_malloc_device";
    if (duet_comm_heap_allocator(c, fn)) return NULL;
    if (!c->heap->gpu) {
#ifdef DUET_HAVE_CUDA
        DUET_FAIL(DUET_ERR_UNSUPPORTED, CUDA, "%s: no GPU heap on this communicator (%s)", fn,
                  duet_cuda_available() ? "some rank has no GPU, or its DUET_CUDA=off"
                                        : "no usable GPU here, or DUET_CUDA=off");
#else
        DUET_FAIL(DUET_ERR_UNSUPPORTED, CUDA, "%s: this Duet is built without the CUDA backend "
                  "(configure with -DDUET_CUDA=ON where nvcc is installed)", fn);
#endif
        return NULL;
    }
    heap_req_t req = {REQ_ALLOC_DEVICE, 0, size, 256};
    if (agree(c, &req, fn) || size == 0) return NULL;
    void *p = NULL;
    duet_cuda_heap_alloc(c->heap->gpu, size, &p, fn);
    return p;
}

static duet_status_t free_device(duet_comm_t c, void *ptr)
{
    heap_req_t req = {REQ_FREE_DEVICE, 0, duet_cuda_heap_offset(c->heap->gpu, ptr), 0};
    duet_status_t st = agree(c, &req, "duet_free");
    return st ? st : duet_cuda_heap_free(c->heap->gpu, ptr, "duet_free");
}

duet_status_t duet_free(duet_comm_t c, void *ptr)
{
    static const char fn[] = "duet_free";
    duet_status_t st = duet_comm_heap_allocator(c, fn);
    if (st) return st;
    duet_heap_t *h = c->heap;
    if (ptr && duet_cuda_heap_owns(h->gpu, ptr)) return free_device(c, ptr);
    size_t off = 0;
    if (ptr) {
        uintptr_t lo = (uintptr_t)h->local_base + DUET_HEAP_USER_OFFSET;
        if ((uintptr_t)ptr < lo || (uintptr_t)ptr >= (uintptr_t)h->local_base + h->user_end)
            return DUET_FAIL(DUET_ERR_INVALID_ARG, HEAP, "%s: %p is not in the symmetric heap", fn, ptr);
        off = (uintptr_t)ptr - (uintptr_t)h->local_base;
    }
    /* free is collective: agree on the block (also the OpenSHMEM barrier before freeing) */
    heap_req_t req = {REQ_FREE, 0, ptr ? off : UINT64_MAX, 0};
    if ((st = agree(c, &req, fn)) || !ptr) return st;
    pthread_mutex_lock(&h->lock);
    int rc = duet_alloc_give(h->alloc, off);
    pthread_mutex_unlock(&h->lock);
    if (rc) return DUET_FAIL(DUET_ERR_INVALID_ARG, HEAP, "%s: %p is not a live block (double free?)", fn, ptr);
    return DUET_OK;
}
