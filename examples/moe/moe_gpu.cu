/* moe_gpu.cu — moe.c on the GPU: mixture-of-experts dispatch and combine over ranks, two ways.
 *
 *   duetrun -n 2 moe_gpu [-t "128 512 2048 8192"] [-h HIDDEN] [-k TOPK] [-x EXPERTS_PER_RANK]
 *                        [-i ITERS] [-b BLOCKS]
 *
 * The same tokens, routing, experts and table as moe.c, in bf16 on the GPU: each rank holds T
 * tokens of HIDDEN values; token t goes to TOPK distinct experts (moe.c's generator), with weights
 * (k + 1) / sum; EXPERTS_PER_RANK experts live on every rank. Expert e computes
 * y = x * (1 + e/64) + e/128 (one fma, rounded to bf16); combine sums a token's TOPK results,
 * weighted, in expert-slot order (fma by fma in float32, rounded once). Two ways, each timed with
 * CUDA events on one stream (moe_gpu.cuh has the layouts and the device code they share):
 *
 *   (a) alltoall  dispatch: a pack kernel puts every copy into the send buffer's region of its
 *                 destination at its slot (and my row of counts beside it); duet_alltoall of the
 *                 counts, then of the regions, padded to the largest count of any pair (cap).
 *                 combine: an expert kernel writes the result of every received copy into the
 *                 send buffer, where the copy lay in the receive buffer; duet_alltoall back; a
 *                 kernel sums each token's results where they came back (home knows each copy's
 *                 region and slot).
 *                 Three kernels and three collectives; each collective agrees with the peers on
 *                 the host (symmetric buffers: the library's direct kernel).
 *   (b) put       dispatch: ONE kernel. Each block takes a chunk of the copies; a warp per copy
 *                 writes the header and duet_dev_put_warp_nbi's the row straight into my region
 *                 of the expert rank's inbox, at the copy's slot; the last block to finish sends
 *                 each rank one signal carrying the count, then waits for every rank's signal.
 *                 combine: ONE kernel. Every received copy goes through its expert, a warp
 *                 per record, and the result is stored from registers (16 bytes a lane, 512
 *                 contiguous bytes a warp) straight into my region of its home rank's `back`
 *                 at the copy's slot (through duet_dev_ptr: a put whose source is the expert's
 *                 output; each expert rank writes one dense run per home); the last block
 *                 signals each home the count, waits for the signals of all ranks and
 *                 wakes every other block through a word of its own (only it polls the
 *                 signals); then every block sums its share of my tokens, reading each
 *                 result where its expert rank put it (region of the destination, slot: as
 *                 (a) reads `ret`).
 *                 No host step between the two phases, no count exchange: the counts ride on
 *                 the signals.
 *
 * Slots (both ways, on the device, inside the timed dispatch): copy c = token * TOPK + k gets
 * slot = the number of copies before it that go to the same rank (moe_gpu.cuh, block_slots), so
 * the receiver's region from me is dense and in copy order, the same in (a)'s receive buffer and
 * (b)'s inbox. The regions are fixed per source (n regions of cap records on every rank; cap is
 * agreed when a size starts, outside the timing, from the routing, as moe.c agrees on its sizes),
 * so in (b) no rank needs another's counts to know where to write.
 *
 * The signals of (b). Word s of dsig (and csig) on a rank is written by rank s only, with SET
 * of (round << 32) | count: the round number, 1, 2, ... counted on the host the same on every
 * rank, and nothing is ever reset (a word only grows). A wait is for "my round or later" and
 * then checks that it is exactly mine. Why no word, inbox slot or `back` row is overwritten
 * before it has been read (kernels of one rank run in order on its stream):
 *   - inbox of R, round r+1, written by S's dispatch r+1: S's stream starts that only after
 *     S's combine r ended, which waited for csig from every rank, R included; R sets it from its
 *     combine r after every one of its blocks finished reading its inbox (last block, fences).
 *   - back of S, round r+1, written by R's combine r+1: that needs R's dispatch r+1 to have seen
 *     S's dsig of r+1, which S sends after its combine r (the last reader of back) ended.
 *   - dsig[S] on R, set to r+1 by S's dispatch r+1, after S's combine r, after R's csig of r,
 *     which R sends after its dispatch r read dsig[S] of r. csig alike, one phase later.
 * So a rank is at most one phase ahead of a peer and no second ("done reading") signal is
 * needed; every rank sends every signal, even a count of 0. The rounds here are also separated
 * by host barriers (as in moe.c, to time each round from a common start); the protocol does not
 * need them. The combine kernel's blocks wait for the other ranks, so its grid must be resident
 * with the grids of the ranks that share the GPU: BLOCKS is capped by the occupancy divided by
 * the ranks on this GPU (found at start).
 *
 * Checks, per size, after the rounds (every rank; the exit status is 1 if any fails): the counts
 * of both ways against the routing, the received copies of (a) and (b) byte for byte (headers
 * included), the two outputs byte for byte, and up to 65 tokens of the output against a host
 * computation (the same fma and bf16 rounding). The buffers both ways write are poisoned with
 * different bytes before every round, so what one way misses cannot match the other.
 *
 * Heap: per rank, 4 regions of n * cap records and one of n * cap rows at a time: about 4.8 GB
 * at 8192 tokens (DUET_CUDA_HEAP_SIZE=6G covers the defaults).
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime.h>
#include <duet/duet_device.cuh>

#include "bench_util.h"
#include "moe_gpu.cuh"

#define PROG "moe_gpu"

/* ------------------------------------------------------------------------------------
 * Errors: one line, then exit 1 (the other ranks' waits then end on the launcher's kill)
 * ------------------------------------------------------------------------------------ */
