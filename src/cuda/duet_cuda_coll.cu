/*
 * duet_cuda_coll.cu — the allreduce kernels on GPU buffers: one-shot and two-shot over the
 * communicator's symmetric scratch (layout in duet_cuda_coll_kern.h; host side, tuner and
 * routing in duet_cuda_coll.c).
 *
 * The work is cut into nb blocks (the same nb on every rank: it depends on the call's size
 * alone), and every CUDA block b runs its own protocol with block b of every peer, with its
 * own flag words, so blocks never wait for each other:
 *
 *   one-shot, epoch e, parity p = e & 1, block b owns elements [lo, hi):
 *     1. wait done[q] >= e - 2 for every peer q     (q no longer reads my buf[p])
 *     2. copy send[lo, hi) into my buf[p]; release ready1[me][b] = e on every peer
 *     3. wait ready1[q][b] >= e for every q           (acquire: q's data is visible)
 *     4. for each element: reduce buf[p] of pes 0, 1, ..., n-1 in that order (the same bits on
 *        every rank), in fp32 for fp16 / bf16 (rounded once), fp64 for fp64, and in the
 *        integer's own width (wrapping) for integers; avg divides by n at the end (integers:
 *        truncated toward 0, as on the CPU); write recv
 *     5. the last of my blocks to finish (a cumulative counter; the host passes its value
 *        before the call) releases done[me] = e on every peer
 *   two-shot: each part q (count / n elements, rounded up) is cut the same way into nb
 *     sub-ranges; block b copies sub-range b of every part (2), reduces sub-range b of *my*
 *     part from every pe's buf[p] and writes it back into my buf[p] (only I read my own part
 *     in phase 1, element by element before writing it) and into recv, releases ready2, waits
 *     ready2[q][b] >= e and copies sub-range b of part q from pe q's buf[p] into recv; then (5).
 *
 * Why reuse is safe (the scratch of call e is never overwritten while a peer still reads it):
 * a rank's calls run in order (one stream, or the host orders a change of stream behind the
 * last call with an event), so its flags only grow. Rank q reads my buf[p] only during its
 * call e (after my ready1 / ready2 of e, which I release after writing it) and, when all its
 * blocks are done, releases done[me on q's side] = e into my flags. I write buf[p] next in call
 * e + 2, and only after seeing done[q] >= e from every q (step 1): an acquire that pairs with
 * q's release, which follows all of q's reads (block syncs, a system fence and the block
 * counter). Call e + 1 uses the other buffer, so a rank may run one call ahead of its
 * slowest peer and no further. Flags are set (not added), to the epoch: a flag from a later
 * call (>= e) also satisfies a wait for e, and it cannot come before q's data of e is in
 * place, since q's calls run in order. Nothing waits on a block that does not exist: ready
 * flags are per block of the same call on both sides, done is per rank.
 *
 * Every wait polls the communicator's abort word and a deadline (timeout_ns); on either the
 * block stops and stores the status into the mapped host word a.status (the host reports it
 * on the next call; the communicator is then unusable for GPU collectives).
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include "duet/duet_device.cuh"
#include "cuda/duet_cuda_coll_kern.h"
#include "cuda/duet_cuda_reduce.cuh"

namespace {

using namespace duet_dev_detail;
using namespace duet_cuda_reduce;
constexpr int MB = DUET_CUDA_COLL_MAX_BLOCKS;

/* Threads t < n, t != me, wait until flags[t * stride] >= target; the block learns the
 * outcome (0, or the status that stopped it). Contains __syncthreads. */
__device__ int wait_peers(const duet_cuda_coll_args_t &a, const uint64_t *flags, int stride, uint64_t target,
                          int *shared_st)
{
    const int n = a.h.n_pes, me = a.h.my_pe, t = (int)threadIdx.x;
    if (t < n && t != me) {
        const uint64_t *f = flags + (size_t)t * (size_t)stride;
        uint64_t start = 0;
        for (unsigned polls = 0; ld_acquire_u64(f) < target; polls++) {
            if ((polls & (ABORT_EVERY - 1)) != ABORT_EVERY - 1) continue;
            int st = abort_status(a.h);
            if (!st && a.timeout_ns > 0) {
                uint64_t tn = now_ns();
                if (!start) start = tn;
                else if (tn - start > (uint64_t)a.timeout_ns) st = DUET_ERR_TIMEOUT;
            }
            if (st) {
                atomicCAS(shared_st, 0, st);
                break;
            }
            if (*(volatile int *)shared_st) break;
        }
    }
    __syncthreads();
    int st = *(volatile int *)shared_st;
    if (st && threadIdx.x == 0) atomicCAS(a.status, 0, st);
    return st;
}

/* Threads t < n, t != me, release value into `flag` (an address in my scratch) on pe t. */
__device__ __forceinline__ void signal_peers(const duet_cuda_coll_args_t &a, uint64_t *flag, uint64_t value)
{
    const int n = a.h.n_pes, me = a.h.my_pe, t = (int)threadIdx.x;
    if (t < n && t != me) st_release_u64(duet_dev_ptr(a.h, flag, t), value);
}

template <typename T> __device__ __forceinline__ void copy_range(T *dst, const T *src, size_t lo, size_t hi)
{
    for (size_t i = lo + threadIdx.x; i < hi; i += blockDim.x) dst[i] = src[i];
}

