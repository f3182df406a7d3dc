/*
 * shmem.h — OpenSHMEM 1.5 on Duet (libduet_shmem).
 *
 * The OpenSHMEM 1.5 API, plus the deprecated 1.3/1.4-era calls that published programs still
 * use, as a thin layer over Duet's core (include/duet/duet.h): the world team is Duet's world
 * communicator, teams are Duet teams (duet_comm_split*), the symmetric heap is Duet's, and
 * global and static variables of the executable are symmetric too (shmem_init shares the
 * program's writable data segment between the PEs: docs/MIGRATING_OPENSHMEM.md).
 *
 * Build with build/bin/duetcc (like oshcc), run with build/bin/duetrun (like oshrun).
 *
 * Errors: OpenSHMEM calls mostly return nothing, so a call that fails (a non-symmetric
 * address, a PE out of range, a dead peer, an unsupported request) prints one line naming the
 * call and Duet's message, and ends the process with exit status 1 (duetrun then ends the
 * job). Calls that return an int status (teams, contexts, 1.5 collectives) return non-zero
 * for bad arguments instead, as the specification says.
 *
 * Names: every typed family is declared from the TYPENAME tables below (SHMEM_X_*), so the
 * list of types is written once. In C11 the generic forms (shmem_put, shmem_atomic_fetch_add,
 * shmem_wait_until, shmem_sum_reduce, ...) are _Generic macros over the standard C types;
 * under C++ they are overloaded inline functions for the same types.
 */
#ifndef DUET_SHMEM_H
#define DUET_SHMEM_H

#include <stddef.h>
#include <stdint.h>
#if !defined(__cplusplus)
#include <complex.h>
#else
#include <complex> /* the complexd / complexf reductions take std::complex in C++ */
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- library constants ------------------------------------------------------------------ */
#define SHMEM_MAJOR_VERSION 1
#define SHMEM_MINOR_VERSION 5
#define SHMEM_MAX_NAME_LEN 256
#define SHMEM_VENDOR_STRING "Duet OpenSHMEM 1.5 (libduet_shmem 0.1.0)"
#define _SHMEM_MAJOR_VERSION SHMEM_MAJOR_VERSION
#define _SHMEM_MINOR_VERSION SHMEM_MINOR_VERSION
#define _SHMEM_MAX_NAME_LEN SHMEM_MAX_NAME_LEN
#define _SHMEM_VENDOR_STRING SHMEM_VENDOR_STRING

enum { SHMEM_THREAD_SINGLE = 0, SHMEM_THREAD_FUNNELED, SHMEM_THREAD_SERIALIZED, SHMEM_THREAD_MULTIPLE };

/* comparisons of wait_until / test (the same order as Duet's DUET_CMP_*) */
enum { SHMEM_CMP_EQ = 0, SHMEM_CMP_NE, SHMEM_CMP_GT, SHMEM_CMP_GE, SHMEM_CMP_LT, SHMEM_CMP_LE };
#define _SHMEM_CMP_EQ SHMEM_CMP_EQ
#define _SHMEM_CMP_NE SHMEM_CMP_NE
#define _SHMEM_CMP_GT SHMEM_CMP_GT
#define _SHMEM_CMP_GE SHMEM_CMP_GE
#define _SHMEM_CMP_LT SHMEM_CMP_LT
#define _SHMEM_CMP_LE SHMEM_CMP_LE

enum { SHMEM_SIGNAL_SET = 0, SHMEM_SIGNAL_ADD = 1 };

/* pSync / pWrk of the deprecated active-set calls: Duet uses the first two words of pSync
 * (restored to SHMEM_SYNC_VALUE on return) and never pWrk; the sizes leave room. */
#define SHMEM_SYNC_VALUE 0L
#define SHMEM_SYNC_SIZE 8
#define SHMEM_BCAST_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_BARRIER_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_REDUCE_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_COLLECT_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_ALLTOALL_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_ALLTOALLS_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_REDUCE_MIN_WRKDATA_SIZE 8
#define _SHMEM_SYNC_VALUE SHMEM_SYNC_VALUE
#define _SHMEM_BCAST_SYNC_SIZE SHMEM_BCAST_SYNC_SIZE
#define _SHMEM_BARRIER_SYNC_SIZE SHMEM_BARRIER_SYNC_SIZE
#define _SHMEM_REDUCE_SYNC_SIZE SHMEM_REDUCE_SYNC_SIZE
#define _SHMEM_COLLECT_SYNC_SIZE SHMEM_COLLECT_SYNC_SIZE
#define _SHMEM_ALLTOALL_SYNC_SIZE SHMEM_ALLTOALL_SYNC_SIZE
#define _SHMEM_ALLTOALLS_SYNC_SIZE SHMEM_ALLTOALLS_SYNC_SIZE
#define _SHMEM_REDUCE_MIN_WRKDATA_SIZE SHMEM_REDUCE_MIN_WRKDATA_SIZE

