/*
 * test_gpu_rma.c — the host one-sided calls on GPU heap memory and their stream-ordered forms
 * (label gpu; a GPU on every rank, ranks may share one under CUDA MPS). Any rank count >= 2.
 * Every result is read back with cudaMemcpy and checked against a reference (seed printed);
 * buffers are poisoned before each case.
 *
 *   - put / get, blocking and nbi, from host and from device buffers, sizes 1 .. 1 MiB + 5:
 *     every rank writes its slice of every pe's block; gets read a peer's block back;
 *   - typed p / g (8 and 4 bytes), strided iput / iget;
 *   - put_signal (add, blocking) and put_signal_nbi (set) + signal_wait_until + signal_fetch;
 *     signal_op; wait_until / test on GPU words; put_nbi then barrier_all (the barrier quiets);
 *   - atomics from every pe on every pe's counters (add 8 and 4 bytes, fetch_inc, and / or /
 *     xor, compare_swap with exactly one winner, swap / set / fetch, float set / fetch): exact;
 *   - stream-ordered: a kernel writes the source, put_on_stream + signal_op_on_stream to the
 *     next pe; there signal_wait_until_on_stream releases a checking kernel; get_on_stream;
 *     quiet_on_stream after host nbi puts; barrier_on_stream 25 times between kernels that
 *     put and check a round number; duet_launch_collective (and a grid too big to fit);
 *   - argument errors of the stream forms.
 */
#include "duet_test.h"

#include <cuda_runtime_api.h>
#include <duet/duet_cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "test_gpu_rma.h"

static int me, npes, next, prev;
static duet_comm_t W;
static duet_device_comm_t H;

