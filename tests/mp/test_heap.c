/*
 * test_heap.c — the collective symmetric-heap calls on the world communicator.
 *
 * Run under duetrun at any rank count. Covers:
 *   - duet_malloc: same offset on every rank (compared through an allgather built from puts),
 *     64-byte alignment, usable by peers on return;
 *   - duet_calloc: zeroed even over memory a previous block dirtied; a peer may write into
 *     the block as soon as calloc returns (the zeroing is not late); count*size overflow;
 *   - duet_align: every power of two up to 1 MiB (address and offset aligned), non-powers;
 *   - malloc(0) == NULL without an error; free(NULL) == DUET_OK;
 *   - filling the heap until NULL ("no memory" message), freeing, and filling again; one
 *     block of the whole freed space (coalescing);
 *   - duet_ptr: loads through the returned pointer see what a put wrote, stores are seen by
 *     the owner; NULL for non-symmetric addresses and bad PEs; duet_addr_accessible;
 *   - arguments that differ across ranks (malloc size, align, free) -> every rank gets
 *     NULL / DUET_ERR_INVALID_ARG, and the heap stays consistent afterwards;
 *   - a random sequence of collective malloc/free (seed printed, DUET_TEST_SEED or argv[1]).
 * The heap is made small (DUET_SYMMETRIC_SIZE=8M, set before duet_init) so filling is fast.
 */
#include "duet_test.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int me = -1, npes;
static duet_comm_t W;
static uint64_t g_seed;
static uint64_t *g_slots; /* symmetric: npes slots for the allgather */

/* Every rank's v, gathered with puts into g_slots and a barrier. */
static void allgather(uint64_t v, uint64_t *out)
{
    CHECK_OK(dt_allgather(W, g_slots, &v, sizeof v));
    memcpy(out, g_slots, sizeof(uint64_t) * (size_t)npes);
    CHECK_OK(duet_barrier(W)); /* nobody overwrites the slots before everyone has read them */
}

/* The block's offset from g_slots (the first block): equal on every rank. */
static void check_symmetric(const void *p, const char *what)
{
    uint64_t off = (uint64_t)((const char *)p - (const char *)g_slots), all[64];
    CHECK(npes <= 64, "too many ranks");
    allgather(off, all);
    for (int r = 0; r < npes; r++)
        CHECK(all[r] == off, "%s: rank %d has offset %" PRIu64 ", rank %d has %" PRIu64, what, r,
              all[r], me, off);
}

static void test_malloc(void)
{
    static const size_t sizes[] = {1, 7, 63, 64, 65, 1000, 4096, 100000, 1 << 20};
    enum { N = sizeof sizes / sizeof sizes[0] };
    unsigned char *p[N];
    for (int i = 0; i < N; i++) {
        p[i] = duet_malloc(W, sizes[i]);
        CHECK(p[i] != NULL, "duet_malloc(%zu)", sizes[i]);
        CHECK((uintptr_t)p[i] % 64 == 0, "duet_malloc(%zu) = %p is not 64-byte aligned", sizes[i],
              (void *)p[i]);
        check_symmetric(p[i], "duet_malloc");
        /* usable by a peer on return: write my right neighbour's copy, no barrier before */
        unsigned char *tmp = malloc(sizes[i]);
        for (size_t k = 0; k < sizes[i]; k++) tmp[k] = (unsigned char)(me * 31 + i + k);
        CHECK_OK(duet_put(W, p[i], tmp, sizes[i], (me + 1) % npes));
        free(tmp);
    }
    CHECK_OK(duet_barrier(W));
    int left = (me - 1 + npes) % npes;
    for (int i = 0; i < N; i++)
        for (size_t k = 0; k < sizes[i]; k++)
            CHECK(p[i][k] == (unsigned char)(left * 31 + i + k), "block %d byte %zu = %u", i, k, p[i][k]);
    for (int i = 0; i < N; i++)
        for (int j = i + 1; j < N; j++) /* no overlaps */
            CHECK(p[i] + sizes[i] <= p[j] || p[j] + sizes[j] <= p[i], "blocks %d and %d overlap", i, j);
    for (int i = N - 1; i >= 0; i--) CHECK_OK(duet_free(W, p[i]));
}

