/*
 * test_errors.c — every error path of the one-sided API, the heap calls and the
 * communicator calls returns the right status with a fresh, non-empty duet_last_error(),
 * and never crashes. Run under duetrun at any rank count (every rank runs every case).
 *
 * Covers: remote addresses outside the heap (stack, malloc'ed, the internal area before
 * the user heap, the heap's end, ranges crossing it), PEs -1 / n / INT_MIN / INT_MAX,
 * nelems * size overflow, NULL local buffers with nbytes > 0, zero-length transfers with
 * garbage addresses (DUET_OK), NULL and non-live (wrong magic) communicators, invalid
 * comparisons and sig_ops, misaligned atomics, signals and ivars, NULL result pointers,
 * strided extents (stride 0, overflow, negative strides leaving the heap), duet_free of
 * non-heap / interior / already-freed pointers, duet_align with non-powers of two, heap
 * calls on a team, destroying the world or a parent with children, bad ids and configs
 * for duet_comm_init_rank, waits that run out (`test_errors timeouts`: one process,
 * DUET_WAIT_TIMEOUT=1 set before init),
 * calls before duet_init and after duet_finalize, duet_status_str of every code.
 *
 * Not covered here: a communicator handle that was destroyed (test_stale.c: refused without
 * reading the freed object).
 */
#include "duet_test.h"

#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int me = -1, npes;
static duet_comm_t W;

/* A call returning a status must return `want` and set a message of its own (the primed
 * sentinel must be gone). */
