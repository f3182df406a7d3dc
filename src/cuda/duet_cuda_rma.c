/*
 * Host one-sided calls on the GPU heap — the transport of the heap's device part, whose
 * endpoints src/rma uses as it uses the host heap's (see duet_cuda_rma.h) — and the
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
    uintptr_t base = (uintptr_t)g->peer[g->my_pe], a = (uintptr_t)p, end = base + duet_cuda_heap_mapped(g);
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

/* ---------------------------------------------------------------- the GPU heap's transport
 * src/tport's table over the GPU heap: the heap's device part has an endpoint per heap pe
 * (h->dev_eps, made with the GPU heap: duet_cuda_rma_eps_make). ep->base is pe's part as
 * mapped here (NULL: another host), ep->priv the GPU heap; offsets are from a part's start.
 * Every operation runs on the device's internal stream, so they are ordered among themselves
 * (fence has nothing to do); quiet completes them. */

/* The stream and pe's address of `off`, or why not (an injected fault, an unmapped pe). */
static duet_status_t ep_target(duet_tport_ep_t *ep, size_t off, const char *what, rma_dev_t **s, char **addr)
{
    duet_status_t st = dev_state(ep->priv, s, what);
    if (st) return st;
    int fault = atomic_load_explicit(&ep->fault, memory_order_relaxed);
    if (DUET_UNLIKELY(fault))
        return DUET_FAIL((duet_status_t)fault, RMA, "%s: the link to pe %d has failed (%s)", what, ep->pe,
                         duet_status_str((duet_status_t)fault));
    if (!ep->base)
        return DUET_FAIL(DUET_ERR_UNSUPPORTED, RMA, "%s: pe %d's GPU memory is not mapped here (another host)",
                         what, ep->pe);
    *addr = ep->base + off;
    return DUET_OK;
}

static duet_status_t put_(duet_tport_ep_t *ep, size_t off, const void *src, size_t n, int nbi)
{
    rma_dev_t *s = NULL;
    char *dst = NULL;
    duet_status_t st = ep_target(ep, off, "a put", &s, &dst);
    return st ? st : finish(s, cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, s->stream), nbi, "a put");
}
static duet_status_t gpu_put(duet_tport_ep_t *ep, size_t off, const void *src, size_t n)
{
    return put_(ep, off, src, n, 0);
}
static duet_status_t gpu_put_nbi(duet_tport_ep_t *ep, size_t off, const void *src, size_t n)
{
    return put_(ep, off, src, n, 1);
}

/* A p: the value travels in a stream memory operation (a word) or a launch's arguments, so
 * the call returns at once and completes at quiet. */
static duet_status_t gpu_put_value(duet_tport_ep_t *ep, size_t off, const void *value, size_t n)
{
    rma_dev_t *s = NULL;
    char *dst = NULL;
    duet_status_t st = ep_target(ep, off, "a p", &s, &dst);
    if (st) return st;
    const duet_cu_t *cu = (n == 4 || n == 8) && ((uintptr_t)dst & (n - 1)) == 0 ? duet_cu() : NULL;
    if (cu && cu->StreamWriteValue64) { /* lighter than a kernel */
        uint64_t v64 = 0;
        uint32_t v32 = 0;
        CUresult r = n == 8 ? (memcpy(&v64, value, 8), cu->StreamWriteValue64((CUstream)s->stream, (CUdeviceptr)dst, v64, 0))
                            : (memcpy(&v32, value, 4), cu->StreamWriteValue32((CUstream)s->stream, (CUdeviceptr)dst, v32, 0));
        if (r != CUDA_SUCCESS) return duet_cuda_fail_cu_(r, "a p on GPU memory: cuStreamWriteValue");
        return finish(s, cudaSuccess, 1, "a p");
    }
    if (n <= DUET_CUDA_K_P_MAX) return finish(s, (cudaError_t)duet_cuda_k_p(dst, value, n, s->stream), 1, "a p");
    return finish(s, cudaMemcpyAsync(dst, value, n, cudaMemcpyDefault, s->stream), 0, "a p");
}

