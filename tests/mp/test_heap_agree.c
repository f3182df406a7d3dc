/*
 * test_heap_agree.c — a heap call is a consensus: every rank returns the same status, the
 * allocators stay in step, and the bootstrap's exchanges stay matched (finalize succeeds).
 * Each case is made on every rank; the statuses are gathered and must all equal the expected
 * one, and a normal allocation afterwards must give the same offset everywhere:
 *   - the last rank asks for more than the heap holds, the others for 4 KiB;
 *   - the last rank passes a bad alignment (3) to duet_align, or a calloc size that overflows;
 *   - the last rank frees a pointer outside the heap, or one it already freed (double free),
 *     while the others free a live block (which must then still be live everywhere);
 *   - at last, rank 0 revokes the world and every rank calls malloc, free and free(NULL):
 *     each returns DUET_ERR_REVOKED (rank 0 saw its own revoke first, and everyone follows
 *     it), and duet_finalize succeeds on every rank.
 * Before: a rank that refused its own arguments left the call at once while the others
 * waited in the exchange (DUET_WAIT_TIMEOUT, 5 s here) and the exchanges came apart; after a
 * revoke some ranks' exchange stopped and others' completed ("mismatched calls" at finalize).
 */
#include "duet_test.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int me, npes;
static duet_comm_t W;
static int32_t *g_slots; /* symmetric: one status per rank */
static char *g_base;     /* the first block: offsets are measured from it */

/* Every rank's status of the case must be `want`. */
static void all_statuses(const char *what, duet_status_t mine, duet_status_t want)
{
    int32_t m = (int32_t)mine;
    CHECK_OK(dt_allgather(W, g_slots, &m, sizeof m));
    for (int r = 0; r < npes; r++)
        EXPECT(g_slots[r] == (int32_t)want, "%s: rank %d returned %s, want %s (my message: %s)", what, r,
               duet_status_str((duet_status_t)g_slots[r]), duet_status_str(want), duet_last_error());
}

/* The allocators are still in step: the same offset for the same request on every rank. */
static void in_step(const char *what)
{
    char *p = duet_malloc(W, 4096);
    CHECK(p, "%s: a normal malloc afterwards failed: %s", what, duet_last_error());
    int32_t off = (int32_t)(p - g_base), *offs = (int32_t *)duet_calloc(W, (size_t)npes, sizeof *offs);
    CHECK(offs, "calloc");
    CHECK_OK(dt_allgather(W, offs, &off, sizeof off));
    for (int r = 0; r < npes; r++)
        EXPECT(offs[r] == off, "%s: rank %d's next block is at offset %d, mine at %d", what, r, offs[r], off);
    CHECK_OK(duet_free(W, offs));
    CHECK_OK(duet_free(W, p));
}

static duet_status_t ptr_status(void *p) { return p ? DUET_OK : duet_last_status(); }

int main(void)
{
    setenv("DUET_SYMMETRIC_SIZE", "8M", 1);
    setenv("DUET_WAIT_TIMEOUT", "5", 0); /* the old failure was a wait: keep it short */
    setenv("DUET_DEBUG", "NONE", 0);
    CHECK_OK(duet_init());
    W = dt_world(&me, &npes);
    int last = me == npes - 1;
    g_base = duet_malloc(W, 64);
    g_slots = duet_calloc(W, (size_t)npes, sizeof *g_slots);
    CHECK(g_base && g_slots, "setup: %s", duet_last_error());

    dt_set_context("more than the heap on one rank");
    void *p = duet_malloc(W, last ? (size_t)64 << 20 : 4096);
    EXPECT(!p, "got a block");
    all_statuses("malloc", ptr_status(p), npes > 1 ? DUET_ERR_INVALID_ARG : DUET_ERR_NO_MEMORY);
    in_step("after the size mismatch");

    dt_set_context("a bad alignment on one rank");
    p = duet_align(W, last ? 3 : 64, 256);
    EXPECT(!p, "got a block");
    all_statuses("align", ptr_status(p), DUET_ERR_INVALID_ARG);
    in_step("after the bad alignment");

    dt_set_context("a calloc overflow on one rank");
    p = duet_calloc(W, last ? SIZE_MAX : 1, last ? 2 : 64);
    EXPECT(!p, "got a block");
    all_statuses("calloc", ptr_status(p), DUET_ERR_INVALID_ARG);
    in_step("after the calloc overflow");

    dt_set_context("freeing a pointer outside the heap on one rank");
    char *blk = duet_malloc(W, 512), local[16];
    CHECK(blk, "malloc: %s", duet_last_error());
    all_statuses("free", duet_free(W, last ? (void *)local : (void *)blk), DUET_ERR_INVALID_ARG);
    in_step("after the bad free");
    dt_set_context("a double free on one rank");
    char *blk2 = duet_malloc(W, 512);
    CHECK(blk2, "malloc: %s", duet_last_error());
    CHECK_OK(duet_free(W, blk2));
    all_statuses("double free", duet_free(W, last ? (void *)blk2 : (void *)blk), DUET_ERR_INVALID_ARG);
    all_statuses("the refused free's block is still live", duet_free(W, blk), DUET_OK);
    in_step("after the double free");

    dt_set_context("on a revoked communicator");
    void *kept = duet_malloc(W, 128);
    uint64_t *passed = duet_calloc(W, 1, sizeof *passed);
    CHECK(kept && passed, "malloc: %s", duet_last_error());
    CHECK_OK(duet_barrier(W));
    /* rank 0 revokes once every other rank has left that barrier (each says so), so no barrier
     * of the others sees the revoke: only the heap calls below do */
    if (me == 0) {
        CHECK_OK(duet_signal_wait_until(W, passed, DUET_CMP_GE, (uint64_t)(npes - 1), NULL));
        CHECK_OK(duet_comm_revoke(W));
    } else {
        CHECK_OK(duet_signal_op(W, passed, 1, DUET_SIGNAL_ADD, 0));
        CHECK_OK(duet_quiet(W));
    }
    p = duet_malloc(W, 64);
    EXPECT(!p && duet_last_status() == DUET_ERR_REVOKED, "malloc after the revoke: %p, %s (%s)", p,
           duet_status_str(duet_last_status()), duet_last_error());
    duet_status_t st = duet_free(W, kept);
    EXPECT(st == DUET_ERR_REVOKED, "free after the revoke: %s (%s)", duet_status_str(st), duet_last_error());
    st = duet_free(W, NULL);
    EXPECT(st == DUET_ERR_REVOKED, "free(NULL) after the revoke: %s (%s)", duet_status_str(st), duet_last_error());
    st = duet_finalize();
    EXPECT(st == DUET_OK, "finalize after heap calls on the revoked world: %s (%s)", duet_status_str(st),
           duet_last_error());
    if (me == 0) printf("test_heap_agree: %d ranks, every case decided alike\n", npes);
    return dt_finish();
}