#define ERR(call, want)                                                                          \
    do {                                                                                         \
        dt_prime_error();                                                                        \
        CHECK_STATUS(call, want);                                                                \
        CHECK(duet_last_error()[0] && !dt_error_primed(), "%s failed without a message of its own", #call); \
    } while (0)
/* A call returning a pointer must return NULL and set a message. */
#define ERRP(call)                                                                               \
    do {                                                                                         \
        dt_prime_error();                                                                        \
        void *p_ = (void *)(call);                                                               \
        CHECK(p_ == NULL, "%s -> %p, want NULL", #call, p_);                                     \
        CHECK(duet_last_error()[0] && !dt_error_primed(), "%s failed without a message of its own", #call); \
    } while (0)
#define HAS(text) CHECK(strstr(duet_last_error(), (text)), "message lacks \"%s\"", (text))

static char *g_buf;  /* symmetric, 4096 bytes, the first block: the user heap's start */
static char *g_end;  /* one past the last byte of the user heap */
static uint64_t *g_sig;

/* The user heap ends where duet_addr_accessible stops answering 1. */
static char *find_heap_end(void)
{
    size_t lo = 0, hi = (size_t)1 << 40; /* accessible at g_buf + lo, not at g_buf + hi */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (duet_addr_accessible(W, g_buf + mid, me)) lo = mid;
        else hi = mid;
    }
    return g_buf + hi;
}

static void test_addresses(void)
{
    dt_set_context("addresses");
    int stack_var = 0;
    char *heap_priv = malloc(64), src[64] = {0};
    int pe = (me + 1) % npes;
    void *bad[] = {&stack_var, heap_priv, g_buf - 1, g_buf - 4096, g_end, g_end + 4096, (void *)16,
                   (void *)(UINTPTR_MAX - 7)};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        void *d = bad[i];
        ERR(duet_put(W, d, src, 8, pe), DUET_ERR_INVALID_ARG);
        HAS("duet_put");
        ERR(duet_put_nbi(W, d, src, 8, pe), DUET_ERR_INVALID_ARG);
        ERR(duet_get(W, src, d, 8, pe), DUET_ERR_INVALID_ARG);
        ERR(duet_get_nbi(W, src, d, 8, pe), DUET_ERR_INVALID_ARG);
        ERR(duet_p_int(W, d, 1, pe), DUET_ERR_INVALID_ARG);
        int v;
        ERR(duet_g_int(W, d, pe, &v), DUET_ERR_INVALID_ARG);
        ERR(duet_iput_int(W, d, (int *)(void *)src, 1, 1, 2, pe), DUET_ERR_INVALID_ARG);
        ERR(duet_iget_int(W, (int *)(void *)src, d, 1, 1, 2, pe), DUET_ERR_INVALID_ARG);
        ERR(duet_put_signal(W, d, src, 8, g_sig, 1, DUET_SIGNAL_SET, pe), DUET_ERR_INVALID_ARG);
        ERR(duet_put_signal(W, g_buf, src, 8, d, 1, DUET_SIGNAL_SET, pe), DUET_ERR_INVALID_ARG);
        ERR(duet_signal_op(W, d, 1, DUET_SIGNAL_ADD, pe), DUET_ERR_INVALID_ARG);
        uint64_t f;
        ERR(duet_signal_fetch(W, d, &f), DUET_ERR_INVALID_ARG);
        ERR(duet_signal_wait_until(W, d, DUET_CMP_EQ, 0, NULL), DUET_ERR_INVALID_ARG);
        ERR(duet_atomic_add_uint64(W, d, 1, pe), DUET_ERR_INVALID_ARG);
        ERR(duet_atomic_fetch_uint64(W, d, pe, &f), DUET_ERR_INVALID_ARG);
        ERR(duet_atomic_compare_swap_uint64(W, d, 0, 1, pe, &f), DUET_ERR_INVALID_ARG);
        ERR(duet_atomic_set_double(W, d, 1.0, pe), DUET_ERR_INVALID_ARG);
        ERR(duet_wait_until_int(W, d, DUET_CMP_EQ, 0), DUET_ERR_INVALID_ARG);
        int sat;
        ERR(duet_test_int(W, d, DUET_CMP_EQ, 0, &sat), DUET_ERR_INVALID_ARG);
        CHECK(duet_ptr(W, d, pe) == NULL && !duet_addr_accessible(W, d, pe), "bad address %zu mapped", i);
    }
    /* ranges that start inside and cross the end; the last bytes themselves are fine */
    ERR(duet_put(W, g_end - 4, src, 8, pe), DUET_ERR_INVALID_ARG);
    ERR(duet_get(W, src, g_end - 1, 2, pe), DUET_ERR_INVALID_ARG);
    ERR(duet_put(W, g_buf, src, (size_t)(g_end - g_buf) + 1, pe), DUET_ERR_INVALID_ARG);
    ERR(duet_put(W, g_buf, src, SIZE_MAX, pe), DUET_ERR_INVALID_ARG);
    ERR(duet_get(W, src, g_buf + 8, SIZE_MAX - 4, pe), DUET_ERR_INVALID_ARG);
    ERR(duet_atomic_add_uint64(W, (uint64_t *)(void *)(g_end - 4), 1, pe), DUET_ERR_INVALID_ARG);
    CHECK_OK(duet_get(W, src, g_end - 8, 8, pe));
    CHECK(duet_ptr(W, g_end - 1, pe) != NULL, "the heap's last byte is not mapped");
    free(heap_priv);
}

static void test_pes(void)
{
    dt_set_context("pes");
    char src[16] = {0};
    const int bad[] = {-1, npes, npes + 1, INT_MIN, INT_MAX};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int pe = bad[i];
        ERR(duet_put(W, g_buf, src, 8, pe), DUET_ERR_INVALID_ARG);
        HAS("PE");
        ERR(duet_get(W, src, g_buf, 8, pe), DUET_ERR_INVALID_ARG);
        ERR(duet_iput_int(W, (int *)(void *)g_buf, (int *)(void *)src, 2, 1, 2, pe), DUET_ERR_INVALID_ARG);
        ERR(duet_iget_int(W, (int *)(void *)src, (int *)(void *)g_buf, 1, 2, 2, pe), DUET_ERR_INVALID_ARG);
        ERR(duet_p_long(W, (long *)(void *)g_buf, 1, pe), DUET_ERR_INVALID_ARG);
        ERR(duet_put_signal(W, g_buf, src, 8, g_sig, 1, DUET_SIGNAL_SET, pe), DUET_ERR_INVALID_ARG);
        ERR(duet_put_signal_nbi(W, g_buf, src, 0, g_sig, 1, DUET_SIGNAL_ADD, pe), DUET_ERR_INVALID_ARG);
        ERR(duet_signal_op(W, g_sig, 1, DUET_SIGNAL_ADD, pe), DUET_ERR_INVALID_ARG);
        ERR(duet_atomic_inc_int(W, (int *)(void *)g_buf, pe), DUET_ERR_INVALID_ARG);
        int f;
        ERR(duet_atomic_swap_int(W, (int *)(void *)g_buf, 1, pe, &f), DUET_ERR_INVALID_ARG);
        CHECK(duet_ptr(W, g_buf, pe) == NULL && !duet_addr_accessible(W, g_buf, pe), "pe %d mapped", pe);
    }
}

