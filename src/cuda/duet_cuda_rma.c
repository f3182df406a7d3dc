/*
 * Host one-sided calls on the GPU heap (src/rma routes here, see duet_cuda_rma.h) and the
 * stream-ordered forms of duet_cuda.h (duet_put_on_stream ... duet_launch_collective).
 *
 * Where the work runs: one internal non-blocking stream per device and process, created at
 * the first GPU-side host call. Not one per communicator: the communicator's device state
 * (duet_cuda_state.h) has no slot for it and nothing here is told when a communicator dies,
 * so a per-device stream that lives as long as the process is the one that cannot dangle.
 * The cost is that duet_quiet on one communicator also completes another's GPU-side host
 * operations on the same device (more than it must, never less). Non-blocking: it must not
 * wait for, nor be waited for by, the legacy default stream, where a user's kernel may be
 * waiting for the very put we are doing.
 *
 * Costs (each a launch or a copy, a few microseconds): p of <= 64 bytes from the host = one
 * kernel launch, no wait (the value travels in the arguments); other blocking puts and gets
 * = copy + stream synchronize; nbi = copy; atomics = one-thread kernel (+ synchronize when
 * they fetch); quiet = a synchronize only when something is pending; a host wait on a GPU
 * word = one copy per look.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cuda/duet_cuda_driver.h"
#include "cuda/duet_cuda_proxy.h"
#include "cuda/duet_cuda_rma.h"
#include "cuda/duet_cuda_rma_kern.h"
#include "cuda/duet_cuda_state.h"
#include "duet/duet_cuda.h"

#define MAX_DEVICES 64

_Static_assert((int)DUET_AMO_FETCH == (int)DUET_CUDA_K_FETCH && (int)DUET_AMO_CSWAP == (int)DUET_CUDA_K_CSWAP &&
                   (int)DUET_AMO_ADD == (int)DUET_CUDA_K_ADD && (int)DUET_AMO_XOR == (int)DUET_CUDA_K_XOR,
               "the kernel's atomic ops follow duet_amo_op_t");

typedef struct {
    cudaStream_t stream;
    cudaEvent_t ev;          /* duet_quiet_on_stream: the stream's pending work so far */
    uint64_t *fetch_host;    /* mapped pinned: a fetching atomic's old value */
    uint64_t *fetch_dev;
    volatile int32_t *err_host; /* mapped pinned: first failure of a stream-ordered wait */
    int32_t *err_dev;
    _Atomic int pending;     /* nbi work enqueued since the last quiet */
    pthread_mutex_t lock;    /* fetch word and event */
} rma_dev_t;

static _Atomic(rma_dev_t *) devs[MAX_DEVICES];
static pthread_mutex_t devs_lock = PTHREAD_MUTEX_INITIALIZER;

static duet_status_t dev_create(int device, rma_dev_t **out)
{
    rma_dev_t *s = calloc(1, sizeof *s);
    if (!s) return DUET_FAIL(DUET_ERR_NO_MEMORY, RMA, "out of host memory");
    void *h1 = NULL, *h2 = NULL, *d = NULL;
    cudaError_t err;
    if ((err = cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking)) != cudaSuccess ||
        (err = cudaEventCreateWithFlags(&s->ev, cudaEventDisableTiming)) != cudaSuccess ||
        (err = cudaHostAlloc(&h1, DUET_CACHELINE, cudaHostAllocMapped | cudaHostAllocPortable)) != cudaSuccess ||
        (err = cudaHostGetDevicePointer(&d, h1, 0)) != cudaSuccess ||
        (s->fetch_host = h1, s->fetch_dev = d,
         (err = cudaHostAlloc(&h2, DUET_CACHELINE, cudaHostAllocMapped | cudaHostAllocPortable)) != cudaSuccess) ||
        (err = cudaHostGetDevicePointer(&d, h2, 0)) != cudaSuccess) {
        duet_status_t st = DUET_CUDA_FAIL_RT(err, "GPU heap: the internal stream of device %d", device);
        if (h2) cudaFreeHost(h2);
        if (h1) cudaFreeHost(h1);
        if (s->ev) cudaEventDestroy(s->ev);
        if (s->stream) cudaStreamDestroy(s->stream);
        free(s);
        return st;
    }
    s->err_host = h2;
    s->err_dev = d;
    *s->err_host = 0;
    pthread_mutex_init(&s->lock, NULL);
    *out = s;
    return DUET_OK;
}