static void test_calloc(void)
{
    const size_t bytes = 64 * 1024;
    unsigned char *dirty = duet_malloc(W, bytes);
    CHECK(dirty != NULL, "malloc");
    memset(dirty, 0xAB, bytes);
    CHECK_OK(duet_barrier(W));
    CHECK_OK(duet_free(W, dirty));
    unsigned char *z = duet_calloc(W, 16, bytes / 16);
    CHECK(z != NULL, "calloc");
    CHECK(z == dirty, "calloc did not reuse the dirtied block (%p vs %p): test premise", (void *)z,
          (void *)dirty);
    check_symmetric(z, "duet_calloc");
    for (size_t k = 0; k < bytes; k++) CHECK(z[k] == 0, "calloc byte %zu = 0x%x", k, z[k]);
    CHECK_OK(duet_barrier(W));

    /* a peer writes as soon as calloc returns: its bytes must survive the owner's zeroing */
    CHECK_OK(duet_free(W, z));
    memset(dirty, 0xCD, bytes);
    CHECK_OK(duet_barrier(W));
    z = duet_calloc(W, 1, bytes);
    CHECK(z == dirty, "calloc placement");
    unsigned char mark = (unsigned char)(0x10 + me);
    CHECK_OK(duet_put(W, &z[bytes - 1 - (size_t)me % 64], &mark, 1, (me + 1) % npes));
    CHECK_OK(duet_barrier(W));
    int left = (me - 1 + npes) % npes;
    for (size_t k = 0; k < bytes; k++) {
        unsigned char want = k == bytes - 1 - (size_t)left % 64 ? (unsigned char)(0x10 + left) : 0;
        CHECK(z[k] == want, "calloc byte %zu = 0x%x, want 0x%x", k, z[k], want);
    }
    CHECK_OK(duet_free(W, z));

    unsigned char *odd = duet_calloc(W, 3, 333);
    CHECK(odd != NULL, "calloc(3, 333)");
    for (size_t k = 0; k < 999; k++) CHECK(odd[k] == 0, "byte %zu", k);
    CHECK_OK(duet_free(W, odd));

    dt_prime_error();
    CHECK(duet_calloc(W, 0, 100) == NULL && duet_calloc(W, 100, 0) == NULL, "calloc of 0 bytes");
    /* a success (NULL without error, as OpenSHMEM has it): it leaves no error behind */
    CHECK(duet_last_status() == DUET_OK && !duet_last_error()[0], "calloc of 0 bytes left an error: %s",
          duet_last_error());
    CHECK(duet_calloc(W, SIZE_MAX / 2, 3) == NULL, "calloc overflow");
    CHECK(duet_last_error()[0] && !dt_error_primed(), "no message for overflow");
}

static void test_align(void)
{
    void *p[21];
    for (int k = 0; k <= 20; k++) {
        size_t a = (size_t)1 << k;
        p[k] = duet_align(W, a, 100 + (size_t)k);
        CHECK(p[k] != NULL, "duet_align(%zu)", a);
        EXPECT((uintptr_t)p[k] % a == 0, "duet_align(%zu) = %p: the address is not aligned", a, p[k]);
        CHECK((uintptr_t)p[k] % 64 == 0, "duet_align(%zu) = %p below 64-byte alignment", a, p[k]);
        check_symmetric(p[k], "duet_align");
        memset(p[k], k, 100 + (size_t)k);
    }
    for (int k = 0; k <= 20; k++) {
        for (size_t i = 0; i < 100 + (size_t)k; i++)
            CHECK(((unsigned char *)p[k])[i] == k, "align block %d overwritten", k);
    }
    for (int k = 0; k <= 20; k++) CHECK_OK(duet_free(W, p[k]));
    static const size_t bad[] = {0, 3, 6, 100, 1000, (size_t)1 << 20 | 1};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        dt_prime_error();
        CHECK(duet_align(W, bad[i], 64) == NULL, "duet_align(%zu) succeeded", bad[i]);
        CHECK(strstr(duet_last_error(), "power of two"), "duet_align(%zu): message \"%s\"", bad[i],
              duet_last_error());
    }
}

static void test_zero_and_null(void)
{
    dt_prime_error();
    CHECK(duet_malloc(W, 0) == NULL, "malloc(0) is not NULL");
    CHECK(duet_align(W, 128, 0) == NULL, "align(128, 0) is not NULL");
    CHECK(duet_last_status() == DUET_OK && !duet_last_error()[0], "malloc(0) left an error: %s",
          duet_last_error()); /* NULL without an error: a success */
    CHECK_OK(duet_free(W, NULL));
    /* the allocator is still in step on every rank */
    void *p = duet_malloc(W, 128);
    CHECK(p != NULL, "malloc after malloc(0)");
    check_symmetric(p, "after malloc(0)");
    CHECK_OK(duet_free(W, p));
}

