/*
 * nccl_perf.cu — the NCCL anchor for duet-perf's GPU collective modes (duet-perf --device
 * allreduce ... alltoall, tools/perf/perf_device_coll.c).
 *
 * The same modes, flags subset, sizes, table and CSV as those modes, written against NCCL
 * (nccl.h, libnccl.so.2), so that bench/vs_nccl.sh can run both with the same arguments and
 * compare the CSVs row by row. Keep them in step. NCCL exists only on the GPU machine (the
 * nvidia-nccl-cu13 Python package): vs_nccl.sh builds this file there with nvcc; CMake does
 * not build it.
 *
 *   build/bin/duetrun -n 2 build/bench/nccl_perf allreduce -b 8 -e 256M -f 4 --csv out.csv
 *
 * Ranks come from duetrun (DUET_RANK, DUET_NRANKS, DUET_LOCAL_RANK) or mpirun
 * (OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK); rank r uses GPU local_rank % device count (NCCL
 * refuses two ranks on one GPU). NCCL is bootstrapped by unique id: rank 0 writes
 * ncclGetUniqueId's id to a file in /tmp (mode 0600, written whole then renamed into place),
 * the other ranks poll for it (60 s at most), and rank 0 removes it once every rank has
 * joined. NCCL_PERF_UID_FILE names the file (default: /tmp/nccl_perf-uid-<uid>-<job>, <job>
 * mpirun's PMIX_NAMESPACE or OMPI_MCA_ess_base_jobid when set, else <parent pid>-<process
 * group>: duetrun's ranks share its pid and their process group).
 *
 * Modes (float32, every rank; send and recv from cudaMalloc, -e bytes each):
 *   allreduce      ncclAllReduce, sum
 *   broadcast      ncclBroadcast from -r ROOT
 *   reduce         ncclReduce to -r ROOT, sum
 *   allgather      ncclAllGather (bytes: the receive buffer, n blocks)
 *   reducescatter  ncclReduceScatter, sum (bytes: the send buffer, n blocks)
 *   alltoall       ncclGroupStart, ncclSend + ncclRecv with every rank, ncclGroupEnd
 *                  (bytes: each buffer, n blocks)
 * Sizes as duet-perf (nccl-tests'): S = -b..-e is the largest buffer of a rank, count = S / 4,
 * divided by n for the three block modes; the bytes column is max(send, recv) as moved, the
 * count column bytes / 4. algbw = bytes / time (GB = 1e9 B); busbw = algbw x 2(n-1)/n
 * (allreduce), (n-1)/n (allgather, reducescatter, alltoall), 1 (broadcast, reduce).
 * Timing: per size, -w calls, a barrier, then -n calls back to back on one stream between two
 * cudaEvents; time = elapsed / n on each rank, combined by --average (default 1, the mean of
 * the ranks, as duet-perf's collective rows). -V caps a size's timed loop at
 * N bytes of S moved (fewer iterations, and warmup cut alike, as duet-perf's collectives).
 * Check (-c 1): element i of rank r's send buffer is (r * 1000 + i) % 4096 (sums exact in
 * float32), recv is poisoned (bytes 0xa5) before each row, and after the timed loop every
 * rank compares its recv with what the inputs imply (reduce: off the root, recv must stay
 * poisoned); the wrong column is the sum over ranks, -1 when not checked.
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "bench_util.h"

#define PROG       "nccl_perf"
#define ALGO       "nccl"
#define POISON     0xa5 /* byte of recv before a row: float 0xa5a5a5a5, no possible result */

enum { ALLREDUCE, BROADCAST, REDUCE, ALLGATHER, REDUCESCATTER, ALLTOALL };

typedef struct {
    const char *name, *redop;
    int split, send_n, recv_n; /* count = S / 4 / n; that buffer holds n blocks of count */
    int bus;                   /* busbw factor 0: 1, 1: (n-1)/n, 2: 2(n-1)/n          */
    const char *help;
} cmode_t;

