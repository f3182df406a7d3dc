/* devput.cu — a put issued from inside a GPU kernel, timed against a host-launched duet_allreduce
 * of the same bytes, and the cost model that says where each wins.
 *
 *   duetrun -n 2 devput_gpu [-b MIN] [-e MAX] [-f FACTOR] [-i ITERS] [-B BLOCKS] [--plot FILE.png]
 *
 * Device put. The ranks form a ring; one kernel per rank passes a message of S bytes around it
 * ITERS times (after a warm-up inside the same kernel). Rank 0 puts S bytes into rank 1's receive
 * buffer and signals it (duet_dev_put_signal_block: the copy, then a release add on rank 1's
 * counter); rank 1 waits for the signal (duet_dev_signal_wait_until, acquire: the bytes are then
 * visible), puts its own S bytes to rank 2, ... and rank n-1's put comes back to rank 0, which
 * then starts the next lap. With 2 ranks this is a ping-pong. Rank 0 reads the GPU's clock
 * (%globaltimer) around the timed laps: one hop = lap time / n, a put of S bytes from a kernel
 * until the receiver's kernel has seen it, with no launch in between.
 *
 *     rank 0 --put+signal--> rank 1 --put+signal--> ... rank n-1 --put+signal--> rank 0
 *
 * BLOCKS CUDA blocks (default 1, of 1024 threads) carry the message: block b puts slice b and
 * adds 1 to the receiver's counter, and every block of the receiver waits until the counter shows
 * all BLOCKS slices of this lap (the counter only grows: the host keeps its value before each
 * launch, the same on every rank, so nothing is reset). A rank writes its neighbour's buffer again
 * only in the next lap, which cannot start before the neighbour has put its own message of this
 * lap on, i.e. after it has read (checked) what it received.
 *
 * Host-launched allreduce: duet_allreduce (float32 sum of S / 4 elements, device buffers) on a
 * stream, on buffers of two kinds: heap (symmetric, from duet_malloc_device: above 1 MiB the
 * library's direct kernel reads the peers' buffers where they lie) and cudaMalloc (plain device
 * memory: above 1 MiB the tuner's pick, staged through the library's scratch; up to 1 MiB both
 * take the library's one-shot kernel; 4 MiB / n instead of 1 MiB beyond 4 ranks). Each is timed two ways: ITERS calls back to back, timed
 * with CUDA events (what a training loop sees: the host queues while the GPU runs), and each call
 * followed by cudaStreamSynchronize, timed on the host (what a host that needs the result sees).
 * Also timed once: the host launch of an empty kernel, back to back and with a synchronize: the
 * launch part of the allreduce's fixed cost.
 *
 * Then T(S) = alpha + S / bandwidth is fitted to each of the five columns (least squares on the
 * relative error, so small and large sizes weigh alike) and the crossovers of the put's fit with
 * each allreduce's are printed, with the measured ones: the smallest size from which the
 * allreduce is at least as fast at every larger size.
 *
 * Checks (exit status 1 on any failure, on any rank): per size, a separate launch of the ring
 * with a different pattern in every lap (sender and lap in every byte), each receiver comparing
 * every byte of its slice right after its wait; and each allreduce's output against the exact sum
 * (small integers as floats): of one call into a poisoned buffer, and of the last timed call.
 *
 * The ring kernel's blocks of every rank must be resident at once: checked at start.
 */
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>
#include <duet/duet_device.cuh>

#include "bench_util.h"

#define PROG "devput_gpu"
#include "../common/fit_plot.h"

/* The table's time columns: the put, then duet_allreduce on heap / cudaMalloc buffers, each back
 * to back (events) and each call synchronized (host clock). */
enum { PUT, HEAP, HEAP_SYNC, DEV, DEV_SYNC, COLS };
enum { AR_HEAP, AR_DEV, AR_KINDS }; /* the allreduce's buffers: heap (symmetric) or cudaMalloc */
static const char *const col_name[COLS] = {"device put (one hop)", "heap (back to back)", "heap (+ synchronize)",
                                           "cudaMalloc (back to back)", "cudaMalloc (+ synchronize)"};