/* hints of shmem_malloc_with_hints (accepted, ignored: every block suits every use) */
#define SHMEM_MALLOC_ATOMICS_REMOTE (1L << 0)
#define SHMEM_MALLOC_SIGNAL_REMOTE  (1L << 1)

/* context options (accepted; every context is thread safe) */
#define SHMEM_CTX_SERIALIZED (1L << 0)
#define SHMEM_CTX_PRIVATE    (1L << 1)
#define SHMEM_CTX_NOSTORE    (1L << 2)

/* team configuration */
#define SHMEM_TEAM_NUM_CONTEXTS (1L << 0)
typedef struct {
    int num_contexts;
} shmem_team_config_t;

typedef struct duet_shmem_team *shmem_team_t;
typedef struct duet_shmem_ctx *shmem_ctx_t;
extern shmem_team_t SHMEM_TEAM_WORLD;
extern shmem_team_t SHMEM_TEAM_SHARED;
extern shmem_ctx_t SHMEM_CTX_DEFAULT;
#define SHMEM_TEAM_INVALID ((shmem_team_t)0)
#define SHMEM_CTX_INVALID ((shmem_ctx_t)0)

/* ---- TYPENAME tables: X(TYPE, TYPENAME) ------------------------------------------------ */
#define SHMEM_X_RMA_TYPES(X)                                                                   \
    X(float, float) X(double, double) X(long double, longdouble) X(char, char)                 \
    X(signed char, schar) X(short, short) X(int, int) X(long, long) X(long long, longlong)     \
    X(unsigned char, uchar) X(unsigned short, ushort) X(unsigned int, uint)                    \
    X(unsigned long, ulong) X(unsigned long long, ulonglong) X(int8_t, int8)                   \
    X(int16_t, int16) X(int32_t, int32) X(int64_t, int64) X(uint8_t, uint8)                    \
    X(uint16_t, uint16) X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size)                \
    X(ptrdiff_t, ptrdiff)
/* the distinct standard C types among them: what the generic forms select on */
#define SHMEM_X_GENERIC_TYPES(X)                                                               \
    X(float, float) X(double, double) X(long double, longdouble) X(char, char)                 \
    X(signed char, schar) X(short, short) X(int, int) X(long, long) X(long long, longlong)     \
    X(unsigned char, uchar) X(unsigned short, ushort) X(unsigned int, uint)                    \
    X(unsigned long, ulong) X(unsigned long long, ulonglong)
#define SHMEM_X_SIZES(X) X(8) X(16) X(32) X(64) X(128)

#define SHMEM_X_AMO_TYPES(X)                                                                   \
    X(int, int) X(long, long) X(long long, longlong) X(unsigned int, uint)                     \
    X(unsigned long, ulong) X(unsigned long long, ulonglong) X(int32_t, int32)                 \
    X(int64_t, int64) X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size)                  \
    X(ptrdiff_t, ptrdiff)
#define SHMEM_X_AMO_EXT_TYPES(X) X(float, float) X(double, double)
#define SHMEM_X_AMO_BIT_TYPES(X)                                                               \
    X(unsigned int, uint) X(unsigned long, ulong) X(unsigned long long, ulonglong)             \
    X(int32_t, int32) X(int64_t, int64) X(uint32_t, uint32) X(uint64_t, uint64)
#define SHMEM_X_AMO_GENERIC(X)                                                                 \
    X(int, int) X(long, long) X(long long, longlong) X(unsigned int, uint)                     \
    X(unsigned long, ulong) X(unsigned long long, ulonglong)
#define SHMEM_X_AMO_BIT_GENERIC(X)                                                             \
    X(unsigned int, uint) X(unsigned long, ulong) X(unsigned long long, ulonglong)
