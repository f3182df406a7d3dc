/*
 * perf_device_coll.c — duet-perf's GPU collective modes (duet-perf --device MODE): the
 * stream-ordered collectives of the public API on GPU buffers (not the device API).
 *
 *   allreduce  duet_allreduce, float32 sum, send and recv from duet_malloc_device, every rank;
 *              -n calls back to back on one stream, then one stream sync (nccl-tests' way):
 *              time per call. DUET_ALGO=allreduce:oneshot|twoshot forces the algorithm.
 *
 * Built only with the CUDA backend; perf_main.c looks modes up here after perf_device.c.
 */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#include "duet/duet_cuda.h"
#include "perf.h"

static struct {
    int ready;
    float *send, *recv; /* GPU heap, -e bytes each */
    cudaStream_t stream;
} gc;

#define PERF_CUDA(call)                                                                    \
    do {                                                                                   \
        cudaError_t e_ = (cudaError_t)(call);                                              \
        if (e_ != cudaSuccess) perf_die("%s failed: %s", #call, cudaGetErrorString(e_));   \
    } while (0)

static int gc_setup(perf_t *p, size_t bytes, const char **why)
{
    /* the algo column: gpu:NAME when -a forced one (one series per algorithm in --fit) */
    snprintf(p->row_algo, sizeof p->row_algo, "gpu%s%s", p->algo ? ":" : "", p->algo ? p->algo : "");
    if (!gc.ready) { /* collective, once */
        if (!duet_cuda_available()) perf_die("--device: no GPU (or a Duet built without CUDA)");
        PERF_CUDA(cudaSetDevice(duet_cuda_device(p->comm)));
        size_t n = p->maxb ? p->maxb : 4;
        gc.send = duet_malloc_device(p->comm, n);
        gc.recv = duet_malloc_device(p->comm, n);
        if (!gc.send || !gc.recv) perf_die("allreduce up to -e %zu: duet_malloc_device: %s", n, duet_last_error());
        PERF_CUDA(cudaStreamCreateWithFlags(&gc.stream, cudaStreamNonBlocking));
        float *ones = malloc(n);
        if (!ones) perf_die("out of memory");
        for (size_t i = 0; i < n / 4; i++) ones[i] = 1.0f;
        PERF_CUDA(cudaMemcpy(gc.send, ones, n / 4 * 4, cudaMemcpyHostToDevice));
        free(ones);
        PERF_CHECK(duet_barrier_all());
        gc.ready = 1;
    }
    PERF_CUDA(cudaMemset(gc.recv, 0, bytes ? bytes : 1));
    PERF_CUDA(cudaDeviceSynchronize());
    return 0;
}

static void allreduce_body(perf_t *p, size_t bytes, long n)
{
    for (long i = 0; i < n; i++)
        PERF_CHECK(duet_allreduce(gc.send, gc.recv, bytes / 4, DUET_FLOAT32, DUET_SUM, p->comm, gc.stream));
    PERF_CUDA(cudaStreamSynchronize(gc.stream));
}

static uint64_t allreduce_verify(perf_t *p, size_t bytes)
{
    size_t count = bytes / 4;
    if (!count) return 0;
    float *buf = malloc(count * 4);
    if (!buf) perf_die("out of memory");
    PERF_CUDA(cudaMemcpy(buf, gc.recv, count * 4, cudaMemcpyDeviceToHost));
    uint64_t bad = 0;
    for (size_t i = 0; i < count; i++) bad += buf[i] != (float)p->nranks;
    free(buf);
    return bad;
}

const perf_mode_t perf_device_coll_modes[] = {
    {.name = "allreduce", .dtype = "float32", .redop = "sum", .algo = "gpu", .elem_size = 4, .fixed_bytes = 0,
     .sized = 1, .pair = 0, .windowed = 0, .default_iters = 1000, .setup = gc_setup, .body = allreduce_body,
     .verify = allreduce_verify,
     .help = "duet_allreduce on GPU buffers, -n calls back to back on one stream (float32 sum)"},
};
const size_t perf_device_coll_nmodes = sizeof perf_device_coll_modes / sizeof perf_device_coll_modes[0];

void perf_device_coll_free(perf_t *p)
{
    if (!gc.ready) return;
    PERF_CHECK(duet_free(p->comm, gc.send));
    PERF_CHECK(duet_free(p->comm, gc.recv));
    cudaStreamDestroy(gc.stream);
}
