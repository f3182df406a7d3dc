/*
 * test_gpu_heap.c — the GPU symmetric heap from the host (label gpu; needs a GPU on every
 * rank; ranks may share one GPU). Run under duetrun at any rank count; the heap is made
 * small (DUET_CUDA_HEAP_SIZE=64M, set before duet_init) so filling it is fast.
 *
 *   - duet_malloc_device of several sizes: the same offset on every rank; duet_ptr to every
 *     peer (at base + (pe - me) * stride when stride != 0); every rank cudaMemcpy's its slice
 *     of a random pattern into every peer's block; after a barrier each rank reads its own
 *     block back and checks every byte against every writer's pattern (seed printed);
 *   - sizes that differ across ranks -> NULL and DUET_ERR_INVALID_ARG on every rank;
 *   - a request larger than the heap -> NULL and DUET_ERR_NO_MEMORY; filling the heap until
 *     NULL, freeing all, then one block of nearly the whole heap (coalescing);
 *   - duet_free and reuse (the same address again); a double free -> DUET_ERR_INVALID_ARG;
 *   - duet_device_comm_get: the fields of the world's handle and of a team's (split by parity):
 *     pe numbers, heap_pe table, peer_heap table, sync slot zeroed, the abort word;
 *   - duet_malloc_device on a team that leaves ranks out -> DUET_ERR_INVALID_ARG.
 */
#include "duet_test.h"

#include <cuda_runtime_api.h>
#include <duet/duet_cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void duet_cuda_set_abort(duet_comm_t c, duet_status_t status); /* internal (src/cuda) */

static int me, npes;
static duet_comm_t W;
static uint64_t *g_slots; /* host symmetric: npes slots for allgathers */