static void test_sizes_and_locals(void)
{
    dt_set_context("sizes and local buffers");
    int pe = (me + 1) % npes;
    int64_t v64[4] = {0};
    ERR(duet_put_int64(W, (int64_t *)(void *)g_buf, v64, SIZE_MAX / 4, pe), DUET_ERR_INVALID_ARG);
    HAS("overflow");
    ERR(duet_get_int64_nbi(W, v64, (int64_t *)(void *)g_buf, SIZE_MAX / 8 + 1, pe), DUET_ERR_INVALID_ARG);
    ERR(duet_put_longdouble(W, (long double *)(void *)g_buf, NULL, SIZE_MAX / 2, pe), DUET_ERR_INVALID_ARG);
    ERR(duet_iput_int64(W, (int64_t *)(void *)g_buf, v64, PTRDIFF_MAX, 1, 3, pe), DUET_ERR_INVALID_ARG);
    ERR(duet_iget(W, v64, g_buf, 1, 1, SIZE_MAX / 2, 8, pe), DUET_ERR_INVALID_ARG);
    ERR(duet_iput(W, g_buf, v64, 0, 1, 2, 8, pe), DUET_ERR_INVALID_ARG);       /* stride 0 */
    ERR(duet_iget(W, v64, g_buf, 1, 0, 2, 8, pe), DUET_ERR_INVALID_ARG);
    ERR(duet_iput(W, g_buf, v64, -1, 1, 2, 8, pe), DUET_ERR_INVALID_ARG);      /* below the heap */
    ERR(duet_iput(W, g_end - 8, v64, 2, 1, 2, 8, pe), DUET_ERR_INVALID_ARG);  /* past its end */

    /* NULL local buffers with bytes to move */
    ERR(duet_put(W, g_buf, NULL, 8, pe), DUET_ERR_INVALID_ARG);
    HAS("NULL");
    ERR(duet_put_nbi(W, g_buf, NULL, 1, pe), DUET_ERR_INVALID_ARG);
    ERR(duet_get(W, NULL, g_buf, 8, pe), DUET_ERR_INVALID_ARG);
    ERR(duet_get_nbi(W, NULL, g_buf, 8, pe), DUET_ERR_INVALID_ARG);
    ERR(duet_put_int(W, (int *)(void *)g_buf, NULL, 2, pe), DUET_ERR_INVALID_ARG);
    ERR(duet_iput(W, g_buf, NULL, 1, 1, 2, 4, pe), DUET_ERR_INVALID_ARG);
    ERR(duet_iget(W, NULL, g_buf, 1, 1, 2, 4, pe), DUET_ERR_INVALID_ARG);
    ERR(duet_g_int(W, (int *)(void *)g_buf, pe, NULL), DUET_ERR_INVALID_ARG);
    ERR(duet_put_signal(W, g_buf, NULL, 8, g_sig, 1, DUET_SIGNAL_SET, pe), DUET_ERR_INVALID_ARG);
    ERR(duet_signal_fetch(W, g_sig, NULL), DUET_ERR_INVALID_ARG);
    ERR(duet_atomic_fetch_int(W, (int *)(void *)g_buf, pe, NULL), DUET_ERR_INVALID_ARG);
    ERR(duet_test_int(W, (int *)(void *)g_buf, DUET_CMP_EQ, 0, NULL), DUET_ERR_INVALID_ARG);

    /* zero-length transfers are no-ops whatever the addresses */
    void *junk = (void *)(uintptr_t)0xdeadbeef, *junk2 = (void *)(uintptr_t)8;
    CHECK_OK(duet_put(W, junk, junk2, 0, pe));
    CHECK_OK(duet_put_nbi(W, junk, NULL, 0, pe));
    CHECK_OK(duet_get(W, junk, junk2, 0, pe));
    CHECK_OK(duet_get_nbi(W, NULL, junk, 0, pe));
    CHECK_OK(duet_put_int(W, junk, junk2, 0, pe));
    CHECK_OK(duet_get_double_nbi(W, junk, junk2, 0, pe));
    CHECK_OK(duet_iput(W, junk, junk2, 0, 0, 0, 8, pe));
    CHECK_OK(duet_iget(W, junk, junk2, 5, 7, 0, 8, pe));
    CHECK_OK(duet_iput(W, junk, junk2, 1, 1, 3, 0, pe));
    CHECK_OK(duet_iget_int(W, junk, junk2, 1, 1, 0, pe));
    /* a zero-length put_signal still updates the signal */
    *g_sig = 0;
    CHECK_OK(duet_barrier(W));
    CHECK_OK(duet_put_signal(W, junk, junk2, 0, g_sig, 1, DUET_SIGNAL_ADD, pe));
    CHECK_OK(duet_barrier(W));
    CHECK(*g_sig == 1, "zero-length put_signal left the signal at %" PRIu64, *g_sig);
    CHECK_OK(duet_barrier(W));

    /* negative strides that stay inside the heap work */
    int32_t *ib = (int32_t *)(void *)g_buf, src[4] = {11, 22, 33, 44};
    CHECK_OK(duet_iput_int32(W, &ib[10], src, -2, 1, 4, me)); /* ib[10], ib[8], ib[6], ib[4] */
    CHECK(ib[10] == 11 && ib[8] == 22 && ib[6] == 33 && ib[4] == 44, "negative-stride iput");
    int32_t back[4];
    CHECK_OK(duet_iget_int32(W, back, &ib[4], 1, 2, 4, me));
    CHECK(back[0] == 44 && back[3] == 11, "iget");
}

