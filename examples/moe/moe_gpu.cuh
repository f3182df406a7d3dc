/* moe_gpu.cuh — the device side that both ways of moe_gpu.cu share, so that they compute the
 * same bits: the kernels' argument block, bf16 packs, the expert and the weighted sum, the slots
 * (a prefix count of the routing, made on the device), and the put way's block-level
 * synchronisation (the last block of a grid, signals that carry a round and a count).
 *
 * Layout. A row is one token's hidden bf16 values, zero-padded to a multiple of 16 bytes
 * (`packs` packs of 8 values). A record is a 16-byte header (moe_hdr_t) and a row. The padded
 * buffers of both ways are n regions of `cap` records, one per peer: region s of a receiver
 * holds, in copy order, what rank s sent it (slot j of the region is the j-th copy from s to
 * the receiver, counting in the order copy c = token * topk + k). The alltoall's receive buffer
 * and the put way's inbox therefore hold the same bytes in the same places.
 */
#ifndef MOE_GPU_CUH
#define MOE_GPU_CUH

#include <stdint.h>
#include <cuda_bf16.h>
#include <duet/duet_device.cuh>

enum {
    MOE_THREADS = 256,             /* threads of every block */
    MOE_WARPS = MOE_THREADS / 32,  /* warps of a block: one copy each at a time */
    MOE_MAX_RANKS = 128,           /* the slots' counters in shared memory */
    MOE_HDR = 16,                  /* bytes of a record's header */
    MOE_ERR_PROTOCOL = -100,       /* kernels' status: a signal of another round or count, a
                                    * slot past cap (a bug of this program, never the library's) */
    MOE_WAKE_STRIDE = 16           /* u64 words between two blocks' wake words: one 128-byte L2
                                    * line each, so that no line is polled by more than one block */
};

/* A wake word's value when the combine's waiter failed (the low bits still hold the round). */
#define MOE_WAKE_FAILED (1ull << 63)

/* A copy's header, in front of its row (moe.c's hdr_t); moved as one 16-byte word. */
typedef struct __align__(16) {
    int32_t src, token, k, expert;
} moe_hdr_t;

/* What every kernel gets, by value. Symmetric buffers (duet_malloc_device) are marked (sym);
 * the others are this rank's device memory. */
typedef struct {
    duet_device_comm_t h;
    int me, n, T, topk, per_rank, hidden;
    int packs, cap;          /* 16-byte packs of a row; records of a region */
    size_t row, rec;         /* bytes of a row; of a record (MOE_HDR + row) */
    uint64_t round;          /* the put way: this round's number (1, 2, ...), carried by signals */
    /* the tokens and their routing */
    const char *x;           /* [T][row] my tokens */
    const int *route;        /* [T][topk] expert of each copy */
    const float *weight;     /* [T][topk] */
    int *slot;               /* [T][topk] slot of each copy in its region at the destination */
    int *status;             /* the first failure (a wait's status or MOE_ERR_PROTOCOL), or 0 */
    /* (a) alltoall */
    char *send, *recv, *ret; /* (sym) [n][cap] records: packed copies; received; results back */
    int *scount, *rcount;    /* (sym) [n] copies I send to / receive from each rank */
    char *out_a;             /* [T][row] */
    /* (b) put */
    char *inbox;             /* (sym) [n][cap] records: region s is written by rank s */
    char *back;              /* (sym) [n][cap] rows: region d holds what rank d's experts made of my
                              * copies, slot j the result of my j-th copy to d (the inbox's places
                              * at d, without headers: every expert rank writes one dense run) */
    uint64_t *dsig, *csig;   /* (sym) [n]: word s set by rank s to (round << 32) | count, in
                              * dispatch (copies s sent me) and combine (results s sent me) */
    int *sent, *got;         /* [n] copies I sent to / got from each rank */
    unsigned *done;          /* [2] blocks finished, dispatch and combine (0 between launches) */
    uint64_t *wake;          /* [blocks][MOE_WAKE_STRIDE]: word 0 of line b is set by the combine's
                              * last block to the round once every signal of it came (never reset) */
    char *out_b;             /* [T][row] */
} moe_args_t;

