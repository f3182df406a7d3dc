/*
 * device_api_main.c — the host side of test_device_api: runs every kernel of
 * test_device_api.cu (the device API, include/duet/duet_device.cuh) on this rank's GPU,
 * all ranks at once under duetrun (several ranks may share one GPU under MPS), and checks the
 * results against references on the host:
 *   - p / g of int32, uint32, int64, uint64, float, double to and from every pe;
 *   - put / get at thread, warp and block scope, blocking and _nbi + quiet, to every pe
 *     (self included), random odd sizes 0 .. 50000 and offsets (equal and unequal alignment
 *     mod 16); poison around every target checked;
 *   - put_signal (SET and ADD) at each scope: the receiving block waits in the same kernel
 *     and compares the data right after its signal (a missing release/acquire shows here);
 *   - p + fence + signal_op (SET and ADD), the data read right after the signal; test;
 *   - atomics of every thread of every rank on one pe: fetch_add / fetch_inc / add and
 *     compare_swap retry loops, exact final values and exact sums of the fetched values;
 *     single swap / fetch / set / compare_swap (failing and succeeding) on every pe;
 *     wait_until on an int32 counter;
 *   - barrier_block 1000 times over four launches, then barrier and barrier_warp, each
 *     checked by a p before and a read after it; the same on a split team (even / odd
 *     ranks), then the world again;
 *   - abort: a kernel waits for a signal that never comes, the host sets the abort word and
 *     the kernel returns that status.
 *
 * Usage: test_device_api [seed]   (else $DUET_TEST_SEED, else the time; rank 0's is used)
 */
#include "duet_test.h"
#include "device_api_test.h"
#include "gpu_check.h"

#include <duet/duet_cuda.h>
#include <cuda_runtime_api.h>
#include <string.h>
#include <time.h>

/* Internal (src/cuda/duet_cuda_heap.h): the abort word kernels of comm poll. */
void duet_cuda_set_abort(duet_comm_t c, duet_status_t status);


#define POISON 0xA5

static int me, npes;
static duet_comm_t W;
static duet_device_comm_t H;
static unsigned char *hbuf;        /* host scratch: npes * DK_SLOT */
static char *dlocal, *dexpect;     /* device, not symmetric: npes * DK_SLOT each */
static dk_case_t *dcases;          /* device: npes cases */
static unsigned long long *dcount; /* device: 8 counters */
static int *dstatus;               /* device: 1 status */

static dk_case_t make_case(int variant, int from, int to)
{
    static const size_t lens[] = {0,    1,    2,    3,    7,    8,     15,    16,   17,
                                  31,   33,   63,   64,   65,   127,   255,   256,  257,
                                  1000, 4095, 4096, 4097, 12289, 40001, 50000};
    uint64_t s = key3((uint64_t)variant, (uint64_t)from, (uint64_t)to);
    dk_case_t c;
    c.len = lens[rng_below(&s, sizeof lens / sizeof lens[0])];
    c.soff = rng_below(&s, 64);
    c.doff = (rng_next(&s) & 1) ? c.soff % 16 + 16 * rng_below(&s, 4) : rng_below(&s, 64);
    return c;
}

/* The cases this rank runs, one per target pe, onto the device. */
static void upload_cases(int variant)
{
    dk_case_t c[64];
    CHECK(npes <= 64, "at most 64 ranks");
    for (int q = 0; q < npes; q++) c[q] = make_case(variant, me, q);
    CU(cudaMemcpy(dcases, c, sizeof(dk_case_t) * npes, cudaMemcpyHostToDevice));
}

/* A slot that holds bytes soff.. of stream K at doff and POISON elsewhere. */
static void expected_slot(unsigned char *slot, dk_case_t c, uint64_t K)
{
    memset(slot, POISON, DK_SLOT);
    for (size_t j = 0; j < c.len; j++) slot[c.doff + j] = stream_byte(K, c.soff + j);
}

