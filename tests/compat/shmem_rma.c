/*
 * shmem_rma.c — put / get / p / g / iput / iget, blocking and nbi, for every TYPENAME, the
 * sized (8...128) and mem forms, with and without a context, the C11 generic forms, on heap
 * and static targets; zero-length transfers as no-ops whatever the addresses. Each PE writes
 * to its right neighbour; every value is checked against the sender's formula.
 */
#include "shmem_test.h"

#define NE 24 /* elements per transfer */

/* value i of PE pe, representable in every RMA type (0..126) */
#define VAL(T, pe, i, k) ((T)(((pe) * 31 + (i) * 7 + (k)) % 127))

#define ST_STATIC_(T, N) static T s_##N[3 * NE];
SHMEM_X_RMA_TYPES(ST_STATIC_)

static int me, npes, right, left;

/* One type: blocking, nbi, p/g, strided, ctx; on `dst` (heap or static, 3 * NE elements). */
#define ST_RMA_TYPE_(T, N)                                                                         \
    static void rma_##N(T *dst, shmem_ctx_t ctx, const char *where)                                \
    {                                                                                              \
        T src[3 * NE], got[3 * NE];                                                                \
        for (int i = 0; i < 3 * NE; i++) src[i] = VAL(T, me, i, 0);                                \
        memset(dst, 0, 3 * NE * sizeof(T));                                                        \
        shmem_barrier_all();                                                                       \
        shmem_##N##_put(dst, src, NE, right);                                                      \
        shmem_ctx_##N##_put_nbi(ctx, dst + NE, src + NE, NE, right);                               \
        shmem_##N##_p(dst + 2 * NE, VAL(T, me, 0, 5), right);                                      \
        shmem_ctx_quiet(ctx);                                                                      \
        shmem_barrier_all();                                                                       \
        for (int i = 0; i < 2 * NE; i++)                                                           \
            ST_EXPECT(dst[i] == VAL(T, left, i, 0), #N " put (%s) [%d]", where, i);                \
        ST_EXPECT(dst[2 * NE] == VAL(T, left, 0, 5), #N " p (%s)", where);                         \
        shmem_##N##_get(got, dst, NE, right);          /* right's dst holds my values */           \
        shmem_ctx_##N##_get_nbi(ctx, got + NE, dst + NE, NE, right);                               \
        shmem_ctx_quiet(ctx);                                                                      \
        for (int i = 0; i < 2 * NE; i++) ST_EXPECT(got[i] == VAL(T, me, i, 0), #N " get (%s) [%d]", where, i); \
        ST_EXPECT(shmem_##N##_g(dst + 2 * NE, right) == VAL(T, me, 0, 5), #N " g (%s)", where);    \
        ST_EXPECT(shmem_ctx_##N##_g(ctx, dst + 2 * NE, right) == VAL(T, me, 0, 5), #N " ctx g");   \
        shmem_barrier_all();                                                                       \
        /* strided: NE/3 elements, every 3rd of src into every 2nd of dst */                       \
        memset(dst, 0, 3 * NE * sizeof(T));                                                        \
        shmem_barrier_all();                                                                       \
        shmem_##N##_iput(dst, src, 2, 3, NE / 3, right);                                           \
        shmem_ctx_##N##_iput(ctx, dst + 2 * NE, src, 1, 2, NE / 2, right);                         \
        shmem_barrier_all();                                                                       \
        for (int i = 0; i < NE / 3; i++) {                                                         \
            ST_EXPECT(dst[2 * i] == VAL(T, left, 3 * i, 0), #N " iput (%s) [%d]", where, i);       \
            ST_EXPECT(dst[2 * i + 1] == 0, #N " iput touched a gap (%s) [%d]", where, i);          \
        }                                                                                          \
        for (int i = 0; i < NE / 2; i++)                                                           \
            ST_EXPECT(dst[2 * NE + i] == VAL(T, left, 2 * i, 0), #N " ctx iput (%s) [%d]", where, i); \
        memset(got, 0, sizeof got);                                                                \
        shmem_##N##_iget(got, dst, 3, 2, NE / 3, right);                                           \
        shmem_ctx_##N##_iget(ctx, got + 1, dst + 2 * NE, 3, 1, NE / 3, right);                     \
        for (int i = 0; i < NE / 3; i++) {                                                         \
            ST_EXPECT(got[3 * i] == VAL(T, me, 3 * i, 0), #N " iget (%s) [%d]", where, i);         \
            ST_EXPECT(got[3 * i + 1] == VAL(T, me, 2 * i, 0), #N " ctx iget (%s) [%d]", where, i); \
        }                                                                                          \
        shmem_barrier_all();                                                                       \
    }
SHMEM_X_RMA_TYPES(ST_RMA_TYPE_)

/* bytes [start, start+n) of the left PE's source pattern? */
static int left_bytes(const unsigned char *p, size_t start, size_t n)
{
    for (size_t k = 0; k < n; k++)
        if (p[k] != (unsigned char)(left * 13 + (int)(start + k))) return 0;
    return 1;
}

/* sized forms: S-bit elements moved as bytes; checked bytewise */
static void sized(unsigned char *dst, const char *where)
{
    unsigned char src[16 * NE], got[16 * NE];
    for (int i = 0; i < 16 * NE; i++) src[i] = (unsigned char)(me * 13 + i);
#define ST_SIZED_(S)                                                                               \
    memset(dst, 0, 16 * NE);                                                                       \
    shmem_barrier_all();                                                                           \
    shmem_put##S(dst, src, 3, right);                                                              \
    shmem_put##S##_nbi(dst + 3 * S / 8, src + 3 * S / 8, 2, right);                                \
    shmem_quiet();                                                                                 \
    shmem_barrier_all();                                                                           \
    for (size_t i = 0; i < 5 * S / 8; i++)                                                         \
        ST_EXPECT(left_bytes(dst + i, i, 1), "put" #S " (%s) byte %zu", where, i);                 \
    ST_EXPECT(dst[5 * S / 8] == 0, "put" #S " wrote too much (%s)", where);                        \
    shmem_get##S(got, dst, 3, right);                                                              \
    shmem_get##S##_nbi(got + 3 * S / 8, dst + 3 * S / 8, 2, right);                                \
    shmem_quiet();                                                                                 \
    for (size_t i = 0; i < 5 * S / 8; i++) ST_EXPECT(got[i] == src[i], "get" #S " (%s) byte %zu", where, i); \
    shmem_barrier_all();                                                                           \
    memset(dst, 0, 16 * NE);                                                                       \
    shmem_barrier_all();                                                                           \
    shmem_iput##S(dst, src, 2, 1, 4, right);                                                       \
    shmem_barrier_all();                                                                           \
    for (int e = 0; e < 4; e++)                                                                    \
        ST_EXPECT(left_bytes(dst + 2 * e * S / 8, (size_t)e * S / 8, S / 8), "iput" #S " (%s) elem %d", where, e); \
    memset(got, 0, sizeof got);                                                                    \
    shmem_iget##S(got, dst, 1, 2, 4, right);                                                       \
    for (int e = 0; e < 4; e++) ST_EXPECT(memcmp(got + e * S / 8, src + e * S / 8, S / 8) == 0, "iget" #S " (%s) elem %d", where, e); \
    shmem_barrier_all();
    SHMEM_X_SIZES(ST_SIZED_)
    memset(dst, 0, 16 * NE);
    shmem_barrier_all();
    shmem_putmem(dst, src, 17, right);
    shmem_putmem_nbi(dst + 17, src + 17, 9, right);
    shmem_ctx_putmem(SHMEM_CTX_DEFAULT, dst + 26, src + 26, 1, right);
    shmem_quiet();
    shmem_barrier_all();
    ST_EXPECT(left_bytes(dst, 0, 27), "putmem (%s)", where);
    shmem_getmem(got, dst, 27, right);
    shmem_getmem_nbi(got + 27, dst, 1, right);
    shmem_quiet();
    ST_EXPECT(memcmp(got, src, 27) == 0 && got[27] == src[0], "getmem (%s)", where);
    shmem_barrier_all();
}

static unsigned char s_bytes[16 * NE];

int main(int argc, char **argv)
{
    shmem_init();
    st_seed(argc, argv);
    me = shmem_my_pe(), npes = shmem_n_pes(), right = (me + 1) % npes, left = (me + npes - 1) % npes;
    shmem_ctx_t ctx;
    ST_CHECK(shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx) == 0, "ctx_create");
#define ST_RUN_(T, N)                                                                              \
    {                                                                                              \
        T *heap = shmem_malloc(3 * NE * sizeof(T));                                                \
        ST_CHECK(heap != NULL, "malloc");                                                          \
        rma_##N(heap, ctx, "heap");                                                                \
        rma_##N(s_##N, SHMEM_CTX_DEFAULT, "static");                                               \
        shmem_free(heap);                                                                          \
    }
    SHMEM_X_RMA_TYPES(ST_RUN_)
    unsigned char *hb = shmem_malloc(16 * NE);
    sized(hb, "heap");
    sized(s_bytes, "static");

    /* zero-length transfers: no-ops whatever the addresses */
    shmem_putmem(NULL, NULL, 0, right);
    shmem_getmem((void *)16, (void *)32, 0, right);
    shmem_int_put((int *)8, NULL, 0, right);
    shmem_double_get_nbi(NULL, (double *)8, 0, right);
    shmem_long_iput(NULL, NULL, 1, 1, 0, right);
    shmem_ctx_int_iget(ctx, NULL, NULL, 1, 1, 0, right);
    shmem_put64(NULL, NULL, 0, right);
    shmem_iget128(NULL, NULL, 1, 1, 0, right);

    /* C11 generic forms (the typed call each must select is checked by its result) */
    long *gl = shmem_malloc(4 * sizeof(long));
    double *gd = shmem_malloc(4 * sizeof(double));
    long lv[4] = {me, me + 1, me + 2, me + 3};
    double dv[4] = {me * 0.5, 1.5, 2.5, 3.5};
    shmem_barrier_all();
    shmem_put(gl, lv, 4, right);
    shmem_put(ctx, gd, dv, 4, right);
    shmem_p(&gl[3], (long)-7, right);
    shmem_quiet();
    shmem_ctx_quiet(ctx);
    shmem_barrier_all();
    ST_EXPECT(gl[0] == left && gl[2] == left + 2 && gl[3] == -7, "generic put/p %ld %ld %ld", gl[0], gl[2], gl[3]);
    ST_EXPECT(gd[0] == left * 0.5 && gd[3] == 3.5, "generic ctx put %g", gd[0]);
    long back[4];
    shmem_get(back, gl, 4, right);
    ST_EXPECT(back[0] == me && back[3] == -7, "generic get %ld", back[0]);
    ST_EXPECT(shmem_g(&gd[0], right) == me * 0.5, "generic g");
    ST_EXPECT(shmem_g(ctx, &gl[1], right) == me + 1, "generic ctx g");
    shmem_iget(back, gl, 1, 2, 2, right);
    ST_EXPECT(back[0] == me && back[1] == me + 2, "generic iget");
    shmem_barrier_all();
    shmem_ctx_destroy(ctx);
    shmem_free(gl);
    shmem_free(gd);
    shmem_free(hb);
    int rc = st_finish();
    shmem_finalize();
    return rc;
}
