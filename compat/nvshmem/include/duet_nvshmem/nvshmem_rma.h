/*
 * duet_nvshmem/nvshmem_rma.h — NVSHMEM's put / get / p / g and put-with-signal over Duet
 * (internal; include <nvshmem.h>).
 *
 * Thread-scope forms (nvshmem_*) work in kernels (duet_dev_* on the world's handle) and on
 * the host (duet_put / duet_get ... on the world, for GPU heap addresses); the _warp and
 * _block forms (nvshmemx_*) exist in kernels only and must be called by every thread of the
 * warp / block with the same arguments. pe is a world pe. Completion as NVSHMEM's: a put's
 * data is visible at pe after a quiet or barrier; _nbi forms also leave their source and
 * destination untouchable until a quiet. Types: NVSHMEMI_DUET_RMA_TYPES, NVSHMEM's standard
 * RMA table; p / g of 1- and 2-byte types are single volatile stores / loads (Duet's own
 * p / g take 4- and 8-byte types).
 */
#ifndef DUET_NVSHMEM_RMA_H
#define DUET_NVSHMEM_RMA_H

#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include "duet_nvshmem/nvshmem_state.h"

#define NVSHMEMI_DUET_RMA_TYPES(X)                                                                     \
    X(float, float) X(double, double) X(char, char) X(signed char, schar) X(short, short) X(int, int)   \
    X(long, long) X(long long, longlong) X(unsigned char, uchar) X(unsigned short, ushort)              \
    X(unsigned int, uint) X(unsigned long, ulong) X(unsigned long long, ulonglong) X(int8_t, int8)      \
    X(int16_t, int16) X(int32_t, int32) X(int64_t, int64) X(uint8_t, uint8) X(uint16_t, uint16)         \
    X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size) X(ptrdiff_t, ptrdiff) X(__half, half)       \
    X(__nv_bfloat16, bfloat16)

/* Sized forms: put8 ... put128 move nelems elements of BITS bits. */
#define NVSHMEMI_DUET_SIZES(X) X(8, 1) X(16, 2) X(32, 4) X(64, 8) X(128, 16)

/* ---- bytes, thread scope (host and device) ---------------------------------------------- */
static __host__ __device__ __forceinline__ void nvshmemx_duet_xfer_(void *dest, const void *src, size_t bytes,
                                                                   int pe, int get, int nbi)
{
#ifdef __CUDA_ARCH__
    if (get) duet_dev_get_nbi(NVSHMEMI_DUET_W, dest, src, bytes, pe);
    else duet_dev_put_nbi(NVSHMEMI_DUET_W, dest, src, bytes, pe);
    (void)nbi; /* one thread: the blocking and nbi forms are the same work */
#else
    duet_comm_t w = nvshmemi_duet_world(get ? "nvshmem_get" : "nvshmem_put");
    duet_status_t st = get ? (nbi ? duet_get_nbi(w, dest, src, bytes, pe) : duet_get(w, dest, src, bytes, pe))
                           : (nbi ? duet_put_nbi(w, dest, src, bytes, pe) : duet_put(w, dest, src, bytes, pe));
    nvshmemi_duet_check(st, get ? "nvshmem_get" : "nvshmem_put");
#endif
}
static __host__ __device__ __forceinline__ void nvshmem_putmem(void *dest, const void *src, size_t bytes, int pe)
{
    nvshmemx_duet_xfer_(dest, src, bytes, pe, 0, 0);
}
static __host__ __device__ __forceinline__ void nvshmem_putmem_nbi(void *dest, const void *src, size_t bytes, int pe)
{
    nvshmemx_duet_xfer_(dest, src, bytes, pe, 0, 1);
}
static __host__ __device__ __forceinline__ void nvshmem_getmem(void *dest, const void *src, size_t bytes, int pe)
{
    nvshmemx_duet_xfer_(dest, src, bytes, pe, 1, 0);
}
static __host__ __device__ __forceinline__ void nvshmem_getmem_nbi(void *dest, const void *src, size_t bytes, int pe)
{
    nvshmemx_duet_xfer_(dest, src, bytes, pe, 1, 1);
}

