/*
 * test_gpu_tune_learn.c — the learning tuner on GPU calls (src/cuda/duet_cuda_learn.c; label
 * gpu; ranks may share one GPU under MPS). TEST_LEARN_OFF=1 runs it with DUET_TUNE_LEARN=0.
 *
 * Covers, on cudaMalloc'd buffers (the tuner's GPU model picks there: no direct kernel, and
 * allreduces past the one-shot kernel's size):
 *   - six call shapes (allreduce of 2 and 4 MiB, broadcast of 64 KiB, allgather and
 *     reduce-scatter of 16 KiB blocks, all-to-all of 4 KiB blocks), CALLS calls each,
 *     interleaved, every result checked exactly (int32 sum) on every rank;
 *   - after them, each shape whose GPU model has more than one candidate within 2x of its
 *     best has decided from what it measured (phase 2) — at least one shape must (the
 *     premise) — and the others keep the prediction (phase 0); every rank holds the same
 *     decision; with learning off no shape is learned and every decision is the prediction;
 *   - calls on trial only queue: HELD calls of a new shape queued behind a stream held for
 *     HOLD_MS return well before it is released (the host waits only at the deciding call,
 *     which comes later), and the shape then decides like the others.
 * Usage: test_gpu_tune_learn
 */
#include "duet_test.h"
#include "gpu/gpu_check.h"

#include <duet/duet_cuda.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "coll/duet_coll_predict.h"
#include "cuda/duet_cuda_coll.h"

enum { CALLS = 30, HELD = 10, HOLD_MS = 1000 };

static int me, np;
static duet_comm_t W;

typedef struct {
    duet_coll_kind_t kind;
    size_t count; /* int32s: per rank's block for allgather, reduce-scatter and all-to-all */
    const char *name;
} shape_t;

static const shape_t shapes[] = {
    {DUET_COLL_ALLREDUCE, 524288, "allreduce 2 MiB"},          {DUET_COLL_ALLREDUCE, 1048576, "allreduce 4 MiB"},
    {DUET_COLL_BROADCAST, 16384, "broadcast 64 KiB"},          {DUET_COLL_ALLGATHER, 4096, "allgather 16 KiB blocks"},
    {DUET_COLL_REDUCE_SCATTER, 4096, "reduce-scatter 16 KiB blocks"}, {DUET_COLL_ALLTOALL, 1024, "all-to-all 4 KiB blocks"},
};
#define NSHAPES ((int)(sizeof shapes / sizeof shapes[0]))
static const shape_t held_shape = {DUET_COLL_ALLREDUCE, 786433, "allreduce 3 MiB + 4 B, queued behind a held stream"};

static size_t in_count(const shape_t *s)
{
    return s->kind == DUET_COLL_REDUCE_SCATTER || s->kind == DUET_COLL_ALLTOALL ? s->count * (size_t)np : s->count;
}
static size_t out_count(const shape_t *s)
{
    return s->kind == DUET_COLL_ALLGATHER || s->kind == DUET_COLL_ALLTOALL ? s->count * (size_t)np : s->count;
}

/* The shape the GPU path costs and caches for s (duet_cuda_coll_shape, as plan_call makes it). */
static duet_coll_args_t args_of(const shape_t *s)
{
    size_t larger = in_count(s) > out_count(s) ? in_count(s) : out_count(s);
    int nchan = 0;
    return duet_cuda_coll_shape(s->kind, me, np, 0, s->count, sizeof(int32_t), larger * sizeof(int32_t), 0, &nchan);
}

static int decided(const shape_t *s)
{
    duet_coll_args_t a = args_of(s);
    const duet_coll_algo_t *algo = NULL;
    const duet_sched_t *plan = NULL;
    duet_sched_t sc;
    CHECK_OK(duet_coll_tune_pick(W, &a, DUET_INT32, &algo, &sc, &plan));
    if (plan == &sc) duet_sched_free(&sc);
    return (int)(algo - duet_coll_algos);
}

static int32_t in_of(int r, size_t j, int round) { return (int32_t)((j * 7 + (size_t)r * 13 + (size_t)round) % 1009); }