static void test_comm_handles(void)
{
    dt_set_context("communicator handles");
    static uint64_t fake_mem[1024]; /* zeroed: the wrong magic */
    duet_comm_t fake = (duet_comm_t)(void *)fake_mem;
    duet_comm_t bad[] = {NULL, fake};
    char src[8] = {0};
    for (int i = 0; i < 2; i++) {
        duet_comm_t c = bad[i];
        ERR(duet_put(c, g_buf, src, 8, 0), DUET_ERR_INVALID_ARG);
        HAS(i == 0 ? "NULL" : "not a live communicator");
        ERR(duet_put(c, g_buf, src, 0, 0), DUET_ERR_INVALID_ARG);
        ERR(duet_get(c, src, g_buf, 8, 0), DUET_ERR_INVALID_ARG);
        ERR(duet_iput(c, g_buf, src, 1, 1, 1, 8, 0), DUET_ERR_INVALID_ARG);
        ERR(duet_p_int(c, (int *)(void *)g_buf, 1, 0), DUET_ERR_INVALID_ARG);
        ERR(duet_put_signal(c, g_buf, src, 8, g_sig, 1, DUET_SIGNAL_SET, 0), DUET_ERR_INVALID_ARG);
        ERR(duet_signal_op(c, g_sig, 1, DUET_SIGNAL_SET, 0), DUET_ERR_INVALID_ARG);
        uint64_t f;
        ERR(duet_signal_fetch(c, g_sig, &f), DUET_ERR_INVALID_ARG);
        ERR(duet_signal_wait_until(c, g_sig, DUET_CMP_EQ, 0, NULL), DUET_ERR_INVALID_ARG);
        ERR(duet_atomic_add_int(c, (int *)(void *)g_buf, 1, 0), DUET_ERR_INVALID_ARG);
        ERR(duet_atomic_fetch_float(c, (float *)(void *)g_buf, 0, (float *)(void *)src), DUET_ERR_INVALID_ARG);
        ERR(duet_wait_until_int(c, (int *)(void *)g_buf, DUET_CMP_EQ, 0), DUET_ERR_INVALID_ARG);
        ERR(duet_fence(c), DUET_ERR_INVALID_ARG);
        ERR(duet_quiet(c), DUET_ERR_INVALID_ARG);
        ERR(duet_sync(c), DUET_ERR_INVALID_ARG);
        ERR(duet_barrier(c), DUET_ERR_INVALID_ARG);
        ERR(duet_free(c, g_buf), DUET_ERR_INVALID_ARG);
        ERR(duet_free(c, NULL), DUET_ERR_INVALID_ARG);
        ERRP(duet_malloc(c, 64));
        ERRP(duet_calloc(c, 1, 64));
        ERRP(duet_align(c, 64, 64));
        duet_comm_t t;
        ERR(duet_comm_split(c, 0, 0, &t), DUET_ERR_INVALID_ARG);
        ERR(duet_comm_split_strided(c, 0, 1, 1, &t), DUET_ERR_INVALID_ARG);
        ERR(duet_comm_destroy(c), DUET_ERR_INVALID_ARG);
        CHECK(duet_comm_rank(c) == -1 && duet_comm_size(c) == -1, "rank/size of a bad comm");
        CHECK(duet_comm_translate_rank(c, 0, W) == -1 && duet_comm_translate_rank(W, 0, c) == -1, "translate");
        CHECK(duet_ptr(c, g_buf, 0) == NULL && !duet_addr_accessible(c, g_buf, 0), "ptr of a bad comm");
    }
    ERR(duet_comm_destroy(W), DUET_ERR_INVALID_ARG);
    HAS("duet_finalize");
    CHECK_OK(duet_barrier(W)); /* the world still works */
}

