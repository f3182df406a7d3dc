/*
 * duet_nvshmem/nvshmem_coll.h — NVSHMEM's team collectives over Duet's device API (internal;
 * include <nvshmem.h>; .cu files only: the host forms launch a kernel).
 *
 *   nvshmem_TYPENAME_OP_reduce (thread; kernel and host), nvshmemx_TYPENAME_OP_reduce_warp / _block,
 *   nvshmemx_TYPENAME_OP_reduce_on_stream; OP and TYPENAME as NVSHMEM: and / or / xor on the
 *   bitwise reduce types, min / max / sum / prod on those plus char, schar, short, int, long,
 *   longlong, bfloat16, half, float, double.
 *   nvshmem_TYPENAME_broadcast / _fcollect / _alltoall (thread; kernel and host), their
 *   nvshmemx_*_warp / _block and _on_stream forms, and the byte forms nvshmem_broadcastmem,
 *   nvshmem_fcollectmem, nvshmem_alltoallmem (+ nvshmemx_*mem_warp / _block / _on_stream).
 * Every call returns 0 (a failed communicator traps in a kernel, as every Duet wait here).
 *
 * Algorithm (simple and correct, no scratch memory): every pe of the team reaches the others'
 * symmetric buffers by loads (Duet's heap is mapped on every pe, duet_dev_ptr), so
 *   1. a team barrier (Duet's device barrier of the team's handle: release / acquire at system
 *      scope): every member's source is written and nobody still reads my buffers from an
 *      earlier call;
 *   2. each pe reads what it needs from the members' sources straight into its own dest
 *      (reduce: dest[i] = src_0[i] op src_1[i] op ... in team pe order, so every pe gets the
 *      same bits; broadcast: the root's source; fcollect: member q's source into dest + q * n;
 *      alltoall: member q's source + me * n into dest + q * n);
 *   3. a team barrier: nobody changes a source (or frees it) while a peer still reads it.
 * In-place reduce (dest == source) goes chunk by chunk: read and reduce a chunk into registers,
 * a team barrier, then write it (every pe has read that chunk of every source before anyone
 * overwrites it). Otherwise source and dest must not overlap (NVSHMEM's rule too); nelems,
 * root and the buffers' symmetric addresses must be the same on every member, and the calls of
 * one team must come in the same order on every member. half and bfloat16 are reduced in
 * float, rounded after each step.
 *
 * Scopes: the thread form is called by one thread per pe, the _warp form by a whole warp, the
 * _block form by a whole block (one group per pe at a time, like the barriers). The host forms
 * (nvshmem_* on the host) run the _block form in a one-block kernel on an internal stream and
 * wait for it (synchronize the kernels that write the source first, as with NVSHMEM); the
 * _on_stream forms enqueue that kernel on the caller's stream and return. Teams: any team of
 * this pe (the world, a split). Duet's own GPU collectives (duet_allreduce ...) are not used:
 * they do not run on split teams yet, and do not have the bitwise or 16-bit integer reductions.
 *
 * The names are function templates with one defaulted parameter (called exactly as NVSHMEM's
 * functions), so that nvcc compiles only the collectives a program calls (each host form has
 * its own kernel).
 */
#ifndef DUET_NVSHMEM_COLL_H
#define DUET_NVSHMEM_COLL_H

#include "duet_nvshmem/nvshmem_rma.h"

#ifdef __CUDACC__
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include "duet/duet_reduce_ops.h"

