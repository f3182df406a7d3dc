/* stencil_gpu.cu — stencil.c on the GPU: the same 2-D star stencil (Jacobi iterations, float64,
 * blocks of whole rows, one per rank, R halo rows above and below), with both grids in the GPU
 * symmetric heap (duet_malloc_device) and the halos moved three ways, all on one stream:
 *
 *   duetrun -n 2 stencil_gpu [-n N] [-r R] [-i ITERS] [-m sendrecv|put|device|compute|all]
 *                               [--no-verify]
 *
 *   sendrecv  duet_send / duet_recv of device buffers on the stream, then the compute kernel
 *             (two-sided: the library's executor kernels carry the rows through its inboxes);
 *   put       host-initiated one-sided, stream-ordered: duet_put_on_stream of my edge rows into
 *             the neighbours' halos, duet_signal_op_on_stream, duet_signal_wait_until_on_stream
 *             for my own two halos, then the compute kernel;
 *   device    device-initiated: one kernel per iteration. Its first two blocks wait for my top and
 *             bottom halo (duet_dev_signal_wait_until), compute my R top and R bottom rows and put
 *             them straight into the neighbours' halos with a signal (duet_dev_put_signal_block);
 *             all the other blocks compute the interior at the same time, which reads no halo and
 *             never waits. The communication hides behind the interior, and an iteration costs one
 *             kernel launch instead of `put`'s compute kernel plus up to six stream operations
 *             (two copies, two signal kernels, two wait kernels).
 *
 *     kernel it on rank r (src = g[(it-1) & 1], dst = g[it & 1]):
 *       block 0    wait sig[0] >= it | my top R rows    | put -> r-1's bottom halo, its sig[1] = it+1
 *       block 1    wait sig[1] >= it | my bottom R rows | put -> r+1's top halo,    its sig[0] = it+1
 *       blocks 2.. the interior rows [R, rows - R): no halo, no waiting
 *
 * The signal protocol of `device` (sig[0]: my top halo, sig[1]: my bottom halo; grids g0, g1;
 * iteration it reads g[(it-1) & 1] and writes g[it & 1]). A neighbour sets my sig[side] to v in
 * its kernel v-1 (v = 1: its prologue, kernel "0", which only sends its initial rows), after it
 *   (a) put its edge rows after v-1 iterations into my halo of g[(v-1) & 1], and
 *   (b) finished reading its own halo on my side of g[v & 1] (the same block reads that halo,
 *       computes those edge rows and puts them: it signals only when all three are done).
 * My kernel it waits for sig >= it: by (a) my halo of g[(it-1) & 1] is there to read; by (b) I may
 * overwrite the neighbour's halo of g[it & 1] (the src of its kernel it-1, whose edge block set
 * the signal; it reads that halo next in its kernel it+1, after my signal of it+1).
 * So two grids suffice, signals only grow (set, never reset within a run), and the last kernel
 * sends nothing (nobody would read it). The interior blocks never touch a halo: local rows
 * [R, rows - R) read rows [0, rows) only; hence at least 2R rows per rank.
 *
 * First a compute-only run: the same sweep, no halos (its result is not checked). Each method's
 * "halo" column is its time minus that run's: the communication the method does not hide.
 * Rank 0 runs the iterations on one rank (its GPU, a cudaMalloc'd grid), fetches every method's
 * result from every rank with duet_get and compares them bit for bit: the star sum runs in one
 * fixed order with explicit round-to-nearest adds (no contraction into FMAs), the order of
 * stencil.c, so a correct exchange gives the same bits (those of stencil.c on a CPU, too).
 * Prints, per method: time per iteration (the slowest rank's, CUDA events around the stream's
 * work), compute, halo, GFLOP/s (4R + 1 flops per interior point). Exit status 1 on any
 * difference, on a failed wait (a kernel's wait returns the abort status) or on an error.
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
    WARMUP_ITERS = 3 /* untimed iterations of each method first (first-call set-up, module load) */
};

