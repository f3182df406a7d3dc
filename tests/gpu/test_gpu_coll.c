/*
 * test_gpu_coll.c — duet_allreduce on GPU buffers, stream-ordered (label gpu; every rank needs
 * a GPU; ranks may share one under MPS). Registered by tests/gpu/coll.cmake at 2 and 4 ranks,
 * once with the tuner's choice and once with each algorithm forced (DUET_ALGO=allreduce:oneshot
 * / allreduce:twoshot), and once with a name no allreduce has (allreduce:bogus), which every
 * call must refuse with DUET_ERR_INVALID_ARG.
 *
 *   - every datatype x op, counts 0, 1, 7, 1001, 65539, in place and out of place (send and
 *     recv alternately in the GPU heap and in plain cudaMalloc memory), on a stream: each
 *     rank computes every rank's input itself and the reference in rank order 0..n-1, with the
 *     library's semantics (integers wrap in their width, avg truncates toward 0; fp16 / bf16
 *     accumulate in fp32). Integers must match exactly; floats within one unit in the last
 *     place of the type, relative to the reference (fp16 2^-10, bf16 2^-7, fp32 2^-22, fp64
 *     2^-50) plus fp16's smallest subnormal 2^-24 (the inputs are multiples of 1/16 in
 *     [-2, 2], so sums are exact and only products and the final rounding round). The send
 *     buffer of an out-of-place call must be left untouched;
 *   - 1000 back-to-back calls on one stream without a host sync (counts cycling 7, 1001,
 *     40000: the number of CUDA blocks changes from call to call), each from its own input
 *     slice into its own output slice, checked after one sync (scratch reuse safety);
 *   - a sweep 8 B .. 128 MiB by 8x with the tuner's picks, each size checked (no call's state
 *     may leak into the next: kernels, then executor schedules of growing size);
 *   - one stream then another with a sync between; then two streams with no sync between,
 *     the second call reading the first's output (the library orders them); NULL stream;
 *   - errors: one buffer on the host -> DUET_ERR_INVALID_ARG; above 1 MiB the schedule
 *     executor takes over (checked); host buffers still take the CPU path.
 * Usage: test_gpu_coll [seed]. Rank 0 prints "test_gpu_coll: passed".
 */
#include "duet_test.h"
#include "gpu/gpu_elems.h"

