/* oneshot_gpu.cu — oneshot.c on the GPU: an allreduce written by hand as one kernel with the
 * device API (include/duet/duet_device.cuh), against the library's duet_allreduce on device
 * buffers of two kinds, all on one stream:
 *   - heap: symmetric buffers from duet_malloc_device (the same offsets on every rank): from
 *     64 KiB the library reads the peers' buffers where they lie (its direct kernel);
 *   - cudaMalloc: plain device buffers, as a NCCL user would pass them: from 64 KiB the library
 *     runs what its tuner picks (the schedule executor, or a dedicated kernel), staging through
 *     its own scratch.
 * Under 64 KiB both take the library's one-shot kernel (src/cuda/duet_cuda_coll.c).
 *
 *   duetrun -n 2 oneshot_gpu [-b MIN] [-e MAX] [-f FACTOR] [-i ITERS] [--plot FILE.png]
 *
 * The kernel, for call number e (1, 2, ... the same on every rank; float32 sum). Every rank has in
 * the GPU symmetric heap two slots (one per parity of e) and a flag word per (peer, block). The
 * vector is cut into nb slices, one per CUDA block; nb depends on the size alone, so it is the
 * same on every rank, and block b of every rank deals with slice b and nothing else: the blocks
 * never wait for each other, only for block b of the peers.
 *
 *   1. copy slice b of my input into my slot[e & 1]
 *   2. tell every peer q "my slice b of call e is there": a fence, then my flag word on q,
 *      ready[me][b], set to e (duet_dev_signal_op; one thread per peer, all at once)
 *   3. wait until every peer q has set ready[q][b] here to e or more (duet_dev_signal_wait_until)
 *   4. read slice b of slot[e & 1] of every rank where it lies (the address duet_dev_ptr gives,
 *      plain loads), add in rank order 0, 1, ..., n-1, write my output
 *
 *        rank 0                                    rank 1
 *        in --copy--> slot[p]                      slot[p] <--copy-- in
 *                     ready[1][b] <---- e ------   (flag)
 *        (flag)       ------ e ----> ready[0][b]
 *        out = slot[p]@0 + slot[p]@1               out = slot[p]@0 + slot[p]@1
 *
 * No second round ("I am done reading your slot") is needed. My slot[p] is written again in call
 * e + 2, which starts after my call e + 1 has ended; that call waited for a flag of e + 1 from
 * every peer, and a peer sets it from its kernel of call e + 1, which its stream starts only after
 * its kernel of call e, the one that read my slot[p], has ended. So two slots and one flag per
 * call suffice, as long as each rank runs its calls in order on one stream (a program that spread
 * them over streams would need a "done" round, as the library's own kernel has). Flags are set to
 * e and never reset: they only grow, so nothing is zeroed between calls; a flag of e + 1 (a peer
 * one call ahead) satisfies a wait for e, and that peer's data of e is still in its slot[p] (it
 * writes it again in e + 2, after my flag of e + 1).
 *
 * For each size all three run ITERS times back to back on one stream (after a warm-up), timed with
 * CUDA events; the table gives microseconds per call (the slowest rank) and whether the results
 * agree. Before the timing, four calls with four different inputs (small integers as floats: every
 * order of the sum is exact) run back to back through all three, and each output is compared: the
 * hand-written one's with the exact sum, both of duet_allreduce's with the hand-written one's, bit
 * for bit (and so are the outputs of the last timed calls). A mismatch on any rank makes the exit
 * status 1.
 *
 * The kernels must all be resident at once (block b waits for block b of every peer): nb <= 32
 * blocks of 512 threads per rank, checked against the GPU's capacity at start. They are launched
 * with <<<>>> on the program's stream: a launch per call is part of what the table measures.
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

#define PROG "oneshot_gpu"
#include "../common/fit_plot.h"

enum { HAND, HEAP, DEV, WAYS }; /* the three allreduces: by hand; duet_allreduce on heap / cudaMalloc buffers */