enum {
    RING_THREADS = 1024,
    MAX_BLOCKS = 64,
    MAX_PES = 128,
    CHECK_LAPS = 4, /* laps of the checking launch */
    MAX_ROWS = 64,
    POISON = 0xa5
};

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

/* ------------------------------------------------------------------------------------
 * The ring kernel
 * ------------------------------------------------------------------------------------ */
typedef struct {
    duet_device_comm_t h;
    char *recv;                     /* symmetric: my left neighbour's message lands here */
    char *src;                      /* mine (device memory): what I put to my right neighbour */
    uint64_t *arrived;              /* symmetric: slices received so far, added by my left neighbour */
    uint64_t base;                  /* *arrived before this launch */
    size_t bytes, slice;            /* message bytes; bytes per block (a multiple of 16) */
    int warmup, laps, check;
    unsigned long long *bad;        /* check: bytes that differed from the sender's pattern */
    int *status;                    /* the first failed wait's status (0: none) */
    unsigned long long *elapsed_ns; /* rank 0: the timed laps, on the GPU's clock */
} ring_args_t;

static __device__ __forceinline__ unsigned long long clock_ns(void)
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* Byte i of the message that `rank` sends in lap `lap` of a checking launch. */
static __device__ __forceinline__ uint8_t pattern(int rank, int lap, size_t i)
{
    uint32_t x = (uint32_t)i * 2654435761u ^ ((uint32_t)rank * 40503u + (uint32_t)lap * 2246822519u);
    return (uint8_t)(x >> 24);
}

/* Block b puts its slice [lo, hi) to `to` and adds 1 to its counter (after the whole block's
 * copy: duet_dev_put_signal_block syncs the block, then releases). Checking: the slice is made
 * first, different in every lap. */
static __device__ void send_slice(const ring_args_t &a, int lap, size_t lo, size_t hi, int to)
{
    if (a.check) {
        int me = duet_dev_my_pe(a.h);
        for (size_t i = lo + threadIdx.x; i < hi; i += blockDim.x) a.src[i] = (char)pattern(me, lap, i);
        __syncthreads();
    }
    duet_dev_put_signal_block(a.h, a.recv + lo, a.src + lo, hi - lo, a.arrived, 1, DUET_SIGNAL_ADD, to);
}

/* Waits until the counter reaches target (every slice of the lap is here: the acquire, then the
 * block sync, make the bytes visible to the whole block). Checking: compares my slice with the
 * sender's pattern. Returns 0 when the wait failed (abort: a peer died, ...). */
static __device__ bool receive_slice(const ring_args_t &a, uint64_t target, int lap, size_t lo, size_t hi,
                                     int from, unsigned long long *bad)
{
    int st = DUET_OK;
    if (threadIdx.x == 0) st = duet_dev_signal_wait_until(a.h, a.arrived, DUET_CMP_GE, target);
    if (__syncthreads_or(st != DUET_OK)) {
        if (st != DUET_OK) atomicCAS(a.status, 0, st);
        return false;
    }
    if (a.check)
        for (size_t i = lo + threadIdx.x; i < hi; i += blockDim.x)
            *bad += (uint8_t)a.recv[i] != pattern(from, lap, i);
    return true;
}

__global__ void __launch_bounds__(RING_THREADS) ring_kernel(ring_args_t a)
{
    const int me = duet_dev_my_pe(a.h), n = duet_dev_n_pes(a.h);
    const int right = (me + 1) % n, left = (me + n - 1) % n;
    size_t lo = (size_t)blockIdx.x * a.slice < a.bytes ? (size_t)blockIdx.x * a.slice : a.bytes;
    size_t hi = a.bytes - lo < a.slice ? a.bytes : lo + a.slice;
    unsigned long long bad = 0, t0 = 0;
    for (int lap = 0; lap < a.warmup + a.laps; lap++) {
        /* every block of my left neighbour has put its slice of this lap */
        uint64_t target = a.base + (uint64_t)(lap + 1) * gridDim.x;
        if (me == 0) {
            if (lap == a.warmup) t0 = clock_ns();
            send_slice(a, lap, lo, hi, right);
            if (!receive_slice(a, target, lap, lo, hi, left, &bad)) return;
        } else {
            if (!receive_slice(a, target, lap, lo, hi, left, &bad)) return;
            send_slice(a, lap, lo, hi, right);
        }
    }
    if (me == 0 && blockIdx.x == 0 && threadIdx.x == 0) *a.elapsed_ns = clock_ns() - t0;
    if (bad) atomicAdd(a.bad, bad);
}

