/*
 * duet_nvshmem/nvshmem_waitset.h — NVSHMEM's waits and tests on sets of my own symmetric words
 * (internal; include <nvshmem.h>): nvshmem_TYPENAME_wait_until_all / _any / _some, their _vector
 * forms, test_all / _any / _some and their _vector forms, in kernels (thread scope), with
 * NVSHMEM's semantics:
 *   - status: NULL, or nelems ints; ivars[i] takes part when status[i] == 0 (the "wait set").
 *   - wait_until_all: returns when every word of the set compares true (at once for an empty set).
 *   - wait_until_any: the index of one word of the set that compares true; SIZE_MAX for an empty
 *     set. As NVSHMEM, the scan starts at a rotating index (a per-file device counter), so
 *     repeated calls do not always favour the lowest index; which index comes back is not
 *     specified.
 *   - wait_until_some: waits until at least one word compares true and writes the indices of
 *     those that do to indices[] (ascending); returns how many (0 for an empty set).
 *   - test_all: 1 when every word of the set compares true now (1 for an empty set), else 0;
 *     test_any: an index that compares true now (rotating start), or SIZE_MAX; test_some: the
 *     indices that compare true now, and their number.
 *   - _vector forms compare ivars[i] with cmp_values[i].
 * Every read is an acquire load at system scope (the data a peer wrote before its update of the
 * word is visible after it); waits watch the abort word like every Duet wait and trap when the
 * communicator fails. Types: NVSHMEMI_DUET_WAIT_TYPES (NVSHMEM's point-to-point types: the
 * 4- and 8-byte ones of NVSHMEMI_DUET_SYNC_TYPES plus short and ushort, which also get
 * wait_until and test here).
 */
#ifndef DUET_NVSHMEM_WAITSET_H
#define DUET_NVSHMEM_WAITSET_H

#include "duet_nvshmem/nvshmem_sync.h"

#ifdef __CUDACC__
/* An acquire load of a 2-, 4- or 8-byte word. */
template <typename T> static __device__ __forceinline__ T nvshmemi_duet_ld_acquire(const T *p)
{
    if constexpr (sizeof(T) == 2) {
        unsigned short v;
        asm volatile("ld.acquire.sys.global.b16 %0, [%1];" : "=h"(v) : "l"(p) : "memory");
        T t;
        memcpy(&t, &v, sizeof t);
        return t;
    } else {
        return duet_dev_load_acquire(p);
    }
}
template <typename T> static __device__ __forceinline__ bool nvshmemi_duet_cmp_true(const T *p, int c, T value)
{
    return duet_dev_compare(nvshmemi_duet_ld_acquire(p), c, value);
}
/* Every ABORT_EVERY polls: trap when the world's abort word is set. */
static __device__ __forceinline__ void nvshmemi_duet_poll_abort(const char *call, unsigned spin)
{
    if (spin % DUET_DEV_ABORT_EVERY == 0) {
        int st = duet_dev_abort_status(NVSHMEMI_DUET_W);
        if (st) nvshmemi_duet_trap(call, st);
    }
}
static __device__ __forceinline__ int nvshmemi_duet_cmp_dev(const char *call, int cmp)
{
    int c = nvshmemi_duet_cmp(cmp);
    if (c < 0) nvshmemi_duet_trap(call, cmp);
    return c;
}
/* The rotating start of the "any" scans (one counter per translation unit, as NVSHMEM keeps one). */
static __device__ unsigned long long nvshmemi_duet_any_start;

/* The value ivars[i] is compared with: one value, or values[i] (vector forms). */
template <typename T> struct nvshmemi_duet_cmpv {
    T one;
    const T *vec;
    __device__ __forceinline__ T at(size_t i) const { return vec ? vec[i] : one; }
};

template <typename T> static __device__ __forceinline__ nvshmemi_duet_cmpv<T> nvshmemi_duet_vec(const T *values)
{
    nvshmemi_duet_cmpv<T> c{};
    c.vec = values;
    return c;
}

template <typename T>
static __device__ __forceinline__ void nvshmemi_duet_wait_all(const char *call, T *ivars, size_t n, const int *status,
                                                              int cmp, nvshmemi_duet_cmpv<T> v)
{
    int c = nvshmemi_duet_cmp_dev(call, cmp);
    for (size_t i = 0; i < n; i++) {
        if (status && status[i]) continue;
        for (unsigned spin = 1; !nvshmemi_duet_cmp_true(ivars + i, c, v.at(i)); spin++)
            nvshmemi_duet_poll_abort(call, spin);
    }
}
/* One scan from a rotating start: an index that compares true, or SIZE_MAX; *empty says whether
 * the set is empty. */
