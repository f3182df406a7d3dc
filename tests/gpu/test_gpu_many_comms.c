/*
 * test_gpu_many_comms.c — what communicators cost on a GPU (label gpu; every rank needs a
 * GPU; ranks may share one under MPS). A framework makes one communicator per process group
 * (ncclCommSplit, PyTorch's new_group): each is independent, with its own heaps.
 *
 *   - 32 communicators over the same ranks (duet_get_unique_id + duet_comm_init_rank): the
 *     device memory they take while idle, measured with cudaMemGetInfo across the GPU after a
 *     barrier and divided by the ranks sharing that GPU, is at most 16 MiB per communicator
 *     and rank (the GPU heap backs only its first segment until blocks need more);
 *   - on each: an int32 sum allreduce of 4097 elements between cudaMalloc'd buffers on a
 *     stream, every element checked against the reference computed here;
 *   - on each: a 40 MiB block of its GPU heap (the heap grows by segments on every rank),
 *     every rank writes its slice into every peer's block with duet_ptr + cudaMemcpy; after
 *     a barrier each checks every byte of its own block against every writer's pattern;
 *   - after every communicator is destroyed, the GPU has back all but 64 MiB of what they
 *     took (per rank).
 * Usage: test_gpu_many_comms [seed]. Rank 0 prints the figures and "test_gpu_many_comms: passed".
 */
#include "duet_test.h"
#include "gpu/gpu_check.h"

#include <duet/duet_cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { NCOMMS = 32, COUNT = 4097 };
#define MIB ((size_t)1 << 20)
#define BLOCK (40 * MIB)
#define IDLE_LIMIT (16 * MIB)
#define LEAK_LIMIT (64 * MIB)

static int me, npes, sharers;
static duet_comm_t W;
static uint64_t *g_slots; /* host symmetric: npes slots */

static void allgather(uint64_t v, uint64_t *out)
{
    CHECK_OK(dt_allgather(W, g_slots, &v, sizeof v));
    memcpy(out, g_slots, sizeof(uint64_t) * (size_t)npes);
    CHECK_OK(duet_barrier(W));
}

/* Free bytes of my GPU, read when every rank has come this far (and nobody allocates). */
static size_t gpu_free(void)
{
    CHECK_OK(duet_barrier(W));
    CU(cudaDeviceSynchronize());
    size_t fr = 0, total = 0;
    CU(cudaMemGetInfo(&fr, &total));
    CHECK_OK(duet_barrier(W));
    return fr;
}

