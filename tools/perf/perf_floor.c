/*
 * perf_floor.c — the memory-traffic floor of an allreduce on GPU buffers (duet-perf --device
 * allreduce --floor: a "# floor" line before each row): what the call cannot beat on one GPU, where every rank's reads and
 * writes share the one memory.
 *
 *   floor = (bytes the chosen algorithm reads and writes, summed over the ranks)
 *           / (the device's copy traffic rate, all ranks copying at once)
 *
 * The bytes come from the library (duet_cuda_coll_traffic: the algorithm the call runs and
 * its schedule), two ways: `staged`, as Duet moves them (a message written into the
 * receiver's inbox, read out of it), and `direct`, the algorithm's own traffic (a message read
 * where it lies and written where it goes). The rate: every rank copies 256 MiB device to
 * device five times, together; rate = 2 x bytes copied by all / the slowest rank's time.
 */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <string.h>

#include "coll/duet_coll.h"
#include "cuda/duet_cuda_coll.h"
#include "duet/duet_cuda.h"
#include "perf.h"

#define COPY_BYTES ((size_t)256 << 20)
#define COPY_REPS 5

static double rate_bytes_per_us; /* measured once per run */

static void die_cuda(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) perf_die("--floor: %s: %s", what, cudaGetErrorString(e));
}

/* The device's copy traffic (read + write) with every rank copying at once, bytes per us. */
static double copy_rate(perf_t *p)
{
    if (rate_bytes_per_us > 0) return rate_bytes_per_us;
    void *a = NULL, *b = NULL;
    cudaStream_t s;
    cudaEvent_t t0, t1;
    die_cuda(cudaMalloc(&a, COPY_BYTES), "cudaMalloc");
    die_cuda(cudaMalloc(&b, COPY_BYTES), "cudaMalloc");
    die_cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
    die_cuda(cudaEventCreate(&t0), "event");
    die_cuda(cudaEventCreate(&t1), "event");
    die_cuda(cudaMemcpyAsync(b, a, COPY_BYTES, cudaMemcpyDeviceToDevice, s), "warm-up copy");
    die_cuda(cudaStreamSynchronize(s), "sync");
    PERF_CHECK(duet_barrier(p->comm));
    die_cuda(cudaEventRecord(t0, s), "record");
    for (int i = 0; i < COPY_REPS; i++)
        die_cuda(cudaMemcpyAsync(i & 1 ? a : b, i & 1 ? b : a, COPY_BYTES, cudaMemcpyDeviceToDevice, s), "copy");
    die_cuda(cudaEventRecord(t1, s), "record");
    die_cuda(cudaEventSynchronize(t1), "sync");
    float ms = 0;
    die_cuda(cudaEventElapsedTime(&ms, t0, t1), "elapsed");
    double slowest = ms * 1e3;
    PERF_CHECK(duet_allreduce(&slowest, &slowest, 1, DUET_FLOAT64, DUET_MAX, p->comm, NULL));
    cudaEventDestroy(t0);
    cudaEventDestroy(t1);
    cudaStreamDestroy(s);
    cudaFree(a);
    cudaFree(b);
    rate_bytes_per_us = 2.0 * (double)COPY_BYTES * COPY_REPS * p->nranks / slowest;
    return rate_bytes_per_us;
}

void perf_floor_print(perf_t *p, size_t bytes, double measured_us)
{
    if (strcmp(p->mode->name, "allreduce") != 0 || bytes < 4) return;
    double rate = copy_rate(p);
    size_t count = bytes / 4;
    /* the row's own buffers: whether they lie in the GPU heap decides the direct kernel */
    duet_cuda_coll_call_t k = {DUET_COLL_ALLREDUCE, p->dev_send, p->dev_recv, count, count, count, DUET_FLOAT32, DUET_SUM, 0, 0,
                               DUET_CUDA_ROUTED | DUET_CUDA_SEND_DEVICE | DUET_CUDA_RECV_DEVICE, NULL,
                               "duet-perf --floor", 0, 0, 0};
    char algo[64];
    double t[3];
    PERF_CHECK(duet_cuda_coll_traffic(p->comm, &k, algo, sizeof algo, &t[0], &t[1]));
    t[2] = p->enqueue_us;
    PERF_CHECK(duet_allreduce(t, t, 3, DUET_FLOAT64, DUET_SUM, p->comm, NULL));
    if (p->me != 0) return;
    double staged = t[0] / rate, direct = t[1] / rate;
    printf("# floor allreduce %zu B, %s: %.3f GB staged / %.3f GB direct over %d ranks at %.2f TB/s device copy "
           "traffic -> floor %.1f / %.1f us; measured %.1f us = %.2fx / %.2fx; host queues a call in %.1f us\n",
           bytes, algo, t[0] / 1e9, t[1] / 1e9, p->nranks, rate / 1e6, staged, direct, measured_us,
           measured_us / staged, measured_us / direct, t[2] / p->nranks);
    fflush(stdout);
}