template <typename T>
static __device__ __forceinline__ size_t nvshmemi_duet_scan_any(T *ivars, size_t n, const int *status, int c,
                                                                nvshmemi_duet_cmpv<T> v, size_t start, bool *empty)
{
    *empty = true;
    for (size_t k = 0; k < n; k++) {
        size_t i = (start + k) % n;
        if (status && status[i]) continue;
        *empty = false;
        if (nvshmemi_duet_cmp_true(ivars + i, c, v.at(i))) return i;
    }
    return SIZE_MAX;
}
template <typename T>
static __device__ __forceinline__ size_t nvshmemi_duet_wait_any(const char *call, T *ivars, size_t n,
                                                                const int *status, int cmp, nvshmemi_duet_cmpv<T> v)
{
    int c = nvshmemi_duet_cmp_dev(call, cmp);
    if (n == 0) return SIZE_MAX;
    size_t start = (size_t)(atomicAdd(&nvshmemi_duet_any_start, 1ull) % n);
    for (unsigned spin = 1;; spin++) {
        bool empty;
        size_t i = nvshmemi_duet_scan_any(ivars, n, status, c, v, start, &empty);
        if (i != SIZE_MAX || empty) return i;
        nvshmemi_duet_poll_abort(call, spin);
    }
}
template <typename T>
static __device__ __forceinline__ size_t nvshmemi_duet_test_some(T *ivars, size_t n, size_t *indices,
                                                                 const int *status, int c, nvshmemi_duet_cmpv<T> v)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if ((!status || !status[i]) && nvshmemi_duet_cmp_true(ivars + i, c, v.at(i))) indices[k++] = i;
    return k;
}
template <typename T>
static __device__ __forceinline__ size_t nvshmemi_duet_wait_some(const char *call, T *ivars, size_t n,
                                                                 size_t *indices, const int *status, int cmp,
                                                                 nvshmemi_duet_cmpv<T> v)
{
    int c = nvshmemi_duet_cmp_dev(call, cmp);
    for (unsigned spin = 1;; spin++) {
        size_t k = nvshmemi_duet_test_some(ivars, n, indices, status, c, v);
        if (k) return k;
        bool empty = true;
        for (size_t i = 0; i < n && empty; i++) empty = status && status[i];
        if (empty) return 0;
        nvshmemi_duet_poll_abort(call, spin);
    }
}
template <typename T>
static __device__ __forceinline__ int nvshmemi_duet_test_all(const char *call, T *ivars, size_t n, const int *status,
                                                             int cmp, nvshmemi_duet_cmpv<T> v)
{
    int c = nvshmemi_duet_cmp_dev(call, cmp);
    for (size_t i = 0; i < n; i++)
        if ((!status || !status[i]) && !nvshmemi_duet_cmp_true(ivars + i, c, v.at(i))) return 0;
    return 1;
}
template <typename T>
static __device__ __forceinline__ size_t nvshmemi_duet_test_any(const char *call, T *ivars, size_t n,
                                                                const int *status, int cmp, nvshmemi_duet_cmpv<T> v)
{
    int c = nvshmemi_duet_cmp_dev(call, cmp);
    if (n == 0) return SIZE_MAX;
    bool empty;
    return nvshmemi_duet_scan_any(ivars, n, status, c, v, (size_t)(atomicAdd(&nvshmemi_duet_any_start, 1ull) % n),
                                  &empty);
}