namespace moe {

static __device__ __forceinline__ int lane() { return (int)(threadIdx.x & 31); }
static __device__ __forceinline__ int warp() { return (int)(threadIdx.x >> 5); }
static __device__ __forceinline__ unsigned grid_thread() { return blockIdx.x * blockDim.x + threadIdx.x; }
static __device__ __forceinline__ unsigned grid_threads() { return gridDim.x * blockDim.x; }

static __device__ void report(const moe_args_t &a, int status) { atomicCAS(a.status, 0, status); }

/* ---- bf16 packs: 8 values in 16 bytes, low half of each word first. Widening is exact;
 * narrowing rounds to nearest even (the host's check does the same). */
static __device__ __forceinline__ void unpack8(uint4 p, float v[8])
{
    const uint32_t w[4] = {p.x, p.y, p.z, p.w};
#pragma unroll
    for (int i = 0; i < 4; i++) {
        v[2 * i] = __uint_as_float(w[i] << 16);
        v[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
    }
}
static __device__ __forceinline__ uint4 pack8(const float v[8])
{
    uint32_t w[4];
#pragma unroll
    for (int i = 0; i < 4; i++) {
        __nv_bfloat162 b = __floats2bfloat162_rn(v[2 * i], v[2 * i + 1]); /* .x: low half */
        w[i] = (uint32_t)__bfloat16_as_ushort(b.x) | (uint32_t)__bfloat16_as_ushort(b.y) << 16;
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
}

/* Expert e on 8 values: y = x * scale_e + bias_e in one rounding (fma), as moe.c's expert. */
static __device__ __forceinline__ uint4 expert_pack(uint4 x, int e)
{
    const float scale = 1.0f + (float)e / 64.0f, bias = (float)e / 128.0f;
    float v[8];
    unpack8(x, v);
#pragma unroll
    for (int i = 0; i < 8; i++) v[i] = __fmaf_rn(v[i], scale, bias);
    return pack8(v);
}

/* Pack p of token t's output: the sum over k = 0, 1, ... of weight * result k, fma by fma, in
 * float32, rounded once. rows(t, k) says where result k of token t lies: the only difference
 * between the two ways' combine. */
template <class Rows>
static __device__ __forceinline__ uint4 weighted_pack(const moe_args_t &a, const Rows &rows, int t, int p)
{
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
#pragma unroll 8
    for (int k = 0; k < a.topk; k++) { /* unrolled: the loads go out together */
        const float w = a.weight[t * a.topk + k];
        float v[8];
        unpack8(rows(t, k)[p], v);
#pragma unroll
        for (int i = 0; i < 8; i++) acc[i] = __fmaf_rn(w, v[i], acc[i]);
    }
    return pack8(acc);
}

/* Every output pack of my tokens, spread over the grid. */
template <class Rows> static __device__ void weighted_sums(const moe_args_t &a, const Rows &rows, char *out)
{
    const unsigned items = (unsigned)a.T * (unsigned)a.packs;
    for (unsigned i = grid_thread(); i < items; i += grid_threads()) {
        int t = (int)(i / (unsigned)a.packs), p = (int)(i % (unsigned)a.packs);
        ((uint4 *)(out + (size_t)t * a.row))[p] = weighted_pack(a, rows, t, p);
    }
}

/* (a)'s experts: every pack of every received copy (count[s] records in region s of box)
 * through its expert, spread over the grid as one flat range of packs; store(s, j, header, p, y) puts the result where it goes. Each thread
 * loads U packs before it stores any (the compiler cannot move loads past a store that may
 * alias them), so U loads per thread are in flight at once. */
template <class Store>
static __device__ void experts(const moe_args_t &a, const char *box, const int *count, const Store &store)
{
    enum { U = 4 };
    const unsigned packs = (unsigned)a.packs, cap = (unsigned)a.cap, stride = grid_threads();
    const unsigned items = (unsigned)a.n * cap * packs;
    for (unsigned base = grid_thread(); base < items; base += U * stride) {
        moe_hdr_t hd[U];
        uint4 x[U];
        unsigned where[U]; /* s, j, p of the item, or ~0u: none (past the end, or padding) */
#pragma unroll
        for (int u = 0; u < U; u++) {
            unsigned i = base + u * stride, r = i / packs, s = r / cap;
            where[u] = i < items && (int)(r % cap) < count[s] ? i : ~0u;
            if (where[u] == ~0u) continue;
            const char *rec = box + (size_t)r * a.rec;
            hd[u] = *(const moe_hdr_t *)rec;
            x[u] = ((const uint4 *)(rec + MOE_HDR))[i % packs];
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            if (where[u] == ~0u) continue;
            unsigned r = where[u] / packs;
            store((int)(r / cap), (int)(r % cap), hd[u], (int)(where[u] % packs), expert_pack(x[u], hd[u].expert));
        }
    }
}

/* The put way's experts: every received copy (count[s] records in region s of box) through its
 * expert, a warp per record. Lane l takes packs l, l + 32, ... of the row, U at a time (all U
 * loads out before any store: U packs in flight per lane), and store(s, j, p, y) puts pack p of
 * the result of slot j of region s where it goes; a warp's stores cover 512 contiguous bytes.
 * Warp w of the grid takes records w, w + W, ...: the grid sweeps the regions as one dense
 * window. Region order starts after mine (rank me + 1 first), so that the ranks sharing a GPU
 * do not all write to the same home at once. No division per pack, one header load per row. */
template <class Store>
static __device__ void expert_rows(const moe_args_t &a, const char *box, const int *count, const Store &store)
{
    enum { U = 7 }; /* 896 packs (hidden 7168) = 4 rounds of 7 x 32 */
    const unsigned W = gridDim.x * MOE_WARPS, records = (unsigned)a.n * (unsigned)a.cap;
    for (unsigned r = blockIdx.x * MOE_WARPS + (unsigned)warp(); r < records; r += W) { /* warp-uniform */
        int i = (int)(r / (unsigned)a.cap), j = (int)(r % (unsigned)a.cap), s = (a.me + 1 + i) % a.n;
        if (j >= count[s]) continue; /* padding */
        const char *rec = box + ((size_t)s * a.cap + j) * a.rec;
        const int e = ((const moe_hdr_t *)rec)->expert;
        const uint4 *in = (const uint4 *)(rec + MOE_HDR);
        for (int p0 = lane(); p0 < a.packs; p0 += U * 32) {
            uint4 x[U];
#pragma unroll
            for (int u = 0; u < U; u++)
                if (p0 + u * 32 < a.packs) x[u] = in[p0 + u * 32];
#pragma unroll
            for (int u = 0; u < U; u++)
                if (p0 + u * 32 < a.packs) store(s, j, p0 + u * 32, expert_pack(x[u], e));
        }
    }
}

/* ---- slots */

/* This block's copies [lo, hi): the copies cut into gridDim.x chunks, in order. */
static __device__ __forceinline__ void chunk_range(int total, int *lo, int *hi)
{
    int per = (total + (int)gridDim.x - 1) / (int)gridDim.x;
    long l = (long)blockIdx.x * per, h = l + per;
    *lo = (int)(l < total ? l : total);
    *hi = (int)(h < total ? h : total);
}

static __device__ __forceinline__ int dest_of(const moe_args_t &a, int c) { return a.route[c] / a.per_rank; }

/* cnt[d] += copies in [lo, hi) that go to rank d. The whole block; each thread loads U entries
 * before it counts any (U loads in flight: the last blocks of a large T scan 10^5 entries),
 * lanes with the same rank add together (one shared atomic per rank, warp and entry). */
static __device__ void count_dests(const moe_args_t &a, int lo, int hi, int *cnt)
{
    enum { U = 8 };
    for (int base = lo + warp() * 32; base < hi; base += U * MOE_THREADS) { /* warp-uniform */
        int d[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            int c = base + u * MOE_THREADS + lane();
            d[u] = c < hi ? dest_of(a, c) : -1;
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            unsigned same = __match_any_sync(0xffffffffu, d[u]);
            if (d[u] >= 0 && lane() == __ffs(same) - 1) atomicAdd(&cnt[d[u]], __popc(same));
        }
    }
}

/* slot[c] for the block's chunk [lo, hi): how many copies before c (in copy order) go to the
 * same rank. The block counts what the chunks before it send to each rank (every block redoes
 * that count, which keeps the blocks independent: no grid-wide sync), then warp 0 walks the
 * chunk 32 copies at a time. run[] (shared, n ints) ends as the counts of copies [0, hi); the
 * block whose chunk ends the copies writes them, my totals, to totals[]. A slot past cap is a
 * bug (cap is the largest count of any pair): reported, and the caller skips that copy.
 * Contains __syncthreads. */
static __device__ void block_slots(const moe_args_t &a, int lo, int hi, int *run, int *totals)
{
    for (int d = (int)threadIdx.x; d < a.n; d += (int)blockDim.x) run[d] = 0;
    __syncthreads();
    count_dests(a, 0, lo, run);
    __syncthreads();
    if (warp() == 0) {
        for (int base = lo; base < hi; base += 32) {
            int c = base + lane(), d = c < hi ? dest_of(a, c) : -1;
            unsigned same = __match_any_sync(0xffffffffu, d);
            int s = d >= 0 ? run[d] + __popc(same & ((1u << lane()) - 1u)) : 0;
            __syncwarp();
            if (d >= 0) {
                a.slot[c] = s;
                if (s >= a.cap) report(a, MOE_ERR_PROTOCOL);
                if (lane() == 31 - __clz(same)) run[d] = s + 1; /* the group's last lane */
            }
            __syncwarp();
        }
    }
    __syncthreads();
    if (lo < hi && hi == a.T * a.topk)
        for (int d = (int)threadIdx.x; d < a.n; d += (int)blockDim.x) totals[d] = run[d];
}

/* ---- the put way's synchronisation */

/* True on every thread of the block that is the last of the grid to get here. Each block's
 * thread 0 fences (system scope) after the block's accesses, remote stores included, before it
 * counts itself; the last one fences again after seeing the count, so whatever its threads do
 * next (a signal: release) comes after every block's stores. The count goes back to 0 for the
 * next launch (no block touches it again in this one). Contains __syncthreads. */
static __device__ bool last_block(unsigned *done)
{
    __shared__ int last;
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence_system();
        last = atomicAdd(done, 1u) == gridDim.x - 1;
        if (last) atomicExch(done, 0u);
        __threadfence_system();
    }
    __syncthreads();
    return last;
}

/* Thread q < n: sets my word of sig on rank q to (round << 32) | count[q], after a fence (a
 * release: the data before it is visible to whoever sees the value). Epoch-valued: nothing is
 * ever reset, a word only grows, and the round in it says which round's count it is. count[]
 * may have been written by another block of this grid (read past L1). */
static __device__ void signal_counts(const moe_args_t &a, uint64_t *sig, const int *count)
{
    for (int q = (int)threadIdx.x; q < a.n; q += (int)blockDim.x) {
        uint64_t v = a.round << 32 | (uint32_t)__ldcg(count + q);
        duet_dev_fence(a.h);
        duet_dev_signal_op(a.h, sig + a.me, v, DUET_SIGNAL_SET, q);
    }
}

/* Thread q < n: waits until my word sig[q] holds this round (acquire); its count goes to
 * got[q] (when got) and must equal want[q] (when want). A word of a later round cannot come
 * (rank q's next signal waits for this round's end here: moe_gpu.cu says why), so anything but
 * this round is a bug. Returns 1 on every thread of the block when all went well, after a
 * __syncthreads that makes the peers' data visible to every thread. */
static __device__ bool wait_counts(const moe_args_t &a, const uint64_t *sig, int *got, const int *want)
{
    int st = 0;
    for (int q = (int)threadIdx.x; q < a.n; q += (int)blockDim.x) {
        uint64_t v = 0;
        int s = duet_dev_signal_wait_until(a.h, sig + q, DUET_CMP_GE, a.round << 32, &v);
        int count = (int)(uint32_t)v;
        if (s == DUET_OK && ((v >> 32) != a.round || (want && count != want[q]))) s = MOE_ERR_PROTOCOL;
        if (s == DUET_OK && got) got[q] = count;
        if (s != DUET_OK) st = s;
    }
    if (st) report(a, st);
    return !__syncthreads_or(st != 0);
}

/* The combine's wake-up. Only the last block waits for the signals (n threads, one per word,
 * wait_counts); it then wakes every block of the grid through that block's own wake word, one
 * 128-byte line each, and each other block's thread 0 polls only its own word. So a signal word
 * (in this GPU's L2, written by a peer, possibly over NVLink) has one poller, not one per block,
 * and no L2 line has more than one: hundreds of warps spinning on one line saturate the L2 slice
 * that holds it, and every access that maps to that slice (a share of every row the other blocks
 * and the peers are still moving) queues behind the polls (README, "On the GPU"). Only the
 * waiter reads the abort word (in host memory); a failure reaches the others as
 * MOE_WAKE_FAILED. Ordering: the peers' stores -> their release of the signal -> the waiter's
 * acquire -> __syncthreads -> release of the wake words (gpu scope: waker and pollers are blocks
 * of one grid) -> a poller's acquire -> __syncthreads -> its block's reads: each step is
 * cumulative, so every block sees the peers' results. */
static __device__ __forceinline__ void st_release_gpu(uint64_t *p, uint64_t v)
{
    asm volatile("st.release.gpu.global.b64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
static __device__ __forceinline__ uint64_t ld_acquire_gpu(const uint64_t *p)
{
    uint64_t v;
    asm volatile("ld.acquire.gpu.global.b64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

/* The last block, every thread, after wait_counts: every block's wake word := round (ok) or
 * round | MOE_WAKE_FAILED. */
static __device__ void wake_all(const moe_args_t &a, bool ok)
{
    const uint64_t v = ok ? a.round : a.round | MOE_WAKE_FAILED;
    for (unsigned b = threadIdx.x; b < gridDim.x; b += blockDim.x)
        st_release_gpu(a.wake + (size_t)b * MOE_WAKE_STRIDE, v);
}

/* Every other block: thread 0 polls the block's wake word until it holds this round (an older
 * round is the last launch's; a later one cannot be there yet: the next launch's waiter has not
 * run). Returns true on every thread of the block when the waiter saw every signal, after a
 * __syncthreads that makes the peers' data visible to every thread. */
static __device__ bool wait_woken(const moe_args_t &a)
{
    __shared__ int ok;
    if (threadIdx.x == 0) {
        const uint64_t *w = a.wake + (size_t)blockIdx.x * MOE_WAKE_STRIDE;
        uint64_t v;
        while (((v = ld_acquire_gpu(w)) & ~MOE_WAKE_FAILED) < a.round) {
        }
        ok = v == a.round;
        if ((v & ~MOE_WAKE_FAILED) != a.round) report(a, MOE_ERR_PROTOCOL);
    }
    __syncthreads();
    return ok;
}

} /* namespace moe */

#endif /* MOE_GPU_CUH */