static void test_cmp_sigop_alignment(void)
{
    dt_set_context("cmp, sig_op, alignment");
    int pe = (me + 1) % npes;
    int *iv = (int *)(void *)(g_buf + 256);
    size_t idx, cnt, indices[4];
    int sat, vals[4] = {0};
    const int bad_cmp[] = {-1, 6, 100, INT_MIN};
    for (size_t i = 0; i < sizeof bad_cmp / sizeof bad_cmp[0]; i++) {
        int cmp = bad_cmp[i];
        ERR(duet_wait_until_int(W, iv, cmp, 0), DUET_ERR_INVALID_ARG);
        HAS("comparison");
        ERR(duet_test_int(W, iv, cmp, 0, &sat), DUET_ERR_INVALID_ARG);
        ERR(duet_wait_until_all_int(W, iv, 4, NULL, cmp, 0), DUET_ERR_INVALID_ARG);
        ERR(duet_wait_until_any_long(W, (long *)(void *)g_buf, 0, NULL, cmp, 0, &idx), DUET_ERR_INVALID_ARG);
        ERR(duet_wait_until_some_vector_int(W, iv, 4, NULL, cmp, vals, indices, &cnt), DUET_ERR_INVALID_ARG);
        ERR(duet_test_all_uint64(W, (uint64_t *)(void *)g_buf, 2, NULL, cmp, 0, &sat), DUET_ERR_INVALID_ARG);
        ERR(duet_test_any_vector_int(W, iv, 4, NULL, cmp, vals, &idx), DUET_ERR_INVALID_ARG);
        ERR(duet_signal_wait_until(W, g_sig, cmp, 0, NULL), DUET_ERR_INVALID_ARG);
    }
    char src[8] = {0};
    const int bad_op[] = {-1, 2, 3, 1000};
    for (size_t i = 0; i < sizeof bad_op / sizeof bad_op[0]; i++) {
        ERR(duet_put_signal(W, g_buf, src, 8, g_sig, 1, bad_op[i], pe), DUET_ERR_INVALID_ARG);
        HAS("sig_op");
        ERR(duet_put_signal_nbi(W, g_buf, src, 8, g_sig, 1, bad_op[i], pe), DUET_ERR_INVALID_ARG);
        ERR(duet_signal_op(W, g_sig, 1, bad_op[i], pe), DUET_ERR_INVALID_ARG);
    }
    /* misaligned atomics, signals and ivars (inside the heap, so only alignment is wrong) */
    for (int off = 1; off < 8; off++) {
        char *p = g_buf + 512 + off;
        uint64_t f64;
        uint32_t f32;
        ERR(duet_atomic_add_uint64(W, (uint64_t *)(void *)p, 1, pe), DUET_ERR_INVALID_ARG);
        HAS("aligned");
        ERR(duet_atomic_fetch_uint64(W, (uint64_t *)(void *)p, pe, &f64), DUET_ERR_INVALID_ARG);
        ERR(duet_atomic_compare_swap_int64(W, (int64_t *)(void *)p, 0, 1, pe, (int64_t *)&f64), DUET_ERR_INVALID_ARG);
        ERR(duet_atomic_set_double(W, (double *)(void *)p, 1.0, pe), DUET_ERR_INVALID_ARG);
        ERR(duet_signal_op(W, (uint64_t *)(void *)p, 1, DUET_SIGNAL_ADD, pe), DUET_ERR_INVALID_ARG);
        ERR(duet_put_signal(W, g_buf, src, 8, (uint64_t *)(void *)p, 1, DUET_SIGNAL_SET, pe), DUET_ERR_INVALID_ARG);
        ERR(duet_signal_fetch(W, (uint64_t *)(void *)p, &f64), DUET_ERR_INVALID_ARG);
        ERR(duet_signal_wait_until(W, (uint64_t *)(void *)p, DUET_CMP_EQ, 0, NULL), DUET_ERR_INVALID_ARG);
        ERR(duet_wait_until_uint64(W, (uint64_t *)(void *)p, DUET_CMP_EQ, 0), DUET_ERR_INVALID_ARG);
        if (off % 4) {
            ERR(duet_atomic_fetch_add_uint32(W, (uint32_t *)(void *)p, 1, pe, &f32), DUET_ERR_INVALID_ARG);
            ERR(duet_atomic_xor_int32(W, (int32_t *)(void *)p, 1, pe), DUET_ERR_INVALID_ARG);
            ERR(duet_atomic_swap_float(W, (float *)(void *)p, 1.0f, pe, (float *)(void *)&f32), DUET_ERR_INVALID_ARG);
            ERR(duet_test_int(W, (int *)(void *)p, DUET_CMP_EQ, 0, &sat), DUET_ERR_INVALID_ARG);
        }
    }
}

