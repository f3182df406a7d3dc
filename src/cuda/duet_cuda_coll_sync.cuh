/*
 * duet_cuda_coll_sync.cuh — what the flag-synchronised allreduce kernels (one-shot and
 * two-shot in duet_cuda_coll.cu, the direct kernels in duet_cuda_direct.cu) share: waiting for
 * and signalling the peers' flag words of the scratch (layout in duet_cuda_coll_kern.h), the
 * end-of-call counter, a block's copy and reduction of a range (16-byte packs, several in
 * flight per thread), and the choice of a kernel instance by datatype and reduction.
 * Inside src/cuda only; included by .cu files, each in its own anonymous namespace.
 */
#ifndef DUET_CUDA_COLL_SYNC_CUH
#define DUET_CUDA_COLL_SYNC_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "duet/duet_device.cuh"
#include "cuda/duet_cuda_coll_kern.h"
#include "cuda/duet_cuda_reduce.cuh"
#include "cuda/duet_cuda_sig.cuh"

namespace duet_cuda_sync {

using namespace duet_dev_detail;

/* Pe t's ready flag v, seen by a wait for epoch e, against my call (thread t): a flag of e
 * must carry my word's tag; a flag of a later epoch cannot tell, and pe t's line (written
 * before any of its flags) must then hold my word (duet_cuda_sig_kern.h). A mismatch is
 * recorded (with the word of pe t's line) and its status returned; else 0. */
__device__ inline int judge_ready(const duet_cuda_coll_args_t &a, int t, uint64_t v, uint64_t e)
{
    if (!a.sig || (v >> 16 == e && (v & 0xffff) == duet_cuda_sig_tag(a.sig))) return 0;
    const uint64_t *lines = (const uint64_t *)(const void *)(a.scratch + duet_cuda_coll_sig_off(a.h.n_pes));
    uint64_t w = duet_cuda_sig::theirs(a.h, lines, t, a.sig);
    if (v >> 16 != e && !duet_cuda_sig::not_mine(w, a.sig)) return 0;
    return duet_cuda_sig::report(a.fail, t, a.sig, w);
}

/* Threads t < n, t != me, wait until flags[t * stride] >= target; the block learns the
 * outcome (0, or the status that stopped it: the abort word, the deadline, or a mismatch of
 * call signatures). While waiting, every ABORT_EVERY polls, each looks at pe t's line for my
 * call (another hash there: a mismatch). With `ready`, the flags are ready flags and target
 * is e << 16: each flag seen is judged against my call (judge_ready). Contains __syncthreads. */
__device__ inline int wait_peers(const duet_cuda_coll_args_t &a, const uint64_t *flags, int stride, uint64_t target,
                                 int *shared_st, bool ready = false)
{
    const int n = a.h.n_pes, me = a.h.my_pe, t = (int)threadIdx.x;
    if (t < n && t != me) {
        const uint64_t *f = flags + (size_t)t * (size_t)stride;
        uint64_t start = 0, v;
        int st = 0;
        for (unsigned polls = 0; (v = ld_acquire_u64(f)) < target; polls++) {
            if ((polls & (ABORT_EVERY - 1)) != ABORT_EVERY - 1) continue;
            st = abort_status(a.h);
            if (!st) {
                const uint64_t *lines = (const uint64_t *)(const void *)(a.scratch + duet_cuda_coll_sig_off(n));
                uint64_t w = duet_cuda_sig::theirs(a.h, lines, t, a.sig);
                if (duet_cuda_sig::differs(w, a.sig)) st = duet_cuda_sig::report(a.fail, t, a.sig, w);
            }
            if (!st && a.timeout_ns > 0) {
                uint64_t tn = duet_cuda_reduce::now_ns();
                if (!start) start = tn;
                else if (tn - start > (uint64_t)a.timeout_ns) st = DUET_ERR_TIMEOUT;
            }
            if (st || *(volatile int *)shared_st) break;
        }
        if (!st && ready && v >= target) st = judge_ready(a, t, v, target >> 16);
        if (st) atomicCAS(shared_st, 0, st);
    }
    __syncthreads();
    int st = *(volatile int *)shared_st;
    if (st && threadIdx.x == 0) atomicCAS(&a.fail->status, 0, st);
    return st;
}

/* Ready flags (ready1, ready2: duet_cuda_coll_kern.h) carry the epoch and the call's tag
 * (duet_cuda_sig_flag). Threads t < n, t != me, wait for pe t's flag of epoch e or later in
 * flags[t * DUET_CUDA_COLL_MAX_BLOCKS] and judge it against my call, as wait_peers. */
__device__ inline int wait_ready(const duet_cuda_coll_args_t &a, const uint64_t *flags, uint64_t e, int *shared_st)
{
    return wait_peers(a, flags, DUET_CUDA_COLL_MAX_BLOCKS, e << 16, shared_st, true);
}

/* Thread 0: my call's word into my line (before any flag). */
__device__ __forceinline__ void publish_call(const duet_cuda_coll_args_t &a)
{
    duet_cuda_sig::publish((uint64_t *)(void *)(a.scratch + duet_cuda_coll_sig_off(a.h.n_pes)), a.sig);
}

/* Threads t < n, t != me, release value into `flag` (an address in my scratch) on pe t. */
__device__ __forceinline__ void signal_peers(const duet_cuda_coll_args_t &a, uint64_t *flag, uint64_t value)
{
    const int n = a.h.n_pes, me = a.h.my_pe, t = (int)threadIdx.x;
    if (t < n && t != me) st_release_u64(duet_dev_ptr(a.h, flag, t), value);
}

/* Threads t < n, t != me, release my ready flag of epoch e (an address in my scratch) on pe t. */
__device__ __forceinline__ void signal_ready(const duet_cuda_coll_args_t &a, uint64_t *flag, uint64_t e)
{
    signal_peers(a, flag, duet_cuda_sig_flag(e, a.sig));
}

/* The epoch of the call now starting: one more than my finished calls (the scratch's epoch
 * word, duet_cuda_coll_kern.h). Every block reads it before it reaches last_block, and the
 * word changes only after every block has (call_done), so all blocks see the same. */
__device__ __forceinline__ uint64_t call_epoch(const duet_cuda_coll_args_t &a)
{
    return *(volatile const uint64_t *)(const void *)(a.scratch + duet_cuda_coll_epoch_off(a.h.n_pes)) + 1;
}

/* 1 in every thread of the last of the call's blocks to get here (the block counter counts
 * this call's finished blocks), after all the block's memory accesses, and those of the
 * blocks before it, are ordered before what follows. */
__device__ inline int last_block(const duet_cuda_coll_args_t &a, uint64_t *counter, int *shared_last)
{
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence_system();
        unsigned long long old = atomicAdd((unsigned long long *)counter, 1ull);
        __threadfence_system();
        *shared_last = old == (uint64_t)a.nblocks - 1;
    }
    __syncthreads();
    return *shared_last;
}

