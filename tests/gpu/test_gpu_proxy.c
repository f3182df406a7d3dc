/*
 * test_gpu_proxy.c — device calls to remote pes through the host proxy (docs/NETWORK.md 2.9),
 * on one host: registered with DUET_CUDA_PEERS=proxy, so every other pe is remote and every
 * device call to it goes ring -> proxy thread -> host heap endpoints (shm) -> the target's
 * proxy -> its GPU part. Label gpu; several ranks on one GPU under MPS.
 *
 *   test_gpu_proxy api [seed]   every rank, towards its right neighbour (and back from its left):
 *     - the handle says every other pe is remote and duet_dev_ptr gives NULL for it (checked
 *       through the handle's table);
 *     - put / get, thread / warp / block scope, blocking and _nbi (+ quiet of the same scope),
 *       sizes 1, 4097 (odd), 1 MiB + 3 (crosses the proxy's 256 KiB chunks); the target's
 *       bytes (poison around them) and the get's bytes against host references; quiet's
 *       status must be DUET_OK;
 *     - p / g of an int64 and a double;
 *     - put_signal (SET and ADD) at every scope, blocking and nbi: the receiver's kernel waits
 *       for the signal and compares the data right after it;
 *     - signal_op ADD from every thread of every rank onto one word of pe 0: the exact sum;
 *     - fetch_add from every thread of every rank onto one counter of the last pe: the exact
 *       total, and the fetched values are a permutation of 0 .. T-1 (their sum is T(T-1)/2);
 *     - compare_swap (failing, succeeding), swap, fetch, set, fetch_add, g on the neighbour's
 *       words: each returned value and the final words;
 *     - fence: put data; fence; p flag, 2000 rounds: the receiver never sees a flag ahead of
 *       the data;
 *     - quiet: a put_nbi + quiet, then a host barrier: the target reads the data;
 *     - quiet seen by a third pe (3+ ranks): 16 blocks of rank 0 each put 64 KiB to rank 1,
 *       quiet, then signal rank 2, whose matching block gets the slice from rank 1 and
 *       compares it, 6 rounds of new patterns: no stale byte.
 *   test_gpu_proxy dead   (under duetrun --ft) the last rank dies while rank 0's kernel loops
 *     put_nbi + quiet to it: quiet must return DUET_ERR_PEER_FAILED (or the abort status that
 *     the failure detector sets) within DEADLINE_S, and the kernel ends.
 */
#include "duet_test.h"
#include "test_gpu_proxy.h"
#include "gpu_check.h"

#include <cuda_runtime_api.h>
#include <duet/duet_cuda.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


#define BIG      (((size_t)1 << 20) + 3)
#define SLOT     (((size_t)1 << 20) + 256) /* one pe's slot in the region */
#define POISON   0xA5
#define DEADLINE_S 20.0

static int me, npes, right, left;
static duet_comm_t W;
static duet_device_comm_t H;
static int *dstatus;
static unsigned long long *dcount;
static unsigned char *hbuf, *href;

static void barrier(const char *where) { CHECK_OK(duet_barrier_all()); (void)where; }

static int dev_status(void)
{
    int st;
    CU(cudaMemcpy(&st, dstatus, sizeof st, cudaMemcpyDeviceToHost));
    CU(cudaMemset(dstatus, 0, sizeof *dstatus));
    return st;
}

static unsigned long long dev_count(void)
{
    unsigned long long c;
    CU(cudaMemcpy(&c, dcount, sizeof c, cudaMemcpyDeviceToHost));
    CU(cudaMemset(dcount, 0, sizeof *dcount));
    return c;
}

static void check_handle(void)
{
    dt_set_context("handle");
    const char *v = getenv("DUET_CUDA_PEERS");
    int forced = v && !strcmp(v, "proxy");
    CHECK(H.remote != NULL || !forced, "DUET_CUDA_PEERS=proxy but the handle has no remote-pe table");
    if (!H.remote) return;
    unsigned char *rem = malloc((size_t)npes);
    CHECK(rem, "malloc");
    CU(cudaMemcpy(rem, H.remote, (size_t)npes, cudaMemcpyDeviceToHost));
    for (int q = 0; q < npes; q++)
        CHECK(rem[q] == (forced && q != me), "remote[%d] = %d (forced %d, me %d)", q, rem[q], forced, me);
    CHECK(H.proxy_ring && H.proxy_head, "the handle has a remote table but no ring");
    free(rem);
}