/* the input of rank r at element j of its send buffer, and what element j of recv must hold */
static int64_t want_of(const shape_t *s, size_t j, int round)
{
    size_t n = s->count;
    switch (s->kind) {
    case DUET_COLL_BROADCAST: return in_of(0, j, round);
    case DUET_COLL_ALLGATHER: return in_of((int)(j / n), j % n, round);
    case DUET_COLL_ALLTOALL: return in_of((int)(j / n), (size_t)me * n + j % n, round);
    case DUET_COLL_REDUCE_SCATTER: {
        int64_t w = 0;
        for (int r = 0; r < np; r++) w += in_of(r, (size_t)me * n + j, round);
        return w;
    }
    default: {
        int64_t w = 0;
        for (int r = 0; r < np; r++) w += in_of(r, j, round);
        return w;
    }
    }
}

static void queue_call(const shape_t *s, const int32_t *send, int32_t *recv, cudaStream_t st, int round)
{
    duet_status_t r;
    switch (s->kind) {
    case DUET_COLL_ALLREDUCE: r = duet_allreduce(send, recv, s->count, DUET_INT32, DUET_SUM, W, st); break;
    case DUET_COLL_BROADCAST: r = duet_broadcast(send, recv, s->count, DUET_INT32, 0, W, st); break;
    case DUET_COLL_ALLGATHER: r = duet_allgather(send, recv, s->count, DUET_INT32, W, st); break;
    case DUET_COLL_REDUCE_SCATTER: r = duet_reduce_scatter(send, recv, s->count, DUET_INT32, DUET_SUM, W, st); break;
    default: r = duet_alltoall(send, recv, s->count, DUET_INT32, W, st);
    }
    EXPECT(r == DUET_OK, "%s, call %d: %s", s->name, round, duet_last_error());
}

/* fills send for `round`, poisons recv */
static void fill(const shape_t *s, int32_t *send, int32_t *recv, int32_t *h, int round)
{
    for (size_t j = 0; j < in_count(s); j++) h[j] = in_of(me, j, round);
    CU(cudaMemcpy(send, h, in_count(s) * sizeof *h, cudaMemcpyHostToDevice));
    CU(cudaMemset(recv, 0xff, out_count(s) * sizeof *h));
    CU(cudaDeviceSynchronize()); /* the memset runs on the legacy stream, which the call's stream does not wait for */
}

static void verify(const shape_t *s, const int32_t *recv, int32_t *h, int round)
{
    CU(cudaMemcpy(h, recv, out_count(s) * sizeof *h, cudaMemcpyDeviceToHost));
    size_t bad = 0, first = 0;
    for (size_t j = 0; j < out_count(s); j++)
        if (h[j] != want_of(s, j, round) && bad++ == 0) first = j;
    EXPECT(bad == 0, "%s, call %d: %zu of %zu elements wrong, the first at %zu", s->name, round, bad, out_count(s),
           first);
}

static void CUDART_CB hold(void *arg)
{
    (void)arg;
    usleep(HOLD_MS * 1000);
}

/* whether shape s has candidates to time, and its predicted pick */
static int close_of(const shape_t *s, int *predicted)
{
    duet_coll_args_t a = args_of(s);
    duet_coll_model_t model;
    duet_predict_t pred;
    CHECK_OK(duet_coll_tune_costs(W, &a, &model, &pred));
    CHECK(pred.best >= 0, "%s: no candidate", s->name);
    *predicted = (int)(pred.e[pred.best].algo - duet_coll_algos);
    int close = 0;
    for (int i = 0; i < pred.n; i++) close += pred.e[i].status == DUET_OK && pred.e[i].us <= 2.0 * pred.e[pred.best].us;
    return close;
}

static void expect_learned(const shape_t *s, int close, int predicted, int off)
{
    duet_coll_args_t a = args_of(s);
    int phase = duet_coll_tune_learn_phase(W, &a), got = decided(s);
    if (off) {
        EXPECT(phase == 0 && got == predicted, "%s: learning off, but phase %d and %s (predicted %s)", s->name, phase,
               duet_coll_algos[got].name, duet_coll_algos[predicted].name);
    } else if (close > 1) {
        EXPECT(phase == 2, "%s: after its calls, learning is at phase %d, not decided", s->name, phase);
    } else {
        EXPECT(phase == 0 && got == predicted, "%s: nothing to learn, but phase %d and %s (predicted %s)", s->name,
               phase, duet_coll_algos[got].name, duet_coll_algos[predicted].name);
    }
    int32_t mine = got, all[64];
    CHECK(np <= 64, "at most 64 ranks");
    EXPECT_OK(duet_allgather(&mine, all, 1, DUET_INT32, W, NULL));
    for (int r = 0; r < np; r++)
        EXPECT(all[r] == mine, "%s: rank %d decided %s, rank %d %s", s->name, r, duet_coll_algos[all[r]].name, me,
               duet_coll_algos[mine].name);
}

