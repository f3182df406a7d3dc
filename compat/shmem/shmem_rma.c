/*
 * shmem_rma.c — put / get / p / g / iput / iget, blocking and nbi, typed (every TYPENAME),
 * sized (8 ... 128 bits) and mem, with and without a context.
 *
 * Three engines (shm_put, shm_get, shm_strided) do the work; the families below only give
 * them a byte count. A static-data target is copied straight into the peer's mapping (the
 * shm transport does the same for the heap, so nbi and blocking are one path, and quiet is
 * a fence); everything else is Duet's duet_put / duet_get / duet_iput / duet_iget on the
 * context's communicator. Zero-length transfers return before any address is looked at.
 */
#include <string.h>

#include "shmem_internal.h"

/* A static-data target's copy (out of line: the heap's path keeps few registers). 1 when
 * addr was static data and the copy is done, 0 when it is Duet's core's to do. */
__attribute__((noinline)) static int static_copy(struct duet_shmem_team *t, int is_put, void *dest, const void *src,
                                                 size_t bytes, int pe, const char *fn)
{
    char *peer = shm_static_peer(t, is_put ? dest : src, bytes, pe, fn);
    if (!peer) return 0;
    if (!(is_put ? src : dest)) shm_die(fn, is_put ? "the source is NULL" : "the destination is NULL");
    if (is_put) memmove(peer, src, bytes);
    else memmove(dest, peer, bytes);
    return 1;
}

static inline int maybe_static(const void *addr)
{
    return __builtin_expect((uintptr_t)addr - shm_static_lo_ < shm_static_span_, 0);
}

void shm_put(shmem_ctx_t ctx, void *dest, const void *src, size_t bytes, int pe, int nbi, const char *fn)
{
    if (bytes == 0) return;
    struct duet_shmem_team *t = shm_ctx_team(ctx, fn);
    if (maybe_static(dest) && static_copy(t, 1, dest, src, bytes, pe, fn)) return;
    shm_check(nbi ? duet_put_nbi(t->comm, dest, src, bytes, pe) : duet_put(t->comm, dest, src, bytes, pe), fn);
}

void shm_get(shmem_ctx_t ctx, void *dest, const void *src, size_t bytes, int pe, int nbi, const char *fn)
{
    if (bytes == 0) return;
    struct duet_shmem_team *t = shm_ctx_team(ctx, fn);
    if (maybe_static(src) && static_copy(t, 0, dest, src, bytes, pe, fn)) return;
    shm_check(nbi ? duet_get_nbi(t->comm, dest, src, bytes, pe) : duet_get(t->comm, dest, src, bytes, pe), fn);
}

/* The lowest address a strided access touches, and the bytes from there to its end. */
static const char *span(const void *base, ptrdiff_t stride, size_t nelems, size_t es, size_t *bytes,
                        const char *fn)
{
    size_t abs = stride < 0 ? (size_t)0 - (size_t)stride : (size_t)stride, reach;
    if (__builtin_mul_overflow(nelems - 1, abs, &reach) || __builtin_mul_overflow(reach, es, &reach) ||
        __builtin_add_overflow(reach, es, bytes))
        shm_die(fn, "the strided extent overflows");
    return stride < 0 ? (const char *)base - reach : (const char *)base;
}

void shm_strided(shmem_ctx_t ctx, int is_put, void *dest, const void *src, ptrdiff_t dst, ptrdiff_t sst,
                 size_t nelems, size_t es, int pe, const char *fn)
{
    if (nelems == 0) return;
    struct duet_shmem_team *t = shm_ctx_team(ctx, fn);
    const void *remote = is_put ? dest : src;
    ptrdiff_t rstride = is_put ? dst : sst;
    size_t rbytes;
    const char *rlo = span(remote, rstride, nelems, es, &rbytes, fn);
    char *peer_lo = shm_static_peer(t, rlo, rbytes, pe, fn);
    if (!peer_lo) {
        shm_check(is_put ? duet_iput(t->comm, dest, src, dst, sst, nelems, es, pe)
                         : duet_iget(t->comm, dest, src, dst, sst, nelems, es, pe), fn);
        return;
    }
    char *peer = peer_lo + ((const char *)remote - rlo);
    char *d = is_put ? peer : dest;
    const char *s = is_put ? (const char *)src : peer;
    for (size_t i = 0; i < nelems; i++)
        memmove(d + (ptrdiff_t)i * dst * (ptrdiff_t)es, s + (ptrdiff_t)i * sst * (ptrdiff_t)es, es);
}

