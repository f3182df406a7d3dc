/*
 * test_tune.c — the tuner's controls on a communicator (src/coll/duet_coll_tune.h). Run
 * with DUET_ALGO=allreduce:ring, so that a choice of the communicator's can be told from the
 * setting's.
 *
 * Covers duet_coll_tune_force:
 *   - every allreduce algorithm of the table forced in turn: the tuner then picks it (its
 *     pick asked directly), a real allreduce of odd size, in and out of place, sums right on
 *     every rank (small integers: exact), and duet_coll_forced_algo names it; one that cannot
 *     run on one host (hring) fails the call with DUET_ERR_INVALID_ARG on every rank, and the
 *     next forced algorithm works;
 *   - a name the collective lacks ("chain" for allreduce, "nosuch") and a kind out of range:
 *     DUET_ERR_INVALID_ARG with a message, the forced choice unchanged;
 *   - NULL gives the choice back to DUET_ALGO (ring again); forcing one collective leaves the
 *     others alone (broadcast keeps its tuner's pick).
 * Usage: test_tune [seed]
 */
#include <string.h>
#include "duet_test.h"
#include "coll/duet_coll_predict.h"

static int me, np;
static duet_comm_t W;

/* The algorithm the tuner picks for an allreduce of `count` floats on W now. */
static const char *pick_for(duet_coll_kind_t kind, size_t count)
{
    duet_coll_args_t a = {kind, me, np, 0, count, sizeof(float), W->chan->chunk, 0, 0, NULL, 0, 0};
    const duet_coll_algo_t *algo = NULL;
    const duet_sched_t *plan = NULL;
    duet_sched_t s;
    duet_status_t st = duet_coll_tune_pick(W, &a, DUET_FLOAT32, &algo, &s, &plan);
    if (st == DUET_OK && plan == &s) duet_sched_free(&s);
    return st == DUET_OK && algo ? algo->name : "(error)";
}

/* An allreduce of `count` floats (in place or not) whose every element must be exact. */
static void allreduce_checked(const char *algo, size_t count, int in_place, float *send, float *recv)
{
    for (size_t i = 0; i < count; i++) send[i] = (float)((me + 1) * (int)(i % 7 + 1));
    if (in_place) memcpy(recv, send, count * sizeof *recv);
    else memset(recv, 0xff, count * sizeof *recv);
    EXPECT_OK_MSG(duet_allreduce(in_place ? recv : send, recv, count, DUET_FLOAT32, DUET_SUM, W, NULL),
                  "%s, %zu floats", algo, count);
    float ranks = (float)np * (float)(np + 1) / 2; /* sum of me + 1 */
    size_t bad = 0;
    for (size_t i = 0; i < count; i++) bad += recv[i] != ranks * (float)(i % 7 + 1);
    EXPECT(bad == 0, "%s, %zu floats%s: %zu elements wrong", algo, count, in_place ? " in place" : "", bad);
}

int main(int argc, char **argv)
{
    (void)argv, (void)argc;
    CHECK_OK(duet_init());
    W = dt_world(&me, &np);
    enum { N = 100003 };
    float *send = duet_malloc(W, N * sizeof(float)), *recv = duet_malloc(W, N * sizeof(float));
    CHECK(send && recv, "duet_malloc: %s", duet_last_error());
    char forced[64];

    /* the setting's choice first */
    EXPECT(strcmp(pick_for(DUET_COLL_ALLREDUCE, 1001), "ring") == 0, "DUET_ALGO=allreduce:ring, the pick is %s",
           pick_for(DUET_COLL_ALLREDUCE, 1001));
    const char *bcast_pick = pick_for(DUET_COLL_BROADCAST, 1001);

    for (int i = 0; i < duet_coll_nalgos; i++) {
        const duet_coll_algo_t *al = &duet_coll_algos[i];
        if (al->kind != DUET_COLL_ALLREDUCE) continue;
        EXPECT_OK(duet_coll_tune_force(W, DUET_COLL_ALLREDUCE, al->name));
        duet_coll_forced_algo(W, DUET_COLL_ALLREDUCE, forced, sizeof forced);
        EXPECT(strcmp(forced, al->name) == 0, "forced %s, duet_coll_forced_algo says %s", al->name, forced);
        int hier = strncmp(al->name, "h", 1) == 0; /* hring, hdbtree: one host here */
        if (hier) {
            float x[3] = {1, 2, 3};
            EXPECT_INVALID(duet_allreduce(x, x, 3, DUET_FLOAT32, DUET_SUM, W, NULL), al->name);
            EXPECT(strstr(duet_last_error(), al->name) && strstr(duet_last_error(), "duet_coll_tune_force"),
                   "the refusal names %s and who forced it: %s", al->name, duet_last_error());
            continue;
        }
        EXPECT(strcmp(pick_for(DUET_COLL_ALLREDUCE, 1001), al->name) == 0, "forced %s, the pick is %s", al->name,
               pick_for(DUET_COLL_ALLREDUCE, 1001));
        size_t sizes[] = {1, 7, 1001, N};
        for (size_t k = 0; k < DUET_ARRAY_LEN(sizes); k++)
            for (int in_place = 0; in_place < 2; in_place++) allreduce_checked(al->name, sizes[k], in_place, send, recv);
    }

    /* bad names: refused, the choice kept */
    EXPECT_OK(duet_coll_tune_force(W, DUET_COLL_ALLREDUCE, "tree"));
    EXPECT_INVALID(duet_coll_tune_force(W, DUET_COLL_ALLREDUCE, "chain"), "chain is not an allreduce algorithm");
    EXPECT_INVALID(duet_coll_tune_force(W, DUET_COLL_ALLREDUCE, "nosuch"), "no such algorithm");
    EXPECT_INVALID(duet_coll_tune_force(W, (duet_coll_kind_t)DUET_COLL_KIND_COUNT, "ring"), "kind out of range");
    EXPECT_INVALID(duet_coll_tune_force(W, (duet_coll_kind_t)-1, "ring"), "negative kind");
    EXPECT(strcmp(pick_for(DUET_COLL_ALLREDUCE, 1001), "tree") == 0, "after refusals the pick is %s",
           pick_for(DUET_COLL_ALLREDUCE, 1001));
    allreduce_checked("tree", 1001, 0, send, recv);
    /* the other collectives keep their own choice */
    EXPECT(strcmp(pick_for(DUET_COLL_BROADCAST, 1001), bcast_pick) == 0, "broadcast's pick moved: %s, was %s",
           pick_for(DUET_COLL_BROADCAST, 1001), bcast_pick);

    /* NULL: DUET_ALGO's choice again */
    EXPECT_OK(duet_coll_tune_force(W, DUET_COLL_ALLREDUCE, NULL));
    duet_coll_forced_algo(W, DUET_COLL_ALLREDUCE, forced, sizeof forced);
    EXPECT(strcmp(forced, "ring") == 0, "unforced, duet_coll_forced_algo says %s", forced);
    EXPECT(strcmp(pick_for(DUET_COLL_ALLREDUCE, 1001), "ring") == 0, "unforced, the pick is %s",
           pick_for(DUET_COLL_ALLREDUCE, 1001));
    allreduce_checked("ring", 1001, 1, send, recv);

    EXPECT_BARRIER_ALL("end");
    duet_free(W, recv);
    duet_free(W, send);
    CHECK_OK(duet_finalize());
    return dt_finish();
}