#include <cuda_runtime_api.h>
#include <duet/duet_cuda.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CUDA_OK(call)                                                                        \
    do {                                                                                     \
        cudaError_t e_ = (call);                                                             \
        if (e_ != cudaSuccess) FATAL("%s: %s", #call, cudaGetErrorString(e_));               \
    } while (0)

static int me, npes;
static duet_comm_t W;
static const char *dt_names[] = {"int8", "uint8", "int32", "uint32", "int64", "uint64",
                                 "float16", "bfloat16", "float32", "float64"};
static const char *op_names[] = {"sum", "prod", "min", "max", "avg"};

enum { MAXC = 65539 + 16 };

static void fill_input(int dt, void *buf, int r, size_t off, size_t count, uint64_t salt)
{
    size_t es = duet_datatype_size(dt);
    for (size_t i = 0; i < count; i++)
        store(dt, (char *)buf + (off + i) * es, gen_bits(r, i, salt), gen_val(r, i, salt));
}

/* Checks element i of `got` against the reference; 0 when it matches, else writes why. */
static int check_elem(int dt, int op, const void *got, size_t i, uint64_t salt, char *why, size_t len)
{
    size_t es = duet_datatype_size(dt);
    const char *p = (const char *)got + i * es;
    if (!is_float(dt)) {
        uint64_t acc = ref_int(dt, op, npes, i, salt);
        uint64_t g = 0, mask = es == 8 ? ~0ull : ((1ull << (8 * es)) - 1);
        memcpy(&g, p, es);
        if ((g & mask) == (acc & mask)) return 0;
        snprintf(why, len, "element %zu is 0x%llx, expected 0x%llx", i, (unsigned long long)(g & mask),
                 (unsigned long long)(acc & mask));
        return 1;
    }
    double ref = ref_float(dt, op, npes, i, salt), g;
    if (dt == DUET_FLOAT64) {
        memcpy(&g, p, 8);
    } else {
        uint16_t h;
        float f;
        if (dt == DUET_FLOAT32) memcpy(&f, p, 4), g = f;
        else memcpy(&h, p, 2), g = dt == DUET_FLOAT16 ? h2f(h) : b2f(h);
    }
    double rel = dt == DUET_FLOAT16 ? 0x1p-10 : dt == DUET_BFLOAT16 ? 0x1p-7 : dt == DUET_FLOAT32 ? 0x1p-22 : 0x1p-50;
    double bound = rel * fabs(ref) + (dt == DUET_FLOAT16 ? 0x1p-24 : 0);
    if (fabs(g - ref) <= bound) return 0;
    snprintf(why, len, "element %zu is %.9g, expected %.9g (bound %.3g)", i, g, ref, bound);
    return 1;
}

static int check_result(int dt, int op, const void *got, size_t count, uint64_t salt, const char *what)
{
    char why[160];
    long bad = 0;
    for (size_t i = 0; i < count; i++)
        if (check_elem(dt, op, got, i, salt, why, sizeof why) && bad++ == 0)
            FAIL("%s: %s", what, why);
    if (bad > 1) FAIL("%s: %ld of %zu elements wrong", what, bad, count);
    return bad == 0;
}

static char *heap_buf, *cu_buf; /* MAXC * 8 bytes each: one in the GPU heap, one cudaMalloc'd */
static char *host_a, *host_b;
static cudaStream_t s1, s2;
static int bad_algo;            /* DUET_ALGO names an algorithm the GPU does not have */

static void test_matrix(void)
{
    static const size_t counts[] = {0, 1, 7, 1001, 65539};
    long cases = 0, passed = 0;
    uint64_t salt = 1;
    for (int dt = 0; dt < 10; dt++)
        for (int op = 0; op < DUET_OP_COUNT; op++)
            for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++)
                for (int inplace = 0; inplace < 2; inplace++, salt++) {
                    size_t count = counts[ci], es = duet_datatype_size(dt), bytes = count * es;
                    char *send = salt & 1 ? heap_buf : cu_buf, *recv = inplace ? send : salt & 1 ? cu_buf : heap_buf;
                    char what[128];
                    snprintf(what, sizeof what, "%s %s count %zu %s", dt_names[dt], op_names[op], count,
                             inplace ? "in place" : "out of place");
                    fill_input(dt, host_a, me, 0, count, salt);
                    CUDA_OK(cudaMemcpy(send, host_a, bytes, cudaMemcpyHostToDevice));
                    if (!inplace) CUDA_OK(cudaMemset(recv, 0xA5, bytes ? bytes : 1));
                    CUDA_OK(cudaDeviceSynchronize()); /* the legacy stream's copies are not s1's */
                    cases++;
                    duet_status_t st = duet_allreduce(send, recv, count, dt, op, W, s1);
                    if (bad_algo && count) {
                        if (st != DUET_ERR_INVALID_ARG)
                            FAIL("%s: DUET_ALGO=allreduce:bogus returned %s, not an invalid-argument error", what,
                                 duet_status_str(st));
                        else passed++;
                        continue;
                    }
                    if (st) {
                        FAIL("%s: %s (%s)", what, duet_status_str(st), duet_last_error());
                        continue;
                    }
                    CUDA_OK(cudaStreamSynchronize(s1));
                    CUDA_OK(cudaMemcpy(host_b, recv, bytes, cudaMemcpyDeviceToHost));
                    int ok = check_result(dt, op, host_b, count, salt, what);
                    if (!inplace && count) {
                        CUDA_OK(cudaMemcpy(host_b, send, bytes, cudaMemcpyDeviceToHost));
                        if (memcmp(host_a, host_b, bytes)) ok = 0, FAIL("%s: the send buffer changed", what);
                    }
                    passed += ok;
                }
    if (me == 0) printf("test_gpu_coll: matrix: %ld of %ld cases passed\n", passed, cases);
}