/* wait_until / test for the 2-byte point-to-point types (the others are in nvshmem_sync.h). */
#define NVSHMEMI_DUET_WAIT16_(T, N)                                                                         \
    static __device__ __forceinline__ void nvshmem_##N##_wait_until(T *ivar, int cmp, T value)              \
    {                                                                                                       \
        nvshmemi_duet_wait_all<T>("nvshmem_" #N "_wait_until", ivar, 1, nullptr, cmp, {value, nullptr});     \
    }                                                                                                       \
    static __device__ __forceinline__ int nvshmem_##N##_test(T *ivar, int cmp, T value)                     \
    {                                                                                                       \
        return nvshmemi_duet_cmp_true<T>(ivar, nvshmemi_duet_cmp_dev("nvshmem_" #N "_test", cmp), value);    \
    }
NVSHMEMI_DUET_WAIT16_(short, short)
NVSHMEMI_DUET_WAIT16_(unsigned short, ushort)

#define NVSHMEMI_DUET_WAIT_TYPES(X) NVSHMEMI_DUET_SYNC_TYPES(X) X(short, short) X(unsigned short, ushort)

#define NVSHMEMI_DUET_WAITSET_(T, N)                                                                        \
    static __device__ __forceinline__ void nvshmem_##N##_wait_until_all(T *ivars, size_t nelems,             \
                                                                        const int *status, int cmp, T value) \
    {                                                                                                       \
        nvshmemi_duet_wait_all<T>("nvshmem_" #N "_wait_until_all", ivars, nelems, status, cmp, {value, nullptr}); \
    }                                                                                                       \
    static __device__ __forceinline__ size_t nvshmem_##N##_wait_until_any(T *ivars, size_t nelems,           \
                                                                          const int *status, int cmp, T value) \
    {                                                                                                       \
        return nvshmemi_duet_wait_any<T>("nvshmem_" #N "_wait_until_any", ivars, nelems, status, cmp,        \
                                         {value, nullptr});                                                 \
    }                                                                                                       \
    static __device__ __forceinline__ size_t nvshmem_##N##_wait_until_some(                                 \
        T *ivars, size_t nelems, size_t *indices, const int *status, int cmp, T value)                      \
    {                                                                                                       \
        return nvshmemi_duet_wait_some<T>("nvshmem_" #N "_wait_until_some", ivars, nelems, indices, status,  \
                                          cmp, {value, nullptr});                                           \
    }                                                                                                       \
    static __device__ __forceinline__ void nvshmem_##N##_wait_until_all_vector(                             \
        T *ivars, size_t nelems, const int *status, int cmp, T *values)                                     \
    {                                                                                                       \
        nvshmemi_duet_wait_all<T>("nvshmem_" #N "_wait_until_all_vector", ivars, nelems, status, cmp,        \
                                  nvshmemi_duet_vec<T>(values));                                                           \
    }                                                                                                       \
    static __device__ __forceinline__ size_t nvshmem_##N##_wait_until_any_vector(                           \
        T *ivars, size_t nelems, const int *status, int cmp, T *values)                                     \
    {                                                                                                       \
        return nvshmemi_duet_wait_any<T>("nvshmem_" #N "_wait_until_any_vector", ivars, nelems, status, cmp, \
                                         nvshmemi_duet_vec<T>(values));                                                    \
    }                                                                                                       \
    static __device__ __forceinline__ size_t nvshmem_##N##_wait_until_some_vector(                          \
        T *ivars, size_t nelems, size_t *indices, const int *status, int cmp, T *values)                    \
    {                                                                                                       \
        return nvshmemi_duet_wait_some<T>("nvshmem_" #N "_wait_until_some_vector", ivars, nelems, indices,   \
                                          status, cmp, nvshmemi_duet_vec<T>(values));                                      \
    }                                                                                                       \
    static __device__ __forceinline__ int nvshmem_##N##_test_all(T *ivars, size_t nelems, const int *status, \
                                                                 int cmp, T value)                          \
    {                                                                                                       \
        return nvshmemi_duet_test_all<T>("nvshmem_" #N "_test_all", ivars, nelems, status, cmp, {value, nullptr}); \
    }                                                                                                       \
    static __device__ __forceinline__ size_t nvshmem_##N##_test_any(T *ivars, size_t nelems, const int *status, \
                                                                    int cmp, T value)                       \
    {                                                                                                       \
        return nvshmemi_duet_test_any<T>("nvshmem_" #N "_test_any", ivars, nelems, status, cmp, {value, nullptr}); \
    }                                                                                                       \
    static __device__ __forceinline__ size_t nvshmem_##N##_test_some(T *ivars, size_t nelems, size_t *indices, \
                                                                     const int *status, int cmp, T value)   \
    {                                                                                                       \
        return nvshmemi_duet_test_some<T>(ivars, nelems, indices, status,                                   \
                                          nvshmemi_duet_cmp_dev("nvshmem_" #N "_test_some", cmp), {value, nullptr}); \
    }                                                                                                       \
    static __device__ __forceinline__ int nvshmem_##N##_test_all_vector(T *ivars, size_t nelems,             \
                                                                        const int *status, int cmp, T *values) \
    {                                                                                                       \
        return nvshmemi_duet_test_all<T>("nvshmem_" #N "_test_all_vector", ivars, nelems, status, cmp,       \
                                         nvshmemi_duet_vec<T>(values));                                                    \
    }                                                                                                       \
    static __device__ __forceinline__ size_t nvshmem_##N##_test_any_vector(T *ivars, size_t nelems,          \
                                                                           const int *status, int cmp,      \
                                                                           T *values)                       \
    {                                                                                                       \
        return nvshmemi_duet_test_any<T>("nvshmem_" #N "_test_any_vector", ivars, nelems, status, cmp,       \
                                         nvshmemi_duet_vec<T>(values));                                                    \
    }                                                                                                       \
    static __device__ __forceinline__ size_t nvshmem_##N##_test_some_vector(                                \
        T *ivars, size_t nelems, size_t *indices, const int *status, int cmp, T *values)                    \
    {                                                                                                       \
        return nvshmemi_duet_test_some<T>(ivars, nelems, indices, status,                                   \
                                          nvshmemi_duet_cmp_dev("nvshmem_" #N "_test_some_vector", cmp),    \
                                          nvshmemi_duet_vec<T>(values));                                                   \
    }
NVSHMEMI_DUET_WAIT_TYPES(NVSHMEMI_DUET_WAITSET_)
#endif /* __CUDACC__ */

#endif /* DUET_NVSHMEM_WAITSET_H */
