/*
 * shmem_sync.c — wait_until / test with their _all / _any / _some and _vector forms, signals
 * (put_signal[_nbi] set and add, signal_fetch, signal_wait_until, zero-length put_signal),
 * fence ordering, and the deprecated shmem_*_wait; on heap and static ivars. Also the short and
 * unsigned short forms that 1.5 keeps as deprecated (typed and C11 generic), which test suites
 * written for 1.4 still call.
 */
#include "shmem_test.h"

#define NV 6
static long s_iv[NV];
static uint64_t s_sig;
static int s_data[64];

static short s_sh[NV];
static unsigned short s_ush[NV];

static int me, npes, right, left;

static void waits(long *iv, const char *where)
{
    size_t idx[NV], k;
    int none[NV] = {1, 1, 1, 1, 1, 1}, only23[NV] = {1, 1, 0, 0, 1, 1};
    long vals[NV] = {0, 0, 5, 6, 0, 0};
    memset(iv, 0, NV * sizeof(long));
    shmem_barrier_all();
    ST_EXPECT(!shmem_long_test(&iv[2], SHMEM_CMP_EQ, 5), "test before (%s)", where);
    ST_EXPECT(shmem_long_test_any(iv, NV, NULL, SHMEM_CMP_GT, 0) == SIZE_MAX, "test_any before (%s)", where);
    ST_EXPECT(shmem_long_test_some(iv, NV, idx, NULL, SHMEM_CMP_GT, 0) == 0, "test_some before (%s)", where);
    ST_EXPECT(!shmem_long_test_all(iv, NV, only23, SHMEM_CMP_GT, 0), "test_all before (%s)", where);
    ST_EXPECT(shmem_long_test_all(iv, NV, none, SHMEM_CMP_GT, 0), "test_all, all excluded (%s)", where);
    ST_EXPECT(shmem_long_wait_until_any(iv, NV, none, SHMEM_CMP_GT, 0) == SIZE_MAX, "wait_any excluded (%s)", where);
    ST_EXPECT(shmem_long_wait_until_some(iv, NV, idx, none, SHMEM_CMP_GT, 0) == 0, "wait_some excluded (%s)", where);
    shmem_long_wait_until_all(iv, 0, NULL, SHMEM_CMP_GT, 0);
    shmem_barrier_all();
    shmem_long_p(&iv[2], 5, right);
    shmem_long_p(&iv[3], 6, right);
    shmem_quiet();
    shmem_long_wait_until(&iv[2], SHMEM_CMP_EQ, 5);
    k = shmem_long_wait_until_any(iv, NV, NULL, SHMEM_CMP_GE, 5);
    ST_EXPECT(k == 2 || k == 3, "wait_any %zu (%s)", k, where);
    k = shmem_long_wait_until_some(iv, NV, idx, NULL, SHMEM_CMP_GT, 0);
    ST_EXPECT(k >= 1 && k <= 2 && (idx[0] == 2 || idx[0] == 3), "wait_some %zu (%s)", k, where);
    shmem_long_wait_until_all(iv, NV, only23, SHMEM_CMP_GE, 5);
    shmem_long_wait_until_all_vector(iv, NV, NULL, SHMEM_CMP_EQ, vals);
    ST_EXPECT(shmem_long_wait_until_any_vector(iv, NV, only23, SHMEM_CMP_EQ, vals) == 2, "any_vector (%s)", where);
    ST_EXPECT(shmem_long_wait_until_some_vector(iv, NV, idx, NULL, SHMEM_CMP_EQ, vals) == NV, "some_vector (%s)", where);
    ST_EXPECT(shmem_long_test_all_vector(iv, NV, NULL, SHMEM_CMP_EQ, vals), "test_all_vector (%s)", where);
    ST_EXPECT(shmem_long_test_any_vector(iv, NV, NULL, SHMEM_CMP_NE, vals) == SIZE_MAX, "test_any_vector (%s)", where);
    ST_EXPECT(shmem_long_test_some_vector(iv, NV, idx, only23, SHMEM_CMP_LE, vals) == 2 && idx[1] == 3, "test_some_vector (%s)", where);
    ST_EXPECT(shmem_long_test(&iv[3], SHMEM_CMP_LT, 7) && shmem_long_test(&iv[3], SHMEM_CMP_LE, 6) &&
              shmem_long_test(&iv[3], SHMEM_CMP_NE, 0) && !shmem_long_test(&iv[3], SHMEM_CMP_GT, 6), "test cmps (%s)", where);
    ST_EXPECT(shmem_test(&iv[3], SHMEM_CMP_EQ, 6L), "generic test (%s)", where);
    shmem_wait_until(&iv[3], SHMEM_CMP_EQ, 6L);
    shmem_long_wait(&iv[0], 1); /* deprecated: waits while == 1 */
    shmem_barrier_all();
}

/* The deprecated 16-bit forms: my left neighbour stores into my ivars with plain puts; every
 * form (single, _all / _any / _some, _vector, test) must see them, and the generic names must
 * select the short and unsigned short functions. */