/* Compares a slot with what it should hold; one report per bad slot. */
static void check_slot(const unsigned char *got, dk_case_t c, uint64_t K, const char *what, int peer)
{
    for (size_t i = 0; i < DK_SLOT; i++) {
        int in = i >= c.doff && i < c.doff + c.len;
        unsigned char want = in ? stream_byte(K, c.soff + (i - c.doff)) : POISON;
        if (got[i] != want) {
            FAIL("%s, peer %d, len %zu soff %zu doff %zu: byte %zu is 0x%02x, expected 0x%02x (%s)",
                 what, peer, c.len, c.soff, c.doff, i, got[i], want, in ? "data" : "poison");
            return;
        }
    }
}

static void barrier(const char *where)
{
    CHECK(duet_barrier_all() == DUET_OK, "barrier (%s)", where);
}

static void test_pg(char *pg)
{
    dt_set_context("p/g");
    CU(cudaMemset(pg, 0, (size_t)npes * DK_PG));
    barrier("p/g start");
    KU(dk_pg_put(H, pg));
    barrier("after p");
    CU(cudaMemcpy(hbuf, pg, (size_t)npes * DK_PG, cudaMemcpyDeviceToHost));
    for (int s = 0; s < npes; s++) {
        unsigned char want[DK_PG];
        dk_pg_fill(want, s, me);
        EXPECT(memcmp(hbuf + s * DK_PG, want, DK_PG) == 0, "p from pe %d: wrong values", s);
    }
    KU(dk_pg_get(H, pg, dlocal));
    CU(cudaMemcpy(hbuf, dlocal, (size_t)npes * DK_PG, cudaMemcpyDeviceToHost));
    for (int q = 0; q < npes; q++) {
        unsigned char want[DK_PG];
        dk_pg_fill(want, me, q);
        EXPECT(memcmp(hbuf + q * DK_PG, want, 40) == 0, "g from pe %d: wrong values", q);
    }
    barrier("p/g end");
}

static const char *scope_name(int scope)
{
    return scope == DK_THREAD ? "thread" : scope == DK_WARP ? "warp" : "block";
}

static void test_put_get(char *region, char *gsrc)
{
    char ctx[64];
    /* every rank's get source: stream (200, me) */
    stream_fill(hbuf, DK_SLOT, key3(200, (uint64_t)me, 0));
    CU(cudaMemcpy(gsrc, hbuf, DK_SLOT, cudaMemcpyHostToDevice));
    for (int v = 0; v < 6; v++) {
        int scope = v / 2, nbi = v % 2;
        snprintf(ctx, sizeof ctx, "put %s%s", scope_name(scope), nbi ? " nbi" : "");
        dt_set_context(ctx);
        CU(cudaMemset(region, POISON, (size_t)npes * DK_SLOT));
        for (int q = 0; q < npes; q++)
            stream_fill(hbuf + (size_t)q * DK_SLOT, DK_SLOT, key3(100 + v, (uint64_t)me, (uint64_t)q));
        CU(cudaMemcpy(dlocal, hbuf, (size_t)npes * DK_SLOT, cudaMemcpyHostToDevice));
        upload_cases(v);
        barrier(ctx);
        KU(dk_xfer(H, 0, scope, nbi, region, dlocal, dcases));
        barrier(ctx);
        CU(cudaMemcpy(hbuf, region, (size_t)npes * DK_SLOT, cudaMemcpyDeviceToHost));
        for (int s = 0; s < npes; s++)
            check_slot(hbuf + (size_t)s * DK_SLOT, make_case(v, s, me),
                       key3(100 + v, (uint64_t)s, (uint64_t)me), ctx, s);

        snprintf(ctx, sizeof ctx, "get %s%s", scope_name(scope), nbi ? " nbi" : "");
        dt_set_context(ctx);
        CU(cudaMemset(dlocal, POISON, (size_t)npes * DK_SLOT));
        upload_cases(10 + v);
        KU(dk_xfer(H, 1, scope, nbi, gsrc, dlocal, dcases));
        CU(cudaMemcpy(hbuf, dlocal, (size_t)npes * DK_SLOT, cudaMemcpyDeviceToHost));
        for (int q = 0; q < npes; q++)
            check_slot(hbuf + (size_t)q * DK_SLOT, make_case(10 + v, me, q),
                       key3(200, (uint64_t)q, 0), ctx, q);
    }
    barrier("put/get end");
}

