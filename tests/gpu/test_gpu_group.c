/*
 * test_gpu_group.c — duet_group_start/end with GPU buffers, as NCCL users write them (label
 * gpu; every rank needs a GPU; ranks may share one under MPS). Registered by
 * tests/gpu/group.cmake at 2, 3 and 4 ranks, with the VMM heap and the cudaIpc fallback.
 *
 *   - ring exchange (send to me+1, receive from me-1) of 9 MiB + 13 bytes (int8) and 12 MiB
 *     (float64), larger than the executor's inboxes, so it completes only when the two calls
 *     run together; send first and receive first; zero-count calls with NULL buffers beside;
 *   - all-to-all by send/recv with a different size per pair (0, odd small, about 3 MiB), packed
 *     at unaligned offsets of one send and one receive buffer, GPU heap and cudaMalloc in turn,
 *     the calls in a rotating order;
 *   - send/recv to this rank itself (paired in order, receive called first) and a size
 *     mismatch (DUET_ERR_INVALID_ARG at duet_group_end), when the library accepts a peer equal
 *     to the rank at the call (it says so at the start);
 *   - 12 groups back to back on one stream with no host sync between (sizes 0 .. 2 MiB, half of
 *     them receive first), checked after one sync; then 12 groups whose send buffer is uploaded
 *     on one stream, the send called on the other (the group's lead stream), the receive on the
 *     first and the download on the first: the lead must wait for the upload and the download
 *     for the group;
 *   - a group with two GPU allreduces (float32, 1M + 3 elements; int32, 17) and a ring
 *     exchange, the first allreduce on another stream than the sends;
 *   - errors at the call: a host-buffer call in a group holding GPU calls on the communicator
 *     and the reverse -> DUET_ERR_UNSUPPORTED naming the call (the group's other calls still
 *     run and are checked); a host buffer with a stream -> DUET_ERR_INVALID_ARG.
 * Data: byte j of the buffer rank a sends to rank b in case `salt` is byte j of a stream keyed
 * by (seed, salt, a, b); every received byte is checked, receive buffers are poisoned first.
 * Allreduce inputs are small multiples of 1/16 (float sums exact) and wrapping int32s.
 * Seed: $DUET_TEST_SEED, else the time. Rank 0 prints "test_gpu_group: passed".
 */
#include "duet_test.h"