enum { M_COMPUTE, M_SENDRECV, M_PUT, M_DEVICE, M_COUNT };
static const char *const method_name[M_COUNT] = {"compute", "sendrecv", "put", "device"};

/* What the kernels know of the decomposition (passed by value). A grid's local layout: R halo
 * rows, my `rows` rows (global rows row0 ...), R halo rows; `pitch` elements per row. */
typedef struct {
    int n, r, me, np, row0, rows;
    int up_rows;  /* rank me-1's row count: its bottom halo starts at its row up_rows + R */
    size_t pitch; /* elements per row (n) */
    double w;     /* 1 / 4R, computed on the host as stencil.c computes it */
} geom_t;

typedef struct {
    geom_t g;
    int iters, verify;
    duet_comm_t comm;
    duet_device_comm_t h;
    cudaStream_t s;
    cudaEvent_t t0, t1;
    double *grid[2];         /* symmetric (GPU heap): the neighbours put into their halos */
    uint64_t *sig;           /* symmetric: [0] my top halo's signal, [1] my bottom halo's */
    int *status;             /* device: the first failed wait of a `device` kernel (0: none) */
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

/* The new value of local row li, column j: w x (the 4R star neighbours) summed in stencil.c's
 * order, each add rounded to nearest (no FMA can form); the frame (R rows and columns at the
 * border of the whole grid) keeps its value. */
__device__ __forceinline__ double stencil_at(const geom_t &g, const double *src, int li, int j)
{
    const size_t p = g.pitch, c = (size_t)(li + g.r) * p + (size_t)j;
    const int gi = g.row0 + li;
    if (gi < g.r || gi >= g.n - g.r || j < g.r || j >= g.n - g.r) return src[c];
    double acc = 0;
    for (int k = 1; k <= g.r; k++) {
        acc = __dadd_rn(acc, src[c - (size_t)k * p]);
        acc = __dadd_rn(acc, src[c + (size_t)k * p]);
        acc = __dadd_rn(acc, src[c - (size_t)k]);
        acc = __dadd_rn(acc, src[c + (size_t)k]);
    }
    return __dmul_rn(acc, g.w);
}

/* Tile (tx, ty) of local rows [lo, hi): thread x takes column tx * TILE_W + x and TILE_H rows,
 * ILP rows at a time (their loads in flight together, then the stores). */
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
            if (li + u < last) v[u] = stencil_at(g, src, li + u, j);
#pragma unroll
        for (int u = 0; u < ILP; u++)
            if (li + u < last) dst[(size_t)(li + u + g.r) * g.pitch + (size_t)j] = v[u];
    }
}