static const cmode_t modes[] = {
    {"allreduce", "sum", 0, 0, 0, 2, "ncclAllReduce, float32 sum"},
    {"broadcast", "none", 0, 0, 0, 0, "ncclBroadcast from -r ROOT, float32"},
    {"reduce", "sum", 0, 0, 0, 0, "ncclReduce to -r ROOT, float32 sum"},
    {"allgather", "none", 1, 0, 1, 1, "ncclAllGather, float32 (bytes: the receive buffer, n blocks)"},
    {"reducescatter", "sum", 1, 1, 0, 1, "ncclReduceScatter, float32 sum (bytes: the send buffer, n blocks)"},
    {"alltoall", "none", 1, 1, 1, 1, "ncclSend + ncclRecv with every rank in a group (bytes: each buffer)"},
};
#define NMODES (int)(sizeof modes / sizeof modes[0])

typedef struct {
    /* options */
    size_t minb, maxb, factor, max_volume;
    long iters, warmup; /* -1: the default */
    int check, average, root, mode;
    const char *csv;
    /* job */
    int me, nranks;
    ncclComm_t comm;
    cudaStream_t stream;
    cudaEvent_t ev0, ev1;
    float *send, *recv; /* -e bytes each */
    double *scratch;    /* one double: barrier and reports */
    /* the current size */
    size_t count, send_bytes, recv_bytes, row_bytes;
    double busbw_factor;
} perf_t;

static int g_rank = -1;

#define die(...) bench_die_rank(PROG, g_rank, __VA_ARGS__)

#define CK(call) BENCH_CUDA_CHECK(die, call)