static void test_signal(char *regA, char *regB, uint64_t *sig, uint64_t *sigadd)
{
    char ctx[64];
    CU(cudaMemset(sig, 0, sizeof(uint64_t) * npes));
    for (int v = 0; v < 6; v++) {
        int scope = v / 2, nbi = v % 2;
        snprintf(ctx, sizeof ctx, "put_signal %s%s", scope_name(scope), nbi ? " nbi" : "");
        dt_set_context(ctx);
        CU(cudaMemset(regA, POISON, (size_t)npes * DK_SLOT));
        CU(cudaMemset(regB, POISON, (size_t)npes * DK_SLOT));
        CU(cudaMemset(sigadd, 0, sizeof(uint64_t)));
        CU(cudaMemset(dcount, 0, 8 * sizeof *dcount));
        CU(cudaMemset(dstatus, 0, sizeof *dstatus));
        for (int q = 0; q < npes; q++)
            stream_fill(hbuf + (size_t)q * DK_SLOT, DK_SLOT, key3(300 + v, (uint64_t)me, (uint64_t)q));
        CU(cudaMemcpy(dlocal, hbuf, (size_t)npes * DK_SLOT, cudaMemcpyHostToDevice));
        for (int s = 0; s < npes; s++)
            expected_slot(hbuf + (size_t)s * DK_SLOT, make_case(20 + v, s, me),
                          key3(300 + v, (uint64_t)s, (uint64_t)me));
        CU(cudaMemcpy(dexpect, hbuf, (size_t)npes * DK_SLOT, cudaMemcpyHostToDevice));
        upload_cases(20 + v);
        barrier(ctx);
        KU(dk_signal(H, scope, nbi, regA, regB, dlocal, sig, sigadd, dcases, dexpect,
                     (uint64_t)v + 1, (uint64_t)npes * (npes + 1) / 2, dcount, dstatus));
        barrier(ctx);
        unsigned long long bad;
        int st;
        CU(cudaMemcpy(&bad, dcount, sizeof bad, cudaMemcpyDeviceToHost));
        CU(cudaMemcpy(&st, dstatus, sizeof st, cudaMemcpyDeviceToHost));
        EXPECT(st == 0, "the receiver's wait returned %d", st);
        EXPECT(bad == 0, "%llu bytes differ right after their signal", bad);
        /* and again from the host, after everything */
        CU(cudaMemcpy(hbuf, regB, (size_t)npes * DK_SLOT, cudaMemcpyDeviceToHost));
        for (int s = 0; s < npes; s++)
            check_slot(hbuf + (size_t)s * DK_SLOT, make_case(20 + v, s, me),
                       key3(300 + v, (uint64_t)s, (uint64_t)me), ctx, s);
    }
}

static void test_fence(uint64_t *fdata, uint64_t *fsig, uint64_t *fadd)
{
    dt_set_context("fence + signal_op");
    CU(cudaMemset(fdata, 0, sizeof(uint64_t) * npes));
    CU(cudaMemset(fsig, 0, sizeof(uint64_t) * npes));
    CU(cudaMemset(fadd, 0, sizeof(uint64_t)));
    for (uint64_t round = 1; round <= 3; round++) {
        CU(cudaMemset(dcount, 0, sizeof *dcount));
        CU(cudaMemset(dstatus, 0, sizeof *dstatus));
        barrier("fence round");
        KU(dk_fence(H, fdata, fsig, fadd, round, dcount, dstatus));
        barrier("fence round end");
        unsigned long long bad;
        int st;
        CU(cudaMemcpy(&bad, dcount, sizeof bad, cudaMemcpyDeviceToHost));
        CU(cudaMemcpy(&st, dstatus, sizeof st, cudaMemcpyDeviceToHost));
        EXPECT(st == 0, "round %llu: a wait returned %d", (unsigned long long)round, st);
        EXPECT(bad == 0, "round %llu: %llu checks failed after the signals",
               (unsigned long long)round, bad);
    }
}