static void check_allreduce(duet_comm_t c, int k, cudaStream_t s, int32_t *dsend, int32_t *drecv)
{
    int32_t *h = malloc(sizeof *h * COUNT);
    for (int i = 0; i < COUNT; i++) h[i] = (int32_t)(me * 1000003 + i * 7 + k);
    CU(cudaMemcpy(dsend, h, sizeof *h * COUNT, cudaMemcpyHostToDevice));
    CU(cudaMemset(drecv, 0xff, sizeof *h * COUNT));
    CHECK_OK(duet_allreduce(dsend, drecv, COUNT, DUET_INT32, DUET_SUM, c, s));
    CU(cudaStreamSynchronize(s));
    CU(cudaMemcpy(h, drecv, sizeof *h * COUNT, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < COUNT && bad < 5; i++) {
        int64_t want = 0;
        for (int r = 0; r < npes; r++) want += (int64_t)r * 1000003 + i * 7 + k;
        if (h[i] != (int32_t)want) {
            FAIL("communicator %d: allreduce element %d is %d, want %d", k, i, h[i], (int32_t)want);
            bad++;
        }
    }
    free(h);
}

static size_t slice_lo(size_t n, int w) { return n * (size_t)w / (size_t)npes; }

static void check_block(duet_comm_t c, int k)
{
    char *p = duet_malloc_device(c, BLOCK);
    CHECK(p != NULL, "communicator %d: duet_malloc_device(%zu): %s", k, BLOCK, duet_last_error());
    size_t lo = slice_lo(BLOCK, me), len = slice_lo(BLOCK, me + 1) - lo;
    uint8_t *buf = malloc(BLOCK);
    for (int pe = 0; pe < npes; pe++) {
        char *q = duet_ptr(c, p, pe);
        CHECK(q != NULL, "communicator %d: duet_ptr(pe %d)", k, pe);
        stream_fill(buf, len, key3((uint64_t)k, (uint64_t)me, (uint64_t)pe));
        CU(cudaMemcpy(q + lo, buf, len, cudaMemcpyHostToDevice));
    }
    CU(cudaDeviceSynchronize());
    CHECK_OK(duet_barrier(c));
    CU(cudaMemcpy(buf, p, BLOCK, cudaMemcpyDeviceToHost));
    for (int w = 0; w < npes; w++) {
        size_t wlo = slice_lo(BLOCK, w), wlen = slice_lo(BLOCK, w + 1) - wlo;
        size_t at = stream_diff(buf + wlo, wlen, key3((uint64_t)k, (uint64_t)w, (uint64_t)me));
        EXPECT(at == SIZE_MAX, "communicator %d: byte %zu of rank %d's slice in my block differs", k, wlo + at, w);
    }
    free(buf);
    CHECK_OK(duet_free(c, p));
}

int main(int argc, char **argv)
{
    CHECK_OK(duet_init());
    W = dt_world(&me, &npes);
    uint64_t seed = dt_pick_seed(dt_seed_text(argc, argv), (uint64_t)time(NULL));
    g_slots = duet_malloc(W, sizeof(uint64_t) * (size_t)(npes + 1) + sizeof(duet_unique_id_t));
    CHECK(g_slots != NULL, "host slots");
    CHECK_OK(dt_share_seed(W, g_slots + npes, &seed));
    CHECK(duet_cuda_available(), "no GPU here: %s", "this test needs one");
    int dev = duet_cuda_device(W);
    CHECK(dev >= 0, "duet_cuda_device = %d", dev);
    CU(cudaSetDevice(dev));
    /* who shares my GPU (its PCI bus id, so two GPUs are told apart whatever the ordinals) */
    char bus[32] = "";
    CU(cudaDeviceGetPCIBusId(bus, sizeof bus, dev));
    uint64_t mine = 1469598103934665603ull, *all = malloc(sizeof *all * (size_t)npes);
    for (const char *b = bus; *b; b++) mine = (mine ^ (uint8_t)*b) * 1099511628211ull;
    allgather(mine, all);
    for (int r = 0; r < npes; r++) sharers += all[r] == mine;
    free(all);

    cudaStream_t s;
    CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    int32_t *dsend, *drecv;
    CU(cudaMalloc((void **)&dsend, sizeof(int32_t) * COUNT));
    CU(cudaMalloc((void **)&drecv, sizeof(int32_t) * COUNT));
    check_allreduce(W, -1, s, dsend, drecv); /* the kernels are loaded before anything is measured */

    /* a small host heap each: what is measured here is the GPU's side */
    duet_config_t cfg = DUET_CONFIG_INIT;
    cfg.symmetric_size = 8 * MIB;
    duet_comm_t comms[NCOMMS];
    duet_unique_id_t *sym_id = (duet_unique_id_t *)(void *)(g_slots + npes + 1);
    size_t before = gpu_free();
    for (int k = 0; k < NCOMMS; k++) {
        duet_unique_id_t id;
        memset(&id, 0, sizeof id);
        if (me == 0) CHECK_OK(duet_get_unique_id(&id));
        CHECK_OK(dt_bcast(W, sym_id, &id, sizeof id, 0));
        CHECK_OK(duet_comm_init_rank(&comms[k], npes, id, me, &cfg));
    }
    size_t idle = gpu_free();
    double per_idle = (double)(before > idle ? before - idle : 0) / sharers / NCOMMS;
    if (me == 0)
        printf("test_gpu_many_comms: %d ranks (%d on my GPU), %d communicators: %.2f MiB of GPU memory per idle "
               "communicator and rank\n", npes, sharers, NCOMMS, per_idle / (double)MIB);
    EXPECT(per_idle <= (double)IDLE_LIMIT, "an idle communicator takes %.2f MiB of GPU memory per rank, more than %zu",
           per_idle / (double)MIB, IDLE_LIMIT / MIB);

    for (int k = 0; k < NCOMMS; k++) check_allreduce(comms[k], k, s, dsend, drecv);
    for (int k = 0; k < NCOMMS; k++) check_block(comms[k], k);
    size_t used = gpu_free();
    if (me == 0)
        printf("test_gpu_many_comms: after an allreduce and a %zu MiB block on each: %.2f MiB per communicator "
               "and rank\n", BLOCK / MIB, (double)(before > used ? before - used : 0) / sharers / NCOMMS / (double)MIB);

    for (int k = 0; k < NCOMMS; k++) CHECK_OK(duet_comm_destroy(comms[k]));
    size_t after = gpu_free();
    double kept = (double)(before > after ? before - after : 0) / sharers;
    if (me == 0)
        printf("test_gpu_many_comms: after destroying them: %.2f MiB per rank not given back\n", kept / (double)MIB);
    EXPECT(kept <= (double)LEAK_LIMIT, "destroyed communicators keep %.2f MiB of GPU memory per rank",
           kept / (double)MIB);

    CU(cudaFree(dsend));
    CU(cudaFree(drecv));
    CU(cudaStreamDestroy(s));
    CHECK_OK(duet_free(W, g_slots));
    CHECK_OK(duet_finalize());
    int rc = dt_finish();
    if (me == 0 && rc == 0) printf("test_gpu_many_comms: passed\n");
    return rc;
}
