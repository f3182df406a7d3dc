/*
 * test_gpu_ft.c — failures seen from the GPU (labels gpu; run under duetrun --ft on the GPU
 * machine, several ranks per GPU under MPS).
 *
 *   test_gpu_ft signal|revoke|coll
 *
 *   signal  rank 0 starts a kernel that waits (duet_dev_signal_wait_until) for a signal the last
 *           rank never sends: the last rank dies; the kernel must return DUET_ERR_PEER_FAILED
 *           (the failure detector sets the kernels' abort word) within DEADLINE_S, and the
 *           stream must drain. duet_comm_status says DUET_ERR_PEER_FAILED.
 *   revoke  the same kernel; the last rank revokes the world instead of dying: the kernel of
 *           another process must return DUET_ERR_REVOKED (its detector carries the revoke over
 *           to the kernels' abort word within DUET_FT_PERIOD_MS).
 *   coll    the ranks loop allreduces on GPU buffers (symmetric and cudaMalloc'd, on a stream);
 *           the last rank dies; within DEADLINE_S every survivor's call returns
 *           DUET_ERR_PEER_FAILED (at entry, or from the kernel that stopped), its stream drains,
 *           and after a shrink the survivors go on with puts into GPU memory, GPU allreduces
 *           (checked) and a GPU allocation on the new communicator.
 */
#include "duet_test.h"
#include "gpu_check.h"

#include <cuda_runtime_api.h>
#include <duet/duet_cuda.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEADLINE_S 10.0


int ft_wait_signal_launch(duet_device_comm_t h, uint64_t *sig, volatile int *started_dev, int *status, void *stream);

static int me, npes, victim;
static duet_comm_t W;
static cudaStream_t s1;

static void die_now(void)
{
    fflush(stdout);
    kill(getpid(), SIGKILL);
    pause();
}

/* Rank 0's kernel waits on a signal nobody sends; the last rank kills itself (die = 1) or
 * revokes the world (die = 0); the kernel must return `want` within DEADLINE_S. */
static void kernel_wait_ends(int die, duet_status_t want);

static void scenario_signal(void) { kernel_wait_ends(1, DUET_ERR_PEER_FAILED); }
static void scenario_revoke(void) { kernel_wait_ends(0, DUET_ERR_REVOKED); }

static void kernel_wait_ends(int die, duet_status_t want)
{
    uint64_t *sig = duet_malloc_device(W, sizeof(uint64_t));
    CHECK(sig != NULL, "duet_malloc_device");
    CU(cudaMemset(sig, 0, sizeof *sig));
    CU(cudaDeviceSynchronize());
    duet_device_comm_t h;
    CHECK_OK(duet_device_comm_get(W, &h));
    CHECK_OK(duet_barrier(W));
    if (me == victim) {
        usleep(300000); /* rank 0's kernel is waiting by now */
        if (die) die_now();
        CHECK_OK(duet_comm_revoke(W));
    }
    if (me != 0) return;
    volatile int *started;
    int *started_dev, *status;
    CU(cudaHostAlloc((void **)&started, sizeof(int), cudaHostAllocMapped));
    CU(cudaHostGetDevicePointer((void **)&started_dev, (void *)started, 0));
    CU(cudaMallocManaged((void **)&status, sizeof(int), cudaMemAttachGlobal));
    *started = 0;
    *status = 12345;
    CHECK(ft_wait_signal_launch(h, sig, started_dev, status, s1) == 0, "launch");
    double t0 = now_s();
    while (cudaStreamQuery(s1) == cudaErrorNotReady)
        CHECK(now_s() - t0 < DEADLINE_S, "the waiting kernel still runs %.0f s on", DEADLINE_S);
    CU(cudaStreamSynchronize(s1));
    CHECK(*started, "the kernel never started");
    CHECK(*status == (int)want, "the kernel's wait returned %d, want %d", *status, (int)want);
    CHECK_STATUS(duet_comm_status(W), want);
    printf("test_gpu_ft: the kernel returned %s %.3f s after its launch\n", duet_status_str(want), now_s() - t0);
    CU(cudaFreeHost((void *)started));
    CU(cudaFree(status));
}

/* GPU collectives on the shrunk communicator: on a block allocated before the failure (the
 * direct kernels), on cudaMalloc'd memory (the executor) and on a block allocated on S itself;
 * small integers in floats, so every order gives the same sum. */
