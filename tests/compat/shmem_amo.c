/*
 * shmem_amo.c — every AMO on every standard AMO type (and fetch/set/swap on float, double),
 * the nbi fetching forms, context forms and the generic names, on heap and static targets,
 * checked against a local reference; values use the top bit so 32-bit compare-swap and
 * fetch-and/or/xor must act on exactly 32 bits (Open MPI 4.1 gets those wrong), with the
 * neighbouring words written by other PEs at the same time. Then contention: every PE with 3
 * threads increments, compare-swap-increments and xors words on PE 0; the totals must be exact.
 * Also the locks under the same contention.
 */
#include "shmem_test.h"

#include <pthread.h>

static int me, npes, right;
#define ST_AMO_STATIC_(T, N) static T s_##N[64];
SHMEM_X_AMO_TYPES(ST_AMO_STATIC_)
SHMEM_X_AMO_EXT_TYPES(ST_AMO_STATIC_)

/* a value with the top bit of T set (for signed T: a negative one) */
#define TOPV(T, k) ((T)((T)(1ULL << (sizeof(T) * 8 - 1)) | (T)(k)))

/* my slot in `arr` on the right PE; every PE uses its own slot, all at once */
#define ST_AMO_STD_(T, N)                                                                          \
    static void amo_##N(T *arr, shmem_ctx_t ctx, const char *where)                                \
    {                                                                                              \
        T *d = &arr[me], x0 = TOPV(T, 0x11 + me), x1 = TOPV(T, 0x220), x2 = (T)(0x33 + me), f;     \
        shmem_##N##_atomic_set(d, x0, right);                                                      \
        ST_EXPECT(shmem_##N##_atomic_fetch(d, right) == x0, #N " set/fetch (%s)", where);          \
        ST_EXPECT(shmem_ctx_##N##_atomic_swap(ctx, d, x1, right) == x0, #N " swap (%s)", where);   \
        ST_EXPECT(shmem_##N##_atomic_compare_swap(d, x0, x2, right) == x1, #N " failing cswap (%s)", where); \
        ST_EXPECT(shmem_##N##_atomic_fetch(d, right) == x1, #N " failing cswap wrote (%s)", where); \
        ST_EXPECT(shmem_ctx_##N##_atomic_compare_swap(ctx, d, x1, x2, right) == x1, #N " cswap (%s)", where); \
        ST_EXPECT(shmem_##N##_atomic_fetch_inc(d, right) == x2, #N " fetch_inc (%s)", where);      \
        shmem_##N##_atomic_inc(d, right);                                                          \
        ST_EXPECT(shmem_##N##_atomic_fetch_add(d, (T)5, right) == (T)(x2 + 2), #N " fetch_add (%s)", where); \
        shmem_ctx_##N##_atomic_add(ctx, d, (T)7, right);                                           \
        ST_EXPECT(shmem_##N##_atomic_fetch(d, right) == (T)(x2 + 14), #N " add (%s)", where);      \
        shmem_##N##_atomic_fetch_nbi(&f, d, right);                                                \
        shmem_quiet();                                                                             \
        ST_EXPECT(f == (T)(x2 + 14), #N " fetch_nbi (%s)", where);                                 \
        shmem_##N##_atomic_swap_nbi(&f, d, x0, right);                                             \
        shmem_quiet();                                                                             \
        ST_EXPECT(f == (T)(x2 + 14), #N " swap_nbi (%s)", where);                                  \
        shmem_##N##_atomic_compare_swap_nbi(&f, d, x0, x1, right);                                 \
        shmem_quiet();                                                                             \
        ST_EXPECT(f == x0, #N " compare_swap_nbi (%s)", where);                                    \
        shmem_ctx_##N##_atomic_fetch_inc_nbi(ctx, &f, d, right);                                   \
        shmem_ctx_quiet(ctx);                                                                      \
        ST_EXPECT(f == x1, #N " fetch_inc_nbi (%s)", where);                                       \
        shmem_##N##_atomic_fetch_add_nbi(&f, d, (T)2, right);                                      \
        shmem_quiet();                                                                             \
        ST_EXPECT(f == (T)(x1 + 1), #N " fetch_add_nbi (%s)", where);                              \
        ST_EXPECT(shmem_##N##_atomic_fetch(d, right) == (T)(x1 + 3), #N " final (%s)", where);     \
    }
#define ST_AMO_BIT_(T, N)                                                                          \
    static void bit_##N(T *arr, const char *where)                                                 \
    {                                                                                              \
        T *d = &arr[me], m0 = TOPV(T, 0xF0F0 + me), f;                                             \
        shmem_##N##_atomic_set(d, m0, right);                                                      \
        ST_EXPECT(shmem_##N##_atomic_fetch_and(d, TOPV(T, 0xFF00), right) == m0, #N " fetch_and (%s)", where); \
        T r = m0 & TOPV(T, 0xFF00);                                                                \
        ST_EXPECT(shmem_##N##_atomic_fetch_or(d, (T)0x0F, right) == r, #N " fetch_or (%s)", where); \
        r |= 0x0F;                                                                                 \
        ST_EXPECT(shmem_##N##_atomic_fetch_xor(d, TOPV(T, 0x3), right) == r, #N " fetch_xor (%s)", where); \
        r ^= TOPV(T, 0x3);                                                                         \
        shmem_##N##_atomic_and(d, (T)0x7FF, right), r &= 0x7FF;                                    \
        shmem_##N##_atomic_or(d, TOPV(T, 0x1000), right), r |= TOPV(T, 0x1000);                    \
        shmem_##N##_atomic_xor(d, (T)0x5, right), r ^= 0x5;                                        \
        shmem_##N##_atomic_fetch_and_nbi(&f, d, (T)~(T)0, right);                                  \
        shmem_quiet();                                                                             \
        ST_EXPECT(f == r, #N " bitwise sequence (%s)", where);                                     \
        shmem_##N##_atomic_fetch_or_nbi(&f, d, (T)0, right);                                       \
        shmem_ctx_##N##_atomic_fetch_xor_nbi(SHMEM_CTX_DEFAULT, &f, d, (T)0, right);               \
        shmem_quiet();                                                                             \
        ST_EXPECT(f == r, #N " or/xor nbi (%s)", where);                                           \
    }
#define ST_AMO_EXT_(T, N)                                                                          \
    static void ext_##N(T *arr, const char *where)                                                 \
    {                                                                                              \
        T *d = &arr[me], f;                                                                        \
        shmem_##N##_atomic_set(d, (T)1.25, right);                                                 \
        ST_EXPECT(shmem_##N##_atomic_fetch(d, right) == (T)1.25, #N " fetch (%s)", where);        \
        ST_EXPECT(shmem_##N##_atomic_swap(d, (T)-2.5, right) == (T)1.25, #N " swap (%s)", where);  \
        shmem_##N##_atomic_swap_nbi(&f, d, (T)3.0, right);                                         \
        shmem_quiet();                                                                             \
        ST_EXPECT(f == (T)-2.5, #N " swap_nbi (%s)", where);                                       \
    }
SHMEM_X_AMO_TYPES(ST_AMO_STD_)
SHMEM_X_AMO_BIT_TYPES(ST_AMO_BIT_)
SHMEM_X_AMO_EXT_TYPES(ST_AMO_EXT_)

/* ---- contention */
#define THREADS 3
#define ITERS 300
static long s_count;                 /* static: fetch_inc target on PE 0 */
static int s_cas;                    /* static: compare-swap loop target on PE 0 (32-bit) */
static unsigned int s_xor;           /* static: 32-bit xor target */
static long s_lock;                  /* static lock */
static long *h_count, *h_lock, *h_shared;
static long s_shared;               /* static counter under s_lock (h_shared is under h_lock) */

static void *hammer(void *arg)
{
    int t = (int)(intptr_t)arg;
    long last = -1;
    for (int i = 0; i < ITERS; i++) {
        long f = shmem_long_atomic_fetch_inc(&s_count, 0);
        if (f <= last) ST_REPORT_("fetch_inc", "fetched %ld after %ld", f, last);
        last = f;
        shmem_long_atomic_add(h_count, 2, 0);
        int old = shmem_int_atomic_fetch(&s_cas, 0), seen;
        while ((seen = shmem_int_atomic_compare_swap(&s_cas, old, old + 1, 0)) != old) old = seen;
        shmem_uint_atomic_xor(&s_xor, 1u << ((me * THREADS + t) % 32), 0);
        if (i % 10 == 0) { /* a non-atomic read-modify-write under each lock */
            int use_static = (i / 10) % 2;
            long *lock = use_static ? &s_lock : h_lock, *counter = use_static ? &s_shared : h_shared;
            if (i % 30 == 0) shmem_set_lock(lock);
            else while (shmem_test_lock(lock)) {}
            long v = shmem_long_g(counter, 0);
            shmem_long_p(counter, v + 1, 0);
            shmem_clear_lock(lock);
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    shmem_init_thread(SHMEM_THREAD_MULTIPLE, NULL);
    st_seed(argc, argv);
    me = shmem_my_pe(), npes = shmem_n_pes(), right = (me + 1) % npes;
    shmem_ctx_t ctx;
    ST_CHECK(shmem_ctx_create(0, &ctx) == 0, "ctx_create");
#define ST_RUN_STD_(T, N)                                                                          \
    {                                                                                              \
        T *h = shmem_calloc(64, sizeof(T));                                                        \
        amo_##N(h, ctx, "heap");                                                                   \
        amo_##N(s_##N, SHMEM_CTX_DEFAULT, "static");                                               \
        shmem_free(h);                                                                             \
    }
#define ST_RUN_BIT_(T, N)                                                                          \
    {                                                                                              \
        T *h = shmem_calloc(64, sizeof(T));                                                        \
        bit_##N(h, "heap");                                                                        \
        bit_##N(s_##N, "static");                                                                  \
        shmem_free(h);                                                                             \
    }
#define ST_RUN_EXT_(T, N)                                                                          \
    {                                                                                              \
        T *h = shmem_calloc(64, sizeof(T));                                                        \
        ext_##N(h, "heap");                                                                        \
        ext_##N(s_##N, "static");                                                                  \
        shmem_free(h);                                                                             \
    }
    SHMEM_X_AMO_TYPES(ST_RUN_STD_)
    SHMEM_X_AMO_BIT_TYPES(ST_RUN_BIT_)
    SHMEM_X_AMO_EXT_TYPES(ST_RUN_EXT_)
    shmem_barrier_all();
    /* a 32-bit op must leave the neighbouring 32 bits alone */
    uint32_t *pair = shmem_calloc(2, sizeof(uint32_t));
    if (me == 0) pair[1] = 0xDEADBEEFu;
    shmem_barrier_all();
    if (me == npes - 1) {
        ST_EXPECT(shmem_uint32_atomic_compare_swap(&pair[0], 0, 0x80000001u, 0) == 0, "cswap32");
        ST_EXPECT(shmem_uint32_atomic_fetch_and(&pair[0], 0x80000000u, 0) == 0x80000001u, "fetch_and32");
        ST_EXPECT(shmem_uint32_atomic_fetch_or(&pair[0], 0x7u, 0) == 0x80000000u, "fetch_or32");
        ST_EXPECT(shmem_uint32_atomic_fetch_xor(&pair[0], 0x80000000u, 0) == 0x80000007u, "fetch_xor32");
        ST_EXPECT(shmem_uint32_g(&pair[1], 0) == 0xDEADBEEFu, "the neighbouring word changed");
    }
    /* generic names */
    long *gl = shmem_calloc(1, sizeof(long));
    shmem_barrier_all();
    shmem_atomic_add(gl, 3L, 0);
    shmem_atomic_fetch_inc(ctx, gl, 0);
    shmem_barrier_all();
    if (me == 0) ST_EXPECT(*gl == 4L * npes, "generic add/fetch_inc: %ld", *gl);
    ST_EXPECT(shmem_atomic_fetch(gl, 0) == 4L * npes, "generic fetch");
    ST_EXPECT(shmem_atomic_compare_swap(&pair[1], 0xDEADBEEFu, 0xDEADBEEFu, 0) == 0xDEADBEEFu, "generic cswap");
    shmem_barrier_all();
    /* the generic bitwise AMOs on int32_t and int64_t (rows of the 1.4 / 1.5 tables): every PE
     * sets its own bit on PE 0, fetching and not; the last PE then clears and flips them */
    int32_t *b32 = shmem_calloc(2, sizeof(int32_t));
    int64_t *b64 = shmem_calloc(1, sizeof(int64_t));
    shmem_barrier_all();
    shmem_atomic_or(&b32[0], (int32_t)1 << (me % 31), 0);
    (void)shmem_atomic_fetch_or(b64, (int64_t)1 << (me % 63), 0);
    shmem_barrier_all();
    int32_t want32 = 0;
    int64_t want64 = 0;
    for (int p = 0; p < npes; p++) want32 |= (int32_t)1 << (p % 31), want64 |= (int64_t)1 << (p % 63);
    if (me == npes - 1) {
        ST_EXPECT(shmem_atomic_fetch(&b32[0], 0) == want32, "generic int32_t or: %x, want %x", (unsigned)b32[0],
                  (unsigned)want32);
        ST_EXPECT(shmem_atomic_fetch_and(b64, (int64_t)1, 0) == want64, "generic int64_t fetch_and");
        shmem_atomic_xor(&b32[0], (int32_t)-1, 0);
        ST_EXPECT(shmem_atomic_fetch_xor(&b32[0], (int32_t)0, 0) == ~want32, "generic int32_t xor");
        shmem_atomic_and(&b32[0], (int32_t)0, 0);
        ST_EXPECT(shmem_int32_atomic_fetch(&b32[0], 0) == 0 && shmem_int64_atomic_fetch(b64, 0) == 1 &&
                      shmem_int32_atomic_fetch(&b32[1], 0) == 0,
                  "generic int32_t and / int64_t and: %d, %lld (the next word %d)", shmem_int32_atomic_fetch(&b32[0], 0),
                  (long long)shmem_int64_atomic_fetch(b64, 0), shmem_int32_atomic_fetch(&b32[1], 0));
    }
    shmem_barrier_all();
    shmem_free(b64);
    shmem_free(b32);

    h_count = shmem_calloc(1, sizeof(long));
    h_lock = shmem_calloc(1, sizeof(long));
    h_shared = shmem_calloc(1, sizeof(long));
    shmem_barrier_all();
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, hammer, (void *)(intptr_t)t);
    for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    shmem_barrier_all();
    long total = (long)npes * THREADS * ITERS;
    if (me == 0) {
        unsigned want_xor = 0;
        for (int b = 0; b < npes * THREADS; b++) want_xor ^= (ITERS % 2) ? 1u << (b % 32) : 0;
        ST_EXPECT(s_count == total, "fetch_inc total %ld, want %ld", s_count, total);
        ST_EXPECT(*h_count == 2 * total, "add total %ld, want %ld", *h_count, 2 * total);
        ST_EXPECT(s_cas == (int)total, "compare-swap total %d, want %ld", s_cas, total);
        ST_EXPECT(s_xor == want_xor, "xor %x, want %x", s_xor, want_xor);
        ST_EXPECT(*h_shared + s_shared == total / 10 && *h_shared == s_shared, "under the locks %ld + %ld, want %ld",
                  *h_shared, s_shared, total / 10);
        ST_EXPECT(s_lock == h_lock[0] && (s_lock >> 32) == (s_lock & 0xffffffff), "locks left held");
    }
    shmem_ctx_destroy(ctx);
    int rc = st_finish();
    shmem_finalize();
    return rc;
}
