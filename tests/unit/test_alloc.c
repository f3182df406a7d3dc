/*
 * test_alloc.c — the symmetric-heap allocator (src/heap/duet_heap_alloc.c).
 *
 * Usage: test_alloc [seed]. Exit code 0 on success; on failure a message on stderr and
 * exit code 1. The randomized parts print their seed; pass it back to replay a failure.
 */
#include "duet_test.h"
#include "heap/duet_heap_alloc.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define G DUET_ALLOC_GRANULE
#define KiB ((size_t)1024)
#define MiB (KiB * 1024)

static size_t round_up(size_t n) { return (n + G - 1) & ~(G - 1); }

static duet_alloc_stats_t stats_of(const duet_alloc_t *a)
{
    duet_alloc_stats_t s;
    duet_alloc_stats(a, &s);
    CHECK(s.used + s.free == s.total, "used %zu + free %zu != total %zu", s.used, s.free, s.total);
    CHECK(s.largest_free <= s.free, "largest_free %zu > free %zu", s.largest_free, s.free);
    CHECK((s.free_ranges == 0) == (s.free == 0), "free_ranges %zu, free %zu", s.free_ranges, s.free);
    return s;
}

static void check_one_range(const duet_alloc_t *a)
{
    duet_alloc_stats_t s = stats_of(a);
    CHECK(s.blocks == 0 && s.used == 0, "blocks %zu used %zu", s.blocks, s.used);
    CHECK(s.free_ranges == 1 && s.largest_free == s.total && s.free == s.total,
          "free_ranges %zu largest %zu free %zu total %zu", s.free_ranges, s.largest_free,
          s.free, s.total);
}

static size_t take_ok(duet_alloc_t *a, size_t size, size_t align)
{
    size_t off = SIZE_MAX;
    CHECK(duet_alloc_take(a, size, align, &off) == 0, "take(%zu, %zu) failed", size, align);
    CHECK(off % align == 0 && off % G == 0, "take(%zu, %zu) -> misaligned %zu", size, align, off);
    CHECK(duet_alloc_block_size(a, off) == round_up(size), "block_size(%zu) = %zu, want %zu", off,
          duet_alloc_block_size(a, off), round_up(size));
    return off;
}

static void take_fails(duet_alloc_t *a, size_t size, size_t align)
{
    size_t off = 12345;
    duet_alloc_stats_t before = stats_of(a), after;
    CHECK(duet_alloc_take(a, size, align, &off) == -1, "take(%zu, %zu) succeeded at %zu", size,
          align, off);
    CHECK(off == 12345, "failed take wrote *offset");
    after = stats_of(a);
    CHECK(memcmp(&before, &after, sizeof(before)) == 0, "failed take changed the stats");
}

static void shuffle(size_t *v, size_t n, uint64_t *rng)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = rng_below(rng, i), t = v[i - 1];
        v[i - 1] = v[j];
        v[j] = t;
    }
}