/* This device's state (made at first use), with the device made current. */
static duet_status_t dev_state(const duet_cuda_heap_t *g, rma_dev_t **out, const char *fn)
{
    cudaError_t err = cudaSetDevice(g->device);
    if (err != cudaSuccess) return DUET_CUDA_FAIL_RT(err, "%s: cudaSetDevice(%d)", fn, g->device);
    if (g->device < 0 || g->device >= MAX_DEVICES)
        return DUET_FAIL(DUET_ERR_UNSUPPORTED, RMA, "%s: device %d is beyond %d", fn, g->device, MAX_DEVICES);
    rma_dev_t *s = atomic_load_explicit(&devs[g->device], memory_order_acquire);
    if (DUET_LIKELY(s != NULL)) {
        *out = s;
        return DUET_OK;
    }
    duet_status_t st = DUET_OK;
    pthread_mutex_lock(&devs_lock);
    s = atomic_load_explicit(&devs[g->device], memory_order_relaxed);
    if (!s && (st = dev_create(g->device, &s)) == DUET_OK)
        atomic_store_explicit(&devs[g->device], s, memory_order_release);
    pthread_mutex_unlock(&devs_lock);
    *out = s;
    return st;
}

int duet_cuda_rma_owns(const duet_cuda_heap_t *g, const void *p, size_t bytes)
{
    if (!g) return 0;
    uintptr_t base = (uintptr_t)g->peer[g->my_pe], a = (uintptr_t)p, end = base + g->part_bytes;
    return a >= base + DUET_CUDA_SYNC_BYTES && a < end && bytes <= end - a;
}

/* pe's copy of my symmetric `sym`, in my mapping. */
static duet_status_t peer_addr(duet_comm_t c, const void *sym, int pe, const char *fn, char **out)
{
    duet_cuda_heap_t *g = duet_cuda_heap_of(c->heap);
    *out = duet_cuda_heap_peer(g, sym, c->heap_pe[pe]);
    if (!*out)
        return DUET_FAIL(DUET_ERR_UNSUPPORTED, RMA, "%s: pe %d's GPU memory is not mapped here (another host)",
                         fn, pe);
    return DUET_OK;
}

static duet_status_t finish(rma_dev_t *s, cudaError_t err, int nbi, const char *fn)
{
    if (err == cudaSuccess && !nbi) err = cudaStreamSynchronize(s->stream);
    if (err != cudaSuccess) return DUET_CUDA_FAIL_RT(err, "%s on GPU memory", fn);
    if (nbi) atomic_store_explicit(&s->pending, 1, memory_order_release); /* after the enqueue */
    return DUET_OK;
}

duet_status_t duet_cuda_rma_put(duet_comm_t c, void *sym, const void *src, size_t n, int pe, int nbi,
                                const char *fn)
{
    rma_dev_t *s;
    char *dst;
    duet_status_t st;
    if ((st = dev_state(duet_cuda_heap_of(c->heap), &s, fn)) || (st = peer_addr(c, sym, pe, fn, &dst))) return st;
    const duet_cu_t *cu = nbi == 2 && (n == 4 || n == 8) && ((uintptr_t)dst & (n - 1)) == 0 ? duet_cu() : NULL;
    if (cu && cu->StreamWriteValue64) { /* p of a word: a stream memory operation, lighter than a kernel */
        uint64_t v64 = 0;
        uint32_t v32 = 0;
        CUresult r = n == 8 ? (memcpy(&v64, src, 8), cu->StreamWriteValue64((CUstream)s->stream, (CUdeviceptr)dst, v64, 0))
                            : (memcpy(&v32, src, 4), cu->StreamWriteValue32((CUstream)s->stream, (CUdeviceptr)dst, v32, 0));
        if (r != CUDA_SUCCESS) return duet_cuda_fail_cu_(r, "%s on GPU memory: cuStreamWriteValue", fn);
        return finish(s, cudaSuccess, 1, fn);
    }
    if (nbi == 2 && n <= DUET_CUDA_K_P_MAX) /* p: a host value, copied into the launch */
        return finish(s, (cudaError_t)duet_cuda_k_p(dst, src, n, s->stream), 1, fn);
    return finish(s, cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, s->stream), nbi == 1, fn);
}

duet_status_t duet_cuda_rma_get(duet_comm_t c, void *dst, const void *sym, size_t n, int pe, int nbi,
                                const char *fn)
{
    rma_dev_t *s;
    char *src;
    duet_status_t st;
    if ((st = dev_state(duet_cuda_heap_of(c->heap), &s, fn)) || (st = peer_addr(c, sym, pe, fn, &src))) return st;
    return finish(s, cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, s->stream), nbi, fn);
}

