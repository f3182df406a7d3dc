/* stencil_gpu.cu — stencil.c on the GPU: the same 2-D star stencil (Jacobi iterations, float64,
 * blocks of whole rows, one per rank, R halo rows above and below), with both grids in the GPU
 * symmetric heap (duet_malloc_device) and the halos moved three ways, all on one stream:
 *
 *   duetrun -n 2 stencil_gpu [-n N] [-r R] [-i ITERS] [-m sendrecv|put|device|compute|all]
 *                               [-e EDGE_BLOCKS] [-t] [--no-verify]
 *
 *   sendrecv  duet_send / duet_recv of device buffers on the stream, then the compute kernel
 *             (two-sided: the library's executor kernels carry the rows through its inboxes);
 *   put       host-initiated one-sided, stream-ordered: duet_put_on_stream of my edge rows into
 *             the neighbours' halos, duet_signal_op_on_stream, duet_signal_wait_until_on_stream
 *             for my own two halos, then the compute kernel;
 *   device    device-initiated: one kernel per iteration. Its first blocks, the edge blocks, each
 *             take one chunk of my R top or R bottom rows: wait for that halo
 *             (duet_dev_signal_wait_until), compute the chunk and store every point both into my
 *             grid and straight into the neighbour's facing halo (duet_dev_p), then fence and add
 *             1 to the neighbour's signal (duet_dev_fence, duet_dev_signal_op); all the other
 *             blocks compute the interior at the same time, which reads no halo and never waits.
 *             The communication hides behind the interior, and an iteration costs one kernel
 *             launch instead of `put`'s compute kernel plus up to six stream operations (two
 *             copies, two signal kernels, two wait kernels).
 *
 *     kernel it on rank r (src = g[(it-1) & 1], dst = g[it & 1]; E = eblocks chunks per edge):
 *       block 2c     wait sig[0] >= it*E | chunk c of my top R rows    | -> r-1's bottom halo, its sig[1] += 1
 *       block 2c+1   wait sig[1] >= it*E | chunk c of my bottom R rows | -> r+1's top halo,    its sig[0] += 1
 *       blocks 2E..  the interior rows [R, rows - R): no halo, no waiting
 *
 *   -e EDGE_BLOCKS: chunks per edge (default: one point per thread, 256 points a chunk: 32 at
 *   N 4096, R 2); -e 1 computes and sends each edge with one block (the first version's layout: a
 *   serial path of R x N / 256 rounds, 32 at N 4096, R 2, that the kernel's end waits for).
 *   -t: the interior blocks read the clock too (the timeline line of `device`; a little extra work).
 *
 * Why the edge rows go in chunks: one block per edge (the first version) does R x N points and a
 * 64 KiB put one round at a time while the interior saturates the memory system (each round waits
 * a loaded-memory latency of microseconds), and the next kernel cannot start before it: on the
 * H200 at N 4096 the first version lost about 25 us per iteration to the compute-only run
 * (README.md, "On the GPU"). A chunk per block makes the edge a single round that finishes among
 * the first wave of the interior. The points go to the
 * neighbour as they are computed (no second pass to copy them), and the kernel keeps k_sweep's
 * register count (32: 8 blocks of 256 per SM), which the first version, with the copy engine of
 * duet_dev_put_signal_block inlined, had raised to 60 (4 blocks per SM) for the interior too.
 *
 * The signal protocol of `device` (sig[0]: my top halo, sig[1]: my bottom halo; grids g0, g1;
 * iteration it reads g[(it-1) & 1] and writes g[it & 1]). Each of a neighbour's E edge blocks on
 * my side adds 1 to my sig[side] in every kernel but its last (kernel 0, the prologue, only sends
 * its initial rows); a block adds only after it
 *   (a) stored its chunk of the edge rows after it iterations into my halo of g[it & 1] (kernel
 *       it), released by its fence, and
 *   (b) finished reading its own halo on my side of g[(it-1) & 1] (the src of kernel it; the same
 *       block reads that part of the halo, computes its chunk and sends it).
 * A kernel starts only after the previous one has finished, so all E adds of the neighbour's
 * kernel v come after all E of its kernel v-1: sig[side] >= it*E means every block of its
 * kernels 0 .. it-1 has added (the count is exact, not just "some"); and the acquire that reads
 * it synchronizes with all of their releases (later adds are read-modify-writes: they continue
 * each release sequence). My kernel it waits for sig[side] >= it*E: by (a) my halo of
 * g[(it-1) & 1] is there to read; by (b) I may overwrite the neighbour's halo of g[it & 1] (the src
 * of its kernel it-1, whose edge blocks all added; it reads that halo next in its kernel it+1,
 * after my E adds of kernel it). So two grids suffice, signals only grow (never reset within a
 * run), and the last kernel sends nothing (nobody would read it). The interior blocks never touch
 * a halo: local rows [R, rows - R) read rows [0, rows) only (hence at least 2R rows per rank), and
 * nothing writes those during the kernel, so they use the read-only path. Rows are padded to 128
 * bytes (pitch), so no cache line holds a halo row and one of my rows.
 *
 * First a compute-only run: the same sweep, no halos (its result is not checked). Each method's
 * "halo" column is its time minus that run's: the communication the method does not hide.
 * Rank 0 runs the iterations on one rank (its GPU, a cudaMalloc'd grid), fetches every method's
 * result from every rank with duet_get and compares them bit for bit: the star sum runs in one
 * fixed order with explicit round-to-nearest adds (no contraction into FMAs), the order of
 * stencil.c, so a correct exchange gives the same bits (those of stencil.c on a CPU, too).
 * Prints, per method: time per iteration (the slowest rank's, CUDA events around the stream's
 * work), compute, halo, GFLOP/s (4R + 1 flops per interior point); after `device`, its layout, the
 * registers and resident blocks of both kernels, and its clock readings (explain_device). Exit
 * status 1 on any difference, on a failed wait (a kernel's wait returns the abort status) or on an
 * error.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime.h>
#include <duet/duet.h>
#include <duet/duet_cuda.h>
#include <duet/duet_device.cuh>

enum {
    TILE_W = 256,   /* threads per block; a tile is TILE_W columns ... */
    TILE_H = 8,     /* ... by TILE_H rows */
    ILP = 4,        /* points per thread whose loads are in flight together */
    WARMUP_ITERS = 3, /* untimed iterations of each method first (first-call set-up, module load) */
    PITCH_ALIGN = 16, /* doubles: 128 bytes, so no cache line holds both a halo row and one of my rows */
    EDGE_ALIGN = 32,  /* doubles: an edge chunk starts on a 256-byte boundary (a warp's 32 stores: 2 whole lines) */
    EDGE_ROUND = TILE_W /* points an edge block computes in one round (one per thread) */
};

