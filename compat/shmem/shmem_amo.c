/*
 * shmem_amo.c — atomic memory operations for every standard AMO type (fetch, set, swap,
 * compare_swap, fetch_inc, inc, fetch_add, add), the bitwise ones (fetch_and/or/xor,
 * and/or/xor), the extended ones on float and double (fetch, set, swap), and the nbi
 * fetching forms; each with and without a context.
 *
 * A heap target is Duet's duet_atomic_*_<type> (a CPU atomic on the mapped peer segment); a
 * static target is the same CPU atomic on the peer's mapping of the data segment, done here
 * with the __atomic builtins at the type's own width, so a 32-bit compare-swap or fetch-and
 * touches exactly 32 bits. The nbi forms complete at once and store the old value in *fetch.
 */
#include "shmem_internal.h"

#define SHM_SEQ __ATOMIC_SEQ_CST

/* The static-data peer address of an atomic on T, aligned; NULL for the heap. */
#define SHM_AMO_PEER_(T, c, d, pe, fn)                                                             \
    ({                                                                                             \
        struct duet_shmem_team *t_ = shm_ctx_team(c, fn);                                          \
        T *p_ = shm_static_peer(t_, d, sizeof(T), pe, fn);                                         \
        if (p_ && (uintptr_t)p_ % sizeof(T)) shm_die(fn, "%p is not aligned to %zu bytes", (void *)(d), sizeof(T)); \
        p_;                                                                                        \
    })
#define SHM_COMM_(c) ((c)->team->comm)