static void short_waits(short *sv, unsigned short *uv, const char *where)
{
    size_t idx[NV], k;
    int skip[NV] = {1, 0, 1, 0, 1, 1};
    short want[NV] = {0, -7, 0, 9, 0, 0};
    unsigned short uwant[NV] = {0, 0, 0, 0, 0, 65535};
    memset(sv, 0, NV * sizeof(short));
    memset(uv, 0, NV * sizeof(unsigned short));
    shmem_barrier_all();
    ST_EXPECT(!shmem_short_test(&sv[1], SHMEM_CMP_LT, 0), "short test before (%s)", where);
    ST_EXPECT(shmem_ushort_test_any(uv, NV, NULL, SHMEM_CMP_NE, 0) == SIZE_MAX, "ushort test_any before (%s)", where);
    ST_EXPECT(shmem_test_some(sv, NV, idx, NULL, SHMEM_CMP_NE, (short)0) == 0, "generic short test_some before (%s)", where);
    shmem_barrier_all();
    shmem_short_p(&sv[1], -7, right);
    shmem_short_p(&sv[3], 9, right);
    shmem_ushort_p(&uv[5], 65535, right);
    shmem_quiet();
    shmem_short_wait_until(&sv[1], SHMEM_CMP_LT, 0);
    shmem_wait_until_all(sv, NV, skip, SHMEM_CMP_NE, (short)0);
    k = shmem_ushort_wait_until_any(uv, NV, NULL, SHMEM_CMP_GT, 60000);
    ST_EXPECT(k == 5, "ushort wait_any %zu (%s)", k, where);
    k = shmem_wait_until_some(sv, NV, idx, NULL, SHMEM_CMP_NE, (short)0);
    ST_EXPECT(k == 2 && idx[0] == 1 && idx[1] == 3, "generic short wait_some %zu (%s)", k, where);
    shmem_short_wait_until_all_vector(sv, NV, NULL, SHMEM_CMP_EQ, want);
    k = shmem_wait_until_any_vector(uv, NV, NULL, SHMEM_CMP_EQ, uwant);
    ST_EXPECT(k < NV && uv[k] == uwant[k], "generic ushort any_vector %zu (%s)", k, where);
    ST_EXPECT(shmem_ushort_test_all_vector(uv, NV, NULL, SHMEM_CMP_EQ, uwant), "ushort test_all_vector (%s)", where);
    ST_EXPECT(shmem_test(&uv[5], SHMEM_CMP_GE, (unsigned short)65535), "generic ushort test (%s)", where);
    ST_EXPECT(shmem_short_test(&sv[1], SHMEM_CMP_LE, -7) && !shmem_short_test(&sv[3], SHMEM_CMP_GT, 9),
              "short signed compare (%s)", where);
    shmem_barrier_all();
}

static void signals(int *data, uint64_t *sig, const char *where)
{
    int src[64];
    for (int i = 0; i < 64; i++) src[i] = me * 100 + i;
    *sig = 0;
    shmem_barrier_all();
    shmem_int_put_signal(data, src, 32, sig, 1, SHMEM_SIGNAL_SET, right);
    uint64_t v = shmem_signal_wait_until(sig, SHMEM_CMP_EQ, 1);
    ST_EXPECT(v == 1, "signal value %llu (%s)", (unsigned long long)v, where);
    for (int i = 0; i < 32; i++) ST_EXPECT(data[i] == left * 100 + i, "put_signal data[%d] (%s)", i, where);
    shmem_barrier_all();
    shmem_putmem_signal_nbi(data + 32, src + 32, 32 * sizeof(int), sig, 10, SHMEM_SIGNAL_ADD, right);
    shmem_put32_signal(data, src, 0, sig, 100, SHMEM_SIGNAL_ADD, right); /* zero length: signal only */
    shmem_quiet();
    v = shmem_signal_wait_until(sig, SHMEM_CMP_GE, 111);
    ST_EXPECT(v == 111 && shmem_signal_fetch(sig) == 111, "signal add %llu (%s)", (unsigned long long)v, where);
    for (int i = 32; i < 64; i++) ST_EXPECT(data[i] == left * 100 + i, "put_signal_nbi data[%d] (%s)", i, where);
    shmem_barrier_all();
    /* fence: data, fence, flag: the flag never overtakes the data */
    for (int round = 1; round <= 50; round++) {
        shmem_int_p(&data[round % 64], round * 7, right);
        shmem_fence();
        shmem_uint64_p(sig, (uint64_t)round + 1000, right);
        shmem_uint64_wait_until(sig, SHMEM_CMP_GE, (uint64_t)round + 1000);
        ST_EXPECT(data[round % 64] == round * 7, "fence round %d (%s)", round, where);
        shmem_barrier_all();
    }
}

int main(int argc, char **argv)
{
    shmem_init();
    st_seed(argc, argv);
    me = shmem_my_pe(), npes = shmem_n_pes(), right = (me + 1) % npes, left = (me + npes - 1) % npes;
    long *iv = shmem_malloc(NV * sizeof(long));
    waits(iv, "heap");
    waits(s_iv, "static");
    short *sv = shmem_malloc(NV * sizeof(short));
    unsigned short *uv = shmem_malloc(NV * sizeof(unsigned short));
    short_waits(sv, uv, "heap");
    short_waits(s_sh, s_ush, "static");
    shmem_free(sv);
    shmem_free(uv);
    int *data = shmem_malloc(64 * sizeof(int));
    uint64_t *sig = shmem_malloc(sizeof(uint64_t));
    signals(data, sig, "heap");
    signals(s_data, &s_sig, "static");
    signals(data, &s_sig, "heap data, static signal");
    signals(s_data, sig, "static data, heap signal");
    shmem_free(iv);
    shmem_free(data);
    shmem_free(sig);
    int rc = st_finish();
    shmem_finalize();
    return rc;
}