/* ---- single elements (host and device) -------------------------------------------------- */
template <typename T>
static __host__ __device__ __forceinline__ void nvshmemi_duet_p(T *dest, T value, int pe)
{
#ifdef __CUDA_ARCH__
    if constexpr (sizeof(T) == 4 || sizeof(T) == 8) {
        duet_dev_p(NVSHMEMI_DUET_W, dest, value, pe);
    } else {
        using W = typename std::conditional<sizeof(T) == 1, uint8_t, uint16_t>::type;
        W bits;
        memcpy(&bits, &value, sizeof bits);
        *(volatile W *)duet_dev_ptr(NVSHMEMI_DUET_W, dest, pe) = bits;
    }
#else
    nvshmemi_duet_check(duet_put(nvshmemi_duet_world("nvshmem_p"), dest, &value, sizeof(T), pe), "nvshmem_p");
#endif
}
template <typename T>
static __host__ __device__ __forceinline__ T nvshmemi_duet_g(const T *src, int pe)
{
    T v;
#ifdef __CUDA_ARCH__
    if constexpr (sizeof(T) == 4 || sizeof(T) == 8) {
        v = duet_dev_g(NVSHMEMI_DUET_W, src, pe);
    } else {
        using W = typename std::conditional<sizeof(T) == 1, uint8_t, uint16_t>::type;
        W bits = *(const volatile W *)duet_dev_ptr(NVSHMEMI_DUET_W, src, pe);
        memcpy(&v, &bits, sizeof v);
    }
#else
    nvshmemi_duet_check(duet_get(nvshmemi_duet_world("nvshmem_g"), &v, src, sizeof(T), pe), "nvshmem_g");
#endif
    return v;
}

/* ---- put with signal, thread scope (host and device) ------------------------------------ */
static __host__ __device__ __forceinline__ void nvshmemi_duet_put_signal(void *dest, const void *src, size_t bytes,
                                                                        uint64_t *sig_addr, uint64_t signal,
                                                                        int sig_op, int pe, int nbi)
{
    int op = nvshmemi_duet_sig_op(sig_op);
#ifdef __CUDA_ARCH__
    if (op < 0) nvshmemi_duet_trap("nvshmem_putmem_signal: sig_op", sig_op);
    duet_dev_put_signal(NVSHMEMI_DUET_W, dest, src, bytes, sig_addr, signal, op, pe);
    (void)nbi;
#else
    if (op < 0) nvshmemi_duet_die("nvshmem_putmem_signal", "sig_op is not NVSHMEM_SIGNAL_SET / _ADD");
    duet_comm_t w = nvshmemi_duet_world("nvshmem_putmem_signal");
    nvshmemi_duet_check(nbi ? duet_put_signal_nbi(w, dest, src, bytes, sig_addr, signal, op, pe)
                            : duet_put_signal(w, dest, src, bytes, sig_addr, signal, op, pe),
                        "nvshmem_putmem_signal");
#endif
}
static __host__ __device__ __forceinline__ void nvshmem_putmem_signal(void *dest, const void *src, size_t bytes,
                                                                     uint64_t *sig_addr, uint64_t signal,
                                                                     int sig_op, int pe)
{
    nvshmemi_duet_put_signal(dest, src, bytes, sig_addr, signal, sig_op, pe, 0);
}
static __host__ __device__ __forceinline__ void nvshmem_putmem_signal_nbi(void *dest, const void *src, size_t bytes,
                                                                         uint64_t *sig_addr, uint64_t signal,
                                                                         int sig_op, int pe)
{
    nvshmemi_duet_put_signal(dest, src, bytes, sig_addr, signal, sig_op, pe, 1);
}

