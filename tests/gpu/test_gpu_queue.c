/*
 * test_gpu_queue.c — a GPU collective on the host only queues work (label gpu; every rank
 * needs a GPU; ranks may share one under MPS).
 *
 * The stream is held for HOLD_MS by a host function queued on it first (cudaLaunchHostFunc:
 * nothing queued behind it can start before it returns). Then, on every rank, CALLS
 * allreduces of as many different lengths on cudaMalloc'd buffers (the schedule executor:
 * each length a schedule of its own, more than the executor's cache holds, so schedules are
 * uploaded and old ones evicted, and its work memory grows) and CALLS broadcasts of other
 * lengths. The host must be back from queuing all of them while the stream is still held
 * (well under HOLD_MS): no call waits for the GPU, neither for an earlier call nor for a
 * schedule's upload. Then every result is checked against its reference. The same again on
 * a second stream, to take the ordering between streams; and once more after the stream is
 * released, where the schedules are cached.
 * Rank 0 prints the host time per call and "test_gpu_queue: passed".
 */
#include "duet_test.h"
#include "gpu/gpu_check.h"

#include <duet/duet_cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { CALLS = 40, HOLD_MS = 1500 };

static int me, npes;
static duet_comm_t W;

static void CUDART_CB hold(void *arg)
{
    (void)arg;
    usleep(HOLD_MS * 1000);
}

/* lengths: allreduces past the one-shot kernel's 1 MiB (the executor; no direct kernel on
 * cudaMalloc'd buffers), each different; broadcasts of other lengths */
static size_t ar_count(int i) { return ((size_t)256 << 10) + 1 + (size_t)i * 4099; }
static size_t bc_count(int i) { return 1000 + (size_t)i * 7919; }

static int32_t in_of(int r, size_t j, int salt) { return (int32_t)((j * 7 + (size_t)r * 13 + (size_t)salt) % 1009); }

typedef struct {
    int32_t *ar_in[CALLS], *ar_out[CALLS], *bc[CALLS];
} bufs_t;

static void fill(bufs_t *b, int salt)
{
    size_t most = ar_count(CALLS - 1) > bc_count(CALLS - 1) ? ar_count(CALLS - 1) : bc_count(CALLS - 1);
    int32_t *h = malloc(most * sizeof *h);
    CHECK(h != NULL, "host memory");
    for (int i = 0; i < CALLS; i++) {
        for (size_t j = 0; j < ar_count(i); j++) h[j] = in_of(me, j, salt + i);
        CU(cudaMemcpy(b->ar_in[i], h, ar_count(i) * sizeof *h, cudaMemcpyHostToDevice));
        CU(cudaMemset(b->ar_out[i], 0xff, ar_count(i) * sizeof *h));
        int root = i % npes;
        for (size_t j = 0; j < bc_count(i); j++) h[j] = me == root ? in_of(root, j, salt + 100 + i) : -1;
        CU(cudaMemcpy(b->bc[i], h, bc_count(i) * sizeof *h, cudaMemcpyHostToDevice));
    }
    free(h);
}

static void verify(const bufs_t *b, int salt, const char *what)
{
    size_t most = ar_count(CALLS - 1) > bc_count(CALLS - 1) ? ar_count(CALLS - 1) : bc_count(CALLS - 1);
    int32_t *h = malloc(most * sizeof *h);
    CHECK(h != NULL, "host memory");
    for (int i = 0; i < CALLS; i++) {
        CU(cudaMemcpy(h, b->ar_out[i], ar_count(i) * sizeof *h, cudaMemcpyDeviceToHost));
        size_t bad = 0, first = 0;
        for (size_t j = 0; j < ar_count(i); j++) {
            int64_t want = 0;
            for (int r = 0; r < npes; r++) want += in_of(r, j, salt + i);
            if (h[j] != want && bad++ == 0) first = j;
        }
        EXPECT(bad == 0, "%s: allreduce %d (%zu elements): %zu wrong, the first at %zu", what, i, ar_count(i), bad,
               first);
        CU(cudaMemcpy(h, b->bc[i], bc_count(i) * sizeof *h, cudaMemcpyDeviceToHost));
        bad = 0;
        for (size_t j = 0; j < bc_count(i); j++)
            if (h[j] != in_of(i % npes, j, salt + 100 + i) && bad++ == 0) first = j;
        EXPECT(bad == 0, "%s: broadcast %d (%zu elements): %zu wrong, the first at %zu", what, i, bc_count(i), bad,
               first);
    }
    free(h);
}

