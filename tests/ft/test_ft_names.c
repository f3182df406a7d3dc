/*
 * test_ft_names.c — after a shrink, messages name a rank by the world's number too, since
 * that is the number the reader knows: 4 ranks under duetrun --ft.
 *   1. world rank 0 dies; the survivors shrink the world to S (S's ranks 0 1 2 are world
 *      ranks 1 2 3);
 *   2. S's rank 0 revokes S: duet_comm_status(S) says, word for word, "duet_comm_status: the
 *      communicator was revoked by rank 0 (world rank 1) (duet_comm_shrink gives a new one)";
 *   3. S shrinks to S2 (the same three), whose rank 1 (world rank 2) dies: a put to it says
 *      "duet_put: PE 1 (rank 1 (world rank 2) died)", and
 *      duet_comm_status(S2) names world rank 2;
 *   4. the two left shrink once more, compute, and finalize.
 * Before, both messages gave S's ranks only ("revoked by rank 0", "PE 1 (rank 1 died)").
 */
#include "duet_test.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void die_at_once(void)
{
    fflush(stdout);
    kill(getpid(), SIGKILL);
    pause();
}

/* Rank `victim` of c dies once every other rank has left the barrier before (each tells it so
 * through the symmetric word sig): nobody's earlier barrier sees the death. */
static void die_after_others(duet_comm_t c, int victim, uint64_t *sig)
{
    int n = duet_comm_size(c);
    if (duet_comm_rank(c) == victim) {
        CHECK_OK(duet_signal_wait_until(c, sig, DUET_CMP_GE, (uint64_t)(n - 1), NULL));
        die_at_once();
    }
    CHECK_OK(duet_signal_op(c, sig, 1, DUET_SIGNAL_ADD, victim));
    CHECK_OK(duet_quiet(c));
}

int main(void)
{
    setenv("DUET_SYMMETRIC_SIZE", "8M", 1);
    setenv("DUET_DEBUG", "NONE", 0);
    int me, npes;
    CHECK_OK(duet_init());
    duet_comm_t W = dt_world(&me, &npes);
    CHECK(npes == 4, "run with 4 ranks");
    char *sym = duet_malloc(W, 64), local[8] = {0};
    uint64_t *sig = duet_calloc(W, 2, sizeof *sig);
    CHECK(sym && sig, "malloc: %s", duet_last_error());
    CHECK_OK(duet_barrier(W));

    dt_set_context("world rank 0 dies");
    die_after_others(W, 0, &sig[0]);
    duet_status_t st = duet_barrier(W);
    CHECK(st == DUET_ERR_PEER_FAILED, "barrier after the death: %s", duet_status_str(st));
    duet_comm_t S = NULL;
    CHECK_OK(duet_comm_shrink(W, &S));
    CHECK(duet_comm_size(S) == 3 && duet_comm_rank(S) == me - 1, "S: rank %d of %d", duet_comm_rank(S),
          duet_comm_size(S));

    dt_set_context("S revoked by its rank 0");
    if (duet_comm_rank(S) == 0) CHECK_OK(duet_comm_revoke(S));
    st = duet_barrier(S);
    CHECK(st == DUET_ERR_REVOKED, "barrier on the revoked S: %s (%s)", duet_status_str(st), duet_last_error());
    st = duet_comm_status(S);
    const char *want = "duet_comm_status: the communicator was revoked by rank 0 (world rank 1) "
                       "(duet_comm_shrink gives a new one)";
    EXPECT(st == DUET_ERR_REVOKED && !strcmp(duet_last_error(), want), "status: %s \"%s\", want \"%s\"",
           duet_status_str(st), duet_last_error(), want);

    dt_set_context("S2's rank 1 (world rank 2) dies");
    duet_comm_t S2 = NULL;
    CHECK_OK(duet_comm_shrink(S, &S2));
    CHECK(duet_comm_size(S2) == 3, "S2 of %d", duet_comm_size(S2));
    CHECK_OK(duet_barrier(S2));
    die_after_others(S2, 1, &sig[1]);
    st = duet_barrier(S2);
    CHECK(st == DUET_ERR_PEER_FAILED, "barrier after the second death: %s", duet_status_str(st));
    st = duet_put(S2, sym, local, sizeof local, 1);
    want = "duet_put: PE 1 (rank 1 (world rank 2) died)";
    EXPECT(st == DUET_ERR_PEER_FAILED && !strcmp(duet_last_error(), want), "put: %s \"%s\", want \"%s\"",
           duet_status_str(st), duet_last_error(), want);
    st = duet_comm_status(S2);
    EXPECT(st == DUET_ERR_PEER_FAILED && strstr(duet_last_error(), "world rank 2"), "status: %s \"%s\"",
           duet_status_str(st), duet_last_error());

    dt_set_context("the two left");
    duet_comm_t S3 = NULL;
    CHECK_OK(duet_comm_shrink(S2, &S3));
    int32_t one = 1, n = 0;
    CHECK_OK(duet_allreduce(&one, &n, 1, DUET_INT32, DUET_SUM, S3, NULL));
    CHECK(n == 2, "allreduce on the last two: %d", n);
    EXPECT_OK(duet_comm_destroy(S3));
    EXPECT_OK(duet_comm_destroy(S2));
    EXPECT_OK(duet_comm_destroy(S));
    EXPECT_OK(duet_finalize());
    if (me == 1) printf("test_ft_names: passed\n");
    return dt_finish();
}
