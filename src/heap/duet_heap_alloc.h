/*
 * duet_heap_alloc.h — the symmetric-heap allocator: hands out offsets in [0, size).
 *
 * Every rank runs its own copy of this allocator and feeds it the same sequence of
 * collective duet_malloc/duet_free calls, so the allocator is deterministic: the same
 * sequence of calls gives the same offsets on every rank, whatever the addresses of the
 * ranks' heaps, the time, or the behaviour of the C library's malloc. It manages offsets
 * only; its bookkeeping lives in ordinary private memory, never inside the managed range.
 *
 * Not thread-safe: the caller (the heap layer) holds a lock around every call.
 */
#ifndef DUET_HEAP_ALLOC_H
#define DUET_HEAP_ALLOC_H

#include <stddef.h>

/* Blocks are handed out in multiples of this many bytes, at offsets that are multiples of
 * it: every block starts on its own cache line. */
#define DUET_ALLOC_GRANULE ((size_t)64)

typedef struct duet_alloc duet_alloc_t;

/* Creates an allocator managing offsets [0, size); size may be any value (a tail shorter
 * than the granule simply never fits a block). Returns NULL if out of host memory. */
duet_alloc_t *duet_alloc_create(size_t size);

/* Frees the allocator's bookkeeping; live blocks are forgotten. NULL is a no-op. */
void duet_alloc_destroy(duet_alloc_t *a);

/* Takes a block of `size` bytes (size > 0, rounded up to DUET_ALLOC_GRANULE) whose offset
 * is a multiple of `align` (a power of two >= 1; alignments below the granule are raised
 * to it). Picks the best fit: the smallest free range that can hold the aligned block,
 * the lowest such offset on a tie. The padding before the block and the remainder after
 * it stay free and usable.
 * Returns 0 and sets *offset, or -1 (state unchanged) when no free range fits, when
 * size/align/offset are invalid (size 0, align not a power of two, size too large to
 * round up), or when host memory for the bookkeeping runs out. */
int duet_alloc_take(duet_alloc_t *a, size_t size, size_t align, size_t *offset);

/* Returns the block that starts at `offset` to the free ranges, merging it with free
 * neighbours on both sides. Never allocates, so it cannot fail for a live block.
 * Returns 0, or -1 (state unchanged) if `offset` is not the start of a live block
 * (double free, an offset inside a block, a wild offset). */
int duet_alloc_give(duet_alloc_t *a, size_t offset);

/* Size of the live block that starts at `offset` (the size asked for, rounded up to the
 * granule), or 0 if no live block starts there. */
size_t duet_alloc_block_size(const duet_alloc_t *a, size_t offset);

/* The live block whose asked-for bytes contain `offset`: 0 and its start and the size it was
 * asked for (not rounded up), or -1 when the offset lies in no live block (or in the rounding
 * past the asked size). O(log blocks). */
int duet_alloc_block_of(const duet_alloc_t *a, size_t offset, size_t *start, size_t *asked);

typedef struct {
    size_t total;        /* bytes managed: the size given to duet_alloc_create          */
    size_t used;         /* bytes in live blocks (rounded sizes)                        */
    size_t free;         /* bytes in free ranges; used + free == total                  */
    size_t largest_free; /* length of the longest free range                            */
    size_t blocks;       /* live blocks                                                 */
    size_t free_ranges;  /* free ranges (maximal: no two are adjacent)                  */
} duet_alloc_stats_t;

/* Fills *s with the allocator's current figures (O(number of free ranges)). */
void duet_alloc_stats(const duet_alloc_t *a, duet_alloc_stats_t *s);

#endif /* DUET_HEAP_ALLOC_H */