#define SHMEM_X_SYNC_TYPES(X) SHMEM_X_AMO_TYPES(X)
/* point-to-point types that 1.5 keeps as deprecated (its table marks them so) */
#define SHMEM_X_DEP_SYNC_TYPES(X) X(short, short) X(unsigned short, ushort)

/* reductions (1.5 tables): bitwise, min/max, and sum/prod (these also on complex, in C) */
#define SHMEM_X_BIT_REDUCE_TYPES(X)                                                            \
    X(unsigned char, uchar) X(unsigned short, ushort) X(unsigned int, uint)                    \
    X(unsigned long, ulong) X(unsigned long long, ulonglong) X(int8_t, int8)                   \
    X(int16_t, int16) X(int32_t, int32) X(int64_t, int64) X(uint8_t, uint8)                    \
    X(uint16_t, uint16) X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size)
#define SHMEM_X_MINMAX_REDUCE_TYPES(X)                                                         \
    X(char, char) X(signed char, schar) X(short, short) X(int, int) X(long, long)              \
    X(long long, longlong) X(ptrdiff_t, ptrdiff) SHMEM_X_BIT_REDUCE_TYPES(X)                   \
    X(float, float) X(double, double) X(long double, longdouble)
#if !defined(__cplusplus)
#define SHMEM_X_COMPLEX_TYPES(X) X(double _Complex, complexd) X(float _Complex, complexf)
#else /* same layout as the C types (an array of two), passed by pointer */
#define SHMEM_X_COMPLEX_TYPES(X) X(std::complex<double>, complexd) X(std::complex<float>, complexf)
#endif
#define SHMEM_X_ARITH_REDUCE_TYPES(X) SHMEM_X_MINMAX_REDUCE_TYPES(X) SHMEM_X_COMPLEX_TYPES(X)
#define SHMEM_X_BIT_OPS(X, T, N) X(T, N, and) X(T, N, or) X(T, N, xor)
#define SHMEM_X_MINMAX_OPS(X, T, N) X(T, N, max) X(T, N, min)
#define SHMEM_X_ARITH_OPS(X, T, N) X(T, N, sum) X(T, N, prod)

/* the deprecated *_to_all reductions */
#define SHMEM_X_TOALL_BIT_TYPES(X) X(short, short) X(int, int) X(long, long) X(long long, longlong)
#define SHMEM_X_TOALL_MINMAX_TYPES(X)                                                          \
    SHMEM_X_TOALL_BIT_TYPES(X) X(float, float) X(double, double) X(long double, longdouble)
#define SHMEM_X_TOALL_ARITH_TYPES(X) SHMEM_X_TOALL_MINMAX_TYPES(X) SHMEM_X_COMPLEX_TYPES(X)

/* ---- library setup, exit and query ----------------------------------------------------- */
void shmem_init(void);
int shmem_init_thread(int requested, int *provided);
void shmem_query_thread(int *provided);
void shmem_finalize(void);
void shmem_global_exit(int status);
int shmem_my_pe(void);
int shmem_n_pes(void);
int shmem_pe_accessible(int pe);
int shmem_addr_accessible(const void *addr, int pe);
void *shmem_ptr(const void *dest, int pe);
void shmem_info_get_version(int *major, int *minor);
void shmem_info_get_name(char *name);

/* ---- memory management (collective over the world team) -------------------------------- */
void *shmem_malloc(size_t size);
void *shmem_malloc_with_hints(size_t size, long hints);
void *shmem_calloc(size_t count, size_t size);
void *shmem_align(size_t alignment, size_t size);
void *shmem_realloc(void *ptr, size_t size);
void shmem_free(void *ptr);

/* ---- teams ----------------------------------------------------------------------------- */
int shmem_team_my_pe(shmem_team_t team);
int shmem_team_n_pes(shmem_team_t team);
int shmem_team_get_config(shmem_team_t team, long config_mask, shmem_team_config_t *config);
int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team);
int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride, int size,
                             const shmem_team_config_t *config, long config_mask,
                             shmem_team_t *new_team);
int shmem_team_split_2d(shmem_team_t parent_team, int xrange,
                        const shmem_team_config_t *xaxis_config, long xaxis_mask,
                        shmem_team_t *xaxis_team, const shmem_team_config_t *yaxis_config,
                        long yaxis_mask, shmem_team_t *yaxis_team);