/* typed: shmem_<N>_put(...), shmem_ctx_<N>_put(...) and the rest */
#define SHM_RMA_TYPED_(T, N)                                                                       \
    void shmem_ctx_##N##_put(shmem_ctx_t c, T *d, const T *s, size_t n, int pe)                    \
    { shm_put(c, d, s, shm_bytes(n, sizeof(T), "shmem_" #N "_put"), pe, 0, "shmem_" #N "_put"); }  \
    void shmem_##N##_put(T *d, const T *s, size_t n, int pe)                                       \
    { shmem_ctx_##N##_put(SHMEM_CTX_DEFAULT, d, s, n, pe); }                                       \
    void shmem_ctx_##N##_put_nbi(shmem_ctx_t c, T *d, const T *s, size_t n, int pe)                \
    { shm_put(c, d, s, shm_bytes(n, sizeof(T), "shmem_" #N "_put_nbi"), pe, 1, "shmem_" #N "_put_nbi"); } \
    void shmem_##N##_put_nbi(T *d, const T *s, size_t n, int pe)                                   \
    { shmem_ctx_##N##_put_nbi(SHMEM_CTX_DEFAULT, d, s, n, pe); }                                   \
    void shmem_ctx_##N##_get(shmem_ctx_t c, T *d, const T *s, size_t n, int pe)                    \
    { shm_get(c, d, s, shm_bytes(n, sizeof(T), "shmem_" #N "_get"), pe, 0, "shmem_" #N "_get"); }  \
    void shmem_##N##_get(T *d, const T *s, size_t n, int pe)                                       \
    { shmem_ctx_##N##_get(SHMEM_CTX_DEFAULT, d, s, n, pe); }                                       \
    void shmem_ctx_##N##_get_nbi(shmem_ctx_t c, T *d, const T *s, size_t n, int pe)                \
    { shm_get(c, d, s, shm_bytes(n, sizeof(T), "shmem_" #N "_get_nbi"), pe, 1, "shmem_" #N "_get_nbi"); } \
    void shmem_##N##_get_nbi(T *d, const T *s, size_t n, int pe)                                   \
    { shmem_ctx_##N##_get_nbi(SHMEM_CTX_DEFAULT, d, s, n, pe); }                                   \
    void shmem_ctx_##N##_p(shmem_ctx_t c, T *d, T v, int pe)                                       \
    { shm_put(c, d, &v, sizeof(T), pe, 0, "shmem_" #N "_p"); }                                     \
    void shmem_##N##_p(T *d, T v, int pe) { shmem_ctx_##N##_p(SHMEM_CTX_DEFAULT, d, v, pe); }      \
    T shmem_ctx_##N##_g(shmem_ctx_t c, const T *s, int pe)                                         \
    {                                                                                              \
        T v;                                                                                       \
        shm_get(c, &v, s, sizeof(T), pe, 0, "shmem_" #N "_g");                                     \
        return v;                                                                                  \
    }                                                                                              \
    T shmem_##N##_g(const T *s, int pe) { return shmem_ctx_##N##_g(SHMEM_CTX_DEFAULT, s, pe); }    \
    void shmem_ctx_##N##_iput(shmem_ctx_t c, T *d, const T *s, ptrdiff_t ds, ptrdiff_t ss, size_t n, int pe) \
    { shm_strided(c, 1, d, s, ds, ss, n, sizeof(T), pe, "shmem_" #N "_iput"); }                    \
    void shmem_##N##_iput(T *d, const T *s, ptrdiff_t ds, ptrdiff_t ss, size_t n, int pe)          \
    { shmem_ctx_##N##_iput(SHMEM_CTX_DEFAULT, d, s, ds, ss, n, pe); }                              \
    void shmem_ctx_##N##_iget(shmem_ctx_t c, T *d, const T *s, ptrdiff_t ds, ptrdiff_t ss, size_t n, int pe) \
    { shm_strided(c, 0, d, s, ds, ss, n, sizeof(T), pe, "shmem_" #N "_iget"); }                    \
    void shmem_##N##_iget(T *d, const T *s, ptrdiff_t ds, ptrdiff_t ss, size_t n, int pe)          \
    { shmem_ctx_##N##_iget(SHMEM_CTX_DEFAULT, d, s, ds, ss, n, pe); }
SHMEM_X_RMA_TYPES(SHM_RMA_TYPED_)

/* sized: shmem_put32(...) etc., elements of S / 8 bytes */
#define SHM_RMA_SIZED_(S)                                                                          \
    void shmem_ctx_put##S(shmem_ctx_t c, void *d, const void *s, size_t n, int pe)                 \
    { shm_put(c, d, s, shm_bytes(n, S / 8, "shmem_put" #S), pe, 0, "shmem_put" #S); }              \
    void shmem_put##S(void *d, const void *s, size_t n, int pe) { shmem_ctx_put##S(SHMEM_CTX_DEFAULT, d, s, n, pe); } \
    void shmem_ctx_put##S##_nbi(shmem_ctx_t c, void *d, const void *s, size_t n, int pe)           \
    { shm_put(c, d, s, shm_bytes(n, S / 8, "shmem_put" #S "_nbi"), pe, 1, "shmem_put" #S "_nbi"); } \
    void shmem_put##S##_nbi(void *d, const void *s, size_t n, int pe)                              \
    { shmem_ctx_put##S##_nbi(SHMEM_CTX_DEFAULT, d, s, n, pe); }                                    \
    void shmem_ctx_get##S(shmem_ctx_t c, void *d, const void *s, size_t n, int pe)                 \
    { shm_get(c, d, s, shm_bytes(n, S / 8, "shmem_get" #S), pe, 0, "shmem_get" #S); }              \
    void shmem_get##S(void *d, const void *s, size_t n, int pe) { shmem_ctx_get##S(SHMEM_CTX_DEFAULT, d, s, n, pe); } \
    void shmem_ctx_get##S##_nbi(shmem_ctx_t c, void *d, const void *s, size_t n, int pe)           \
    { shm_get(c, d, s, shm_bytes(n, S / 8, "shmem_get" #S "_nbi"), pe, 1, "shmem_get" #S "_nbi"); } \
    void shmem_get##S##_nbi(void *d, const void *s, size_t n, int pe)                              \
    { shmem_ctx_get##S##_nbi(SHMEM_CTX_DEFAULT, d, s, n, pe); }                                    \
    void shmem_ctx_iput##S(shmem_ctx_t c, void *d, const void *s, ptrdiff_t ds, ptrdiff_t ss, size_t n, int pe) \
    { shm_strided(c, 1, d, s, ds, ss, n, S / 8, pe, "shmem_iput" #S); }                            \
    void shmem_iput##S(void *d, const void *s, ptrdiff_t ds, ptrdiff_t ss, size_t n, int pe)       \
    { shmem_ctx_iput##S(SHMEM_CTX_DEFAULT, d, s, ds, ss, n, pe); }                                 \
    void shmem_ctx_iget##S(shmem_ctx_t c, void *d, const void *s, ptrdiff_t ds, ptrdiff_t ss, size_t n, int pe) \
    { shm_strided(c, 0, d, s, ds, ss, n, S / 8, pe, "shmem_iget" #S); }                            \
    void shmem_iget##S(void *d, const void *s, ptrdiff_t ds, ptrdiff_t ss, size_t n, int pe)       \
    { shmem_ctx_iget##S(SHMEM_CTX_DEFAULT, d, s, ds, ss, n, pe); }
SHMEM_X_SIZES(SHM_RMA_SIZED_)

void shmem_ctx_putmem(shmem_ctx_t c, void *d, const void *s, size_t n, int pe) { shm_put(c, d, s, n, pe, 0, "shmem_putmem"); }
void shmem_putmem(void *d, const void *s, size_t n, int pe) { shm_put(SHMEM_CTX_DEFAULT, d, s, n, pe, 0, "shmem_putmem"); }
void shmem_ctx_putmem_nbi(shmem_ctx_t c, void *d, const void *s, size_t n, int pe) { shm_put(c, d, s, n, pe, 1, "shmem_putmem_nbi"); }
void shmem_putmem_nbi(void *d, const void *s, size_t n, int pe) { shm_put(SHMEM_CTX_DEFAULT, d, s, n, pe, 1, "shmem_putmem_nbi"); }
void shmem_ctx_getmem(shmem_ctx_t c, void *d, const void *s, size_t n, int pe) { shm_get(c, d, s, n, pe, 0, "shmem_getmem"); }
void shmem_getmem(void *d, const void *s, size_t n, int pe) { shm_get(SHMEM_CTX_DEFAULT, d, s, n, pe, 0, "shmem_getmem"); }
void shmem_ctx_getmem_nbi(shmem_ctx_t c, void *d, const void *s, size_t n, int pe) { shm_get(c, d, s, n, pe, 1, "shmem_getmem_nbi"); }
void shmem_getmem_nbi(void *d, const void *s, size_t n, int pe) { shm_get(SHMEM_CTX_DEFAULT, d, s, n, pe, 1, "shmem_getmem_nbi"); }