/* `device`'s per-kernel clock readings (%globaltimer, ns), one record per kernel of a run:
 * [ST_EDGE0] the first edge block's start, [ST_WAITED] the last edge block's wait satisfied,
 * [ST_SENT] the last edge block's signal sent (or its rows written, for a kernel that sends nothing),
 * with -t also [ST_INT0] the first interior block's start and [ST_INT1] the last one's end. */
enum { ST_EDGE0, ST_WAITED, ST_SENT, ST_INT0, ST_INT1, ST_COUNT };

enum { M_COMPUTE, M_SENDRECV, M_PUT, M_DEVICE, M_COUNT };
static const char *const method_name[M_COUNT] = {"compute", "sendrecv", "put", "device"};

/* What the kernels know of the decomposition (passed by value). A grid's local layout: R halo
 * rows, my `rows` rows (global rows row0 ...), R halo rows; `pitch` elements per row. */
typedef struct {
    int n, r, me, np, row0, rows;
    int up_rows;  /* rank me-1's row count: its bottom halo starts at its row up_rows + R */
    size_t pitch; /* elements per row: n rounded up to PITCH_ALIGN (every row starts on a 128-byte line) */
    double w;     /* 1 / 4R, computed on the host as stencil.c computes it */
    /* `device`: each edge (R rows x pitch, contiguous) is cut into `eblocks` chunks of `echunk`
     * elements (the last one shorter), one block each; echunk is a multiple of EDGE_ALIGN */
    unsigned eblocks, echunk;
} geom_t;

typedef struct {
    geom_t g;
    int iters, verify;
    int edge_req, timeline;  /* -e (0: automatic), -t */
    duet_comm_t comm;
    duet_device_comm_t h;
    cudaStream_t s;
    cudaEvent_t t0, t1;
    double *grid[2];         /* symmetric (GPU heap): the neighbours put into their halos */
    uint64_t *sig;           /* symmetric: [0] my top halo's signal, [1] my bottom halo's */
    int *status;             /* device: the first failed wait of a `device` kernel (0: none) */
    unsigned long long *st;  /* device: `device`'s clock records, ST_COUNT per kernel (iters + 1 kernels) */
    double *ref, *whole;     /* rank 0, checking: the one-rank result; every rank's result */
    unsigned long long *cmp; /* rank 0, checking: [0] differing points, [1] the first one */
} ctx_t;

/* ---- errors: say what and where, exit 1 (duetrun stops the other ranks) */
static void fail(const char *what)
{
    fprintf(stderr, "stencil_gpu: rank %d: %s: %s\n", duet_my_pe(), what, duet_last_error());
    exit(1);
}

static void cuda_check(cudaError_t e, const char *what)
{
    if (e == cudaSuccess) return;
    fprintf(stderr, "stencil_gpu: rank %d: %s: %s\n", duet_my_pe(), what, cudaGetErrorString(e));
    exit(1);
}
#define CU(call) cuda_check((call), #call)

static int row0_of(const geom_t *g, int q) { return (int)((long)g->n * q / g->np); }
static int rows_of(const geom_t *g, int q) { return row0_of(g, q + 1) - row0_of(g, q); }

/* ------------------------------------------------------------------------------------
 * The sweep
 * ------------------------------------------------------------------------------------ */
__device__ __forceinline__ double initial(int i, int j) { return (double)((i * 31 + j * 17) % 101) / 101.0; }

/* A load of src: RO (rows nothing writes while the kernel runs) through the read-only path
 * (ld.global.nc, as the compiler makes of k_sweep's __restrict__ source), else a plain coherent
 * load (the halo rows of `device`, which arrive while its kernel runs). */
