/*
 * duet_cuda_exec.cu — the GPU schedule executor: one rank's schedule (ring, tree, double
 * binary tree, ... — the builders of src/coll) run by a kernel, messages going through the
 * receiver's inbox in the symmetric heap with flag handshakes (layout and slicing in
 * duet_cuda_exec_kern.h; host side in duet_cuda_exec.c).
 *
 * Each CUDA block is a channel. Thread 0 picks the next step the way the host executor does
 * (src/coll/duet_coll_exec.c): the head of every peer's send queue and receive queue, and any
 * pending copy or reduction, may run once its dependency is done and — for a send — the
 * receiver has a free slot, or — for a receive — the message has been posted. The whole block
 * then moves the channel's slice of the step, and thread 0 publishes it:
 *
 *   send to q        copy the slice into q's inbox slot (sent % K); release posted on q
 *   receive from p   wait posted > recvd; copy / reduce out of my slot; release freed on p
 *
 * A flag is released by thread 0 after a block barrier and a system-scope fence, so the
 * block's data stores are visible to the peer that acquires it; the peer's acquire is
 * followed by a block barrier before its threads touch the data.
 *
 * Channels run the same steps on different slices, but a schedule's dependency is about whole
 * steps (a forwarded chunk may be sliced differently from its arrival when the sizes differ),
 * so with several channels a step waits until its dependency and its queue predecessor are
 * done on every channel (a per-step counter each channel increments); the order between the
 * host executor's steps is thus kept at every channel. The last channel to leave zeroes the
 * counters for the next call (which the stream runs after this one).
 *
 * Call signatures (duet_cuda_sig_kern.h): a collective's kernel first writes its word into its
 * own line; a send writes it into the slot's last 8 bytes too (before the posted flag), and a
 * receive compares it with its own before it releases the slot (a send / receive schedule
 * carries 0): a message of another call is a mismatch, never data.
 *
 * Every wait polls the communicator's abort word, the peers' lines for this call (read where
 * they lie; another hash: a mismatch) and the deadline; on any of them the channel stops and
 * stores the status into the mapped host record a.fail (the communicator's GPU collectives
 * then refuse to run: its counters are out of step).
 */
#include <cuda_runtime.h>
#include "duet/duet_device.cuh"
#include "cuda/duet_cuda_exec_kern.h"
#include "cuda/duet_cuda_reduce.cuh"
#include "cuda/duet_cuda_sig.cuh"