static void test_heap_errors(void)
{
    dt_set_context("heap");
    int stack_var;
    char *priv = malloc(64);
    ERR(duet_free(W, &stack_var), DUET_ERR_INVALID_ARG);
    ERR(duet_free(W, priv), DUET_ERR_INVALID_ARG);
    ERR(duet_free(W, g_buf - 1), DUET_ERR_INVALID_ARG);
    ERR(duet_free(W, g_end), DUET_ERR_INVALID_ARG);
    ERR(duet_free(W, g_buf + 64), DUET_ERR_INVALID_ARG); /* inside a block: every rank agrees */
    free(priv);
    char *p = duet_malloc(W, 1000);
    CHECK(p, "malloc");
    CHECK_OK(duet_free(W, p));
    ERR(duet_free(W, p), DUET_ERR_INVALID_ARG); /* double free */
    HAS("double free");
    static const size_t bad_align[] = {0, 3, 12, 48, 65, 4095, SIZE_MAX};
    for (size_t i = 0; i < sizeof bad_align / sizeof bad_align[0]; i++) {
        ERRP(duet_align(W, bad_align[i], 128));
        HAS("power of two");
    }
    ERRP(duet_calloc(W, SIZE_MAX, 2));
    ERRP(duet_malloc(W, SIZE_MAX));
    ERRP(duet_align(W, (size_t)1 << 62, 64));
    /* allocation on a team that leaves ranks out is refused (they would not follow); one that
     * holds every rank may allocate and free */
    duet_comm_t t, all;
    CHECK_OK(duet_comm_split(W, 0, me, &all));
    void *tb = duet_malloc(all, 64);
    CHECK(tb != NULL, "duet_malloc on a team of every rank: %s", duet_status_str(duet_last_status()));
    CHECK_OK(duet_free(all, tb));
    CHECK_OK(duet_comm_destroy(all));
    CHECK_OK(duet_comm_split(W, npes > 1 ? me % 2 : 0, me, &t));
    if (npes > 1) {
        ERRP(duet_malloc(t, 64));
        HAS("team");
        ERR(duet_free(t, g_buf), DUET_ERR_INVALID_ARG);
    }
    ERR(duet_comm_destroy(W), DUET_ERR_INVALID_ARG);
    ERR(duet_finalize(), DUET_ERR_INVALID_ARG); /* the last reference, a team alive */
    CHECK_OK(duet_comm_destroy(t));
    /* after all those refusals the allocators are still in step */
    char *q = duet_malloc(W, 1000);
    CHECK(q == p, "allocator out of step after refusals: %p, want %p", (void *)q, (void *)p);
    CHECK_OK(duet_free(W, q));
}