#include <cuda_runtime_api.h>
#include <duet/duet_cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CUDA_OK(call)                                                                        \
    do {                                                                                     \
        cudaError_t e_ = (call);                                                             \
        if (e_ != cudaSuccess) FATAL("%s: %s", #call, cudaGetErrorString(e_));               \
    } while (0)

#define MIB ((size_t)1 << 20)
#define POISON 0xA5

static duet_comm_t W;
static int me, npes, self_ok;
static cudaStream_t s1, s2;

static int right(void) { return (me + 1) % npes; }
static int left(void) { return (me + npes - 1) % npes; }

/* Byte j of what rank a sends rank b in case salt (stream_byte of duet_test.h, 8 at a time). */
static uint64_t data_key(uint64_t salt, int a, int b) { return key3(salt, (uint64_t)a, (uint64_t)b); }
static void fill(uint8_t *buf, size_t n, uint64_t K)
{
    size_t j = 0;
    for (; j + 8 <= n; j += 8) {
        uint64_t w = mix(K ^ ((j >> 3) * 0xd6e8feb86659fd93ull));
        memcpy(buf + j, &w, 8);
    }
    for (; j < n; j++) buf[j] = stream_byte(K, j);
}
/* Checks n received bytes against stream K; reports the first wrong one. */
static int check_bytes(const uint8_t *got, size_t n, uint64_t K, const char *what, int from)
{
    for (size_t j = 0; j < n; j += 8) {
        uint64_t w = mix(K ^ ((j >> 3) * 0xd6e8feb86659fd93ull));
        size_t m = n - j < 8 ? n - j : 8;
        if (memcmp(got + j, &w, m) == 0) continue;
        size_t k = j;
        while (got[k] == stream_byte(K, k)) k++;
        FAIL("%s: %zu bytes from rank %d: byte %zu is 0x%02x, expected 0x%02x", what, n, from, k, got[k],
             stream_byte(K, k));
        return 0;
    }
    return 1;
}

/* Device memory: from the GPU heap (collective: the same size on every rank) or cudaMalloc. */
static void *dev_alloc(size_t bytes, int heap)
{
    void *p = NULL;
    if (heap) p = duet_malloc_device(W, bytes ? bytes : 1);
    else CUDA_OK(cudaMalloc(&p, bytes ? bytes : 1));
    CHECK(p != NULL, "%zu bytes of device memory (%s)", bytes, heap ? "heap" : "cudaMalloc");
    return p;
}
static void dev_free(void *p, int heap)
{
    if (heap) CHECK_OK(duet_free(W, p));
    else CUDA_OK(cudaFree(p));
}
static uint8_t *pinned(size_t bytes)
{
    void *p = NULL;
    CUDA_OK(cudaMallocHost(&p, bytes ? bytes : 1));
    return p;
}

/* ---- ring exchange ------------------------------------------------------------------ */
/* One group: send `bytes` to the right, receive from the left (recv_first: in that order),
 * plus zero-count calls with NULL buffers; element type dt. */
static void ring_group(const void *send, void *recv, size_t bytes, duet_datatype_t dt, int recv_first,
                       cudaStream_t ss, cudaStream_t rs)
{
    size_t count = bytes / duet_datatype_size(dt);
    CHECK_OK(duet_group_start());
    CHECK_OK(duet_send(NULL, 0, dt, right(), W, ss));
    if (recv_first) CHECK_OK(duet_recv(recv, count, dt, left(), W, rs));
    CHECK_OK(duet_send(send, count, dt, right(), W, ss));
    if (!recv_first) CHECK_OK(duet_recv(recv, count, dt, left(), W, rs));
    CHECK_OK(duet_recv(NULL, 0, dt, left(), W, rs));
    CHECK_OK(duet_group_end());
}

static void test_ring(uint64_t salt, size_t bytes, duet_datatype_t dt, int recv_first, int heap)
{
    uint8_t *h = pinned(2 * bytes);
    char *d = dev_alloc(2 * bytes, heap);
    fill(h, bytes, data_key(salt, me, right()));
    CUDA_OK(cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, s1));
    CUDA_OK(cudaMemsetAsync(d + bytes, POISON, bytes, s1));
    ring_group(d, d + bytes, bytes, dt, recv_first, s1, s1);
    CUDA_OK(cudaMemcpyAsync(h + bytes, d + bytes, bytes, cudaMemcpyDeviceToHost, s1));
    CUDA_OK(cudaStreamSynchronize(s1));
    char what[96];
    snprintf(what, sizeof what, "ring %s%s (%s)", dt == DUET_INT8 ? "int8" : "float64",
             recv_first ? ", receive first" : "", heap ? "heap" : "cudaMalloc");
    check_bytes(h + bytes, bytes, data_key(salt, left(), me), what, left());
    dev_free(d, heap);
    CUDA_OK(cudaFreeHost(h));
}

/* ---- all-to-all by send / recv ------------------------------------------------------ */
/* Bytes rank a sends rank b in case salt: 0, a small odd size or about 3 MiB. */
static size_t a2a_bytes(uint64_t salt, int a, int b)
{
    if (a == b && !self_ok) return 0;
    switch ((a * 3 + b * 5 + salt) % 3) {
    case 0: return 0;
    case 1: return 1 + 2 * (size_t)((a * 7 + b * 11 + salt) % 500);
    default: return 3 * MIB + 1 + 2 * (size_t)a + 3 * (size_t)b;
    }
}