duet_status_t duet_cuda_rma_strided(duet_comm_t c, int is_put, void *dst, const void *src, ptrdiff_t dst_stride,
                                    ptrdiff_t src_stride, size_t nelems, size_t es, int pe, const char *fn)
{
    rma_dev_t *s;
    char *remote;
    duet_status_t st;
    if (dst_stride < 1 || src_stride < 1)
        return DUET_FAIL(DUET_ERR_UNSUPPORTED, RMA, "%s: strides %td and %td on GPU memory: only strides >= 1",
                         fn, dst_stride, src_stride);
    if ((st = dev_state(duet_cuda_heap_of(c->heap), &s, fn)) || (st = peer_addr(c, is_put ? dst : src, pe, fn, &remote)))
        return st;
    cudaError_t err = cudaMemcpy2DAsync(is_put ? remote : dst, (size_t)dst_stride * es, is_put ? src : remote,
                                        (size_t)src_stride * es, es, nelems, cudaMemcpyDefault, s->stream);
    return finish(s, err, 0, fn);
}

duet_status_t duet_cuda_rma_amo(duet_comm_t c, int op, void *sym, size_t width, uint64_t operand, uint64_t cond,
                                int pe, uint64_t *fetched, const char *fn)
{
    rma_dev_t *s;
    char *dst;
    duet_status_t st;
    if ((st = dev_state(duet_cuda_heap_of(c->heap), &s, fn)) || (st = peer_addr(c, sym, pe, fn, &dst))) return st;
    if (!fetched) /* completes at quiet, like a put */
        return finish(s, (cudaError_t)duet_cuda_k_amo(dst, (int)width, op, operand, cond, NULL, s->stream), 1,
                      fn);
    pthread_mutex_lock(&s->lock); /* one fetch word per device */
    cudaError_t err = (cudaError_t)duet_cuda_k_amo(dst, (int)width, op, operand, cond, s->fetch_dev, s->stream);
    st = finish(s, err, 0, fn);
    if (!st) *fetched = *(volatile uint64_t *)s->fetch_host;
    pthread_mutex_unlock(&s->lock);
    return st;
}

duet_status_t duet_cuda_rma_signal(duet_comm_t c, uint64_t *sig, uint64_t value, int sig_op, int pe, int nbi,
                                   const char *fn)
{
    rma_dev_t *s;
    char *dst;
    duet_status_t st;
    if ((st = dev_state(duet_cuda_heap_of(c->heap), &s, fn)) || (st = peer_addr(c, sig, pe, fn, &dst))) return st;
    int op = sig_op == DUET_SIGNAL_ADD ? DUET_CUDA_K_ADD : DUET_CUDA_K_SET;
    return finish(s, (cudaError_t)duet_cuda_k_amo(dst, 8, op, value, 0, NULL, s->stream), nbi, fn);
}

duet_status_t duet_cuda_rma_read(duet_comm_t c, void *host, const void *local, size_t n, const char *fn)
{
    rma_dev_t *s;
    duet_status_t st = dev_state(duet_cuda_heap_of(c->heap), &s, fn);
    if (st) return st;
    return finish(s, cudaMemcpyAsync(host, local, n, cudaMemcpyDeviceToHost, s->stream), 0, fn);
}

duet_status_t duet_cuda_rma_quiet(duet_comm_t c)
{
    int device = duet_cuda_heap_of(c->heap)->device;
    duet_status_t pst = duet_cuda_heap_of(c->heap)->proxy ? duet_cuda_proxy_quiet(c) : DUET_OK; /* kernels' remote calls */
    rma_dev_t *s = device >= 0 && device < MAX_DEVICES ? atomic_load_explicit(&devs[device], memory_order_acquire)
                                                       : NULL;
    if (!s) return pst; /* no GPU-side host call yet */
    duet_status_t st = pst;
    if (atomic_load_explicit(&s->pending, memory_order_acquire) &&
        atomic_exchange_explicit(&s->pending, 0, memory_order_acq_rel)) {
        cudaError_t err = cudaSetDevice(device);
        if (err == cudaSuccess) err = cudaStreamSynchronize(s->stream);
        if (err != cudaSuccess) st = DUET_CUDA_FAIL_RT(err, "duet_quiet: the GPU heap's operations");
    }
    int32_t e = *s->err_host;
    if (DUET_UNLIKELY(e) && !st) {
        *s->err_host = 0;
        st = DUET_FAIL((duet_status_t)e, RMA, "a stream-ordered wait or barrier on the GPU failed: %s",
                       duet_status_str((duet_status_t)e));
    }
    return st;
}