static duet_status_t get_(duet_tport_ep_t *ep, void *dst, size_t off, size_t n, int nbi)
{
    rma_dev_t *s = NULL;
    char *src = NULL;
    duet_status_t st = ep_target(ep, off, "a get", &s, &src);
    return st ? st : finish(s, cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, s->stream), nbi, "a get");
}
static duet_status_t gpu_get(duet_tport_ep_t *ep, void *dst, size_t off, size_t n) { return get_(ep, dst, off, n, 0); }
static duet_status_t gpu_get_nbi(duet_tport_ep_t *ep, void *dst, size_t off, size_t n)
{
    return get_(ep, dst, off, n, 1);
}

/* strided (strides in elements, >= 1: a 2D copy), blocking */
static duet_status_t strided_(duet_tport_ep_t *ep, int is_put, void *local, size_t off, ptrdiff_t dst_stride,
                              ptrdiff_t src_stride, size_t nelems, size_t es)
{
    const char *what = is_put ? "a strided put" : "a strided get";
    if (dst_stride < 1 || src_stride < 1)
        return DUET_FAIL(DUET_ERR_UNSUPPORTED, RMA, "%s: strides %td and %td on GPU memory: only strides >= 1",
                         what, dst_stride, src_stride);
    rma_dev_t *s = NULL;
    char *remote;
    duet_status_t st = ep_target(ep, off, what, &s, &remote);
    if (st) return st;
    cudaError_t err = cudaMemcpy2DAsync(is_put ? remote : local, (size_t)dst_stride * es, is_put ? local : remote,
                                        (size_t)src_stride * es, es, nelems, cudaMemcpyDefault, s->stream);
    return finish(s, err, 0, what);
}
static duet_status_t gpu_iput(duet_tport_ep_t *ep, size_t off, const void *src, ptrdiff_t dst_stride,
                              ptrdiff_t src_stride, size_t nelems, size_t es)
{
    return strided_(ep, 1, (void *)(uintptr_t)src, off, dst_stride, src_stride, nelems, es);
}
static duet_status_t gpu_iget(duet_tport_ep_t *ep, void *dst, size_t off, ptrdiff_t dst_stride, ptrdiff_t src_stride,
                              size_t nelems, size_t es)
{
    return strided_(ep, 0, dst, off, dst_stride, src_stride, nelems, es);
}

/* one-thread kernel; without a fetch it completes at quiet, like a put (a signal is one) */
static duet_status_t gpu_amo(duet_tport_ep_t *ep, duet_amo_op_t op, size_t off, size_t width, uint64_t operand,
                             uint64_t cond, uint64_t *fetched)
{
    rma_dev_t *s = NULL;
    char *dst = NULL;
    duet_status_t st = ep_target(ep, off, "an atomic", &s, &dst);
    if (st) return st;
    if (!fetched)
        return finish(s, (cudaError_t)duet_cuda_k_amo(dst, (int)width, (int)op, operand, cond, NULL, s->stream), 1,
                      "an atomic");
    pthread_mutex_lock(&s->lock); /* one fetch word per device */
    cudaError_t err = (cudaError_t)duet_cuda_k_amo(dst, (int)width, (int)op, operand, cond, s->fetch_dev, s->stream);
    st = finish(s, err, 0, "an atomic");
    if (!st) *fetched = *(volatile uint64_t *)s->fetch_host;
    pthread_mutex_unlock(&s->lock);
    return st;
}

static duet_status_t gpu_fence(duet_tport_ep_t *ep)
{
    (void)ep;
    return DUET_OK; /* one stream: already in order */
}

/* The device's pending work (once for all endpoints: nothing to do when none is pending),
 * and the first failure a stream-ordered wait or barrier recorded since the last quiet. */