static void test_init_rank_errors(void)
{
    dt_set_context("duet_comm_init_rank");
    duet_unique_id_t zero, id;
    memset(&zero, 0, sizeof zero);
    duet_comm_t c = (duet_comm_t)(uintptr_t)1;
    ERR(duet_get_unique_id(NULL), DUET_ERR_INVALID_ARG);
    ERR(duet_comm_init_rank(NULL, 1, zero, 0, NULL), DUET_ERR_INVALID_ARG);
    ERR(duet_comm_init_rank(&c, 1, zero, 0, NULL), DUET_ERR_INVALID_ARG);
    CHECK(c == NULL, "a failed init left the handle at %p", (void *)c);
    HAS("unique id");
    CHECK_OK(duet_get_unique_id(&id));
    ERR(duet_comm_init_rank(&c, 2, id, -1, NULL), DUET_ERR_INVALID_ARG);
    ERR(duet_comm_init_rank(&c, 2, id, 2, NULL), DUET_ERR_INVALID_ARG);
    ERR(duet_comm_init_rank(&c, 0, id, 0, NULL), DUET_ERR_INVALID_ARG);
    duet_config_t cfg = DUET_CONFIG_INIT;
    cfg.struct_size = 0;
    ERR(duet_comm_init_rank(&c, 1, id, 0, &cfg), DUET_ERR_INVALID_ARG);
    cfg.struct_size = sizeof cfg + 64;
    ERR(duet_comm_init_rank(&c, 1, id, 0, &cfg), DUET_ERR_INVALID_ARG);
    HAS("struct_size");
    duet_unique_id_t other = id; /* not this process's listener: rank 0 cannot be taken */
    other.internal[9] ^= 0x5a;
    ERR(duet_comm_init_rank(&c, 1, other, 0, NULL), DUET_ERR_INVALID_ARG);
    HAS("created");
    /* the id still works for its creator after those refusals */
    cfg.struct_size = sizeof cfg;
    cfg.symmetric_size = 1u << 20;
    CHECK_OK(duet_comm_init_rank(&c, 1, id, 0, &cfg));
    CHECK(duet_comm_size(c) == 1 && duet_comm_rank(c) == 0, "single-rank communicator");
    CHECK_OK(duet_comm_destroy(c));
}