/* Local rows [lo, lo + R), every column, by the whole block (ILP points per thread at a time). */
__device__ __forceinline__ void sweep_edge(const geom_t &g, const double *src, double *dst, int lo)
{
    const size_t n = (size_t)g.n, total = (size_t)g.r * n, step = blockDim.x;
    for (size_t k0 = threadIdx.x; k0 < total; k0 += ILP * step) {
        double v[ILP] = {0};
#pragma unroll
        for (int u = 0; u < ILP; u++) {
            size_t k = k0 + u * step;
            if (k < total) v[u] = stencil_at(g, src, lo + (int)(k / n), (int)(k % n));
        }
#pragma unroll
        for (int u = 0; u < ILP; u++) {
            size_t k = k0 + u * step;
            if (k < total) dst[(size_t)(lo + g.r) * g.pitch + (k / n) * g.pitch + k % n] = v[u];
        }
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
/* Block `side` (0: top, 1: bottom) of kernel it: wait for that halo, compute my R rows next to it,
 * put them into the neighbour's facing halo of dst and set its signal to it + 1. it == 0 (the
 * prologue) only sends; it == iters only computes. A failed wait (the abort word: a peer died,
 * the communicator was revoked) goes to *status and the block stops. */
__device__ void edge_block(const geom_t &g, const duet_device_comm_t &h, const double *src, double *dst, uint64_t *sig,
                           int side, int it, int iters, int *status)
{
    const int peer = side == 0 ? g.me - 1 : g.me + 1;
    const bool linked = peer >= 0 && peer < g.np;
    const int lo = side == 0 ? 0 : g.rows - g.r; /* my rows next to this halo */
    __shared__ int st;
    if (it > 0) {
        if (threadIdx.x == 0) st = linked ? duet_dev_signal_wait_until(h, &sig[side], DUET_CMP_GE, (uint64_t)it) : 0;
        __syncthreads(); /* thread 0's acquire, then the block's reads of the halo */
        if (st != DUET_OK) {
            if (threadIdx.x == 0) atomicCAS(status, 0, st);
            return;
        }
        sweep_edge(g, src, dst, lo);
    }
    if (!linked || it == iters) return;
    __syncthreads(); /* every thread's rows are written before any thread copies them */
    const double *mine = dst + (size_t)(lo + g.r) * g.pitch;
    double *theirs = side == 0 ? dst + (size_t)(g.up_rows + g.r) * g.pitch /* up's bottom halo */
                               : dst;                                       /* down's top halo */
    duet_dev_put_signal_block(h, theirs, mine, (size_t)g.r * g.pitch * sizeof(double), &sig[1 - side],
                              (uint64_t)it + 1, DUET_SIGNAL_SET, peer);
}

/* Blocks 0 and 1: the edges (edge_block); blocks 2...: tiles of the interior rows [R, rows - R).
 * No __restrict__ on src: halo rows arrive while the kernel runs (plain coherent loads, after
 * the acquire, never the read-only cache). */
__global__ void __launch_bounds__(TILE_W)
    k_sweep_put(geom_t g, duet_device_comm_t h, const double *src, double *dst, uint64_t *sig, int it, int iters,
                int *status)
{
    if (blockIdx.x < 2) {
        edge_block(g, h, src, dst, sig, (int)blockIdx.x, it, iters, status);
        return;
    }
    const unsigned t = blockIdx.x - 2, ntx = (unsigned)(g.n + TILE_W - 1) / TILE_W;
    sweep_tile(g, src, dst, g.r, g.rows - g.r, t % ntx, t / ntx);
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

/* device: kernel it of a run of `iters` (it == 0: the prologue, the two edge blocks alone). */
static void device_step(const ctx_t *c, int it, int iters)
{
    const geom_t *g = &c->g;
    unsigned blocks = 2 + (it > 0 ? col_tiles(g) * row_tiles(g->rows - 2 * g->r) : 0);
    k_sweep_put<<<blocks, TILE_W, 0, c->s>>>(*g, c->h, c->grid[(it + 1) & 1], c->grid[it & 1], c->sig, it, iters,
                                             c->status);
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
                    "[--no-verify]\n");
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
    /* symmetric: both grids at the largest block's size (halos included), the signals */
    size_t most = (size_t)(g->n / g->np + 1 + 2 * g->r) * g->pitch;
    c->grid[0] = (double *)duet_malloc_device(c->comm, most * sizeof(double));
    c->grid[1] = (double *)duet_malloc_device(c->comm, most * sizeof(double));
    c->sig = (uint64_t *)duet_malloc_device(c->comm, 2 * sizeof(uint64_t));
    if (!c->grid[0] || !c->grid[1] || !c->sig) fail("duet_malloc_device (raise DUET_CUDA_HEAP_SIZE for large N)");
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
    g->pitch = (size_t)g->n;
    if (g->r < 1 || c.iters < 1 || g->n < 2 * g->r + 1 || g->n / g->np < 2 * g->r) {
        if (g->me == 0) fprintf(stderr, "stencil_gpu: need R >= 1, ITERS >= 1, N > 2R and at least 2R rows per rank\n");
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
    CU(cudaEventDestroy(c.t0));
    CU(cudaEventDestroy(c.t1));
    CU(cudaStreamDestroy(c.s));
    int flag = !failed;
    if (duet_allreduce(&flag, &flag, 1, DUET_INT32, DUET_MIN, c.comm, NULL)) fail("allreduce");
    duet_finalize();
    return flag ? 0 : 1;
}