/* Thread 0 of the last block, when the call is over: the counter back to 0 for the next
 * call, and the call's epoch stored (the next call, later on the stream, reads it). */
__device__ __forceinline__ void call_done(const duet_cuda_coll_args_t &a, uint64_t *counter, uint64_t e)
{
    if (threadIdx.x != 0) return;
    *(volatile uint64_t *)counter = 0;
    *(volatile uint64_t *)(void *)(a.scratch + duet_cuda_coll_epoch_off(a.h.n_pes)) = e;
}

/* ---- moving data: 16-byte packs where both sides are aligned, element by element else */
using duet_cuda_reduce::acc_;
using duet_cuda_reduce::combine;
using duet_cuda_reduce::finish;
using duet_cuda_reduce::widen;

/* Packs of 16 bytes: V elements each; U packs per thread per round, so that U x V
 * accumulators stay within 64 bytes of registers. */
template <typename T> struct pack_ {
    using A = typename acc_<T>::A;
    static constexpr int V = 16 / (int)sizeof(T);
    static constexpr int U = 64 / (V * (int)sizeof(A)) > 0 ? 64 / (V * (int)sizeof(A)) : 1;
};

/* 1 when p is 16-byte aligned (packs may be used from there). */
__device__ __forceinline__ bool al16(const void *p) { return (uintptr_t)p % 16 == 0; }

/* dst[i] = reduction over q of src[q][off + i], for i in [lo, hi); lo a multiple of V when
 * vec (dst and every src[q] + off 16-byte aligned). */
template <typename T, int OP>
__device__ void reduce_range(T *dst, const T *const *src, int n, size_t off, size_t lo, size_t hi, bool vec)
{
    using A = typename acc_<T>::A;
    constexpr int V = pack_<T>::V, U = pack_<T>::U;
    size_t vend = vec ? lo + (hi - lo) / V * V : lo;
    const size_t stride = (size_t)blockDim.x * V;
    for (size_t base = lo + (size_t)threadIdx.x * V; base < vend; base += stride * U) {
        A acc[U][V];
        for (int q = 0; q < n; q++) {
            uint4 pk[U];
#pragma unroll
            for (int u = 0; u < U; u++)
                if (base + u * stride < vend) pk[u] = *(const uint4 *)(const void *)(src[q] + off + base + u * stride);
#pragma unroll
            for (int u = 0; u < U; u++) {
                const T *t = (const T *)(const void *)&pk[u];
#pragma unroll
                for (int j = 0; j < V; j++) acc[u][j] = q == 0 ? widen<T>(t[j]) : combine<OP, A>(acc[u][j], widen<T>(t[j]));
            }
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            if (base + u * stride >= vend) continue;
            uint4 out;
            T *o = (T *)(void *)&out;
#pragma unroll
            for (int j = 0; j < V; j++) o[j] = finish<T, OP, A>(acc[u][j], n);
            *(uint4 *)(void *)(dst + base + u * stride) = out;
        }
    }
    for (size_t i = vend + threadIdx.x; i < hi; i += blockDim.x) {
        A acc = widen<T>(src[0][off + i]);
        for (int q = 1; q < n; q++) acc = combine<OP, A>(acc, widen<T>(src[q][off + i]));
        dst[i] = finish<T, OP, A>(acc, n);
    }
}

