/*
 * perf_device_coll.c — duet-perf's GPU collective modes (duet-perf --device MODE): the
 * stream-ordered collectives of the public API on GPU buffers (not the device API).
 *
 *   allreduce      duet_allreduce, float32 sum
 *   broadcast      duet_broadcast from -r ROOT (0)
 *   reduce         duet_reduce to -r ROOT (0), float32 sum
 *   allgather      duet_allgather, float32
 *   reducescatter  duet_reduce_scatter, float32 sum
 *   alltoall       duet_alltoall, float32
 *
 * Every rank; send and recv from duet_malloc_device (--buffers host: cudaMalloc, outside the
 * GPU heap, where the direct kernels cannot read them), -e bytes each. Sizes, the bytes and
 * count columns and busbw are perf_coll.c's (nccl-tests'): S = -b..-e is the largest buffer
 * of a rank, allgather / reducescatter / alltoall move blocks of S / 4 / n elements. -n calls
 * back to back on one stream, then one stream sync (nccl-tests' way): time per call, rank
 * 0's. -a NAME sets DUET_ALGO=<mode>:NAME (perf_coll_force_algo); the algo column is gpu
 * or gpu:NAME. Check (-c 1): element i of rank r's send buffer is (r * 1000 + i) % 4096
 * (sums exact in float32), recv is poisoned before each row, and every rank compares its
 * recv with what the inputs imply (reduce: off the root, recv must stay poisoned).
 *
 * Built only with the CUDA backend; perf_main.c looks modes up here after perf_device.c.
 */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

#define GC_POISON 0xa5 /* byte of recv before a row: float 0xa5a5a5a5, no possible result */

/* ------------------------------------------------------------------------ data */
/* Element i of rank r's send buffer. */
static float in(int r, size_t i)
{
    return (float)(((size_t)r * 1000 + i) % 4096);
}

static float sum_in(const perf_t *p, size_t i)
{
    size_t s = 0; /* at most 4095 n: exact in float32 */
    for (int r = 0; r < p->nranks; r++) s += ((size_t)r * 1000 + i) % 4096;
    return (float)s;
}

static float poison(void)
{
    float f;
    memset(&f, GC_POISON, sizeof f);
    return f;
}

/* ------------------------------------------------------------------------ the modes
 * Per mode: one call, and the expected element k of this rank's recv (c = p->count). */

static void allreduce_call(perf_t *p)
{
    PERF_CHECK(duet_allreduce(gc.send, gc.recv, p->count, DUET_FLOAT32, DUET_SUM, p->comm, gc.stream));
}
static float allreduce_want(const perf_t *p, size_t k) { return sum_in(p, k); }

static void broadcast_call(perf_t *p)
{
    PERF_CHECK(duet_broadcast(gc.send, gc.recv, p->count, DUET_FLOAT32, p->root, p->comm, gc.stream));
}
static float broadcast_want(const perf_t *p, size_t k) { return in(p->root, k); }

static void reduce_call(perf_t *p)
{
    PERF_CHECK(duet_reduce(gc.send, gc.recv, p->count, DUET_FLOAT32, DUET_SUM, p->root, p->comm, gc.stream));
}
static float reduce_want(const perf_t *p, size_t k) { return p->me == p->root ? sum_in(p, k) : poison(); }

static void allgather_call(perf_t *p)
{
    PERF_CHECK(duet_allgather(gc.send, gc.recv, p->count, DUET_FLOAT32, p->comm, gc.stream));
}
static float allgather_want(const perf_t *p, size_t k) { return in((int)(k / p->count), k % p->count); }

static void reducescatter_call(perf_t *p)
{
    PERF_CHECK(duet_reduce_scatter(gc.send, gc.recv, p->count, DUET_FLOAT32, DUET_SUM, p->comm, gc.stream));
}
static float reducescatter_want(const perf_t *p, size_t k) { return sum_in(p, (size_t)p->me * p->count + k); }

static void alltoall_call(perf_t *p)
{
    PERF_CHECK(duet_alltoall(gc.send, gc.recv, p->count, DUET_FLOAT32, p->comm, gc.stream));
}
static float alltoall_want(const perf_t *p, size_t k)
{
    return in((int)(k / p->count), (size_t)p->me * p->count + k % p->count);
}