__global__ void empty_kernel(void) {}

/* Fills x[0, count) with rank r's allreduce input: small integers, so every sum is exact. */
__host__ __device__ static inline float input_value(int rank, size_t i)
{
    return (float)(((size_t)rank * 7 + i) % 13);
}

__global__ void fill_kernel(float *x, size_t count, int rank)
{
    size_t step = (size_t)gridDim.x * blockDim.x;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += step)
        x[i] = input_value(rank, i);
}

/* ------------------------------------------------------------------------------------
 * Host side: the measurements
 * ------------------------------------------------------------------------------------ */
typedef struct {
    duet_comm_t comm;
    duet_device_comm_t h;
    int me, n, blocks, iters, warmup;
    cudaStream_t stream;
    cudaEvent_t t0, t1;
    char *recv;                     /* symmetric: the largest message */
    uint64_t *arrived;              /* symmetric: one counter */
    uint64_t arrived_base;          /* its value after the launches so far (the same on every rank) */
    char *src;                      /* device: the largest message */
    float *ar_in[AR_KINDS], *ar_out[AR_KINDS]; /* the allreduce's buffers: symmetric / cudaMalloc */
    float *host;                    /* host: one allreduce output */
    unsigned long long *counters;   /* device: [0] bad bytes, [1] rank 0's elapsed ns */
    int *status;                    /* device: the ring kernel's first failed wait */
} devput_t;

/* One launch of the ring over `laps` laps (after `warmup` more). Returns rank 0's ns for the
 * timed laps (0 elsewhere) and adds the bytes that failed the check to *bad. */
static unsigned long long run_ring(devput_t *d, size_t bytes, int warmup, int laps, int check, long long *bad)
{
    unsigned nb = (unsigned)d->blocks;
    ring_args_t a;
    memset(&a, 0, sizeof a);
    a.h = d->h, a.recv = d->recv, a.src = d->src, a.arrived = d->arrived, a.base = d->arrived_base;
    a.bytes = bytes, a.slice = (((bytes + nb - 1) / nb) + 15) & ~(size_t)15;
    a.warmup = warmup, a.laps = laps, a.check = check;
    a.bad = d->counters, a.status = d->status, a.elapsed_ns = d->counters + 1;
    CU(cudaMemsetAsync(d->counters, 0, 2 * sizeof(unsigned long long), d->stream));
    ring_kernel<<<nb, RING_THREADS, 0, d->stream>>>(a);
    CU(cudaGetLastError());
    CU(cudaStreamSynchronize(d->stream));
    int st = 0;
    unsigned long long c[2];
    CU(cudaMemcpy(&st, d->status, sizeof st, cudaMemcpyDeviceToHost));
    if (st) die("a wait in the ring kernel stopped: %s", duet_status_str((duet_status_t)st));
    CU(cudaMemcpy(c, d->counters, sizeof c, cudaMemcpyDeviceToHost));
    d->arrived_base += (uint64_t)(warmup + laps) * nb;
    *bad += (long long)c[0];
    return c[1];
}

/* The device put: microseconds per hop (rank 0's measurement; 0 on the other ranks). */
static double time_put(devput_t *d, size_t bytes, long long *bad)
{
    run_ring(d, bytes, 0, CHECK_LAPS, 1, bad);
    unsigned long long ns = run_ring(d, bytes, d->warmup, d->iters, 0, bad);
    return d->me == 0 ? 1e-3 * (double)ns / ((double)d->iters * d->n) : 0.0;
}