static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    bench_vreport(PROG, "rank", duet_my_pe(), fmt, ap);
    va_end(ap);
    exit(1);
}
#define CU(call) BENCH_CUDA_CHECK(die, call)
#define DU(call)                                                                           \
    do {                                                                                   \
        duet_status_t s_ = (call);                                                         \
        if (s_ != DUET_OK) die("%s: %s", #call, duet_last_error());                        \
    } while (0)

/* Token t's value i on rank `rank` before rounding to bf16 (moe.c's x). */
__host__ __device__ static inline float x_value(int rank, int t, int i)
{
    return (float)((rank * 131 + t * 17 + i) % 251) / 251.0f;
}

/* ------------------------------------------------------------------------------------
 * Kernels
 * ------------------------------------------------------------------------------------ */

/* x[t][i] = bf16(x_value), the padding of each row 0. */
__global__ void init_tokens(moe_args_t a, uint16_t *x)
{
    const unsigned per_row = (unsigned)(a.row / 2), items = (unsigned)a.T * per_row;
    for (unsigned i = moe::grid_thread(); i < items; i += moe::grid_threads()) {
        int t = (int)(i / per_row), e = (int)(i % per_row);
        x[i] = e < a.hidden ? __bfloat16_as_ushort(__float2bfloat16_rn(x_value(a.me, t, e))) : (uint16_t)0;
    }
}

/* bad += the 16-byte words where x and y differ. */
__global__ void count_diff(const uint4 *x, const uint4 *y, size_t words, unsigned long long *bad)
{
    unsigned long long mine = 0;
    for (size_t i = moe::grid_thread(); i < words; i += moe::grid_threads()) {
        uint4 u = x[i], v = y[i];
        mine += u.x != v.x || u.y != v.y || u.z != v.z || u.w != v.w;
    }
    if (mine) atomicAdd(bad, mine);
}

/* Copy c's header: who sent it, its token and slot k, its expert. */
static __device__ __forceinline__ moe_hdr_t header_of(const moe_args_t &a, int c)
{
    moe_hdr_t hd = {a.me, c / a.topk, c % a.topk, a.route[c]};
    return hd;
}

/* ---- (a) alltoall */

/* Dispatch, before the collectives: every copy into its destination's region of the send
 * buffer, at its slot (a warp per copy; the row moves as a put to myself, the same copy loop
 * as (b)'s puts), my counts to scount. */
__global__ void __launch_bounds__(MOE_THREADS) a2a_pack(moe_args_t a)
{
    __shared__ int run[MOE_MAX_RANKS];
    int lo, hi;
    moe::chunk_range(a.T * a.topk, &lo, &hi);
    moe::block_slots(a, lo, hi, run, a.scount);
    for (int c = lo + moe::warp(); c < hi; c += MOE_WARPS) { /* warp-uniform */
        int t = c / a.topk, d = moe::dest_of(a, c), s = a.slot[c];
        if (s >= a.cap) continue;
        char *rec = a.send + ((size_t)d * a.cap + s) * a.rec;
        if (moe::lane() == 0) *(moe_hdr_t *)rec = header_of(a, c);
        duet_dev_put_warp_nbi(a.h, rec + MOE_HDR, a.x + (size_t)t * a.row, a.row, a.me);
    }
}

/* (a)'s expert results go back in the send buffer, where the copy lay in the receive buffer. */
struct store_in_send {
    char *send;
    size_t rec;
    int cap;
    __device__ void operator()(int s, int j, const moe_hdr_t &, int p, uint4 y) const
    {
        ((uint4 *)(send + ((size_t)s * cap + j) * rec + MOE_HDR))[p] = y;
    }
};

__global__ void __launch_bounds__(MOE_THREADS) a2a_experts(moe_args_t a)
{
    moe::experts(a, a.recv, a.rcount, store_in_send{a.send, a.rec, a.cap});
}

/* (a)'s results came back where my copies went: region of the copy's destination, its slot. */
struct rows_in_ret {
    const char *ret;
    const int *route, *slot;
    size_t rec;
    int cap, topk, per_rank;
    __device__ const uint4 *operator()(int t, int k) const
    {
        int c = t * topk + k;
        return (const uint4 *)(ret + ((size_t)(route[c] / per_rank) * cap + slot[c]) * rec + MOE_HDR);
    }
};

__global__ void __launch_bounds__(MOE_THREADS) a2a_combine(moe_args_t a)
{
    moe::weighted_sums(a, rows_in_ret{a.ret, a.route, a.slot, a.rec, a.cap, a.topk, a.per_rank}, a.out_a);
}

/* ---- (b) put */

/* Dispatch: every copy straight into my region of its expert rank's inbox (a warp per copy),
 * then the last block signals each rank its count and waits for every rank's count of me. */
__global__ void __launch_bounds__(MOE_THREADS) put_dispatch(moe_args_t a)
{
    __shared__ int run[MOE_MAX_RANKS];
    int lo, hi;
    moe::chunk_range(a.T * a.topk, &lo, &hi);
    moe::block_slots(a, lo, hi, run, a.sent);
    for (int c = lo + moe::warp(); c < hi; c += MOE_WARPS) { /* warp-uniform */
        int t = c / a.topk, d = moe::dest_of(a, c), s = a.slot[c];
        if (s >= a.cap) continue;
        char *rec = a.inbox + ((size_t)a.me * a.cap + s) * a.rec; /* symmetric: my region at d */
        if (moe::lane() == 0) *duet_dev_ptr(a.h, (moe_hdr_t *)rec, d) = header_of(a, c);
        duet_dev_put_warp_nbi(a.h, rec + MOE_HDR, a.x + (size_t)t * a.row, a.row, d);
    }
    if (moe::last_block(&a.done[0])) {
        moe::signal_counts(a, a.dsig, a.sent);
        moe::wait_counts(a, a.dsig, a.got, nullptr);
    }
}

/* (b)'s expert results go from registers into my region of `back` on the copy's source, at the
 * copy's slot: pack p of slot j of region s (what s sent me) to row (me, j) of back on s. */
struct store_at_home {
    duet_device_comm_t h;
    char *back;
    size_t row;
    int cap, me;
    __device__ void operator()(int s, int j, int p, uint4 y) const
    {
        char *dst = back + ((size_t)me * cap + j) * row;
        duet_dev_ptr(h, (uint4 *)dst, s)[p] = y;
    }
};

/* (b)'s results came back into `back` where my copies went: region of the copy's destination,
 * its slot (rows_in_ret's places, in rows without headers). */
struct rows_in_back {
    const char *back;
    const int *route, *slot;
    size_t row;
    int cap, topk, per_rank;
    __device__ const uint4 *operator()(int t, int k) const
    {
        int c = t * topk + k;
        return (const uint4 *)(back + ((size_t)(route[c] / per_rank) * cap + slot[c]) * row);
    }
};

/* Combine: the experts on every received copy (a warp per record), results straight home; the
 * last block signals each home its count, waits for every rank's results and wakes the other
 * blocks (each polls only its own wake word: moe_gpu.cuh, wait_woken); then every block sums
 * its share. */
__global__ void __launch_bounds__(MOE_THREADS) put_combine(moe_args_t a)
{
    moe::expert_rows(a, a.inbox, a.got, store_at_home{a.h, a.back, a.row, a.cap, a.me});
    bool ok;
    if (moe::last_block(&a.done[1])) {
        moe::signal_counts(a, a.csig, a.got);
        ok = moe::wait_counts(a, a.csig, nullptr, a.sent);
        moe::wake_all(a, ok);
    } else {
        ok = moe::wait_woken(a);
    }
    if (!ok) return;
    moe::weighted_sums(a, rows_in_back{a.back, a.route, a.slot, a.row, a.cap, a.topk, a.per_rank}, a.out_b);
}

/* ------------------------------------------------------------------------------------
 * Host side
 * ------------------------------------------------------------------------------------ */
typedef struct {
    duet_comm_t comm;
    int me, n, hidden, topk, per_rank, T, iters;
    int share;               /* ranks on my GPU (mine included) */
    int max_blocks, blocks;  /* what fits with the other ranks of my GPU; every kernel's grid */
    int force_blocks;        /* -b, or 0 */
    cudaStream_t stream;
    cudaEvent_t ev[3];
    moe_args_t a;            /* the kernels' arguments */
    int *route;              /* host: [T][topk] my routing */
    float *weight;           /* host: [T][topk] */
    int *count;              /* host: [n][n] copies from src to dst */
    unsigned long long *bad; /* device: the checks' mismatches, [0] copies, [1] outputs */
} moe_t;

static uint64_t mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Routing of my tokens (moe.c's): TOPK distinct experts each, weights (k + 1) / sum. */
static void make_routing(moe_t *m)
{
    int experts = m->n * m->per_rank;
    float wsum = (float)(m->topk * (m->topk + 1) / 2);
    for (int t = 0; t < m->T; t++)
        for (int k = 0; k < m->topk; k++) {
            int e;
            for (uint64_t s = 0;; s++) { /* the next expert not already taken */
                e = (int)(mix(((uint64_t)m->me << 40) ^ ((uint64_t)t << 8) ^ (uint64_t)k ^ (s << 52)) % (uint64_t)experts);
                int dup = 0;
                for (int j = 0; j < k; j++) dup |= m->route[t * m->topk + j] == e;
                if (!dup) break;
            }
            m->route[t * m->topk + k] = e;
            m->weight[t * m->topk + k] = (float)(k + 1) / wsum;
        }
}

/* The pairs' counts (my row from my routing, allgathered: outside the timing) and the largest
 * of them: the records of every region. */
static int agree_cap(moe_t *m)
{
    int *row = (int *)calloc((size_t)m->n, sizeof *row), cap = 0;
    if (!row) die("out of host memory");
    for (int c = 0; c < m->T * m->topk; c++) row[m->route[c] / m->per_rank]++;
    DU(duet_allgather(row, m->count, (size_t)m->n, DUET_INT32, m->comm, NULL));
    for (int i = 0; i < m->n * m->n; i++) cap = m->count[i] > cap ? m->count[i] : cap;
    free(row);
    return cap;
}

/* The ranks whose GPU is mine (same host, same PCI bus id), from an allgather of a hash. */
static int ranks_on_my_gpu(const moe_t *m, int dev)
{
    char where[512] = {0};
    gethostname(where, 255);
    size_t len = strlen(where);
    where[len++] = '/';
    CU(cudaDeviceGetPCIBusId(where + len, (int)(sizeof where - len), dev));
    uint64_t key = 1469598103934665603ull, *all = (uint64_t *)malloc(sizeof(uint64_t) * (size_t)m->n);
    if (!all) die("out of host memory");
    for (const char *s = where; *s; s++) key = (key ^ (unsigned char)*s) * 1099511628211ull;
    DU(duet_allgather(&key, all, 1, DUET_UINT64, m->comm, NULL));
    int share = 0;
    for (int r = 0; r < m->n; r++) share += all[r] == key;
    free(all);
    return share;
}

/* The most blocks per kernel such that the put kernels of every rank on this GPU are resident
 * at once (their blocks wait for other ranks). */
static int fitting_blocks(const moe_t *m, int dev)
{
    int per_dispatch = 0, per_combine = 0, sms = 0;
    CU(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_dispatch, put_dispatch, MOE_THREADS, 0));
    CU(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_combine, put_combine, MOE_THREADS, 0));
    CU(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    int per_sm = per_dispatch < per_combine ? per_dispatch : per_combine;
    int fit = per_sm * sms / m->share;
    if (fit < 1) die("%d ranks on one GPU cannot all have a block resident (%d per SM x %d SMs)", m->share, per_sm, sms);
    return fit;
}

/* Every kernel's grid: -b, else as many blocks as fit (the combine phases want threads in
 * flight; a dispatch block with no copies only counts itself done). */
static int blocks_for(const moe_t *m)
{
    if (m->force_blocks > m->max_blocks)
        die("-b %d: at most %d blocks fit with the %d ranks of this GPU", m->force_blocks, m->max_blocks, m->share);
    return m->force_blocks ? m->force_blocks : m->max_blocks;
}

static void *sym_alloc(moe_t *m, size_t bytes, const char *what)
{
    void *p = duet_malloc_device(m->comm, bytes);
    if (!p) die("duet_malloc_device(%s, %zu bytes): %s (raise DUET_CUDA_HEAP_SIZE)", what, bytes, duet_last_error());
    return p;
}

static void *dev_alloc(size_t bytes)
{
    void *p = NULL;
    CU(cudaMalloc(&p, bytes));
    return p;
}

/* What lives across sizes: the signal words, the count words, the small device scratch, the
 * stream and events. Ends with the library's GPU collective scratch made (its first collective)
 * and a barrier: every word is zero on every rank before anyone writes one. */
static void setup_run(moe_t *m)
{
    moe_args_t *a = &m->a;
    size_t n = (size_t)m->n;
    a->dsig = (uint64_t *)sym_alloc(m, n * sizeof(uint64_t), "dsig");
    a->csig = (uint64_t *)sym_alloc(m, n * sizeof(uint64_t), "csig");
    a->scount = (int *)sym_alloc(m, n * sizeof(int), "scount");
    a->rcount = (int *)sym_alloc(m, n * sizeof(int), "rcount");
    a->sent = (int *)dev_alloc(n * sizeof(int));
    a->got = (int *)dev_alloc(n * sizeof(int));
    a->done = (unsigned *)dev_alloc(2 * sizeof(unsigned));
    a->wake = (uint64_t *)dev_alloc((size_t)m->blocks * MOE_WAKE_STRIDE * sizeof(uint64_t));
    a->status = (int *)dev_alloc(sizeof(int));
    m->bad = (unsigned long long *)dev_alloc(2 * sizeof(unsigned long long));
    CU(cudaMemset(a->dsig, 0, n * sizeof(uint64_t)));
    CU(cudaMemset(a->csig, 0, n * sizeof(uint64_t)));
    CU(cudaMemset(a->scount, 0, n * sizeof(int)));
    CU(cudaMemset(a->done, 0, 2 * sizeof(unsigned)));
    CU(cudaMemset(a->wake, 0, (size_t)m->blocks * MOE_WAKE_STRIDE * sizeof(uint64_t)));
    CU(cudaMemset(a->status, 0, sizeof(int)));
    CU(cudaStreamCreateWithFlags(&m->stream, cudaStreamNonBlocking));
    for (int i = 0; i < 3; i++) CU(cudaEventCreate(&m->ev[i]));
    CU(cudaDeviceSynchronize());
    DU(duet_alltoall(a->scount, a->rcount, 1, DUET_INT32, m->comm, m->stream));
    CU(cudaStreamSynchronize(m->stream));
    DU(duet_barrier(m->comm));
}

/* One size: routing, cap, buffers, tokens. */
static void setup_size(moe_t *m, int T)
{
    moe_args_t *a = &m->a;
    m->T = a->T = T;
    m->route = (int *)malloc(sizeof(int) * (size_t)T * m->topk);
    m->weight = (float *)malloc(sizeof(float) * (size_t)T * m->topk);
    if (!m->route || !m->weight) die("out of host memory");
    make_routing(m);
    a->cap = agree_cap(m);
    size_t region = (size_t)m->n * a->cap * a->rec, copies = (size_t)T * m->topk;
    if ((size_t)m->n * a->cap * a->packs >= (1u << 31) || (size_t)T * a->packs >= (1u << 31))
        die("%d tokens of %d values are too many for this program's 32-bit indices", T, m->hidden);
    a->send = (char *)sym_alloc(m, region, "send");
    a->recv = (char *)sym_alloc(m, region, "recv");
    a->ret = (char *)sym_alloc(m, region, "ret");
    a->inbox = (char *)sym_alloc(m, region, "inbox");
    a->back = (char *)sym_alloc(m, (size_t)m->n * a->cap * a->row, "back");
    a->x = (const char *)dev_alloc((size_t)T * a->row);
    a->route = (const int *)dev_alloc(copies * sizeof(int));
    a->weight = (const float *)dev_alloc(copies * sizeof(float));
    a->slot = (int *)dev_alloc(copies * sizeof(int));
    a->out_a = (char *)dev_alloc((size_t)T * a->row);
    a->out_b = (char *)dev_alloc((size_t)T * a->row);
    CU(cudaMemcpy((void *)a->route, m->route, copies * sizeof(int), cudaMemcpyHostToDevice));
    CU(cudaMemcpy((void *)a->weight, m->weight, copies * sizeof(float), cudaMemcpyHostToDevice));
    init_tokens<<<256, MOE_THREADS, 0, m->stream>>>(*a, (uint16_t *)(void *)a->x);
    CU(cudaGetLastError());
    CU(cudaStreamSynchronize(m->stream));
}

static void teardown_run(moe_t *m)
{
    moe_args_t *a = &m->a;
    DU(duet_free(m->comm, a->rcount));
    DU(duet_free(m->comm, a->scount));
    DU(duet_free(m->comm, a->csig));
    DU(duet_free(m->comm, a->dsig));
    const void *local[] = {a->sent, a->got, a->done, a->wake, a->status, m->bad};
    for (size_t i = 0; i < sizeof local / sizeof local[0]; i++) CU(cudaFree((void *)local[i]));
    for (int i = 0; i < 3; i++) CU(cudaEventDestroy(m->ev[i]));
    CU(cudaStreamDestroy(m->stream));
}

static void free_size(moe_t *m)
{
    moe_args_t *a = &m->a;
    CU(cudaStreamSynchronize(m->stream));
    DU(duet_free(m->comm, a->back));
    DU(duet_free(m->comm, a->inbox));
    DU(duet_free(m->comm, a->ret));
    DU(duet_free(m->comm, a->recv));
    DU(duet_free(m->comm, a->send));
    const void *local[] = {a->x, a->route, a->weight, a->slot, a->out_a, a->out_b};
    for (size_t i = 0; i < sizeof local / sizeof local[0]; i++) CU(cudaFree((void *)local[i]));
    free(m->route), free(m->weight);
}

/* Before a round: what either way writes, poisoned with different bytes for (a) and (b). Nobody
 * writes these buffers now: my last round's kernels ended, and they waited for every peer's
 * last write into my inbox and back (the signals). Synchronized, so that the barrier after
 * this comes after the poison. */
static void poison(moe_t *m)
{
    moe_args_t *a = &m->a;
    size_t region = (size_t)m->n * a->cap * a->rec, out = (size_t)m->T * a->row;
    CU(cudaMemsetAsync(a->recv, 0xa5, region, m->stream));
    CU(cudaMemsetAsync(a->ret, 0xa5, region, m->stream));
    CU(cudaMemsetAsync(a->out_a, 0xa5, out, m->stream));
    CU(cudaMemsetAsync(a->inbox, 0x5a, region, m->stream));
    CU(cudaMemsetAsync(a->back, 0x5a, (size_t)m->n * a->cap * a->row, m->stream));
    CU(cudaMemsetAsync(a->out_b, 0x5a, out, m->stream));
    CU(cudaStreamSynchronize(m->stream));
}

/* ---- the two ways, enqueued on the stream */
#define LAUNCH(kernel) kernel<<<m->blocks, MOE_THREADS, 0, m->stream>>>(m->a)

static void dispatch_alltoall(moe_t *m)
{
    LAUNCH(a2a_pack);
    CU(cudaGetLastError());
    DU(duet_alltoall(m->a.scount, m->a.rcount, 1, DUET_INT32, m->comm, m->stream));
    DU(duet_alltoall(m->a.send, m->a.recv, (size_t)m->a.cap * m->a.rec, DUET_UINT8, m->comm, m->stream));
}

static void combine_alltoall(moe_t *m)
{
    LAUNCH(a2a_experts);
    CU(cudaGetLastError());
    DU(duet_alltoall(m->a.send, m->a.ret, (size_t)m->a.cap * m->a.rec, DUET_UINT8, m->comm, m->stream));
    LAUNCH(a2a_combine);
    CU(cudaGetLastError());
}

static void dispatch_put(moe_t *m)
{
    LAUNCH(put_dispatch);
    CU(cudaGetLastError());
}

static void combine_put(moe_t *m)
{
    LAUNCH(put_combine);
    CU(cudaGetLastError());
}

/* One round of one way, between events: dispatch, then combine. Adds the microseconds of each
 * to t[0], t[1]. A kernel's failure (a wait stopped by the abort word, a protocol error) ends
 * the program. */
static void timed_round(moe_t *m, void (*dispatch)(moe_t *), void (*combine)(moe_t *), double *t)
{
    CU(cudaEventRecord(m->ev[0], m->stream));
    dispatch(m);
    CU(cudaEventRecord(m->ev[1], m->stream));
    combine(m);
    CU(cudaEventRecord(m->ev[2], m->stream));
    CU(cudaStreamSynchronize(m->stream));
    int st = 0;
    CU(cudaMemcpy(&st, m->a.status, sizeof st, cudaMemcpyDeviceToHost));
    if (st == MOE_ERR_PROTOCOL) die("a signal or slot of the put way was not what the protocol says (a bug)");
    if (st) die("a wait in a kernel stopped: %s", duet_status_str((duet_status_t)st));
    for (int i = 0; i < 2; i++) {
        float ms = 0;
        CU(cudaEventElapsedTime(&ms, m->ev[i], m->ev[i + 1]));
        t[i] += 1e3 * (double)ms;
    }
}

/* ---- checks */
static uint16_t bf16_round(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    u += 0x7fffu + ((u >> 16) & 1u); /* to nearest, ties to even (no NaN or overflow here) */
    return (uint16_t)(u >> 16);
}

static float bf16_value(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Values of token t's output (from (b); (a)'s is compared with it on the device) that differ
 * from the host's computation of it. */
static long check_token(const moe_t *m, int t)
{
    uint16_t *got = (uint16_t *)malloc(m->a.row);
    if (!got) die("out of host memory");
    CU(cudaMemcpy(got, m->a.out_b + (size_t)t * m->a.row, m->a.row, cudaMemcpyDeviceToHost));
    long wrong = 0;
    for (int i = 0; i < m->hidden; i++) {
        float x = bf16_value(bf16_round(x_value(m->me, t, i))), acc = 0;
        for (int k = 0; k < m->topk; k++) {
            int e = m->route[t * m->topk + k];
            float y = bf16_value(bf16_round(fmaf(x, 1.0f + (float)e / 64.0f, (float)e / 128.0f)));
            acc = fmaf(m->weight[t * m->topk + k], y, acc);
        }
        wrong += bf16_round(acc) != got[i];
    }
    free(got);
    return wrong;
}

/* Counts of (a) and (b) against the routing's: 0 or the number of wrong ones. */
static int check_counts(const moe_t *m)
{
    size_t n = (size_t)m->n;
    int *h = (int *)malloc(4 * n * sizeof(int)), wrong = 0;
    if (!h) die("out of host memory");
    CU(cudaMemcpy(h, m->a.scount, n * sizeof(int), cudaMemcpyDeviceToHost));
    CU(cudaMemcpy(h + n, m->a.rcount, n * sizeof(int), cudaMemcpyDeviceToHost));
    CU(cudaMemcpy(h + 2 * n, m->a.sent, n * sizeof(int), cudaMemcpyDeviceToHost));
    CU(cudaMemcpy(h + 3 * n, m->a.got, n * sizeof(int), cudaMemcpyDeviceToHost));
    for (int q = 0; q < m->n; q++) {
        int to = m->count[m->me * m->n + q], from = m->count[q * m->n + m->me];
        wrong += (h[q] != to) + (h[n + q] != from) + (h[2 * n + q] != to) + (h[3 * n + q] != from);
    }
    free(h);
    return wrong;
}

/* Every check of the last round of this size; 1 when all passed on this rank. */
static int check_size(moe_t *m)
{
    moe_args_t *a = &m->a;
    int bad_counts = check_counts(m);
    CU(cudaMemset(m->bad, 0, 2 * sizeof(unsigned long long)));
    for (int s = 0; s < m->n; s++) { /* region s: what s sent me, in both ways */
        size_t off = (size_t)s * a->cap * a->rec, words = (size_t)m->count[s * m->n + m->me] * a->rec / 16;
        if (words) count_diff<<<128, MOE_THREADS, 0, m->stream>>>((const uint4 *)(a->recv + off), (const uint4 *)(a->inbox + off), words, &m->bad[0]);
    }
    count_diff<<<256, MOE_THREADS, 0, m->stream>>>((const uint4 *)a->out_a, (const uint4 *)a->out_b, (size_t)m->T * a->row / 16, &m->bad[1]);
    CU(cudaGetLastError());
    unsigned long long bad[2];
    CU(cudaMemcpy(bad, m->bad, sizeof bad, cudaMemcpyDeviceToHost));
    long bad_ref = 0;
    int step = (m->T + 63) / 64; /* every step-th token (at most 64) and the last */
    for (int t = 0; t < m->T; t += step) bad_ref += check_token(m, t);
    if ((m->T - 1) % step) bad_ref += check_token(m, m->T - 1);
    if (bad_counts || bad[0] || bad[1] || bad_ref)
        fprintf(stderr, "%s: rank %d: %d tokens: %d counts wrong, %llu words of received copies and %llu of outputs "
                        "differ between the ways, %ld values differ from the host's\n", PROG, m->me, m->T, bad_counts,
                bad[0], bad[1], bad_ref);
    return !bad_counts && !bad[0] && !bad[1] && !bad_ref;
}

/* ---- the table */
static void print_header(const moe_t *m, int dev, int iters)
{
    cudaDeviceProp prop;
    CU(cudaGetDeviceProperties(&prop, dev));
    printf("%s: %d ranks, %d per GPU (%s), %d experts each, top-%d, hidden %d (bf16), %d rounds per size, "
           "kernels of %d blocks\n", PROG, m->n, m->share, prop.name, m->per_rank, m->topk, m->hidden, iters,
           m->blocks);
    printf("%7s %-9s %12s %12s %12s %10s %10s %10s %10s  %s\n", "tokens", "way", "dispatch us", "combine us",
           "total us", "disp GB/s", "comb GB/s", "MB moved", "x faster", "same output");
    fflush(stdout);
}

/* t: the slowest rank's mean microseconds, {dispatch, combine} of (a), then of (b). GB/s: the
 * copies' bytes (records) one rank sends in that phase, per second. */
static void print_rows(const moe_t *m, const double *t, int same)
{
    double rec = (double)m->a.rec, bytes = (double)m->T * m->topk * rec;
    double mb[2] = {2.0 * m->n * m->a.cap * rec / 1e6, 2.0 * bytes / 1e6};
    const char *way[2] = {"alltoall", "put"};
    for (int w = 0; w < 2; w++) {
        const double *d = t + 2 * w;
        char ratio[32] = "";
        if (w == 1) snprintf(ratio, sizeof ratio, "%.2f", (t[0] + t[1]) / (t[2] + t[3]));
        printf("%7d %-9s %12.1f %12.1f %12.1f %10.1f %10.1f %10.1f %10s  %s\n", m->T, way[w], d[0], d[1], d[0] + d[1],
               bytes / d[0] / 1e3, bytes / d[1] / 1e3, mb[w], ratio, same ? "yes" : "NO");
    }
    fflush(stdout);
}

/* One size: warm-up round and `iters` timed ones, each way, the checks, a table row per way.
 * Returns 1 when every check passed on every rank. */
static int run_size(moe_t *m, int T)
{
    setup_size(m, T);
    double t[4] = {0, 0, 0, 0};
    for (int it = 0; it <= m->iters; it++) { /* round 0 warms up */
        double d[4] = {0, 0, 0, 0};
        poison(m);
        DU(duet_barrier(m->comm));
        timed_round(m, dispatch_alltoall, combine_alltoall, d);
        DU(duet_barrier(m->comm));
        m->a.round++;
        timed_round(m, dispatch_put, combine_put, d + 2);
        if (it > 0)
            for (int i = 0; i < 4; i++) t[i] += d[i];
    }
    int same = check_size(m), all_same = 0;
    double mine[4], slowest[4];
    for (int i = 0; i < 4; i++) mine[i] = t[i] / m->iters;
    DU(duet_allreduce(mine, slowest, 4, DUET_FLOAT64, DUET_MAX, m->comm, NULL));
    DU(duet_allreduce(&same, &all_same, 1, DUET_INT32, DUET_MIN, m->comm, NULL));
    if (m->me == 0) print_rows(m, slowest, all_same);
    free_size(m);
    return all_same;
}

static void usage(void)
{
    fprintf(stderr, "usage: duetrun -n P %s [-t \"128 512 2048 8192\"] [-h HIDDEN] [-k TOPK] [-x EXPERTS_PER_RANK] "
                    "[-i ITERS] [-b BLOCKS]\n", PROG);
    exit(2);
}

int main(int argc, char **argv)
{
    const char *tokens = "128 512 2048 8192";
    moe_t m;
    memset(&m, 0, sizeof m);
    m.hidden = 7168, m.topk = 8, m.per_rank = 8, m.iters = 20;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-t") && i + 1 < argc) tokens = argv[++i];
        else if (!strcmp(argv[i], "-h") && i + 1 < argc) m.hidden = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-k") && i + 1 < argc) m.topk = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-x") && i + 1 < argc) m.per_rank = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-i") && i + 1 < argc) m.iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-b") && i + 1 < argc) m.force_blocks = atoi(argv[++i]);
        else usage();
    }
    DU(duet_init());
    m.comm = duet_comm_world(), m.me = duet_my_pe(), m.n = duet_n_pes();
    if (m.hidden < 1 || m.topk < 1 || m.per_rank < 1 || m.topk > m.n * m.per_rank || m.iters < 1 ||
        m.force_blocks < 0 || m.n > MOE_MAX_RANKS) {
        if (m.me == 0)
            fprintf(stderr, "%s: need HIDDEN, TOPK, EXPERTS_PER_RANK, ITERS >= 1, TOPK <= experts, BLOCKS >= 0 and "
                            "at most %d ranks\n", PROG, MOE_MAX_RANKS);
        duet_finalize();
        return 2;
    }
    int dev = duet_cuda_device(m.comm);
    if (!duet_cuda_available() || dev < 0) die("no GPU heap: every rank needs a GPU (and DUET_CUDA not off)");
    CU(cudaSetDevice(dev));
    DU(duet_device_comm_get(m.comm, &m.a.h));
    moe_args_t *a = &m.a;
    a->me = m.me, a->n = m.n, a->topk = m.topk, a->per_rank = m.per_rank, a->hidden = m.hidden;
    a->row = ((size_t)m.hidden * 2 + 15) / 16 * 16;
    a->rec = MOE_HDR + a->row;
    a->packs = (int)(a->row / 16);
    m.count = (int *)malloc(sizeof(int) * (size_t)m.n * m.n);
    if (!m.count) die("out of host memory");
    m.share = ranks_on_my_gpu(&m, dev);
    m.max_blocks = fitting_blocks(&m, dev);
    m.blocks = blocks_for(&m);
    setup_run(&m);
    if (m.me == 0) print_header(&m, dev, m.iters);

    int ok = 1;
    for (const char *s = tokens; *s;) {
        char *end;
        long T = strtol(s, &end, 10);
        if (end == s) break;
        s = end;
        while (*s == ' ' || *s == ',') s++;
        if (T < 1 || T > (1 << 20)) die("%ld tokens: give 1 to %d", T, 1 << 20);
        ok &= run_size(&m, (int)T);
    }
    teardown_run(&m);
    free(m.count);
    duet_finalize();
    return ok ? 0 : 1;
}