/* Run alone (test_errors timeouts, one process, no launcher): with DUET_WAIT_TIMEOUT=1 in
 * a job of several ranks, any stall of the machine longer than a second would also make
 * the barriers of the other cases time out. */
static void test_timeouts(void)
{
    dt_set_context("bounded waits (DUET_WAIT_TIMEOUT=1)");
    int *iv = (int *)(void *)(g_buf + 1024);
    *iv = 0;
    *g_sig = 0;
    double t0 = now_s();
    ERR(duet_wait_until_int(W, iv, DUET_CMP_EQ, 12345), DUET_ERR_TIMEOUT);
    double t1 = now_s();
    HAS("timed out");
    CHECK(t1 - t0 >= 0.9 && t1 - t0 < 10, "wait_until gave up after %.2f s, bound 1 s", t1 - t0);
    ERR(duet_signal_wait_until(W, g_sig, DUET_CMP_GT, 0, NULL), DUET_ERR_TIMEOUT);
    double t2 = now_s();
    HAS("signal");
    CHECK(t2 - t1 >= 0.9 && t2 - t1 < 10, "signal wait gave up after %.2f s, bound 1 s", t2 - t1);
}

static void test_status_names(void)
{
    dt_set_context("status names");
    for (int s = 0; s >= -9; s--) {
        const char *n = duet_status_str((duet_status_t)s);
        CHECK(n && strncmp(n, "DUET_", 5) == 0 && !strstr(n, "UNKNOWN"), "status %d is \"%s\"", s, n ? n : "(null)");
    }
    CHECK(duet_status_str((duet_status_t)-100) != NULL && duet_status_str((duet_status_t)7) != NULL, "unknown");
    CHECK(strcmp(duet_version_string(), "0.1.0") == 0, "version %s", duet_version_string());
}

int main(int argc, char **argv)
{
    int timeouts = argc > 1 && !strcmp(argv[1], "timeouts");
    setenv("DUET_SYMMETRIC_SIZE", "8M", 1);
    if (timeouts) setenv("DUET_WAIT_TIMEOUT", "1", 1);
    setenv("DUET_DEBUG", "NONE", 0); /* the refused calls would log a warning each */

    dt_set_context("before duet_init");
    CHECK(duet_comm_world() == NULL && duet_my_pe() == -1 && duet_n_pes() == 0, "state before init");
    ERR(duet_barrier_all(), DUET_ERR_INVALID_ARG);
    ERR(duet_finalize(), DUET_ERR_INVALID_ARG);

    CHECK_OK(duet_init());
    W = dt_world(&me, &npes);
    g_buf = duet_calloc(W, 1, 4096);
    g_sig = duet_calloc(W, 1, sizeof(uint64_t));
    CHECK(g_buf && g_sig, "calloc");
    g_end = find_heap_end();
    if (me == 0) printf("test_errors: %d ranks, user heap %zu bytes\n", npes, (size_t)(g_end - g_buf));

    if (timeouts) {
        test_timeouts();
        CHECK_OK(duet_free(W, g_sig));
        CHECK_OK(duet_free(W, g_buf));
        CHECK_OK(duet_finalize());
        printf("test_errors timeouts: passed\n");
        return 0;
    }
    test_status_names();
    test_addresses();
    test_pes();
    test_sizes_and_locals();
    CHECK_OK(duet_barrier(W));
    test_comm_handles();
    test_cmp_sigop_alignment();
    test_heap_errors();
    test_init_rank_errors();

    dt_set_context("finalize");
    CHECK_OK(duet_free(W, g_sig));
    CHECK_OK(duet_free(W, g_buf));
    CHECK_OK(duet_finalize());
    ERR(duet_finalize(), DUET_ERR_INVALID_ARG);
    ERR(duet_barrier_all(), DUET_ERR_INVALID_ARG);
    CHECK(duet_comm_world() == NULL, "world after finalize");
    if (me == 0) printf("test_errors: passed\n");
    return 0;
}