static void allreduce(devput_t *d, int kind, size_t count)
{
    DU(duet_allreduce(d->ar_in[kind], d->ar_out[kind], count, DUET_FLOAT32, DUET_SUM, d->comm, d->stream));
}

/* The wrong elements of the allreduce's output (after the stream's work) against the exact sum. */
static long long compare_allreduce(devput_t *d, int kind, size_t count)
{
    CU(cudaStreamSynchronize(d->stream));
    CU(cudaMemcpy(d->host, d->ar_out[kind], count * sizeof(float), cudaMemcpyDeviceToHost));
    long long wrong = 0;
    for (size_t i = 0; i < count; i++) {
        float want = 0;
        for (int r = 0; r < d->n; r++) want += input_value(r, i);
        wrong += memcmp(&d->host[i], &want, sizeof want) != 0;
    }
    return wrong;
}

/* This size's input, then one allreduce into a poisoned output, checked. */
static long long check_allreduce(devput_t *d, int kind, size_t count)
{
    fill_kernel<<<64, 256, 0, d->stream>>>(d->ar_in[kind], count, d->me);
    CU(cudaGetLastError());
    CU(cudaMemsetAsync(d->ar_out[kind], POISON, count * sizeof(float), d->stream));
    allreduce(d, kind, count);
    return compare_allreduce(d, kind, count);
}

/* Microseconds per allreduce: back to back on the stream (events), or each followed by a
 * stream synchronize (host clock). */
static void time_allreduce(devput_t *d, int kind, size_t count, double *stream_us, double *sync_us)
{
    CU(cudaStreamSynchronize(d->stream));
    DU(duet_barrier(d->comm));
    for (int it = -d->warmup; it < d->iters; it++) {
        if (it == 0) CU(cudaEventRecord(d->t0, d->stream));
        allreduce(d, kind, count);
    }
    CU(cudaEventRecord(d->t1, d->stream));
    CU(cudaEventSynchronize(d->t1));
    float ms = 0;
    CU(cudaEventElapsedTime(&ms, d->t0, d->t1));
    *stream_us = 1e3 * (double)ms / d->iters;

    DU(duet_barrier(d->comm));
    uint64_t start = 0;
    for (int it = -d->warmup; it < d->iters; it++) {
        if (it == 0) start = bench_now_ns();
        allreduce(d, kind, count);
        CU(cudaStreamSynchronize(d->stream));
    }
    *sync_us = 1e-3 * (double)(bench_now_ns() - start) / d->iters;
}

/* The host launch of an empty kernel: back to back (events) and with a synchronize (host clock). */
static void time_launch(devput_t *d, double *stream_us, double *sync_us)
{
    for (int it = -d->warmup; it < d->iters; it++) {
        if (it == 0) CU(cudaEventRecord(d->t0, d->stream));
        empty_kernel<<<1, 1, 0, d->stream>>>();
    }
    CU(cudaEventRecord(d->t1, d->stream));
    CU(cudaEventSynchronize(d->t1));
    CU(cudaGetLastError());
    float ms = 0;
    CU(cudaEventElapsedTime(&ms, d->t0, d->t1));
    *stream_us = 1e3 * (double)ms / d->iters;
    uint64_t start = 0;
    for (int it = -d->warmup; it < d->iters; it++) {
        if (it == 0) start = bench_now_ns();
        empty_kernel<<<1, 1, 0, d->stream>>>();
        CU(cudaStreamSynchronize(d->stream));
    }
    *sync_us = 1e-3 * (double)(bench_now_ns() - start) / d->iters;
}

/* ------------------------------------------------------------------------------------
 * The model: T(S) = alpha + beta * S
 * ------------------------------------------------------------------------------------ */
/* ------------------------------------------------------------------------------------
 * Output
 * ------------------------------------------------------------------------------------ */