static void test_atomics(char *ctr, char *sw)
{
    dt_set_context("atomics");
    const int iters = 100, target = npes - 1;
    CU(cudaMemset(ctr, 0, 64));
    CU(cudaMemset(sw, 0, (size_t)npes * 16));
    CU(cudaMemset(dcount, 0, 8 * sizeof *dcount));
    CU(cudaMemset(dstatus, 0, sizeof *dstatus));
    barrier("atomics start");
    if (H.remote) {
        /* through the proxy (DUET_CUDA_PEERS=proxy) every atomic is a round trip of tens of
         * microseconds, and the compare_swap retry loops of 2 x 128 threads per rank contend
         * quadratically: hours. test_gpu_proxy checks contended fetch_add through the proxy. */
        if (me == 0) printf("test_device_api: the contended atomics are skipped: pes are remote (proxy)\n");
        goto single;
    }
    KU(dk_atomics(H, ctr, target, iters, dcount, dstatus));
    uint64_t sums[8], total[8];
    int st;
    CU(cudaMemcpy(sums, dcount, sizeof sums, cudaMemcpyDeviceToHost));
    CU(cudaMemcpy(&st, dstatus, sizeof st, cudaMemcpyDeviceToHost));
    EXPECT(st == 0, "wait_until on the done counter returned %d", st);
    CHECK_OK(duet_allreduce(sums, total, 8, DUET_UINT64, DUET_SUM, W, NULL));
    uint64_t T = (uint64_t)npes * 2 * DK_THREADS * iters, tri = T * (T - 1) / 2;
    static const char *names[8] = {"int32 fetch_add", "uint32 fetch_inc", "int64 fetch_add(-1)", "",
                                   "uint64 compare_swap", "int32 compare_swap", "", ""};
    for (int k = 0; k < 6; k++)
        if (names[k][0])
            EXPECT(total[k] == tri, "%s: the fetched values sum to %llu, expected %llu", names[k],
                   (unsigned long long)total[k], (unsigned long long)tri);
    barrier("atomics end");
    if (me == target) {
        unsigned char c[64];
        CU(cudaMemcpy(c, ctr, 64, cudaMemcpyDeviceToHost));
        int32_t i32, cas32, done;
        uint32_t u32;
        int64_t i64;
        uint64_t add, cas64;
        memcpy(&i32, c + 0, 4), memcpy(&u32, c + 4, 4), memcpy(&i64, c + 8, 8);
        memcpy(&add, c + 16, 8), memcpy(&cas64, c + 24, 8), memcpy(&cas32, c + 32, 4);
        memcpy(&done, c + 36, 4);
        EXPECT(i32 == (int32_t)T, "int32 counter %d, expected %llu", i32, (unsigned long long)T);
        EXPECT(u32 == (uint32_t)T, "uint32 counter %u", u32);
        EXPECT(i64 == -(int64_t)T, "int64 counter %lld", (long long)i64);
        EXPECT(add == 3 * T, "uint64 add counter %llu", (unsigned long long)add);
        EXPECT(cas64 == T, "uint64 compare_swap counter %llu", (unsigned long long)cas64);
        EXPECT(cas32 == (int32_t)T, "int32 compare_swap counter %d", cas32);
        EXPECT(done == npes, "done counter %d", done);
    }

single:
    dt_set_context("single atomics");
    CU(cudaMemset(dcount, 0, 8 * sizeof *dcount));
    KU(dk_atomic_single(H, sw, dcount));
    barrier("single atomics");
    unsigned long long bad;
    CU(cudaMemcpy(&bad, dcount, sizeof bad, cudaMemcpyDeviceToHost));
    EXPECT(bad == 0, "%llu returned values were wrong", bad);
    CU(cudaMemcpy(hbuf, sw, (size_t)npes * 16, cudaMemcpyDeviceToHost));
    for (int s = 0; s < npes; s++) {
        uint64_t w;
        int32_t x;
        memcpy(&w, hbuf + s * 16, 8);
        memcpy(&x, hbuf + s * 16 + 8, 4);
        EXPECT(w == dk_single_u64(s, me), "uint64 word from pe %d: %llu", s, (unsigned long long)w);
        EXPECT(x == dk_single_i32(s, me), "int32 word from pe %d: %d", s, x);
    }
    barrier("atomics done");
}