namespace {

using namespace duet_dev_detail;
using namespace duet_cuda_reduce;
constexpr int K = DUET_CUDA_EXEC_SLOTS;
constexpr size_t SLOT = DUET_CUDA_EXEC_SLOT;
#ifndef DUET_EXEC_FENCE
#define DUET_EXEC_FENCE 1
#endif
#ifndef DUET_EXEC_COPY_UNROLL
#define DUET_EXEC_COPY_UNROLL 8
#endif
#ifndef DUET_EXEC_REDUCE_UNROLL
#define DUET_EXEC_REDUCE_UNROLL 4
#endif
constexpr int COPY_UNROLL = DUET_EXEC_COPY_UNROLL;     /* 16-byte loads in flight per thread */
constexpr int REDUCE_UNROLL = DUET_EXEC_REDUCE_UNROLL; /* pairs of them */

__device__ __forceinline__ size_t part(size_t count, size_t parts, size_t i)
{
    size_t q = count / parts, r = count % parts;
    return i * q + (i < r ? i : r);
}

/* Channel ch's slice of a step of `bytes`: whole 16-byte units, the remainder to the last. */
__device__ __forceinline__ void slice(size_t bytes, int nchan, int ch, size_t *lo, size_t *len)
{
    size_t units = bytes / 16;
    size_t a = part(units, (size_t)nchan, (size_t)ch) * 16, b = part(units, (size_t)nchan, (size_t)ch + 1) * 16;
    if (ch == nchan - 1) b = bytes;
    *lo = a;
    *len = b - a;
}

/* dst <- src, bytes, by the whole block: 16-byte moves where both are congruent mod 16,
 * 4-byte where mod 4, bytes otherwise. */
__device__ void block_copy(char *dst, const char *src, size_t bytes)
{
    const size_t t = threadIdx.x, nt = blockDim.x;
    size_t mis = (uintptr_t)dst ^ (uintptr_t)src;
    size_t unit = (mis & 15) == 0 ? 16 : (mis & 3) == 0 ? 4 : 1;
    size_t head = unit == 1 ? 0 : ((unit - ((uintptr_t)dst & (unit - 1))) & (unit - 1));
    if (head > bytes) head = bytes;
    for (size_t i = t; i < head; i += nt) dst[i] = src[i];
    size_t body = (bytes - head) / unit * unit;
    char *d = dst + head;
    const char *s = src + head;
    if (unit == 16) {
        uint4 *d4 = (uint4 *)(void *)d;
        const uint4 *s4 = (const uint4 *)(const void *)s;
        size_t n = body / 16, i = t;
        constexpr int U = COPY_UNROLL; /* loads in flight per thread */
        for (; i + (U - 1) * nt < n; i += U * nt) {
            uint4 v[U];
#pragma unroll
            for (int u = 0; u < U; u++) v[u] = s4[i + u * nt];
#pragma unroll
            for (int u = 0; u < U; u++) d4[i + u * nt] = v[u];
        }
        for (; i < n; i += nt) d4[i] = s4[i];
    } else if (unit == 4) {
        uint32_t *d4 = (uint32_t *)(void *)d;
        const uint32_t *s4 = (const uint32_t *)(const void *)s;
        for (size_t i = t; i < body / 4; i += nt) d4[i] = s4[i];
    } else {
        for (size_t i = t; i < body; i += nt) d[i] = s[i];
    }
    for (size_t i = head + body + t; i < bytes; i += nt) dst[i] = src[i];
}

/* dst <- x (op) y, count elements of T, by the whole block; 16 bytes at a time where all three
 * are 16-byte aligned. */
template <typename T, int OP> __device__ void reduce_loop(T *dst, const T *x, const T *y, size_t count)
{
    using A = typename acc_<T>::A;
    const size_t t = threadIdx.x, nt = blockDim.x;
    size_t done = 0;
    if ((((uintptr_t)dst | (uintptr_t)x | (uintptr_t)y) & 15) == 0) {
        constexpr int V = 16 / sizeof(T), U = REDUCE_UNROLL;
        const uint4 *x4 = (const uint4 *)(const void *)x, *y4 = (const uint4 *)(const void *)y;
        uint4 *d4 = (uint4 *)(void *)dst;
        size_t packs = count / V, i = t;
        auto one = [&](uint4 a, uint4 b) {
            uint4 r;
            const T *ta = (const T *)(const void *)&a, *tb = (const T *)(const void *)&b;
            T *tr = (T *)(void *)&r;
#pragma unroll
            for (int v = 0; v < V; v++) tr[v] = narrow<T, A>(combine<OP, A>(widen<T>(ta[v]), widen<T>(tb[v])));
            return r;
        };
        for (; i + (U - 1) * nt < packs; i += U * nt) {
            uint4 a[U], b[U];
#pragma unroll
            for (int u = 0; u < U; u++) a[u] = x4[i + u * nt], b[u] = y4[i + u * nt];
#pragma unroll
            for (int u = 0; u < U; u++) d4[i + u * nt] = one(a[u], b[u]);
        }
        for (; i < packs; i += nt) d4[i] = one(x4[i], y4[i]);
        done = packs * V;
    }
    for (size_t i = done + t; i < count; i += nt) dst[i] = narrow<T, A>(combine<OP, A>(widen<T>(x[i]), widen<T>(y[i])));
}

template <typename T>
__device__ void reduce_op(int op, void *dst, const void *x, const void *y, size_t count)
{
    T *d = (T *)dst;
    const T *a = (const T *)x, *b = (const T *)y;
    switch (op) {
    case DUET_PROD: reduce_loop<T, DUET_PROD>(d, a, b, count); break;
    case DUET_MIN: reduce_loop<T, DUET_MIN>(d, a, b, count); break;
    case DUET_MAX: reduce_loop<T, DUET_MAX>(d, a, b, count); break;
    default: reduce_loop<T, DUET_SUM>(d, a, b, count); break;
    }
}

/* dst <- x (op) y on the compute types (fp16 / bf16 never reach the executor). */
__device__ void block_reduce(int dt, int op, void *dst, const void *x, const void *y, size_t bytes)
{
    switch (dt) {
    case DUET_INT8: reduce_op<int8_t>(op, dst, x, y, bytes); break;
    case DUET_UINT8: reduce_op<uint8_t>(op, dst, x, y, bytes); break;
    case DUET_INT32: reduce_op<int32_t>(op, dst, x, y, bytes / 4); break;
    case DUET_UINT32: reduce_op<uint32_t>(op, dst, x, y, bytes / 4); break;
    case DUET_INT64: reduce_op<int64_t>(op, dst, x, y, bytes / 8); break;
    case DUET_UINT64: reduce_op<uint64_t>(op, dst, x, y, bytes / 8); break;
    case DUET_FLOAT32: reduce_op<float>(op, dst, x, y, bytes / 4); break;
    case DUET_FLOAT64: reduce_op<double>(op, dst, x, y, bytes / 8); break;
    default: break;
    }
}

/* The block's shared state (dynamic shared memory, duet_cuda_exec_shared_bytes). */
struct chan_t {
    uint64_t *sent, *recvd;  /* n each: my message counts on this channel */
    int32_t *head, *qprev;   /* 2n each: queue heads, and the step each queue ran last (-1) */
    int32_t *pend;           /* local steps not yet run (unordered) */
    uint32_t *done;          /* bit per step: done (one channel), done on every channel (several) */
};

__device__ __forceinline__ bool bit(const uint32_t *bits, int i) { return (bits[i >> 5] >> (i & 31)) & 1u; }

/* Warp 0: is step i done — on every channel when there are several? */
__device__ bool step_done(const duet_cuda_exec_args_t &a, chan_t &s, int i)
{
    if (i < 0 || bit(s.done, i)) return true;
    if (a.nchan == 1) return false;
    if (ld_acquire_u32(a.stepdone + i) < (uint32_t)a.nchan) return false;
    atomicOr(&s.done[i >> 5], 1u << (i & 31)); /* several lanes may learn at once */
    return true;
}

/* Warp 0: may message step i (a queue head) run now? */
__device__ bool message_ready(const duet_cuda_exec_args_t &a, chan_t &s, const duet_cuda_step_t &st,
                              const uint64_t *posted, const uint64_t *freed, int ch)
{
    size_t lo, len;
    slice(st.bytes, a.nchan, ch, &lo, &len);
    if (len == 0) return true; /* both sides skip an empty slice */
    int q = st.peer;
    if (st.kind == DUET_CUDA_STEP_SEND) return s.sent[q] - ld_acquire_u64(freed + q) < (uint64_t)K;
    return ld_acquire_u64(posted + q) > s.recvd[q];
}

__global__ void __launch_bounds__(DUET_CUDA_EXEC_THREADS) exec_kernel(duet_cuda_exec_args_t a)
{
    extern __shared__ __align__(16) char smem[];
    __shared__ int pick[2], st, npend, remaining, last;
    const int n = a.h.n_pes, me = a.h.my_pe, ch = (int)blockIdx.x, C = a.nchan, tid = (int)threadIdx.x;
    const size_t cn = (size_t)ch * (size_t)n, mcn = (size_t)a.maxchan * (size_t)n;
    uint64_t *words = (uint64_t *)(void *)a.scratch;
    uint64_t *posted = words + cn, *freed = words + mcn + cn, *mysent = words + 2 * mcn + cn,
             *myrecvd = words + 3 * mcn + cn;
    char *inbox = a.scratch + duet_cuda_exec_counter_bytes(n, a.maxchan);
    chan_t s;
    s.sent = (uint64_t *)(void *)smem;
    s.recvd = s.sent + n;
    s.head = (int32_t *)(void *)(s.recvd + n);
    s.qprev = s.head + 2 * n;
    s.pend = s.qprev + 2 * n;
    s.done = (uint32_t *)(void *)(s.pend + a.nlocal);
    for (int i = tid; i < n; i += (int)blockDim.x) s.sent[i] = mysent[i], s.recvd[i] = myrecvd[i];
    for (int i = tid; i < 2 * n; i += (int)blockDim.x) s.head[i] = a.heads[i], s.qprev[i] = -1;
    for (int i = tid; i < a.nlocal; i += (int)blockDim.x) s.pend[i] = a.locals[i];
    for (int i = tid; i < (a.nsteps + 31) / 32; i += (int)blockDim.x) s.done[i] = 0;
    if (tid == 0) st = 0, npend = a.nlocal, remaining = a.nsteps, last = 0;
    duet_cuda_sig::publish(a.sigline, a.sig); /* before any flag of mine (thread 0 releases them) */
    __syncthreads();

    unsigned polls = 0;
    uint64_t start = 0;
    for (int it = 0, rot = 0;; it++) {
        if (tid < 32) { /* warp 0 decides: one lane per queue head, then per pending local step */
            __syncwarp(); /* thread 0's bookkeeping of the last step is visible to the other lanes */
            int p = remaining == 0 ? -2 : -1;
            for (int base = 0; p == -1 && base < 2 * n; base += 32) {
                int k = base + tid, i = -1;
                bool ok = false;
                if (k < 2 * n) {
                    int q = (rot + k) % (2 * n);
                    i = s.head[q];
                    if (i >= 0) {
                        const duet_cuda_step_t &stp = a.steps[i];
                        ok = step_done(a, s, stp.dep) && (C == 1 || step_done(a, s, s.qprev[q])) &&
                             message_ready(a, s, stp, posted, freed, ch);
                    }
                }
                unsigned m = __ballot_sync(0xffffffffu, ok);
                if (m) p = __shfl_sync(0xffffffffu, i, __ffs(m) - 1);
            }
            int took = -1; /* the pending local step taken, by position */
            for (int base = 0; p == -1 && base < npend; base += 32) {
                int j = base + tid;
                bool ok = j < npend && step_done(a, s, a.steps[s.pend[j]].dep);
                unsigned m = __ballot_sync(0xffffffffu, ok);
                if (m) {
                    took = base + __ffs(m) - 1;
                    p = s.pend[took];
                }
            }
            if (tid == 0) {
                if (took >= 0) s.pend[took] = s.pend[--npend]; /* unordered: the last fills the hole */
                rot++;
                if (p != -1) {
                    polls = 0, start = 0;
                } else if ((++polls & (ABORT_EVERY - 1)) == 0) {
                    int why = abort_status(a.h);
                    for (int q = 0; !why && a.sig && q < n; q++) { /* a peer in this call, with other arguments */
                        uint64_t w = q == me ? a.sig : duet_cuda_sig::theirs(a.h, a.sigline, q, a.sig);
                        if (duet_cuda_sig::differs(w, a.sig)) why = duet_cuda_sig::report(a.fail, q, a.sig, w);
                    }
                    uint64_t tn = now_ns();
                    if (!start) start = tn;
                    else if (!why && a.timeout_ns > 0 && tn - start > (uint64_t)a.timeout_ns) why = DUET_ERR_TIMEOUT;
                    if (why) {
                        st = why;
                        atomicCAS(&a.fail->status, 0, why);
                    }
                }
                pick[it & 1] = p;
            }
        }
        __syncthreads();
        const int i = pick[it & 1];
        if (st || i == -2) break;
        if (i == -1) continue;

        const duet_cuda_step_t stp = a.steps[i];
        size_t lo, len;
        slice(stp.bytes, C, ch, &lo, &len);
        const char *src = a.buf[stp.src_buf] + stp.src_off + lo;
        char *dst = a.buf[stp.dst_buf] + stp.dst_off + lo;
        const int q = stp.peer;
        uint64_t word = 0; /* a received message's call word (thread 0), read before the data moves */
        if (len) {
            switch (stp.kind) {
            case DUET_CUDA_STEP_COPY:
                if (src != dst) block_copy(dst, src, len);
                break;
            case DUET_CUDA_STEP_REDUCE: block_reduce(a.dt, a.op, dst, dst, src, len); break;
            case DUET_CUDA_STEP_SEND: {
                char *slot = inbox + (((size_t)ch * (size_t)n + (size_t)me) * K + (size_t)(s.sent[q] % K)) * SLOT;
                block_copy(duet_dev_ptr(a.h, slot, q), src, len);
                break;
            }
            default: {
                const char *slot = inbox + ((cn + (size_t)q) * K + (size_t)(s.recvd[q] % K)) * SLOT;
                if (tid == 0) word = ld_relaxed_u64(slot + SLOT - 8);
                if (stp.kind == DUET_CUDA_STEP_RECV) block_copy(dst, slot, len);
                else block_reduce(a.dt, a.op, dst, src, slot, len);
                break;
            }
            }
        }
        __syncthreads();
        if (tid == 0) {
            bool message = stp.kind >= DUET_CUDA_STEP_SEND;
            if (message && len && stp.kind != DUET_CUDA_STEP_SEND && word != a.sig) {
                st = duet_cuda_sig::report(a.fail, q, a.sig, word); /* another call's message: not this one's */
            } else if (message && len) {
                if (stp.kind == DUET_CUDA_STEP_SEND) { /* my word after the data, before the flag */
                    char *slot = inbox + (((size_t)ch * (size_t)n + (size_t)me) * K + (size_t)(s.sent[q] % K)) * SLOT;
                    st_relaxed_u64(duet_dev_ptr(a.h, slot + SLOT - 8, q), a.sig);
                }
#if DUET_EXEC_FENCE
                fence_acq_rel_sys(); /* the block's stores (or loads) before the flag */
#endif
                if (stp.kind == DUET_CUDA_STEP_SEND) st_release_u64(duet_dev_ptr(a.h, posted + me, q), ++s.sent[q]);
                else st_release_u64(duet_dev_ptr(a.h, freed + me, q), ++s.recvd[q]);
            }
            if (message) {
                int qi = 2 * q + (stp.kind != DUET_CUDA_STEP_SEND);
                s.head[qi] = stp.next;
                s.qprev[qi] = i;
            }
            if (C == 1) {
                s.done[i >> 5] |= 1u << (i & 31);
            } else {
                __threadfence(); /* the block's stores before the count other channels acquire */
                atomicAdd(a.stepdone + i, 1u);
            }
            remaining--;
        }
    }
    if (st) return; /* the communicator's GPU collectives stop here (a.fail is set) */
    for (int j = tid; j < n; j += (int)blockDim.x) mysent[j] = s.sent[j], myrecvd[j] = s.recvd[j];
    if (C == 1) return;
    if (tid == 0) { /* the last channel out makes the counters ready for the next call */
        __threadfence();
        last = atomicAdd(a.leaving, 1u) == (unsigned)C - 1;
    }
    __syncthreads();
    if (!last) return;
    for (int j = tid; j < a.nsteps; j += (int)blockDim.x) a.stepdone[j] = 0;
    if (tid == 0) *a.leaving = 0;
}

/* fp16 / bf16 -> fp32 */
template <typename T> __global__ void widen_kernel(duet_cuda_conv_args_t a)
{
    const T *in = (const T *)a.in;
    float *out = (float *)a.out;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < a.count; i += (size_t)gridDim.x * blockDim.x)
        out[i] = widen<T>(in[i]);
}