/* put: from my local buffer into slot `me` of right's region (so left's lands in my slot
 * `left`); get: from slot `right` of right's region (right filled it) into my local buffer. */
static void test_xfer(char *region, char *dlocal)
{
    static const size_t sizes[] = {1, 4097, BIG};
    static const char *scopes[] = {"thread", "warp", "block"};
    uint64_t round = 0;
    for (int get = 0; get <= 1; get++)
        for (int scope = 0; scope < 3; scope++)
            for (int nbi = 0; nbi <= 1; nbi++)
                for (size_t si = 0; si < 3; si++) {
                    size_t n = sizes[si];
                    char what[128];
                    snprintf(what, sizeof what, "%s %s%s of %zu bytes", get ? "get" : "put", scopes[scope],
                             nbi ? " nbi" : "", n);
                    dt_set_context(what);
                    round++;
                    /* put: I write my slot of right's region; get: I read right's slot `right`
                     * (which right filled itself) */
                    /* poison my slot `left` (left's put lands there) and my slot `me` */
                    memset(hbuf, POISON, SLOT);
                    CU(cudaMemcpy(region + (size_t)left * SLOT, hbuf, SLOT, cudaMemcpyHostToDevice));
                    CU(cudaMemcpy(region + (size_t)me * SLOT, hbuf, SLOT, cudaMemcpyHostToDevice));
                    if (get) {
                        stream_fill(href, n, key3(round, (uint64_t)me, 1));
                        CU(cudaMemcpy(region + (size_t)me * SLOT + 16, href, n, cudaMemcpyHostToDevice));
                        CU(cudaMemset(dlocal, POISON, SLOT));
                    } else {
                        stream_fill(href, n, key3(round, (uint64_t)me, 2));
                        CU(cudaMemcpy(dlocal, href, n, cudaMemcpyHostToDevice));
                    }
                    CU(cudaDeviceSynchronize());
                    barrier(what);
                    char *sym = region + (size_t)(get ? right : me) * SLOT + 16;
                    KU(px_xfer(H, get, scope, nbi, sym, dlocal, n, right, dstatus));
                    int st = dev_status();
                    EXPECT(st == 0, "%s: quiet returned %d (%s)", what, st, duet_status_str((duet_status_t)st));
                    barrier(what);
                    if (get) {
                        stream_fill(href, n, key3(round, (uint64_t)right, 1));
                        CU(cudaMemcpy(hbuf, dlocal, n + 16, cudaMemcpyDeviceToHost));
                        size_t d = stream_diff(hbuf, n, key3(round, (uint64_t)right, 1));
                        EXPECT(d == SIZE_MAX, "%s from pe %d: first wrong byte at %zu", what, right, d);
                        for (size_t j = n; j < n + 16; j++)
                            EXPECT(hbuf[j] == POISON, "%s: byte %zu past the end overwritten", what, j);
                    } else { /* left wrote my slot `left` */
                        CU(cudaMemcpy(hbuf, region + (size_t)left * SLOT, n + 32, cudaMemcpyDeviceToHost));
                        size_t d = stream_diff(hbuf + 16, n, key3(round, (uint64_t)left, 2));
                        EXPECT(d == SIZE_MAX, "%s from pe %d: first wrong byte at %zu", what, left, d);
                        for (size_t j = 0; j < 16; j++)
                            EXPECT(hbuf[j] == POISON && hbuf[16 + n + j] == POISON,
                                   "%s from pe %d: poison around the target overwritten", what, left);
                    }
                    barrier(what);
                }
}