namespace nvshmemi_duet_coll {
enum { AND = 0, OR, XOR, MIN, MAX, SUM, PROD, BCAST = 10, FCOLLECT, ALLTOALL };
enum { THREAD = 0, WARP = 1, BLOCK = 2 };
enum { HOST_THREADS = 256 };

template <int S> static __device__ __forceinline__ unsigned tid()
{
    return S == THREAD ? 0 : S == WARP ? duet_dev_lane() : duet_dev_block_thread();
}
template <int S> static __device__ __forceinline__ unsigned nthr()
{
    return S == THREAD ? 1 : S == WARP ? 32 : duet_dev_block_threads();
}
template <int S> static __device__ __forceinline__ void barrier(const duet_device_comm_t &h, const char *call)
{
    int st = S == THREAD ? duet_dev_barrier(h) : S == WARP ? duet_dev_barrier_warp(h) : duet_dev_barrier_block(h);
    if (st) nvshmemi_duet_trap(call, st);
}
static __device__ __forceinline__ const duet_device_comm_t &team(nvshmem_team_t t, const char *call)
{
    if (t < 0 || t >= NVSHMEM_DUET_MAX_TEAMS || !nvshmemi_duet_d.team[t].n_pes) nvshmemi_duet_trap(call, t);
    return nvshmemi_duet_d.team[t];
}

template <typename T> struct is_f16 {
    static constexpr bool value = std::is_same<T, __half>::value || std::is_same<T, __nv_bfloat16>::value;
};
/* NVSHMEM's reduce operations as Duet's (the bitwise ones have no Duet counterpart). */
template <int OP> struct duet_op_of;
template <> struct duet_op_of<MIN> { static constexpr int v = DUET_MIN; };
template <> struct duet_op_of<MAX> { static constexpr int v = DUET_MAX; };
template <> struct duet_op_of<SUM> { static constexpr int v = DUET_SUM; };
template <> struct duet_op_of<PROD> { static constexpr int v = DUET_PROD; };

/* a OP b: the bitwise ones here; min / max / sum / prod by Duet's element helpers
 * (duet/duet_reduce_ops.h), so the bits are those of Duet's own reductions: integers in 64
 * bits and wrapped to their width, half / bfloat16 in float (rounded after each step). */
template <typename T, int OP> static __device__ __forceinline__ T op(T a, T b)
{
    if constexpr (OP == AND) {
        return (T)(a & b);
    } else if constexpr (OP == OR) {
        return (T)(a | b);
    } else if constexpr (OP == XOR) {
        return (T)(a ^ b);
    } else if constexpr (is_f16<T>::value) {
        return T(duet_reduce_combine<duet_op_of<OP>::v, float>((float)a, (float)b));
    } else if constexpr (std::is_integral<T>::value) {
        using A = typename std::conditional<std::is_signed<T>::value, int64_t, uint64_t>::type;
        return (T)duet_reduce_combine<duet_op_of<OP>::v, A>((A)a, (A)b);
    } else {
        return duet_reduce_combine<duet_op_of<OP>::v, T>(a, b);
    }
}
template <typename T, int OP>
static __device__ __forceinline__ T reduce_at(const duet_device_comm_t &h, const T *src, size_t i)
{
    T acc = *duet_dev_ptr(h, src + i, 0);
    for (int q = 1; q < h.n_pes; q++) acc = op<T, OP>(acc, *duet_dev_ptr(h, src + i, q));
    return acc;
}

/* The collective KIND (a reduce OP, BCAST, FCOLLECT or ALLTOALL) at scope S over team t. */
template <typename T, int KIND, int S>
static __device__ __forceinline__ int run(const char *call, nvshmem_team_t t, T *dest, const T *src, size_t n,
                                          int root)
{
    const duet_device_comm_t &h = team(t, call);
    unsigned me = tid<S>(), nt = nthr<S>();
    int np = h.n_pes, my = h.my_pe;
    barrier<S>(h, call);
    if constexpr (KIND == BCAST) {
        if (root < 0 || root >= np) nvshmemi_duet_trap(call, root);
        if (my != root) duet_dev_copy(dest, duet_dev_ptr(h, src, root), n * sizeof(T), me, nt);
        else if (dest != src) duet_dev_copy(dest, src, n * sizeof(T), me, nt);
    } else if constexpr (KIND == FCOLLECT) {
        for (int q = 0; q < np; q++)
            duet_dev_copy(dest + (size_t)q * n, duet_dev_ptr(h, src, q), n * sizeof(T), me, nt);
    } else if constexpr (KIND == ALLTOALL) {
        for (int q = 0; q < np; q++)
            duet_dev_copy(dest + (size_t)q * n, duet_dev_ptr(h, src + (size_t)my * n, q), n * sizeof(T), me,
                                  nt);
    } else if (dest != src) {
        for (size_t i = me; i < n; i += nt) dest[i] = reduce_at<T, KIND>(h, src, i);
    } else {
        enum { R = 4 };
        for (size_t base = 0; base < n; base += (size_t)R * nt) { /* the same trip count on every thread */
            T acc[R];
#pragma unroll
            for (int r = 0; r < R; r++) {
                size_t i = base + (size_t)r * nt + me;
                if (i < n) acc[r] = reduce_at<T, KIND>(h, src, i);
            }
            barrier<S>(h, call);
#pragma unroll
            for (int r = 0; r < R; r++) {
                size_t i = base + (size_t)r * nt + me;
                if (i < n) dest[i] = acc[r];
            }
        }
        if (S == WARP) __syncwarp();
        if (S == BLOCK) __syncthreads();
        return 0;
    }
    barrier<S>(h, call);
    return 0;
}

/* The host forms' kernel: the _block form in one block. */
template <typename T, int KIND>
__global__ void kernel(nvshmem_team_t t, T *dest, const T *src, size_t n, int root)
{
    (void)run<T, KIND, BLOCK>("nvshmem collective (host form)", t, dest, src, n, root);
}
template <typename T, int KIND>
static inline int launch(const char *call, nvshmem_team_t t, T *dest, const T *src, size_t n, int root,
                         cudaStream_t stream, int wait)
{
    nvshmemi_duet_host_t *s = &nvshmemi_duet_host;
    if (!nvshmemi_duet_team(t)) {
        fprintf(stderr, "nvshmem (Duet): %s: team %d is not a team of this pe\n", call, (int)t);
        return NVSHMEMX_ERROR_INVALID_VALUE;
    }
    if (wait && !s->coll_stream && cudaStreamCreate(&s->coll_stream) != cudaSuccess) {
        fprintf(stderr, "nvshmem (Duet): %s: cannot create a stream\n", call);
        return NVSHMEMX_ERROR_INTERNAL;
    }
    if (wait) stream = s->coll_stream;
    kernel<T, KIND><<<1, HOST_THREADS, 0, stream>>>(t, dest, src, n, root);
    cudaError_t err = cudaGetLastError();
    if (err == cudaSuccess && wait) err = cudaStreamSynchronize(stream);
    if (err != cudaSuccess) {
        fprintf(stderr, "nvshmem (Duet): %s: %s\n", call, cudaGetErrorString(err));
        return NVSHMEMX_ERROR_INTERNAL;
    }
    return 0;
}
} /* namespace nvshmemi_duet_coll */