/* ---------------------------------------------------------------- basic take/give */
static void test_basic(void)
{
    duet_alloc_t *a = duet_alloc_create(1 * MiB);
    CHECK(a != NULL, "create");
    check_one_range(a);
    size_t o1 = take_ok(a, 100, 1), o2 = take_ok(a, 1, 1), o3;
    CHECK(o1 == 0 && o2 == 128, "first blocks at %zu, %zu", o1, o2);
    CHECK(duet_alloc_block_size(a, o1) == 128 && duet_alloc_block_size(a, o2) == 64, "sizes");
    CHECK(duet_alloc_block_size(a, 64) == 0 && duet_alloc_block_size(a, 1 * MiB) == 0, "no block");
    duet_alloc_stats_t s = stats_of(a);
    CHECK(s.used == 192 && s.blocks == 2 && s.free_ranges == 1, "stats after two takes");

    CHECK(duet_alloc_give(a, o1) == 0, "give");
    CHECK(duet_alloc_block_size(a, o1) == 0, "block_size after give");
    s = stats_of(a);
    CHECK(s.blocks == 1 && s.free_ranges == 2 && s.largest_free == 1 * MiB - 192, "stats");
    o3 = take_ok(a, 64, 1); /* best fit: the 128-byte hole, not the big tail */
    CHECK(o3 == 0, "best fit took %zu", o3);
    CHECK(duet_alloc_give(a, o2) == 0 && duet_alloc_give(a, o3) == 0, "give");
    check_one_range(a);

    /* best fit, first range on a tie: holes of 256, 192, 192 bytes at 0, 320, 576 */
    size_t h[7];
    const size_t hs[7] = { 256, 64, 192, 64, 192, 64, 64 };
    for (int i = 0; i < 7; i++)
        h[i] = take_ok(a, hs[i], 1);
    CHECK(h[2] == 320 && h[4] == 576, "layout %zu %zu", h[2], h[4]);
    CHECK(duet_alloc_give(a, h[0]) == 0 && duet_alloc_give(a, h[2]) == 0 &&
              duet_alloc_give(a, h[4]) == 0, "give");
    CHECK((h[2] = take_ok(a, 100, 1)) == 320, "best fit took %zu, want 320", h[2]);
    CHECK((h[4] = take_ok(a, 128, 1)) == 576, "best fit took %zu, want 576", h[4]);
    CHECK((h[0] = take_ok(a, 192, 1)) == 0, "best fit took %zu, want 0", h[0]);
    CHECK(duet_alloc_block_size(a, 0) == 192, "size");
    for (int i = 0; i < 7; i++)
        CHECK(duet_alloc_give(a, h[i]) == 0, "give");
    check_one_range(a);

    /* invalid arguments */
    size_t off;
    take_fails(a, 0, 1);
    take_fails(a, 64, 0);
    take_fails(a, 64, 3);
    take_fails(a, 64, 96);
    CHECK(duet_alloc_take(a, 64, 1, NULL) == -1, "NULL offset");
    CHECK(duet_alloc_take(NULL, 64, 1, &off) == -1, "NULL allocator");
    CHECK(duet_alloc_give(NULL, 0) == -1 && duet_alloc_block_size(NULL, 0) == 0, "NULL allocator");
    check_one_range(a);
    duet_alloc_destroy(a);
    duet_alloc_destroy(NULL);

    /* an empty range, and a size that is not a multiple of the granule */
    a = duet_alloc_create(0);
    CHECK(a != NULL, "create(0)");
    take_fails(a, 1, 1);
    s = stats_of(a);
    CHECK(s.total == 0 && s.free_ranges == 0 && s.largest_free == 0, "create(0) stats");
    duet_alloc_destroy(a);

    a = duet_alloc_create(1000);
    CHECK(a != NULL, "create(1000)");
    take_fails(a, 1000, 1); /* rounds to 1024 > 1000 */
    o1 = take_ok(a, 960, 1);
    take_fails(a, 1, 1); /* 40-byte tail is below the granule */
    s = stats_of(a);
    CHECK(o1 == 0 && s.used == 960 && s.free == 40 && s.largest_free == 40, "odd size stats");
    CHECK(duet_alloc_give(a, o1) == 0, "give");
    check_one_range(a);
    duet_alloc_destroy(a);
}

/* ---------------------------------------------------------------- alignment */
static void test_align(void)
{
    /* each power of two on a fresh heap whose offset 0 is taken, so it has to pad */
    for (unsigned sh = 0; sh <= 20; sh++) {
        size_t align = (size_t)1 << sh;
        duet_alloc_t *a = duet_alloc_create(4 * MiB);
        CHECK(a != NULL, "create");
        size_t first = take_ok(a, 1, 1);
        size_t off = take_ok(a, 100, align);
        size_t want = align > G ? align : G;
        CHECK(off == want, "align %zu: block at %zu, want %zu", align, off, want);
        if (off > 2 * G) { /* the padding [64, off) stays free and usable */
            duet_alloc_stats_t s = stats_of(a);
            CHECK(s.free_ranges == 2, "align %zu: %zu free ranges", align, s.free_ranges);
            size_t in_pad = take_ok(a, off - G, 1);
            CHECK(in_pad == G, "align %zu: padding block at %zu", align, in_pad);
            CHECK(duet_alloc_give(a, in_pad) == 0, "give");
        }
        CHECK(duet_alloc_give(a, first) == 0 && duet_alloc_give(a, off) == 0, "give");
        check_one_range(a);
        duet_alloc_destroy(a);
    }

    /* all alignments mixed in one heap, twice over */
    duet_alloc_t *a = duet_alloc_create(16 * MiB);
    CHECK(a != NULL, "create");
    size_t offs[42];
    for (unsigned i = 0; i < 42; i++) {
        size_t align = (size_t)1 << (i % 21);
        offs[i] = take_ok(a, 1 + i * 37, align);
        for (unsigned j = 0; j < i; j++)
            CHECK(offs[j] + duet_alloc_block_size(a, offs[j]) <= offs[i] ||
                      offs[i] + duet_alloc_block_size(a, offs[i]) <= offs[j],
                  "blocks %u and %u overlap", i, j);
    }
    for (unsigned i = 0; i < 42; i++)
        CHECK(duet_alloc_give(a, offs[(i * 17) % 42]) == 0, "give");
    check_one_range(a);
    duet_alloc_destroy(a);
}