static void test_pg(char *words)
{
    dt_set_context("p / g");
    int64_t *wi = (int64_t *)(void *)words;
    double *wd = (double *)(void *)(words + 8);
    int64_t *oi;
    double *od;
    CU(cudaMalloc((void **)&oi, 16));
    od = (double *)(void *)(oi + 1);
    barrier("p/g");
    int64_t vi = -1234567890123ll * (me + 1);
    double vd = 3.25 * (me + 1);
    if (getenv("TEST_PROXY_VERBOSE")) fprintf(stderr, "test_gpu_proxy: rank %d: p/g kernel\n", me);
    KU(px_pg(H, wi, wd, vi, vd, right, oi, od, dstatus));
    if (getenv("TEST_PROXY_VERBOSE")) fprintf(stderr, "test_gpu_proxy: rank %d: p/g kernel done\n", me);
    EXPECT(dev_status() == 0, "quiet after the p's failed");
    int64_t gi;
    double gd;
    CU(cudaMemcpy(&gi, oi, 8, cudaMemcpyDeviceToHost));
    CU(cudaMemcpy(&gd, od, 8, cudaMemcpyDeviceToHost));
    EXPECT(gi == vi && gd == vd, "g read back %lld / %g, p wrote %lld / %g", (long long)gi, gd, (long long)vi, vd);
    barrier("p/g checked");
    CU(cudaMemcpy(&gi, wi, 8, cudaMemcpyDeviceToHost));
    CU(cudaMemcpy(&gd, wd, 8, cudaMemcpyDeviceToHost));
    EXPECT(gi == -1234567890123ll * (left + 1) && gd == 3.25 * (left + 1), "my words from pe %d: %lld / %g", left,
           (long long)gi, gd);
    CU(cudaFree(oi));
    barrier("p/g done");
}

static void test_put_signal(char *region, char *dlocal, char *dexpect, uint64_t *sig)
{
    static const char *scopes[] = {"thread", "warp", "block"};
    uint64_t round = 1000;
    uint64_t add_total = 0;
    for (int op = 0; op <= 1; op++)
        for (int scope = 0; scope < 3; scope++)
            for (int nbi = 0; nbi <= 1; nbi++) {
                int add = op == 1;
                size_t n = scope == 2 ? BIG : 4097;
                char what[128];
                snprintf(what, sizeof what, "put_signal %s %s%s, %zu bytes", add ? "ADD" : "SET", scopes[scope],
                         nbi ? " nbi" : "", n);
                dt_set_context(what);
                round++;
                stream_fill(href, n, key3(round, (uint64_t)me, 3));
                CU(cudaMemcpy(dlocal, href, n, cudaMemcpyHostToDevice));
                stream_fill(href, n, key3(round, (uint64_t)left, 3));
                CU(cudaMemcpy(dexpect, href, n, cudaMemcpyHostToDevice));
                CU(cudaDeviceSynchronize());
                barrier(what);
                uint64_t value = add ? (uint64_t)me + 1 : round;
                KU(px_put_signal(H, scope, nbi, region + (size_t)me * SLOT, dlocal, n, sig, value,
                                 add ? DUET_SIGNAL_ADD : DUET_SIGNAL_SET, right, dstatus));
                EXPECT(dev_status() == 0, "%s: quiet failed", what);
                uint64_t want = add ? (add_total += (uint64_t)left + 1) : round;
                KU(px_wait_check(H, sig, want, region + (size_t)left * SLOT, dexpect, n, dcount, dstatus));
                int st = dev_status();
                EXPECT(st == 0, "%s: the wait for signal %llu returned %d", what, (unsigned long long)want, st);
                unsigned long long bad = dev_count();
                EXPECT(bad == 0, "%s: %llu bytes from pe %d wrong right after the signal", what, bad, left);
                if (!add && op == 0 && scope == 2 && nbi == 1) { /* the ADD rounds count from 0 */
                    barrier(what);
                    CU(cudaMemset(sig, 0, 8));
                    CU(cudaDeviceSynchronize());
                }
                barrier(what);
            }
}

static void test_signal_add(uint64_t *word)
{
    dt_set_context("signal_op ADD from every thread of every rank onto pe 0");
    const int blocks = 2, iters = 3;
    CU(cudaMemset(word, 0, 8));
    CU(cudaDeviceSynchronize());
    barrier("signal add start");
    if (me != 0) KU(px_signal_add(H, word, 0, blocks, iters, dstatus));
    EXPECT(dev_status() == 0, "quiet after the signal ADDs failed");
    barrier("signal add end");
    if (me == 0) {
        uint64_t got, T = (uint64_t)blocks * PX_THREADS;
        CU(cudaMemcpy(&got, word, 8, cudaMemcpyDeviceToHost));
        uint64_t want = (uint64_t)(npes - 1) * iters * T * (T + 1) / 2;
        EXPECT(got == want, "the word holds %llu, the %d adding ranks' sum is %llu", (unsigned long long)got, npes - 1,
               (unsigned long long)want);
    }
    barrier("signal add checked");
}