template <bool RO> __device__ __forceinline__ double load(const double *p)
{
    if constexpr (RO) return __ldg(p);
    else return *p;
}

/* The new value of local row li, column j: w x (the 4R star neighbours) summed in stencil.c's
 * order, each add rounded to nearest (no FMA can form); the frame (R rows and columns at the
 * border of the whole grid) keeps its value. */
template <bool RO> __device__ __forceinline__ double stencil_at(const geom_t &g, const double *src, int li, int j)
{
    const size_t p = g.pitch, c = (size_t)(li + g.r) * p + (size_t)j;
    const int gi = g.row0 + li;
    if (gi < g.r || gi >= g.n - g.r || j < g.r || j >= g.n - g.r) return load<RO>(src + c);
    double acc = 0;
    for (int k = 1; k <= g.r; k++) {
        acc = __dadd_rn(acc, load<RO>(src + c - (size_t)k * p));
        acc = __dadd_rn(acc, load<RO>(src + c + (size_t)k * p));
        acc = __dadd_rn(acc, load<RO>(src + c - (size_t)k));
        acc = __dadd_rn(acc, load<RO>(src + c + (size_t)k));
    }
    return __dmul_rn(acc, g.w);
}

/* Tile (tx, ty) of local rows [lo, hi): thread x takes column tx * TILE_W + x and TILE_H rows,
 * ILP rows at a time (their loads in flight together, then the stores). Every load through the
 * read-only path: callers sweep rows whose star never reaches a halo that is being written. */
__device__ __forceinline__ void sweep_tile(const geom_t &g, const double *src, double *dst, int lo, int hi,
                                           unsigned tx, unsigned ty)
{
    const int j = (int)(tx * TILE_W + threadIdx.x);
    if (j >= g.n) return;
    const int first = lo + (int)ty * TILE_H, last = min(first + TILE_H, hi);
    for (int li = first; li < last; li += ILP) {
        double v[ILP] = {0};
#pragma unroll
        for (int u = 0; u < ILP; u++)
            if (li + u < last) v[u] = stencil_at<true>(g, src, li + u, j);
#pragma unroll
        for (int u = 0; u < ILP; u++)
            if (li + u < last) dst[(size_t)(li + u + g.r) * g.pitch + (size_t)j] = v[u];
    }
}

/* Grid a: my rows hold the initial values, halos 0 (they come by the exchange); grid b: 0. */
__global__ void k_init(geom_t g, double *a, double *b)
{
    const size_t count = (size_t)(g.rows + 2 * g.r) * g.pitch;
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < count; k += (size_t)gridDim.x * blockDim.x) {
        int li = (int)(k / g.pitch) - g.r, j = (int)(k % g.pitch);
        a[k] = li >= 0 && li < g.rows ? initial(g.row0 + li, j) : 0.0;
        b[k] = 0.0;
    }
}

/* One iteration of every row, halos already in place (compute-only, sendrecv, put, and rank 0's
 * one-rank reference). Nothing writes src while it runs: in `put` a neighbour one iteration
 * ahead writes only dst's halos, which this kernel neither reads nor writes. */
__global__ void __launch_bounds__(TILE_W) k_sweep(geom_t g, const double *__restrict__ src, double *__restrict__ dst)
{
    sweep_tile(g, src, dst, 0, g.rows, blockIdx.x, blockIdx.y);
}

/* ------------------------------------------------------------------------------------
 * The device-initiated iteration (method `device`; the protocol is in the header comment)
 * ------------------------------------------------------------------------------------ */
