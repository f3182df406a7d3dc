/*
 * duet_cuda_direct.cu — the direct allreduce: a two-shot allreduce that reads the peers' own
 * send and receive buffers where they lie, for calls whose buffers are symmetric (in the GPU
 * heap, at the same offsets on every rank: the host side agrees on that first, see
 * duet_cuda_coll.c). Nothing is staged: the traffic is the algorithm's own, so large
 * allreduces run at the memory's (or NVLink's) rate.
 *
 * The elements are cut into n parts (part q is reduced by pe q), each part into nb sub-ranges,
 * one per CUDA block; block b of every rank works with block b of every peer, through the
 * flag words of the shot kernels' scratch (duet_cuda_coll_kern.h), epoch e:
 *   1. release ready1[me][b] = e on every peer (my send of call e is in place: the stream
 *      ran everything before this kernel); wait ready1[q][b] >= e for every q;
 *   2. sub-range b of my part: read it from every pe's send (pes 0, 1, ..., n-1 in that order:
 *      the same bits whoever reduces; fp16 / bf16 in fp32, rounded once), write my recv;
 *   3. release ready2[me][b] = e; wait ready2[q][b] >= e (pe q's part q is final in its recv);
 *   4. sub-range b of every other part q: copy it from pe q's recv into mine;
 *   5. the last of my blocks releases done[me] = e on every peer, then waits done[q] >= e
 *      from every q: the kernel ends only when no peer reads my buffers any more, so the
 *      caller may reuse them as soon as the call is done on its stream.
 * In place (send == recv): step 2 writes only my part, which only my block b reads (element
 * by element, before writing it); step 4 writes part q of my buffer, which pe q's block b
 * read in its step 2, before it released ready2.
 * Every wait polls the abort word and the deadline, as the shot kernels do.
 *
 * Speed: 16-byte loads and stores, several in flight per thread (U packs per peer); nb
 * blocks, at most what can be resident with every rank of the GPU running its own at once
 * (blocks of different ranks wait for each other: all must be resident).
 */
#include <cuda_runtime.h>
#include "duet/duet_device.cuh"
#include "cuda/duet_cuda_coll_kern.h"
#include "cuda/duet_cuda_coll_sync.cuh"
#include "cuda/duet_cuda_reduce.cuh"

namespace {

using namespace duet_dev_detail;
using namespace duet_cuda_reduce;
using namespace duet_cuda_sync;
constexpr int MB = DUET_CUDA_COLL_MAX_BLOCKS;
constexpr int MAX_PES = 128;

/* Packs of 16 bytes: V elements each; U packs per thread per round, so that U x V
 * accumulators stay within 64 bytes of registers. */
template <typename T> struct pack_ {
    using A = typename acc_<T>::A;
    static constexpr int V = 16 / (int)sizeof(T);
    static constexpr int U = 64 / (V * (int)sizeof(A)) > 0 ? 64 / (V * (int)sizeof(A)) : 1;
};

/* dst[i] = reduction over q of src[q][i], for i in [lo, hi); lo a multiple of V when vec. */
template <typename T, int OP>
__device__ void reduce_range(T *dst, const T *const *src, int n, size_t lo, size_t hi, bool vec)
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
                if (base + u * stride < vend) pk[u] = *(const uint4 *)(const void *)(src[q] + base + u * stride);
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
        A acc = widen<T>(src[0][i]);
        for (int q = 1; q < n; q++) acc = combine<OP, A>(acc, widen<T>(src[q][i]));
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

template <typename T, int OP>
__global__ void __launch_bounds__(DUET_CUDA_COLL_THREADS) direct_kernel(duet_cuda_coll_args_t a)
{
    constexpr int V = pack_<T>::V;
    __shared__ int st, last;
    __shared__ const T *send_of[MAX_PES];
    __shared__ const T *recv_of[MAX_PES];
    const int n = a.h.n_pes, me = a.h.my_pe, b = (int)blockIdx.x, nb = a.nblocks;
    const uint64_t e = a.epoch;
    uint64_t *ready1 = (uint64_t *)(void *)a.scratch, *ready2 = ready1 + (size_t)n * MB;
    uint64_t *done = ready2 + (size_t)n * MB, *counter = done + n;
    T *recv = (T *)a.recv;
    const bool vec = ((uintptr_t)a.send % 16 == 0) && ((uintptr_t)a.recv % 16 == 0);
    if (threadIdx.x == 0) st = 0;
    for (int q = (int)threadIdx.x; q < n; q += (int)blockDim.x) {
        send_of[q] = duet_dev_ptr(a.h, (const T *)a.send, q);
        recv_of[q] = duet_dev_ptr(a.h, (const T *)recv, q);
    }
    __syncthreads();
    /* parts and sub-ranges start at multiples of V (whole 16-byte packs) */
    size_t part = (a.count + (size_t)n - 1) / (size_t)n;
    part = (part + V - 1) / V * V;
    size_t sub = (part + (size_t)nb - 1) / (size_t)nb;
    sub = (sub + V - 1) / V * V;
    auto range = [&](int q, size_t *lo, size_t *hi) {
        size_t p0 = part * (size_t)q, p1 = p0 + part < a.count ? p0 + part : a.count;
        if (p0 > p1) p0 = p1;
        size_t l = p0 + sub * (size_t)b, h = l + sub < p1 ? l + sub : p1;
        if (l > h) l = h;
        *lo = l, *hi = h;
    };
    size_t lo, hi;
    /* 1. */
    signal_peers(a, &ready1[(size_t)me * MB + b], e);
    if (wait_peers(a, ready1 + b, MB, e, &st)) return;
    /* 2. */
    range(me, &lo, &hi);
    reduce_range<T, OP>(recv, send_of, n, lo, hi, vec);
    /* 3. */
    __syncthreads();
    signal_peers(a, &ready2[(size_t)me * MB + b], e);
    if (wait_peers(a, ready2 + b, MB, e, &st)) return;
    /* 4. */
    for (int k = 1; k < n; k++) {
        int q = (me + k) % n; /* every rank starts on another peer: spreads the reads */
        range(q, &lo, &hi);
        copy_range(recv, recv_of[q], lo, hi, vec);
    }
    /* 5. */
    if (last_block(a, counter, &last)) {
        signal_peers(a, &done[me], e);
        wait_peers(a, done, 1, e, &st);
    }
}

template <typename T, int OP> struct direct_k {
    static kernel_fn get() { return direct_kernel<T, OP>; }
};

} // namespace

extern "C" int duet_cuda_direct_max_blocks(int dt, int op, int *blocks)
{
    kernel_fn k = pick_kernel<direct_k>(dt, op);
    int dev = 0, sms = 0, per_sm = 0;
    if (!k) return (int)cudaErrorInvalidValue;
    cudaError_t err;
    if ((err = cudaGetDevice(&dev)) != cudaSuccess ||
        (err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)) != cudaSuccess ||
        (err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, (const void *)k, DUET_CUDA_COLL_THREADS, 0)) !=
            cudaSuccess)
        return (int)err;
    *blocks = sms * per_sm;
    return (int)cudaSuccess;
}

extern "C" int duet_cuda_direct_launch(const duet_cuda_coll_args_t *a, void *stream)
{
    kernel_fn k = pick_kernel<direct_k>(a->dt, a->op);
    if (!k || a->h.n_pes > MAX_PES || a->nblocks < 1 || a->nblocks > MB) return (int)cudaErrorInvalidValue;
    k<<<a->nblocks, DUET_CUDA_COLL_THREADS, 0, (cudaStream_t)stream>>>(*a);
    return (int)cudaGetLastError();
}