/* ---------------------------------------------------------------- exhaustion */
static void test_exhaust(void)
{
    enum { N = 1024 };
    static size_t offs[N];
    duet_alloc_t *a = duet_alloc_create(N * G);
    CHECK(a != NULL, "create");
    take_fails(a, N * G + 1, 1);
    for (size_t i = 0; i < N; i++)
        CHECK((offs[i] = take_ok(a, G, 1)) == i * G, "first fill: block %zu at %zu", i, offs[i]);
    take_fails(a, 1, 1);
    duet_alloc_stats_t s = stats_of(a);
    CHECK(s.used == s.total && s.free_ranges == 0 && s.largest_free == 0 && s.blocks == N, "full");
    for (size_t i = 1; i < N; i += 2)
        CHECK(duet_alloc_give(a, offs[i]) == 0, "give");
    s = stats_of(a);
    CHECK(s.free_ranges == N / 2 && s.largest_free == G && s.free == N / 2 * G, "checkerboard");
    take_fails(a, G + 1, 1); /* 32 KiB free, but no two granules touch */
    take_fails(a, G, 128);   /* and the free ones all sit at odd granules */
    for (size_t i = 1; i < N; i += 2)
        offs[i] = take_ok(a, G, 1);
    take_fails(a, 1, 1);
    for (size_t i = 0; i < N; i++)
        CHECK(duet_alloc_give(a, offs[i]) == 0, "give");
    check_one_range(a);
    CHECK(take_ok(a, N * G, 1) == 0, "whole range");
    take_fails(a, 1, 1);
    CHECK(duet_alloc_give(a, 0) == 0, "give");
    check_one_range(a);
    duet_alloc_destroy(a);
}

/* ---------------------------------------------------------------- sizes near SIZE_MAX */
static void test_huge(void)
{
    const size_t top = (size_t)1 << (sizeof(size_t) * 8 - 1);
    duet_alloc_t *a = duet_alloc_create(1 * MiB);
    CHECK(a != NULL, "create");
    take_fails(a, SIZE_MAX, 1);
    take_fails(a, SIZE_MAX - G + 1, 1);
    take_fails(a, SIZE_MAX - G + 2, 1);
    take_fails(a, top + 1, 1);
    take_fails(a, 1, SIZE_MAX);
    take_fails(a, SIZE_MAX, top);
    CHECK(take_ok(a, 1, top) == 0, "offset 0 is aligned to everything");
    take_fails(a, 1, top);
    take_fails(a, 1, 2 * MiB);
    CHECK(duet_alloc_give(a, 0) == 0, "give");
    check_one_range(a);
    duet_alloc_destroy(a);

    /* a range that spans the whole size_t space: only bookkeeping, no memory behind it */
    a = duet_alloc_create(SIZE_MAX);
    CHECK(a != NULL, "create(SIZE_MAX)");
    take_fails(a, SIZE_MAX, 1); /* would wrap when rounded up */
    size_t q = top / 2;
    CHECK(take_ok(a, q, top) == 0, "quarter at 0");
    CHECK(take_ok(a, q, top) == top, "quarter at the top half");
    take_fails(a, q, top); /* the next multiple of 2^63 does not exist */
    CHECK(take_ok(a, q, q) == q, "padding [q, top) is usable");
    duet_alloc_stats_t s = stats_of(a);
    CHECK(s.free == SIZE_MAX - 3 * q && s.largest_free == q - 1, "stats");
    CHECK(take_ok(a, q - G, 1) == top + q, "tail");
    const size_t quarters[] = { 0, q, top, top + q };
    for (size_t i = 0; i < 4; i++)
        CHECK(duet_alloc_give(a, quarters[i]) == 0, "give %zu", quarters[i]);
    check_one_range(a);
    duet_alloc_destroy(a);
}