void shmem_team_destroy(shmem_team_t team);
void *shmem_team_ptr(shmem_team_t team, const void *dest, int pe);

/* ---- contexts -------------------------------------------------------------------------- */
int shmem_ctx_create(long options, shmem_ctx_t *ctx);
int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t *ctx);
void shmem_ctx_destroy(shmem_ctx_t ctx);
int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t *team);

/* ---- RMA ------------------------------------------------------------------------------- */
#define SHMEM_DECL_RMA_(T, N)                                                                  \
    void shmem_##N##_put(T *dest, const T *source, size_t nelems, int pe);                     \
    void shmem_ctx_##N##_put(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, int pe);\
    void shmem_##N##_put_nbi(T *dest, const T *source, size_t nelems, int pe);                 \
    void shmem_ctx_##N##_put_nbi(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems,     \
                                 int pe);                                                      \
    void shmem_##N##_get(T *dest, const T *source, size_t nelems, int pe);                     \
    void shmem_ctx_##N##_get(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, int pe);\
    void shmem_##N##_get_nbi(T *dest, const T *source, size_t nelems, int pe);                 \
    void shmem_ctx_##N##_get_nbi(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems,     \
                                 int pe);                                                      \
    void shmem_##N##_p(T *dest, T value, int pe);                                              \
    void shmem_ctx_##N##_p(shmem_ctx_t ctx, T *dest, T value, int pe);                         \
    T shmem_##N##_g(const T *source, int pe);                                                  \
    T shmem_ctx_##N##_g(shmem_ctx_t ctx, const T *source, int pe);                             \
    void shmem_##N##_iput(T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst,              \
                          size_t nelems, int pe);                                              \
    void shmem_ctx_##N##_iput(shmem_ctx_t ctx, T *dest, const T *source, ptrdiff_t dst,        \
                              ptrdiff_t sst, size_t nelems, int pe);                           \
    void shmem_##N##_iget(T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst,              \
                          size_t nelems, int pe);                                              \
    void shmem_ctx_##N##_iget(shmem_ctx_t ctx, T *dest, const T *source, ptrdiff_t dst,        \
                              ptrdiff_t sst, size_t nelems, int pe);                           \
    void shmem_##N##_put_signal(T *dest, const T *source, size_t nelems, uint64_t *sig_addr,   \
                                uint64_t signal, int sig_op, int pe);                          \
    void shmem_ctx_##N##_put_signal(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems,  \
                                    uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);  \
    void shmem_##N##_put_signal_nbi(T *dest, const T *source, size_t nelems,                   \
                                    uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);  \
    void shmem_ctx_##N##_put_signal_nbi(shmem_ctx_t ctx, T *dest, const T *source,             \
                                        size_t nelems, uint64_t *sig_addr, uint64_t signal,    \
                                        int sig_op, int pe);
SHMEM_X_RMA_TYPES(SHMEM_DECL_RMA_)

#define SHMEM_DECL_SIZED_(S)                                                                   \
    void shmem_put##S(void *dest, const void *source, size_t nelems, int pe);                  \
    void shmem_ctx_put##S(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,      \
                          int pe);                                                             \
    void shmem_put##S##_nbi(void *dest, const void *source, size_t nelems, int pe);            \
    void shmem_ctx_put##S##_nbi(shmem_ctx_t ctx, void *dest, const void *source,               \
                                size_t nelems, int pe);                                        \
    void shmem_get##S(void *dest, const void *source, size_t nelems, int pe);                  \
    void shmem_ctx_get##S(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,      \
                          int pe);                                                             \
    void shmem_get##S##_nbi(void *dest, const void *source, size_t nelems, int pe);            \
    void shmem_ctx_get##S##_nbi(shmem_ctx_t ctx, void *dest, const void *source,               \
                                size_t nelems, int pe);                                        \
    void shmem_iput##S(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst,           \
                       size_t nelems, int pe);                                                 \
    void shmem_ctx_iput##S(shmem_ctx_t ctx, void *dest, const void *source, ptrdiff_t dst,     \
                           ptrdiff_t sst, size_t nelems, int pe);                              \
    void shmem_iget##S(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst,           \
                       size_t nelems, int pe);                                                 \
    void shmem_ctx_iget##S(shmem_ctx_t ctx, void *dest, const void *source, ptrdiff_t dst,     \
                           ptrdiff_t sst, size_t nelems, int pe);                              \
    void shmem_put##S##_signal(void *dest, const void *source, size_t nelems,                  \
                               uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);       \
    void shmem_ctx_put##S##_signal(shmem_ctx_t ctx, void *dest, const void *source,            \
                                   size_t nelems, uint64_t *sig_addr, uint64_t signal,         \
                                   int sig_op, int pe);                                        \
    void shmem_put##S##_signal_nbi(void *dest, const void *source, size_t nelems,              \
                                   uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);   \
    void shmem_ctx_put##S##_signal_nbi(shmem_ctx_t ctx, void *dest, const void *source,        \
                                       size_t nelems, uint64_t *sig_addr, uint64_t signal,     \
                                       int sig_op, int pe);