static void test_alltoall(uint64_t salt, int send_heap)
{
    size_t sdisp[64], rdisp[64], stot = 0, rtot = 0, most = 0;
    CHECK(npes <= 64, "at most 64 ranks");
    for (int p = 0; p < npes; p++) {
        sdisp[p] = stot, stot += a2a_bytes(salt, me, p);
        rdisp[p] = rtot, rtot += a2a_bytes(salt, p, me);
    }
    for (int a = 0; a < npes; a++) { /* the heap buffer: the same size on every rank */
        size_t t = 0;
        for (int b = 0; b < npes; b++) t += send_heap ? a2a_bytes(salt, a, b) : a2a_bytes(salt, b, a);
        if (t > most) most = t;
    }
    uint8_t *hs = pinned(stot), *hr = pinned(rtot);
    char *ds = send_heap ? dev_alloc(most, 1) : dev_alloc(stot, 0);
    char *dr = send_heap ? dev_alloc(rtot, 0) : dev_alloc(most, 1);
    for (int p = 0; p < npes; p++) fill(hs + sdisp[p], a2a_bytes(salt, me, p), data_key(salt, me, p));
    CUDA_OK(cudaMemcpyAsync(ds, hs, stot, cudaMemcpyHostToDevice, s1));
    CUDA_OK(cudaMemsetAsync(dr, POISON, rtot, s1));
    CHECK_OK(duet_group_start());
    for (int i = 0; i < npes; i++) { /* each rank starts with another peer */
        int to = (me + i + (int)salt) % npes, from = (me - i - (int)salt % npes + 2 * npes) % npes;
        if (to != me || self_ok) CHECK_OK(duet_send(ds + sdisp[to], a2a_bytes(salt, me, to), DUET_INT8, to, W, s1));
        if (from != me || self_ok)
            CHECK_OK(duet_recv(dr + rdisp[from], a2a_bytes(salt, from, me), DUET_INT8, from, W, s1));
    }
    CHECK_OK(duet_group_end());
    CUDA_OK(cudaMemcpyAsync(hr, dr, rtot, cudaMemcpyDeviceToHost, s1));
    CUDA_OK(cudaStreamSynchronize(s1));
    for (int p = 0; p < npes; p++)
        check_bytes(hr + rdisp[p], a2a_bytes(salt, p, me), data_key(salt, p, me),
                    send_heap ? "all-to-all (heap -> cudaMalloc)" : "all-to-all (cudaMalloc -> heap)", p);
    dev_free(ds, send_heap);
    dev_free(dr, !send_heap);
    CUDA_OK(cudaFreeHost(hs));
    CUDA_OK(cudaFreeHost(hr));
}

/* ---- to this rank itself ------------------------------------------------------------ */
/* Whether the library takes a send to this rank at the call (inside a group). */
static int probe_self(void)
{
    char *d = dev_alloc(2, 0);
    CHECK_OK(duet_group_start());
    duet_status_t st = duet_send(d, 1, DUET_INT8, me, W, s1);
    if (st == DUET_OK) CHECK_OK(duet_recv(d + 1, 1, DUET_INT8, me, W, s1));
    CHECK_OK(duet_group_end());
    CUDA_OK(cudaStreamSynchronize(s1));
    dev_free(d, 0);
    CHECK(st == DUET_OK || st == DUET_ERR_INVALID_ARG, "a send to this rank itself: %s", duet_status_str(st));
    return st == DUET_OK;
}

static void test_self(uint64_t salt)
{
    size_t a = MIB + 3, b = 4097;
    uint8_t *h = pinned(2 * (a + b));
    char *d = dev_alloc(2 * (a + b), 0);
    fill(h, a, data_key(salt, me, me));
    fill(h + a, b, data_key(salt + 1, me, me));
    CUDA_OK(cudaMemcpyAsync(d, h, a + b, cudaMemcpyHostToDevice, s1));
    CUDA_OK(cudaMemsetAsync(d + a + b, POISON, a + b, s1));
    CHECK_OK(duet_group_start()); /* receives first; the k-th send pairs with the k-th receive */
    CHECK_OK(duet_recv(d + a + b, a, DUET_INT8, me, W, s1));
    CHECK_OK(duet_recv(d + 2 * a + b, b, DUET_INT8, me, W, s1));
    CHECK_OK(duet_send(d, a, DUET_INT8, me, W, s1));
    CHECK_OK(duet_send(d + a, b, DUET_INT8, me, W, s1));
    CHECK_OK(duet_group_end());
    CUDA_OK(cudaMemcpyAsync(h + a + b, d + a + b, a + b, cudaMemcpyDeviceToHost, s1));
    CUDA_OK(cudaStreamSynchronize(s1));
    check_bytes(h + a + b, a, data_key(salt, me, me), "self, first pair", me);
    check_bytes(h + 2 * a + b, b, data_key(salt + 1, me, me), "self, second pair", me);
    CHECK_OK(duet_group_start());
    CHECK_OK(duet_send(d, 10, DUET_INT8, me, W, s1));
    CHECK_OK(duet_recv(d + a + b, 12, DUET_INT8, me, W, s1));
    EXPECT_INVALID(duet_group_end(), "self send of 10 bytes, receive of 12");
    CUDA_OK(cudaStreamSynchronize(s1));
    dev_free(d, 0);
    CUDA_OK(cudaFreeHost(h));
}