int main(void)
{
    const char *off_env = getenv("TEST_LEARN_OFF");
    int off = off_env && off_env[0] == '1';
    CHECK_OK(duet_init());
    W = dt_world(&me, &np);
    CHECK(duet_cuda_available(), "no GPU here: %s", "this test needs one");
    CU(cudaSetDevice(duet_cuda_device(W)));
    size_t most = held_shape.count;
    for (int k = 0; k < NSHAPES; k++) {
        if (in_count(&shapes[k]) > most) most = in_count(&shapes[k]);
        if (out_count(&shapes[k]) > most) most = out_count(&shapes[k]);
    }
    int32_t *send[NSHAPES + 1], *recv[NSHAPES + 1], *h = malloc(most * sizeof *h);
    CHECK(h != NULL, "host memory");
    for (int k = 0; k <= NSHAPES; k++) {
        CU(cudaMalloc((void **)&send[k], most * sizeof(int32_t)));
        CU(cudaMalloc((void **)&recv[k], most * sizeof(int32_t)));
    }
    cudaStream_t st;
    CU(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    /* the communicator's first GPU call sets up (collective, synchronous; the GPU model) */
    CHECK_OK(duet_allreduce(send[0], recv[0], 1, DUET_INT32, DUET_SUM, W, st));
    CU(cudaStreamSynchronize(st));

    int close[NSHAPES], predicted[NSHAPES], learnable = 0, held_predicted;
    for (int k = 0; k < NSHAPES; k++) learnable += (close[k] = close_of(&shapes[k], &predicted[k])) > 1;
    int held_close = close_of(&held_shape, &held_predicted);
    if (me == 0) printf("test_gpu_tune_learn: %d of %d shapes have candidates to time\n", learnable, NSHAPES);
    CHECK(np < 2 || off || learnable >= 1, "the premise: no shape has two candidates within 2x of its best");

    for (int round = 0; round < CALLS; round++)
        for (int k = 0; k < NSHAPES; k++) {
            fill(&shapes[k], send[k], recv[k], h, round);
            queue_call(&shapes[k], send[k], recv[k], st, round);
            CU(cudaStreamSynchronize(st));
            verify(&shapes[k], recv[k], h, round);
        }
    for (int k = 0; k < NSHAPES && np > 1; k++) expect_learned(&shapes[k], close[k], predicted[k], off);

    /* calls on trial only queue: HELD calls of a new shape behind a held stream */
    const shape_t *hs = &held_shape;
    int32_t *hsend = send[NSHAPES], *hrecv = recv[NSHAPES];
    fill(hs, hsend, hrecv, h, 0); /* every call the same input: the last result is checked */
    CHECK_OK(duet_barrier(W));
    CU(cudaLaunchHostFunc(st, hold, NULL));
    double t0 = now_s();
    for (int i = 0; i < HELD; i++) queue_call(hs, hsend, hrecv, st, 0);
    double t = now_s() - t0;
    EXPECT(t < 0.4 * HOLD_MS / 1e3, "%s: queuing %d calls took %.0f ms behind a stream held for %d ms: a call "
           "waited for the GPU", hs->name, HELD, t * 1e3, HOLD_MS);
    CU(cudaStreamSynchronize(st));
    verify(hs, hrecv, h, 0);
    for (int round = HELD; round < CALLS; round++) {
        fill(hs, hsend, hrecv, h, round);
        queue_call(hs, hsend, hrecv, st, round);
        CU(cudaStreamSynchronize(st));
        verify(hs, hrecv, h, round);
    }
    if (np > 1) expect_learned(hs, held_close, held_predicted, off);
    if (me == 0) printf("test_gpu_tune_learn: queued %d calls on trial in %.2f ms behind a held stream\n", HELD, t * 1e3);

    CU(cudaStreamDestroy(st));
    for (int k = 0; k <= NSHAPES; k++) {
        CU(cudaFree(send[k]));
        CU(cudaFree(recv[k]));
    }
    free(h);
    CHECK_OK(duet_finalize());
    return dt_finish();
}
