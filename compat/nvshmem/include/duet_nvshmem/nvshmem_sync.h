/*
 * duet_nvshmem/nvshmem_sync.h — NVSHMEM's signals, waits, ordering, barriers, atomics and
 * stream-ordered host calls over Duet (internal; include <nvshmem.h>).
 *
 * Waits in kernels poll with acquire loads (Duet's duet_dev_wait_until) and watch the
 * communicator's abort word: when a pe dies or the communicator is revoked, the waiting kernel
 * prints why and traps (NVSHMEM's calls return nothing to report it with); the host then sees
 * the launch fail and duet_comm_status() says which pe. A bad comparison or signal operator
 * traps the same way.
 */
#ifndef DUET_NVSHMEM_SYNC_H
#define DUET_NVSHMEM_SYNC_H

#include "duet_nvshmem/nvshmem_state.h"

/* NVSHMEM's point-to-point synchronization types, as X(TYPE, NAME): 4- and 8-byte integers. */
#define NVSHMEMI_DUET_SYNC_TYPES(X)                                                                    \
    X(int, int) X(long, long) X(long long, longlong) X(unsigned int, uint) X(unsigned long, ulong)      \
    X(unsigned long long, ulonglong) X(int32_t, int32) X(int64_t, int64) X(uint32_t, uint32)            \
    X(uint64_t, uint64) X(size_t, size) X(ptrdiff_t, ptrdiff)

/* ---- signals ---------------------------------------------------------------------------- */

/* Sets / adds to the signal on pe, atomically; ordered after earlier puts only by a fence. */
static __host__ __device__ __forceinline__ void nvshmemx_signal_op(uint64_t *sig_addr, uint64_t signal, int sig_op,
                                                                  int pe)
{
    int op = nvshmemi_duet_sig_op(sig_op);
#ifdef __CUDA_ARCH__
    if (op < 0) nvshmemi_duet_trap("nvshmemx_signal_op: sig_op", sig_op);
    duet_dev_signal_op(NVSHMEMI_DUET_W, sig_addr, signal, op, pe);
#else
    if (op < 0) nvshmemi_duet_die("nvshmemx_signal_op", "sig_op is not NVSHMEM_SIGNAL_SET / _ADD");
    nvshmemi_duet_check(duet_signal_op(nvshmemi_duet_world("nvshmemx_signal_op"), sig_addr, signal, op, pe),
                        "nvshmemx_signal_op");
#endif
}
/* My signal's value (acquire). */
static __host__ __device__ __forceinline__ uint64_t nvshmem_signal_fetch(uint64_t *sig_addr)
{
#ifdef __CUDA_ARCH__
    return duet_dev_signal_fetch(sig_addr);
#else
    uint64_t v = 0;
    nvshmemi_duet_check(duet_signal_fetch(nvshmemi_duet_world("nvshmem_signal_fetch"), sig_addr, &v),
                        "nvshmem_signal_fetch");
    return v;
#endif
}