#define NCK(call)                                                                   \
    do {                                                                            \
        ncclResult_t r_ = (call);                                                   \
        if (r_ != ncclSuccess) die("%s failed: %s", #call, ncclGetErrorString(r_)); \
    } while (0)

/* ---------------------------------------------------------------- data (duet-perf's) */
static float in(int r, size_t i) { return (float)(((size_t)r * 1000 + i) % 4096); }

static float sum_in(const perf_t *p, size_t i)
{
    size_t s = 0; /* at most 4095 n: exact in float32 */
    for (int r = 0; r < p->nranks; r++) s += ((size_t)r * 1000 + i) % 4096;
    return (float)s;
}

static float poison(void)
{
    float f;
    memset(&f, POISON, sizeof f);
    return f;
}

/* Element k of this rank's recv after one call. */
static float want(const perf_t *p, size_t k)
{
    size_t c = p->count;
    switch (p->mode) {
    case ALLREDUCE: return sum_in(p, k);
    case BROADCAST: return in(p->root, k);
    case REDUCE: return p->me == p->root ? sum_in(p, k) : poison();
    case ALLGATHER: return in((int)(k / c), k % c);
    case REDUCESCATTER: return sum_in(p, (size_t)p->me * c + k);
    default: return in((int)(k / c), (size_t)p->me * c + k % c); /* alltoall */
    }
}

/* ---------------------------------------------------------------- NCCL */
/* One call of the mode, enqueued on the stream. */
static void call(perf_t *p)
{
    size_t c = p->count;
    cudaStream_t s = p->stream;
    switch (p->mode) {
    case ALLREDUCE: NCK(ncclAllReduce(p->send, p->recv, c, ncclFloat32, ncclSum, p->comm, s)); break;
    case BROADCAST: NCK(ncclBroadcast(p->send, p->recv, c, ncclFloat32, p->root, p->comm, s)); break;
    case REDUCE: NCK(ncclReduce(p->send, p->recv, c, ncclFloat32, ncclSum, p->root, p->comm, s)); break;
    case ALLGATHER: NCK(ncclAllGather(p->send, p->recv, c, ncclFloat32, p->comm, s)); break;
    case REDUCESCATTER: NCK(ncclReduceScatter(p->send, p->recv, c, ncclFloat32, ncclSum, p->comm, s)); break;
    default: /* alltoall: block r of send to rank r, block r of recv from rank r */
        NCK(ncclGroupStart());
        for (int r = 0; r < p->nranks; r++) {
            NCK(ncclSend(p->send + (size_t)r * c, c, ncclFloat32, r, p->comm, s));
            NCK(ncclRecv(p->recv + (size_t)r * c, c, ncclFloat32, r, p->comm, s));
        }
        NCK(ncclGroupEnd());
        break;
    }
}

/* Waits for the stream, then asks NCCL whether anything failed asynchronously. */
static void sync_stream(perf_t *p)
{
    CK(cudaStreamSynchronize(p->stream));
    ncclResult_t async = ncclSuccess;
    NCK(ncclCommGetAsyncError(p->comm, &async));
    if (async != ncclSuccess) die("NCCL asynchronous error: %s", ncclGetErrorString(async));
}

/* v combined over every rank (ncclSum, ncclMin, ncclMax), through NCCL on the GPU. */
static double allreduce_double(perf_t *p, double v, ncclRedOp_t op)
{
    CK(cudaMemcpyAsync(p->scratch, &v, sizeof v, cudaMemcpyHostToDevice, p->stream));
    NCK(ncclAllReduce(p->scratch, p->scratch, 1, ncclFloat64, op, p->comm, p->stream));
    CK(cudaMemcpyAsync(&v, p->scratch, sizeof v, cudaMemcpyDeviceToHost, p->stream));
    sync_stream(p);
    return v;
}

static void barrier(perf_t *p) { (void)allreduce_double(p, 0, ncclSum); }

/* ---------------------------------------------------------------- command line */
static void usage(FILE *f)
{
    fprintf(f, "usage: duetrun -n N nccl_perf MODE [flags]\nmodes:\n");
    for (int i = 0; i < NMODES; i++) fprintf(f, "  %-13s %s\n", modes[i].name, modes[i].help);
    fprintf(f,
            "flags:\n"
            "  -b, --minbytes N     smallest size (K/M/G suffixes)                 [8]\n"
            "  -e, --maxbytes N     largest size                                   [64M]\n"
            "  -f, --stepfactor F   multiplier between sizes                       [2]\n"
            "  -n, --iters N        timed iterations                               [1000]\n"
            "  -w, --warmup_iters N untimed iterations first [10%% of -n, at least 5]\n"
            "  -r, --root R         root of broadcast and reduce                   [0]\n"
            "  -c, --check 0|1      verify every row; wrong: -1 when not checked   [1]\n"
            "  -V, --max-volume N   fewer iterations for sizes that would move more than\n"
            "                       N bytes per timed loop (0: no cap)             [1G]\n"
            "      --average 0|1|2|3  a row's time from the ranks' times:\n"
            "                       0 rank 0, 1 mean, 2 min, 3 max                 [1]\n"
            "      --csv FILE       also write the rows as CSV (rank 0)\n"
            "      --device         accepted and ignored (duet-perf's flag)\n"
            "  -h, --help\n");
}

static void parse_args(perf_t *p, int argc, char **argv)
{
    enum { OPT_CSV = 256, OPT_AVERAGE, OPT_DEVICE };
    static const struct option longopts[] = {
        {"minbytes", required_argument, NULL, 'b'},     {"maxbytes", required_argument, NULL, 'e'},
        {"stepfactor", required_argument, NULL, 'f'},   {"iters", required_argument, NULL, 'n'},
        {"warmup_iters", required_argument, NULL, 'w'}, {"root", required_argument, NULL, 'r'},
        {"check", required_argument, NULL, 'c'},        {"max-volume", required_argument, NULL, 'V'},
        {"average", required_argument, NULL, OPT_AVERAGE}, {"csv", required_argument, NULL, OPT_CSV},
        {"device", no_argument, NULL, OPT_DEVICE},      {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    p->minb = 8, p->maxb = (size_t)64 << 20, p->factor = 2, p->max_volume = (size_t)1 << 30;
    p->iters = p->warmup = -1, p->check = 1, p->average = 1, p->root = 0, p->mode = -1, p->csv = NULL;
    int c;
    while ((c = getopt_long(argc, argv, "b:e:f:n:w:r:c:V:h", longopts, NULL)) != -1) {
        if (bench_sweep_flag(PROG, c, optarg, &p->minb, &p->maxb, &p->factor, &p->iters, &p->warmup)) continue;
        switch (c) {
        case 'r': p->root = (int)bench_parse_size(PROG, optarg, "-r"); break;
        case 'c': p->check = bench_parse_size(PROG, optarg, "-c") != 0; break;
        case 'V': p->max_volume = bench_parse_size(PROG, optarg, "-V"); break;
        case OPT_AVERAGE: p->average = (int)bench_parse_size(PROG, optarg, "--average"); break;
        case OPT_CSV: p->csv = optarg; break;
        case OPT_DEVICE: break;
        case 'h': if (g_rank <= 0) usage(stdout); exit(0);
        default: usage(stderr); exit(2);
        }
    }
    if (optind != argc - 1) {
        usage(stderr);
        exit(2);
    }
    for (int i = 0; i < NMODES; i++)
        if (strcmp(argv[optind], modes[i].name) == 0) p->mode = i;
    if (p->mode < 0) die("unknown mode '%s' (try -h)", argv[optind]);
    if (p->maxb < p->minb) die("-e is smaller than -b");
    if (p->factor < 2) die("-f must be at least 2");
    if (p->iters == 0) die("-n must be at least 1");
    if (p->average > 3) die("--average takes 0, 1, 2 or 3");
    if (p->iters < 0) p->iters = 1000;
    if (p->warmup < 0) p->warmup = bench_default_warmup(p->iters);
}

/* ---------------------------------------------------------------- the driver */
/* One row: shape, poison, warmup, barrier, timed loop, verify; every rank's time combined
 * and every rank's wrong count summed. Returns the row's wrong count (rank 0; 0 elsewhere). */
static long long run_row(perf_t *p, size_t bytes, FILE *csv)
{
    const cmode_t *m = &modes[p->mode];
    size_t n = (size_t)p->nranks;
    p->count = m->split ? bytes / 4 / n : bytes / 4;
    p->send_bytes = p->count * (m->send_n ? n : 1) * 4;
    p->recv_bytes = p->count * (m->recv_n ? n : 1) * 4;
    p->row_bytes = p->send_bytes > p->recv_bytes ? p->send_bytes : p->recv_bytes;
    double f = (double)(p->nranks - 1) / p->nranks;
    p->busbw_factor = m->bus == 2 ? 2 * f : m->bus == 1 ? f : 1;

    long iters = p->iters, warmup = p->warmup;
    if (p->max_volume && bytes && (double)bytes * (double)iters > (double)p->max_volume) {
        iters = (long)((double)p->max_volume / (double)bytes); /* the same on every rank */
        if (iters < 1) iters = 1;
        warmup = warmup * iters / p->iters;
        if (warmup < 1) warmup = 1;
    }
    if (p->recv_bytes) CK(cudaMemsetAsync(p->recv, POISON, p->recv_bytes, p->stream));
    for (long i = 0; i < warmup; i++) call(p);
    sync_stream(p);
    barrier(p);
    CK(cudaEventRecord(p->ev0, p->stream));
    for (long i = 0; i < iters; i++) call(p);
    CK(cudaEventRecord(p->ev1, p->stream));
    sync_stream(p);
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, p->ev0, p->ev1));
    double us = (double)ms * 1e3 / (double)iters;

    double wrong = 0;
    size_t elems = p->recv_bytes / 4;
    if (p->check && elems) {
        float *buf = (float *)malloc(elems * 4);
        if (!buf) die("out of memory");
        CK(cudaMemcpy(buf, p->recv, elems * 4, cudaMemcpyDeviceToHost));
        for (size_t k = 0; k < elems; k++) wrong += buf[k] != want(p, k);
        free(buf);
    }
    wrong = allreduce_double(p, wrong, ncclSum);
    double time_us = us;
    if (p->average == 1) time_us = allreduce_double(p, us, ncclSum) / p->nranks;
    else if (p->average == 2) time_us = allreduce_double(p, us, ncclMin);
    else if (p->average == 3) time_us = allreduce_double(p, us, ncclMax);
    if (p->me != 0) return 0;

    double algbw = time_us > 0 ? (double)p->row_bytes / time_us / 1e3 : 0, busbw = algbw * p->busbw_factor;
    long long w = p->check ? (long long)wrong : -1;
    bench_table_row(csv, m->name, p->row_bytes, p->row_bytes / 4, "float32", m->redop, ALGO, time_us, algbw, busbw, w);
    return w > 0 ? w : 0;
}

int main(int argc, char **argv)
{
    perf_t p;
    memset(&p, 0, sizeof p);
    int rank = bench_env_int("DUET_RANK", "OMPI_COMM_WORLD_RANK", -1);
    int nranks = bench_env_int("DUET_NRANKS", "OMPI_COMM_WORLD_SIZE", -1);
    int local = bench_env_int("DUET_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", rank);
    g_rank = rank;
    parse_args(&p, argc, argv);
    if (rank < 0 || nranks < 1 || rank >= nranks)
        die("DUET_RANK / DUET_NRANKS not set: start it with duetrun -n N (or mpirun -np N)");
    if (p.root < 0 || p.root >= nranks) die("-r %d: the root must be a rank, 0 .. %d", p.root, nranks - 1);
    p.me = rank, p.nranks = nranks;

    int ndev = 0;
    CK(cudaGetDeviceCount(&ndev));
    if (ndev < 1) die("no GPU");
    CK(cudaSetDevice(local % ndev));

    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    char uidpath[512], err[1024];
    bench_uid_path(uidpath, sizeof uidpath, "NCCL_PERF_UID_FILE", PROG, 1);
    if (rank == 0) NCK(ncclGetUniqueId(&id));
    if (bench_share_uid(rank, &id, sizeof id, uidpath, err, sizeof err) != 0) die("%s", err);
    NCK(ncclCommInitRank(&p.comm, nranks, id, rank));
    CK(cudaStreamCreateWithFlags(&p.stream, cudaStreamNonBlocking));
    CK(cudaEventCreate(&p.ev0));
    CK(cudaEventCreate(&p.ev1));
    CK(cudaMalloc((void **)&p.scratch, sizeof(double)));
    barrier(&p); /* every rank has joined */
    if (rank == 0) unlink(uidpath);

    /* send and recv: -e bytes each (at least one float); send holds in(me, i) throughout */
    size_t nb = p.maxb > 4 ? p.maxb : 4;
    CK(cudaMalloc((void **)&p.send, nb));
    CK(cudaMalloc((void **)&p.recv, nb));
    float *host = (float *)malloc(nb);
    if (!host) die("out of memory");
    for (size_t i = 0; i < nb / 4; i++) host[i] = in(p.me, i);
    CK(cudaMemcpy(p.send, host, nb / 4 * 4, cudaMemcpyHostToDevice));
    free(host);

    const cmode_t *m = &modes[p.mode];
    FILE *csv = NULL;
    if (p.me == 0) {
        static const char *avg[] = {"rank 0", "mean over ranks", "min over ranks", "max over ranks"};
        if (p.csv && !(csv = fopen(p.csv, "w"))) die("cannot open %s for writing", p.csv);
        if (csv) fprintf(csv, BENCH_CSV_HEADER "\n");
        int ver = 0;
        NCK(ncclGetVersion(&ver));
        printf("# nccl_perf %s: %d ranks, iters %ld, warmup %ld, max volume %zu, check %d, time: %s", m->name,
               p.nranks, p.iters, p.warmup, p.max_volume, p.check, avg[p.average]);
        if (p.mode == BROADCAST || p.mode == REDUCE) printf(", root %d", p.root);
        printf(", NCCL %d.%d.%d\n", ver / 10000, ver / 100 % 100, ver % 100);
        bench_table_header();
        fflush(stdout);
    }
    long long total_wrong = 0;
    for (size_t bytes = p.minb;; bytes = bytes ? bytes * p.factor : 1) {
        total_wrong += run_row(&p, bytes, csv);
        if (bytes >= p.maxb || bytes > p.maxb / p.factor) break; /* the next size is past -e */
    }
    if (csv && fclose(csv) != 0) die("cannot write %s", p.csv);
    if (total_wrong) fprintf(stderr, "nccl_perf: %lld wrong results\n", total_wrong);
    barrier(&p);
    CK(cudaFree(p.send));
    CK(cudaFree(p.recv));
    CK(cudaFree(p.scratch));
    CK(cudaEventDestroy(p.ev0));
    CK(cudaEventDestroy(p.ev1));
    CK(cudaStreamDestroy(p.stream));
    NCK(ncclCommDestroy(p.comm));
    return total_wrong ? 1 : 0;
}