/* fp32 -> T (fp16 / bf16), dividing by a.divide first when it is set */
template <typename T> __global__ void narrow_kernel(duet_cuda_conv_args_t a)
{
    const float *in = (const float *)a.in;
    T *out = (T *)a.out;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < a.count; i += (size_t)gridDim.x * blockDim.x)
        out[i] = narrow<T, float>(a.divide > 0 ? in[i] / (float)a.divide : in[i]);
}

/* avg of T in place: integers divide after wrapping (truncating toward 0), floats divide */
template <typename T> __global__ void divide_kernel(duet_cuda_conv_args_t a)
{
    T *out = (T *)a.out;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < a.count; i += (size_t)gridDim.x * blockDim.x)
        out[i] = (T)(out[i] / (T)a.divide);
}

unsigned grid_for(size_t count)
{
    size_t blocks = (count + 255) / 256;
    return (unsigned)(blocks < 1 ? 1 : blocks > 1024 ? 1024 : blocks);
}

} // namespace

extern "C" int duet_cuda_exec_load(void)
{
    const void *k[] = {(const void *)exec_kernel, (const void *)widen_kernel<__half>,
                       (const void *)widen_kernel<__nv_bfloat16>, (const void *)narrow_kernel<__half>,
                       (const void *)narrow_kernel<__nv_bfloat16>, (const void *)divide_kernel<int8_t>,
                       (const void *)divide_kernel<uint8_t>, (const void *)divide_kernel<int32_t>,
                       (const void *)divide_kernel<uint32_t>, (const void *)divide_kernel<int64_t>,
                       (const void *)divide_kernel<uint64_t>, (const void *)divide_kernel<float>,
                       (const void *)divide_kernel<double>};
    cudaError_t first = cudaSuccess;
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        cudaFuncAttributes at;
        cudaError_t err = cudaFuncGetAttributes(&at, k[i]);
        if (err != cudaSuccess && first == cudaSuccess) first = err;
    }
    return (int)first;
}