/* Barrier launches: counts continue from launch to launch (the sync words keep them). */
static void run_barriers(duet_device_comm_t h, uint64_t *ring, int scope, int iters, uint64_t *base,
                         const char *what)
{
    dt_set_context(what);
    CU(cudaMemset(dcount, 0, sizeof *dcount));
    CU(cudaMemset(dstatus, 0, sizeof *dstatus));
    KU(dk_barrier(h, scope, iters, *base, ring, dcount, dstatus));
    *base += (uint64_t)iters;
    unsigned long long bad;
    int st;
    CU(cudaMemcpy(&bad, dcount, sizeof bad, cudaMemcpyDeviceToHost));
    CU(cudaMemcpy(&st, dstatus, sizeof st, cudaMemcpyDeviceToHost));
    EXPECT(st == 0, "%s scope: a barrier returned %d", scope_name(scope), st);
    EXPECT(bad == 0, "%s scope: %llu of %d reads after a barrier missed the neighbour's p",
           scope_name(scope), bad, iters);
}

static void test_barriers(uint64_t *ring, uint64_t *ring2)
{
    uint64_t base = 1, tbase = 1;
    CU(cudaMemset(ring, 0, 16));
    CU(cudaMemset(ring2, 0, 16));
    barrier("barriers start");
    for (int l = 0; l < 4; l++) run_barriers(H, ring, DK_BLOCK, 250, &base, "barrier_block x 1000");
    run_barriers(H, ring, DK_THREAD, 100, &base, "barrier (thread)");
    run_barriers(H, ring, DK_WARP, 100, &base, "barrier_warp");

    duet_comm_t team = NULL;
    duet_device_comm_t ht;
    dt_set_context("team barrier");
    CHECK_OK(duet_comm_split(W, me % 2, me, &team));
    CHECK_OK(duet_device_comm_get(team, &ht));
    EXPECT(ht.n_pes == (npes + 1 - me % 2) / 2 && ht.my_pe == me / 2, "team handle: pe %d of %d",
           ht.my_pe, ht.n_pes);
    for (int l = 0; l < 3; l++) run_barriers(ht, ring2, DK_BLOCK, 100, &tbase, "team barrier_block");
    run_barriers(ht, ring2, DK_THREAD, 50, &tbase, "team barrier (thread)");
    run_barriers(ht, ring2, DK_WARP, 50, &tbase, "team barrier_warp");
    barrier("team end");
    run_barriers(H, ring, DK_BLOCK, 100, &base, "world barrier_block after the team's");
    barrier("before team destroy");
    CHECK_OK(duet_comm_destroy(team));
}

static void test_abort(uint64_t *never)
{
    dt_set_context("abort");
    CU(cudaMemset(never, 0, sizeof *never));
    CU(cudaMemset(dstatus, 0, sizeof *dstatus));
    volatile int *started;
    int *started_dev;
    CU(cudaHostAlloc((void **)&started, sizeof(int), cudaHostAllocMapped));
    CU(cudaHostGetDevicePointer((void **)&started_dev, (void *)started, 0));
    *started = 0;
    KU(dk_abort_launch(H, never, 0xdead, started_dev, dstatus));
    double t0 = now_s();
    while (!*started)
        if (now_s() - t0 > 30) FATAL("the waiting kernel did not start in 30 s");
    duet_cuda_set_abort(W, DUET_ERR_REVOKED);
    CU(cudaDeviceSynchronize());
    int st;
    CU(cudaMemcpy(&st, dstatus, sizeof st, cudaMemcpyDeviceToHost));
    EXPECT(st == DUET_ERR_REVOKED, "the aborted wait returned %d, expected %d", st, DUET_ERR_REVOKED);
    duet_cuda_set_abort(W, DUET_OK);
    CU(cudaFreeHost((void *)started));
    barrier("abort end");
}