/* 1000 calls without a host sync, counts cycling, each its own slices. */
static void test_back_to_back(void)
{
    enum { CALLS = 1000 };
    static const size_t cyc[] = {7, 1001, 40000};
    size_t total = 0;
    for (int k = 0; k < CALLS; k++) total += cyc[k % 3];
    int32_t *in_d, *out_d, *in_h = malloc(total * 4), *out_h = malloc(total * 4);
    CHECK(in_h && out_h, "host memory");
    CUDA_OK(cudaMalloc((void **)&in_d, total * 4));
    CUDA_OK(cudaMalloc((void **)&out_d, total * 4));
    size_t off = 0;
    for (int k = 0; k < CALLS; off += cyc[k % 3], k++) fill_input(DUET_INT32, in_h, me, off, cyc[k % 3], 100000 + (uint64_t)k);
    CUDA_OK(cudaMemcpy(in_d, in_h, total * 4, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(out_d, 0, total * 4));
    CUDA_OK(cudaDeviceSynchronize());
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    off = 0;
    for (int k = 0; k < CALLS; off += cyc[k % 3], k++)
        EXPECT_OK_MSG(duet_allreduce(in_d + off, out_d + off, cyc[k % 3], DUET_INT32, DUET_SUM, W, s1), "call %d", k);
    CUDA_OK(cudaStreamSynchronize(s1));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CUDA_OK(cudaMemcpy(out_h, out_d, total * 4, cudaMemcpyDeviceToHost));
    long bad = 0;
    off = 0;
    for (int k = 0; k < CALLS; off += cyc[k % 3], k++) {
        char what[64];
        snprintf(what, sizeof what, "back-to-back call %d", k);
        bad += !check_result(DUET_INT32, DUET_SUM, out_h + off, cyc[k % 3], 100000 + (uint64_t)k, what);
    }
    if (me == 0)
        printf("test_gpu_coll: %d back-to-back calls: %ld wrong, %.1f us per call\n", CALLS, bad,
               ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / 1e3 / CALLS);
    cudaFree(in_d);
    cudaFree(out_d);
    free(in_h);
    free(out_h);
}

/* A sweep like duet-perf's, 8 B to 128 MiB by 8x, on one communicator and one stream: each
 * size runs whatever the tuner picks (the one-shot / two-shot kernels, then executor schedules
 * of growing step counts and scratch), so one call's state must never leak into the next. */
static void test_sweep(void)
{
    size_t max = (size_t)32 << 20; /* floats: 128 MiB */
    float *in = malloc(max * 4), *out = malloc(max * 4);
    char *send = NULL, *recv = NULL;
    CHECK(in && out, "host memory");
    CUDA_OK(cudaMalloc((void **)&send, max * 4));
    CUDA_OK(cudaMalloc((void **)&recv, max * 4));
    for (size_t count = 2; count <= max; count *= 8) {
        char what[64];
        snprintf(what, sizeof what, "sweep, %zu floats", count);
        fill_input(DUET_FLOAT32, in, me, 0, count, 500 + count);
        CUDA_OK(cudaMemcpy(send, in, count * 4, cudaMemcpyHostToDevice));
        CUDA_OK(cudaDeviceSynchronize());
        CHECK_OK(duet_allreduce(send, recv, count, DUET_FLOAT32, DUET_SUM, W, s1));
        CUDA_OK(cudaStreamSynchronize(s1));
        CUDA_OK(cudaMemcpy(out, recv, count * 4, cudaMemcpyDeviceToHost));
        check_result(DUET_FLOAT32, DUET_SUM, out, count, 500 + count, what);
    }
    CUDA_OK(cudaFree(send));
    CUDA_OK(cudaFree(recv));
    free(in);
    free(out);
}

static void test_streams(void)
{
    const size_t count = 1001;
    int32_t *h = (int32_t *)(void *)host_a, *g = (int32_t *)(void *)host_b, *d = (int32_t *)(void *)cu_buf;
    /* s1, sync, s2, sync: two independent calls */
    for (int k = 0; k < 2; k++) {
        fill_input(DUET_INT32, h, me, 0, count, 200 + (uint64_t)k);
        CUDA_OK(cudaMemcpy(d, h, count * 4, cudaMemcpyHostToDevice));
        CUDA_OK(cudaDeviceSynchronize());
        EXPECT_OK(duet_allreduce(d, heap_buf, count, DUET_INT32, DUET_MAX, W, k ? s2 : s1));
        CUDA_OK(cudaStreamSynchronize(k ? s2 : s1));
        CUDA_OK(cudaMemcpy(g, heap_buf, count * 4, cudaMemcpyDeviceToHost));
        check_result(DUET_INT32, DUET_MAX, g, count, 200 + (uint64_t)k, k ? "second stream" : "first stream");
    }
    /* s1 then s2 without a sync, in place: the second reads the first's output */
    for (size_t i = 0; i < count; i++) h[i] = (int32_t)((size_t)me * 1000 + i);
    CUDA_OK(cudaMemcpy(d, h, count * 4, cudaMemcpyHostToDevice));
    CUDA_OK(cudaDeviceSynchronize());
    EXPECT_OK(duet_allreduce(d, d, count, DUET_INT32, DUET_SUM, W, s1));
    EXPECT_OK(duet_allreduce(d, d, count, DUET_INT32, DUET_SUM, W, s2));
    CUDA_OK(cudaStreamSynchronize(s2));
    CUDA_OK(cudaMemcpy(g, d, count * 4, cudaMemcpyDeviceToHost));
    long bad = 0;
    for (size_t i = 0; i < count; i++) {
        int64_t once = 1000LL * npes * (npes - 1) / 2 + (int64_t)npes * (int64_t)i;
        if (g[i] != (int32_t)(once * npes) && bad++ == 0)
            FAIL("two streams, no sync: element %zu is %d, expected %lld", i, g[i], (long long)(once * npes));
    }
    /* the NULL stream (the legacy default stream) */
    fill_input(DUET_FLOAT32, host_a, me, 0, count, 300);
    CUDA_OK(cudaMemcpy(heap_buf, host_a, count * 4, cudaMemcpyHostToDevice));
    CUDA_OK(cudaDeviceSynchronize());
    EXPECT_OK(duet_allreduce(heap_buf, cu_buf, count, DUET_FLOAT32, DUET_SUM, W, NULL));
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(cudaMemcpy(host_b, cu_buf, count * 4, cudaMemcpyDeviceToHost));
    check_result(DUET_FLOAT32, DUET_SUM, host_b, count, 300, "NULL stream");
}

static void test_errors(void)
{
    float x[4] = {1, 2, 3, 4};
    CHECK_FAILS(duet_allreduce(x, heap_buf, 4, DUET_FLOAT32, DUET_SUM, W, s1), DUET_ERR_INVALID_ARG);
    CHECK_FAILS(duet_allreduce(heap_buf, x, 4, DUET_FLOAT32, DUET_SUM, W, NULL), DUET_ERR_INVALID_ARG);
    CHECK_FAILS(duet_allreduce(x, x, 4, DUET_FLOAT32, DUET_SUM, W, s1), DUET_ERR_INVALID_ARG);
    size_t big = ((size_t)1 << 20) / 4 + 1;
    char *b = duet_malloc_device(W, big * 4);
    CHECK(b != NULL, "duet_malloc_device(%zu)", big * 4);
    if (bad_algo) {
        CHECK_FAILS(duet_allreduce(b, b, big, DUET_FLOAT32, DUET_SUM, W, s1), DUET_ERR_INVALID_ARG);
    } else { /* above the one-shot / two-shot scratch: the schedule executor */
        float *out = malloc(big * 4);
        CHECK(out != NULL, "host memory");
        fill_input(DUET_FLOAT32, out, me, 0, big, 400);
        CUDA_OK(cudaMemcpy(b, out, big * 4, cudaMemcpyHostToDevice));
        CUDA_OK(cudaDeviceSynchronize());
        CHECK_OK(duet_allreduce(b, b, big, DUET_FLOAT32, DUET_SUM, W, s1));
        CUDA_OK(cudaStreamSynchronize(s1));
        CUDA_OK(cudaMemcpy(out, b, big * 4, cudaMemcpyDeviceToHost));
        check_result(DUET_FLOAT32, DUET_SUM, out, big, 400, "above 1 MiB");
        free(out);
    }
    CHECK_OK(duet_free(W, b));
    /* host buffers: still the CPU path, whatever DUET_ALGO says for the GPU */
    if (!bad_algo) {
        CHECK_OK(duet_allreduce(x, x, 4, DUET_FLOAT32, DUET_SUM, W, NULL));
        for (int i = 0; i < 4; i++) EXPECT(x[i] == (float)((i + 1) * npes), "host allreduce [%d] = %g", i, x[i]);
    }
}

int main(int argc, char **argv)
{
    setenv("DUET_CUDA_HEAP_SIZE", "256M", 0);
    CHECK_OK(duet_init());
    W = dt_world(&me, &npes);
    uint64_t seed = dt_pick_seed(dt_seed_text(argc, argv), (uint64_t)time(NULL));
    uint64_t *slot = duet_malloc(W, sizeof(uint64_t));
    CHECK(slot != NULL, "host slot");
    CHECK_OK(dt_share_seed(W, slot, &seed));
    const char *algo = getenv("DUET_ALGO");
    bad_algo = algo && strstr(algo, "bogus") != NULL;
    if (me == 0) printf("test_gpu_coll: %d ranks, DUET_ALGO=%s, seed %llu\n", npes, algo ? algo : "",
                        (unsigned long long)seed);
    CHECK(duet_cuda_available() && duet_cuda_device(W) >= 0, "no GPU heap: this test needs a GPU on every rank");
    heap_buf = duet_malloc_device(W, MAXC * 8);
    CHECK(heap_buf != NULL, "duet_malloc_device");
    CUDA_OK(cudaMalloc((void **)&cu_buf, MAXC * 8));
    host_a = malloc(MAXC * 8);
    host_b = malloc(MAXC * 8);
    CHECK(host_a && host_b, "host memory");
    CUDA_OK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CUDA_OK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    test_matrix();
    if (!bad_algo) {
        test_back_to_back();
        test_streams();
        test_sweep();
    }
    test_errors();
    CUDA_OK(cudaStreamDestroy(s1));
    CUDA_OK(cudaStreamDestroy(s2));
    CUDA_OK(cudaFree(cu_buf));
    CHECK_OK(duet_free(W, heap_buf));
    CHECK_OK(duet_free(W, slot));
    CHECK_OK(duet_finalize());
    free(host_a);
    free(host_b);
    int rc = dt_finish();
    if (me == 0 && rc == 0) printf("test_gpu_coll: passed\n");
    return rc;
}