/* ---------------------------------------------------------------- bad gives */
static void test_bad_give(void)
{
    duet_alloc_t *a = duet_alloc_create(1 * MiB);
    CHECK(a != NULL, "create");
    size_t b0 = take_ok(a, 1000, 1), b1 = take_ok(a, 64, 1), b2 = take_ok(a, 5000, 4096);
    CHECK(duet_alloc_give(a, b1) == 0, "give");
    duet_alloc_stats_t before = stats_of(a), after;
    const size_t wild[] = { b1, b0 + G, b0 + 1, b2 - G, b2 + 4096, 1 * MiB, 1 * MiB - G,
                            SIZE_MAX, SIZE_MAX - G + 1 };
    for (size_t i = 0; i < sizeof(wild) / sizeof(wild[0]); i++) {
        CHECK(duet_alloc_give(a, wild[i]) == -1, "give(%zu) accepted", wild[i]);
        after = stats_of(a);
        CHECK(memcmp(&before, &after, sizeof(before)) == 0, "give(%zu) changed state", wild[i]);
    }
    CHECK(duet_alloc_block_size(a, b0) == 1024 && duet_alloc_block_size(a, b2) == 5056, "intact");
    CHECK(duet_alloc_give(a, b0) == 0 && duet_alloc_give(a, b2) == 0, "give");
    CHECK(duet_alloc_give(a, b0) == -1 && duet_alloc_give(a, b2) == -1, "double free accepted");
    check_one_range(a);
    duet_alloc_destroy(a);
}

/* ---------------------------------------------------------------- coalescing */
static void test_coalesce(uint64_t seed)
{
    enum { MAXB = 4096 };
    static size_t offs[MAXB];
    uint64_t rng = seed ^ 0xc0a1e5ce;
    duet_alloc_t *a = duet_alloc_create(8 * MiB + 3 * G);
    CHECK(a != NULL, "create");
    for (int round = 0; round < 20; round++) {
        size_t n = 0;
        while (n < MAXB) {
            size_t size = 1 + rng_below(&rng, 8 * KiB);
            size_t align = (size_t)1 << rng_below(&rng, 14);
            if (duet_alloc_take(a, size, align, &offs[n]) != 0)
                break;
            n++;
        }
        CHECK(n > 100, "round %d: only %zu blocks", round, n);
        shuffle(offs, n, &rng);
        for (size_t i = 0; i < n; i++) {
            CHECK(duet_alloc_give(a, offs[i]) == 0, "give %zu", offs[i]);
            duet_alloc_stats_t s = stats_of(a);
            CHECK(s.blocks == n - i - 1, "blocks");
            CHECK(s.free_ranges <= s.blocks + 1, "%zu free ranges for %zu blocks: not coalesced",
                  s.free_ranges, s.blocks);
        }
        check_one_range(a);
    }
    duet_alloc_destroy(a);
}

/* ---------------------------------------------------------------- determinism */
#define DET_OPS 20000
static void run_sequence(uint64_t seed, size_t *out)
{
    enum { MAXL = 512 };
    size_t live[MAXL], nlive = 0;
    uint64_t rng = seed;
    /* unrelated host allocations between runs must not matter */
    void *noise = malloc(1 + rng_below(&rng, 100000));
    duet_alloc_t *a = duet_alloc_create(2 * MiB);
    CHECK(a != NULL && noise != NULL, "create");
    for (size_t i = 0; i < DET_OPS; i++) {
        if (nlive < MAXL && (nlive == 0 || rng_below(&rng, 100) < 55)) {
            size_t off = SIZE_MAX;
            int rc = duet_alloc_take(a, 1 + rng_below(&rng, 16 * KiB),
                                     (size_t)1 << rng_below(&rng, 16), &off);
            out[i] = rc == 0 ? off : SIZE_MAX - 1;
            if (rc == 0)
                live[nlive++] = off;
        } else {
            size_t k = rng_below(&rng, nlive);
            CHECK(duet_alloc_give(a, live[k]) == 0, "give");
            out[i] = live[k];
            live[k] = live[--nlive];
        }
    }
    duet_alloc_destroy(a);
    free(noise);
}