static void test_fetch_add(uint64_t *ctr)
{
    dt_set_context("fetch_add from every thread of every rank");
    const int blocks = 2, iters = 4, target = npes - 1;
    CU(cudaMemset(ctr, 0, 8));
    CU(cudaDeviceSynchronize());
    barrier("fetch_add start");
    if (me != target) KU(px_fetch_add(H, ctr, target, blocks, iters, dcount));
    unsigned long long mine = dev_count(), total = 0;
    uint64_t *sums = duet_malloc(W, sizeof(uint64_t)), *all = duet_malloc(W, sizeof(uint64_t));
    CHECK(sums && all, "duet_malloc");
    *sums = mine;
    CHECK_OK(duet_allreduce(sums, all, 1, DUET_UINT64, DUET_SUM, W, NULL));
    total = *all;
    uint64_t T = (uint64_t)(npes - 1) * blocks * PX_THREADS * iters;
    EXPECT(total == T * (T - 1) / 2, "the fetched values sum to %llu, expected %llu (0 .. %llu once each)", total,
           (unsigned long long)(T * (T - 1) / 2), (unsigned long long)(T - 1));
    barrier("fetch_add end");
    if (me == target) {
        uint64_t got;
        CU(cudaMemcpy(&got, ctr, 8, cudaMemcpyDeviceToHost));
        EXPECT(got == T, "the counter holds %llu, expected %llu", (unsigned long long)got, (unsigned long long)T);
    }
    EXPECT_OK(duet_free(W, all));
    EXPECT_OK(duet_free(W, sums));
    barrier("fetch_add checked");
}

static void test_amo_single(char *words)
{
    dt_set_context("single atomics on the right neighbour");
    uint64_t *w64 = (uint64_t *)(void *)words;
    int32_t *w32 = (int32_t *)(void *)(words + 8);
    uint64_t init = 1000 + (uint64_t)me, *dout;
    CU(cudaMemcpy(w64, &init, 8, cudaMemcpyHostToDevice));
    CU(cudaMalloc((void **)&dout, 8 * sizeof *dout));
    CU(cudaDeviceSynchronize());
    barrier("amo start");
    uint64_t a = 77777 + (uint64_t)me, b = 88888 + (uint64_t)me;
    int32_t c = -500 - me;
    KU(px_amo_single(H, w64, w32, a, b, c, right, dout, dstatus));
    EXPECT(dev_status() == 0, "quiet failed");
    uint64_t out[8];
    CU(cudaMemcpy(out, dout, sizeof out, cudaMemcpyDeviceToHost));
    uint64_t cur = 1000 + (uint64_t)right;
    EXPECT(out[7] == cur, "fetch: %llu, expected %llu", (unsigned long long)out[7], (unsigned long long)cur);
    EXPECT(out[0] == cur, "failing compare_swap returned %llu, expected %llu", (unsigned long long)out[0],
           (unsigned long long)cur);
    EXPECT(out[1] == cur, "succeeding compare_swap returned %llu", (unsigned long long)out[1]);
    EXPECT(out[2] == a, "swap returned %llu, expected %llu", (unsigned long long)out[2], (unsigned long long)a);
    EXPECT(out[3] == b, "fetch after swap: %llu, expected %llu", (unsigned long long)out[3], (unsigned long long)b);
    EXPECT((int32_t)out[4] == c, "fetch after set: %d, expected %d", (int32_t)out[4], c);
    EXPECT((int32_t)out[5] == c, "fetch_add returned %d, expected %d", (int32_t)out[5], c);
    EXPECT((int32_t)out[6] == c - 3, "g after fetch_add(-3): %d, expected %d", (int32_t)out[6], c - 3);
    barrier("amo end");
    uint64_t g64;
    int32_t g32;
    CU(cudaMemcpy(&g64, w64, 8, cudaMemcpyDeviceToHost));
    CU(cudaMemcpy(&g32, w32, 4, cudaMemcpyDeviceToHost));
    EXPECT(g64 == 88888 + (uint64_t)left && g32 == -500 - left - 3, "my words from pe %d: %llu, %d", left,
           (unsigned long long)g64, g32);
    CU(cudaFree(dout));
    barrier("amo checked");
}

