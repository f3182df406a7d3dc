/*
 * perf_device.c — duet-perf's device modes (duet-perf --device MODE): one-sided operations
 * issued from inside a kernel through the device API (include/duet/duet_device.cuh), between
 * ranks 0 and 1 on their GPUs (several ranks may share one GPU under CUDA MPS).
 *
 *   pingpong   a kernel on ranks 0 and 1: p + wait_until round trips (time: one round trip)
 *   put        a kernel on rank 0: put_block_nbi of the size, split over up to 4 blocks per SM
 *              (at least 64 KiB each), n times, then quiet (time: one put of the size)
 *   put1       the same from one block: one put_block_nbi of the whole size (through the GPU
 *              proxy: one command, cut into the proxy's chunks)
 *
 * Each row's time includes one kernel launch for all of its iterations (a few microseconds
 * over -n iterations).
 *
 * Host calls on GPU memory (the host one-sided API on the GPU heap, src/cuda/duet_cuda_rma.c):
 *
 *   barrier    every rank: duet_barrier_all with the GPU heap in use (time: one barrier)
 *   pquiet     rank 0: duet_p_uint64 into rank 1's GPU word, then duet_quiet (time: one pair)
 *   sbarrier   every rank: duet_barrier_on_stream + cudaStreamSynchronize (time: one pair)
 *
 * Built only with the CUDA backend.
 */
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>

#include "duet/duet_cuda.h"
#include "perf.h"
#include "perf_device.h"

static struct {
    int ready;
    duet_device_comm_t h;
    uint64_t *flag;    /* symmetric, GPU */
    int *status;       /* device: a failed wait's status */
    char *target;      /* symmetric, GPU: -e bytes (put) */
    char *origin;      /* rank 0's device buffer: -e bytes (put) */
    int sms;
} dev;