/* Queues the calls on s (held first when `held`); returns the host seconds the queuing took. */
static double queue_all(const bufs_t *b, cudaStream_t s, int held, const char *what)
{
    CHECK_OK(duet_barrier(W));
    if (held) CU(cudaLaunchHostFunc(s, hold, NULL));
    double t0 = now_s(), slowest = 0;
    int slow_at = -1;
    for (int i = 0; i < CALLS; i++) {
        double a = now_s();
        EXPECT_OK_MSG(duet_allreduce(b->ar_in[i], b->ar_out[i], ar_count(i), DUET_INT32, DUET_SUM, W, s),
                      "%s: allreduce %d", what, i);
        double m = now_s();
        EXPECT_OK_MSG(duet_broadcast(b->bc[i], b->bc[i], bc_count(i), DUET_INT32, i % npes, W, s),
                      "%s: broadcast %d", what, i);
        double e = now_s();
        if (m - a > slowest) slowest = m - a, slow_at = 2 * i;
        if (e - m > slowest) slowest = e - m, slow_at = 2 * i + 1;
    }
    double t = now_s() - t0;
    if (held) /* the stream is still held: nothing above waited for it */
        EXPECT(t < 0.4 * HOLD_MS / 1e3, "%s: queuing %d calls behind a stream held for %d ms took %.0f ms: a call "
               "waited for the GPU (the slowest, %s %d, %.0f ms)", what, 2 * CALLS, HOLD_MS, t * 1e3,
               slow_at % 2 ? "broadcast" : "allreduce", slow_at / 2, slowest * 1e3);
    CU(cudaStreamSynchronize(s));
    return t;
}

int main(void)
{
    CHECK_OK(duet_init());
    W = dt_world(&me, &npes);
    CHECK(duet_cuda_available(), "no GPU here: %s", "this test needs one");
    CU(cudaSetDevice(duet_cuda_device(W)));
    bufs_t b;
    for (int i = 0; i < CALLS; i++) {
        CU(cudaMalloc((void **)&b.ar_in[i], ar_count(i) * sizeof(int32_t)));
        CU(cudaMalloc((void **)&b.ar_out[i], ar_count(i) * sizeof(int32_t)));
        CU(cudaMalloc((void **)&b.bc[i], bc_count(i) * sizeof(int32_t)));
    }
    cudaStream_t s1, s2;
    CU(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CU(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    /* the communicator's first GPU call sets up (collective, synchronous): a warm-up */
    int32_t *one = NULL;
    CU(cudaMalloc((void **)&one, sizeof *one));
    CU(cudaMemset(one, 0, sizeof *one));
    CHECK_OK(duet_allreduce(one, one, 1, DUET_INT32, DUET_SUM, W, s1));
    CU(cudaStreamSynchronize(s1));

    const char *what[3] = {"held stream, new shapes", "second held stream", "cached shapes"};
    cudaStream_t on[3] = {s1, s2, s1};
    double t[3];
    for (int k = 0; k < 3; k++) {
        fill(&b, 10 * k);
        t[k] = queue_all(&b, on[k], k < 2, what[k]);
        verify(&b, 10 * k, what[k]);
    }
    if (me == 0)
        printf("test_gpu_queue: host us per call: %.1f (new shapes, held), %.1f (second stream, held), %.1f "
               "(cached)\n", t[0] * 1e6 / (2 * CALLS), t[1] * 1e6 / (2 * CALLS), t[2] * 1e6 / (2 * CALLS));
    CHECK_OK(duet_barrier(W));
    for (int i = 0; i < CALLS; i++) {
        CU(cudaFree(b.ar_in[i]));
        CU(cudaFree(b.ar_out[i]));
        CU(cudaFree(b.bc[i]));
    }
    CU(cudaFree(one));
    CU(cudaStreamDestroy(s1));
    CU(cudaStreamDestroy(s2));
    CHECK_OK(duet_finalize());
    int rc = dt_finish();
    if (me == 0 && rc == 0) printf("test_gpu_queue: passed\n");
    return rc;
}