#define CUDA_OK(call)                                                                        \
    do {                                                                                     \
        cudaError_t e_ = (cudaError_t)(call);                                                \
        if (e_ != cudaSuccess) FATAL("%s: %s", #call, cudaGetErrorString(e_));               \
    } while (0)

static size_t slice_lo(size_t n, int w) { return n * (size_t)w / (size_t)npes; }
static uint64_t key(int tag, size_t n, int writer, int owner)
{
    return key3(((uint64_t)tag << 40) ^ n, (uint64_t)writer, (uint64_t)owner);
}

static void fill_host(uint8_t *buf, size_t n, uint64_t k)
{
    for (size_t j = 0; j < n; j++) buf[j] = rt_byte(k, j);
}
static size_t diff_host(const uint8_t *buf, size_t n, uint64_t k)
{
    for (size_t j = 0; j < n; j++)
        if (buf[j] != rt_byte(k, j)) return j;
    return SIZE_MAX;
}

/* Every rank's slice of every pe's block, then each checks its own block. */
static void test_put_get(int tag, int nbi, int from_device)
{
    static const size_t sizes[] = {1, 7, 4099, (1u << 20) + 5};
    dt_set_context(nbi ? "put_nbi / get_nbi" : "put / get");
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        size_t n = sizes[i];
        uint8_t *p = duet_malloc_device(W, n);
        CHECK(p != NULL, "malloc_device(%zu)", n);
        CUDA_OK(cudaMemset(p, 0xa5, n));
        CUDA_OK(cudaDeviceSynchronize());
        CHECK_OK(duet_barrier_all());
        size_t lo = slice_lo(n, me), len = slice_lo(n, me + 1) - lo;
        uint8_t *host = malloc(n), *dev = NULL;
        CUDA_OK(cudaMalloc((void **)&dev, n));
        for (int pe = 0; pe < npes && len; pe++) {
            fill_host(host, len, key(tag, n, me, pe));
            const void *src = host;
            if (from_device) {
                CUDA_OK(cudaMemcpy(dev, host, len, cudaMemcpyHostToDevice));
                /* a cudaMemcpy from pageable memory may return before its DMA is done, and the
                 * put runs on Duet's own stream, which does not wait for the legacy stream */
                CUDA_OK(cudaDeviceSynchronize());
                src = dev;
            }
            if (nbi) {
                EXPECT_OK(duet_put_nbi(W, p + lo, src, len, pe));
                if (from_device) EXPECT_OK(duet_quiet(W)); /* dev is reused for the next pe */
            } else {
                EXPECT_OK(duet_put(W, p + lo, src, len, pe));
            }
        }
        if (nbi) EXPECT_OK(duet_quiet(W));
        CHECK_OK(duet_barrier_all());
        memset(host, 0x5a, n);
        CUDA_OK(cudaMemcpy(host, p, n, cudaMemcpyDeviceToHost));
        for (int w = 0; w < npes; w++) {
            size_t wlo = slice_lo(n, w), wlen = slice_lo(n, w + 1) - wlo;
            size_t bad = diff_host(host + wlo, wlen, key(tag, n, w, me));
            EXPECT(bad == SIZE_MAX, "%zu bytes (from %s): byte %zu of rank %d's slice", n,
                   from_device ? "device" : "host", wlo + bad, w);
        }
        /* get the next pe's block into host (and device) memory */
        memset(host, 0x5a, n);
        if (nbi) {
            EXPECT_OK(duet_get_nbi(W, host, p, n, next));
            EXPECT_OK(duet_quiet(W));
        } else {
            EXPECT_OK(duet_get(W, host, p, n, next));
        }
        CUDA_OK(cudaMemset(dev, 0, n));
        /* the memset runs on the legacy stream and the get on Duet's own, which does not wait
         * for it: unsynchronized, the memset could zero bytes the get already wrote (seen once
         * on the H200: two wrong bytes of 1 MiB) */
        CUDA_OK(cudaDeviceSynchronize());
        EXPECT_OK(duet_get(W, dev, p, n, next));
        uint8_t *host2 = malloc(n);
        CUDA_OK(cudaMemcpy(host2, dev, n, cudaMemcpyDeviceToHost));
        for (int w = 0; w < npes; w++) {
            size_t wlo = slice_lo(n, w), wlen = slice_lo(n, w + 1) - wlo;
            size_t bad = diff_host(host + wlo, wlen, key(tag, n, w, next));
            EXPECT(bad == SIZE_MAX, "get of %zu bytes from pe %d: byte %zu", n, next, wlo + bad);
            bad = diff_host(host2 + wlo, wlen, key(tag, n, w, next));
            EXPECT(bad == SIZE_MAX, "get of %zu bytes from pe %d into device memory: byte %zu", n, next,
                   wlo + bad);
        }
        free(host2);
        free(host);
        cudaFree(dev);
        CHECK_OK(duet_barrier_all());
        CHECK_OK(duet_free(W, p));
    }
    dt_set_context(NULL);
}