#ifdef __CUDACC__
/* ---- waits (device) --------------------------------------------------------------------- */
template <typename T>
static __device__ __forceinline__ T nvshmemi_duet_wait(const char *call, T *ivar, int cmp, T value)
{
    int c = nvshmemi_duet_cmp(cmp);
    if (c < 0) nvshmemi_duet_trap(call, cmp);
    using W = typename std::conditional<sizeof(T) == 4, uint32_t, uint64_t>::type;
    static_assert(sizeof(T) == sizeof(W), "4- or 8-byte types");
    W got = 0;
    int st;
    if constexpr (std::is_signed<T>::value) {
        /* Duet compares by the pointer's type: keep the sign */
        using S = typename std::conditional<sizeof(T) == 4, int32_t, int64_t>::type;
        S g2 = 0;
        st = duet_dev_wait_until<S>(NVSHMEMI_DUET_W, (const S *)ivar, c, (S)value, &g2);
        got = (W)g2;
    } else {
        st = duet_dev_wait_until<W>(NVSHMEMI_DUET_W, (const W *)ivar, c, (W)value, &got);
    }
    if (st) nvshmemi_duet_trap(call, st);
    return (T)got;
}
/* Waits until my signal compares true against value; returns the value that satisfied it. */
static __device__ __forceinline__ uint64_t nvshmem_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t value)
{
    return nvshmemi_duet_wait<uint64_t>("nvshmem_signal_wait_until", sig_addr, cmp, value);
}
#define NVSHMEMI_DUET_WAIT_(T, N)                                                                           \
    static __device__ __forceinline__ void nvshmem_##N##_wait_until(T *ivar, int cmp, T value)              \
    {                                                                                                       \
        (void)nvshmemi_duet_wait<T>("nvshmem_" #N "_wait_until", ivar, cmp, value);                         \
    }                                                                                                       \
    static __device__ __forceinline__ int nvshmem_##N##_test(T *ivar, int cmp, T value)                     \
    {                                                                                                       \
        int c = nvshmemi_duet_cmp(cmp);                                                                     \
        if (c < 0) nvshmemi_duet_trap("nvshmem_" #N "_test", cmp);                                          \
        return duet_dev_test<T>(ivar, c, value);                                                            \
    }
NVSHMEMI_DUET_SYNC_TYPES(NVSHMEMI_DUET_WAIT_)

/* ---- atomics (device) ------------------------------------------------------------------- */
#define NVSHMEMI_DUET_AMO_(T, N)                                                                            \
    static __device__ __forceinline__ T nvshmem_##N##_atomic_fetch(const T *src, int pe)                    \
    {                                                                                                       \
        return duet_dev_atomic_fetch<T>(NVSHMEMI_DUET_W, src, pe);                                          \
    }                                                                                                       \
    static __device__ __forceinline__ void nvshmem_##N##_atomic_set(T *dest, T value, int pe)               \
    {                                                                                                       \
        duet_dev_atomic_set<T>(NVSHMEMI_DUET_W, dest, value, pe);                                           \
    }                                                                                                       \
    static __device__ __forceinline__ T nvshmem_##N##_atomic_swap(T *dest, T value, int pe)                 \
    {                                                                                                       \
        return duet_dev_atomic_swap<T>(NVSHMEMI_DUET_W, dest, value, pe);                                   \
    }                                                                                                       \
    static __device__ __forceinline__ T nvshmem_##N##_atomic_compare_swap(T *dest, T cond, T value, int pe) \
    {                                                                                                       \
        return duet_dev_atomic_compare_swap<T>(NVSHMEMI_DUET_W, dest, cond, value, pe);                     \
    }                                                                                                       \
    static __device__ __forceinline__ T nvshmem_##N##_atomic_fetch_add(T *dest, T value, int pe)            \
    {                                                                                                       \
        return duet_dev_atomic_fetch_add<T>(NVSHMEMI_DUET_W, dest, value, pe);                              \
    }                                                                                                       \
    static __device__ __forceinline__ void nvshmem_##N##_atomic_add(T *dest, T value, int pe)               \
    {                                                                                                       \
        duet_dev_atomic_add<T>(NVSHMEMI_DUET_W, dest, value, pe);                                           \
    }                                                                                                       \
    static __device__ __forceinline__ T nvshmem_##N##_atomic_fetch_inc(T *dest, int pe)                     \
    {                                                                                                       \
        return duet_dev_atomic_fetch_inc<T>(NVSHMEMI_DUET_W, dest, pe);                                     \
    }                                                                                                       \
    static __device__ __forceinline__ void nvshmem_##N##_atomic_inc(T *dest, int pe)                        \
    {                                                                                                       \
        duet_dev_atomic_inc<T>(NVSHMEMI_DUET_W, dest, pe);                                                  \
    }
NVSHMEMI_DUET_SYNC_TYPES(NVSHMEMI_DUET_AMO_)

/* Bitwise atomics on NVSHMEM's bitwise AMO types: Duet's duet_dev_atomic_fetch_and / _or / _xor
 * (atom.sys, relaxed; a remote pe's through the host proxy); fetch_ forms return the old value. */
#define NVSHMEMI_DUET_BITWISE_AMO_TYPES(X)                                                             \
    X(unsigned int, uint) X(unsigned long, ulong) X(unsigned long long, ulonglong) X(int32_t, int32)   \
    X(int64_t, int64) X(uint32_t, uint32) X(uint64_t, uint64)
template <typename T>
static __device__ __forceinline__ T nvshmemi_duet_amo_bit(T *dest, T value, int pe, int op)
{
    return op == 0 ? duet_dev_atomic_fetch_and<T>(NVSHMEMI_DUET_W, dest, value, pe)
         : op == 1 ? duet_dev_atomic_fetch_or<T>(NVSHMEMI_DUET_W, dest, value, pe)
                   : duet_dev_atomic_fetch_xor<T>(NVSHMEMI_DUET_W, dest, value, pe);
}
#define NVSHMEMI_DUET_AMO_BIT_(T, N)                                                                        \
    static __device__ __forceinline__ T nvshmem_##N##_atomic_fetch_and(T *dest, T value, int pe)            \
    {                                                                                                       \
        return nvshmemi_duet_amo_bit<T>(dest, value, pe, 0);                                                \
    }                                                                                                       \
    static __device__ __forceinline__ void nvshmem_##N##_atomic_and(T *dest, T value, int pe)               \
    {                                                                                                       \
        (void)nvshmemi_duet_amo_bit<T>(dest, value, pe, 0);                                                 \
    }                                                                                                       \
    static __device__ __forceinline__ T nvshmem_##N##_atomic_fetch_or(T *dest, T value, int pe)             \
    {                                                                                                       \
        return nvshmemi_duet_amo_bit<T>(dest, value, pe, 1);                                                \
    }                                                                                                       \
    static __device__ __forceinline__ void nvshmem_##N##_atomic_or(T *dest, T value, int pe)                \
    {                                                                                                       \
        (void)nvshmemi_duet_amo_bit<T>(dest, value, pe, 1);                                                 \
    }                                                                                                       \
    static __device__ __forceinline__ T nvshmem_##N##_atomic_fetch_xor(T *dest, T value, int pe)            \
    {                                                                                                       \
        return nvshmemi_duet_amo_bit<T>(dest, value, pe, 2);                                                \
    }                                                                                                       \
    static __device__ __forceinline__ void nvshmem_##N##_atomic_xor(T *dest, T value, int pe)               \
    {                                                                                                       \
        (void)nvshmemi_duet_amo_bit<T>(dest, value, pe, 2);                                                 \
    }
NVSHMEMI_DUET_BITWISE_AMO_TYPES(NVSHMEMI_DUET_AMO_BIT_)

/* The extended AMO types' float and double: Duet's fetch (ld.relaxed.sys), set (st.relaxed.sys)
 * and swap (atom.sys.exch on the bits). */
#define NVSHMEMI_DUET_AMO_EXT_(T, N)                                                                        \
    static __device__ __forceinline__ T nvshmem_##N##_atomic_fetch(const T *src, int pe)                    \
    {                                                                                                       \
        return duet_dev_atomic_fetch<T>(NVSHMEMI_DUET_W, src, pe);                                          \
    }                                                                                                       \
    static __device__ __forceinline__ void nvshmem_##N##_atomic_set(T *dest, T value, int pe)               \
    {                                                                                                       \
        duet_dev_atomic_set<T>(NVSHMEMI_DUET_W, dest, value, pe);                                           \
    }                                                                                                       \
    static __device__ __forceinline__ T nvshmem_##N##_atomic_swap(T *dest, T value, int pe)                 \
    {                                                                                                       \
        return duet_dev_atomic_swap<T>(NVSHMEMI_DUET_W, dest, value, pe);                                   \
    }
NVSHMEMI_DUET_AMO_EXT_(float, float)
NVSHMEMI_DUET_AMO_EXT_(double, double)
#endif /* __CUDACC__ */

/* ---- ordering --------------------------------------------------------------------------- */

/* Kernel: this thread's earlier puts / signals / atomics complete (visible at their targets).
 * Host: this process's host-issued ones (duet_quiet on the world). */
static __host__ __device__ __forceinline__ void nvshmem_quiet(void)
{
#ifdef __CUDA_ARCH__
    duet_dev_quiet(NVSHMEMI_DUET_W);
#else
    nvshmemi_duet_check(duet_quiet(nvshmemi_duet_world("nvshmem_quiet")), "nvshmem_quiet");
#endif
}
/* Orders earlier puts / signals / atomics to each pe before later ones (no completion). */
static __host__ __device__ __forceinline__ void nvshmem_fence(void)
{
#ifdef __CUDA_ARCH__
    duet_dev_fence(NVSHMEMI_DUET_W);
#else
    nvshmemi_duet_check(duet_fence(nvshmemi_duet_world("nvshmem_fence")), "nvshmem_fence");
#endif
}

/* ---- barriers --------------------------------------------------------------------------- */

/* Kernel (one thread per pe): quiet, then every pe of the team enters (Duet's device
 * barrier, which continues across launches and the _on_stream barriers). Host: duet_barrier
 * of the team (host-issued operations; synchronize your kernels first, as with NVSHMEM). */
static __host__ __device__ __forceinline__ void nvshmem_barrier(nvshmem_team_t team)
{
#ifdef __CUDA_ARCH__
    if (team < 0 || team >= NVSHMEM_DUET_MAX_TEAMS || !nvshmemi_duet_d.team[team].n_pes)
        nvshmemi_duet_trap("nvshmem_barrier: team", team);
    int st = duet_dev_barrier(nvshmemi_duet_d.team[team]);
    if (st) nvshmemi_duet_trap("nvshmem_barrier", st);
#else
    duet_comm_t c = nvshmemi_duet_team(team);
    if (!c) nvshmemi_duet_die("nvshmem_barrier", "not a team of this pe");
    nvshmemi_duet_check(duet_barrier(c), "nvshmem_barrier");
#endif
}
static __host__ __device__ __forceinline__ void nvshmem_barrier_all(void) { nvshmem_barrier(NVSHMEM_TEAM_WORLD); }
/* sync: a barrier without the quiet in NVSHMEM; here the barrier itself (stronger). */
static __host__ __device__ __forceinline__ void nvshmem_team_sync(nvshmem_team_t team) { nvshmem_barrier(team); }
static __host__ __device__ __forceinline__ void nvshmem_sync_all(void) { nvshmem_barrier(NVSHMEM_TEAM_WORLD); }

#ifdef __CUDACC__
#define NVSHMEMI_DUET_BARRIER_GROUP_(S)                                                                     \
    static __device__ __forceinline__ void nvshmemx_barrier_##S(nvshmem_team_t team)                        \
    {                                                                                                       \
        if (team < 0 || team >= NVSHMEM_DUET_MAX_TEAMS || !nvshmemi_duet_d.team[team].n_pes)                \
            nvshmemi_duet_trap("nvshmemx_barrier_" #S ": team", team);                                      \
        int st = duet_dev_barrier_##S(nvshmemi_duet_d.team[team]);                                          \
        if (st) nvshmemi_duet_trap("nvshmemx_barrier_" #S, st);                                             \
    }                                                                                                       \
    static __device__ __forceinline__ void nvshmemx_barrier_all_##S(void)                                   \
    {                                                                                                       \
        nvshmemx_barrier_##S(NVSHMEM_TEAM_WORLD);                                                           \
    }                                                                                                       \
    static __device__ __forceinline__ void nvshmemx_team_sync_##S(nvshmem_team_t team)                      \
    {                                                                                                       \
        nvshmemx_barrier_##S(team);                                                                         \
    }                                                                                                       \
    static __device__ __forceinline__ void nvshmemx_sync_all_##S(void) { nvshmemx_barrier_##S(NVSHMEM_TEAM_WORLD); }
NVSHMEMI_DUET_BARRIER_GROUP_(warp)
NVSHMEMI_DUET_BARRIER_GROUP_(block)
#endif /* __CUDACC__ */

/* ---- stream-ordered host calls (duet_cuda.h's _on_stream forms) ------------------------- */
static inline void nvshmemx_barrier_all_on_stream(cudaStream_t stream)
{
    nvshmemi_duet_check(duet_barrier_on_stream(nvshmemi_duet_world("nvshmemx_barrier_all_on_stream"), stream),
                        "nvshmemx_barrier_all_on_stream");
}
static inline void nvshmemx_barrier_on_stream(nvshmem_team_t team, cudaStream_t stream)
{
    duet_comm_t c = nvshmemi_duet_team(team);
    if (!c) nvshmemi_duet_die("nvshmemx_barrier_on_stream", "not a team of this pe");
    nvshmemi_duet_check(duet_barrier_on_stream(c, stream), "nvshmemx_barrier_on_stream");
}
static inline void nvshmemx_sync_all_on_stream(cudaStream_t stream) { nvshmemx_barrier_all_on_stream(stream); }
static inline void nvshmemx_team_sync_on_stream(nvshmem_team_t team, cudaStream_t stream)
{
    nvshmemx_barrier_on_stream(team, stream);
}
static inline void nvshmemx_putmem_on_stream(void *dest, const void *src, size_t bytes, int pe, cudaStream_t stream)
{
    nvshmemi_duet_check(duet_put_on_stream(nvshmemi_duet_world("nvshmemx_putmem_on_stream"), dest, src, bytes, pe,
                                           stream), "nvshmemx_putmem_on_stream");
}
static inline void nvshmemx_getmem_on_stream(void *dest, const void *src, size_t bytes, int pe, cudaStream_t stream)
{
    nvshmemi_duet_check(duet_get_on_stream(nvshmemi_duet_world("nvshmemx_getmem_on_stream"), dest, src, bytes, pe,
                                           stream), "nvshmemx_getmem_on_stream");
}
static inline void nvshmemx_signal_op_on_stream(uint64_t *sig_addr, uint64_t signal, int sig_op, int pe,
                                                cudaStream_t stream)
{
    int op = nvshmemi_duet_sig_op(sig_op);
    if (op < 0) nvshmemi_duet_die("nvshmemx_signal_op_on_stream", "sig_op is not NVSHMEM_SIGNAL_SET / _ADD");
    nvshmemi_duet_check(duet_signal_op_on_stream(nvshmemi_duet_world("nvshmemx_signal_op_on_stream"), sig_addr,
                                                 signal, op, pe, stream), "nvshmemx_signal_op_on_stream");
}
/* The stream's later work waits until my signal compares true (a one-thread kernel polls). */
static inline void nvshmemx_signal_wait_until_on_stream(uint64_t *sig_addr, int cmp, uint64_t value,
                                                        cudaStream_t stream)
{
    int c = nvshmemi_duet_cmp(cmp);
    if (c < 0) nvshmemi_duet_die("nvshmemx_signal_wait_until_on_stream", "bad NVSHMEM_CMP_ operator");
    nvshmemi_duet_check(duet_signal_wait_until_on_stream(nvshmemi_duet_world("nvshmemx_signal_wait_until_on_stream"),
                                                         sig_addr, c, value, stream),
                        "nvshmemx_signal_wait_until_on_stream");
}
static inline void nvshmemx_uint64_wait_until_on_stream(uint64_t *ivar, int cmp, uint64_t value, cudaStream_t stream)
{
    nvshmemx_signal_wait_until_on_stream(ivar, cmp, value, stream);
}
/* Later work of the stream starts after this process's pending host nbi operations. */
static inline void nvshmemx_quiet_on_stream(cudaStream_t stream)
{
    nvshmemi_duet_check(duet_quiet_on_stream(nvshmemi_duet_world("nvshmemx_quiet_on_stream"), stream),
                        "nvshmemx_quiet_on_stream");
}

#endif /* DUET_NVSHMEM_SYNC_H */
