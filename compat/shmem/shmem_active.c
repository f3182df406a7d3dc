/*
 * shmem_active.c — the deprecated active-set collectives: shmem_barrier, shmem_sync,
 * broadcast32/64, collect32/64, fcollect32/64, alltoall(s)32/64 and the *_to_all reductions.
 *
 * An active set (PE_start, logPE_stride, PE_size) is not a Duet communicator (making one is
 * collective over the world, and only the set's members call these), so these run on
 * one-sided calls among the members, with the caller's symmetric pSync as the barrier's
 * words (pWrk is not needed):
 *
 *   sync:   member i > 0:  atomic inc pSync[0] on member 0; wait pSync[1] == 1; pSync[1] = 0
 *           member 0:      wait pSync[0] == size - 1; pSync[0] = 0; set pSync[1] = 1 on each
 *
 * so pSync is back to SHMEM_SYNC_VALUE (0) on return and may be reused at once. Each
 * collective is: sync, every member gets what it needs from the others' source, sync (no
 * member leaves while another may still read its source). Reductions fold the members'
 * sources in set order into a private buffer, sync, then write dest (dest may be source);
 * from 16 KiB each member folds a part and the others fetch it (to_all).
 */
#include <stdlib.h>
#include <string.h>

#include "shmem_internal.h"

typedef struct {
    int start, stride, size, me; /* me: my index in the set */
} aset_t;

static aset_t aset(int start, int log_stride, int size, const char *fn)
{
    shm_require_init(fn);
    aset_t a = {start, 0, size, -1};
    if (size < 1 || start < 0 || log_stride < 0 || log_stride > 30)
        shm_die(fn, "bad active set (PE_start %d, logPE_stride %d, PE_size %d)", start, log_stride, size);
    a.stride = 1 << log_stride;
    if ((long)start + (long)(size - 1) * a.stride >= shm_g.npes)
        shm_die(fn, "the active set (PE_start %d, logPE_stride %d, PE_size %d) runs past PE %d", start, log_stride,
                size, shm_g.npes - 1);
    int d = shm_g.me - start;
    if (d >= 0 && d % a.stride == 0 && d / a.stride < size) a.me = d / a.stride;
    if (a.me < 0) shm_die(fn, "PE %d is not in the active set (PE_start %d, logPE_stride %d, PE_size %d)", shm_g.me,
                          start, log_stride, size);
    return a;
}

static int pe_of(const aset_t *a, int i) { return a->start + i * a->stride; }

static void aset_sync(const aset_t *a, long *pSync)
{
    if (a->size == 1) return;
    if (a->me == 0) {
        shmem_long_wait_until(&pSync[0], SHMEM_CMP_EQ, (long)a->size - 1);
        __atomic_store_n(&pSync[0], 0, __ATOMIC_RELAXED);
        for (int i = 1; i < a->size; i++) shmem_long_atomic_set(&pSync[1], 1, pe_of(a, i));
    } else {
        shmem_long_atomic_inc(&pSync[0], a->start);
        shmem_long_wait_until(&pSync[1], SHMEM_CMP_EQ, 1);
        __atomic_store_n(&pSync[1], 0, __ATOMIC_RELAXED);
    }
}

void shmem_sync(int PE_start, int logPE_stride, int PE_size, long *pSync)
{
    aset_t a = aset(PE_start, logPE_stride, PE_size, "shmem_sync");
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    aset_sync(&a, pSync);
}

void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long *pSync)
{
    aset_t a = aset(PE_start, logPE_stride, PE_size, "shmem_barrier");
    shmem_quiet();
    aset_sync(&a, pSync);
}

static void get_from(void *dest, const void *src, size_t bytes, int pe, const char *fn)
{
    shm_get(SHMEM_CTX_DEFAULT, dest, src, bytes, pe, 0, fn);
}

/* Root's dest is not written (1.4 semantics). */
static void broadcast(void *dest, const void *source, size_t bytes, int root, aset_t a, long *pSync, const char *fn)
{
    if (root < 0 || root >= a.size) shm_die(fn, "PE_root %d is not an index of the active set (size %d)", root, a.size);
    aset_sync(&a, pSync);
    if (a.me != root) get_from(dest, source, bytes, pe_of(&a, root), fn);
    aset_sync(&a, pSync);
}