enum {
    THREADS = 512,          /* per block */
    MAX_BLOCKS = 32,        /* slices of one call, at most */
    BLOCK_BYTES = 32 << 10, /* bytes of a slice before another block is added */
    MAX_PES = 128,
    VARIANTS = 4,           /* calls with distinct inputs in each size's check */
    POISON = 0xa5           /* outputs' bytes before the check: 0xa5a5a5a5 is no possible sum */
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
 * The kernel
 * ------------------------------------------------------------------------------------ */
typedef struct {
    duet_device_comm_t h;
    const float *in;
    float *out;
    float *slot;      /* my slot of this call's parity (symmetric) */
    uint64_t *ready;  /* symmetric: n_pes x MAX_BLOCKS; ready[q][b] is written by pe q only */
    size_t count;
    uint64_t call;    /* e */
    int *status;      /* the first failed wait's status (0: none) */
} shot_args_t;

/* Input element i of `rank` in check variant v: a small integer, so every sum is exact. */
__host__ __device__ static inline float input_value(int rank, int v, size_t i)
{
    return (float)(((size_t)rank * 7 + (size_t)v * 5 + i) % 13);
}

/* Elements per slice: count / nb rounded up to whole float4 packs, so every slice but the last
 * starts on a 16-byte boundary. */
__host__ __device__ static inline size_t slice_elems(size_t count, unsigned nb)
{
    return ((count + nb - 1) / nb + 3) & ~(size_t)3;
}

/* dst[lo, hi) = src[lo, hi), shared by the block: float4 packs, then the odd tail. */
static __device__ void copy_slice(float *dst, const float *src, size_t lo, size_t hi)
{
    size_t packs = (hi - lo) / 4;
    const float4 *s = (const float4 *)(src + lo);
    float4 *d = (float4 *)(dst + lo);
    for (size_t v = threadIdx.x; v < packs; v += blockDim.x) d[v] = s[v];
    for (size_t i = lo + packs * 4 + threadIdx.x; i < hi; i += blockDim.x) dst[i] = src[i];
}

/* out[lo, hi) = peer[0][i] + peer[1][i] + ... + peer[n-1][i], in that order. */
static __device__ void sum_slice(float *out, const float *const *peer, int n, size_t lo, size_t hi)
{
    size_t packs = (hi - lo) / 4;
    for (size_t v = threadIdx.x; v < packs; v += blockDim.x) {
        float4 acc = ((const float4 *)(peer[0] + lo))[v];
        for (int q = 1; q < n; q++) {
            float4 x = ((const float4 *)(peer[q] + lo))[v];
            acc.x += x.x, acc.y += x.y, acc.z += x.z, acc.w += x.w;
        }
        ((float4 *)(out + lo))[v] = acc;
    }
    for (size_t i = lo + packs * 4 + threadIdx.x; i < hi; i += blockDim.x) {
        float acc = peer[0][i];
        for (int q = 1; q < n; q++) acc += peer[q][i];
        out[i] = acc;
    }
}

__global__ void __launch_bounds__(THREADS) oneshot_kernel(shot_args_t a)
{
    __shared__ const float *peer[MAX_PES];
    const int me = duet_dev_my_pe(a.h), n = duet_dev_n_pes(a.h), b = (int)blockIdx.x;
    size_t per = slice_elems(a.count, gridDim.x);
    size_t lo = (size_t)b * per < a.count ? (size_t)b * per : a.count;
    size_t hi = a.count - lo < per ? a.count : lo + per;
    for (int q = (int)threadIdx.x; q < n; q += (int)blockDim.x)
        peer[q] = duet_dev_ptr(a.h, (const float *)a.slot, q);

    /* 1. my slice into my slot; the block's copies complete before the flags go out */
    copy_slice(a.slot, a.in, lo, hi);
    __syncthreads();

    /* 2 + 3. thread q talks to pe q: the fence orders the block's copies (synced above) before
     * the flag's relaxed store; the wait's acquire, then the block sync, make q's slice
     * visible to every thread of the block */
    const int q = (int)threadIdx.x;
    int st = DUET_OK;
    if (q < n && q != me) {
        duet_dev_fence(a.h);
        duet_dev_signal_op(a.h, &a.ready[(size_t)me * MAX_BLOCKS + b], a.call, DUET_SIGNAL_SET, q);
        st = duet_dev_signal_wait_until(a.h, &a.ready[(size_t)q * MAX_BLOCKS + b], DUET_CMP_GE, a.call);
    }
    if (__syncthreads_or(st != DUET_OK)) { /* the host set the abort word (a peer died, ...) */
        if (st != DUET_OK) atomicCAS(a.status, 0, st);
        return;
    }

    /* 4. every rank's slice, read where it lies */
    sum_slice(a.out, peer, n, lo, hi);
}

/* Fills x[0, count) with input_value(rank, v, i). */
__global__ void fill_kernel(float *x, size_t count, int rank, int v)
{
    size_t step = (size_t)gridDim.x * blockDim.x;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += step)
        x[i] = input_value(rank, v, i);
}