template <typename T, int OP>
__global__ void __launch_bounds__(DUET_CUDA_COLL_THREADS) allreduce_kernel(duet_cuda_coll_args_t a)
{
    using A = typename acc_<T>::A;
    __shared__ int st;
    __shared__ const T *peer[128];
    __shared__ int last;
    const int n = a.h.n_pes, me = a.h.my_pe, b = (int)blockIdx.x, nb = a.nblocks;
    const uint64_t e = a.epoch;
    uint64_t *ready1 = (uint64_t *)(void *)a.scratch, *ready2 = ready1 + (size_t)n * MB;
    uint64_t *done = ready2 + (size_t)n * MB, *counter = done + n;
    T *buf = (T *)(void *)(a.scratch + duet_cuda_coll_flag_bytes(n) + (size_t)(e & 1) * DUET_CUDA_COLL_MAX_BYTES);
    const T *send = (const T *)a.send;
    T *recv = (T *)a.recv;
    if (threadIdx.x == 0) st = 0;
    for (int q = (int)threadIdx.x; q < n; q += (int)blockDim.x) peer[q] = duet_dev_ptr(a.h, (const T *)buf, q);
    __syncthreads();
    /* 1. every peer has finished reading my buf of call e - 2 */
    if (e > 2 && wait_peers(a, done, 1, e - 2, &st)) return;

    if (!a.twoshot) {
        size_t per = (a.count + (size_t)nb - 1) / (size_t)nb, lo = per * (size_t)b;
        size_t hi = lo + per < a.count ? lo + per : a.count;
        if (lo > hi) lo = hi;
        copy_range(buf, send, lo, hi);
        __syncthreads();
        signal_peers(a, &ready1[(size_t)me * MB + b], e);
        if (wait_peers(a, ready1 + b, MB, e, &st)) return;
        for (size_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
            A acc = widen<T>(peer[0][i]);
            for (int q = 1; q < n; q++) acc = combine<OP, A>(acc, widen<T>(peer[q][i]));
            recv[i] = finish<T, OP, A>(acc, n);
        }
    } else {
        size_t part = (a.count + (size_t)n - 1) / (size_t)n, sub = (part + (size_t)nb - 1) / (size_t)nb;
        auto range = [&](int q, size_t *lo, size_t *hi) {
            size_t p0 = part * (size_t)q, p1 = p0 + part < a.count ? p0 + part : a.count;
            if (p0 > p1) p0 = p1;
            size_t l = p0 + sub * (size_t)b, h = l + sub < p1 ? l + sub : p1;
            if (l > h) l = h;
            *lo = l, *hi = h;
        };
        size_t lo, hi;
        for (int q = 0; q < n; q++) {
            range(q, &lo, &hi);
            copy_range(buf, send, lo, hi);
        }
        __syncthreads();
        signal_peers(a, &ready1[(size_t)me * MB + b], e);
        if (wait_peers(a, ready1 + b, MB, e, &st)) return;
        range(me, &lo, &hi);
        for (size_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
            A acc = widen<T>(peer[0][i]);
            for (int q = 1; q < n; q++) acc = combine<OP, A>(acc, widen<T>(peer[q][i]));
            T v = finish<T, OP, A>(acc, n);
            buf[i] = v;
            recv[i] = v;
        }
        __syncthreads();
        signal_peers(a, &ready2[(size_t)me * MB + b], e);
        if (wait_peers(a, ready2 + b, MB, e, &st)) return;
        for (int q = 0; q < n; q++) {
            if (q == me) continue;
            range(q, &lo, &hi);
            copy_range(recv, peer[q], lo, hi);
        }
    }
    /* 5. the last of my blocks tells every peer that I no longer read its scratch of call e */
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence_system();
        unsigned long long old = atomicAdd((unsigned long long *)counter, 1ull);
        __threadfence_system();
        last = old == a.count_base + (uint64_t)nb - 1;
    }
    __syncthreads();
    if (last) signal_peers(a, &done[me], e);
}

typedef void (*kernel_fn)(duet_cuda_coll_args_t);

template <typename T> kernel_fn pick_op(int op)
{
    switch (op) {
    case DUET_SUM: return allreduce_kernel<T, DUET_SUM>;
    case DUET_PROD: return allreduce_kernel<T, DUET_PROD>;
    case DUET_MIN: return allreduce_kernel<T, DUET_MIN>;
    case DUET_MAX: return allreduce_kernel<T, DUET_MAX>;
    case DUET_AVG: return allreduce_kernel<T, DUET_AVG>;
    default: return nullptr;
    }
}

kernel_fn pick(int dt, int op)
{
    switch (dt) {
    case DUET_INT8: return pick_op<int8_t>(op);
    case DUET_UINT8: return pick_op<uint8_t>(op);
    case DUET_INT32: return pick_op<int32_t>(op);
    case DUET_UINT32: return pick_op<uint32_t>(op);
    case DUET_INT64: return pick_op<int64_t>(op);
    case DUET_UINT64: return pick_op<uint64_t>(op);
    case DUET_FLOAT16: return pick_op<__half>(op);
    case DUET_BFLOAT16: return pick_op<__nv_bfloat16>(op);
    case DUET_FLOAT32: return pick_op<float>(op);
    case DUET_FLOAT64: return pick_op<double>(op);
    default: return nullptr;
    }
}

} // namespace

extern "C" int duet_cuda_coll_launch(const duet_cuda_coll_args_t *a, void *stream)
{
    kernel_fn k = pick(a->dt, a->op);
    if (!k || a->h.n_pes > 128 || a->nblocks < 1 || a->nblocks > MB) return (int)cudaErrorInvalidValue;
    k<<<a->nblocks, DUET_CUDA_COLL_THREADS, 0, (cudaStream_t)stream>>>(*a);
    return (int)cudaGetLastError();
}
