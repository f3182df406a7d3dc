/*
 * duet_heap_alloc.c — the symmetric-heap allocator (offsets, not pointers).
 *
 * Data structure: two arrays of (offset, length) ranges in private memory, each sorted
 * by offset.
 *
 *   offset  0         256              1024      1536                     size
 *           | block A |      free      | block B |          free          |
 *
 *   blocks[] (live blocks)              free[] (free ranges, maximal)
 *     { off 0,    len 256 }               { off 256,  len 768 }
 *     { off 1024, len 512 }               { off 1536, len size - 1536 }
 *
 * - Finding a block by offset (give, block_size, block_of) is a binary search of blocks[];
 *   a live block also keeps the size it was asked for (DUET_CHECK_BOUNDS compares with it).
 * - take scans free[] for the best fit: the shortest range that holds the block at an
 *   aligned offset inside it (first such range on a tie). The range is split into up to
 *   three pieces: the alignment padding before the block and the remainder after it go
 *   back to free[] in place; the block goes into blocks[] (memmove to keep the order).
 * - give binary-searches free[] for the block's neighbours and merges it with the range
 *   that ends where it starts and the one that starts where it ends, so free ranges are
 *   always maximal: no two touch, and a block lies between any two of them.
 *
 * Memory: both arrays share one capacity `cap`. Before it changes anything, take makes
 * cap >= nblocks + 2 (its new block, plus the one extra free range a split can add), so
 * a failed realloc leaves the state as it was. Free ranges are maximal, hence
 * nfree <= nblocks + 1 in every state; after a give there are nblocks - 1 blocks, so at
 * most nblocks <= cap free ranges: give never grows anything and cannot fail.
 *
 * Everything depends only on the sequence of calls: no addresses, no clocks, and realloc
 * only changes where the arrays live, never their contents.
 */
#include "heap/duet_heap_alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    size_t off, len;
    size_t asked; /* live blocks: the size asked for (len rounded it up); free ranges: 0 */
} duet_range_t;

struct duet_alloc {
    size_t size;          /* offsets [0, size) are managed                  */
    size_t used;          /* sum of live block lengths                      */
    duet_range_t *blocks; /* live blocks, sorted by offset                  */
    duet_range_t *free;   /* free ranges, sorted by offset, never adjacent  */
    size_t nblocks, nfree;
    size_t cap;           /* capacity of each of the two arrays             */
};

#define DUET_ALLOC_INITIAL_CAP 16

/* First index i in r[0..n) with r[i].off >= off (n if none). */
static size_t range_lower_bound(const duet_range_t *r, size_t n, size_t off)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r[mid].off < off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void range_insert(duet_range_t *r, size_t *n, size_t i, duet_range_t v)
{
    memmove(&r[i + 1], &r[i], (*n - i) * sizeof(*r));
    r[i] = v;
    (*n)++;
}

static void range_remove(duet_range_t *r, size_t *n, size_t i)
{
    memmove(&r[i], &r[i + 1], (*n - i - 1) * sizeof(*r));
    (*n)--;
}

/* Index of the live block starting exactly at off, or SIZE_MAX. */
static size_t block_find(const duet_alloc_t *a, size_t off)
{
    size_t i = range_lower_bound(a->blocks, a->nblocks, off);
    return (i < a->nblocks && a->blocks[i].off == off) ? i : SIZE_MAX;
}

/* Makes both arrays hold at least `need` entries. On failure nothing observable changes
 * (one array may have grown, which is harmless: cap only moves once both have). */
static int reserve(duet_alloc_t *a, size_t need)
{
    if (need <= a->cap)
        return 0;
    size_t cap = a->cap;
    while (cap < need) {
        if (cap > SIZE_MAX / 2 / sizeof(duet_range_t))
            return -1;
        cap *= 2;
    }
    duet_range_t *f = realloc(a->free, cap * sizeof(*f));
    if (f == NULL)
        return -1;
    a->free = f;
    duet_range_t *b = realloc(a->blocks, cap * sizeof(*b));
    if (b == NULL)
        return -1;
    a->blocks = b;
    a->cap = cap;
    return 0;
}

duet_alloc_t *duet_alloc_create(size_t size)
{
    duet_alloc_t *a = calloc(1, sizeof(*a));
    if (a == NULL)
        return NULL;
    a->cap = DUET_ALLOC_INITIAL_CAP;
    a->free = malloc(a->cap * sizeof(*a->free));
    a->blocks = malloc(a->cap * sizeof(*a->blocks));
    if (a->free == NULL || a->blocks == NULL) {
        duet_alloc_destroy(a);
        return NULL;
    }
    a->size = size;
    if (size > 0)
        a->free[a->nfree++] = (duet_range_t){ 0, size, 0 };
    return a;
}

void duet_alloc_destroy(duet_alloc_t *a)
{
    if (a == NULL)
        return;
    free(a->free);
    free(a->blocks);
    free(a);
}