static duet_status_t gpu_quiet(duet_tport_ep_t *ep)
{
    int device = ((const duet_cuda_heap_t *)ep->priv)->device;
    rma_dev_t *s = device >= 0 && device < MAX_DEVICES ? atomic_load_explicit(&devs[device], memory_order_acquire)
                                                       : NULL;
    if (!s) return DUET_OK; /* no GPU-side host call yet */
    duet_status_t st = DUET_OK;
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

static void gpu_notify(duet_tport_ep_t *ep) { (void)ep; } /* host waiters on GPU words look by copies */
static void *gpu_ptr(duet_tport_ep_t *ep, size_t off) { return ep->base ? ep->base + off : NULL; }
static void gpu_inject_fault(duet_tport_ep_t *ep, duet_status_t status) { atomic_store(&ep->fault, (int)status); }

static const duet_tport_ops_t gpu_tport_ops = {
    .size = sizeof(duet_tport_ops_t),
    .name = "cuda",
    .put = gpu_put,
    .get = gpu_get,
    .put_nbi = gpu_put_nbi,
    .get_nbi = gpu_get_nbi,
    .put_value = gpu_put_value,
    .iput = gpu_iput,
    .iget = gpu_iget,
    .amo = gpu_amo,
    .fence = gpu_fence,
    .quiet = gpu_quiet,
    .notify = gpu_notify,
    .ptr = gpu_ptr,
    .inject_fault = gpu_inject_fault,
};

duet_status_t duet_cuda_rma_eps_make(duet_heap_t *h, duet_cuda_heap_t *g)
{
    duet_status_t st = duet_tport_usable(&gpu_tport_ops);
    if (st) return st;
    duet_tport_ep_t *eps = calloc((size_t)h->npes, sizeof *eps);
    if (!eps) return DUET_FAIL(DUET_ERR_NO_MEMORY, CUDA, "GPU heap: out of host memory for its endpoints");
    for (int pe = 0; pe < h->npes; pe++)
        eps[pe] = (duet_tport_ep_t){.ops = &gpu_tport_ops, .pe = pe, .base = g->peer[pe], .seg_size = g->part_bytes,
                                    .priv = g};
    h->dev_eps = eps;
    return DUET_OK;
}

void duet_cuda_rma_eps_free(duet_heap_t *h)
{
    free(h->dev_eps);
    h->dev_eps = NULL;
}

/* ---------------------------------------------------------------- stream-ordered forms
 * (each counted as a call in flight on its communicator, core/duet_comm.h: a destroy from
 * another thread waits for it) */

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

static duet_status_t duet_put_on_stream_(duet_comm_t c, void *dst, const void *src, size_t bytes, int pe, void *stream)
{
    static const char fn[] = "duet_put_on_stream";
    rma_dev_t *s = NULL;
    char *peer = NULL;
    duet_status_t st = stream_target(c, dst, bytes, pe, fn, "the destination", &s, &peer);
    if (st || !bytes) return st;
    if (!src) return duet_error_set(DUET_ERR_INVALID_ARG, "%s: the source is NULL", fn);
    return launched(cudaMemcpyAsync(peer, src, bytes, cudaMemcpyDefault, (cudaStream_t)stream), fn);
}
duet_status_t duet_put_on_stream(duet_comm_t c, void *dst, const void *src, size_t bytes, int pe, void *stream)
{
    DUET_COMM_CALL(c, "duet_put_on_stream", duet_put_on_stream_(c, dst, src, bytes, pe, stream));
}

static duet_status_t duet_get_on_stream_(duet_comm_t c, void *dst, const void *src, size_t bytes, int pe, void *stream)
{
    static const char fn[] = "duet_get_on_stream";
    rma_dev_t *s = NULL;
    char *peer = NULL;
    duet_status_t st = stream_target(c, src, bytes, pe, fn, "the source", &s, &peer);
    if (st || !bytes) return st;
    if (!dst) return duet_error_set(DUET_ERR_INVALID_ARG, "%s: the destination is NULL", fn);
    return launched(cudaMemcpyAsync(dst, peer, bytes, cudaMemcpyDefault, (cudaStream_t)stream), fn);
}
duet_status_t duet_get_on_stream(duet_comm_t c, void *dst, const void *src, size_t bytes, int pe, void *stream)
{
    DUET_COMM_CALL(c, "duet_get_on_stream", duet_get_on_stream_(c, dst, src, bytes, pe, stream));
}

static duet_status_t duet_signal_op_on_stream_(duet_comm_t c, uint64_t *sig, uint64_t value, int sig_op, int pe,
                                       void *stream)
{
    static const char fn[] = "duet_signal_op_on_stream";
    rma_dev_t *s = NULL;
    char *peer = NULL;
    duet_status_t st = stream_sig(c, sig, pe, fn, &s, &peer);
    if (st) return st;
    if (sig_op != DUET_SIGNAL_SET && sig_op != DUET_SIGNAL_ADD)
        return duet_error_set(DUET_ERR_INVALID_ARG, "%s: sig_op %d is neither DUET_SIGNAL_SET nor _ADD", fn,
                              sig_op);
    int op = sig_op == DUET_SIGNAL_ADD ? DUET_CUDA_K_ADD : DUET_CUDA_K_SET;
    return launched((cudaError_t)duet_cuda_k_amo(peer, 8, op, value, 0, NULL, stream), fn);
}
duet_status_t duet_signal_op_on_stream(duet_comm_t c, uint64_t *sig, uint64_t value, int sig_op, int pe,
                                       void *stream)
{
    DUET_COMM_CALL(c, "duet_signal_op_on_stream", duet_signal_op_on_stream_(c, sig, value, sig_op, pe, stream));
}

static duet_status_t duet_signal_wait_until_on_stream_(duet_comm_t c, uint64_t *sig, int cmp, uint64_t value,
                                                       void *stream)
{
    static const char fn[] = "duet_signal_wait_until_on_stream";
    rma_dev_t *s = NULL;
    char *peer = NULL;
    duet_device_comm_t h;
    duet_status_t st = duet_comm_check(c, fn); /* before c->rank */
    if (!st) st = stream_sig(c, sig, c->rank, fn, &s, &peer);
    if (st) return st;
    if (cmp < DUET_CMP_EQ || cmp > DUET_CMP_LE)
        return duet_error_set(DUET_ERR_INVALID_ARG, "%s: comparison %d is not a DUET_CMP_* value", fn, cmp);
    if ((st = duet_device_comm_get(c, &h))) return st;
    return launched((cudaError_t)duet_cuda_k_wait(h, sig, cmp, value, s->err_dev, stream), fn);
}
duet_status_t duet_signal_wait_until_on_stream(duet_comm_t c, uint64_t *sig, int cmp, uint64_t value, void *stream)
{
    DUET_COMM_CALL(c, "duet_signal_wait_until_on_stream",
                   duet_signal_wait_until_on_stream_(c, sig, cmp, value, stream));
}

static duet_status_t duet_barrier_on_stream_(duet_comm_t c, void *stream)
{
    static const char fn[] = "duet_barrier_on_stream";
    rma_dev_t *s = NULL;
    duet_device_comm_t h;
    duet_status_t st = stream_check(c, fn, &s);
    if (!st) st = duet_device_comm_get(c, &h);
    if (st) return st;
    return launched((cudaError_t)duet_cuda_k_barrier(h, s->err_dev, stream), fn);
}
duet_status_t duet_barrier_on_stream(duet_comm_t c, void *stream)
{
    DUET_COMM_CALL(c, "duet_barrier_on_stream", duet_barrier_on_stream_(c, stream));
}

static duet_status_t duet_quiet_on_stream_(duet_comm_t c, void *stream)
{
    static const char fn[] = "duet_quiet_on_stream";
    rma_dev_t *s = NULL;
    duet_status_t st = stream_check(c, fn, &s);
    if (st) return st;
    enum cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    cudaError_t cerr = cudaStreamIsCapturing((cudaStream_t)stream, &cap);
    if (cerr != cudaSuccess || cap != cudaStreamCaptureStatusNone) {
        (void)cudaGetLastError();
        return duet_error_set(DUET_ERR_UNSUPPORTED, "%s: cannot be captured into a CUDA graph (it waits for the host "
                              "operations pending when it is called, not when the graph runs): call duet_quiet "
                              "before launching the graph", fn);
    }
    if (!atomic_load_explicit(&s->pending, memory_order_acquire)) return DUET_OK;
    pthread_mutex_lock(&s->lock);
    cudaError_t err = cudaEventRecord(s->ev, s->stream);
    if (err == cudaSuccess) err = cudaStreamWaitEvent((cudaStream_t)stream, s->ev, 0);
    pthread_mutex_unlock(&s->lock);
    return launched(err, fn);
}
duet_status_t duet_quiet_on_stream(duet_comm_t c, void *stream)
{
    DUET_COMM_CALL(c, "duet_quiet_on_stream", duet_quiet_on_stream_(c, stream));
}

static duet_status_t duet_launch_collective_(duet_comm_t c, const void *func, duet_dim3_t grid, duet_dim3_t block,
                                     void **args, size_t shmem, void *stream)
{
    static const char fn[] = "duet_launch_collective";
    rma_dev_t *s = NULL;
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
duet_status_t duet_launch_collective(duet_comm_t c, const void *func, duet_dim3_t grid, duet_dim3_t block,
                                     void **args, size_t shmem, void *stream)
{
    DUET_COMM_CALL(c, "duet_launch_collective", duet_launch_collective_(c, func, grid, block, args, shmem, stream));
}