#define PERF_CUDA(call)                                                                    \
    do {                                                                                   \
        cudaError_t e_ = (cudaError_t)(call);                                              \
        if (e_ != cudaSuccess) perf_die("%s failed: %s", #call, cudaGetErrorString(e_));   \
    } while (0)

static inline uint8_t pattern(size_t j, size_t bytes)
{
    uint32_t x = (uint32_t)j * 2654435761u + (uint32_t)bytes * 40503u + 1u;
    x ^= x >> 15;
    return (uint8_t)(x ^ (x >> 8));
}

/* Collective, once: the device handle and the buffers (every rank takes part). */
static void dev_init(perf_t *p)
{
    if (dev.ready) return;
    if (!duet_cuda_available()) perf_die("--device: no GPU (or a Duet built without CUDA)");
    PERF_CUDA(cudaSetDevice(duet_cuda_device(p->comm)));
    PERF_CUDA(cudaDeviceGetAttribute(&dev.sms, cudaDevAttrMultiProcessorCount, duet_cuda_device(p->comm)));
    PERF_CHECK(duet_device_comm_get(p->comm, &dev.h));
    dev.flag = duet_malloc_device(p->comm, 64);
    if (!dev.flag) perf_die("duet_malloc_device: %s", duet_last_error());
    PERF_CUDA(cudaMemset(dev.flag, 0, 64));
    PERF_CUDA(cudaMalloc((void **)&dev.status, sizeof(int)));
    PERF_CUDA(cudaMemset(dev.status, 0, sizeof(int)));
    if (p->mode->sized) {
        size_t n = p->maxb ? p->maxb : 1;
        dev.target = duet_malloc_device(p->comm, n);
        if (!dev.target)
            perf_die("put up to -e %zu needs that much GPU heap (DUET_CUDA_HEAP_SIZE): %s", n, duet_last_error());
        PERF_CUDA(cudaMalloc((void **)&dev.origin, n));
    }
    PERF_CHECK(duet_barrier_all());
    dev.ready = 1;
}

static int dev_setup(perf_t *p, size_t bytes, const char **why)
{
    dev_init(p);
    if (p->mode->sized && bytes) {
        uint8_t *buf = malloc(bytes);
        if (!buf) perf_die("out of memory");
        for (size_t j = 0; j < bytes; j++) buf[j] = (uint8_t)(p->me == 0 ? pattern(j, bytes) : ~pattern(j, bytes));
        PERF_CUDA(cudaMemcpy(p->me == 0 ? dev.origin : dev.target, buf, bytes, cudaMemcpyHostToDevice));
        free(buf);
    }
    return 0;
}

static void dev_status(void)
{
    int st;
    PERF_CUDA(cudaMemcpy(&st, dev.status, sizeof st, cudaMemcpyDeviceToHost));
    if (st) perf_die("a device wait returned %d (%s)", st, duet_status_str((duet_status_t)st));
}

static void pingpong_body(perf_t *p, size_t bytes, long n)
{
    if (p->me <= 1) {
        PERF_CUDA(perf_dev_pingpong(dev.h, dev.flag, p->seq, n, dev.status));
        dev_status();
    }
    p->seq += (uint64_t)n;
}

static uint64_t pingpong_verify(perf_t *p, size_t bytes)
{
    if (p->me > 1) return 0;
    uint64_t v;
    PERF_CUDA(cudaMemcpy(&v, dev.flag, sizeof v, cudaMemcpyDeviceToHost));
    return v != p->seq;
}

static void put_body(perf_t *p, size_t bytes, long n)
{
    if (p->me == 0) PERF_CUDA(perf_dev_put(dev.h, dev.target, dev.origin, bytes, n, 1, 4 * dev.sms, 512));
}

static void put1_body(perf_t *p, size_t bytes, long n)
{
    if (p->me == 0) PERF_CUDA(perf_dev_put(dev.h, dev.target, dev.origin, bytes, n, 1, 1, 512));
}

static uint64_t put_verify(perf_t *p, size_t bytes)
{
    if (p->me != 1 || !bytes) return 0;
    uint8_t *buf = malloc(bytes);
    if (!buf) perf_die("out of memory");
    PERF_CUDA(cudaMemcpy(buf, dev.target, bytes, cudaMemcpyDeviceToHost));
    uint64_t bad = 0;
    for (size_t j = 0; j < bytes; j++) bad += buf[j] != pattern(j, bytes);
    free(buf);
    return bad;
}

static void barrier_body(perf_t *p, size_t bytes, long n)
{
    for (long i = 0; i < n; i++) PERF_CHECK(duet_barrier_all());
}

static void pquiet_body(perf_t *p, size_t bytes, long n)
{
    if (p->me == 0)
        for (long i = 1; i <= n; i++) {
            PERF_CHECK(duet_p_uint64(p->comm, dev.flag, p->seq + (uint64_t)i, 1));
            PERF_CHECK(duet_quiet(p->comm));
        }
    p->seq += (uint64_t)n;
}

static uint64_t pquiet_verify(perf_t *p, size_t bytes)
{
    if (p->me != 1) return 0;
    uint64_t v;
    PERF_CUDA(cudaMemcpy(&v, dev.flag, sizeof v, cudaMemcpyDeviceToHost));
    return v != p->seq;
}

static void sbarrier_body(perf_t *p, size_t bytes, long n)
{
    for (long i = 0; i < n; i++) {
        PERF_CHECK(duet_barrier_on_stream(p->comm, NULL));
        PERF_CUDA(cudaStreamSynchronize(NULL));
    }
    PERF_CHECK(duet_quiet(p->comm)); /* reports a failed stream barrier */
}

const perf_mode_t perf_device_modes[] = {
    {.name = "barrier", .dtype = "none", .redop = "none", .algo = "host", .elem_size = 0,
     .fixed_bytes = 0, .sized = 0, .pair = 0, .windowed = 0, .default_iters = 10000,
     .setup = dev_setup, .body = barrier_body, .verify = NULL,
     .help = "host duet_barrier_all on every rank, with the GPU heap in use"},
    {.name = "pquiet", .dtype = "uint64", .redop = "none", .algo = "host", .elem_size = 8,
     .fixed_bytes = 8, .sized = 0, .pair = 1, .windowed = 0, .default_iters = 10000,
     .setup = dev_setup, .body = pquiet_body, .verify = pquiet_verify,
     .help = "host duet_p into rank 1's GPU memory + duet_quiet, on rank 0"},
    {.name = "sbarrier", .dtype = "none", .redop = "none", .algo = "stream", .elem_size = 0,
     .fixed_bytes = 0, .sized = 0, .pair = 0, .windowed = 0, .default_iters = 2000,
     .setup = dev_setup, .body = sbarrier_body, .verify = NULL,
     .help = "duet_barrier_on_stream + cudaStreamSynchronize on every rank"},
    {.name = "pingpong", .dtype = "uint64", .redop = "none", .algo = "device", .elem_size = 8,
     .fixed_bytes = 8, .sized = 0, .pair = 1, .windowed = 0, .default_iters = 10000,
     .setup = dev_setup, .body = pingpong_body, .verify = pingpong_verify,
     .help = "in a kernel: p + wait_until round trip between ranks 0 and 1"},
    {.name = "put", .dtype = "uint8", .redop = "none", .algo = "device", .elem_size = 1,
     .fixed_bytes = 0, .sized = 1, .pair = 1, .windowed = 0, .default_iters = 100,
     .setup = dev_setup, .body = put_body, .verify = put_verify,
     .help = "in a kernel on rank 0: put_block_nbi to rank 1 over many blocks, then quiet"},
    {.name = "put1", .dtype = "uint8", .redop = "none", .algo = "device", .elem_size = 1,
     .fixed_bytes = 0, .sized = 1, .pair = 1, .windowed = 0, .default_iters = 100,
     .setup = dev_setup, .body = put1_body, .verify = put_verify,
     .help = "in a kernel on rank 0: one block's put_block_nbi of the size to rank 1, then quiet"},
};
const size_t perf_device_nmodes = sizeof perf_device_modes / sizeof perf_device_modes[0];

/* Frees what dev_init took (collective). */
void perf_device_free(perf_t *p)
{
    if (!dev.ready) return;
    if (dev.target) PERF_CHECK(duet_free(p->comm, dev.target));
    PERF_CHECK(duet_free(p->comm, dev.flag));
    if (dev.origin) cudaFree(dev.origin);
    cudaFree(dev.status);
    dev.ready = 0;
}
