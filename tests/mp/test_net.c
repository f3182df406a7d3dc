/*
 * test_net: what changes for a peer reached by the net transport (docs/NETWORK.md 1.3, 1.4),
 * run with DUET_NET=force (every other rank is then a net peer; tests/mp/net.cmake registers
 * it only in builds with UCX, where DUET_NET=force is accepted) or across namespace hosts
 * (tests/net/test_onesided.sh), where DUET_TEST_RANKS_PER_HOST=R says that ranks r*R..r*R+R-1
 * share a host (default 1: every other rank is a net peer):
 *
 *   - duet_ptr gives NULL for a net peer (not mappable), my own address for me, and for a peer
 *     on my host an address where its data is; duet_addr_accessible stays 1 (reachable by put
 *     / get)
 *   - a collective runs over net channels and gives the right sum
 *   - put + quiet + barrier, nbi gets completed by quiet, signal waits and wait_until on my
 *     memory written by every peer (the waits must progress UCX), fetch-add contention on rank
 *     0's counter, compare-swap, a revoke-free teardown
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "duet_test.h"

static duet_comm_t W;
static int me, npes;

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    CHECK_OK(duet_init());
    W = dt_world(&me, &npes);
    enum { N = 4096 };
    long *box = duet_calloc(W, (size_t)npes * N, sizeof(long));
    long *pub = duet_malloc(W, N * sizeof(long));
    uint64_t *sig = duet_calloc(W, 1, sizeof(uint64_t));
    long *counter = duet_calloc(W, 2, sizeof(long));
    CHECK(box && pub && sig && counter, "allocation failed");
    for (int i = 0; i < N; i++) pub[i] = (long)me * 1000003L + i;
    EXPECT_BARRIER_ALL("published");

    /* duet_ptr / duet_addr_accessible */
    const char *rph = getenv("DUET_TEST_RANKS_PER_HOST");
    int per_host = rph && atoi(rph) > 0 ? atoi(rph) : 1;
    for (int pe = 0; pe < npes; pe++) {
        long *p = duet_ptr(W, pub, pe);
        if (pe == me) EXPECT(p == pub, "duet_ptr to myself is %p, want %p", (void *)p, (void *)pub);
        else if (pe / per_host != me / per_host) EXPECT(p == NULL, "duet_ptr to net peer %d is %p, want NULL", pe, (void *)p);
        else EXPECT(p && p[N - 1] == (long)pe * 1000003L + N - 1, "duet_ptr to peer %d on this host is %p%s", pe,
                    (void *)p, p ? ", where its data is not" : "");
        EXPECT(duet_addr_accessible(W, pub, pe) == 1, "duet_addr_accessible(pub, %d) is not 1", pe);
    }

    /* a collective over net channels (docs/NETWORK.md stage 5): the sum of every rank's id */
    if (npes > 1) {
        long x = me, y = -1;
        EXPECT_OK(duet_allreduce(&x, &y, 1, DUET_INT64, DUET_SUM, W, NULL));
        EXPECT(y == (long)npes * (npes - 1) / 2, "allreduce over net peers gave %ld, want %ld", y,
               (long)npes * (npes - 1) / 2);
    }

    /* puts into every peer's box row [me], nbi half, then quiet + barrier */
    for (int pe = 0; pe < npes; pe++) {
        long *row = box + (size_t)me * N;
        EXPECT_OK(duet_put_long(W, row, pub, N / 2, pe));
        EXPECT_OK(duet_put_long_nbi(W, row + N / 2, pub + N / 2, N / 2, pe));
    }
    EXPECT_OK(duet_quiet(W));
    EXPECT_BARRIER_ALL("puts");
    for (int r = 0; r < npes; r++)
        for (int i = 0; i < N; i++)
            if (box[(size_t)r * N + i] != (long)r * 1000003L + i) {
                FAIL("box[%d][%d] = %ld, want %ld", r, i, box[(size_t)r * N + i], (long)r * 1000003L + i);
                break;
            }

    /* gets, blocking and nbi */
    long *got = malloc(sizeof(long) * N);
    CHECK(got, "malloc");
    for (int pe = 0; pe < npes; pe++) {
        memset(got, 0, sizeof(long) * N);
        EXPECT_OK(duet_get_long(W, got, pub, N / 2, pe));
        EXPECT_OK(duet_get_long_nbi(W, got + N / 2, pub + N / 2, N / 2, pe));
        EXPECT_OK(duet_quiet(W));
        for (int i = 0; i < N; i++)
            if (got[i] != (long)pe * 1000003L + i) {
                FAIL("get from %d: [%d] = %ld, want %ld", pe, i, got[i], (long)pe * 1000003L + i);
                break;
            }
    }
    free(got);

    /* atomics on rank 0's counter: every rank adds me + 1, 50 times, fetching half of them */
    for (int k = 0; k < 50; k++) {
        long old = 0;
        if (k & 1) EXPECT_OK(duet_atomic_add_long(W, &counter[0], me + 1, 0));
        else EXPECT_OK(duet_atomic_fetch_add_long(W, &counter[0], me + 1, 0, &old));
    }
    EXPECT_OK(duet_quiet(W));
    EXPECT_BARRIER_ALL("atomics");
    long total = 0;
    EXPECT_OK(duet_atomic_fetch_long(W, &counter[0], 0, &total));
    EXPECT(total == 50L * npes * (npes + 1) / 2, "counter %ld, want %ld", total, 50L * npes * (npes + 1) / 2);
    /* compare-swap: exactly one winner per rank's slot 1 */
    long won = 0, prev = -1;
    EXPECT_OK(duet_atomic_compare_swap_long(W, &counter[1], 0, me + 1, 0, &prev));
    won = prev == 0;
    EXPECT_BARRIER_ALL("cswap");
    long winner = 0;
    EXPECT_OK(duet_atomic_fetch_long(W, &counter[1], 0, &winner));
    EXPECT(winner >= 1 && winner <= npes, "cswap left %ld", winner);
    if (won) EXPECT(winner == me + 1, "I won the cswap but the word holds %ld", winner);

    /* signals: each peer puts a line into my box row and adds 1 to my signal; I wait for all */
    EXPECT_BARRIER_ALL("before signals");
    for (int pe = 0; pe < npes; pe++)
        EXPECT_OK(duet_put_signal(W, box + (size_t)me * N, pub, 64 * sizeof(long), sig, 1, DUET_SIGNAL_ADD, pe));
    uint64_t v = 0;
    EXPECT_OK(duet_signal_wait_until(W, sig, DUET_CMP_GE, (uint64_t)npes, &v));
    EXPECT(v == (uint64_t)npes, "signal %" PRIu64 ", want %d", v, npes);
    EXPECT_BARRIER_ALL("signals");

    /* wait_until on my memory, written by my left neighbour with a p */
    int left = (me + npes - 1) % npes, right = (me + 1) % npes;
    EXPECT_OK(duet_p_long(W, &counter[1], -7 - me, right));
    EXPECT_OK(duet_wait_until_long(W, &counter[1], DUET_CMP_EQ, -7 - left));
    EXPECT_BARRIER_ALL("end");
    duet_free(W, counter);
    duet_free(W, sig);
    duet_free(W, pub);
    duet_free(W, box);
    if (me == 0) printf("test_net: %d PEs%s\n", npes, dt_failures() ? ": FAILED" : ": passed");
    int rc = dt_finish();
    CHECK_OK(duet_finalize());
    return rc;
}