static void test_fence(char *words)
{
    dt_set_context("fence: put data, fence, p flag");
    uint64_t *data = (uint64_t *)(void *)words, *flag = data + 8, *src;
    CU(cudaMemset(words, 0, 128));
    CU(cudaMalloc((void **)&src, 16 * sizeof *src));
    CU(cudaDeviceSynchronize());
    barrier("fence start");
    const int rounds = 2000;
    KU(px_fence(H, data, flag, src, right, rounds, dcount, dstatus));
    int st = dev_status();
    EXPECT(st == 0, "the fence kernel's waits / quiet returned %d", st);
    unsigned long long bad = dev_count();
    EXPECT(bad == 0, "%llu times the flag from pe %d was seen ahead of its data", bad, left);
    CU(cudaFree(src));
    barrier("fence end");
}

/* Every block's quiet covers its own puts, seen by a third pe (3 ranks or more): rank 0's
 * blocks put to rank 1, quiet, then signal rank 2, whose blocks then get the data from rank 1
 * (px_quiet_kernel). Many blocks, so quiets of some blocks are taken while the puts of others
 * are still in flight (the proxy does not drain its pipeline at a quiet). */
static void test_quiet_third_party(char *region, uint64_t *sigs)
{
    enum { BLOCKS = 16, ROUNDS = 6 };
    const size_t slice = 64 << 10;
    dt_set_context("quiet seen by a third pe");
    if (npes < 3) return; /* needs an observer that is neither origin nor target */
    char *dlocal;
    CU(cudaMalloc((void **)&dlocal, BLOCKS * slice));
    CU(cudaMemset(sigs, 0, BLOCKS * sizeof *sigs));
    CU(cudaDeviceSynchronize());
    barrier("quiet start");
    for (int r = 1; r <= ROUNDS; r++) {
        if (me == 0 || me == 2)
            KU(px_quiet(H, me == 0 ? 0 : 1, r, BLOCKS, region, dlocal, slice, sigs, 1, 2, dcount, dstatus));
        int st = dev_status();
        EXPECT(st == 0, "round %d: a quiet or wait returned %d", r, st);
        unsigned long long bad = dev_count();
        EXPECT(bad == 0, "round %d: rank 2 got %llu stale bytes from rank 1 after rank 0's quiets", r, bad);
        barrier("quiet round");
    }
    CU(cudaFree(dlocal));
}