static void fcollect(void *dest, const void *source, size_t bytes, aset_t a, long *pSync, const char *fn)
{
    aset_sync(&a, pSync);
    for (int i = 0; i < a.size; i++) get_from((char *)dest + (size_t)i * bytes, source, bytes, pe_of(&a, i), fn);
    aset_sync(&a, pSync);
}

/* Each member's count is read from its scratch word (written before the first sync). */
static void collect(void *dest, const void *source, size_t bytes, aset_t a, long *pSync, const char *fn)
{
    __atomic_store_n(&shm_g.scratch[0], (long)bytes, __ATOMIC_RELAXED);
    aset_sync(&a, pSync);
    size_t at = 0;
    for (int i = 0; i < a.size; i++) {
        long n = shmem_long_g(&shm_g.scratch[0], pe_of(&a, i));
        get_from((char *)dest + at, source, (size_t)n, pe_of(&a, i), fn);
        at += (size_t)n;
    }
    aset_sync(&a, pSync);
}

static void alltoall(void *dest, const void *source, size_t bytes, aset_t a, long *pSync, const char *fn)
{
    aset_sync(&a, pSync);
    for (int i = 0; i < a.size; i++)
        get_from((char *)dest + (size_t)i * bytes, (const char *)source + (size_t)a.me * bytes, bytes, pe_of(&a, i), fn);
    aset_sync(&a, pSync);
}

static void alltoalls(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, size_t es,
                      aset_t a, long *pSync, const char *fn)
{
    if (dst < 1 || sst < 1) shm_die(fn, "strides must be positive (dst %td, sst %td)", dst, sst);
    aset_sync(&a, pSync);
    for (int i = 0; i < a.size; i++)
        shm_strided(SHMEM_CTX_DEFAULT, 0, (char *)dest + (size_t)i * nelems * (size_t)dst * es,
                    (const char *)source + (size_t)a.me * nelems * (size_t)sst * es, dst, sst, nelems, es,
                    pe_of(&a, i), fn);
    aset_sync(&a, pSync);
}