/* ---- typed and sized, thread scope ------------------------------------------------------ */
#define NVSHMEMI_DUET_RMA_THREAD_(T, N)                                                                     \
    static __host__ __device__ __forceinline__ void nvshmem_##N##_put(T *dest, const T *src, size_t n, int pe) \
    {                                                                                                       \
        nvshmem_putmem(dest, src, n * sizeof(T), pe);                                                       \
    }                                                                                                       \
    static __host__ __device__ __forceinline__ void nvshmem_##N##_put_nbi(T *dest, const T *src, size_t n,    \
                                                                          int pe)                           \
    {                                                                                                       \
        nvshmem_putmem_nbi(dest, src, n * sizeof(T), pe);                                                   \
    }                                                                                                       \
    static __host__ __device__ __forceinline__ void nvshmem_##N##_get(T *dest, const T *src, size_t n, int pe) \
    {                                                                                                       \
        nvshmem_getmem(dest, src, n * sizeof(T), pe);                                                       \
    }                                                                                                       \
    static __host__ __device__ __forceinline__ void nvshmem_##N##_get_nbi(T *dest, const T *src, size_t n,    \
                                                                          int pe)                           \
    {                                                                                                       \
        nvshmem_getmem_nbi(dest, src, n * sizeof(T), pe);                                                   \
    }                                                                                                       \
    static __host__ __device__ __forceinline__ void nvshmem_##N##_p(T *dest, T value, int pe)                \
    {                                                                                                       \
        nvshmemi_duet_p<T>(dest, value, pe);                                                                \
    }                                                                                                       \
    static __host__ __device__ __forceinline__ T nvshmem_##N##_g(const T *src, int pe)                       \
    {                                                                                                       \
        return nvshmemi_duet_g<T>(src, pe);                                                                 \
    }                                                                                                       \
    static __host__ __device__ __forceinline__ void nvshmem_##N##_put_signal(                               \
        T *dest, const T *src, size_t n, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe)           \
    {                                                                                                       \
        nvshmemi_duet_put_signal(dest, src, n * sizeof(T), sig_addr, signal, sig_op, pe, 0);                \
    }                                                                                                       \
    static __host__ __device__ __forceinline__ void nvshmem_##N##_put_signal_nbi(                           \
        T *dest, const T *src, size_t n, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe)           \
    {                                                                                                       \
        nvshmemi_duet_put_signal(dest, src, n * sizeof(T), sig_addr, signal, sig_op, pe, 1);                \
    }
NVSHMEMI_DUET_RMA_TYPES(NVSHMEMI_DUET_RMA_THREAD_)

#define NVSHMEMI_DUET_SIZED_THREAD_(BITS, B)                                                                \
    static __host__ __device__ __forceinline__ void nvshmem_put##BITS(void *dest, const void *src, size_t n,  \
                                                                      int pe)                               \
    {                                                                                                       \
        nvshmem_putmem(dest, src, n * (B), pe);                                                             \
    }                                                                                                       \
    static __host__ __device__ __forceinline__ void nvshmem_put##BITS##_nbi(void *dest, const void *src,     \
                                                                            size_t n, int pe)               \
    {                                                                                                       \
        nvshmem_putmem_nbi(dest, src, n * (B), pe);                                                         \
    }                                                                                                       \
    static __host__ __device__ __forceinline__ void nvshmem_get##BITS(void *dest, const void *src, size_t n,  \
                                                                      int pe)                               \
    {                                                                                                       \
        nvshmem_getmem(dest, src, n * (B), pe);                                                             \
    }                                                                                                       \
    static __host__ __device__ __forceinline__ void nvshmem_get##BITS##_nbi(void *dest, const void *src,     \
                                                                            size_t n, int pe)               \
    {                                                                                                       \
        nvshmem_getmem_nbi(dest, src, n * (B), pe);                                                         \
    }
NVSHMEMI_DUET_SIZES(NVSHMEMI_DUET_SIZED_THREAD_)

#ifdef __CUDACC__
/* ---- warp and block scope (device only) ------------------------------------------------- */
#define NVSHMEMI_DUET_MEM_GROUP_(S)                                                                         \
    static __device__ __forceinline__ void nvshmemx_putmem_##S(void *dest, const void *src, size_t bytes,    \
                                                               int pe)                                      \
    {                                                                                                       \
        duet_dev_put_##S(NVSHMEMI_DUET_W, dest, src, bytes, pe);                                            \
    }                                                                                                       \
    static __device__ __forceinline__ void nvshmemx_putmem_nbi_##S(void *dest, const void *src, size_t bytes,\
                                                                   int pe)                                  \
    {                                                                                                       \
        duet_dev_put_##S##_nbi(NVSHMEMI_DUET_W, dest, src, bytes, pe);                                      \
    }                                                                                                       \
    static __device__ __forceinline__ void nvshmemx_getmem_##S(void *dest, const void *src, size_t bytes,    \
                                                               int pe)                                      \
    {                                                                                                       \
        duet_dev_get_##S(NVSHMEMI_DUET_W, dest, src, bytes, pe);                                            \
    }                                                                                                       \
    static __device__ __forceinline__ void nvshmemx_getmem_nbi_##S(void *dest, const void *src, size_t bytes,\
                                                                   int pe)                                  \
    {                                                                                                       \
        duet_dev_get_##S##_nbi(NVSHMEMI_DUET_W, dest, src, bytes, pe);                                      \
    }                                                                                                       \
    static __device__ __forceinline__ void nvshmemx_putmem_signal_##S(void *dest, const void *src,           \
        size_t bytes, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe)                              \
    {                                                                                                       \
        int op = nvshmemi_duet_sig_op(sig_op);                                                              \
        if (op < 0) nvshmemi_duet_trap("nvshmemx_putmem_signal_" #S ": sig_op", sig_op);                    \
        duet_dev_put_signal_##S(NVSHMEMI_DUET_W, dest, src, bytes, sig_addr, signal, op, pe);               \
    }                                                                                                       \
    static __device__ __forceinline__ void nvshmemx_putmem_signal_nbi_##S(void *dest, const void *src,       \
        size_t bytes, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe)                              \
    {                                                                                                       \
        nvshmemx_putmem_signal_##S(dest, src, bytes, sig_addr, signal, sig_op, pe);                         \
    }