/* The shapes of perf_coll.c: split: count = S / 4 / n (else S / 4); send_n, recv_n: that
 * buffer holds n blocks of count; bus: busbw factor 0: 1, 1: (n-1)/n, 2: 2(n-1)/n. */
typedef struct {
    int kind; /* duet_coll_kind_t */
    int split, send_n, recv_n, bus;
    void (*call)(perf_t *);
    float (*want)(const perf_t *, size_t k);
} gc_info_t;

/* In the order of perf_device_coll_modes. */
static const gc_info_t infos[] = {
    {DUET_COLL_ALLREDUCE, 0, 0, 0, 2, allreduce_call, allreduce_want},
    {DUET_COLL_BROADCAST, 0, 0, 0, 0, broadcast_call, broadcast_want},
    {DUET_COLL_REDUCE, 0, 0, 0, 0, reduce_call, reduce_want},
    {DUET_COLL_ALLGATHER, 1, 0, 1, 1, allgather_call, allgather_want},
    {DUET_COLL_REDUCE_SCATTER, 1, 1, 0, 1, reducescatter_call, reducescatter_want},
    {DUET_COLL_ALLTOALL, 1, 1, 1, 1, alltoall_call, alltoall_want},
};

static const gc_info_t *info_of(const perf_mode_t *m)
{
    return &infos[m - perf_device_coll_modes];
}

/* ------------------------------------------------------------------------ shared */
/* Collective, once: the device, the buffers (-e bytes each, the largest of any mode), the
 * stream, and the send buffer's content (the same for every mode and size). */
static void gc_alloc(perf_t *p)
{
    if (!duet_cuda_available()) perf_die("--device: no GPU (or a Duet built without CUDA)");
    PERF_CUDA(cudaSetDevice(duet_cuda_device(p->comm)));
    size_t n = p->maxb > 4 ? p->maxb : 4;
    p->bufs_in_heap = !p->host_buffers;
    if (p->bufs_in_heap) {
        gc.send = duet_malloc_device(p->comm, n);
        gc.recv = duet_malloc_device(p->comm, n);
        if (!gc.send || !gc.recv) perf_die("%s up to -e %zu: duet_malloc_device: %s", p->mode->name, n, duet_last_error());
    } else {
        PERF_CUDA(cudaMalloc((void **)&gc.send, n));
        PERF_CUDA(cudaMalloc((void **)&gc.recv, n));
    }
    p->dev_send = gc.send;
    p->dev_recv = gc.recv;
    PERF_CUDA(cudaStreamCreateWithFlags(&gc.stream, cudaStreamNonBlocking));
    float *host = malloc(n);
    if (!host) perf_die("out of memory");
    for (size_t i = 0; i < n / 4; i++) host[i] = in(p->me, i);
    PERF_CUDA(cudaMemcpy(gc.send, host, n / 4 * 4, cudaMemcpyHostToDevice));
    free(host);
    PERF_CHECK(duet_barrier_all());
    gc.ready = 1;
}

static int gc_setup(perf_t *p, size_t bytes, const char **why)
{
    const gc_info_t *gi = info_of(p->mode);
    size_t n = (size_t)p->nranks, total = bytes / 4;
    p->count = gi->split ? total / n : total;
    p->send_bytes = p->count * (gi->send_n ? n : 1) * 4;
    p->recv_bytes = p->count * (gi->recv_n ? n : 1) * 4;
    p->row_bytes = p->send_bytes > p->recv_bytes ? p->send_bytes : p->recv_bytes;
    double f = (double)(p->nranks - 1) / p->nranks;
    p->busbw_factor = gi->bus == 2 ? 2 * f : gi->bus == 1 ? f : 1;
    /* the algo column: gpu:NAME when -a forced one (one series per algorithm in --fit) */
    snprintf(p->row_algo, sizeof p->row_algo, "gpu%s%s", p->algo ? ":" : "", p->algo ? p->algo : "");
    if (!gc.ready) gc_alloc(p);
    if (p->recv_bytes) PERF_CUDA(cudaMemset(gc.recv, GC_POISON, p->recv_bytes));
    PERF_CUDA(cudaDeviceSynchronize());
    return 0;
}