/* dst[i] = src[i] for i in [lo, hi); lo a multiple of V when vec. */
template <typename T> __device__ void copy_range(T *dst, const T *src, size_t lo, size_t hi, bool vec)
{
    constexpr int V = pack_<T>::V, U = 4;
    size_t vend = vec ? lo + (hi - lo) / V * V : lo;
    const size_t stride = (size_t)blockDim.x * V;
    for (size_t base = lo + (size_t)threadIdx.x * V; base < vend; base += stride * U) {
        uint4 pk[U];
#pragma unroll
        for (int u = 0; u < U; u++)
            if (base + u * stride < vend) pk[u] = *(const uint4 *)(const void *)(src + base + u * stride);
#pragma unroll
        for (int u = 0; u < U; u++)
            if (base + u * stride < vend) *(uint4 *)(void *)(dst + base + u * stride) = pk[u];
    }
    for (size_t i = vend + threadIdx.x; i < hi; i += blockDim.x) dst[i] = src[i];
}

/* Elements per part when `count` is cut into `parts` parts (the last may be shorter), rounded
 * up to whole packs of v elements. */
__device__ __forceinline__ size_t part_elems(size_t count, size_t parts, size_t v)
{
    size_t p = (count + parts - 1) / parts;
    return (p + v - 1) / v * v;
}

/* [lo, hi): sub-range b (of `sub` elements) of part q (of `part` elements, cut at count). */
__device__ __forceinline__ void sub_range(size_t count, size_t part, size_t sub, int q, int b, size_t *lo, size_t *hi)
{
    size_t p0 = part * (size_t)q, p1 = p0 + part < count ? p0 + part : count;
    if (p0 > p1) p0 = p1;
    size_t l = p0 + sub * (size_t)b, h = l + sub < p1 ? l + sub : p1;
    if (l > h) l = h;
    *lo = l, *hi = h;
}

typedef void (*kernel_fn)(duet_cuda_coll_args_t);

/* K<T, OP>::get() returns the kernel instance for storage type T and reduction OP. */
template <template <typename, int> class K, typename T> kernel_fn pick_op(int op)
{
    switch (op) {
    case DUET_SUM: return K<T, DUET_SUM>::get();
    case DUET_PROD: return K<T, DUET_PROD>::get();
    case DUET_MIN: return K<T, DUET_MIN>::get();
    case DUET_MAX: return K<T, DUET_MAX>::get();
    case DUET_AVG: return K<T, DUET_AVG>::get();
    default: return nullptr;
    }
}

template <template <typename, int> class K> kernel_fn pick_kernel(int dt, int op)
{
    switch (dt) {
    case DUET_INT8: return pick_op<K, int8_t>(op);
    case DUET_UINT8: return pick_op<K, uint8_t>(op);
    case DUET_INT32: return pick_op<K, int32_t>(op);
    case DUET_UINT32: return pick_op<K, uint32_t>(op);
    case DUET_INT64: return pick_op<K, int64_t>(op);
    case DUET_UINT64: return pick_op<K, uint64_t>(op);
    case DUET_FLOAT16: return pick_op<K, __half>(op);
    case DUET_BFLOAT16: return pick_op<K, __nv_bfloat16>(op);
    case DUET_FLOAT32: return pick_op<K, float>(op);
    case DUET_FLOAT64: return pick_op<K, double>(op);
    default: return nullptr;
    }
}

/* Loads every (type, op) instance of kernel family K now (cudaFuncGetAttributes; see
 * duet_cuda_kernels_load). Returns the first error. */
template <template <typename, int> class K> cudaError_t load_kernels()
{
    cudaError_t first = cudaSuccess;
    for (int dt = 0; dt < DUET_DATATYPE_COUNT; dt++)
        for (int op = 0; op < DUET_OP_COUNT; op++) {
            kernel_fn k = pick_kernel<K>(dt, op);
            cudaFuncAttributes at;
            cudaError_t err = k ? cudaFuncGetAttributes(&at, (const void *)k) : cudaSuccess;
            if (err != cudaSuccess && first == cudaSuccess) first = err;
        }
    return first;
}

} // namespace duet_cuda_sync

#endif