static void print_header(const devput_t *d, int dev)
{
    int devs[MAX_PES];
    DU(duet_allgather(&dev, devs, 1, DUET_INT32, d->comm, NULL));
    if (d->me != 0) return;
    cudaDeviceProp prop;
    CU(cudaGetDeviceProperties(&prop, dev));
    printf("%s: %d ranks on GPU", PROG, d->n);
    for (int r = 0; r < d->n; r++) printf(" %d", devs[r]);
    printf(" (%s), %d iterations per size\n", prop.name, d->iters);
    printf("  put: a kernel's put + signal around a ring of the ranks, %d block%s of %d threads; one hop\n",
           d->blocks, d->blocks == 1 ? "" : "s", RING_THREADS);
    printf("  allreduce: duet_allreduce, float32 sum, on a stream: back to back, and each call synchronized;\n"
           "    heap: buffers from duet_malloc_device (symmetric), cudaMalloc: buffers from cudaMalloc\n");
}

static void plot(const char *file, const devput_t *d, const double *S, const double (*t)[COLS], int m,
                 const fit_t *f)
{
    static const char *const title[COLS] = {
        "device put", "allreduce heap, back to back", "allreduce heap + synchronize",
        "allreduce cudaMalloc, back to back", "allreduce cudaMalloc + synchronize"};
    /* the put violet; heap blues, cudaMalloc oranges (dark: back to back, light: synchronized) */
    static const char *const color[COLS] = {"#9400d3", "#0060ad", "#56b4e9", "#d55e00", "#e69f00"};
    int piped;
    FILE *gp = plot_open(file, &piped);
    if (!gp) return;
    fprintf(gp, "set terminal png size 900,600 noenhanced\nset output '%s'\nset logscale xy 2\n"
                "set xlabel 'bytes'\nset ylabel 'us'\nset key below\nset format x '%%.0b %%BB'\n"
                "set title 'device put (one hop, %d block%s) vs host-launched duet_allreduce, %d ranks'\n",
            file, d->blocks, d->blocks == 1 ? "" : "s", d->n);
    for (int k = 0; k < COLS; k++) fprintf(gp, "f%d(x) = %.9g + %.9g * x\n", k, f[k].alpha, f[k].beta);
    fprintf(gp, "plot [%g:%g]", S[0], S[m - 1]);
    for (int k = 0; k < COLS; k++)
        fprintf(gp, " '-' using 1:2 with linespoints lc rgb '%s' title '%s',", color[k], title[k]);
    for (int k = 0; k < COLS; k++)
        fprintf(gp, " f%d(x) dt 2 lc rgb '%s' %s%s", k, color[k], k == 0 ? "title 'fits'" : "notitle",
                k + 1 < COLS ? "," : "\n");
    for (int k = 0; k < COLS; k++) {
        for (int i = 0; i < m; i++) fprintf(gp, "%.0f %g\n", S[i], t[i][k]);
        fputs("e\n", gp);
    }
    plot_close(gp, piped, file);
}

/* Fits, crossovers and the plot, from rank 0's rows. */
static void report(const devput_t *d, const double *S, const double (*t)[COLS], int m, const char *plot_file)
{
    double col[COLS][MAX_ROWS];
    for (int k = 0; k < COLS; k++)
        for (int i = 0; i < m; i++) col[k][i] = t[i][k];
    fit_t f[COLS];
    for (int k = 0; k < COLS; k++) f[k] = fit_line(S, col[k], m);
    printf("fit T(S) = alpha + beta * S (least squares on the relative error); allreduce on heap or"
           " cudaMalloc buffers:\n");
    for (int k = 0; k < COLS; k++) print_fit(col_name[k], f[k], 2);
    printf("crossover predicted by the fits:\n");
    for (int k = PUT + 1; k < COLS; k++) print_model_crossover(col_name[k], "device put", f[PUT], f[k], S[m - 1]);
    printf("crossover measured:\n");
    for (int k = PUT + 1; k < COLS; k++) print_measured_crossover(col_name[k], "device put", S, col[PUT], col[k], m);
    fflush(stdout);
    if (plot_file && m > 0) plot(plot_file, d, S, t, m, f);
}

/* ------------------------------------------------------------------------------------
 * Setup and the sweep
 * ------------------------------------------------------------------------------------ */
/* The ring kernel's blocks of every rank must be resident at once (checked as if all ranks
 * shared this GPU). */
