/*
 * shmem_deprecated.c — the 1.3-era names that published programs still call: start_pes,
 * _my_pe, _num_pes, shmalloc / shfree / shrealloc / shmemalign, the cache-management no-ops,
 * and the old atomic names (shmem_<T>_swap, cswap, fadd, finc, add, inc, fetch, set,
 * shmem_swap). Each is the 1.5 call it became. (The active-set collectives are in
 * shmem_active.c, the deprecated waits in shmem_sync.c.)
 */
#include "shmem_internal.h"

void start_pes(int npes)
{
    (void)npes; /* the launcher decides the number of PEs */
    if (shm_g.initialized) return; /* 1.3: later calls are ignored */
    shmem_init();                  /* finalized at exit if the program never calls it (shmem_setup.c) */
}

int _my_pe(void) { return shmem_my_pe(); }
int _num_pes(void) { return shmem_n_pes(); }
void *shmalloc(size_t size) { return shmem_malloc(size); }
void shfree(void *ptr) { shmem_free(ptr); }
void *shrealloc(void *ptr, size_t size) { return shmem_realloc(ptr, size); }
void *shmemalign(size_t alignment, size_t size) { return shmem_align(alignment, size); }

/* Caches are coherent here: these have nothing to do. */
void shmem_clear_cache_inv(void) {}
void shmem_set_cache_inv(void) {}
void shmem_clear_cache_line_inv(void *dest) { (void)dest; }
void shmem_set_cache_line_inv(void *dest) { (void)dest; }
void shmem_udcflush(void) {}
void shmem_udcflush_line(void *dest) { (void)dest; }

#define SHM_DEP_AMO_EXT_(T, N)                                                                     \
    T shmem_##N##_swap(T *d, T v, int pe) { return shmem_##N##_atomic_swap(d, v, pe); }            \
    T shmem_##N##_fetch(const T *s, int pe) { return shmem_##N##_atomic_fetch(s, pe); }            \
    void shmem_##N##_set(T *d, T v, int pe) { shmem_##N##_atomic_set(d, v, pe); }
#define SHM_DEP_AMO_(T, N)                                                                         \
    SHM_DEP_AMO_EXT_(T, N)                                                                         \
    T shmem_##N##_cswap(T *d, T cond, T v, int pe) { return shmem_##N##_atomic_compare_swap(d, cond, v, pe); } \
    T shmem_##N##_finc(T *d, int pe) { return shmem_##N##_atomic_fetch_inc(d, pe); }               \
    void shmem_##N##_inc(T *d, int pe) { shmem_##N##_atomic_inc(d, pe); }                         \
    T shmem_##N##_fadd(T *d, T v, int pe) { return shmem_##N##_atomic_fetch_add(d, v, pe); }       \
    void shmem_##N##_add(T *d, T v, int pe) { shmem_##N##_atomic_add(d, v, pe); }
SHMEM_X_DEP_AMO_TYPES(SHM_DEP_AMO_)
SHMEM_X_DEP_AMO_EXT_TYPES(SHM_DEP_AMO_EXT_)

/* (the name in parentheses: shmem_generic.h makes shmem_swap a type-generic macro in C11) */
long(shmem_swap)(long *dest, long value, int pe) { return shmem_long_atomic_swap(dest, value, pe); }