__device__ __forceinline__ unsigned long long clock_ns()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* Edge block (side, chunk) of kernel it (side 0: top, 1: bottom): wait until every chunk of the
 * neighbour's previous kernel has come (its signal to me grows by eblocks per kernel), compute my
 * chunk [k0, k1) of the R rows next to that halo (flat: element k is row lo + k / pitch, column
 * k % pitch; columns >= n are padding, left alone) and store each point twice: into my dst and,
 * with duet_dev_p, straight into the neighbour's facing halo of dst (no second pass over the
 * rows to copy them); then, once the whole block has stored (__syncthreads), one thread fences
 * (duet_dev_fence: fence.acq_rel.sys, the release of the block's stores) and adds 1 to the
 * neighbour's signal. it == 0 (the prologue) only sends (my initial rows); it == iters only
 * computes. A failed wait (the abort word: a peer died, the communicator was revoked) goes to
 * *status and the block stops. st: this kernel's clock record (or NULL). Plain loads: the star of
 * an edge row reaches into the halo, which arrives while the kernel runs. */
__device__ void edge_block(const geom_t &g, const duet_device_comm_t &h, const double *src, double *dst, uint64_t *sig,
                           unsigned side, unsigned chunk, int it, int iters, int *status, unsigned long long *st)
{
    const int peer = side == 0 ? g.me - 1 : g.me + 1;
    const bool linked = peer >= 0 && peer < g.np, send = linked && it < iters;
    const int lo = side == 0 ? 0 : g.rows - g.r; /* my rows next to this halo */
    const unsigned p = (unsigned)g.pitch, total = (unsigned)g.r * p, k0 = chunk * g.echunk,
                   k1 = min(k0 + g.echunk, total);
    double *mine = dst + (size_t)(lo + g.r) * g.pitch;
    double *theirs = side == 0 ? dst + (size_t)(g.up_rows + g.r) * g.pitch /* up's bottom halo (symmetric) */
                               : dst;                                       /* down's top halo */
    __shared__ int ok;
    if (st && threadIdx.x == 0) atomicMin(&st[ST_EDGE0], clock_ns());
    if (it > 0) {
        if (threadIdx.x == 0) {
            ok = linked ? duet_dev_signal_wait_until(h, &sig[side], DUET_CMP_GE, (uint64_t)it * g.eblocks) : 0;
            if (st) atomicMax(&st[ST_WAITED], clock_ns());
        }
        __syncthreads(); /* thread 0's acquire, then the block's reads of the halo */
        if (ok != DUET_OK) {
            if (threadIdx.x == 0) atomicCAS(status, 0, ok);
            return;
        }
    }
    for (unsigned e = k0 + threadIdx.x; e < k1; e += blockDim.x) {
        const unsigned j = e % p;
        double v;
        if (it == 0) v = mine[e]; /* the prologue: my initial rows */
        else if (j < (unsigned)g.n) mine[e] = v = stencil_at<false>(g, src, lo + (int)(e / p), (int)j);
        else continue; /* padding */
        if (send) duet_dev_p(h, theirs + e, v, peer);
    }
    if (send) {
        __syncthreads(); /* every thread's stores, then thread 0's release */
        if (threadIdx.x == 0) {
            duet_dev_fence(h);
            duet_dev_signal_op(h, &sig[1 - side], 1, DUET_SIGNAL_ADD, peer);
        }
    }
    if (st && threadIdx.x == 0) atomicMax(&st[ST_SENT], clock_ns());
}

/* Blocks [0, 2 x eblocks): the edge chunks, top and bottom alternating (the lowest block indices:
 * the first blocks the GPU starts); the rest: tiles of the interior rows [R, rows - R), which read
 * my rows [0, rows) only, never written during the kernel (the neighbours write my halos), hence
 * the read-only path as in k_sweep. No __restrict__ on src: the edge blocks read halo rows that
 * arrive while the kernel runs (plain coherent loads, after the acquire). st: this kernel's clock
 * record or NULL; timeline: the interior blocks record theirs too (-t). */
__global__ void __launch_bounds__(TILE_W, 2048 / TILE_W)
    k_sweep_put(geom_t g, duet_device_comm_t h, const double *src, double *dst, uint64_t *sig, int it, int iters,
                int *status, unsigned long long *st, int timeline)
{
    const unsigned edges = 2 * g.eblocks;
    if (blockIdx.x < edges) {
        edge_block(g, h, src, dst, sig, blockIdx.x & 1, blockIdx.x >> 1, it, iters, status, st);
        return;
    }
    if (timeline && threadIdx.x == 0) atomicMin(&st[ST_INT0], clock_ns());
    const unsigned t = blockIdx.x - edges, ntx = (unsigned)(g.n + TILE_W - 1) / TILE_W;
    sweep_tile(g, src, dst, g.r, g.rows - g.r, t % ntx, t / ntx);
    if (timeline) {
        __syncthreads();
        if (threadIdx.x == 0) atomicMax(&st[ST_INT1], clock_ns());
    }
}

/* A run's clock records: the minima at ~0, the maxima at 0. */
__global__ void k_stats_reset(unsigned long long *st, int kernels)
{
    for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < kernels * ST_COUNT; k += gridDim.x * blockDim.x)
        st[k] = k % ST_COUNT == ST_EDGE0 || k % ST_COUNT == ST_INT0 ? ~0ull : 0ull;
}

/* ---- rank 0's check: out[0] += differing points, out[1] = min(out[1], the first one) */
__global__ void k_compare(const double *want, const double *got, size_t count, unsigned long long *out)
{
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < count; k += (size_t)gridDim.x * blockDim.x)
        if (__double_as_longlong(want[k]) != __double_as_longlong(got[k])) {
            atomicAdd(&out[0], 1ull);
            atomicMin(&out[1], (unsigned long long)k);
        }
}

/* ------------------------------------------------------------------------------------
 * Host side: one iteration of each method, on the stream
 * ------------------------------------------------------------------------------------ */
static unsigned flat_blocks(size_t count)
{
    size_t b = (count + 255) / 256;
    return (unsigned)(b < 1 ? 1 : b > 4096 ? 4096 : b);
}
static unsigned col_tiles(const geom_t *g) { return (unsigned)(g->n + TILE_W - 1) / TILE_W; }
static unsigned row_tiles(int rows) { return (unsigned)(rows + TILE_H - 1) / TILE_H; }

static void sweep(const ctx_t *c, const geom_t *g, const double *src, double *dst)
{
    k_sweep<<<dim3(col_tiles(g), row_tiles(g->rows)), TILE_W, 0, c->s>>>(*g, src, dst);
    CU(cudaGetLastError());
}

/* Local layout: R halo rows, my rows, R halo rows. */
static double *top_rows(const geom_t *g, double *a) { return a + (size_t)g->r * g->pitch; }
static double *bottom_rows(const geom_t *g, double *a) { return a + (size_t)g->rows * g->pitch; }
static double *top_halo(const geom_t *g, double *a) { (void)g; return a; }
static double *bottom_halo(const geom_t *g, double *a) { return a + (size_t)(g->rows + g->r) * g->pitch; }