static void test_fill(void)
{
    const size_t chunk = 256 * 1024;
    enum { MAXB = 1024 };
    void **blocks = calloc(MAXB, sizeof *blocks);
    int nb = 0;
    for (int round = 0; round < 2; round++) {
        int got = 0;
        for (;;) {
            CHECK(got < MAXB, "the 8 MiB heap gave more than %d blocks of 256 KiB", MAXB);
            dt_prime_error();
            void *p = duet_malloc(W, chunk);
            if (!p) break;
            blocks[got++] = p;
        }
        const char *msg = duet_last_error();
        CHECK(!dt_error_primed() && msg[0], "a full heap set no error message");
        CHECK(strstr(msg, "duet_malloc") && strstr(msg, "DUET_SYMMETRIC_SIZE"),
              "the no-memory message does not say what to do: \"%s\"", msg);
        /* 8 MiB asked for: at least that many bytes fit, and not absurdly more */
        CHECK((size_t)got * chunk >= ((size_t)8 << 20) && (size_t)got * chunk <= ((size_t)16 << 20),
              "%d blocks of 256 KiB fit into an 8 MiB heap", got);
        check_symmetric(blocks[got - 1], "last block before full");
        if (round == 1) CHECK(got == nb, "second fill gave %d blocks, first %d", got, nb);
        nb = got;
        /* a huge request fails too and leaves the heap usable */
        CHECK(duet_malloc(W, (size_t)1 << 40) == NULL, "1 TiB allocated");
        for (int i = 0; i < got; i += 2) CHECK_OK(duet_free(W, blocks[i]));
        for (int i = 1; i < got; i += 2) CHECK_OK(duet_free(W, blocks[i]));
    }
    /* everything coalesced: the whole space in one block */
    void *big = duet_malloc(W, (size_t)nb * chunk);
    CHECK(big != NULL, "one block of %d x 256 KiB after freeing everything", nb);
    check_symmetric(big, "whole-heap block");
    CHECK_OK(duet_free(W, big));
    free(blocks);
}

static void test_ptr(void)
{
    uint64_t *buf = duet_malloc(W, 64 * sizeof(uint64_t));
    CHECK(buf, "malloc");
    uint64_t v = 0x1000u + (uint64_t)me;
    CHECK_OK(duet_put(W, &buf[3], &v, sizeof v, (me + 1) % npes));
    CHECK_OK(duet_barrier(W));
    CHECK(duet_ptr(W, buf, me) == buf, "duet_ptr(mine) = %p, not %p", duet_ptr(W, buf, me), (void *)buf);
    for (int pe = 0; pe < npes; pe++) {
        uint64_t *q = duet_ptr(W, buf, pe);
        CHECK(q != NULL, "duet_ptr(pe %d) is NULL on one host", pe);
        CHECK(duet_addr_accessible(W, buf, pe) == 1, "not accessible on pe %d", pe);
        CHECK(duet_addr_accessible(W, &buf[63], pe) == 1, "end not accessible on pe %d", pe);
        uint64_t want = 0x1000u + (uint64_t)((pe - 1 + npes) % npes);
        CHECK(q[3] == want, "load through duet_ptr of pe %d: %" PRIx64 ", put wrote %" PRIx64, pe, q[3], want);
        CHECK((uint64_t *)duet_ptr(W, &buf[3], pe) == &q[3], "interior pointer of pe %d", pe);
    }
    CHECK_OK(duet_barrier(W));
    /* a store through duet_ptr is what the owner loads */
    uint64_t *right = duet_ptr(W, buf, (me + 1) % npes);
    __atomic_store_n(&right[5], 0x2000u + (uint64_t)me, __ATOMIC_RELEASE);
    CHECK_OK(duet_barrier(W));
    CHECK(buf[5] == 0x2000u + (uint64_t)((me - 1 + npes) % npes), "store through duet_ptr: %" PRIx64, buf[5]);

    int local = 0;
    uint64_t *priv = malloc(64);
    CHECK(duet_ptr(W, &local, 0) == NULL, "duet_ptr of a stack address");
    CHECK(duet_ptr(W, priv, 0) == NULL, "duet_ptr of a malloc'ed address");
    CHECK(duet_ptr(W, NULL, 0) == NULL, "duet_ptr of NULL");
    CHECK(duet_ptr(W, buf, -1) == NULL && duet_ptr(W, buf, npes) == NULL, "duet_ptr of a bad pe");
    CHECK(duet_ptr(W, (char *)g_slots - 1, 0) == NULL, "duet_ptr of the internal area");
    CHECK(duet_ptr(NULL, buf, 0) == NULL, "duet_ptr on a NULL comm");
    CHECK(!duet_addr_accessible(W, &local, 0) && !duet_addr_accessible(W, priv, 0), "private accessible");
    CHECK(!duet_addr_accessible(W, buf, npes) && !duet_addr_accessible(W, buf, -1), "bad pe accessible");
    CHECK(!duet_addr_accessible(NULL, buf, 0), "NULL comm accessible");
    free(priv);
    CHECK_OK(duet_free(W, buf));
}