#define SHM_DEP_COLL_(S)                                                                           \
    void shmem_broadcast##S(void *d, const void *s, size_t n, int root, int st, int ls, int sz, long *ps) \
    { broadcast(d, s, shm_bytes(n, S / 8, "shmem_broadcast" #S), root, aset(st, ls, sz, "shmem_broadcast" #S), ps, "shmem_broadcast" #S); } \
    void shmem_collect##S(void *d, const void *s, size_t n, int st, int ls, int sz, long *ps)      \
    { collect(d, s, shm_bytes(n, S / 8, "shmem_collect" #S), aset(st, ls, sz, "shmem_collect" #S), ps, "shmem_collect" #S); } \
    void shmem_fcollect##S(void *d, const void *s, size_t n, int st, int ls, int sz, long *ps)     \
    { fcollect(d, s, shm_bytes(n, S / 8, "shmem_fcollect" #S), aset(st, ls, sz, "shmem_fcollect" #S), ps, "shmem_fcollect" #S); } \
    void shmem_alltoall##S(void *d, const void *s, size_t n, int st, int ls, int sz, long *ps)     \
    { alltoall(d, s, shm_bytes(n, S / 8, "shmem_alltoall" #S), aset(st, ls, sz, "shmem_alltoall" #S), ps, "shmem_alltoall" #S); } \
    void shmem_alltoalls##S(void *d, const void *s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int st, int ls, \
                            int sz, long *ps)                                                      \
    { alltoalls(d, s, dst, sst, n, S / 8, aset(st, ls, sz, "shmem_alltoalls" #S), ps, "shmem_alltoalls" #S); }
SHM_DEP_COLL_(32)
SHM_DEP_COLL_(64)

#define TO_ALL_SPLIT_BYTES ((size_t)16 << 10) /* from here each member reduces a part */

/* Elements [*lo, *hi) of n: member i's part. */
static void part_of(size_t n, int size, int i, size_t *lo, size_t *hi)
{
    size_t per = (n + (size_t)size - 1) / (size_t)size;
    *lo = per * (size_t)i < n ? per * (size_t)i : n;
    *hi = *lo + per < n ? *lo + per : n;
}

/* Folds elements [lo, hi) of every member's source, in set order, into acc. */
static void fold(char *acc, char *in, const void *source, size_t lo, size_t hi, size_t es, const aset_t *a,
                 shm_combine_fn combine, const char *fn)
{
    const char *at = (const char *)source + lo * es;
    get_from(acc, at, (hi - lo) * es, pe_of(a, 0), fn);
    for (int i = 1; i < a->size; i++) {
        get_from(in, at, (hi - lo) * es, pe_of(a, i), fn);
        combine(acc, in, hi - lo);
    }
}

/* Small: every member folds the whole of every source. From TO_ALL_SPLIT_BYTES: member i
 * folds part i alone (in set order, so the result is the same bits on every member) into its
 * dest, and, after a sync, gets the other parts from their members' dest — each source read
 * once in all instead of once per member, a third sync before leaving (a member may still
 * read my part). In place is safe: the part I write is read from my source by nobody but me. */
static void to_all(void *dest, const void *source, int nreduce, size_t es, aset_t a, long *pSync,
                   shm_combine_fn combine, const char *fn)
{
    if (nreduce < 0) shm_die(fn, "nreduce %d is negative", nreduce);
    size_t n = (size_t)nreduce, bytes = shm_bytes(n, es, fn);
    if (a.size == 1 || bytes < TO_ALL_SPLIT_BYTES) {
        char *acc = shm_scratch(0, bytes, fn), *in = shm_scratch(1, bytes, fn);
        aset_sync(&a, pSync);
        if (n) fold(acc, in, source, 0, n, es, &a, combine, fn);
        aset_sync(&a, pSync); /* nobody reads my source any more: dest may be source */
        memcpy(dest, acc, bytes);
        return;
    }
    size_t lo, hi;
    part_of(n, a.size, a.me, &lo, &hi);
    char *acc = shm_scratch(0, (hi - lo) * es, fn), *in = shm_scratch(1, (hi - lo) * es, fn);
    aset_sync(&a, pSync);
    if (hi > lo) {
        fold(acc, in, source, lo, hi, es, &a, combine, fn);
        memcpy((char *)dest + lo * es, acc, (hi - lo) * es);
    }
    aset_sync(&a, pSync); /* every part is in its member's dest */
    for (int i = 0; i < a.size; i++) {
        size_t l, h;
        part_of(n, a.size, i, &l, &h);
        if (i != a.me && h > l) get_from((char *)dest + l * es, (char *)dest + l * es, (h - l) * es, pe_of(&a, i), fn);
    }
    aset_sync(&a, pSync); /* nobody reads my part any more */
}

#define SHM_TOALL_(T, N, OP)                                                                       \
    SHM_DEFINE_COMBINE_(T, N, OP)                                                                  \
    void shmem_##N##_##OP##_to_all(T *dest, const T *source, int nreduce, int st, int ls, int sz,  \
                                   T *pWrk, long *pSync)                                           \
    {                                                                                              \
        (void)pWrk;                                                                                \
        const char *fn = "shmem_" #N "_" #OP "_to_all";                                            \
        to_all(dest, source, nreduce, sizeof(T), aset(st, ls, sz, fn), pSync, combine_##N##_##OP, fn); \
    }
#define SHM_TOALL_BIT_(T, N) SHMEM_X_BIT_OPS(SHM_TOALL_, T, N)
#define SHM_TOALL_MINMAX_(T, N) SHMEM_X_MINMAX_OPS(SHM_TOALL_, T, N)
#define SHM_TOALL_ARITH_(T, N) SHMEM_X_ARITH_OPS(SHM_TOALL_, T, N)
SHMEM_X_TOALL_BIT_TYPES(SHM_TOALL_BIT_)
SHMEM_X_TOALL_MINMAX_TYPES(SHM_TOALL_MINMAX_)
SHMEM_X_TOALL_ARITH_TYPES(SHM_TOALL_ARITH_)