/* One shift of sendrecv: my rows `mine` to rank `to`, rank `from`'s into my halo `halo`. The GPU
 * path takes no groups (duet_group_start/end refuses device buffers), and each call only queues
 * work on the stream, so the order must match in stream order by itself: even ranks send first,
 * odd ranks receive first. Every pair (r, r + 1) then meets in the same round; ranks without a
 * neighbour on a side skip that call. */
static void shift(const ctx_t *c, int to, const double *mine, int from, double *halo)
{
    const geom_t *g = &c->g;
    size_t count = (size_t)g->r * g->pitch;
    for (int k = 0; k < 2; k++) {
        if ((k == 0) == (g->me % 2 == 0)) {
            if (to >= 0 && to < g->np && duet_send(mine, count, DUET_FLOAT64, to, c->comm, c->s)) fail("duet_send");
        } else if (from >= 0 && from < g->np && duet_recv(halo, count, DUET_FLOAT64, from, c->comm, c->s)) {
            fail("duet_recv");
        }
    }
}

static void halo_sendrecv(const ctx_t *c, double *a)
{
    const geom_t *g = &c->g;
    shift(c, g->me + 1, bottom_rows(g, a), g->me - 1, top_halo(g, a)); /* rows going down */
    shift(c, g->me - 1, top_rows(g, a), g->me + 1, bottom_halo(g, a)); /* rows going up */
}

/* put: my edge rows straight into the neighbours' halos of the same grid, each followed by its
 * signal (the stream runs the signal after the copy), then the stream waits for both of mine.
 * Two grids alternate as in stencil.c: a neighbour's put of iteration it + 1 lands in my grid
 * (it & 1), which my sweep it - 1 read; it comes after the neighbour's wait for my signal of it,
 * which my stream sends after that sweep. */
static void halo_put(const ctx_t *c, double *a, uint64_t it)
{
    const geom_t *g = &c->g;
    size_t bytes = (size_t)g->r * g->pitch * sizeof(double);
    int up = g->me - 1, down = g->me + 1;
    if (up >= 0 && (duet_put_on_stream(c->comm, a + (size_t)(g->up_rows + g->r) * g->pitch, top_rows(g, a), bytes,
                                       up, c->s) ||
                    duet_signal_op_on_stream(c->comm, &c->sig[1], it, DUET_SIGNAL_SET, up, c->s)))
        fail("put up");
    if (down < g->np && (duet_put_on_stream(c->comm, top_halo(g, a), bottom_rows(g, a), bytes, down, c->s) ||
                         duet_signal_op_on_stream(c->comm, &c->sig[0], it, DUET_SIGNAL_SET, down, c->s)))
        fail("put down");
    if (up >= 0 && duet_signal_wait_until_on_stream(c->comm, &c->sig[0], DUET_CMP_GE, it, c->s))
        fail("wait for the top halo");
    if (down < g->np && duet_signal_wait_until_on_stream(c->comm, &c->sig[1], DUET_CMP_GE, it, c->s))
        fail("wait for the bottom halo");
}

/* device: -e asks for `req` blocks per edge (0: one round per thread, EDGE_ROUND points each).
 * A chunk is a whole number of EDGE_ALIGN elements, so fewer blocks than asked may result; every
 * rank computes the same eblocks (R, N and -e are the same everywhere), the count by which a
 * neighbour's signal grows per kernel. */
static void edge_split(geom_t *g, int req)
{
    const unsigned total = (unsigned)g->r * (unsigned)g->pitch;
    const unsigned want = req > 0 ? (unsigned)req : (total + EDGE_ROUND - 1) / EDGE_ROUND;
    unsigned chunk = (total + want - 1) / want;
    chunk = (chunk + EDGE_ALIGN - 1) / EDGE_ALIGN * EDGE_ALIGN;
    g->echunk = chunk;
    g->eblocks = (total + chunk - 1) / chunk;
}

/* device: kernel it of a run of `iters` (it == 0: the prologue, the edge blocks alone). */
static unsigned interior_blocks(const geom_t *g) { return col_tiles(g) * row_tiles(g->rows - 2 * g->r); }
static void device_step(const ctx_t *c, int it, int iters)
{
    const geom_t *g = &c->g;
    unsigned blocks = 2 * g->eblocks + (it > 0 ? interior_blocks(g) : 0);
    k_sweep_put<<<blocks, TILE_W, 0, c->s>>>(*g, c->h, c->grid[(it + 1) & 1], c->grid[it & 1], c->sig, it, iters,
                                             c->status, c->st + (size_t)it * ST_COUNT, c->timeline);
    CU(cudaGetLastError());
}

/* After a run: a failed stream-ordered wait (put) or kernel wait (device) ends the program. */
static void check_waits(const ctx_t *c, int method)
{
    if (method == M_PUT && duet_quiet(c->comm)) fail("the halo waits on the stream");
    if (method != M_DEVICE) return;
    int st = 0;
    CU(cudaMemcpy(&st, c->status, sizeof st, cudaMemcpyDeviceToHost));
    if (st) {
        fprintf(stderr, "stencil_gpu: rank %d: a halo wait in the device kernel returned %s\n", c->g.me,
                duet_status_str((duet_status_t)st));
        exit(1);
    }
}