int main(int argc, char **argv)
{
    CHECK_OK(duet_init());
    W = dt_world(&me, &npes);
    uint64_t seed = dt_pick_seed(dt_seed_text(argc, argv), (uint64_t)time(NULL));
    uint64_t *seed_word = duet_malloc(W, sizeof(uint64_t));
    CHECK(seed_word, "duet_malloc");
    CHECK_OK(dt_share_seed(W, seed_word, &seed));
    CHECK(duet_cuda_available(), "no GPU: this test needs the CUDA backend and a GPU");
    CU(cudaSetDevice(duet_cuda_device(W)));
    CHECK_OK(duet_device_comm_get(W, &H));
    CHECK(H.my_pe == me && H.n_pes == npes, "handle: pe %d of %d", H.my_pe, H.n_pes);
    CHECK(npes <= 16, "at most 16 ranks (the layout of the symmetric words)");

    size_t region_bytes = (size_t)npes * DK_SLOT;
    char *region = duet_malloc_device(W, region_bytes);
    char *regB = duet_malloc_device(W, region_bytes);
    char *gsrc = duet_malloc_device(W, DK_SLOT);
    char *pg = duet_malloc_device(W, (size_t)npes * DK_PG);
    uint64_t *sig = duet_malloc_device(W, sizeof(uint64_t) * npes);
    uint64_t *words = duet_malloc_device(W, 64 * sizeof(uint64_t));
    char *ctr = duet_malloc_device(W, 64);
    char *sw = duet_malloc_device(W, (size_t)npes * 16);
    CHECK(region && regB && gsrc && pg && sig && words && ctr && sw, "duet_malloc_device");
    hbuf = malloc(region_bytes);
    CHECK(hbuf, "malloc");
    CU(cudaMalloc((void **)&dlocal, region_bytes));
    CU(cudaMalloc((void **)&dexpect, region_bytes));
    CU(cudaMalloc((void **)&dcases, 64 * sizeof(dk_case_t)));
    CU(cudaMalloc((void **)&dcount, 8 * sizeof *dcount));
    CU(cudaMalloc((void **)&dstatus, sizeof *dstatus));

    test_pg(pg);
    test_put_get(region, gsrc);
    test_signal(region, regB, sig, words + 0);
    test_fence(words + 48, words + 32, words + 20);
    test_atomics(ctr, sw);
    test_barriers(words + 8, words + 10);
    test_abort(words + 16);
    dt_set_context("after abort");
    uint64_t base = 100000;
    run_barriers(H, words + 12, DK_BLOCK, 10, &base, "barrier_block after the abort was cleared");

    dt_set_context("teardown");
    barrier("teardown");
    CU(cudaFree(dlocal));
    CU(cudaFree(dexpect));
    CU(cudaFree(dcases));
    CU(cudaFree(dcount));
    CU(cudaFree(dstatus));
    free(hbuf);
    EXPECT_OK(duet_free(W, sw));
    EXPECT_OK(duet_free(W, ctr));
    EXPECT_OK(duet_free(W, words));
    EXPECT_OK(duet_free(W, sig));
    EXPECT_OK(duet_free(W, pg));
    EXPECT_OK(duet_free(W, gsrc));
    EXPECT_OK(duet_free(W, regB));
    EXPECT_OK(duet_free(W, region));
    EXPECT_OK(duet_free(W, seed_word));
    EXPECT_OK(duet_finalize());
    if (dt_finish()) return 1;
    if (me == 0) printf("test_device_api: every device call passed on %d PEs\n", npes);
    return 0;
}