SHMEM_X_SIZES(SHMEM_DECL_SIZED_)

void shmem_putmem(void *dest, const void *source, size_t nelems, int pe);
void shmem_ctx_putmem(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe);
void shmem_putmem_nbi(void *dest, const void *source, size_t nelems, int pe);
void shmem_ctx_putmem_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe);
void shmem_getmem(void *dest, const void *source, size_t nelems, int pe);
void shmem_ctx_getmem(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe);
void shmem_getmem_nbi(void *dest, const void *source, size_t nelems, int pe);
void shmem_ctx_getmem_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe);
void shmem_putmem_signal(void *dest, const void *source, size_t nelems, uint64_t *sig_addr,
                         uint64_t signal, int sig_op, int pe);
void shmem_ctx_putmem_signal(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,
                             uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
void shmem_putmem_signal_nbi(void *dest, const void *source, size_t nelems, uint64_t *sig_addr,
                             uint64_t signal, int sig_op, int pe);
void shmem_ctx_putmem_signal_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,
                                 uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);

/* ---- signals --------------------------------------------------------------------------- */
uint64_t shmem_signal_fetch(const uint64_t *sig_addr);
uint64_t shmem_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t cmp_value);

/* ---- atomic memory operations ---------------------------------------------------------- */
#define SHMEM_DECL_AMO_EXT_(T, N)                                                              \
    T shmem_##N##_atomic_fetch(const T *source, int pe);                                       \
    T shmem_ctx_##N##_atomic_fetch(shmem_ctx_t ctx, const T *source, int pe);                  \
    void shmem_##N##_atomic_set(T *dest, T value, int pe);                                     \
    void shmem_ctx_##N##_atomic_set(shmem_ctx_t ctx, T *dest, T value, int pe);                \
    T shmem_##N##_atomic_swap(T *dest, T value, int pe);                                       \
    T shmem_ctx_##N##_atomic_swap(shmem_ctx_t ctx, T *dest, T value, int pe);                  \
    void shmem_##N##_atomic_fetch_nbi(T *fetch, const T *source, int pe);                      \
    void shmem_ctx_##N##_atomic_fetch_nbi(shmem_ctx_t ctx, T *fetch, const T *source, int pe); \
    void shmem_##N##_atomic_swap_nbi(T *fetch, T *dest, T value, int pe);                      \
    void shmem_ctx_##N##_atomic_swap_nbi(shmem_ctx_t ctx, T *fetch, T *dest, T value, int pe);
#define SHMEM_DECL_AMO_OP_(T, N, OP)                                                           \
    T shmem_##N##_atomic_fetch_##OP(T *dest, T value, int pe);                                 \
    T shmem_ctx_##N##_atomic_fetch_##OP(shmem_ctx_t ctx, T *dest, T value, int pe);            \
    void shmem_##N##_atomic_##OP(T *dest, T value, int pe);                                    \
    void shmem_ctx_##N##_atomic_##OP(shmem_ctx_t ctx, T *dest, T value, int pe);               \
    void shmem_##N##_atomic_fetch_##OP##_nbi(T *fetch, T *dest, T value, int pe);              \
    void shmem_ctx_##N##_atomic_fetch_##OP##_nbi(shmem_ctx_t ctx, T *fetch, T *dest, T value,  \
                                                 int pe);