static void scenario_api(void)
{
    size_t region_bytes = (size_t)npes * SLOT;
    char *region = duet_malloc_device(W, region_bytes);
    char *words = duet_malloc_device(W, 4096);
    uint64_t *sig = duet_malloc_device(W, 64);
    CHECK(region && words && sig, "duet_malloc_device");
    char *dlocal, *dexpect;
    CU(cudaMalloc((void **)&dlocal, SLOT));
    CU(cudaMalloc((void **)&dexpect, SLOT));
    CU(cudaMemset(words, 0, 4096));
    CU(cudaMemset(sig, 0, 64));
    CU(cudaDeviceSynchronize());
    int verbose = getenv("TEST_PROXY_VERBOSE") != NULL;
#define STEP(call)                                                                                                 \
    do {                                                                                                           \
        if (verbose) fprintf(stderr, "test_gpu_proxy: rank %d: %s\n", me, #call);                                  \
        call;                                                                                                      \
    } while (0)
    STEP(check_handle());
    STEP(test_pg(words));
    STEP(test_xfer(region, dlocal));
    STEP(test_put_signal(region, dlocal, dexpect, sig));
    STEP(test_signal_add((uint64_t *)(void *)(words + 256)));
    STEP(test_fetch_add((uint64_t *)(void *)(words + 512)));
    STEP(test_amo_single(words + 1024));
    STEP(test_fence(words + 2048));
    STEP(test_quiet_third_party(region, (uint64_t *)(void *)(words + 3072)));
#undef STEP
    dt_set_context("teardown");
    barrier("teardown");
    CU(cudaFree(dlocal));
    CU(cudaFree(dexpect));
    EXPECT_OK(duet_free(W, sig));
    EXPECT_OK(duet_free(W, words));
    EXPECT_OK(duet_free(W, region));
}

static double now_ts(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void scenario_dead(void)
{
    dt_set_context("dead peer");
    int victim = npes - 1;
    char *sym = duet_malloc_device(W, 4096);
    CHECK(sym, "duet_malloc_device");
    char *dlocal;
    CU(cudaMalloc((void **)&dlocal, 4096));
    CU(cudaMemset(dlocal, 1, 4096));
    CU(cudaDeviceSynchronize());
    CHECK_OK(duet_barrier(W));
    if (me == victim) {
        usleep(300000); /* rank 0's kernel is putting by now */
        fflush(stdout);
        kill(getpid(), SIGKILL);
        pause();
    }
    if (me == 0) {
        cudaStream_t s1;
        CU(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
        volatile int *started;
        int *started_dev, *status;
        long *rounds;
        CU(cudaHostAlloc((void **)&started, sizeof(int), cudaHostAllocMapped));
        CU(cudaHostGetDevicePointer((void **)&started_dev, (void *)started, 0));
        CU(cudaMallocManaged((void **)&status, sizeof(int), cudaMemAttachGlobal));
        CU(cudaMallocManaged((void **)&rounds, sizeof(long), cudaMemAttachGlobal));
        *started = 0;
        *status = 12345;
        *rounds = -1;
        KU(px_dead_launch(H, sym, dlocal, victim, 100000000l, started_dev, status, rounds, s1));
        double t0 = now_ts();
        while (cudaStreamQuery(s1) == cudaErrorNotReady)
            CHECK(now_ts() - t0 < DEADLINE_S, "the kernel putting to the dead rank still runs %.0f s on (started %d)",
                  DEADLINE_S, *started);
        CU(cudaStreamSynchronize(s1));
        CHECK(*started, "the kernel never started");
        CHECK(*status == (int)DUET_ERR_PEER_FAILED, "quiet to the dead rank returned %d (%s) after %ld rounds, want "
              "DUET_ERR_PEER_FAILED", *status, duet_status_str((duet_status_t)*status), *rounds);
        CHECK(*rounds > 0, "no round completed");
        printf("test_gpu_proxy: dead: quiet returned %s after %ld put+quiet rounds, %.3f s after the launch\n",
               duet_status_str((duet_status_t)*status), *rounds, now_ts() - t0);
        CU(cudaFreeHost((void *)started));
        CU(cudaFree(status));
        CU(cudaFree(rounds));
        cudaStreamDestroy(s1);
    }
    CU(cudaFree(dlocal));
}

int main(int argc, char **argv)
{
    const char *scenario = argc > 1 ? argv[1] : "api";
    CHECK_OK(duet_init());
    W = dt_world(&me, &npes);
    CHECK(npes >= 2, "at least 2 ranks");
    uint64_t seed = dt_pick_seed(dt_seed_text(argc > 2 ? argc - 1 : 1, argc > 2 ? argv + 1 : argv),
                                 (uint64_t)time(NULL));
    uint64_t *seed_word = duet_malloc(W, sizeof(uint64_t));
    CHECK(seed_word, "duet_malloc");
    CHECK_OK(dt_share_seed(W, seed_word, &seed));
    CHECK(duet_cuda_available() && duet_cuda_device(W) >= 0, "no GPU heap: this test needs a GPU on every rank");
    CU(cudaSetDevice(duet_cuda_device(W)));
    CHECK_OK(duet_device_comm_get(W, &H));
    right = (me + 1) % npes;
    left = (me + npes - 1) % npes;
    CU(cudaMalloc((void **)&dstatus, sizeof *dstatus));
    CU(cudaMalloc((void **)&dcount, sizeof *dcount));
    CU(cudaMemset(dstatus, 0, sizeof *dstatus));
    CU(cudaMemset(dcount, 0, sizeof *dcount));
    hbuf = malloc(SLOT + 64);
    href = malloc(SLOT + 64);
    CHECK(hbuf && href, "malloc");
    if (!strcmp(scenario, "api")) scenario_api();
    else if (!strcmp(scenario, "dead")) scenario_dead();
    else FATAL("unknown scenario %s (api, dead)", scenario);
    free(hbuf);
    free(href);
    if (!strcmp(scenario, "dead")) {
        duet_finalize(); /* the world lost a rank */
    } else {
        CU(cudaFree(dstatus));
        CU(cudaFree(dcount));
        EXPECT_OK(duet_free(W, seed_word));
        EXPECT_OK(duet_finalize());
    }
    int rc = dt_finish();
    if (rc == 0 && me == 0) printf("test_gpu_proxy %s: passed on %d PEs\n", scenario, npes);
    return rc;
}