/* ---------------------------------------------------------------- stream-ordered forms */

static duet_status_t stream_check(duet_comm_t c, const char *fn, rma_dev_t **s)
{
    duet_status_t st = duet_comm_check(c, fn);
    if (st) return st;
    if (!duet_cuda_heap_of(c->heap))
        return DUET_FAIL(DUET_ERR_UNSUPPORTED, RMA, "%s: this communicator has no GPU heap (no GPU on some rank, "
                         "or DUET_CUDA=off)", fn);
    return dev_state(duet_cuda_heap_of(c->heap), s, fn);
}

/* The checks of a symmetric GPU address of pe; its address in my mapping. */
static duet_status_t stream_target(duet_comm_t c, const void *sym, size_t bytes, int pe, const char *fn,
                                   const char *what, rma_dev_t **s, char **peer)
{
    duet_status_t st = stream_check(c, fn, s);
    if (st) return st;
    if ((unsigned)pe >= (unsigned)c->size)
        return duet_error_set(DUET_ERR_INVALID_ARG, "%s: PE %d is out of range [0, %d)", fn, pe, c->size);
    if (!duet_cuda_rma_owns(duet_cuda_heap_of(c->heap), sym, bytes ? bytes : 1))
        return duet_error_set(DUET_ERR_INVALID_ARG, "%s: %s %p (+%zu bytes) is not inside the GPU heap", fn, what,
                              sym, bytes);
    return peer_addr(c, sym, pe, fn, peer);
}

/* stream_target for a signal: 8 bytes, 8-byte aligned. */
static duet_status_t stream_sig(duet_comm_t c, const uint64_t *sig, int pe, const char *fn, rma_dev_t **s,
                                char **peer)
{
    duet_status_t st = stream_target(c, sig, 8, pe, fn, "the signal", s, peer);
    if (!st && (uintptr_t)sig % 8)
        st = duet_error_set(DUET_ERR_INVALID_ARG, "%s: the signal %p is not 8-byte aligned", fn,
                            (const void *)sig);
    return st;
}

static duet_status_t launched(cudaError_t err, const char *fn)
{
    return err == cudaSuccess ? DUET_OK : DUET_CUDA_FAIL_RT(err, "%s", fn);
}

duet_status_t duet_put_on_stream(duet_comm_t c, void *dst, const void *src, size_t bytes, int pe, void *stream)
{
    static const char fn[] = "duet_put_on_stream";
    rma_dev_t *s;
    char *peer;
    duet_status_t st = stream_target(c, dst, bytes, pe, fn, "the destination", &s, &peer);
    if (st || !bytes) return st;
    if (!src) return duet_error_set(DUET_ERR_INVALID_ARG, "%s: the source is NULL", fn);
    return launched(cudaMemcpyAsync(peer, src, bytes, cudaMemcpyDefault, (cudaStream_t)stream), fn);
}

duet_status_t duet_get_on_stream(duet_comm_t c, void *dst, const void *src, size_t bytes, int pe, void *stream)
{
    static const char fn[] = "duet_get_on_stream";
    rma_dev_t *s;
    char *peer;
    duet_status_t st = stream_target(c, src, bytes, pe, fn, "the source", &s, &peer);
    if (st || !bytes) return st;
    if (!dst) return duet_error_set(DUET_ERR_INVALID_ARG, "%s: the destination is NULL", fn);
    return launched(cudaMemcpyAsync(dst, peer, bytes, cudaMemcpyDefault, (cudaStream_t)stream), fn);
}

duet_status_t duet_signal_op_on_stream(duet_comm_t c, uint64_t *sig, uint64_t value, int sig_op, int pe,
                                       void *stream)
{
    static const char fn[] = "duet_signal_op_on_stream";
    rma_dev_t *s;
    char *peer;
    duet_status_t st = stream_sig(c, sig, pe, fn, &s, &peer);
    if (st) return st;
    if (sig_op != DUET_SIGNAL_SET && sig_op != DUET_SIGNAL_ADD)
        return duet_error_set(DUET_ERR_INVALID_ARG, "%s: sig_op %d is neither DUET_SIGNAL_SET nor _ADD", fn,
                              sig_op);
    int op = sig_op == DUET_SIGNAL_ADD ? DUET_CUDA_K_ADD : DUET_CUDA_K_SET;
    return launched((cudaError_t)duet_cuda_k_amo(peer, 8, op, value, 0, NULL, stream), fn);
}