/* ------------------------------------------------------------------------------------
 * Host side
 * ------------------------------------------------------------------------------------ */
typedef struct {
    duet_comm_t comm;
    duet_device_comm_t h;
    int me, n;
    cudaStream_t stream;
    float *slots;     /* symmetric: 2 slots of `stride` floats */
    uint64_t *ready;  /* symmetric: n x MAX_BLOCKS */
    size_t stride;    /* floats per buffer: the largest count, rounded up to 64 (256 bytes) */
    uint64_t calls;   /* hand-written calls made so far (the same on every rank) */
    int *status;      /* device: the kernels' first failed wait */
    /* VARIANTS buffers of `stride` floats each. in / out[DEV]: cudaMalloc, read by the hand-written
     * kernel and by duet_allreduce on cudaMalloc buffers; in_sym / out[HEAP]: symmetric
     * (duet_malloc_device, the same offsets on every rank), the same inputs, for duet_allreduce on
     * heap buffers */
    float *in, *in_sym, *out[WAYS];
} shot_t;

/* Blocks of a call: one per BLOCK_BYTES, 1 .. MAX_BLOCKS. */
static unsigned blocks_for(size_t count)
{
    size_t nb = (count * sizeof(float) + BLOCK_BYTES - 1) / BLOCK_BYTES;
    return (unsigned)(nb < 1 ? 1 : nb > (size_t)MAX_BLOCKS ? (size_t)MAX_BLOCKS : nb);
}

/* The hand-written allreduce: in -> out (count floats, device memory), on o->stream. */
static void hand_allreduce(shot_t *o, const float *in, float *out, size_t count)
{
    uint64_t e = ++o->calls;
    shot_args_t a = {o->h, in, out, o->slots + (e & 1) * o->stride, o->ready, count, e, o->status};
    oneshot_kernel<<<blocks_for(count), THREADS, 0, o->stream>>>(a);
    CU(cudaGetLastError());
}

static void duet_sum(shot_t *o, const float *in, float *out, size_t count)
{
    DU(duet_allreduce(in, out, count, DUET_FLOAT32, DUET_SUM, o->comm, o->stream));
}

/* Call `way` on input / output v (count floats), on o->stream. */
static void run_way(shot_t *o, int way, int v, size_t count)
{
    size_t at = (size_t)v * o->stride;
    if (way == HAND) hand_allreduce(o, o->in + at, o->out[HAND] + at, count);
    else duet_sum(o, (way == HEAP ? o->in_sym : o->in) + at, o->out[way] + at, count);
}

/* Stops the program when a kernel's wait failed (its status, from the abort word). */
static void check_status(shot_t *o)
{
    int st = 0;
    CU(cudaStreamSynchronize(o->stream));
    CU(cudaMemcpy(&st, o->status, sizeof st, cudaMemcpyDeviceToHost));
    if (st) die("a wait in the hand-written kernel stopped: %s", duet_status_str((duet_status_t)st));
}

/* Outputs v of all three (after the stream's work): the hand-written one's against the exact sum
 * of inputs v, both of duet_allreduce's against the hand-written one's, bit for bit. Returns the
 * number of wrong elements (an element wrong in several outputs counts once per output). */