#define SHMEM_DECL_AMO_(T, N)                                                                  \
    SHMEM_DECL_AMO_EXT_(T, N)                                                                  \
    T shmem_##N##_atomic_compare_swap(T *dest, T cond, T value, int pe);                       \
    T shmem_ctx_##N##_atomic_compare_swap(shmem_ctx_t ctx, T *dest, T cond, T value, int pe);  \
    void shmem_##N##_atomic_compare_swap_nbi(T *fetch, T *dest, T cond, T value, int pe);      \
    void shmem_ctx_##N##_atomic_compare_swap_nbi(shmem_ctx_t ctx, T *fetch, T *dest, T cond,   \
                                                 T value, int pe);                             \
    T shmem_##N##_atomic_fetch_inc(T *dest, int pe);                                           \
    T shmem_ctx_##N##_atomic_fetch_inc(shmem_ctx_t ctx, T *dest, int pe);                      \
    void shmem_##N##_atomic_inc(T *dest, int pe);                                              \
    void shmem_ctx_##N##_atomic_inc(shmem_ctx_t ctx, T *dest, int pe);                         \
    void shmem_##N##_atomic_fetch_inc_nbi(T *fetch, T *dest, int pe);                          \
    void shmem_ctx_##N##_atomic_fetch_inc_nbi(shmem_ctx_t ctx, T *fetch, T *dest, int pe);     \
    SHMEM_DECL_AMO_OP_(T, N, add)
#define SHMEM_DECL_AMO_BIT_(T, N)                                                              \
    SHMEM_DECL_AMO_OP_(T, N, and) SHMEM_DECL_AMO_OP_(T, N, or) SHMEM_DECL_AMO_OP_(T, N, xor)
SHMEM_X_AMO_TYPES(SHMEM_DECL_AMO_)
SHMEM_X_AMO_BIT_TYPES(SHMEM_DECL_AMO_BIT_)
SHMEM_X_AMO_EXT_TYPES(SHMEM_DECL_AMO_EXT_)

/* ---- point-to-point synchronization ---------------------------------------------------- */
#define SHMEM_DECL_SYNC_(T, N)                                                                 \
    void shmem_##N##_wait_until(T *ivar, int cmp, T cmp_value);                                \
    void shmem_##N##_wait_until_all(T *ivars, size_t nelems, const int *status, int cmp,       \
                                    T cmp_value);                                              \
    size_t shmem_##N##_wait_until_any(T *ivars, size_t nelems, const int *status, int cmp,     \
                                      T cmp_value);                                            \
    size_t shmem_##N##_wait_until_some(T *ivars, size_t nelems, size_t *indices,               \
                                       const int *status, int cmp, T cmp_value);               \
    void shmem_##N##_wait_until_all_vector(T *ivars, size_t nelems, const int *status,         \
                                           int cmp, T *cmp_values);                            \
    size_t shmem_##N##_wait_until_any_vector(T *ivars, size_t nelems, const int *status,       \
                                             int cmp, T *cmp_values);                          \
    size_t shmem_##N##_wait_until_some_vector(T *ivars, size_t nelems, size_t *indices,        \
                                              const int *status, int cmp, T *cmp_values);      \
    int shmem_##N##_test(T *ivar, int cmp, T cmp_value);                                       \
    int shmem_##N##_test_all(T *ivars, size_t nelems, const int *status, int cmp,              \
                             T cmp_value);                                                     \
    size_t shmem_##N##_test_any(T *ivars, size_t nelems, const int *status, int cmp,           \
                                T cmp_value);                                                  \
    size_t shmem_##N##_test_some(T *ivars, size_t nelems, size_t *indices, const int *status,  \
                                 int cmp, T cmp_value);                                        \
    int shmem_##N##_test_all_vector(T *ivars, size_t nelems, const int *status, int cmp,       \
                                    T *cmp_values);                                            \
    size_t shmem_##N##_test_any_vector(T *ivars, size_t nelems, const int *status, int cmp,    \
                                       T *cmp_values);                                         \
    size_t shmem_##N##_test_some_vector(T *ivars, size_t nelems, size_t *indices,              \
                                        const int *status, int cmp, T *cmp_values);
SHMEM_X_SYNC_TYPES(SHMEM_DECL_SYNC_)
SHMEM_X_DEP_SYNC_TYPES(SHMEM_DECL_SYNC_) /* deprecated */