static void test_mismatch(void)
{
    if (npes < 2) return;
    void *a = duet_malloc(W, 640), *b = duet_malloc(W, 640);
    CHECK(a && b, "malloc");
    dt_prime_error();
    CHECK(duet_malloc(W, 64 + 64 * (size_t)me) == NULL, "mismatched malloc sizes succeeded");
    CHECK(strstr(duet_last_error(), "disagree"), "mismatched malloc: message \"%s\"", duet_last_error());
    dt_prime_error();
    CHECK(duet_align(W, me == 0 ? 128 : 256, 64) == NULL, "mismatched alignments succeeded");
    CHECK(strstr(duet_last_error(), "disagree"), "mismatched align: \"%s\"", duet_last_error());
    CHECK(duet_calloc(W, 1, me == npes - 1 ? 100 : 200) == NULL, "mismatched calloc succeeded");
    duet_status_t st = duet_free(W, me == 0 ? a : b);
    CHECK(st == DUET_ERR_INVALID_ARG, "mismatched free -> %s", duet_status_str(st));
    st = duet_free(W, me == 0 ? a : NULL);
    CHECK(st == DUET_ERR_INVALID_ARG, "free(a) vs free(NULL) -> %s", duet_status_str(st));
    /* nothing was allocated or freed: both blocks are live, the allocators agree */
    void *c = duet_malloc(W, 640);
    CHECK(c && c != a && c != b, "malloc after mismatches");
    check_symmetric(c, "after mismatches");
    CHECK_OK(duet_free(W, a));
    CHECK_OK(duet_free(W, b));
    CHECK_OK(duet_free(W, c));
}

static void test_random(void)
{
    enum { SLOTS = 32, STEPS = 300 };
    void *live[SLOTS] = {0};
    size_t len[SLOTS] = {0};
    uint64_t rng = g_seed;
    for (int step = 0; step < STEPS; step++) {
        int i = (int)(rng_next(&rng) % SLOTS);
        if (live[i]) {
            for (size_t k = 0; k < len[i]; k++)
                CHECK(((unsigned char *)live[i])[k] == (unsigned char)(i + k), "slot %d byte %zu", i, k);
            CHECK_OK(duet_free(W, live[i]));
            live[i] = NULL;
            continue;
        }
        len[i] = 1 + rng_next(&rng) % 20000;
        size_t align = (size_t)1 << (rng_next(&rng) % 13);
        live[i] = rng_next(&rng) & 1 ? duet_malloc(W, len[i]) : duet_align(W, align, len[i]);
        CHECK(live[i], "step %d: alloc %zu", step, len[i]);
        for (size_t k = 0; k < len[i]; k++) ((unsigned char *)live[i])[k] = (unsigned char)(i + k);
        if (step % 50 == 0) check_symmetric(live[i], "random sequence");
    }
    for (int i = 0; i < SLOTS; i++)
        if (live[i]) CHECK_OK(duet_free(W, live[i]));
}

int main(int argc, char **argv)
{
    setenv("DUET_SYMMETRIC_SIZE", "8M", 1);
    g_seed = dt_pick_seed(dt_seed_text(argc, argv), 12345);
    CHECK_OK(duet_init());
    W = dt_world(&me, &npes);
    if (me == 0) printf("test_heap: %d ranks, seed %" PRIu64 "\n", npes, g_seed);
    g_slots = duet_malloc(W, sizeof(uint64_t) * (size_t)npes);
    CHECK(g_slots, "malloc of the allgather slots");

    test_malloc();
    test_calloc();
    test_align();
    test_zero_and_null();
    test_fill();
    test_ptr();
    test_mismatch();
    test_random();

    CHECK_OK(duet_free(W, g_slots));
    CHECK_OK(duet_finalize());
    if (me == 0 && !dt_failures()) printf("test_heap: passed\n");
    return dt_finish();
}
