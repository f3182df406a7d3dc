/*
 * test_tune_learn.c — the learning tuner (src/coll/duet_coll_tune.c, "Learning"): it times
 * its close candidates and keeps the fastest measured, and every rank keeps the same. Run
 * with a pinned model (DUET_TUNE_ALPHA_US, DUET_TUNE_BETA_GBPS, a tune file of its own);
 * TEST_LEARN_OFF=1 runs it with DUET_TUNE_LEARN=0 set by the launcher.
 *
 * Covers:
 *   - six call shapes (allreduce of 16 KiB, 256 KiB and 2 MiB, broadcast of 64 KiB, allgather
 *     and reduce-scatter of 16 KiB blocks), 40 calls each, interleaved (each call of another
 *     shape than the one before: the repeat path's record is taken by the others), every
 *     result checked exactly on every rank;
 *   - after them, for each shape whose predicted candidates include more than one within 2x of
 *     the best (at least two shapes must: the premise): the decision is a measured one (phase
 *     2) and one of those candidates; every rank holds the same decision;
 *   - learning off: no shape is learned (phase 0), every decision is the predicted best;
 *   - a forced algorithm (duet_coll_tune_force) is never replaced by what is measured.
 * Usage: test_tune_learn
 */
#include <stdlib.h>
#include <string.h>
#include "duet_test.h"
#include "coll/duet_coll_predict.h"

static int me, np;
static duet_comm_t W;

typedef struct {
    duet_coll_kind_t kind;
    size_t count; /* floats: per rank's block for allgather and reduce-scatter */
    const char *name;
} shape_t;

static const shape_t shapes[] = {
    {DUET_COLL_ALLREDUCE, 4096, "allreduce 16 KiB"},       {DUET_COLL_ALLREDUCE, 65536, "allreduce 256 KiB"},
    {DUET_COLL_ALLREDUCE, 524288, "allreduce 2 MiB"},      {DUET_COLL_BROADCAST, 16384, "broadcast 64 KiB"},
    {DUET_COLL_ALLGATHER, 4096, "allgather 16 KiB blocks"}, {DUET_COLL_REDUCE_SCATTER, 4096, "reduce-scatter 16 KiB blocks"},
};
#define NSHAPES ((int)(sizeof shapes / sizeof shapes[0]))
#define CALLS 40

static duet_coll_args_t args_of(const shape_t *s)
{
    return (duet_coll_args_t){s->kind, me, np, 0, s->count, sizeof(float), W->chan->chunk, 0, 0, NULL, 0, 1};
}

/* The decision cached for shape s (its index in duet_coll_algos). */
static int decided(const shape_t *s)
{
    duet_coll_args_t a = args_of(s);
    const duet_coll_algo_t *algo = NULL;
    const duet_sched_t *plan = NULL;
    duet_sched_t sc;
    CHECK_OK(duet_coll_tune_pick(W, &a, DUET_FLOAT32, &algo, &sc, &plan));
    if (plan == &sc) duet_sched_free(&sc);
    return (int)(algo - duet_coll_algos);
}

/* One call of shape s on heap buffers, its result checked. */
static void call(const shape_t *s, float *send, float *recv, int round)
{
    size_t n = s->count, nr = (size_t)np, in = s->kind == DUET_COLL_REDUCE_SCATTER ? n * nr : n;
    size_t out = s->kind == DUET_COLL_ALLGATHER ? n * nr : n;
    for (size_t i = 0; i < in; i++) send[i] = (float)((me + 1) * (int)((i + (size_t)round) % 7 + 1));
    memset(recv, 0xff, out * sizeof *recv);
    duet_status_t st;
    switch (s->kind) {
    case DUET_COLL_ALLREDUCE: st = duet_allreduce(send, recv, n, DUET_FLOAT32, DUET_SUM, W, NULL); break;
    case DUET_COLL_BROADCAST: st = duet_broadcast(send, recv, n, DUET_FLOAT32, 0, W, NULL); break;
    case DUET_COLL_ALLGATHER: st = duet_allgather(send, recv, n, DUET_FLOAT32, W, NULL); break;
    default: st = duet_reduce_scatter(send, recv, n, DUET_FLOAT32, DUET_SUM, W, NULL);
    }
    EXPECT(st == DUET_OK, "%s, call %d: %s", s->name, round, duet_last_error());
    float ranks = (float)np * (float)(np + 1) / 2;
    size_t bad = 0;
    for (size_t i = 0; i < out; i++) {
        float want;
        size_t r = i / n, j = i % n;
        switch (s->kind) {
        case DUET_COLL_ALLREDUCE: want = ranks * (float)((i + (size_t)round) % 7 + 1); break;
        case DUET_COLL_BROADCAST: want = (float)((i + (size_t)round) % 7 + 1); break; /* root 0's */
        case DUET_COLL_ALLGATHER: want = (float)((r + 1) * ((j + (size_t)round) % 7 + 1)); break;
        default: want = ranks * (float)(((size_t)me * n + i + (size_t)round) % 7 + 1);
        }
        bad += recv[i] != want;
    }
    EXPECT(bad == 0, "%s, call %d: %zu of %zu elements wrong", s->name, round, bad, out);
}