/* ---- memory ordering ------------------------------------------------------------------- */
void shmem_fence(void);
void shmem_ctx_fence(shmem_ctx_t ctx);
void shmem_quiet(void);
void shmem_ctx_quiet(shmem_ctx_t ctx);

/* ---- distributed locks (a lock is a symmetric long, 0 before first use) ---------------- */
void shmem_set_lock(long *lock);
void shmem_clear_lock(long *lock);
int shmem_test_lock(long *lock);

/* ---- collectives on teams (return 0 on success) ----------------------------------------- */
void shmem_barrier_all(void);
void shmem_sync_all(void);
int shmem_team_sync(shmem_team_t team);
int shmem_broadcastmem(shmem_team_t team, void *dest, const void *source, size_t nelems,
                       int PE_root);
int shmem_collectmem(shmem_team_t team, void *dest, const void *source, size_t nelems);
int shmem_fcollectmem(shmem_team_t team, void *dest, const void *source, size_t nelems);
int shmem_alltoallmem(shmem_team_t team, void *dest, const void *source, size_t nelems);
int shmem_alltoallsmem(shmem_team_t team, void *dest, const void *source, ptrdiff_t dst,
                       ptrdiff_t sst, size_t nelems);
#define SHMEM_DECL_COLL_(T, N)                                                                 \
    int shmem_##N##_broadcast(shmem_team_t team, T *dest, const T *source, size_t nelems,      \
                              int PE_root);                                                    \
    int shmem_##N##_collect(shmem_team_t team, T *dest, const T *source, size_t nelems);       \
    int shmem_##N##_fcollect(shmem_team_t team, T *dest, const T *source, size_t nelems);      \
    int shmem_##N##_alltoall(shmem_team_t team, T *dest, const T *source, size_t nelems);      \
    int shmem_##N##_alltoalls(shmem_team_t team, T *dest, const T *source, ptrdiff_t dst,      \
                              ptrdiff_t sst, size_t nelems);
SHMEM_X_RMA_TYPES(SHMEM_DECL_COLL_)

#define SHMEM_DECL_REDUCE_(T, N, OP)                                                           \
    int shmem_##N##_##OP##_reduce(shmem_team_t team, T *dest, const T *source, size_t nreduce);
#define SHMEM_DECL_REDUCE_BIT_(T, N) SHMEM_X_BIT_OPS(SHMEM_DECL_REDUCE_, T, N)
#define SHMEM_DECL_REDUCE_MINMAX_(T, N) SHMEM_X_MINMAX_OPS(SHMEM_DECL_REDUCE_, T, N)
#define SHMEM_DECL_REDUCE_ARITH_(T, N) SHMEM_X_ARITH_OPS(SHMEM_DECL_REDUCE_, T, N)
SHMEM_X_BIT_REDUCE_TYPES(SHMEM_DECL_REDUCE_BIT_)
SHMEM_X_MINMAX_REDUCE_TYPES(SHMEM_DECL_REDUCE_MINMAX_)
SHMEM_X_ARITH_REDUCE_TYPES(SHMEM_DECL_REDUCE_ARITH_)

/* ---- deprecated (1.3 / 1.4) calls still used by published programs ---------------------- */
void start_pes(int npes);
int _my_pe(void);
int _num_pes(void);
void *shmalloc(size_t size);
void shfree(void *ptr);
void *shrealloc(void *ptr, size_t size);
void *shmemalign(size_t alignment, size_t size);
void shmem_clear_cache_inv(void);
void shmem_set_cache_inv(void);
void shmem_clear_cache_line_inv(void *dest);
void shmem_set_cache_line_inv(void *dest);
void shmem_udcflush(void);
void shmem_udcflush_line(void *dest);

/* active-set collectives: the PEs PE_start + i * 2^logPE_stride, i < PE_size */
void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long *pSync);
void shmem_sync(int PE_start, int logPE_stride, int PE_size, long *pSync);
/* OpenSHMEM 1.5's shmem_sync(team), beside the deprecated four-argument form above (the
 * library's symbol): the number of arguments picks shmem_team_sync or the function. A name
 * used without a call, &shmem_sync, is the four-argument function. */
#define DUET_SHMEM_SYNC_PICK_(a1, a2, a3, a4, name, ...) name
#define shmem_sync(...)                                                                            \
    DUET_SHMEM_SYNC_PICK_(__VA_ARGS__, shmem_sync, duet_shmem_sync_takes_1_or_4_arguments,          \
                          duet_shmem_sync_takes_1_or_4_arguments, shmem_team_sync, 0)(__VA_ARGS__)