/* One run of `method`, `iters` iterations from the initial grid: this rank's seconds from the
 * stream's first operation to its last (CUDA events); *result: the grid that holds the result. */
static double run(const ctx_t *c, int method, int iters, double **result)
{
    const geom_t *g = &c->g;
    k_init<<<flat_blocks((size_t)(g->rows + 2 * g->r) * g->pitch), 256, 0, c->s>>>(*g, c->grid[0], c->grid[1]);
    CU(cudaGetLastError());
    CU(cudaMemsetAsync(c->sig, 0, 2 * sizeof(uint64_t), c->s));
    CU(cudaMemsetAsync(c->status, 0, sizeof(int), c->s));
    if (method == M_DEVICE) {
        k_stats_reset<<<flat_blocks((size_t)(iters + 1) * ST_COUNT), 256, 0, c->s>>>(c->st, iters + 1);
        CU(cudaGetLastError());
    }
    CU(cudaStreamSynchronize(c->s));
    if (duet_barrier(c->comm)) fail("barrier"); /* every rank reset before anyone sends */
    CU(cudaEventRecord(c->t0, c->s));
    if (method == M_DEVICE) device_step(c, 0, iters);
    for (int it = 1; it <= iters; it++) {
        double *src = c->grid[(it - 1) & 1], *dst = c->grid[it & 1];
        if (method == M_SENDRECV) halo_sendrecv(c, src);
        if (method == M_PUT) halo_put(c, src, (uint64_t)it);
        if (method == M_DEVICE) device_step(c, it, iters);
        else sweep(c, g, src, dst);
    }
    CU(cudaEventRecord(c->t1, c->s));
    CU(cudaEventSynchronize(c->t1));
    float ms = 0;
    CU(cudaEventElapsedTime(&ms, c->t0, c->t1));
    check_waits(c, method);
    *result = c->grid[iters & 1];
    return 1e-3 * ms;
}

/* A warm-up run, then the timed one; the slowest rank's seconds. (No barrier between them is
 * needed: a run ends when this rank has seen its neighbours' last signals, so nothing more comes
 * into its grids, and the next run starts with a barrier after its reset.) */
static double measure(const ctx_t *c, int method, double **result)
{
    (void)run(c, method, c->iters < WARMUP_ITERS ? c->iters : WARMUP_ITERS, result);
    double t = run(c, method, c->iters, result), slowest;
    if (duet_allreduce(&t, &slowest, 1, DUET_FLOAT64, DUET_MAX, c->comm, NULL)) fail("allreduce");
    return slowest;
}

/* ------------------------------------------------------------------------------------
 * Rank 0's check
 * ------------------------------------------------------------------------------------ */
/* The iterations on one rank, into c->ref (cudaMalloc'd; halos 0 and never read: the frame
 * rows are fixed), and the buffers of check(). */
static void reference(ctx_t *c)
{
    geom_t one = c->g;
    one.me = 0, one.np = 1, one.row0 = 0, one.rows = one.n, one.up_rows = 0;
    size_t local = (size_t)(one.n + 2 * one.r) * one.pitch;
    double *a, *b;
    CU(cudaMalloc((void **)&a, local * sizeof(double)));
    CU(cudaMalloc((void **)&b, local * sizeof(double)));
    k_init<<<flat_blocks(local), 256, 0, c->s>>>(one, a, b);
    CU(cudaGetLastError());
    for (int it = 0; it < c->iters; it++) {
        sweep(c, &one, a, b);
        double *t = a;
        a = b, b = t;
    }
    CU(cudaStreamSynchronize(c->s));
    CU(cudaFree(b));
    c->ref = a;
    CU(cudaMalloc((void **)&c->whole, (size_t)one.n * one.pitch * sizeof(double)));
    CU(cudaMalloc((void **)&c->cmp, 2 * sizeof(unsigned long long)));
}

/* Every rank's rows of `result` (the same symmetric address on every rank) fetched into
 * c->whole, compared with the reference. Returns the number of points that differ in any bit
 * and prints the first. */
static long check(const ctx_t *c, const char *method, double *result)
{
    const geom_t *g = &c->g;
    const size_t p = g->pitch, count = (size_t)g->n * p;
    for (int q = 0; q < g->np; q++)
        if (duet_get(c->comm, c->whole + (size_t)row0_of(g, q) * p, top_rows(g, result),
                     (size_t)rows_of(g, q) * p * sizeof(double), q))
            fail("duet_get of a rank's result");
    unsigned long long out[2] = {0, ~0ull};
    CU(cudaMemcpyAsync(c->cmp, out, sizeof out, cudaMemcpyHostToDevice, c->s));
    k_compare<<<flat_blocks(count), 256, 0, c->s>>>(c->ref + (size_t)g->r * p, c->whole, count, c->cmp);
    CU(cudaGetLastError());
    CU(cudaMemcpyAsync(out, c->cmp, sizeof out, cudaMemcpyDeviceToHost, c->s));
    CU(cudaStreamSynchronize(c->s));
    if (out[0]) {
        double want = 0, got = 0;
        CU(cudaMemcpy(&want, c->ref + (size_t)g->r * p + out[1], sizeof want, cudaMemcpyDeviceToHost));
        CU(cudaMemcpy(&got, c->whole + out[1], sizeof got, cudaMemcpyDeviceToHost));
        printf("stencil_gpu: %s: %llu point(s) differ from the one-rank run; the first, row %llu column %llu: "
               "%.17g, the one-rank run has %.17g\n",
               method, out[0], out[1] / p, out[1] % p, got, want);
    }
    return (long)out[0];
}