int duet_alloc_take(duet_alloc_t *a, size_t size, size_t align, size_t *offset)
{
    if (a == NULL || offset == NULL || size == 0 || align == 0 || (align & (align - 1)) != 0)
        return -1;
    if (size > a->size || size > SIZE_MAX - (DUET_ALLOC_GRANULE - 1))
        return -1; /* too big, or would overflow when rounded up */
    size_t asked = size;
    size = (size + DUET_ALLOC_GRANULE - 1) & ~(DUET_ALLOC_GRANULE - 1);
    if (size > a->size)
        return -1;
    if (align < DUET_ALLOC_GRANULE)
        align = DUET_ALLOC_GRANULE;

    /* Best fit. The padding is computed from the low bits only, so nothing overflows
     * even for align near SIZE_MAX / 2 (only offset 0 is that aligned). */
    size_t best = SIZE_MAX, best_pad = 0;
    for (size_t i = 0; i < a->nfree; i++) {
        const duet_range_t *r = &a->free[i];
        size_t pad = (align - (r->off & (align - 1))) & (align - 1);
        if (pad > r->len || r->len - pad < size)
            continue;
        if (best == SIZE_MAX || r->len < a->free[best].len) {
            best = i;
            best_pad = pad;
            if (r->len == size) /* exact fit: nothing shorter can exist */
                break;
        }
    }
    if (best == SIZE_MAX)
        return -1;
    /* A split adds at most one free range; nfree <= nblocks + 1 so nblocks + 2 suffices. */
    if (reserve(a, a->nblocks + 2) != 0)
        return -1;

    duet_range_t r = a->free[best];
    size_t start = r.off + best_pad;
    size_t tail = r.len - best_pad - size;
    duet_range_t left = { r.off, best_pad, 0 };
    duet_range_t right = { start + size, tail, 0 };
    if (best_pad > 0 && tail > 0) {
        a->free[best] = left;
        range_insert(a->free, &a->nfree, best + 1, right);
    } else if (best_pad > 0) {
        a->free[best] = left;
    } else if (tail > 0) {
        a->free[best] = right;
    } else {
        range_remove(a->free, &a->nfree, best);
    }

    size_t bi = range_lower_bound(a->blocks, a->nblocks, start);
    range_insert(a->blocks, &a->nblocks, bi, (duet_range_t){ start, size, asked });
    a->used += size;
    *offset = start;
    return 0;
}

int duet_alloc_give(duet_alloc_t *a, size_t offset)
{
    if (a == NULL)
        return -1;
    size_t bi = block_find(a, offset);
    if (bi == SIZE_MAX)
        return -1;
    duet_range_t b = a->blocks[bi];
    range_remove(a->blocks, &a->nblocks, bi);
    a->used -= b.len;

    /* free[j] is the first free range after the block, free[j - 1] the last before it. */
    size_t j = range_lower_bound(a->free, a->nfree, b.off);
    int join_prev = j > 0 && a->free[j - 1].off + a->free[j - 1].len == b.off;
    int join_next = j < a->nfree && a->free[j].off == b.off + b.len;
    if (join_prev && join_next) {
        a->free[j - 1].len += b.len + a->free[j].len;
        range_remove(a->free, &a->nfree, j);
    } else if (join_prev) {
        a->free[j - 1].len += b.len;
    } else if (join_next) {
        a->free[j].off = b.off;
        a->free[j].len += b.len;
    } else {
        b.asked = 0;
        range_insert(a->free, &a->nfree, j, b); /* fits: see the capacity note above */
    }
    return 0;
}

size_t duet_alloc_block_size(const duet_alloc_t *a, size_t offset)
{
    if (a == NULL)
        return 0;
    size_t bi = block_find(a, offset);
    return bi == SIZE_MAX ? 0 : a->blocks[bi].len;
}

int duet_alloc_block_of(const duet_alloc_t *a, size_t offset, size_t *start, size_t *asked)
{
    if (a == NULL || a->nblocks == 0)
        return -1;
    /* the last block that starts at or before offset */
    size_t i = range_lower_bound(a->blocks, a->nblocks, offset);
    if (i < a->nblocks && a->blocks[i].off == offset) {
        /* starts exactly here */
    } else if (i == 0) {
        return -1;
    } else {
        i--;
    }
    const duet_range_t *b = &a->blocks[i];
    if (offset - b->off >= b->asked)
        return -1; /* past what was asked for: the rounding's tail belongs to no object */
    *start = b->off;
    *asked = b->asked;
    return 0;
}

void duet_alloc_stats(const duet_alloc_t *a, duet_alloc_stats_t *s)
{
    memset(s, 0, sizeof(*s));
    if (a == NULL)
        return;
    s->total = a->size;
    s->used = a->used;
    s->blocks = a->nblocks;
    s->free_ranges = a->nfree;
    for (size_t i = 0; i < a->nfree; i++) {
        s->free += a->free[i].len;
        if (a->free[i].len > s->largest_free)
            s->largest_free = a->free[i].len;
    }
}