#define CUDA_OK(call)                                                                        \
    do {                                                                                     \
        cudaError_t e_ = (call);                                                             \
        if (e_ != cudaSuccess) FATAL("%s: %s", #call, cudaGetErrorString(e_));               \
    } while (0)

static void allgather(uint64_t v, uint64_t *out)
{
    CHECK_OK(dt_allgather(W, g_slots, &v, sizeof v));
    memcpy(out, g_slots, sizeof(uint64_t) * (size_t)npes);
    CHECK_OK(duet_barrier(W));
}

static void check_same_everywhere(uint64_t v, const char *what)
{
    uint64_t *all = malloc(sizeof *all * (size_t)npes);
    allgather(v, all);
    for (int r = 0; r < npes; r++)
        CHECK(all[r] == v, "%s: rank %d has %llu, rank %d has %llu", what, r, (unsigned long long)all[r], me,
              (unsigned long long)v);
    free(all);
}

/* Writer w's slice of a block of n bytes. */
static size_t slice_lo(size_t n, int w) { return n * (size_t)w / (size_t)npes; }

static void test_pattern(const duet_device_comm_t *h)
{
    static const size_t sizes[] = {1, 3, 100, 4096, 65537, 1 << 20, (3u << 20) + 5};
    enum { N = sizeof sizes / sizeof sizes[0] };
    for (int i = 0; i < N; i++) {
        size_t n = sizes[i];
        char *p = duet_malloc_device(W, n);
        CHECK(p != NULL, "duet_malloc_device(%zu)", n);
        CHECK(p >= h->heap + 65536 && p + n <= h->heap + h->heap_bytes, "block %p outside my part", (void *)p);
        check_same_everywhere((uint64_t)(p - h->heap), "offset of the block");
        size_t lo = slice_lo(n, me), len = slice_lo(n, me + 1) - lo;
        uint8_t *buf = malloc(n ? n : 1);
        for (int pe = 0; pe < npes; pe++) {
            char *q = duet_ptr(W, p, pe);
            CHECK(q != NULL, "duet_ptr(block of %zu, pe %d)", n, pe);
            if (pe == me) CHECK(q == p, "duet_ptr to myself is %p, not %p", (void *)q, (void *)p);
            if (h->stride)
                CHECK(q == p + ((long)pe - me) * (long)h->stride, "duet_ptr(pe %d) = %p, not base + stride", pe,
                      (void *)q);
            if (!len) continue;
            stream_fill(buf, len, key3(n, (uint64_t)me, (uint64_t)pe));
            CUDA_OK(cudaMemcpy(q + lo, buf, len, cudaMemcpyDefault));
        }
        CUDA_OK(cudaDeviceSynchronize());
        CHECK_OK(duet_barrier_all());
        memset(buf, 0xa5, n); /* poisoned: a byte the copy misses shows */
        CUDA_OK(cudaMemcpy(buf, p, n, cudaMemcpyDefault));
        for (int w = 0; w < npes; w++) {
            size_t wlo = slice_lo(n, w), wlen = slice_lo(n, w + 1) - wlo;
            size_t bad = stream_diff(buf + wlo, wlen, key3(n, (uint64_t)w, (uint64_t)me));
            EXPECT(bad == SIZE_MAX, "block of %zu bytes: byte %zu of rank %d's slice is wrong", n, wlo + bad, w);
        }
        free(buf);
        CHECK_OK(duet_barrier_all()); /* everyone has read before the block is freed */
        CHECK_OK(duet_free(W, p));
    }
}

static void test_errors(const duet_device_comm_t *h)
{
    if (npes > 1) {
        dt_prime_error();
        void *p = duet_malloc_device(W, 4096 + (size_t)me * 64);
        EXPECT(p == NULL, "mismatched sizes gave %p", p);
        EXPECT(duet_last_status() == DUET_ERR_INVALID_ARG, "mismatched sizes: %s",
               duet_status_str(duet_last_status()));
    }
    void *big = duet_malloc_device(W, (size_t)1 << 40);
    EXPECT(big == NULL && duet_last_status() == DUET_ERR_NO_MEMORY, "1 TiB: %p, %s", big,
           duet_status_str(duet_last_status()));
    big = duet_malloc_device(W, h->heap_bytes);
    EXPECT(big == NULL && duet_last_status() == DUET_ERR_NO_MEMORY, "a whole part: %p, %s", big,
           duet_status_str(duet_last_status()));
    EXPECT(duet_malloc_device(W, 0) == NULL, "malloc_device(0)");
    /* free and reuse */
    char *a = duet_malloc_device(W, 1 << 20);
    CHECK(a != NULL, "1 MiB");
    CHECK_OK(duet_free(W, a));
    char *b = duet_malloc_device(W, 1 << 20);
    EXPECT(b == a, "after free the same block comes back: %p then %p", (void *)a, (void *)b);
    CHECK_OK(duet_free(W, b));
    EXPECT_INVALID(duet_free(W, b), "double free of a GPU block");
    /* fill until full, free all, one big block */
    enum { MAXB = 64 };
    void *blk[MAXB];
    int k = 0;
    while (k < MAXB && (blk[k] = duet_malloc_device(W, 4u << 20)) != NULL) k++;
    EXPECT(k > 4 && k < MAXB, "%d blocks of 4 MiB fit", k);
    EXPECT(duet_last_status() == DUET_ERR_NO_MEMORY, "full: %s", duet_status_str(duet_last_status()));
    for (int i = k - 1; i >= 0; i--) CHECK_OK(duet_free(W, blk[i]));
    void *all = duet_malloc_device(W, (size_t)k * (4u << 20));
    EXPECT(all != NULL, "one block of the %d freed ones", k);
    if (all) CHECK_OK(duet_free(W, all));
}

static void check_handle(duet_comm_t c, const duet_device_comm_t *h, const duet_device_comm_t *world)
{
    int n = duet_comm_size(c), r = duet_comm_rank(c);
    EXPECT(h->my_pe == r && h->n_pes == n, "pe %d of %d, want %d of %d", h->my_pe, h->n_pes, r, n);
    EXPECT(h->my_heap_pe == me, "my_heap_pe %d", h->my_heap_pe);
    EXPECT(h->heap == world->heap && h->stride == world->stride && h->heap_bytes == world->heap_bytes,
           "a team's heap differs from the world's");
    EXPECT(h->abort != NULL && h->heap_pe != NULL && h->peer_heap != NULL && h->sync != NULL, "NULL pointers");
    EXPECT((char *)h->sync >= h->heap && (char *)h->sync < h->heap + 65536, "sync outside the sync area");
    int *hp = malloc(sizeof(int) * (size_t)n);
    CUDA_OK(cudaMemcpy(hp, h->heap_pe, sizeof(int) * (size_t)n, cudaMemcpyDefault));
    for (int i = 0; i < n; i++)
        EXPECT(hp[i] == duet_comm_translate_rank(c, i, W), "heap_pe[%d] = %d", i, hp[i]);
    free(hp);
    char **peer = malloc(sizeof(char *) * (size_t)npes);
    CUDA_OK(cudaMemcpy(peer, h->peer_heap, sizeof(char *) * (size_t)npes, cudaMemcpyDefault));
    EXPECT(peer[me] == h->heap, "peer_heap[me] %p, heap %p", (void *)peer[me], (void *)h->heap);
    for (int pe = 0; pe < npes && h->stride; pe++)
        EXPECT(peer[pe] == h->heap + ((long)pe - me) * (long)h->stride, "peer_heap[%d] not at the stride", pe);
    free(peer);
    uint64_t sync[128];
    CUDA_OK(cudaMemcpy(sync, h->sync, sizeof sync, cudaMemcpyDefault));
    for (int i = 0; i < 128; i++) EXPECT(sync[i] == 0, "sync word %d = %llu", i, (unsigned long long)sync[i]);
    int32_t ab = -1;
    CUDA_OK(cudaMemcpy(&ab, (const void *)h->abort, sizeof ab, cudaMemcpyDefault));
    EXPECT(ab == 0, "abort word %d", ab);
    duet_cuda_set_abort(c, DUET_ERR_REVOKED);
    CUDA_OK(cudaMemcpy(&ab, (const void *)h->abort, sizeof ab, cudaMemcpyDefault));
    EXPECT(ab == DUET_ERR_REVOKED, "abort word after set_abort: %d", ab);
    duet_cuda_set_abort(c, DUET_OK);
}

static void test_team(const duet_device_comm_t *world)
{
    duet_comm_t T;
    CHECK_OK(duet_comm_split(W, me % 2, me, &T));
    duet_device_comm_t th;
    CHECK_OK(duet_device_comm_get(T, &th));
    check_handle(T, &th, world);
    EXPECT(th.sync != world->sync, "a team shares the world's sync slot");
    if (duet_comm_size(T) < duet_comm_size(W)) { /* a team of every rank may allocate */
        dt_prime_error();
        EXPECT(duet_malloc_device(T, 64) == NULL && duet_last_status() == DUET_ERR_INVALID_ARG,
               "malloc_device on a team: %s", duet_status_str(duet_last_status()));
    }
    char *p = duet_malloc_device(W, 256);
    CHECK(p != NULL, "256 bytes");
    if (duet_comm_size(T) < duet_comm_size(W)) { /* GPU collectives need a team that may allocate */
        dt_prime_error();
        duet_status_t st = duet_allreduce(p, p, 8, DUET_FLOAT32, DUET_SUM, T, NULL);
        EXPECT(st == DUET_ERR_UNSUPPORTED && strstr(duet_last_error(), "team"),
               "GPU allreduce on a team: %s (%s)", duet_status_str(st), duet_last_error());
    }
    for (int r = 0; r < duet_comm_size(T); r++)
        EXPECT(duet_ptr(T, p, r) == duet_ptr(W, p, duet_comm_translate_rank(T, r, W)), "team duet_ptr(%d)", r);
    EXPECT(duet_ptr(T, p, duet_comm_size(T)) == NULL, "duet_ptr to a pe out of range");
    CHECK_OK(duet_free(W, p));
    CHECK_OK(duet_comm_destroy(T));
}

int main(int argc, char **argv)
{
    setenv("DUET_CUDA_HEAP_SIZE", "64M", 0);
    CHECK_OK(duet_init());
    W = dt_world(&me, &npes);
    uint64_t seed = dt_pick_seed(dt_seed_text(argc, argv), (uint64_t)time(NULL));
    g_slots = duet_malloc(W, sizeof(uint64_t) * (size_t)(npes + 1));
    CHECK(g_slots != NULL, "host slots");
    CHECK_OK(dt_share_seed(W, g_slots + npes, &seed));
    if (me == 0) printf("test_gpu_heap: %d ranks, seed %llu\n", npes, (unsigned long long)seed);
    CHECK(duet_cuda_available(), "no GPU here: %s", "this test needs one");
    int dev = duet_cuda_device(W), cur = -1;
    CHECK(dev >= 0, "duet_cuda_device = %d", dev);
    CUDA_OK(cudaGetDevice(&cur));
    EXPECT(cur == dev, "current device %d, the heap's %d", cur, dev);
    duet_device_comm_t h;
    CHECK_OK(duet_device_comm_get(W, &h));
    CHECK(h.heap != NULL && h.heap_bytes >= (64u << 20), "heap %p, %zu bytes", (void *)h.heap, h.heap_bytes);
    CHECK(h.stride == 0 || h.stride >= h.heap_bytes, "stride %zu < part %zu", h.stride, h.heap_bytes);
    if (me == 0)
        printf("test_gpu_heap: device %d, part %zu bytes, %s\n", dev, h.heap_bytes,
               h.stride ? "VMM (fixed stride)" : "cudaIpc (no stride)");
    check_handle(W, &h, &h);
    EXPECT(h.sync == (uint64_t *)(void *)h.heap, "the world's sync slot is slot 0");
    test_pattern(&h);
    test_errors(&h);
    test_team(&h);
    CHECK_OK(duet_free(W, g_slots));
    CHECK_OK(duet_finalize());
    int rc = dt_finish();
    if (me == 0 && rc == 0) printf("test_gpu_heap: passed\n");
    return rc;
}