/* ---- groups back to back ------------------------------------------------------------ */
#define GROUPS 12

static size_t b2b_bytes(int g) { return g % 4 == 0 ? 0 : g % 4 == 1 ? (size_t)g * 7 : 2 * MIB + (size_t)g * 33; }

/* GROUPS ring exchanges without a host sync between. two: the send buffer is uploaded on
 * stream A, the send called on B (the lead), the receive and the download on A. */
static void test_back_to_back(uint64_t salt, int two)
{
    size_t off[GROUPS + 1] = {0};
    for (int g = 0; g < GROUPS; g++) off[g + 1] = off[g] + b2b_bytes(g);
    size_t tot = off[GROUPS];
    uint8_t *hs = pinned(tot), *hr = pinned(tot);
    char *ds = dev_alloc(tot, 0), *dr = dev_alloc(tot, 1);
    for (int g = 0; g < GROUPS; g++) fill(hs + off[g], b2b_bytes(g), data_key(salt + (uint64_t)g, me, right()));
    CUDA_OK(cudaMemsetAsync(dr, POISON, tot, s1));
    CUDA_OK(cudaStreamSynchronize(s1));
    for (int g = 0; g < GROUPS; g++) {
        cudaStream_t a = two && g % 2 ? s2 : s1, b = two ? (a == s1 ? s2 : s1) : s1;
        size_t n = b2b_bytes(g);
        if (n) CUDA_OK(cudaMemcpyAsync(ds + off[g], hs + off[g], n, cudaMemcpyHostToDevice, a));
        CHECK_OK(duet_group_start());
        if (g % 2) CHECK_OK(duet_recv(dr + off[g], n, DUET_INT8, left(), W, a));
        CHECK_OK(duet_send(ds + off[g], n, DUET_INT8, right(), W, b));
        if (!(g % 2)) CHECK_OK(duet_recv(dr + off[g], n, DUET_INT8, left(), W, a));
        CHECK_OK(duet_group_end());
        if (n) CUDA_OK(cudaMemcpyAsync(hr + off[g], dr + off[g], n, cudaMemcpyDeviceToHost, a));
    }
    CUDA_OK(cudaStreamSynchronize(s1));
    CUDA_OK(cudaStreamSynchronize(s2));
    for (int g = 0; g < GROUPS; g++) {
        char what[64];
        snprintf(what, sizeof what, "back to back, %s, group %d", two ? "two streams" : "one stream", g);
        check_bytes(hr + off[g], b2b_bytes(g), data_key(salt + (uint64_t)g, left(), me), what, left());
    }
    dev_free(ds, 0);
    dev_free(dr, 1);
    CUDA_OK(cudaFreeHost(hs));
    CUDA_OK(cudaFreeHost(hr));
}

/* ---- a group with allreduces and p2p ------------------------------------------------ */
static float f_in(uint64_t salt, int r, size_t j) { return (float)((int)((j * 7 + (size_t)r * 13 + salt) % 33) - 16) / 16; }
static int32_t i_in(uint64_t salt, int r, size_t j) { return (int32_t)(uint32_t)mix(key3(salt, (uint64_t)r, j)); }