extern "C" int duet_cuda_exec_launch(const duet_cuda_exec_args_t *a, size_t shared, void *stream)
{
    if (a->nchan < 1 || a->nchan > a->maxchan || shared > DUET_CUDA_EXEC_SHARED_MAX) return (int)cudaErrorInvalidValue;
    exec_kernel<<<a->nchan, DUET_CUDA_EXEC_THREADS, shared, (cudaStream_t)stream>>>(*a);
    return (int)cudaGetLastError();
}

extern "C" int duet_cuda_widen_launch(const duet_cuda_conv_args_t *a, void *stream)
{
    if (a->count == 0) return (int)cudaSuccess;
    cudaStream_t s = (cudaStream_t)stream;
    if (a->dt == DUET_FLOAT16) widen_kernel<__half><<<grid_for(a->count), 256, 0, s>>>(*a);
    else if (a->dt == DUET_BFLOAT16) widen_kernel<__nv_bfloat16><<<grid_for(a->count), 256, 0, s>>>(*a);
    else return (int)cudaErrorInvalidValue;
    return (int)cudaGetLastError();
}

extern "C" int duet_cuda_finish_launch(const duet_cuda_conv_args_t *a, void *stream)
{
    if (a->count == 0) return (int)cudaSuccess;
    cudaStream_t s = (cudaStream_t)stream;
    unsigned g = grid_for(a->count);
    switch (a->dt) {
    case DUET_FLOAT16: narrow_kernel<__half><<<g, 256, 0, s>>>(*a); break;
    case DUET_BFLOAT16: narrow_kernel<__nv_bfloat16><<<g, 256, 0, s>>>(*a); break;
    case DUET_INT8: divide_kernel<int8_t><<<g, 256, 0, s>>>(*a); break;
    case DUET_UINT8: divide_kernel<uint8_t><<<g, 256, 0, s>>>(*a); break;
    case DUET_INT32: divide_kernel<int32_t><<<g, 256, 0, s>>>(*a); break;
    case DUET_UINT32: divide_kernel<uint32_t><<<g, 256, 0, s>>>(*a); break;
    case DUET_INT64: divide_kernel<int64_t><<<g, 256, 0, s>>>(*a); break;
    case DUET_UINT64: divide_kernel<uint64_t><<<g, 256, 0, s>>>(*a); break;
    case DUET_FLOAT32: divide_kernel<float><<<g, 256, 0, s>>>(*a); break;
    case DUET_FLOAT64: divide_kernel<double><<<g, 256, 0, s>>>(*a); break;
    default: return (int)cudaErrorInvalidValue;
    }
    return (int)cudaGetLastError();
}