/* ------------------------------------------------------------------------------------ */
static void usage(void)
{
    fprintf(stderr, "usage: duetrun -n P stencil_gpu [-n N] [-r R] [-i ITERS] [-m sendrecv|put|device|compute|all] "
                    "[-e EDGE_BLOCKS] [-t] [--no-verify]\n");
}

static void setup(ctx_t *c)
{
    geom_t *g = &c->g;
    if (duet_device_comm_get(c->comm, &c->h)) fail("duet_device_comm_get"); /* no GPU heap: says why */
    CU(cudaSetDevice(duet_cuda_device(c->comm)));
    CU(cudaStreamCreateWithFlags(&c->s, cudaStreamNonBlocking));
    CU(cudaEventCreate(&c->t0));
    CU(cudaEventCreate(&c->t1));
    CU(cudaMalloc((void **)&c->status, sizeof(int)));
    CU(cudaMalloc((void **)&c->st, (size_t)(c->iters + 1) * ST_COUNT * sizeof(unsigned long long)));
    /* symmetric: both grids at the largest block's size (halos included), the signals */
    size_t most = (size_t)(g->n / g->np + 1 + 2 * g->r) * g->pitch;
    c->grid[0] = (double *)duet_malloc_device(c->comm, most * sizeof(double));
    c->grid[1] = (double *)duet_malloc_device(c->comm, most * sizeof(double));
    c->sig = (uint64_t *)duet_malloc_device(c->comm, 2 * sizeof(uint64_t));
    if (!c->grid[0] || !c->grid[1] || !c->sig) fail("duet_malloc_device (raise DUET_CUDA_HEAP_SIZE for large N)");
}

/* After `device`'s timed run: the layout of its kernel, what the GPU can keep resident of it and of
 * k_sweep, and the clock records (every rank's means; the largest is printed). */
static void explain_device(const ctx_t *c)
{
    const geom_t *g = &c->g;
    const int iters = c->iters;
    unsigned long long *st = (unsigned long long *)malloc((size_t)(iters + 1) * ST_COUNT * sizeof *st);
    if (!st) fail("malloc");
    CU(cudaMemcpy(st, c->st, (size_t)(iters + 1) * ST_COUNT * sizeof *st, cudaMemcpyDeviceToHost));
    /* [0] last wait satisfied, [1] last chunk sent, [2] start to next start, [3] interior's first
     * start, [4] interior's last end: us after the kernel's first edge block started */
    double mean[5] = {0, 0, 0, 0, 0}, most[5];
    for (int it = 1; it <= iters; it++) {
        const unsigned long long *k = st + (size_t)it * ST_COUNT;
        double t0 = (double)k[ST_EDGE0];
        mean[0] += ((double)k[ST_WAITED] - t0) / iters;
        mean[1] += ((double)k[ST_SENT] - t0) / iters;
        if (it < iters) mean[2] += ((double)k[ST_COUNT + ST_EDGE0] - t0) / (iters > 1 ? iters - 1 : 1);
        if (c->timeline) {
            mean[3] += ((double)k[ST_INT0] - t0) / iters;
            mean[4] += ((double)k[ST_INT1] - t0) / iters;
        }
    }
    free(st);
    if (duet_allreduce(mean, most, 5, DUET_FLOAT64, DUET_MAX, c->comm, NULL)) fail("allreduce");
    if (g->me != 0) return;
    struct cudaFuncAttributes fa_sweep, fa_put;
    int occ_sweep = 0, occ_put = 0, sms = 0;
    CU(cudaFuncGetAttributes(&fa_sweep, k_sweep));
    CU(cudaFuncGetAttributes(&fa_put, k_sweep_put));
    CU(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ_sweep, k_sweep, TILE_W, 0));
    CU(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ_put, k_sweep_put, TILE_W, 0));
    CU(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, duet_cuda_device(c->comm)));
    printf("  device: %u edge block(s) per side x %u points (%u round(s) of one point per thread), %u interior "
           "blocks per kernel (rank 0)\n",
           g->eblocks, g->echunk, (g->echunk + EDGE_ROUND - 1) / EDGE_ROUND, interior_blocks(g));
    printf("  device: registers/thread, resident blocks/SM (%d SMs): k_sweep %d, %d; k_sweep_put %d, %d\n", sms,
           fa_sweep.numRegs, occ_sweep, fa_put.numRegs, occ_put);
    printf("  device: per kernel, us after its first edge block started (mean; the largest rank's): halo waits "
           "done %.1f, last chunk sent %.1f, next kernel's first edge block %.1f\n",
           most[0] / 1e3, most[1] / 1e3, most[2] / 1e3);
    if (c->timeline)
        printf("  device: -t: interior's first block started %.1f, its last block ended %.1f\n", most[3] / 1e3,
               most[4] / 1e3);
    fflush(stdout);
}