/* thread scope on both sides: the kernel form, or the host form (a kernel, waited for) */
template <typename T, int KIND>
static __host__ __device__ __forceinline__ int nvshmemi_duet_coll_any(const char *call, nvshmem_team_t t, T *dest,
                                                                      const T *src, size_t n, int root)
{
#ifdef __CUDA_ARCH__
    /* the host form's kernel must be instantiated in the device pass too, which never sees the
     * #else branch below: without this reference its launch finds no device code ("invalid
     * device function") */
    (void)&nvshmemi_duet_coll::kernel<T, KIND>;
    return nvshmemi_duet_coll::run<T, KIND, nvshmemi_duet_coll::THREAD>(call, t, dest, src, n, root);
#else
    return nvshmemi_duet_coll::launch<T, KIND>(call, t, dest, src, n, root, 0, 1);
#endif
}

#define NVSHMEMI_DUET_COLL_NAMES_(PT, T, FN, KIND, ...)                                                          \
    template <int nvshmemi_duet_u = 0>                                                                      \
    static __host__ __device__ __forceinline__ int nvshmem_##FN(nvshmem_team_t team, PT *dest, const PT *source, \
                                                                size_t n __VA_ARGS__)                       \
    {                                                                                                       \
        return nvshmemi_duet_coll_any<T, KIND>("nvshmem_" #FN, team, (T *)dest, (const T *)source, n, NVSHMEMI_DUET_ROOT_);   \
    }                                                                                                       \
    template <int nvshmemi_duet_u = 0>                                                                      \
    static __device__ __forceinline__ int nvshmemx_##FN##_warp(nvshmem_team_t team, PT *dest, const PT *source, \
                                                               size_t n __VA_ARGS__)                        \
    {                                                                                                       \
        return nvshmemi_duet_coll::run<T, KIND, nvshmemi_duet_coll::WARP>("nvshmemx_" #FN "_warp", team, (T *)dest, \
                                                                          (const T *)source, n, NVSHMEMI_DUET_ROOT_);   \
    }                                                                                                       \
    template <int nvshmemi_duet_u = 0>                                                                      \
    static __device__ __forceinline__ int nvshmemx_##FN##_block(nvshmem_team_t team, PT *dest, const PT *source, \
                                                                size_t n __VA_ARGS__)                       \
    {                                                                                                       \
        return nvshmemi_duet_coll::run<T, KIND, nvshmemi_duet_coll::BLOCK>("nvshmemx_" #FN "_block", team,    \
                                                                           (T *)dest, (const T *)source, n,                 \
                                                                           NVSHMEMI_DUET_ROOT_);            \
    }                                                                                                       \
    template <int nvshmemi_duet_u = 0>                                                                      \
    static inline int nvshmemx_##FN##_on_stream(nvshmem_team_t team, PT *dest, const PT *source,               \
                                                size_t n __VA_ARGS__, cudaStream_t stream)                  \
    {                                                                                                       \
        return nvshmemi_duet_coll::launch<T, KIND>("nvshmemx_" #FN "_on_stream", team, (T *)dest, (const T *)source, n,       \
                                                   NVSHMEMI_DUET_ROOT_, stream, 0);                         \
    }