/* Every rank holds the same decision for shape s. */
static void same_everywhere(const shape_t *s, int mine, int32_t *sym)
{
    sym[np] = mine;
    EXPECT_OK(duet_allgather(&sym[np], sym, 1, DUET_INT32, W, NULL));
    for (int r = 0; r < np; r++)
        EXPECT(sym[r] == mine, "%s: rank %d decided %s, rank %d %s", s->name, r, duet_coll_algos[sym[r]].name, me,
               duet_coll_algos[mine].name);
}

int main(void)
{
    const char *off_env = getenv("TEST_LEARN_OFF");
    int off = off_env && off_env[0] == '1';
    CHECK_OK(duet_init());
    W = dt_world(&me, &np);
    size_t most = 524288 * (size_t)np + 64;
    float *send = duet_malloc(W, most * sizeof(float)), *recv = duet_malloc(W, most * sizeof(float));
    int32_t *sym = duet_malloc(W, sizeof(int32_t) * (size_t)(np + 1));
    CHECK(send && recv && sym, "duet_malloc: %s", duet_last_error());
    /* which shapes have candidates to time, and the predicted pick of each */
    int close[NSHAPES], predicted[NSHAPES], learnable = 0;
    for (int k = 0; k < NSHAPES; k++) {
        duet_coll_args_t a = args_of(&shapes[k]);
        duet_coll_model_t model;
        duet_predict_t pred;
        CHECK_OK(duet_coll_tune_costs(W, &a, &model, &pred));
        CHECK(pred.best >= 0, "%s: no candidate", shapes[k].name);
        predicted[k] = (int)(pred.e[pred.best].algo - duet_coll_algos);
        close[k] = 0;
        for (int i = 0; i < pred.n; i++)
            close[k] += pred.e[i].status == DUET_OK && pred.e[i].us <= 2.0 * pred.e[pred.best].us;
        learnable += close[k] > 1;
    }
    CHECK(np < 2 || learnable >= 2, "the premise: only %d of the shapes have two candidates within 2x", learnable);
    for (int round = 0; round < CALLS; round++)
        for (int k = 0; k < NSHAPES; k++) call(&shapes[k], send, recv, round);
    for (int k = 0; k < NSHAPES && np > 1; k++) {
        duet_coll_args_t a = args_of(&shapes[k]);
        int phase = duet_coll_tune_learn_phase(W, &a), got = decided(&shapes[k]);
        if (off) {
            EXPECT(phase == 0, "%s: learning off, but phase %d", shapes[k].name, phase);
            EXPECT(got == predicted[k], "%s: learning off, but %s runs where %s is predicted", shapes[k].name,
                   duet_coll_algos[got].name, duet_coll_algos[predicted[k]].name);
        } else if (close[k] > 1) {
            EXPECT(phase == 2, "%s: after %d calls, learning is at phase %d, not decided", shapes[k].name, CALLS, phase);
        } else {
            EXPECT(phase == 0 && got == predicted[k], "%s: nothing to learn, but phase %d and %s (predicted %s)",
                   shapes[k].name, phase, duet_coll_algos[got].name, duet_coll_algos[predicted[k]].name);
        }
        same_everywhere(&shapes[k], got, sym);
    }
    /* forced: what is measured never replaces it */
    const shape_t forced = {DUET_COLL_ALLREDUCE, 65536 + 16, "allreduce 256 KiB + 64 B, ring forced"};
    CHECK_OK(duet_coll_tune_force(W, DUET_COLL_ALLREDUCE, "ring"));
    for (int round = 0; round < CALLS; round++) call(&forced, send, recv, round);
    duet_coll_args_t fa = args_of(&forced);
    EXPECT(np < 2 || duet_coll_tune_learn_phase(W, &fa) == 0, "the forced shape is learned from");
    EXPECT(strcmp(duet_coll_algos[decided(&forced)].name, "ring") == 0, "the forced ring was replaced by %s",
           duet_coll_algos[decided(&forced)].name);
    CHECK_OK(duet_coll_tune_force(W, DUET_COLL_ALLREDUCE, NULL));
    EXPECT_OK(duet_free(W, sym));
    EXPECT_OK(duet_free(W, send));
    EXPECT_OK(duet_free(W, recv));
    CHECK_OK(duet_finalize());
    return dt_finish();
}