static void print_row(const ctx_t *c, int m, double t, double t_compute, long bad)
{
    const geom_t *g = &c->g;
    double per = t / c->iters, points = (double)(g->n - 2 * g->r) * (double)(g->n - 2 * g->r);
    double flops = points * (4.0 * g->r + 1) * c->iters / t;
    const char *verdict = m == M_COMPUTE ? "no halos: not checked"
                          : !c->verify   ? "not checked"
                          : bad == 0     ? "same bits as 1 rank"
                                         : "WRONG";
    printf("%-9s %12.1f %12.1f %12.1f %10.1f %s\n", method_name[m], per * 1e6, t_compute / c->iters * 1e6,
           (t - t_compute) / c->iters * 1e6, flops / 1e9, verdict);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    ctx_t c;
    memset(&c, 0, sizeof c);
    geom_t *g = &c.g;
    g->n = 4096, g->r = 2, c.iters = 500, c.verify = 1;
    const char *method = "all";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc) g->n = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-r") && i + 1 < argc) g->r = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-i") && i + 1 < argc) c.iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-m") && i + 1 < argc) method = argv[++i];
        else if (!strcmp(argv[i], "-e") && i + 1 < argc) c.edge_req = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-t")) c.timeline = 1;
        else if (!strcmp(argv[i], "--no-verify")) c.verify = 0;
        else return usage(), 2;
    }
    int wanted = -1;
    for (int m = M_COMPUTE; m < M_COUNT; m++)
        if (!strcmp(method, method_name[m])) wanted = m;
    if (strcmp(method, "all") && wanted < 0) return usage(), 2;

    if (duet_init()) fail("duet_init");
    c.comm = duet_comm_world();
    g->me = duet_my_pe(), g->np = duet_n_pes();
    g->pitch = ((size_t)g->n + PITCH_ALIGN - 1) / PITCH_ALIGN * PITCH_ALIGN;
    if (g->r < 1 || c.iters < 1 || g->n < 2 * g->r + 1 || g->n / g->np < 2 * g->r || c.edge_req < 0 ||
        (size_t)g->r * g->pitch > (1u << 30)) {
        if (g->me == 0)
            fprintf(stderr, "stencil_gpu: need R >= 1, ITERS >= 1, N > 2R, at least 2R rows per rank, -e >= 0 and "
                            "R x N < 2^30\n");
        duet_finalize();
        return 2;
    }
    if (!duet_cuda_available()) {
        fprintf(stderr, "stencil_gpu: rank %d: no GPU to use (a CUDA build, a GPU, DUET_CUDA not off)\n", g->me);
        duet_finalize();
        return 1;
    }
    g->row0 = row0_of(g, g->me), g->rows = rows_of(g, g->me);
    g->up_rows = g->me > 0 ? rows_of(g, g->me - 1) : 0;
    g->w = 1.0 / (4.0 * g->r);
    edge_split(g, c.edge_req);
    setup(&c);
    if (c.verify && g->me == 0) reference(&c);

    if (g->me == 0) {
        struct cudaDeviceProp prop;
        CU(cudaGetDeviceProperties(&prop, duet_cuda_device(c.comm)));
        printf("stencil_gpu: %d x %d float64, star radius %d, %d iterations, %d rank(s), %s\n", g->n, g->n, g->r,
               c.iters, g->np, prop.name);
        printf("halos: %d rows x %d = %.1f KiB to each neighbour per iteration\n", g->r, g->n,
               (double)g->r * g->n * sizeof(double) / 1024);
        printf("%-9s %12s %12s %12s %10s %s\n", "method", "us/iter", "compute", "halo", "GFLOP/s", "check");
    }
    int failed = 0;
    double t_compute = 0;
    for (int m = M_COMPUTE; m < M_COUNT; m++) {
        if (m != M_COMPUTE && wanted >= 0 && m != wanted) continue;
        double *result;
        double t = measure(&c, m, &result);
        if (m == M_COMPUTE) t_compute = t;
        if (duet_barrier(c.comm)) fail("barrier"); /* every rank's result is final */
        long bad = c.verify && m != M_COMPUTE && g->me == 0 ? check(&c, method_name[m], result) : 0;
        if (g->me == 0) print_row(&c, m, t, t_compute, bad);
        if (m == M_DEVICE) explain_device(&c);
        failed |= bad != 0;
        if (duet_barrier(c.comm)) fail("barrier"); /* rank 0 has read them before the next run */
    }

    if (c.ref) {
        CU(cudaFree(c.ref));
        CU(cudaFree(c.whole));
        CU(cudaFree(c.cmp));
    }
    duet_free(c.comm, c.sig);
    duet_free(c.comm, c.grid[1]);
    duet_free(c.comm, c.grid[0]);
    CU(cudaFree(c.status));
    CU(cudaFree(c.st));
    CU(cudaEventDestroy(c.t0));
    CU(cudaEventDestroy(c.t1));
    CU(cudaStreamDestroy(c.s));
    int flag = !failed;
    if (duet_allreduce(&flag, &flag, 1, DUET_INT32, DUET_MIN, c.comm, NULL)) fail("allreduce");
    duet_finalize();
    return flag ? 0 : 1;
}