NVSHMEMI_DUET_MEM_GROUP_(warp)
NVSHMEMI_DUET_MEM_GROUP_(block)

#define NVSHMEMI_DUET_RMA_GROUP_(T, N, S)                                                                   \
    static __device__ __forceinline__ void nvshmemx_##N##_put_##S(T *dest, const T *src, size_t n, int pe)   \
    {                                                                                                       \
        nvshmemx_putmem_##S(dest, src, n * sizeof(T), pe);                                                  \
    }                                                                                                       \
    static __device__ __forceinline__ void nvshmemx_##N##_put_nbi_##S(T *dest, const T *src, size_t n,       \
                                                                      int pe)                               \
    {                                                                                                       \
        nvshmemx_putmem_nbi_##S(dest, src, n * sizeof(T), pe);                                              \
    }                                                                                                       \
    static __device__ __forceinline__ void nvshmemx_##N##_get_##S(T *dest, const T *src, size_t n, int pe)   \
    {                                                                                                       \
        nvshmemx_getmem_##S(dest, src, n * sizeof(T), pe);                                                  \
    }                                                                                                       \
    static __device__ __forceinline__ void nvshmemx_##N##_get_nbi_##S(T *dest, const T *src, size_t n,       \
                                                                      int pe)                               \
    {                                                                                                       \
        nvshmemx_getmem_nbi_##S(dest, src, n * sizeof(T), pe);                                              \
    }                                                                                                       \
    static __device__ __forceinline__ void nvshmemx_##N##_put_signal_##S(                                   \
        T *dest, const T *src, size_t n, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe)           \
    {                                                                                                       \
        nvshmemx_putmem_signal_##S(dest, src, n * sizeof(T), sig_addr, signal, sig_op, pe);                 \
    }                                                                                                       \
    static __device__ __forceinline__ void nvshmemx_##N##_put_signal_nbi_##S(                               \
        T *dest, const T *src, size_t n, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe)           \
    {                                                                                                       \
        nvshmemx_putmem_signal_##S(dest, src, n * sizeof(T), sig_addr, signal, sig_op, pe);                 \
    }
#define NVSHMEMI_DUET_RMA_WARP_(T, N) NVSHMEMI_DUET_RMA_GROUP_(T, N, warp)
#define NVSHMEMI_DUET_RMA_BLOCK_(T, N) NVSHMEMI_DUET_RMA_GROUP_(T, N, block)
NVSHMEMI_DUET_RMA_TYPES(NVSHMEMI_DUET_RMA_WARP_)
NVSHMEMI_DUET_RMA_TYPES(NVSHMEMI_DUET_RMA_BLOCK_)

#define NVSHMEMI_DUET_SIZED_GROUP_(BITS, B, S)                                                              \
    static __device__ __forceinline__ void nvshmemx_put##BITS##_##S(void *dest, const void *src, size_t n,   \
                                                                    int pe)                                 \
    {                                                                                                       \
        nvshmemx_putmem_##S(dest, src, n * (B), pe);                                                        \
    }                                                                                                       \
    static __device__ __forceinline__ void nvshmemx_put##BITS##_nbi_##S(void *dest, const void *src,         \
                                                                        size_t n, int pe)                   \
    {                                                                                                       \
        nvshmemx_putmem_nbi_##S(dest, src, n * (B), pe);                                                    \
    }                                                                                                       \
    static __device__ __forceinline__ void nvshmemx_get##BITS##_##S(void *dest, const void *src, size_t n,   \
                                                                    int pe)                                 \
    {                                                                                                       \
        nvshmemx_getmem_##S(dest, src, n * (B), pe);                                                        \
    }                                                                                                       \
    static __device__ __forceinline__ void nvshmemx_get##BITS##_nbi_##S(void *dest, const void *src,         \
                                                                        size_t n, int pe)                   \
    {                                                                                                       \
        nvshmemx_getmem_nbi_##S(dest, src, n * (B), pe);                                                    \
    }
