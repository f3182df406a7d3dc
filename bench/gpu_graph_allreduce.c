/*
 * gpu_graph_allreduce.c — a small GPU allreduce, queued call by call and replayed from a CUDA
 * graph (issue 22's target: in a graph <= 0.5x the eager time).
 *
 *   duetrun -n 2 build/bin/gpu_graph_allreduce [bytes] [rounds]
 *
 * Every rank: int32 sum allreduce of `bytes` (default 8) between cudaMalloc'd buffers on one
 * stream. Eager: 100 calls back to back, then a stream synchronize; graph: the same 100 calls
 * captured once and the graph launched; each measured `rounds` times (default 50) after a
 * warm-up, and the median time per call printed by rank 0, with the host's time to queue (the
 * calls' return, or the launch's). The result of the last call of each is checked.
 */
#include <cuda_runtime_api.h>
#include <duet/duet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CALLS 100

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void die(const char *what, const char *why)
{
    fprintf(stderr, "gpu_graph_allreduce: %s: %s\n", what, why);
    exit(1);
}
#define CUDA(call)                                                                  \
    do {                                                                            \
        cudaError_t e_ = (call);                                                    \
        if (e_ != cudaSuccess) die(#call, cudaGetErrorString(e_));                  \
    } while (0)
#define DUET(call)                                                                  \
    do {                                                                            \
        if ((call) != DUET_OK) die(#call, duet_last_error());                       \
    } while (0)

static void check(const int32_t *dev, size_t n, int npes, const char *what)
{
    int32_t *h = malloc(n * sizeof *h);
    CUDA(cudaMemcpy(h, dev, n * sizeof *h, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; i++)
        if (h[i] != npes * (npes + 1) / 2) die(what, "wrong result");
    free(h);
}

int main(int argc, char **argv)
{
    size_t bytes = argc > 1 ? strtoull(argv[1], NULL, 0) : 8;
    int rounds = argc > 2 ? atoi(argv[2]) : 50;
    size_t n = bytes / 4 ? bytes / 4 : 1;
    DUET(duet_init());
    duet_comm_t w = duet_comm_world();
    int me = duet_my_pe(), npes = duet_n_pes();
    int32_t *in, *out, *h = malloc(n * sizeof *h);
    CUDA(cudaMalloc((void **)&in, n * sizeof *in));
    CUDA(cudaMalloc((void **)&out, n * sizeof *out));
    for (size_t i = 0; i < n; i++) h[i] = me + 1;
    CUDA(cudaMemcpy(in, h, n * sizeof *h, cudaMemcpyHostToDevice));
    cudaStream_t s;
    CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (int i = 0; i < 20; i++) DUET(duet_allreduce(in, out, n, DUET_INT32, DUET_SUM, w, s)); /* warm-up */
    CUDA(cudaStreamSynchronize(s));
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < CALLS; i++) DUET(duet_allreduce(in, out, n, DUET_INT32, DUET_SUM, w, s));
    CUDA(cudaStreamEndCapture(s, &graph));
    CUDA(cudaGraphInstantiate(&exec, graph, 0));
    CUDA(cudaGraphLaunch(exec, s)); /* warm-up */
    CUDA(cudaStreamSynchronize(s));
    double *eager = malloc(sizeof(double) * (size_t)rounds), *queue = malloc(sizeof(double) * (size_t)rounds);
    double *replay = malloc(sizeof(double) * (size_t)rounds), *launch = malloc(sizeof(double) * (size_t)rounds);
    for (int r = 0; r < rounds; r++) {
        DUET(duet_barrier(w));
        double t0 = now();
        for (int i = 0; i < CALLS; i++) DUET(duet_allreduce(in, out, n, DUET_INT32, DUET_SUM, w, s));
        double t1 = now();
        CUDA(cudaStreamSynchronize(s));
        eager[r] = (now() - t0) / CALLS * 1e6;
        queue[r] = (t1 - t0) / CALLS * 1e6;
        DUET(duet_barrier(w));
        t0 = now();
        CUDA(cudaGraphLaunch(exec, s));
        t1 = now();
        CUDA(cudaStreamSynchronize(s));
        replay[r] = (now() - t0) / CALLS * 1e6;
        launch[r] = (t1 - t0) * 1e6;
    }
    check(out, n, npes, "the last replay");
    DUET(duet_allreduce(in, out, n, DUET_INT32, DUET_SUM, w, s));
    CUDA(cudaStreamSynchronize(s));
    check(out, n, npes, "an eager call after the replays");
    qsort(eager, (size_t)rounds, sizeof *eager, cmp);
    qsort(queue, (size_t)rounds, sizeof *queue, cmp);
    qsort(replay, (size_t)rounds, sizeof *replay, cmp);
    qsort(launch, (size_t)rounds, sizeof *launch, cmp);
    if (me == 0)
        printf("gpu_graph_allreduce: %d ranks, %zu bytes, median of %d rounds of %d calls: eager %.2f us per call "
               "(host queues one in %.2f us), graph %.2f us per call (one launch of the %d: %.1f us), ratio %.2f\n",
               npes, n * 4, rounds, CALLS, eager[rounds / 2], queue[rounds / 2], replay[rounds / 2], CALLS,
               launch[rounds / 2], replay[rounds / 2] / eager[rounds / 2]);
    CUDA(cudaGraphExecDestroy(exec));
    CUDA(cudaGraphDestroy(graph));
    CUDA(cudaFree(in));
    CUDA(cudaFree(out));
    CUDA(cudaStreamDestroy(s));
    DUET(duet_finalize());
    return 0;
}