/* Reductions: NVSHMEM's type lists. */
#define NVSHMEMI_DUET_BITWISE_REDUCE_TYPES(X)                                                          \
    X(unsigned char, uchar) X(unsigned short, ushort) X(unsigned int, uint) X(unsigned long, ulong)     \
    X(unsigned long long, ulonglong) X(int8_t, int8) X(int16_t, int16) X(int32_t, int32)                \
    X(int64_t, int64) X(uint8_t, uint8) X(uint16_t, uint16) X(uint32_t, uint32) X(uint64_t, uint64)     \
    X(size_t, size)
#define NVSHMEMI_DUET_ARITH_REDUCE_TYPES(X)                                                            \
    NVSHMEMI_DUET_BITWISE_REDUCE_TYPES(X) X(char, char) X(signed char, schar) X(short, short) X(int, int) \
    X(long, long) X(long long, longlong) X(__nv_bfloat16, bfloat16) X(__half, half) X(float, float)       \
    X(double, double)

#define NVSHMEMI_DUET_ROOT_ 0
#define NVSHMEMI_DUET_RED_BIT_(T, N)                                                                        \
    NVSHMEMI_DUET_COLL_NAMES_(T, T, N##_and_reduce, nvshmemi_duet_coll::AND)                                   \
    NVSHMEMI_DUET_COLL_NAMES_(T, T, N##_or_reduce, nvshmemi_duet_coll::OR)                                     \
    NVSHMEMI_DUET_COLL_NAMES_(T, T, N##_xor_reduce, nvshmemi_duet_coll::XOR)
#define NVSHMEMI_DUET_RED_ARITH_(T, N)                                                                      \
    NVSHMEMI_DUET_COLL_NAMES_(T, T, N##_min_reduce, nvshmemi_duet_coll::MIN)                                   \
    NVSHMEMI_DUET_COLL_NAMES_(T, T, N##_max_reduce, nvshmemi_duet_coll::MAX)                                   \
    NVSHMEMI_DUET_COLL_NAMES_(T, T, N##_sum_reduce, nvshmemi_duet_coll::SUM)                                   \
    NVSHMEMI_DUET_COLL_NAMES_(T, T, N##_prod_reduce, nvshmemi_duet_coll::PROD)
NVSHMEMI_DUET_BITWISE_REDUCE_TYPES(NVSHMEMI_DUET_RED_BIT_)
NVSHMEMI_DUET_ARITH_REDUCE_TYPES(NVSHMEMI_DUET_RED_ARITH_)

/* fcollect and alltoall on NVSHMEM's RMA types, and the byte forms (nelems in bytes). */
#define NVSHMEMI_DUET_FCOLLECT_ALLTOALL_(T, N)                                                              \
    NVSHMEMI_DUET_COLL_NAMES_(T, T, N##_fcollect, nvshmemi_duet_coll::FCOLLECT)                                \
    NVSHMEMI_DUET_COLL_NAMES_(T, T, N##_alltoall, nvshmemi_duet_coll::ALLTOALL)
NVSHMEMI_DUET_RMA_TYPES(NVSHMEMI_DUET_FCOLLECT_ALLTOALL_)
NVSHMEMI_DUET_COLL_NAMES_(void, char, fcollectmem, nvshmemi_duet_coll::FCOLLECT)
NVSHMEMI_DUET_COLL_NAMES_(void, char, alltoallmem, nvshmemi_duet_coll::ALLTOALL)
#undef NVSHMEMI_DUET_ROOT_

/* broadcast: PE_root is the root's pe in the team; its dest is written too. */
#define NVSHMEMI_DUET_ROOT_ PE_root
#define NVSHMEMI_DUET_BROADCAST_(T, N) NVSHMEMI_DUET_COLL_NAMES_(T, T, N##_broadcast, nvshmemi_duet_coll::BCAST, , int PE_root)
NVSHMEMI_DUET_RMA_TYPES(NVSHMEMI_DUET_BROADCAST_)
NVSHMEMI_DUET_COLL_NAMES_(void, char, broadcastmem, nvshmemi_duet_coll::BCAST, , int PE_root)
#undef NVSHMEMI_DUET_ROOT_
#endif /* __CUDACC__ */

#endif /* DUET_NVSHMEM_COLL_H */