static void test_determinism(uint64_t seed)
{
    static size_t r1[DET_OPS], r2[DET_OPS];
    run_sequence(seed, r1);
    run_sequence(seed, r2);
    for (size_t i = 0; i < DET_OPS; i++)
        CHECK(r1[i] == r2[i], "op %zu: %zu vs %zu", i, r1[i], r2[i]);
}

/* ---------------------------------------------------------------- model check
 * A byte map of the range (1 = inside a live block) is the reference: every block must
 * land on zeros, inside [0, size), aligned; a failed take must have no aligned fit in the
 * map; the stats must match the map's zero runs (maximal free ranges). */
#define MODEL_SIZE (1 * MiB + 40) /* a tail below the granule, on purpose */
#define MODEL_OPS 200000
#define MODEL_MAXL 2048

typedef struct {
    size_t off, size;
} model_block_t;

/* Is there an aligned place for `size` bytes on zeros of the map? */
static int map_has_fit(const unsigned char *map, size_t n, size_t size, size_t align)
{
    size_t pos = 0;
    while (pos < n) {
        const unsigned char *z = memchr(map + pos, 0, n - pos);
        if (z == NULL)
            return 0;
        size_t start = (size_t)(z - map);
        const unsigned char *o = memchr(z, 1, n - start);
        size_t end = o ? (size_t)(o - map) : n;
        size_t pad = (align - (start & (align - 1))) & (align - 1);
        if (pad <= end - start && end - start - pad >= size)
            return 1;
        pos = end;
    }
    return 0;
}

static void check_map_stats(const duet_alloc_t *a, const unsigned char *map, size_t n)
{
    size_t runs = 0, largest = 0, zeros = 0, pos = 0;
    while (pos < n) {
        const unsigned char *z = memchr(map + pos, 0, n - pos);
        if (z == NULL)
            break;
        size_t start = (size_t)(z - map);
        const unsigned char *o = memchr(z, 1, n - start);
        size_t end = o ? (size_t)(o - map) : n;
        runs++;
        zeros += end - start;
        largest = end - start > largest ? end - start : largest;
        pos = end;
    }
    duet_alloc_stats_t s = stats_of(a);
    CHECK(s.free == zeros && s.free_ranges == runs && s.largest_free == largest,
          "stats free %zu ranges %zu largest %zu; map %zu %zu %zu", s.free, s.free_ranges,
          s.largest_free, zeros, runs, largest);
}