#define NVSHMEMI_DUET_SIZED_WARP_(BITS, B) NVSHMEMI_DUET_SIZED_GROUP_(BITS, B, warp)
#define NVSHMEMI_DUET_SIZED_BLOCK_(BITS, B) NVSHMEMI_DUET_SIZED_GROUP_(BITS, B, block)
NVSHMEMI_DUET_SIZES(NVSHMEMI_DUET_SIZED_WARP_)
NVSHMEMI_DUET_SIZES(NVSHMEMI_DUET_SIZED_BLOCK_)

/* ---- strided put / get (device): iput, iget ---------------------------------------------
 * nelems elements; element i goes from source[i * sst] to dest[i * dst] (strides in elements,
 * as NVSHMEM). put: dest is symmetric (on pe); get: source is. Thread scope, and _warp / _block
 * forms that share the elements among the group and end with a group sync. Element-wise loads
 * and stores, like NVSHMEM's own P2P path; completion as the contiguous forms (quiet). */
template <typename T>
static __device__ __forceinline__ void nvshmemi_duet_strided(T *dest, const T *src, ptrdiff_t dst, ptrdiff_t sst,
                                                             size_t n, int pe, int get, unsigned tid, unsigned nthr)
{
    if (get) src = duet_dev_ptr(NVSHMEMI_DUET_W, src, pe);
    else dest = duet_dev_ptr(NVSHMEMI_DUET_W, dest, pe);
    for (size_t i = tid; i < n; i += nthr) dest[(ptrdiff_t)i * dst] = src[(ptrdiff_t)i * sst];
}
#define NVSHMEMI_DUET_STRIDED_(T, N)                                                                        \
    static __device__ __forceinline__ void nvshmem_##N##_iput(T *dest, const T *source, ptrdiff_t dst,       \
                                                              ptrdiff_t sst, size_t nelems, int pe)         \
    {                                                                                                       \
        nvshmemi_duet_strided<T>(dest, source, dst, sst, nelems, pe, 0, 0, 1);                              \
    }                                                                                                       \
    static __device__ __forceinline__ void nvshmem_##N##_iget(T *dest, const T *source, ptrdiff_t dst,       \
                                                              ptrdiff_t sst, size_t nelems, int pe)         \
    {                                                                                                       \
        nvshmemi_duet_strided<T>(dest, source, dst, sst, nelems, pe, 1, 0, 1);                              \
    }                                                                                                       \
    static __device__ __forceinline__ void nvshmemx_##N##_iput_warp(T *dest, const T *source, ptrdiff_t dst, \
                                                                    ptrdiff_t sst, size_t nelems, int pe)   \
    {                                                                                                       \
        nvshmemi_duet_strided<T>(dest, source, dst, sst, nelems, pe, 0, duet_dev_lane(), 32);     \
        __syncwarp();                                                                                       \
    }                                                                                                       \
    static __device__ __forceinline__ void nvshmemx_##N##_iget_warp(T *dest, const T *source, ptrdiff_t dst, \
                                                                    ptrdiff_t sst, size_t nelems, int pe)   \
    {                                                                                                       \
        nvshmemi_duet_strided<T>(dest, source, dst, sst, nelems, pe, 1, duet_dev_lane(), 32);     \
        __syncwarp();                                                                                       \
    }                                                                                                       \
    static __device__ __forceinline__ void nvshmemx_##N##_iput_block(T *dest, const T *source, ptrdiff_t dst, \
                                                                     ptrdiff_t sst, size_t nelems, int pe)  \
    {                                                                                                       \
        nvshmemi_duet_strided<T>(dest, source, dst, sst, nelems, pe, 0, duet_dev_block_thread(),        \
                                 duet_dev_block_threads());                                            \
        __syncthreads();                                                                                    \
    }                                                                                                       \
    static __device__ __forceinline__ void nvshmemx_##N##_iget_block(T *dest, const T *source, ptrdiff_t dst, \
                                                                     ptrdiff_t sst, size_t nelems, int pe)  \
    {                                                                                                       \
        nvshmemi_duet_strided<T>(dest, source, dst, sst, nelems, pe, 1, duet_dev_block_thread(),        \
                                 duet_dev_block_threads());                                            \
        __syncthreads();                                                                                    \
    }
