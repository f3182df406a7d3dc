/*
 * test_tune_place.c — the tuner picks one algorithm on every rank even where the call's cost
 * depends on where each rank's buffers are (src/coll/duet_coll_tune.c, "Placement"). Run
 * with a pinned model (DUET_TUNE_ALPHA_US, DUET_TUNE_BETA_GBPS), at 2 ranks and more.
 *
 * Covers:
 *   - the premise, from the predictor alone: allreduce sizes whose cheapest algorithm differs
 *     between buffers in the heap (messages by reference) and private buffers (copied);
 *   - at such a size, rank 0's buffers in the heap and the others' private: every rank
 *     picks the same algorithm, the one cheapest for copied buffers (not all are in the
 *     heap), and the sums are exact;
 *   - at another such size, every rank's buffers in the heap: the same pick everywhere, the
 *     one cheapest by reference;
 *   - the same calls again (decisions cached by shape): the same picks, right sums.
 * Usage: test_tune_place
 */
#include <stdlib.h>
#include <string.h>
#include "duet_test.h"
#include "coll/duet_coll_predict.h"

static int me, np;
static duet_comm_t W;

static duet_coll_args_t shape(size_t count, int byref)
{
    return (duet_coll_args_t){DUET_COLL_ALLREDUCE, me, np, 0, count, sizeof(float), W->chan->chunk, 0, 0, NULL, 0,
                              byref};
}

/* The cheapest allreduce algorithm for count floats under the model, copied or by reference. */
static const char *cheapest(size_t count, int byref)
{
    duet_coll_args_t a = shape(count, byref);
    duet_coll_model_t model;
    duet_predict_t pred;
    CHECK_OK(duet_coll_tune_costs(W, &a, &model, &pred));
    CHECK(pred.best >= 0, "no algorithm for %zu floats", count);
    return pred.e[pred.best].algo->name;
}

/* The tuner's decision for count floats, as cached by the last call of that shape. */
static int decided(size_t count)
{
    duet_coll_args_t a = shape(count, 0);
    const duet_coll_algo_t *algo = NULL;
    const duet_sched_t *plan = NULL;
    duet_sched_t s;
    CHECK_OK(duet_coll_tune_pick(W, &a, DUET_FLOAT32, &algo, &s, &plan));
    if (plan == &s) duet_sched_free(&s);
    return (int)(algo - duet_coll_algos);
}

/* An allreduce of count floats from send into recv; exact sums; every rank's pick the same and
 * equal to `want`. */
static void run(size_t count, float *send, float *recv, const char *want, const char *what)
{
    for (size_t i = 0; i < count; i++) send[i] = (float)((me + 1) * (int)(i % 5 + 1));
    memset(recv, 0xff, count * sizeof *recv);
    EXPECT_OK_MSG(duet_allreduce(send, recv, count, DUET_FLOAT32, DUET_SUM, W, NULL), "%s", what);
    float ranks = (float)np * (float)(np + 1) / 2;
    size_t bad = 0;
    for (size_t i = 0; i < count; i++) bad += recv[i] != ranks * (float)(i % 5 + 1);
    EXPECT(bad == 0, "%s, %zu floats: %zu elements wrong", what, count, bad);
    int32_t mine = decided(count);
    int32_t *sym = duet_malloc(W, sizeof(int32_t) * (size_t)(np + 1));
    CHECK(sym, "duet_malloc: %s", duet_last_error());
    sym[np] = mine;
    EXPECT_OK(duet_allgather(&sym[np], sym, 1, DUET_INT32, W, NULL));
    for (int r = 0; r < np; r++)
        EXPECT(sym[r] == mine, "%s: rank %d picked %s, rank %d %s", what, r, duet_coll_algos[sym[r]].name, me,
               duet_coll_algos[mine].name);
    EXPECT(strcmp(duet_coll_algos[mine].name, want) == 0, "%s: picked %s, the model's cheapest is %s", what,
           duet_coll_algos[mine].name, want);
    EXPECT_OK(duet_free(W, sym));
}

int main(void)
{
    CHECK_OK(duet_init());
    W = dt_world(&me, &np);
    /* sizes whose pick depends on the placement (the same on every rank: the model is pinned) */
    size_t found[2] = {0, 0};
    int nfound = 0;
    for (size_t count = 1024; count <= ((size_t)4 << 20) && nfound < 2; count = count * 3 / 2 + 1) {
        const char *copied = cheapest(count, 0), *byref = cheapest(count, 1);
        if (strcmp(copied, byref) != 0) found[nfound++] = count;
    }
    if (np < 2) { /* one rank: nothing is exchanged, the pick is the copied one */
        CHECK_OK(duet_finalize());
        return dt_finish();
    }
    CHECK(nfound == 2, "the premise: no two allreduce sizes from 4 KiB to 16 MiB whose pick depends on the buffers' "
          "placement on %d ranks (found %d)", np, nfound);
    size_t most = found[0] > found[1] ? found[0] : found[1];
    float *hs = duet_malloc(W, most * sizeof(float)), *hr = duet_malloc(W, most * sizeof(float));
    float *ps = malloc(most * sizeof(float)), *pr = malloc(most * sizeof(float));
    CHECK(hs && hr && ps && pr, "buffers: %s", duet_last_error());
    const char *want0 = cheapest(found[0], 0), *want1 = cheapest(found[1], 1);
    for (int again = 0; again < 2; again++) {
        run(found[0], me == 0 ? hs : ps, me == 0 ? hr : pr, want0, again ? "mixed placement, again" : "mixed placement");
        run(found[1], hs, hr, want1, again ? "every rank's buffers in the heap, again" : "every rank's buffers in the heap");
    }
    EXPECT_OK(duet_free(W, hs));
    EXPECT_OK(duet_free(W, hr));
    free(ps), free(pr);
    CHECK_OK(duet_finalize());
    return dt_finish();
}