#define SHMEM_DECL_DEP_COLL_(S)                                                                \
    void shmem_broadcast##S(void *dest, const void *source, size_t nelems, int PE_root,        \
                            int PE_start, int logPE_stride, int PE_size, long *pSync);         \
    void shmem_collect##S(void *dest, const void *source, size_t nelems, int PE_start,         \
                          int logPE_stride, int PE_size, long *pSync);                         \
    void shmem_fcollect##S(void *dest, const void *source, size_t nelems, int PE_start,        \
                           int logPE_stride, int PE_size, long *pSync);                        \
    void shmem_alltoall##S(void *dest, const void *source, size_t nelems, int PE_start,        \
                           int logPE_stride, int PE_size, long *pSync);                        \
    void shmem_alltoalls##S(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst,      \
                            size_t nelems, int PE_start, int logPE_stride, int PE_size,        \
                            long *pSync);
SHMEM_DECL_DEP_COLL_(32)
SHMEM_DECL_DEP_COLL_(64)

#define SHMEM_DECL_TOALL_(T, N, OP)                                                            \
    void shmem_##N##_##OP##_to_all(T *dest, const T *source, int nreduce, int PE_start,        \
                                   int logPE_stride, int PE_size, T *pWrk, long *pSync);
#define SHMEM_DECL_TOALL_BIT_(T, N) SHMEM_X_BIT_OPS(SHMEM_DECL_TOALL_, T, N)
#define SHMEM_DECL_TOALL_MINMAX_(T, N) SHMEM_X_MINMAX_OPS(SHMEM_DECL_TOALL_, T, N)
#define SHMEM_DECL_TOALL_ARITH_(T, N) SHMEM_X_ARITH_OPS(SHMEM_DECL_TOALL_, T, N)
SHMEM_X_TOALL_BIT_TYPES(SHMEM_DECL_TOALL_BIT_)
SHMEM_X_TOALL_MINMAX_TYPES(SHMEM_DECL_TOALL_MINMAX_)
SHMEM_X_TOALL_ARITH_TYPES(SHMEM_DECL_TOALL_ARITH_)

/* 1.3 atomics and waits */
#define SHMEM_X_DEP_AMO_TYPES(X) X(int, int) X(long, long) X(long long, longlong)
#define SHMEM_X_DEP_AMO_EXT_TYPES(X) X(float, float) X(double, double)
#define SHMEM_DECL_DEP_AMO_EXT_(T, N)                                                          \
    T shmem_##N##_swap(T *dest, T value, int pe);                                              \
    T shmem_##N##_fetch(const T *source, int pe);                                              \
    void shmem_##N##_set(T *dest, T value, int pe);
#define SHMEM_DECL_DEP_AMO_(T, N)                                                              \
    SHMEM_DECL_DEP_AMO_EXT_(T, N)                                                              \
    T shmem_##N##_cswap(T *dest, T cond, T value, int pe);                                     \
    T shmem_##N##_finc(T *dest, int pe);                                                       \
    void shmem_##N##_inc(T *dest, int pe);                                                     \
    T shmem_##N##_fadd(T *dest, T value, int pe);                                              \
    void shmem_##N##_add(T *dest, T value, int pe);
SHMEM_X_DEP_AMO_TYPES(SHMEM_DECL_DEP_AMO_)
SHMEM_X_DEP_AMO_EXT_TYPES(SHMEM_DECL_DEP_AMO_EXT_)
long shmem_swap(long *dest, long value, int pe); /* the 1.0 function; in C11 and C++ a generic name */

#define SHMEM_X_DEP_WAIT_TYPES(X)                                                              \
    X(short, short) X(int, int) X(long, long) X(long long, longlong)
#define SHMEM_DECL_DEP_WAIT_(T, N)                                                             \
    void shmem_##N##_wait(T *ivar, T cmp_value);
SHMEM_X_DEP_WAIT_TYPES(SHMEM_DECL_DEP_WAIT_)
void shmem_wait(long *ivar, long cmp_value);

#ifdef __cplusplus
} /* extern "C" */
#endif

#include "shmem_generic.h"

#endif /* DUET_SHMEM_H */