NVSHMEMI_DUET_RMA_TYPES(NVSHMEMI_DUET_STRIDED_)
/* Sized: iput8 ... iput128 (elements of 1 ... 16 bytes). */
#define NVSHMEMI_DUET_SIZED_STRIDED_(BITS, B)                                                               \
    using nvshmemi_duet_elem##BITS##_t = typename std::conditional<                                          \
        (B) == 1, uint8_t, typename std::conditional<(B) == 2, uint16_t, typename std::conditional<           \
        (B) == 4, uint32_t, typename std::conditional<(B) == 8, uint64_t, uint4>::type>::type>::type>::type; \
    static __device__ __forceinline__ void nvshmem_iput##BITS(void *dest, const void *source, ptrdiff_t dst, \
                                                              ptrdiff_t sst, size_t nelems, int pe)         \
    {                                                                                                       \
        using E = nvshmemi_duet_elem##BITS##_t;                                                             \
        nvshmemi_duet_strided<E>((E *)dest, (const E *)source, dst, sst, nelems, pe, 0, 0, 1);              \
    }                                                                                                       \
    static __device__ __forceinline__ void nvshmem_iget##BITS(void *dest, const void *source, ptrdiff_t dst, \
                                                              ptrdiff_t sst, size_t nelems, int pe)         \
    {                                                                                                       \
        using E = nvshmemi_duet_elem##BITS##_t;                                                             \
        nvshmemi_duet_strided<E>((E *)dest, (const E *)source, dst, sst, nelems, pe, 1, 0, 1);              \
    }                                                                                                       \
    static __device__ __forceinline__ void nvshmemx_iput##BITS##_warp(void *dest, const void *source,        \
                                                                      ptrdiff_t dst, ptrdiff_t sst,         \
                                                                      size_t nelems, int pe)                \
    {                                                                                                       \
        using E = nvshmemi_duet_elem##BITS##_t;                                                             \
        nvshmemi_duet_strided<E>((E *)dest, (const E *)source, dst, sst, nelems, pe, 0,                     \
                                 duet_dev_lane(), 32);                                           \
        __syncwarp();                                                                                       \
    }                                                                                                       \
    static __device__ __forceinline__ void nvshmemx_iget##BITS##_warp(void *dest, const void *source,        \
                                                                      ptrdiff_t dst, ptrdiff_t sst,         \
                                                                      size_t nelems, int pe)                \
    {                                                                                                       \
        using E = nvshmemi_duet_elem##BITS##_t;                                                             \
        nvshmemi_duet_strided<E>((E *)dest, (const E *)source, dst, sst, nelems, pe, 1,                     \
                                 duet_dev_lane(), 32);                                           \
        __syncwarp();                                                                                       \
    }                                                                                                       \
    static __device__ __forceinline__ void nvshmemx_iput##BITS##_block(void *dest, const void *source,       \
                                                                       ptrdiff_t dst, ptrdiff_t sst,        \
                                                                       size_t nelems, int pe)               \
    {                                                                                                       \
        using E = nvshmemi_duet_elem##BITS##_t;                                                             \
        nvshmemi_duet_strided<E>((E *)dest, (const E *)source, dst, sst, nelems, pe, 0,                     \
                                 duet_dev_block_thread(), duet_dev_block_threads());              \
        __syncthreads();                                                                                    \
    }                                                                                                       \
    static __device__ __forceinline__ void nvshmemx_iget##BITS##_block(void *dest, const void *source,       \
                                                                       ptrdiff_t dst, ptrdiff_t sst,        \
                                                                       size_t nelems, int pe)               \
    {                                                                                                       \
        using E = nvshmemi_duet_elem##BITS##_t;                                                             \
        nvshmemi_duet_strided<E>((E *)dest, (const E *)source, dst, sst, nelems, pe, 1,                     \
                                 duet_dev_block_thread(), duet_dev_block_threads());              \
        __syncthreads();                                                                                    \
    }
NVSHMEMI_DUET_SIZES(NVSHMEMI_DUET_SIZED_STRIDED_)
#endif /* __CUDACC__ */

#endif /* DUET_NVSHMEM_RMA_H */