static long long compare_outputs(shot_t *o, int v, size_t count, float *host_hand, float *host_duet)
{
    check_status(o);
    size_t at = (size_t)v * o->stride;
    CU(cudaMemcpy(host_hand, o->out[HAND] + at, count * sizeof(float), cudaMemcpyDeviceToHost));
    long long wrong = 0;
    for (size_t i = 0; i < count; i++) {
        float want = 0;
        for (int r = 0; r < o->n; r++) want += input_value(r, v, i);
        wrong += memcmp(&host_hand[i], &want, sizeof want) != 0;
    }
    for (int way = HEAP; way <= DEV; way++) {
        CU(cudaMemcpy(host_duet, o->out[way] + at, count * sizeof(float), cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < count; i++) wrong += memcmp(&host_duet[i], &host_hand[i], sizeof(float)) != 0;
    }
    return wrong;
}

/* VARIANTS calls of each, back to back, one input each, then every output checked. Returns the
 * number of wrong elements on this rank. */
static long long check_size(shot_t *o, size_t count, float *host_hand, float *host_duet)
{
    size_t bytes = VARIANTS * o->stride * sizeof(float);
    for (int v = 0; v < VARIANTS; v++) {
        fill_kernel<<<64, 256, 0, o->stream>>>(o->in + v * o->stride, count, o->me, v);
        CU(cudaGetLastError());
        fill_kernel<<<64, 256, 0, o->stream>>>(o->in_sym + v * o->stride, count, o->me, v);
        CU(cudaGetLastError());
    }
    for (int way = 0; way < WAYS; way++) CU(cudaMemsetAsync(o->out[way], POISON, bytes, o->stream));
    for (int v = 0; v < VARIANTS; v++)
        for (int way = 0; way < WAYS; way++) run_way(o, way, v, count);
    long long wrong = 0;
    for (int v = 0; v < VARIANTS; v++) wrong += compare_outputs(o, v, count, host_hand, host_duet);
    return wrong;
}

/* Microseconds per call of `way`: `iters` calls back to back on the stream (after a warm-up), from
 * input 0 into output 0, between two events. */
static double time_calls(shot_t *o, int way, size_t count, int iters, cudaEvent_t t0, cudaEvent_t t1)
{
    CU(cudaStreamSynchronize(o->stream));
    DU(duet_barrier(o->comm));
    for (int it = -(iters / 10 + 5); it < iters; it++) {
        if (it == 0) CU(cudaEventRecord(t0, o->stream));
        run_way(o, way, 0, count);
    }
    CU(cudaEventRecord(t1, o->stream));
    CU(cudaEventSynchronize(t1));
    check_status(o);
    float ms = 0;
    CU(cudaEventElapsedTime(&ms, t0, t1));
    return 1e3 * (double)ms / iters;
}

/* The largest call's blocks of every rank must be resident at once (checked as if all ranks
 * shared this GPU). */
static void check_capacity(const shot_t *o, int dev, size_t max_count)
{
    int per_sm = 0, sms = 0;
    long need = (long)blocks_for(max_count) * o->n;
    CU(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, oneshot_kernel, THREADS, 0));
    CU(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    if ((long)per_sm * sms < need)
        die("%d ranks x %u blocks of %d threads cannot all be resident on this GPU (%d per SM x %d SMs)", o->n,
            blocks_for(max_count), THREADS, per_sm, sms);
}

/* Rank 0's first line: ranks, their GPUs, the run. */
static void print_header(const shot_t *o, int dev, int iters)
{
    int devs[MAX_PES];
    DU(duet_allgather(&dev, devs, 1, DUET_INT32, o->comm, NULL));
    if (o->me != 0) return;
    cudaDeviceProp prop;
    CU(cudaGetDeviceProperties(&prop, dev));
    printf("%s: %d ranks on GPU", PROG, o->n);
    for (int r = 0; r < o->n; r++) printf(" %d", devs[r]);
    printf(" (%s), float32 sum, %d calls per size back to back on one stream\n", prop.name, iters);
    printf("  duet heap: duet_allreduce on buffers from duet_malloc_device (symmetric);"
           " duet cudaMalloc: on buffers from cudaMalloc\n");
    printf("%10s %7s %12s %14s %20s %10s %8s  %s\n", "bytes", "blocks", "by hand us", "duet heap us",
           "duet cudaMalloc us", "hand/heap", "hand/cM", "same result");
    fflush(stdout);
}

/* The picture: the three latencies against size, log-log (gnuplot, when it is there). */
static void plot(const char *file, int n, const double *bytes, const double (*t)[WAYS], int rows)
{
    int piped;
    FILE *gp = plot_open(file, &piped);
    if (!gp) return;
    fprintf(gp, "set terminal png size 800,500 noenhanced\nset output '%s'\nset logscale xy 2\n"
                "set xlabel 'bytes per rank'\nset ylabel 'us per call'\nset key below\n"
                "set format x '%%.0b %%BB'\n"
                "set title 'allreduce on the GPU, %d ranks: one-shot kernel by hand vs duet_allreduce'\n"
                "plot '-' using 1:2 with linespoints lc rgb '#9400d3' title 'by hand (device API)', "
                "'-' using 1:2 with linespoints lc rgb '#0060ad' title 'duet_allreduce, heap (duet_malloc_device)', "
                "'-' using 1:2 with linespoints lc rgb '#d55e00' title 'duet_allreduce, cudaMalloc'\n", file, n);
    for (int which = 0; which < WAYS; which++) {
        for (int i = 0; i < rows; i++) fprintf(gp, "%.0f %g\n", bytes[i], t[i][which]);
        fputs("e\n", gp);
    }
    plot_close(gp, piped, file);
}

static void usage(void)
{
    fprintf(stderr, "usage: duetrun -n P %s [-b MIN] [-e MAX] [-f FACTOR] [-i ITERS] [--plot FILE.png]\n",
            PROG);
    exit(2);
}

int main(int argc, char **argv)
{
    size_t minb = 8, maxb = 1 << 20, factor = 2;
    int iters = 200;
    const char *plot_file = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-b") && i + 1 < argc) minb = bench_parse_size(PROG, argv[++i], "-b");
        else if (!strcmp(argv[i], "-e") && i + 1 < argc) maxb = bench_parse_size(PROG, argv[++i], "-e");
        else if (!strcmp(argv[i], "-f") && i + 1 < argc) factor = bench_parse_size(PROG, argv[++i], "-f");
        else if (!strcmp(argv[i], "-i") && i + 1 < argc) iters = (int)bench_parse_size(PROG, argv[++i], "-i");
        else if (!strcmp(argv[i], "--plot") && i + 1 < argc) plot_file = argv[++i];
        else usage();
    }
    if (minb < 4) minb = 4;
    if (maxb < minb || factor < 2 || iters < 1) usage();

    DU(duet_init());
    shot_t o;
    memset(&o, 0, sizeof o);
    o.comm = duet_comm_world();
    o.me = duet_my_pe();
    o.n = duet_n_pes();
    if (o.n < 2 || o.n > MAX_PES) die("needs 2 to %d ranks, not %d", MAX_PES, o.n);
    int dev = duet_cuda_device(o.comm);
    if (!duet_cuda_available() || dev < 0) die("no GPU heap: every rank needs a GPU (and DUET_CUDA not off)");
    CU(cudaSetDevice(dev));
    DU(duet_device_comm_get(o.comm, &o.h));
    check_capacity(&o, dev, maxb / sizeof(float));

    o.stride = ((maxb / sizeof(float)) + 63) & ~(size_t)63;
    o.slots = (float *)duet_malloc_device(o.comm, 2 * o.stride * sizeof(float));
    o.ready = (uint64_t *)duet_malloc_device(o.comm, (size_t)o.n * MAX_BLOCKS * sizeof(uint64_t));
    size_t vbytes = VARIANTS * o.stride * sizeof(float);
    o.in_sym = (float *)duet_malloc_device(o.comm, vbytes);
    o.out[HEAP] = (float *)duet_malloc_device(o.comm, vbytes);
    if (!o.slots || !o.ready || !o.in_sym || !o.out[HEAP])
        die("duet_malloc_device: %s (raise DUET_CUDA_HEAP_SIZE for a large -e)", duet_last_error());
    /* the flags start at 0 on every rank before anyone sets one */
    CU(cudaMemset(o.ready, 0, (size_t)o.n * MAX_BLOCKS * sizeof(uint64_t)));
    CU(cudaDeviceSynchronize());
    DU(duet_barrier(o.comm));

    CU(cudaMalloc(&o.in, vbytes));
    CU(cudaMalloc(&o.out[HAND], vbytes));
    CU(cudaMalloc(&o.out[DEV], vbytes));
    CU(cudaMalloc(&o.status, sizeof(int)));
    CU(cudaMemset(o.status, 0, sizeof(int)));
    CU(cudaStreamCreateWithFlags(&o.stream, cudaStreamNonBlocking));
    cudaEvent_t t0, t1;
    CU(cudaEventCreate(&t0));
    CU(cudaEventCreate(&t1));
    float *host_hand = (float *)malloc(o.stride * sizeof(float));
    float *host_duet = (float *)malloc(o.stride * sizeof(float));
    if (!host_hand || !host_duet) die("out of host memory");

    print_header(&o, dev, iters);
    enum { MAX_ROWS = 64 };
    double sizes[MAX_ROWS], times[MAX_ROWS][WAYS];
    int rows = 0, all_ok = 1;
    for (size_t bytes = minb; bytes <= maxb && rows < MAX_ROWS; bytes *= factor) {
        size_t count = bytes / sizeof(float);
        long long wrong = check_size(&o, count, host_hand, host_duet), wrong_all = 0;
        double t[WAYS], slowest[WAYS];
        for (int way = 0; way < WAYS; way++) t[way] = time_calls(&o, way, count, iters, t0, t1);
        wrong += compare_outputs(&o, 0, count, host_hand, host_duet); /* the last timed calls' */
        DU(duet_allreduce(&wrong, &wrong_all, 1, DUET_INT64, DUET_SUM, o.comm, NULL));
        DU(duet_allreduce(t, slowest, WAYS, DUET_FLOAT64, DUET_MAX, o.comm, NULL));
        all_ok &= wrong_all == 0;
        sizes[rows] = (double)(count * sizeof(float));
        for (int way = 0; way < WAYS; way++) times[rows][way] = slowest[way];
        rows++;
        if (o.me == 0) {
            printf("%10zu %7u %12.2f %14.2f %20.2f %10.2f %8.2f  ", count * sizeof(float), blocks_for(count),
                   slowest[HAND], slowest[HEAP], slowest[DEV], slowest[HAND] / slowest[HEAP],
                   slowest[HAND] / slowest[DEV]);
            if (wrong_all) printf("NO (%lld wrong elements over the ranks)\n", wrong_all);
            else printf("yes\n");
            fflush(stdout);
        }
    }
    if (o.me == 0 && plot_file) plot(plot_file, o.n, sizes, times, rows);

    CU(cudaStreamSynchronize(o.stream));
    free(host_hand), free(host_duet);
    CU(cudaEventDestroy(t0));
    CU(cudaEventDestroy(t1));
    CU(cudaStreamDestroy(o.stream));
    CU(cudaFree(o.status));
    CU(cudaFree(o.out[DEV]));
    CU(cudaFree(o.out[HAND]));
    CU(cudaFree(o.in));
    DU(duet_free(o.comm, o.out[HEAP]));
    DU(duet_free(o.comm, o.in_sym));
    DU(duet_free(o.comm, o.ready));
    DU(duet_free(o.comm, o.slots));
    DU(duet_finalize());
    if (!all_ok && o.me == 0)
        fprintf(stderr, "%s: the hand-written allreduce and duet_allreduce (heap or cudaMalloc) differ\n", PROG);
    return all_ok ? 0 : 1;
}