/* fetch, set, swap (every AMO type, float and double too) */
#define SHM_AMO_EXT_(T, N)                                                                         \
    T shmem_ctx_##N##_atomic_fetch(shmem_ctx_t c, const T *s, int pe)                              \
    {                                                                                              \
        const char *fn = "shmem_" #N "_atomic_fetch";                                              \
        T *p = SHM_AMO_PEER_(T, c, s, pe, fn), v;                                                  \
        if (p) __atomic_load(p, &v, SHM_SEQ);                                                      \
        else shm_check(duet_atomic_fetch_##N(SHM_COMM_(c), s, pe, &v), fn);                        \
        return v;                                                                                  \
    }                                                                                              \
    void shmem_ctx_##N##_atomic_set(shmem_ctx_t c, T *d, T v, int pe)                              \
    {                                                                                              \
        const char *fn = "shmem_" #N "_atomic_set";                                                \
        T *p = SHM_AMO_PEER_(T, c, d, pe, fn);                                                     \
        if (p) __atomic_store(p, &v, SHM_SEQ);                                                     \
        else shm_check(duet_atomic_set_##N(SHM_COMM_(c), d, v, pe), fn);                           \
    }                                                                                              \
    T shmem_ctx_##N##_atomic_swap(shmem_ctx_t c, T *d, T v, int pe)                                \
    {                                                                                              \
        const char *fn = "shmem_" #N "_atomic_swap";                                               \
        T *p = SHM_AMO_PEER_(T, c, d, pe, fn), old;                                                \
        if (p) __atomic_exchange(p, &v, &old, SHM_SEQ);                                            \
        else shm_check(duet_atomic_swap_##N(SHM_COMM_(c), d, v, pe, &old), fn);                    \
        return old;                                                                                \
    }                                                                                              \
    void shmem_ctx_##N##_atomic_fetch_nbi(shmem_ctx_t c, T *f, const T *s, int pe)                 \
    { *f = shmem_ctx_##N##_atomic_fetch(c, s, pe); }                                               \
    void shmem_ctx_##N##_atomic_swap_nbi(shmem_ctx_t c, T *f, T *d, T v, int pe)                   \
    { *f = shmem_ctx_##N##_atomic_swap(c, d, v, pe); }                                             \
    T shmem_##N##_atomic_fetch(const T *s, int pe) { return shmem_ctx_##N##_atomic_fetch(SHMEM_CTX_DEFAULT, s, pe); } \
    void shmem_##N##_atomic_set(T *d, T v, int pe) { shmem_ctx_##N##_atomic_set(SHMEM_CTX_DEFAULT, d, v, pe); } \
    T shmem_##N##_atomic_swap(T *d, T v, int pe) { return shmem_ctx_##N##_atomic_swap(SHMEM_CTX_DEFAULT, d, v, pe); } \
    void shmem_##N##_atomic_fetch_nbi(T *f, const T *s, int pe) { *f = shmem_##N##_atomic_fetch(s, pe); } \
    void shmem_##N##_atomic_swap_nbi(T *f, T *d, T v, int pe) { *f = shmem_##N##_atomic_swap(d, v, pe); }

/* fetch_OP / OP / fetch_OP_nbi with an operand (add, and, or, xor) */
#define SHM_AMO_OP_(T, N, OP)                                                                      \
    T shmem_ctx_##N##_atomic_fetch_##OP(shmem_ctx_t c, T *d, T v, int pe)                          \
    {                                                                                              \
        const char *fn = "shmem_" #N "_atomic_fetch_" #OP;                                         \
        T *p = SHM_AMO_PEER_(T, c, d, pe, fn), old;                                                \
        if (p) old = __atomic_fetch_##OP(p, v, SHM_SEQ);                                           \
        else shm_check(duet_atomic_fetch_##OP##_##N(SHM_COMM_(c), d, v, pe, &old), fn);            \
        return old;                                                                                \
    }                                                                                              \
    void shmem_ctx_##N##_atomic_##OP(shmem_ctx_t c, T *d, T v, int pe)                             \
    {                                                                                              \
        const char *fn = "shmem_" #N "_atomic_" #OP;                                               \
        T *p = SHM_AMO_PEER_(T, c, d, pe, fn);                                                     \
        if (p) __atomic_fetch_##OP(p, v, SHM_SEQ);                                                 \
        else shm_check(duet_atomic_##OP##_##N(SHM_COMM_(c), d, v, pe), fn);                        \
    }                                                                                              \
    void shmem_ctx_##N##_atomic_fetch_##OP##_nbi(shmem_ctx_t c, T *f, T *d, T v, int pe)           \
    { *f = shmem_ctx_##N##_atomic_fetch_##OP(c, d, v, pe); }                                       \
    T shmem_##N##_atomic_fetch_##OP(T *d, T v, int pe)                                             \
    { return shmem_ctx_##N##_atomic_fetch_##OP(SHMEM_CTX_DEFAULT, d, v, pe); }                     \
    void shmem_##N##_atomic_##OP(T *d, T v, int pe) { shmem_ctx_##N##_atomic_##OP(SHMEM_CTX_DEFAULT, d, v, pe); } \
    void shmem_##N##_atomic_fetch_##OP##_nbi(T *f, T *d, T v, int pe)                              \
    { *f = shmem_ctx_##N##_atomic_fetch_##OP(SHMEM_CTX_DEFAULT, d, v, pe); }

#define SHM_AMO_STD_(T, N)                                                                         \
    SHM_AMO_EXT_(T, N)                                                                             \
    SHM_AMO_OP_(T, N, add)                                                                         \
    T shmem_ctx_##N##_atomic_compare_swap(shmem_ctx_t c, T *d, T cond, T v, int pe)                \
    {                                                                                              \
        const char *fn = "shmem_" #N "_atomic_compare_swap";                                       \
        T *p = SHM_AMO_PEER_(T, c, d, pe, fn), old = cond;                                         \
        if (p) __atomic_compare_exchange_n(p, &old, v, 0, SHM_SEQ, SHM_SEQ);                       \
        else shm_check(duet_atomic_compare_swap_##N(SHM_COMM_(c), d, cond, v, pe, &old), fn);      \
        return old;                                                                                \
    }                                                                                              \
    T shmem_ctx_##N##_atomic_fetch_inc(shmem_ctx_t c, T *d, int pe)                                \
    { return shmem_ctx_##N##_atomic_fetch_add(c, d, (T)1, pe); }                                   \
    void shmem_ctx_##N##_atomic_inc(shmem_ctx_t c, T *d, int pe) { shmem_ctx_##N##_atomic_add(c, d, (T)1, pe); } \
    void shmem_ctx_##N##_atomic_compare_swap_nbi(shmem_ctx_t c, T *f, T *d, T cond, T v, int pe)   \
    { *f = shmem_ctx_##N##_atomic_compare_swap(c, d, cond, v, pe); }                               \
    void shmem_ctx_##N##_atomic_fetch_inc_nbi(shmem_ctx_t c, T *f, T *d, int pe)                   \
    { *f = shmem_ctx_##N##_atomic_fetch_add(c, d, (T)1, pe); }                                     \
    T shmem_##N##_atomic_compare_swap(T *d, T cond, T v, int pe)                                   \
    { return shmem_ctx_##N##_atomic_compare_swap(SHMEM_CTX_DEFAULT, d, cond, v, pe); }             \
    T shmem_##N##_atomic_fetch_inc(T *d, int pe) { return shmem_ctx_##N##_atomic_fetch_add(SHMEM_CTX_DEFAULT, d, (T)1, pe); } \
    void shmem_##N##_atomic_inc(T *d, int pe) { shmem_ctx_##N##_atomic_add(SHMEM_CTX_DEFAULT, d, (T)1, pe); } \
    void shmem_##N##_atomic_compare_swap_nbi(T *f, T *d, T cond, T v, int pe)                      \
    { *f = shmem_ctx_##N##_atomic_compare_swap(SHMEM_CTX_DEFAULT, d, cond, v, pe); }               \
    void shmem_##N##_atomic_fetch_inc_nbi(T *f, T *d, int pe)                                      \
    { *f = shmem_ctx_##N##_atomic_fetch_add(SHMEM_CTX_DEFAULT, d, (T)1, pe); }

#define SHM_AMO_BIT_(T, N) SHM_AMO_OP_(T, N, and) SHM_AMO_OP_(T, N, or) SHM_AMO_OP_(T, N, xor)

SHMEM_X_AMO_TYPES(SHM_AMO_STD_)
SHMEM_X_AMO_BIT_TYPES(SHM_AMO_BIT_)
SHMEM_X_AMO_EXT_TYPES(SHM_AMO_EXT_)