static void gc_body(perf_t *p, size_t bytes, long n)
{
    void (*call)(perf_t *) = info_of(p->mode)->call;
    uint64_t t0 = duet_time_ns();
    for (long i = 0; i < n; i++) call(p);
    if (n > 0) p->enqueue_us = (double)(duet_time_ns() - t0) / 1e3 / (double)n;
    PERF_CUDA(cudaStreamSynchronize(gc.stream));
}

/* This rank's recv, element by element, against the mode's expectation. */
static uint64_t gc_verify(perf_t *p, size_t bytes)
{
    float (*want)(const perf_t *, size_t) = info_of(p->mode)->want;
    size_t count = p->recv_bytes / 4;
    if (!count) return 0;
    float *buf = malloc(count * 4);
    if (!buf) perf_die("out of memory");
    PERF_CUDA(cudaMemcpy(buf, gc.recv, count * 4, cudaMemcpyDeviceToHost));
    uint64_t bad = 0;
    for (size_t k = 0; k < count; k++) bad += buf[k] != want(p, k);
    free(buf);
    return bad;
}

const perf_mode_t perf_device_coll_modes[] = {
#define GC_MODE(mode, op, text)                                                                \
    {.name = mode, .dtype = "float32", .redop = op, .algo = "gpu", .elem_size = 4, .sized = 1, \
     .default_iters = 1000, .gpu_coll = 1, .setup = gc_setup, .body = gc_body, .verify = gc_verify, .help = text}
    GC_MODE("allreduce", "sum", "duet_allreduce on GPU buffers, -n calls back to back on one stream (float32 sum)"),
    GC_MODE("broadcast", "none", "duet_broadcast from -r ROOT on GPU buffers (float32)"),
    GC_MODE("reduce", "sum", "duet_reduce to -r ROOT on GPU buffers (float32 sum)"),
    GC_MODE("allgather", "none", "duet_allgather on GPU buffers (bytes: the receive buffer, n blocks)"),
    GC_MODE("reducescatter", "sum", "duet_reduce_scatter on GPU buffers (bytes: the send buffer, n blocks)"),
    GC_MODE("alltoall", "none", "duet_alltoall on GPU buffers (bytes: each buffer, n blocks)"),
#undef GC_MODE
};
const size_t perf_device_coll_nmodes = DUET_ARRAY_LEN(perf_device_coll_modes);
_Static_assert(DUET_ARRAY_LEN(perf_device_coll_modes) == DUET_ARRAY_LEN(infos), "one info row per mode");

void perf_device_coll_free(perf_t *p)
{
    if (!gc.ready) return;
    if (p->bufs_in_heap) {
        PERF_CHECK(duet_free(p->comm, gc.send));
        PERF_CHECK(duet_free(p->comm, gc.recv));
    } else {
        cudaFree(gc.send);
        cudaFree(gc.recv);
    }
    cudaStreamDestroy(gc.stream);
}

int perf_device_coll_kind(const perf_mode_t *m)
{
    return info_of(m)->kind;
}

const perf_mode_t *perf_device_coll_find_mode(const char *name)
{
    for (size_t i = 0; i < perf_device_coll_nmodes; i++)
        if (strcmp(perf_device_coll_modes[i].name, name) == 0) return &perf_device_coll_modes[i];
    return NULL;
}

duet_coll_exec_call_t perf_device_coll_call(const perf_t *p)
{
    const gc_info_t *gi = info_of(p->mode);
    size_t n = (size_t)p->nranks;
    int rooted = gi->kind == DUET_COLL_BROADCAST || gi->kind == DUET_COLL_REDUCE;
    duet_coll_exec_call_t k = {
        .kind = gi->kind, .send = gc.send, .recv = gc.recv, .count = p->count,
        .send_count = p->count * (gi->send_n ? n : 1), .recv_count = p->count * (gi->recv_n ? n : 1),
        .dt = DUET_FLOAT32, .op = DUET_SUM, .root = rooted ? p->root : 0,
        .where = DUET_COLL_ROUTED | DUET_COLL_SEND_DEVICE | DUET_COLL_RECV_DEVICE, .stream = gc.stream,
        .fn = "duet-perf --validate --device"};
    return k;
}