static void check_capacity(const devput_t *d, int dev)
{
    int per_sm = 0, sms = 0;
    CU(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, ring_kernel, RING_THREADS, 0));
    CU(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    if ((long)per_sm * sms < (long)d->blocks * d->n)
        die("%d ranks x %d blocks of %d threads cannot all be resident on this GPU (%d per SM x %d SMs)", d->n,
            d->blocks, RING_THREADS, per_sm, sms);
}

static void setup(devput_t *d, size_t maxb)
{
    d->comm = duet_comm_world();
    d->me = duet_my_pe();
    d->n = duet_n_pes();
    if (d->n < 2 || d->n > MAX_PES) die("needs 2 to %d ranks, not %d", MAX_PES, d->n);
    int dev = duet_cuda_device(d->comm);
    if (!duet_cuda_available() || dev < 0) die("no GPU heap: every rank needs a GPU (and DUET_CUDA not off)");
    CU(cudaSetDevice(dev));
    DU(duet_device_comm_get(d->comm, &d->h));
    check_capacity(d, dev);

    size_t cap = (maxb + 255) & ~(size_t)255;
    d->recv = (char *)duet_malloc_device(d->comm, cap);
    d->arrived = (uint64_t *)duet_malloc_device(d->comm, sizeof(uint64_t));
    /* the allreduce's symmetric buffers: the same offsets on every rank (same calls, same order) */
    d->ar_in[AR_HEAP] = (float *)duet_malloc_device(d->comm, cap);
    d->ar_out[AR_HEAP] = (float *)duet_malloc_device(d->comm, cap);
    if (!d->recv || !d->arrived || !d->ar_in[AR_HEAP] || !d->ar_out[AR_HEAP])
        die("duet_malloc_device: %s (raise DUET_CUDA_HEAP_SIZE for a large -e)", duet_last_error());
    /* the counter starts at 0 on every rank before anyone adds to it */
    CU(cudaMemset(d->arrived, 0, sizeof(uint64_t)));
    CU(cudaDeviceSynchronize());
    DU(duet_barrier(d->comm));

    CU(cudaMalloc(&d->src, cap));
    CU(cudaMemset(d->src, POISON, cap));
    CU(cudaMalloc(&d->ar_in[AR_DEV], cap));
    CU(cudaMalloc(&d->ar_out[AR_DEV], cap));
    CU(cudaMalloc(&d->counters, 2 * sizeof(unsigned long long)));
    CU(cudaMalloc(&d->status, sizeof(int)));
    CU(cudaMemset(d->status, 0, sizeof(int)));
    CU(cudaStreamCreateWithFlags(&d->stream, cudaStreamNonBlocking));
    CU(cudaEventCreate(&d->t0));
    CU(cudaEventCreate(&d->t1));
    CU(cudaDeviceSynchronize());
    d->host = (float *)malloc(cap);
    if (!d->host) die("out of host memory");
    print_header(d, dev);
}

static void teardown(devput_t *d)
{
    CU(cudaStreamSynchronize(d->stream));
    free(d->host);
    CU(cudaEventDestroy(d->t1));
    CU(cudaEventDestroy(d->t0));
    CU(cudaStreamDestroy(d->stream));
    CU(cudaFree(d->status));
    CU(cudaFree(d->counters));
    CU(cudaFree(d->ar_out[AR_DEV]));
    CU(cudaFree(d->ar_in[AR_DEV]));
    CU(cudaFree(d->src));
    DU(duet_free(d->comm, d->ar_out[AR_HEAP]));
    DU(duet_free(d->comm, d->ar_in[AR_HEAP]));
    DU(duet_free(d->comm, d->arrived));
    DU(duet_free(d->comm, d->recv));
}

static void usage(void)
{
    fprintf(stderr, "usage: duetrun -n P %s [-b MIN] [-e MAX] [-f FACTOR] [-i ITERS] [-B BLOCKS]"
                    " [--plot FILE.png]\n", PROG);
    exit(2);
}