static void test_p_g_strided(void)
{
    dt_set_context("p / g / iput / iget");
    int64_t *a = duet_malloc_device(W, sizeof(int64_t) * (size_t)npes);
    int *b = duet_malloc_device(W, sizeof(int) * (size_t)npes);
    int64_t *s = duet_malloc_device(W, sizeof(int64_t) * 32);
    CHECK(a && b && s, "malloc_device");
    CUDA_OK(cudaMemset(a, 0, sizeof(int64_t) * (size_t)npes));
    CUDA_OK(cudaMemset(b, 0, sizeof(int) * (size_t)npes));
    CUDA_OK(cudaMemset(s, 0, sizeof(int64_t) * 32));
    CUDA_OK(cudaDeviceSynchronize());
    CHECK_OK(duet_barrier_all());
    for (int pe = 0; pe < npes; pe++) {
        EXPECT_OK(duet_p_int64(W, a + me, (int64_t)me * 1000003 + pe - 7, pe));
        EXPECT_OK(duet_p_int(W, b + me, -(me * 31 + pe), pe));
    }
    int64_t src[16];
    for (int j = 0; j < 16; j++) src[j] = (int64_t)me * 100 + j;
    EXPECT_OK(duet_iput_int64(W, s, src, 2, 1, 16, next)); /* s[0], s[2], ... s[30] of next */
    CHECK_OK(duet_barrier_all());
    int64_t ha[64];
    int hb[64];
    CUDA_OK(cudaMemcpy(ha, a, sizeof(int64_t) * (size_t)npes, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(hb, b, sizeof(int) * (size_t)npes, cudaMemcpyDeviceToHost));
    for (int w = 0; w < npes; w++) {
        EXPECT(ha[w] == (int64_t)w * 1000003 + me - 7, "p_int64 from %d: %lld", w, (long long)ha[w]);
        EXPECT(hb[w] == -(w * 31 + me), "p_int from %d: %d", w, hb[w]);
    }
    int64_t hs[32];
    CUDA_OK(cudaMemcpy(hs, s, sizeof hs, cudaMemcpyDeviceToHost));
    for (int j = 0; j < 32; j++)
        EXPECT(hs[j] == (j % 2 ? 0 : (int64_t)prev * 100 + j / 2), "iput: s[%d] = %lld", j, (long long)hs[j]);
    for (int w = 0; w < npes; w++) {
        int64_t v = -1;
        int vb = 1;
        EXPECT_OK(duet_g_int64(W, a + w, next, &v));
        EXPECT_OK(duet_g_int(W, b + w, next, &vb));
        EXPECT(v == (int64_t)w * 1000003 + next - 7, "g_int64 of a[%d] on %d: %lld", w, next, (long long)v);
        EXPECT(vb == -(w * 31 + next), "g_int of b[%d] on %d: %d", w, next, vb);
    }
    int64_t got[16];
    memset(got, 0, sizeof got);
    EXPECT_OK(duet_iget_int64(W, got, s, 1, 2, 16, next)); /* next's s was written by me */
    for (int j = 0; j < 16; j++)
        EXPECT(got[j] == (int64_t)me * 100 + j, "iget: [%d] = %lld", j, (long long)got[j]);
    CHECK_OK(duet_barrier_all());
    CHECK_OK(duet_free(W, s));
    CHECK_OK(duet_free(W, b));
    CHECK_OK(duet_free(W, a));
    dt_set_context(NULL);
}

static void test_signal_wait(void)
{
    dt_set_context("put_signal / wait");
    size_t n = 65536 + 3;
    uint8_t *d = duet_malloc_device(W, n);
    uint64_t *sig = duet_malloc_device(W, 64);
    int64_t *iv = duet_malloc_device(W, 64);
    CHECK(d && sig && iv, "malloc_device");
    CUDA_OK(cudaMemset(d, 0xa5, n));
    CUDA_OK(cudaMemset(sig, 0, 64));
    CUDA_OK(cudaMemset(iv, 0, 64));
    CUDA_OK(cudaDeviceSynchronize());
    CHECK_OK(duet_barrier_all());
    uint8_t *host = malloc(n);
    fill_host(host, n, key(7, n, me, next));
    EXPECT_OK(duet_put_signal(W, d, host, n, sig, 1, DUET_SIGNAL_ADD, next));
    uint64_t v = 0;
    EXPECT_OK(duet_signal_wait_until(W, sig, DUET_CMP_GE, 1, &v));
    EXPECT(v == 1, "signal value %llu", (unsigned long long)v);
    memset(host, 0, n);
    CUDA_OK(cudaMemcpy(host, d, n, cudaMemcpyDeviceToHost));
    size_t bad = diff_host(host, n, key(7, n, prev, me));
    EXPECT(bad == SIZE_MAX, "put_signal data: byte %zu", bad);
    /* nbi with set: the data lands before the signal, whatever the order of completion */
    fill_host(host, n, key(8, n, me, next));
    CHECK_OK(duet_barrier_all()); /* every rank has read d */
    EXPECT_OK(duet_put_signal_nbi(W, d, host, n, sig + 1, 5, DUET_SIGNAL_SET, next));
    EXPECT_OK(duet_signal_wait_until(W, sig + 1, DUET_CMP_EQ, 5, NULL));
    CUDA_OK(cudaMemcpy(host, d, n, cudaMemcpyDeviceToHost));
    bad = diff_host(host, n, key(8, n, prev, me));
    EXPECT(bad == SIZE_MAX, "put_signal_nbi data: byte %zu", bad);
    EXPECT_OK(duet_quiet(W));
    /* signal_op and fetch */
    EXPECT_OK(duet_signal_op(W, sig + 2, (uint64_t)me + 10, DUET_SIGNAL_SET, next));
    EXPECT_OK(duet_signal_wait_until(W, sig + 2, DUET_CMP_NE, 0, &v));
    EXPECT(v == (uint64_t)prev + 10, "signal_op set: %llu", (unsigned long long)v);
    EXPECT_OK(duet_signal_fetch(W, sig + 2, &v));
    EXPECT(v == (uint64_t)prev + 10, "signal_fetch: %llu", (unsigned long long)v);
    /* wait_until / test on a GPU word, set by p from the previous pe */
    int sat = 1;
    EXPECT_OK(duet_test_int64(W, iv, DUET_CMP_EQ, 42, &sat));
    EXPECT(sat == 0, "test before the p");
    CHECK_OK(duet_barrier_all());
    EXPECT_OK(duet_p_int64(W, iv, 42, next));
    EXPECT_OK(duet_quiet(W));
    EXPECT_OK(duet_wait_until_int64(W, iv, DUET_CMP_EQ, 42));
    EXPECT_OK(duet_test_int64(W, iv, DUET_CMP_EQ, 42, &sat));
    EXPECT(sat == 1, "test after the wait");
    /* put_nbi, then barrier_all without quiet: the barrier completes it */
    CHECK_OK(duet_barrier_all());
    fill_host(host, n, key(9, n, me, next));
    EXPECT_OK(duet_put_nbi(W, d, host, n, next));
    CHECK_OK(duet_barrier_all());
    CUDA_OK(cudaMemcpy(host, d, n, cudaMemcpyDeviceToHost));
    bad = diff_host(host, n, key(9, n, prev, me));
    EXPECT(bad == SIZE_MAX, "put_nbi + barrier_all: byte %zu", bad);
    CHECK_OK(duet_barrier_all());
    free(host);
    CHECK_OK(duet_free(W, iv));
    CHECK_OK(duet_free(W, sig));
    CHECK_OK(duet_free(W, d));
    dt_set_context(NULL);
}

static void test_atomics(void)
{
    dt_set_context("atomics");
    enum { K = 40 };
    int64_t *c8 = duet_malloc_device(W, 256);
    CHECK(c8 != NULL, "malloc_device");
    int *c4 = (int *)(c8 + 4);           /* words: c8[0] add, c8[1] fetch_inc, c4 add */
    uint64_t *bits = (uint64_t *)(c8 + 8); /* [0] or, [1] and, [2] xor */
    int64_t *cas = c8 + 12, *wins = c8 + 13, *swp = c8 + 14;
    double *dbl = (double *)(c8 + 15);
    CUDA_OK(cudaMemset(c8, 0, 256));
    uint64_t ones = ~0ull;
    CUDA_OK(cudaMemcpy(bits + 1, &ones, 8, cudaMemcpyHostToDevice));
    CUDA_OK(cudaDeviceSynchronize());
    CHECK_OK(duet_barrier_all());
    long long inc_sum = 0;
    for (int k = 0; k < K; k++)
        for (int pe = 0; pe < npes; pe++) {
            EXPECT_OK(duet_atomic_add_int64(W, c8, me + 1, pe));
            EXPECT_OK(duet_atomic_add_int(W, c4, -(me + 1), pe));
            int64_t f = -1;
            EXPECT_OK(duet_atomic_fetch_inc_int64(W, c8 + 1, pe, &f));
            if (pe == 0) inc_sum += f;
        }
    EXPECT_OK(duet_atomic_or_uint64(W, bits, 1ull << me, 0));
    EXPECT_OK(duet_atomic_and_uint64(W, bits + 1, ~(1ull << me), 0));
    uint64_t old = 0;
    EXPECT_OK(duet_atomic_fetch_xor_uint64(W, bits + 2, 3ull << (2 * me), 0, &old));
    int64_t was = -1;
    EXPECT_OK(duet_atomic_compare_swap_int64(W, cas, 0, me + 1, 0, &was));
    if (was == 0) EXPECT_OK(duet_atomic_add_int64(W, wins, 1, 0));
    CHECK_OK(duet_barrier_all());
    int64_t h[16];
    CUDA_OK(cudaMemcpy(h, c8, sizeof h, cudaMemcpyDeviceToHost));
    long long tri = (long long)npes * (npes + 1) / 2;
    EXPECT(h[0] == K * tri, "add_int64: %lld, want %lld", (long long)h[0], K * tri);
    EXPECT(h[1] == (long long)K * npes, "fetch_inc_int64: %lld", (long long)h[1]);
    int h4;
    memcpy(&h4, h + 4, sizeof h4);
    EXPECT(h4 == -(int)(K * tri), "add_int: %d", h4);
    uint64_t all = npes >= 64 ? ~0ull : (1ull << npes) - 1;
    uint64_t x = 0;
    for (int r = 0; r < npes; r++) x ^= 3ull << (2 * r);
    if (me == 0) {
        EXPECT((uint64_t)h[8] == all, "or: %llx", (unsigned long long)h[8]);
        EXPECT((uint64_t)h[9] == ~all, "and: %llx", (unsigned long long)h[9]);
        EXPECT((uint64_t)h[10] == x, "xor: %llx", (unsigned long long)h[10]);
        EXPECT(h[12] >= 1 && h[12] <= npes, "compare_swap winner %lld", (long long)h[12]);
        EXPECT(h[13] == 1, "compare_swap winners: %lld", (long long)h[13]);
    }
    /* the fetch_inc values of pe 0's counter are all different: their sum over ranks is known */
    long long *sums = duet_malloc(W, sizeof(long long) * (size_t)npes);
    CHECK(sums != NULL, "host slots");
    CHECK_OK(dt_allgather(W, sums, &inc_sum, sizeof inc_sum));
    long long total = 0, m = (long long)K * npes;
    for (int r = 0; r < npes; r++) total += sums[r];
    EXPECT(total == m * (m - 1) / 2, "fetch_inc values sum to %lld, want %lld", total, m * (m - 1) / 2);
    CHECK_OK(duet_barrier_all());
    CHECK_OK(duet_free(W, sums));
    /* swap / set / fetch, and the float forms, between me and next */
    int64_t f = 0;
    EXPECT_OK(duet_atomic_set_int64(W, swp, 77 + me, next));
    EXPECT_OK(duet_atomic_set_double(W, dbl, 0.5 + me, next));
    CHECK_OK(duet_barrier_all());
    EXPECT_OK(duet_atomic_fetch_int64(W, swp, me, &f));
    EXPECT(f == 77 + prev, "set then fetch: %lld", (long long)f);
    double d = 0;
    EXPECT_OK(duet_atomic_fetch_double(W, dbl, me, &d));
    EXPECT(d == 0.5 + prev, "double set / fetch: %g", d);
    CHECK_OK(duet_barrier_all());
    EXPECT_OK(duet_atomic_swap_int64(W, swp, 1000 + me, next, &f));
    EXPECT(f == 77 + me, "swap returned %lld", (long long)f);
    CHECK_OK(duet_barrier_all());
    CHECK_OK(duet_free(W, c8));
    dt_set_context(NULL);
}

static void test_streams(void)
{
    dt_set_context("stream-ordered");
    cudaStream_t s;
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    size_t n = (256u << 10) + 11;
    uint8_t *src = NULL, *d = duet_malloc_device(W, n), *back = NULL;
    uint64_t *sig = duet_malloc_device(W, 64);
    uint64_t *words = duet_malloc_device(W, sizeof(uint64_t) * (size_t)npes);
    CHECK(d && sig && words, "malloc_device");
    unsigned long long *bad = NULL;
    uint64_t *seen = NULL;
    CUDA_OK(cudaMalloc((void **)&src, n));
    CUDA_OK(cudaMalloc((void **)&back, n));
    CUDA_OK(cudaMallocHost((void **)&bad, sizeof *bad * 4));
    CUDA_OK(cudaMallocHost((void **)&seen, sizeof *seen));
    memset(bad, 0, sizeof *bad * 4);
    CUDA_OK(cudaMemset(d, 0xa5, n));
    CUDA_OK(cudaMemset(sig, 0, 64));
    CUDA_OK(cudaMemset(words, 0, sizeof(uint64_t) * (size_t)npes));
    CUDA_OK(cudaDeviceSynchronize());
    CHECK_OK(duet_barrier_all());
    for (int round = 1; round <= 3; round++) {
        uint64_t k = key(20 + round, n, me, next);
        /* the producer: kernel writes src, then put + signal, all in order on s */
        CUDA_OK(rt_fill(src, n, k, s));
        EXPECT_OK(duet_put_on_stream(W, d, src, n, next, s));
        EXPECT_OK(duet_signal_op_on_stream(W, sig, 1, DUET_SIGNAL_ADD, next, s));
        /* the consumer: the stream waits for the previous pe's signal, then checks */
        EXPECT_OK(duet_signal_wait_until_on_stream(W, sig, DUET_CMP_GE, (uint64_t)round, s));
        CUDA_OK(rt_read_word(sig, seen, s));
        CUDA_OK(rt_check(d, n, key(20 + round, n, prev, me), bad, s));
        /* get it back from next (my data there) */
        CUDA_OK(cudaMemsetAsync(back, 0, n, s));
        EXPECT_OK(duet_barrier_on_stream(W, s)); /* next has checked before I read... and before round+1 writes */
        EXPECT_OK(duet_get_on_stream(W, back, d, n, next, s));
        CUDA_OK(rt_check(back, n, k, bad + 1, s));
        EXPECT_OK(duet_barrier_on_stream(W, s)); /* everyone has read before the next round writes */
        CUDA_OK(cudaStreamSynchronize(s));
        EXPECT(*seen >= (uint64_t)round, "round %d: the dependent kernel saw signal %llu", round,
               (unsigned long long)*seen);
        EXPECT(bad[0] == 0 && bad[1] == 0, "round %d: %llu bytes wrong after the signal wait, %llu after get",
               round, bad[0], bad[1]);
    }
    EXPECT_OK(duet_quiet(W));
    /* quiet_on_stream: host nbi puts, then a stream-ordered signal behind them */
    uint8_t *host = malloc(n);
    fill_host(host, n, key(30, n, me, next));
    EXPECT_OK(duet_put_nbi(W, d, host, n, next));
    EXPECT_OK(duet_quiet_on_stream(W, s));
    EXPECT_OK(duet_signal_op_on_stream(W, sig + 1, 9, DUET_SIGNAL_SET, next, s));
    EXPECT_OK(duet_signal_wait_until_on_stream(W, sig + 1, DUET_CMP_EQ, 9, s));
    CUDA_OK(rt_check(d, n, key(30, n, prev, me), bad + 2, s));
    CUDA_OK(cudaStreamSynchronize(s));
    EXPECT(bad[2] == 0, "quiet_on_stream: %llu bytes wrong", bad[2]);
    EXPECT_OK(duet_quiet(W));
    free(host);
    /* barrier_on_stream, repeated: round r puts r into words[me] everywhere, barrier, checks
     * every word is r, barrier (nobody starts r + 1 before all have checked r) */
    for (uint64_t r = 1; r <= 25; r++) {
        CUDA_OK(rt_round_put(H, words, r, s));
        EXPECT_OK(duet_barrier_on_stream(W, s));
        CUDA_OK(rt_round_check(words, npes, r, bad + 3, s));
        EXPECT_OK(duet_barrier_on_stream(W, s));
    }
    CUDA_OK(cudaStreamSynchronize(s));
    EXPECT(bad[3] == 0, "barrier_on_stream: %llu words wrong over 25 rounds", bad[3]);
    EXPECT_OK(duet_quiet(W)); /* no stream-ordered wait failed */
    /* duet_launch_collective */
    int *out = NULL, hout[8];
    CUDA_OK(cudaMalloc((void **)&out, sizeof hout));
    CUDA_OK(cudaMemset(out, 0, sizeof hout));
    void *args[] = {&out};
    duet_dim3_t g = {8, 1, 1}, b = {64, 1, 1};
    EXPECT_OK(duet_launch_collective(W, rt_coll_func(), g, b, args, 0, s));
    CUDA_OK(cudaStreamSynchronize(s));
    CUDA_OK(cudaMemcpy(hout, out, sizeof hout, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 8; i++) EXPECT(hout[i] == i + 1, "launch_collective: out[%d] = %d", i, hout[i]);
    duet_dim3_t huge = {1u << 24, 1, 1}, big_block = {1024, 1, 1};
    EXPECT_INVALID(duet_launch_collective(W, rt_coll_func(), huge, big_block, args, 0, s), "a grid too big");
    cudaFree(out);
    /* errors */
    uint64_t *hsym = duet_malloc(W, 64);
    CHECK(hsym != NULL, "host heap");
    EXPECT_INVALID(duet_put_on_stream(W, hsym, src, 8, next, s), "put_on_stream to the host heap");
    EXPECT_INVALID(duet_put_on_stream(W, d, src, 8, npes, s), "put_on_stream to a pe out of range");
    EXPECT_INVALID(duet_get_on_stream(W, back, src, 8, next, s), "get_on_stream from a cudaMalloc buffer");
    EXPECT_INVALID(duet_signal_op_on_stream(W, sig, 1, 7, next, s), "a bad sig_op");
    EXPECT_INVALID(duet_signal_wait_until_on_stream(W, sig, 99, 1, s), "a bad comparison");
    EXPECT_INVALID(duet_barrier_on_stream(NULL, s), "a NULL comm");
    CHECK_OK(duet_barrier_all());
    CHECK_OK(duet_free(W, hsym));
    cudaFreeHost(bad);
    cudaFreeHost(seen);
    cudaFree(src);
    cudaFree(back);
    CHECK_OK(duet_free(W, words));
    CHECK_OK(duet_free(W, sig));
    CHECK_OK(duet_free(W, d));
    CUDA_OK(cudaStreamDestroy(s));
    dt_set_context(NULL);
}

int main(int argc, char **argv)
{
    setenv("DUET_CUDA_HEAP_SIZE", "64M", 0);
    CHECK_OK(duet_init());
    W = dt_world(&me, &npes);
    next = (me + 1) % npes;
    prev = (me + npes - 1) % npes;
    uint64_t seed = dt_pick_seed(dt_seed_text(argc, argv), (uint64_t)time(NULL));
    uint64_t *slot = duet_malloc(W, sizeof(uint64_t));
    CHECK(slot != NULL, "host slot");
    CHECK_OK(dt_share_seed(W, slot, &seed));
    if (me == 0) printf("test_gpu_rma: %d ranks, seed %llu\n", npes, (unsigned long long)seed);
    CHECK(duet_cuda_available(), "no GPU here: %s", "this test needs one");
    CHECK_OK(duet_device_comm_get(W, &H));
    if (me == 0) printf("test_gpu_rma: %s\n", H.stride ? "VMM (fixed stride)" : "cudaIpc (no stride)");
    test_put_get(1, 0, 0);
    test_put_get(2, 1, 0);
    test_put_get(3, 0, 1);
    test_put_get(4, 1, 1);
    test_p_g_strided();
    test_signal_wait();
    test_atomics();
    test_streams();
    CHECK_OK(duet_barrier_all());
    CHECK_OK(duet_free(W, slot));
    CHECK_OK(duet_finalize());
    int rc = dt_finish();
    if (me == 0 && rc == 0) printf("test_gpu_rma: passed\n");
    return rc;
}
