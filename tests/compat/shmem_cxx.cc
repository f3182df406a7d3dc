// shmem_cxx.cc — shmem.h as C++: the typed names, and the overloads that stand in for every
// C11 generic name of 1.5 (RMA with contexts, put-with-signal, AMO with their nbi and bitwise
// forms, wait_until / test with _all / _any / _some / _vector, the team collectives and the
// reductions, complex ones over std::complex). Compiled with -fsyntax-only -Werror, then built
// with `DUETCC_CC=c++ duetcc` and run under duetrun (tests/compat/shmem.cmake): every result is
// checked, one line per failure, exit status 1 if any.
#include <shmem.h>
#include <shmemx.h>

#include <complex>
#include <cstdio>

static int failures;
#define EXPECT(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            if (failures++ < 20) {                                                                 \
                std::fprintf(stderr, "shmem_cxx: PE %d: FAIL line %d: %s: ", shmem_my_pe(), __LINE__, #cond); \
                std::fprintf(stderr, __VA_ARGS__);                                                 \
                std::fprintf(stderr, "\n");                                                        \
            }                                                                                      \
        }                                                                                          \
    } while (0)

static long s_flags[4];  // static data: symmetric too
static uint64_t s_sig;

int main()
{
    shmem_init();
    const int me = shmem_my_pe(), n = shmem_n_pes(), right = (me + 1) % n, left = (me + n - 1) % n;

    // ---- RMA: plain and context forms, nbi, strided, p/g, put-with-signal
    long *x = static_cast<long *>(shmem_malloc(8 * sizeof(long)));
    double *dx = static_cast<double *>(shmem_malloc(4 * sizeof(double)));
    long v[8];
    for (int i = 0; i < 8; i++) v[i] = me * 100 + i, x[i] = -1;
    shmem_barrier_all();
    shmem_put(x, v, 4, right);
    shmem_put(SHMEM_CTX_DEFAULT, x + 4, v + 4, 2, right);
    shmem_put_nbi(SHMEM_CTX_DEFAULT, x + 6, v + 6, 1, right);
    shmem_p(SHMEM_CTX_DEFAULT, x + 7, 777L, right);
    shmem_quiet();
    shmem_barrier_all();
    for (int i = 0; i < 7; i++) EXPECT(x[i] == left * 100 + i, "put [%d] = %ld", i, x[i]);
    EXPECT(x[7] == 777, "ctx p %ld", x[7]);
    long got[8] = {0};
    shmem_get(got, x, 2, right);
    shmem_get(SHMEM_CTX_DEFAULT, got + 2, x + 2, 2, right);
    shmem_get_nbi(got + 4, x + 4, 1, right);
    shmem_get_nbi(SHMEM_CTX_DEFAULT, got + 5, x + 5, 1, right);
    shmem_quiet();
    for (int i = 0; i < 6; i++) EXPECT(got[i] == me * 100 + i, "get [%d] = %ld", i, got[i]);
    EXPECT(shmem_g(SHMEM_CTX_DEFAULT, x + 7, right) == 777 && shmem_g(x, right) == me * 100, "g");
    long strided[4] = {0};
    shmem_iget(strided, x, 1, 2, 4, right);  // x[0], x[2], x[4], x[6] of right (= mine)
    for (int i = 0; i < 4; i++) EXPECT(strided[i] == me * 100 + 2 * i, "iget [%d] = %ld", i, strided[i]);
    shmem_barrier_all();
    shmem_iput(SHMEM_CTX_DEFAULT, x, v, 2, 1, 4, right);  // into x[0, 2, 4, 6]
    shmem_barrier_all();
    for (int i = 0; i < 4; i++) EXPECT(x[2 * i] == left * 100 + i, "iput [%d] = %ld", 2 * i, x[2 * i]);
    double dv[4] = {0.5, 1.5, 2.5, 3.5};
    uint64_t *sig = static_cast<uint64_t *>(shmem_calloc(1, sizeof(uint64_t)));
    shmem_barrier_all();
    shmem_put_signal(dx, dv, 2, sig, 1, SHMEM_SIGNAL_ADD, right);
    shmem_put_signal_nbi(SHMEM_CTX_DEFAULT, dx + 2, dv + 2, 2, &s_sig, 5, SHMEM_SIGNAL_SET, right);
    shmem_signal_wait_until(sig, SHMEM_CMP_EQ, 1);
    shmem_signal_wait_until(&s_sig, SHMEM_CMP_EQ, 5);
    for (int i = 0; i < 4; i++) EXPECT(dx[i] == dv[i], "put_signal [%d] = %g", i, dx[i]);

    // ---- AMO on PE 0's words: each PE adds, increments, ors its bit; nbi fetching forms
    long *ctr = static_cast<long *>(shmem_calloc(4, sizeof(long)));
    unsigned long *bits = static_cast<unsigned long *>(shmem_calloc(2, sizeof(unsigned long)));
    double *dw = static_cast<double *>(shmem_calloc(1, sizeof(double)));
    shmem_barrier_all();
    shmem_atomic_add(ctr, 2L, 0);
    shmem_atomic_add(SHMEM_CTX_DEFAULT, ctr, 3L, 0);
    shmem_atomic_inc(ctr + 1, 0);
    shmem_atomic_inc(SHMEM_CTX_DEFAULT, ctr + 1, 0);
    long f1 = shmem_atomic_fetch_add(ctr + 2, 10L, 0), f2 = shmem_atomic_fetch_inc(SHMEM_CTX_DEFAULT, ctr + 2, 0);
    EXPECT(f1 >= 0 && f2 >= 10, "fetch_add %ld, fetch_inc %ld", f1, f2);
    long fn = -1, fi = -1;
    shmem_atomic_fetch_add_nbi(&fn, ctr + 3, 1L, 0);
    shmem_atomic_fetch_inc_nbi(SHMEM_CTX_DEFAULT, &fi, ctr + 3, 0);
    shmem_quiet();
    EXPECT(fn >= 0 && fi >= 1 && fi != fn, "nbi fetches %ld %ld", fn, fi);
    shmem_atomic_or(bits, 1UL << me, 0);
    unsigned long fo = shmem_atomic_fetch_or(SHMEM_CTX_DEFAULT, bits + 1, 1UL << me, 0);
    EXPECT((fo & (1UL << me)) == 0, "fetch_or saw my bit early: %lx", fo);
    unsigned long fxn = 0;
    shmem_atomic_fetch_xor_nbi(&fxn, bits + 1, 1UL << (me + 32), 0);
    shmem_quiet();
    shmem_barrier_all();
    if (me == 0) {
        EXPECT(ctr[0] == 5L * n && ctr[1] == 2L * n && ctr[2] == 11L * n && ctr[3] == 2L * n, "counters %ld %ld %ld %ld",
               ctr[0], ctr[1], ctr[2], ctr[3]);
        unsigned long all = (n >= 64 ? ~0UL : (1UL << n) - 1);
        EXPECT(bits[0] == all && bits[1] == (all | (all << 32)), "bits %lx %lx", bits[0], bits[1]);
    }
    shmem_barrier_all();
    if (me == 0) {
        shmem_atomic_set(dw, 2.5, n - 1);
        EXPECT(shmem_atomic_fetch(dw, n - 1) == 2.5, "double set/fetch");
        EXPECT(shmem_atomic_swap(SHMEM_CTX_DEFAULT, dw, 4.0, n - 1) == 2.5, "double swap");
        double fd = 0;
        shmem_atomic_fetch_nbi(&fd, dw, n - 1);
        shmem_quiet();
        EXPECT(fd == 4.0, "double fetch_nbi %g", fd);
        long k = -1;
        shmem_atomic_compare_swap_nbi(&k, ctr, 5L * n, 42L, 0);
        shmem_quiet();
        EXPECT(k == 5L * n && shmem_atomic_compare_swap(ctr, 42L, 43L, 0) == 42, "compare_swap %ld", k);
        long sw = -1;
        shmem_atomic_swap_nbi(&sw, ctr, 7L, 0);
        shmem_quiet();
        EXPECT(sw == 43 && shmem_atomic_fetch(SHMEM_CTX_DEFAULT, ctr, 0) == 7, "swap_nbi %ld", sw);
        unsigned long fa = 0;
        shmem_atomic_fetch_and_nbi(SHMEM_CTX_DEFAULT, &fa, bits, 1UL, 0);
        shmem_quiet();
        EXPECT(shmem_atomic_fetch_and(bits, ~0UL, 0) == 1UL, "fetch_and %lx", fa);
        shmem_atomic_xor(SHMEM_CTX_DEFAULT, bits, 3UL, 0);
        shmem_atomic_and(bits, 2UL, 0);
        EXPECT(bits[0] == 2UL, "xor/and %lx", bits[0]);
    }

    // ---- waits and tests: PE right sets my flags (heap and static), one by one
    long *flags = static_cast<long *>(shmem_calloc(4, sizeof(long)));
    for (int i = 0; i < 4; i++) s_flags[i] = 0;
    shmem_barrier_all();
    EXPECT(shmem_test(flags, SHMEM_CMP_NE, 0L) == 0 && shmem_test_any(s_flags, 4, nullptr, SHMEM_CMP_NE, 0L) == SIZE_MAX,
           "test before");
    EXPECT(shmem_test_all(flags, 4, nullptr, SHMEM_CMP_EQ, 0L) == 1, "test_all before");
    size_t idx[4];
    EXPECT(shmem_test_some(flags, 4, idx, nullptr, SHMEM_CMP_NE, 0L) == 0, "test_some before");
    shmem_barrier_all();
    for (int i = 0; i < 4; i++) {
        shmem_p(flags + i, long(i + 1), left);
        shmem_p(s_flags + i, long(i + 1), left);
    }
    shmem_quiet();
    long want[4] = {1, 2, 3, 4};
    size_t k1 = shmem_wait_until_any(flags, 4, nullptr, SHMEM_CMP_GE, 1L);
    EXPECT(k1 < 4, "wait_until_any %zu", k1);
    size_t ks = shmem_wait_until_some(s_flags, 4, idx, nullptr, SHMEM_CMP_GE, 1L);
    EXPECT(ks >= 1 && ks <= 4 && idx[0] < 4, "wait_until_some %zu", ks);
    shmem_wait_until_all(flags, 4, nullptr, SHMEM_CMP_GE, 1L);
    shmem_wait_until_all_vector(s_flags, 4, nullptr, SHMEM_CMP_EQ, want);
    EXPECT(shmem_wait_until_any_vector(flags, 4, nullptr, SHMEM_CMP_EQ, want) < 4, "any_vector");
    EXPECT(shmem_wait_until_some_vector(s_flags, 4, idx, nullptr, SHMEM_CMP_EQ, want) == 4, "some_vector");
    shmem_wait_until(s_flags + 3, SHMEM_CMP_EQ, 4L);
    int skip[4] = {1, 0, 1, 0};
    EXPECT(shmem_test_all_vector(flags, 4, nullptr, SHMEM_CMP_EQ, want) == 1, "test_all_vector");
    EXPECT(shmem_test_any_vector(s_flags, 4, skip, SHMEM_CMP_EQ, want) == 1, "test_any_vector");
    EXPECT(shmem_test_some_vector(flags, 4, idx, skip, SHMEM_CMP_EQ, want) == 2 && idx[0] == 1 && idx[1] == 3,
           "test_some_vector");
    EXPECT(shmem_test(s_flags + 2, SHMEM_CMP_EQ, 3L) == 1, "test");

    // ---- team collectives and reductions
    int *src = static_cast<int *>(shmem_malloc(4 * sizeof(int) * n));
    int *dst = static_cast<int *>(shmem_malloc(4 * sizeof(int) * n));
    for (int i = 0; i < 4 * n; i++) src[i] = me * 1000 + i, dst[i] = -1;
    shmem_barrier_all();
    EXPECT(shmem_broadcast(SHMEM_TEAM_WORLD, dst, src, 3, n - 1) == 0, "broadcast rc");
    for (int i = 0; i < 3; i++) EXPECT(dst[i] == (n - 1) * 1000 + i, "broadcast [%d] = %d", i, dst[i]);
    EXPECT(shmem_fcollect(SHMEM_TEAM_WORLD, dst, src, 2) == 0, "fcollect rc");
    for (int p = 0; p < n; p++) EXPECT(dst[2 * p + 1] == p * 1000 + 1, "fcollect [%d] = %d", 2 * p + 1, dst[2 * p + 1]);
    EXPECT(shmem_collect(SHMEM_TEAM_WORLD, dst, src, size_t(me % 2 + 1)) == 0, "collect rc");
    for (int p = 0, at = 0; p < n; p++)
        for (int i = 0; i <= p % 2; i++, at++) EXPECT(dst[at] == p * 1000 + i, "collect [%d] = %d", at, dst[at]);
    EXPECT(shmem_alltoall(SHMEM_TEAM_WORLD, dst, src, 1) == 0, "alltoall rc");
    for (int p = 0; p < n; p++) EXPECT(dst[p] == p * 1000 + me, "alltoall [%d] = %d", p, dst[p]);
    EXPECT(shmem_alltoalls(SHMEM_TEAM_WORLD, dst, src, 1, 2, 1) == 0, "alltoalls rc");
    for (int p = 0; p < n; p++) EXPECT(dst[p] == p * 1000 + 2 * me, "alltoalls [%d] = %d", p, dst[p]);

    int *isum = static_cast<int *>(shmem_malloc(2 * sizeof(int)));
    double *dmax = static_cast<double *>(shmem_malloc(2 * sizeof(double)));
    unsigned int *uand = static_cast<unsigned int *>(shmem_malloc(sizeof(unsigned int)));
    std::complex<double> *csum = static_cast<std::complex<double> *>(shmem_malloc(sizeof(std::complex<double>)));
    isum[0] = me + 1, isum[1] = 1;
    dmax[0] = me * 0.5, dmax[1] = -me;
    uand[0] = 0xF0u | (1u << (me % 4));
    csum[0] = std::complex<double>(me, 1.0);
    shmem_barrier_all();
    EXPECT(shmem_sum_reduce(SHMEM_TEAM_WORLD, isum, isum, 2) == 0, "sum_reduce rc");
    EXPECT(shmem_max_reduce(SHMEM_TEAM_WORLD, dmax, dmax, 2) == 0, "max_reduce rc");
    EXPECT(shmem_and_reduce(SHMEM_TEAM_WORLD, uand, uand, 1) == 0, "and_reduce rc");
    EXPECT(shmem_sum_reduce(SHMEM_TEAM_WORLD, csum, csum, 1) == 0, "complex sum_reduce rc");
    EXPECT(isum[0] == n * (n + 1) / 2 && isum[1] == n, "int sum %d %d", isum[0], isum[1]);
    EXPECT(dmax[0] == (n - 1) * 0.5 && dmax[1] == 0, "double max %g %g", dmax[0], dmax[1]);
    EXPECT((uand[0] & 0xF0u) == 0xF0u && (n == 1 || (uand[0] & 0xFu) == 0), "uint and %x", uand[0]);
    EXPECT(csum[0] == std::complex<double>(n * (n - 1) / 2.0, n), "complex sum (%g, %g)", csum[0].real(), csum[0].imag());
    /* and on C's complex types (C++ code that keeps them): typed, generic and *_to_all */
    double _Complex *cz = static_cast<double _Complex *>(shmem_malloc(2 * sizeof(double _Complex)));
    float _Complex *fz = static_cast<float _Complex *>(shmem_malloc(2 * sizeof(float _Complex)));
    static double _Complex zwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
    static long zsync[SHMEM_REDUCE_SYNC_SIZE];
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) zsync[i] = SHMEM_SYNC_VALUE;
    __real__ cz[0] = me, __imag__ cz[0] = 2.0;
    __real__ fz[0] = 1.0f, __imag__ fz[0] = (float)me;
    shmem_barrier_all();
    EXPECT(shmem_complexd_sum_reduce(SHMEM_TEAM_WORLD, cz + 1, cz, 1) == 0, "complexd_sum_reduce on double _Complex rc");
    EXPECT(shmem_prod_reduce(SHMEM_TEAM_WORLD, fz + 1, fz, 1) == 0, "generic prod_reduce on float _Complex rc");
    EXPECT(__real__ cz[1] == n * (n - 1) / 2.0 && __imag__ cz[1] == 2.0 * n, "double _Complex sum (%g, %g)",
           __real__ cz[1], __imag__ cz[1]);
    /* the product of (1 + i*p) over p < n, by std::complex */
    std::complex<float> zwant(1.0f, 0.0f);
    for (int p = 0; p < n; p++) zwant *= std::complex<float>(1.0f, (float)p);
    EXPECT(__real__ fz[1] == zwant.real() && __imag__ fz[1] == zwant.imag(), "float _Complex prod (%g, %g), want (%g, %g)",
           (double)__real__ fz[1], (double)__imag__ fz[1], (double)zwant.real(), (double)zwant.imag());
    shmem_complexd_sum_to_all(cz + 1, cz, 1, 0, 0, n, zwrk, zsync);
    EXPECT(__real__ cz[1] == n * (n - 1) / 2.0 && __imag__ cz[1] == 2.0 * n, "complexd_sum_to_all on double _Complex");
    shmem_barrier_all();
    shmem_free(fz);
    shmem_free(cz);
    /* the bitwise overloads on the signed fixed-width types (1.5 rows): or of every PE's bit */
    int32_t *s32 = static_cast<int32_t *>(shmem_malloc(2 * sizeof(int32_t)));
    int8_t *s8 = static_cast<int8_t *>(shmem_malloc(2));
    s32[0] = (int32_t)1 << (me % 31), s8[0] = (int8_t)(1 << (me % 7));
    shmem_barrier_all();
    EXPECT(shmem_or_reduce(SHMEM_TEAM_WORLD, s32 + 1, s32, 1) == 0 && shmem_or_reduce(SHMEM_TEAM_WORLD, s8 + 1, s8, 1) == 0,
           "or_reduce of int32_t / int8_t rc");
    int32_t w32 = 0;
    int w8 = 0;
    for (int p = 0; p < n; p++) w32 |= (int32_t)1 << (p % 31), w8 |= 1 << (p % 7);
    EXPECT(s32[1] == w32 && s8[1] == (int8_t)w8, "or_reduce of int32_t %x (want %x), int8_t %x (want %x)",
           (unsigned)s32[1], (unsigned)w32, (unsigned)(uint8_t)s8[1], (unsigned)(uint8_t)w8);
    shmem_barrier_all();
    int64_t *a64 = static_cast<int64_t *>(shmem_calloc(1, sizeof(int64_t)));
    shmem_barrier_all();
    shmem_atomic_or(a64, (int64_t)1 << (me % 63), 0);
    shmem_barrier_all();
    int64_t w64 = 0;
    for (int p = 0; p < n; p++) w64 |= (int64_t)1 << (p % 63);
    EXPECT(shmem_atomic_fetch_xor(a64, (int64_t)0, 0) == w64, "int64_t atomic or");
    /* the 1.3 generic names as overloads: an int swap is 32 bits, its neighbour untouched */
    int *ip = static_cast<int *>(shmem_calloc(2, sizeof(int)));
    ip[1] = 0x5a5a;
    shmem_barrier_all();
    if (me == 0) {
        EXPECT(shmem_swap(&ip[0], 3, n - 1) == 0 && shmem_fadd(&ip[0], 2, n - 1) == 3 && shmem_fetch(&ip[0], n - 1) == 5,
               "1.3 generic swap / fadd / fetch on int");
        EXPECT(shmem_fetch(&ip[1], n - 1) == 0x5a5a, "the neighbouring int changed");
    }
    shmem_barrier_all();
    shmem_free(ip);
    shmem_free(a64);
    shmem_free(s8);
    shmem_free(s32);
    long lmin[1] = {0}, lsrc[1] = {100L - me};
    long *lm = static_cast<long *>(shmem_malloc(sizeof(long)));
    lm[0] = lsrc[0];
    shmem_barrier_all();
    EXPECT(shmem_min_reduce(SHMEM_TEAM_WORLD, lm, lm, 1) == 0 && lm[0] == 100L - (n - 1), "long min %ld", lm[0]);
    (void)lmin;
    unsigned long long *xo = static_cast<unsigned long long *>(shmem_malloc(sizeof(unsigned long long)));
    xo[0] = 1ULL << me;
    shmem_barrier_all();
    shmem_xor_reduce(SHMEM_TEAM_WORLD, xo, xo, 1);
    shmem_or_reduce(SHMEM_TEAM_WORLD, xo, xo, 1);
    EXPECT(xo[0] == (1ULL << n) - 1, "xor/or %llx", xo[0]);
    float *fp = static_cast<float *>(shmem_malloc(sizeof(float)));
    fp[0] = 2.0f;
    shmem_barrier_all();
    shmem_prod_reduce(SHMEM_TEAM_WORLD, fp, fp, 1);
    EXPECT(fp[0] == float(1 << n), "float prod %g", double(fp[0]));

    shmem_barrier_all();
    shmem_free(fp);
    shmem_free(xo);
    shmem_free(lm);
    shmem_free(csum);
    shmem_free(uand);
    shmem_free(dmax);
    shmem_free(isum);
    shmem_free(dst);
    shmem_free(src);
    shmem_free(flags);
    shmem_free(dw);
    shmem_free(bits);
    shmem_free(ctr);
    shmem_free(sig);
    shmem_free(dx);
    shmem_free(x);
    if (failures) std::fprintf(stderr, "shmem_cxx: PE %d: %d failures\n", me, failures);
    else if (me == 0) std::printf("shmem_cxx: %d PEs: every check passed\n", n);
    shmem_finalize();
    return failures ? 1 : 0;
}