static void test_model(uint64_t seed)
{
    static model_block_t live[MODEL_MAXL];
    static unsigned char map[MODEL_SIZE];
    size_t nlive = 0, used = 0, takes = 0, fails = 0, gives = 0, wilds = 0;
    uint64_t rng = seed ^ 0x5eed0fdeadull;
    memset(map, 0, sizeof(map));
    duet_alloc_t *a = duet_alloc_create(MODEL_SIZE);
    CHECK(a != NULL, "create");

    for (size_t op = 0; op < MODEL_OPS; op++) {
        unsigned dice = (unsigned)rng_below(&rng, 100);
        if (nlive < MODEL_MAXL && (nlive == 0 || dice < 52)) {
            /* sizes: tiny, log-uniform up to 64 KiB, now and then huge */
            size_t size, align;
            unsigned k = (unsigned)rng_below(&rng, 64);
            if (k < 16)
                size = 1 + rng_below(&rng, 2 * G);
            else if (k < 63)
                size = 1 + rng_below(&rng, (size_t)2 << rng_below(&rng, 16));
            else
                size = SIZE_MAX - rng_below(&rng, 3 * G);
            k = (unsigned)rng_below(&rng, 64);
            if (k < 32)
                align = 1;
            else if (k < 62)
                align = (size_t)1 << rng_below(&rng, 17);
            else
                align = (size_t)1 << (17 + rng_below(&rng, sizeof(size_t) * 8 - 17));
            size_t off = SIZE_MAX;
            if (duet_alloc_take(a, size, align, &off) == 0) {
                size_t bs = round_up(size);
                CHECK(size <= MODEL_SIZE && duet_alloc_block_size(a, off) == bs,
                      "take(%zu) -> size %zu", size, duet_alloc_block_size(a, off));
                CHECK(off % align == 0 && off % G == 0, "take(%zu, %zu) -> %zu", size, align, off);
                CHECK(bs <= MODEL_SIZE && off <= MODEL_SIZE - bs, "block %zu+%zu outside", off, bs);
                CHECK(memchr(map + off, 1, bs) == NULL, "block %zu+%zu overlaps a live one", off, bs);
                memset(map + off, 1, bs);
                live[nlive++] = (model_block_t){ off, bs };
                used += bs;
                takes++;
            } else {
                int fit = size <= MODEL_SIZE && map_has_fit(map, MODEL_SIZE, round_up(size),
                                                            align < G ? G : align);
                CHECK(!fit, "take(%zu, %zu) failed but the map has room", size, align);
                fails++;
            }
        } else if (dice < 92) {
            size_t k = rng_below(&rng, nlive);
            model_block_t b = live[k];
            CHECK(duet_alloc_block_size(a, b.off) == b.size, "live block %zu lost", b.off);
            CHECK(duet_alloc_give(a, b.off) == 0, "give(%zu)", b.off);
            CHECK(duet_alloc_block_size(a, b.off) == 0, "block %zu still live", b.off);
            memset(map + b.off, 0, b.size);
            live[k] = live[--nlive];
            used -= b.size;
            gives++;
            if (dice % 8 == 0) /* double free */
                CHECK(duet_alloc_give(a, b.off) == -1, "double give(%zu) accepted", b.off);
        } else {
            /* a wild give: any offset that is not a live block's start must be refused */
            size_t off = rng_below(&rng, 2) ? rng_below(&rng, MODEL_SIZE + 256)
                                            : G * rng_below(&rng, MODEL_SIZE / G + 4);
            int is_live = 0;
            for (size_t i = 0; i < nlive && !is_live; i++)
                is_live = live[i].off == off;
            if (!is_live) {
                duet_alloc_stats_t before = stats_of(a), after;
                CHECK(duet_alloc_give(a, off) == -1, "wild give(%zu) accepted", off);
                after = stats_of(a);
                CHECK(memcmp(&before, &after, sizeof(before)) == 0, "wild give changed state");
                wilds++;
            }
        }
        duet_alloc_stats_t s = stats_of(a);
        CHECK(s.total == MODEL_SIZE && s.used == used && s.blocks == nlive,
              "op %zu: stats used %zu blocks %zu; model %zu %zu", op, s.used, s.blocks, used, nlive);
        if (op % 997 == 0)
            check_map_stats(a, map, MODEL_SIZE);
    }
    check_map_stats(a, map, MODEL_SIZE);
    while (nlive > 0) {
        size_t k = rng_below(&rng, nlive);
        CHECK(duet_alloc_give(a, live[k].off) == 0, "final give");
        live[k] = live[--nlive];
    }
    check_one_range(a);
    duet_alloc_destroy(a);
    printf("model: %zu takes, %zu failed takes, %zu gives, %zu wild gives\n", takes, fails, gives,
           wilds);
}

int main(int argc, char **argv)
{
    uint64_t seed = dt_pick_seed(argc > 1 ? argv[1] : NULL, ((uint64_t)time(NULL) * 2654435761u) ^ (uint64_t)getpid());
    printf("test_alloc: seed %" PRIu64 "\n", seed);
    fflush(stdout);
    test_basic();
    test_align();
    test_exhaust();
    test_huge();
    test_bad_give();
    test_coalesce(seed);
    test_determinism(seed);
    test_model(seed);
    printf("test_alloc: ok\n");
    return 0;
}