static void shrunk_gpu_collectives(duet_comm_t S, float *a, float *b)
{
    enum { COUNT = 1 << 16 };
    int n = duet_comm_size(S), r = duet_comm_rank(S);
    float *fresh = duet_malloc_device(S, COUNT * sizeof(float));
    CHECK(fresh != NULL, "duet_malloc_device on the shrunk communicator: %s", duet_status_str(duet_last_status()));
    float *host = malloc(COUNT * sizeof(float));
    CHECK(host != NULL, "host buffer");
    float *bufs[3] = {a, b, fresh};
    const size_t counts[] = {1, 7, 4099, COUNT};
    for (int bi = 0; bi < 3; bi++)
        for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++) {
            size_t cnt = counts[ci];
            for (size_t i = 0; i < cnt; i++) host[i] = (float)((r + 1) * (int)(i % 97 + 1));
            CU(cudaMemcpy(bufs[bi], host, cnt * sizeof(float), cudaMemcpyHostToDevice));
            CHECK_OK(duet_allreduce(bufs[bi], bufs[bi], cnt, DUET_FLOAT32, DUET_SUM, S, s1));
            CU(cudaStreamSynchronize(s1));
            CU(cudaMemcpy(host, bufs[bi], cnt * sizeof(float), cudaMemcpyDeviceToHost));
            for (size_t i = 0; i < cnt; i++) {
                float want = (float)(n * (n + 1) / 2 * (int)(i % 97 + 1));
                CHECK(host[i] == want, "allreduce on the shrunk communicator, buffer %d, count %zu: [%zu] = %g, want %g",
                      bi, cnt, i, host[i], want);
            }
        }
    CHECK_OK(duet_barrier(S));
    CHECK_OK(duet_free(S, fresh));
    free(host);
}

static void scenario_coll(void)
{
    enum { COUNT = 1 << 16 };
    float *a = duet_malloc_device(W, COUNT * sizeof(float)), *b = NULL;
    CHECK(a != NULL, "duet_malloc_device");
    CU(cudaMalloc((void **)&b, COUNT * sizeof(float)));
    CU(cudaMemset(a, 0, COUNT * sizeof(float)));
    CU(cudaMemset(b, 0, COUNT * sizeof(float)));
    CU(cudaDeviceSynchronize());
    CHECK_OK(duet_barrier(W));
    duet_status_t st = DUET_OK;
    double t_first_error = 0;
    for (long it = 0;; it++) {
        if (me == victim && it == 200) die_now();
        float *buf = it & 1 ? b : a; /* symmetric (direct kernel) and not (executor) */
        st = duet_allreduce(buf, buf, it % 3 ? COUNT : 7, DUET_FLOAT32, DUET_SUM, W, s1);
        if (st != DUET_OK) {
            t_first_error = now_s();
            break;
        }
        if (it % 16 == 15) CU(cudaStreamSynchronize(s1));
        CHECK(it < 10000000, "no failure seen");
    }
    CHECK(st == DUET_ERR_PEER_FAILED, "allreduce: %s", duet_status_str(st));
    /* the stream drains: the kernel that waited on the dead rank stopped */
    while (cudaStreamQuery(s1) == cudaErrorNotReady)
        CHECK(now_s() - t_first_error < DEADLINE_S, "the stream still runs %.0f s after the error", DEADLINE_S);
    (void)cudaGetLastError();
    duet_comm_t S;
    CHECK_OK(duet_comm_shrink(W, &S));
    CHECK(duet_comm_size(S) == npes - 1, "shrunk to %d", duet_comm_size(S));
    /* puts into GPU memory allocated before the failure, on the new communicator */
    int n = duet_comm_size(S), r = duet_comm_rank(S);
    CHECK_OK(duet_barrier(S));
    for (int pe = 0; pe < n; pe++) {
        int v = 1000 + r;
        CHECK_OK(duet_put(S, (int *)a + r, &v, sizeof v, pe));
    }
    CHECK_OK(duet_quiet(S));
    CHECK_OK(duet_barrier(S));
    int got[64];
    CU(cudaMemcpy(got, a, sizeof(int) * (size_t)n, cudaMemcpyDeviceToHost));
    for (int q = 0; q < n; q++) CHECK(got[q] == 1000 + q, "after the shrink, slot %d holds %d", q, got[q]);
    shrunk_gpu_collectives(S, a, b);
    printf("test_gpu_ft: coll: rank %d: allreduce failed at once, the stream drained, %d ranks go on\n", me, n);
    CHECK_OK(duet_comm_destroy(S));
    CU(cudaFree(b));
}

int main(int argc, char **argv)
{
    const char *scenario = argc > 1 ? argv[1] : "signal";
    CHECK_OK(duet_init());
    W = dt_world(&me, &npes);
    CHECK(npes >= 2 && npes <= 64, "2 to 64 ranks");
    CHECK(duet_cuda_available() && duet_cuda_device(W) >= 0, "no GPU heap: this test needs a GPU on every rank");
    victim = npes - 1;
    CU(cudaSetDevice(duet_cuda_device(W)));
    CU(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    if (!strcmp(scenario, "signal")) scenario_signal();
    else if (!strcmp(scenario, "coll")) scenario_coll();
    else if (!strcmp(scenario, "revoke")) scenario_revoke();
    else FATAL("unknown scenario %s", scenario);
    cudaStreamDestroy(s1);
    duet_finalize(); /* the world lost a rank */
    int rc = dt_finish();
    if (rc == 0 && me == 0) printf("test_gpu_ft: %s: passed\n", scenario);
    return rc;
}