int main(int argc, char **argv)
{
    size_t minb = 8, maxb = 1 << 20, factor = 2;
    devput_t d;
    memset(&d, 0, sizeof d);
    d.iters = 500, d.blocks = 1;
    const char *plot_file = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-b") && i + 1 < argc) minb = bench_parse_size(PROG, argv[++i], "-b");
        else if (!strcmp(argv[i], "-e") && i + 1 < argc) maxb = bench_parse_size(PROG, argv[++i], "-e");
        else if (!strcmp(argv[i], "-f") && i + 1 < argc) factor = bench_parse_size(PROG, argv[++i], "-f");
        else if (!strcmp(argv[i], "-i") && i + 1 < argc) d.iters = (int)bench_parse_size(PROG, argv[++i], "-i");
        else if (!strcmp(argv[i], "-B") && i + 1 < argc)
            d.blocks = (int)bench_parse_size(PROG, argv[++i], "-B");
        else if (!strcmp(argv[i], "--plot") && i + 1 < argc) plot_file = argv[++i];
        else usage();
    }
    if (minb < 4) minb = 4;
    if (maxb < minb || factor < 2 || d.iters < 1 || d.blocks < 1 || d.blocks > MAX_BLOCKS) usage();
    d.warmup = d.iters / 10 + 5;

    DU(duet_init());
    setup(&d, maxb);
    double launch[2], launch_all[2];
    time_launch(&d, &launch[0], &launch[1]);
    DU(duet_allreduce(launch, launch_all, 2, DUET_FLOAT64, DUET_MAX, d.comm, NULL));
    if (d.me == 0) {
        printf("host launch of an empty kernel: %.2f us back to back, %.2f us with a synchronize\n",
               launch_all[0], launch_all[1]);
        printf("%10s %10s %10s %11s %15s %11s %9s  %s\n", "bytes", "put us", "heap us", "+ sync us",
               "cudaMalloc us", "+ sync us", "heap/put", "checked");
        fflush(stdout);
    }

    double sizes[MAX_ROWS], times[MAX_ROWS][COLS];
    int rows = 0, all_ok = 1;
    for (size_t bytes = minb; bytes <= maxb && rows < MAX_ROWS; bytes *= factor) {
        size_t count = bytes / sizeof(float), S = count * sizeof(float); /* both move S bytes */
        long long wrong = 0, wrong_all = 0;
        double t[COLS], slowest[COLS];
        t[PUT] = time_put(&d, S, &wrong);
        for (int kind = 0; kind < AR_KINDS; kind++) {
            int k = kind == AR_HEAP ? HEAP : DEV; /* its columns: k (back to back), k + 1 (synchronized) */
            wrong += check_allreduce(&d, kind, count);
            time_allreduce(&d, kind, count, &t[k], &t[k + 1]);
            wrong += compare_allreduce(&d, kind, count); /* the last timed call's output */
        }
        DU(duet_allreduce(&wrong, &wrong_all, 1, DUET_INT64, DUET_SUM, d.comm, NULL));
        DU(duet_allreduce(t, slowest, COLS, DUET_FLOAT64, DUET_MAX, d.comm, NULL)); /* put: rank 0's */
        all_ok &= wrong_all == 0;
        sizes[rows] = (double)S;
        for (int k = 0; k < COLS; k++) times[rows][k] = slowest[k];
        rows++;
        if (d.me == 0) {
            printf("%10zu %10.2f %10.2f %11.2f %15.2f %11.2f %9.2f  ", S, slowest[PUT], slowest[HEAP],
                   slowest[HEAP_SYNC], slowest[DEV], slowest[DEV_SYNC], slowest[HEAP] / slowest[PUT]);
            if (wrong_all) printf("WRONG (%lld bytes or elements over the ranks)\n", wrong_all);
            else printf("yes\n");
            fflush(stdout);
        }
    }
    if (d.me == 0) report(&d, sizes, times, rows, plot_file);

    teardown(&d);
    DU(duet_finalize());
    if (!all_ok && d.me == 0)
        fprintf(stderr, "%s: a received message or an allreduce result was wrong\n", PROG);
    return all_ok ? 0 : 1;
}