static void test_with_allreduce(uint64_t salt)
{
    const size_t nf = MIB + 3, ni = 17, pb = 4 * MIB + 5;
    size_t fb = nf * 4, ib = ni * 4, tot = 2 * fb + 2 * ib + 2 * pb;
    uint8_t *h = pinned(tot);
    char *d = dev_alloc(tot, 0);
    float *fin = (float *)(void *)h, *fout = fin + nf;
    int32_t *iin = (int32_t *)(void *)(h + 2 * fb), *iout = iin + ni;
    uint8_t *psend = h + 2 * fb + 2 * ib, *precv = psend + pb;
    for (size_t j = 0; j < nf; j++) fin[j] = f_in(salt, me, j);
    for (size_t j = 0; j < ni; j++) iin[j] = i_in(salt, me, j);
    fill(psend, pb, data_key(salt, me, right()));
    CUDA_OK(cudaMemcpyAsync(d, h, tot, cudaMemcpyHostToDevice, s1));
    CUDA_OK(cudaMemsetAsync(d + fb, POISON, fb, s1));
    CUDA_OK(cudaMemsetAsync(d + 2 * fb + ib, POISON, ib, s1));
    CUDA_OK(cudaMemsetAsync(d + 2 * fb + 2 * ib + pb, POISON, pb, s1));
    CUDA_OK(cudaStreamSynchronize(s1));
    char *dp = d + 2 * fb + 2 * ib;
    CHECK_OK(duet_group_start());
    CHECK_OK(duet_allreduce(d, d + fb, nf, DUET_FLOAT32, DUET_SUM, W, s2)); /* the lead stream */
    CHECK_OK(duet_send(dp, pb, DUET_INT8, right(), W, s1));
    CHECK_OK(duet_allreduce(d + 2 * fb, d + 2 * fb + ib, ni, DUET_INT32, DUET_SUM, W, s1));
    CHECK_OK(duet_recv(dp + pb, pb, DUET_INT8, left(), W, s1));
    CHECK_OK(duet_group_end());
    CUDA_OK(cudaMemcpyAsync(h, d, tot, cudaMemcpyDeviceToHost, s1)); /* s1 waits for the group */
    CUDA_OK(cudaStreamSynchronize(s1));
    long bad = 0;
    for (size_t j = 0; j < nf; j++) {
        float want = 0;
        for (int r = 0; r < npes; r++) want += f_in(salt, r, j);
        if (fout[j] != want && bad++ == 0) FAIL("allreduce float32 in a group: [%zu] = %g, expected %g", j, fout[j], want);
    }
    for (size_t j = 0; j < ni; j++) {
        uint32_t want = 0;
        for (int r = 0; r < npes; r++) want += (uint32_t)i_in(salt, r, j);
        if ((uint32_t)iout[j] != want && bad++ == 0) FAIL("allreduce int32 in a group: [%zu] = %d", j, iout[j]);
    }
    check_bytes(precv, pb, data_key(salt, left(), me), "ring beside two allreduces", left());
    dev_free(d, 0);
    CUDA_OK(cudaFreeHost(h));
}

/* ---- host and GPU calls mixed on one communicator ------------------------------------ */
static void expect_unsupported(duet_status_t st, const char *fn, const char *what)
{
    if (st != DUET_ERR_UNSUPPORTED) FAIL("%s: %s returned %s, expected DUET_ERR_UNSUPPORTED", what, fn, duet_status_str(st));
    else if (!strstr(duet_last_error(), fn))
        FAIL("%s: the message does not name %s: %s", what, fn, duet_last_error());
}