duet_status_t duet_signal_wait_until_on_stream(duet_comm_t c, uint64_t *sig, int cmp, uint64_t value, void *stream)
{
    static const char fn[] = "duet_signal_wait_until_on_stream";
    rma_dev_t *s;
    char *peer;
    duet_device_comm_t h;
    duet_status_t st = duet_comm_check(c, fn); /* before c->rank */
    if (!st) st = stream_sig(c, sig, c->rank, fn, &s, &peer);
    if (st) return st;
    if (cmp < DUET_CMP_EQ || cmp > DUET_CMP_LE)
        return duet_error_set(DUET_ERR_INVALID_ARG, "%s: comparison %d is not a DUET_CMP_* value", fn, cmp);
    if ((st = duet_device_comm_get(c, &h))) return st;
    return launched((cudaError_t)duet_cuda_k_wait(h, sig, cmp, value, s->err_dev, stream), fn);
}

duet_status_t duet_barrier_on_stream(duet_comm_t c, void *stream)
{
    static const char fn[] = "duet_barrier_on_stream";
    rma_dev_t *s;
    duet_device_comm_t h;
    duet_status_t st = stream_check(c, fn, &s);
    if (!st) st = duet_device_comm_get(c, &h);
    if (st) return st;
    return launched((cudaError_t)duet_cuda_k_barrier(h, s->err_dev, stream), fn);
}

duet_status_t duet_quiet_on_stream(duet_comm_t c, void *stream)
{
    static const char fn[] = "duet_quiet_on_stream";
    rma_dev_t *s;
    duet_status_t st = stream_check(c, fn, &s);
    if (st || !atomic_load_explicit(&s->pending, memory_order_acquire)) return st;
    pthread_mutex_lock(&s->lock);
    cudaError_t err = cudaEventRecord(s->ev, s->stream);
    if (err == cudaSuccess) err = cudaStreamWaitEvent((cudaStream_t)stream, s->ev, 0);
    pthread_mutex_unlock(&s->lock);
    return launched(err, fn);
}

duet_status_t duet_launch_collective(duet_comm_t c, const void *func, duet_dim3_t grid, duet_dim3_t block,
                                     void **args, size_t shmem, void *stream)
{
    static const char fn[] = "duet_launch_collective";
    rma_dev_t *s;
    duet_status_t st = stream_check(c, fn, &s);
    if (st) return st;
    if (!func) return duet_error_set(DUET_ERR_INVALID_ARG, "%s: func is NULL", fn);
    unsigned long long blocks = (unsigned long long)grid.x * grid.y * grid.z;
    unsigned long long threads = (unsigned long long)block.x * block.y * block.z;
    if (!blocks || !threads || threads > 1024)
        return duet_error_set(DUET_ERR_INVALID_ARG, "%s: grid %llu blocks of %llu threads", fn, blocks, threads);
    int per_sm = 0, sms = 0, coop = 0, dev = duet_cuda_heap_of(c->heap)->device;
    cudaError_t err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, func, (int)threads, shmem);
    if (err == cudaSuccess) err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (err == cudaSuccess) err = cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev);
    if (err != cudaSuccess) return DUET_CUDA_FAIL_RT(err, "%s: occupancy of the kernel", fn);
    if (blocks > (unsigned long long)per_sm * (unsigned long long)sms)
        return duet_error_set(DUET_ERR_INVALID_ARG, "%s: %llu blocks of %llu threads (%zu bytes shared) cannot "
                              "all be resident: %d per SM x %d SMs", fn, blocks, threads, shmem, per_sm, sms);
    dim3 g = {grid.x, grid.y, grid.z}, b = {block.x, block.y, block.z};
    if (blocks > 1 && coop) {
        err = cudaLaunchCooperativeKernel(func, g, b, args, shmem, (cudaStream_t)stream);
        if (err == cudaSuccess) return DUET_OK;
        /* e.g. refused under MPS: residency was checked, so cross-rank waits still work; only
         * cooperative groups' grid.sync() would not */
        DUET_LOG(INFO, CUDA, "%s: cooperative launch refused (%s); launching normally", fn,
                 cudaGetErrorString(err));
        (void)cudaGetLastError();
    }
    return launched(cudaLaunchKernel(func, g, b, args, shmem, (cudaStream_t)stream), fn);
}