static void test_mixed(uint64_t salt)
{
    const size_t n = 1000;
    uint8_t *hs = malloc(n), *hr = malloc(n), *pin = pinned(2 * n);
    CHECK(hs && hr, "host memory");
    char *d = dev_alloc(2 * n, 0);
    /* host calls first, then a GPU call: refused; the host ring still runs */
    fill(hs, n, data_key(salt, me, right()));
    memset(hr, POISON, n);
    CHECK_OK(duet_group_start());
    CHECK_OK(duet_send(hs, n, DUET_INT8, right(), W, NULL));
    CHECK_OK(duet_recv(hr, n, DUET_INT8, left(), W, NULL));
    expect_unsupported(duet_send(d, n, DUET_INT8, right(), W, s1), "duet_send", "GPU call after host calls");
    CHECK_OK(duet_group_end());
    check_bytes(hr, n, data_key(salt, left(), me), "host ring in a group that refused a GPU call", left());
    /* GPU calls first, then a host call: refused; the GPU ring still runs */
    fill(pin, n, data_key(salt + 1, me, right()));
    CUDA_OK(cudaMemcpyAsync(d, pin, n, cudaMemcpyHostToDevice, s1));
    CUDA_OK(cudaMemsetAsync(d + n, POISON, n, s1));
    CHECK_OK(duet_group_start());
    CHECK_OK(duet_send(d, n, DUET_INT8, right(), W, s1));
    CHECK_OK(duet_recv(d + n, n, DUET_INT8, left(), W, s1));
    expect_unsupported(duet_recv(hr, n, DUET_INT8, left(), W, NULL), "duet_recv", "host call after GPU calls");
    EXPECT_INVALID(duet_send(hs, n, DUET_INT8, right(), W, s1), "a host buffer with a stream in a group");
    CHECK_OK(duet_group_end());
    CUDA_OK(cudaMemcpyAsync(pin + n, d + n, n, cudaMemcpyDeviceToHost, s1));
    CUDA_OK(cudaStreamSynchronize(s1));
    check_bytes(pin + n, n, data_key(salt + 1, left(), me), "GPU ring in a group that refused a host call", left());
    dev_free(d, 0);
    CUDA_OK(cudaFreeHost(pin));
    free(hs);
    free(hr);
}

int main(void)
{
    setenv("DUET_CUDA_HEAP_SIZE", "256M", 0);
    CHECK_OK(duet_init());
    W = dt_world(&me, &npes);
    CHECK(npes >= 2, "run with at least 2 ranks");
    CHECK(duet_cuda_available() && duet_cuda_device(W) >= 0, "no GPU heap: this test needs a GPU on every rank");
    uint64_t seed = dt_pick_seed(getenv("DUET_TEST_SEED"), (uint64_t)time(NULL));
    uint64_t *slot = duet_malloc(W, sizeof(uint64_t));
    CHECK(slot != NULL, "host slot");
    CHECK_OK(dt_share_seed(W, slot, &seed));
    CUDA_OK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CUDA_OK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    if (me == 0) printf("test_gpu_group: %d ranks, seed %llu\n", npes, (unsigned long long)seed);
    self_ok = probe_self();
    if (me == 0 && !self_ok)
        printf("test_gpu_group: a send to this rank itself is refused at the call (DUET_ERR_INVALID_ARG): "
               "self send/recv cases skipped\n");
    uint64_t salt = 1;
    for (int heap = 0; heap < 2; heap++) {
        test_ring(salt++, 9 * MIB + 13, DUET_INT8, heap, heap);
        test_ring(salt++, 12 * MIB, DUET_FLOAT64, !heap, heap);
    }
    if (me == 0) printf("test_gpu_group: ring exchanges done\n");
    for (int k = 0; k < 4; k++) test_alltoall(salt++, k & 1);
    if (me == 0) printf("test_gpu_group: all-to-all done\n");
    if (self_ok) test_self(salt++);
    test_back_to_back(salt, 0);
    salt += GROUPS;
    test_back_to_back(salt, 1);
    salt += GROUPS;
    if (me == 0) printf("test_gpu_group: back to back done\n");
    test_with_allreduce(salt++);
    test_with_allreduce(salt++);
    test_mixed(salt);
    salt += 2;
    CUDA_OK(cudaStreamDestroy(s1));
    CUDA_OK(cudaStreamDestroy(s2));
    CHECK_OK(duet_free(W, slot));
    CHECK_OK(duet_finalize());
    int rc = dt_finish();
    if (me == 0 && rc == 0) printf("test_gpu_group: passed\n");
    return rc;
}
