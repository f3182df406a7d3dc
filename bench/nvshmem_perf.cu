/*
 * nvshmem_perf.cu — the NVSHMEM anchor for duet-perf's device modes (duet-perf --device).
 *
 * The same modes, flags subset, table and CSV as duet-perf's device modes
 * (tools/perf/perf_device.{c,cu}), written against NVSHMEM 3.x, so that bench/vs_nvshmem.sh
 * can run both with the same arguments and compare the CSVs row by row. Keep them in step.
 * NVSHMEM exists only on the GPU machine: vs_nvshmem.sh builds this file there with nvcc
 * (-rdc=true, NVSHMEM's host library and device library); CMake does not build it.
 *
 *   build/bin/duetrun -n 2 build/bench/nvshmem_perf pingpong --csv out.csv
 *
 * Ranks come from duetrun (DUET_RANK, DUET_NRANKS, DUET_LOCAL_RANK); NVSHMEM is bootstrapped
 * by unique id: rank 0 writes nvshmemx_get_uniqueid's id to a file in /tmp (mode 0600,
 * written whole then renamed into place), the other ranks poll for it (60 s at most), and
 * rank 0 removes it once every rank has joined. NVSHMEM_PERF_UID_FILE names the file
 * (default: /tmp/nvshmem_perf-uid-<uid>-<parent pid>-<process group>; duetrun's ranks share
 * its pid and their process group).
 *
 * Modes (pair modes run between PEs 0 and 1; other PEs only join barriers), time = PE 0's:
 *   pingpong  a kernel (one thread) on PEs 0 and 1: nvshmem_uint64_p + nvshmem_uint64_wait_until
 *             round trips; time_us = one round trip (one kernel launch per row included)
 *   put       a kernel on PE 0: nvshmemx_putmem_nbi_block of the size, split over up to 4 blocks
 *             per SM (512 threads, at least 64 KiB per block, as duet-perf), n times, then
 *             nvshmem_quiet; time_us = one put of the size
 *   barrier   host: nvshmem_barrier_all on every PE; time_us = one barrier
 *   pquiet    host: PE 0 nvshmem_uint64_p to PE 1, then nvshmem_quiet; time_us = one p + quiet
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include "bench_util.h"

#define PROG       "nvshmem_perf"
#define ALGO       "nvshmem"

typedef struct perf perf_t;

typedef struct {
    const char *name, *dtype;
    size_t elem_size;   /* bytes per element, for the count column (0: count 0)  */
    size_t fixed_bytes; /* bytes of the single row of a mode that does not sweep */
    int sized;          /* sweeps -b .. -e by -f                                 */
    int pair;           /* runs between PEs 0 and 1                              */
    long default_iters;
    void (*setup)(perf_t *, size_t bytes);        /* before the warmup (may be NULL) */
    void (*body)(perf_t *, size_t bytes, long n); /* n iterations                    */
    uint64_t (*verify)(perf_t *, size_t bytes);   /* this PE's wrong results         */
    const char *help;
} pmode_t;

struct perf {
    /* options */
    size_t minb, maxb, factor;
    long iters, warmup; /* -1: the mode's default */
    int check;
    const char *csv;
    const pmode_t *mode;
    /* job */
    int me, npes, sms;
    uint64_t *flag;   /* symmetric: pingpong flag, then slot, report (one 64 B line each) */
    uint64_t *slot, *report;
    char *target;     /* symmetric: -e bytes (put)                                      */
    char *origin;     /* symmetric: -e bytes, PE 0's source (put)                       */
    uint64_t seq;
};

static int g_rank = -1;

#define die(...) bench_die_rank(PROG, g_rank, __VA_ARGS__)

#define CK(call) BENCH_CUDA_CHECK(die, call)

/* duet-perf's verification byte (perf_device.c): differs per size. */
static inline uint8_t pattern(size_t j, size_t bytes)
{
    uint32_t x = (uint32_t)j * 2654435761u + (uint32_t)bytes * 40503u + 1u;
    x ^= x >> 15;
    return (uint8_t)(x ^ (x >> 8));
}

/* ---------------------------------------------------------------- kernels */
/* PE 0 p's v into PE 1's flag and waits for its own flag to reach v; PE 1 waits, then p's v
 * back. One thread, n round trips. */
__global__ void k_pingpong(uint64_t *flag, uint64_t base, long n)
{
    int me = nvshmem_my_pe();
    for (long i = 1; i <= n; i++) {
        uint64_t v = base + (uint64_t)i;
        if (me == 0) {
            nvshmem_uint64_p(flag, v, 1);
            nvshmem_uint64_wait_until(flag, NVSHMEM_CMP_GE, v);
        } else {
            nvshmem_uint64_wait_until(flag, NVSHMEM_CMP_GE, v);
            nvshmem_uint64_p(flag, v, 0);
        }
    }
}

/* Block b moves [b * chunk, min(bytes, (b + 1) * chunk)) n times, then quiet. */
__global__ void k_put(char *dst, const char *src, size_t bytes, size_t chunk, long n, int pe)
{
    size_t off = (size_t)blockIdx.x * chunk;
    if (off >= bytes) return;
    size_t len = bytes - off < chunk ? bytes - off : chunk;
    for (long i = 0; i < n; i++) nvshmemx_putmem_nbi_block(dst + off, src + off, len, pe);
    nvshmem_quiet();
}

/* ---------------------------------------------------------------- pingpong */
static void pingpong_body(perf_t *p, size_t bytes, long n)
{
    (void)bytes;
    if (p->me <= 1) {
        k_pingpong<<<1, 1>>>(p->flag, p->seq, n);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
    }
    p->seq += (uint64_t)n;
}

static uint64_t pingpong_verify(perf_t *p, size_t bytes)
{
    (void)bytes;
    if (p->me > 1) return 0;
    uint64_t v;
    CK(cudaMemcpy(&v, p->flag, sizeof v, cudaMemcpyDeviceToHost));
    return v != p->seq;
}

/* ---------------------------------------------------------------- put */
static void put_setup(perf_t *p, size_t bytes)
{
    if (!bytes || p->me > 1) return;
    uint8_t *buf = (uint8_t *)malloc(bytes);
    if (!buf) die("out of memory");
    for (size_t j = 0; j < bytes; j++) buf[j] = (uint8_t)(p->me == 0 ? pattern(j, bytes) : ~pattern(j, bytes));
    CK(cudaMemcpy(p->me == 0 ? p->origin : p->target, buf, bytes, cudaMemcpyHostToDevice));
    free(buf);
}

static void put_body(perf_t *p, size_t bytes, long n)
{
    if (p->me != 0 || !bytes || n <= 0) return;
    size_t blocks = (bytes + (64u << 10) - 1) / (64u << 10); /* at least 64 KiB per block */
    size_t max_blocks = 4 * (size_t)p->sms;
    if (blocks > max_blocks) blocks = max_blocks;
    size_t chunk = ((bytes + blocks - 1) / blocks + 15) & ~(size_t)15;
    blocks = (bytes + chunk - 1) / chunk;
    k_put<<<(unsigned)blocks, 512>>>(p->target, p->origin, bytes, chunk, n, 1);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
}

static uint64_t put_verify(perf_t *p, size_t bytes)
{
    if (p->me != 1 || !bytes) return 0;
    uint8_t *buf = (uint8_t *)malloc(bytes);
    if (!buf) die("out of memory");
    CK(cudaMemcpy(buf, p->target, bytes, cudaMemcpyDeviceToHost));
    uint64_t bad = 0;
    for (size_t j = 0; j < bytes; j++) bad += buf[j] != pattern(j, bytes);
    free(buf);
    return bad;
}

/* ---------------------------------------------------------------- barrier (host) */
static void barrier_body(perf_t *p, size_t bytes, long n)
{
    (void)p, (void)bytes;
    for (long i = 0; i < n; i++) nvshmem_barrier_all();
}

/* Each PE p's round i into its right neighbour's slot, then barriers: a barrier completes
 * earlier puts, so every slot must hold i after it. */
static uint64_t barrier_verify(perf_t *p, size_t bytes)
{
    (void)bytes;
    uint64_t bad = 0;
    for (uint64_t i = 1; i <= 100; i++) {
        nvshmem_uint64_p(p->slot, i, (p->me + 1) % p->npes);
        nvshmem_barrier_all();
        uint64_t v;
        CK(cudaMemcpy(&v, p->slot, sizeof v, cudaMemcpyDeviceToHost));
        bad += v != i;
        nvshmem_barrier_all();
    }
    return bad;
}

/* ---------------------------------------------------------------- p + quiet (host) */
static void pquiet_body(perf_t *p, size_t bytes, long n)
{
    (void)bytes;
    if (p->me == 0) {
        for (long i = 1; i <= n; i++) {
            nvshmem_uint64_p(p->flag, p->seq + (uint64_t)i, 1);
            nvshmem_quiet();
        }
    }
    p->seq += (uint64_t)n;
}

static uint64_t pquiet_verify(perf_t *p, size_t bytes)
{
    (void)bytes;
    if (p->me != 1) return 0;
    uint64_t v;
    CK(cudaMemcpy(&v, p->flag, sizeof v, cudaMemcpyDeviceToHost));
    return v != p->seq;
}

/* ---------------------------------------------------------------- the modes */
static const pmode_t modes[] = {
    {"pingpong", "uint64", 8, 8, 0, 1, 10000, NULL, pingpong_body, pingpong_verify,
     "in a kernel: p + wait_until round trip between PEs 0 and 1"},
    {"put", "uint8", 1, 0, 1, 1, 100, put_setup, put_body, put_verify,
     "in a kernel on PE 0: putmem_nbi_block to PE 1 over many blocks, then quiet"},
    {"barrier", "none", 0, 0, 0, 0, 10000, NULL, barrier_body, barrier_verify,
     "host: barrier_all on every PE"},
    {"pquiet", "uint64", 8, 8, 0, 1, 10000, NULL, pquiet_body, pquiet_verify,
     "host: PE 0 p's to PE 1, then quiet"},
};
#define NMODES (sizeof modes / sizeof modes[0])

static void usage(FILE *f)
{
    fprintf(f, "usage: duetrun -n N nvshmem_perf MODE [flags]\nmodes:\n");
    for (size_t i = 0; i < NMODES; i++) fprintf(f, "  %-9s %s\n", modes[i].name, modes[i].help);
    fprintf(f,
            "flags:\n"
            "  -b, --minbytes N     smallest size (K/M/G suffixes; put only)        [8]\n"
            "  -e, --maxbytes N     largest size                                   [64M]\n"
            "  -f, --stepfactor F   multiplier between sizes                       [2]\n"
            "  -n, --iters N        timed iterations [100 put, 10000 others]\n"
            "  -w, --warmup_iters N untimed iterations first [10%% of -n, at least 5]\n"
            "  -c, --check 0|1      verify every row; wrong: -1 when not checked   [1]\n"
            "      --csv FILE       also write the rows as CSV (rank 0)\n"
            "      --device         accepted and ignored (duet-perf's flag)\n"
            "  -h, --help\n");
}

static void parse_args(perf_t *p, int argc, char **argv)
{
    enum { OPT_CSV = 256, OPT_DEVICE };
    static const struct option longopts[] = {
        {"minbytes", required_argument, NULL, 'b'},    {"maxbytes", required_argument, NULL, 'e'},
        {"stepfactor", required_argument, NULL, 'f'},  {"iters", required_argument, NULL, 'n'},
        {"warmup_iters", required_argument, NULL, 'w'}, {"check", required_argument, NULL, 'c'},
        {"csv", required_argument, NULL, OPT_CSV},     {"device", no_argument, NULL, OPT_DEVICE},
        {"help", no_argument, NULL, 'h'},              {NULL, 0, NULL, 0}};
    p->minb = 8, p->maxb = (size_t)64 << 20, p->factor = 2;
    p->iters = p->warmup = -1, p->check = 1, p->csv = NULL;
    int c;
    while ((c = getopt_long(argc, argv, "b:e:f:n:w:c:h", longopts, NULL)) != -1) {
        if (bench_sweep_flag(PROG, c, optarg, &p->minb, &p->maxb, &p->factor, &p->iters, &p->warmup)) continue;
        switch (c) {
        case 'c': p->check = bench_parse_size(PROG, optarg, "-c") != 0; break;
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
    for (size_t i = 0; i < NMODES; i++)
        if (strcmp(argv[optind], modes[i].name) == 0) p->mode = &modes[i];
    if (!p->mode) die("unknown mode '%s' (try -h)", argv[optind]);
    if (p->maxb < p->minb) die("-e is smaller than -b");
    if (p->factor < 2) die("-f must be at least 2");
    if (p->iters == 0) die("-n must be at least 1");
    if (p->iters < 0) p->iters = p->mode->default_iters;
    if (p->warmup < 0) p->warmup = bench_default_warmup(p->iters);
}

/* ---------------------------------------------------------------- the driver */
/* One row: setup, barrier, warmup, barrier, timed loop, barrier, verify; rank 0's time and
 * every rank's wrong count (as duet-perf's run_row). Returns the row's wrong count (PE 0). */
static long long run_row(perf_t *p, size_t bytes, FILE *csv)
{
    const pmode_t *m = p->mode;
    if (m->setup) m->setup(p, bytes);
    nvshmem_barrier_all();
    m->body(p, bytes, p->warmup);
    nvshmem_barrier_all();
    uint64_t t0 = bench_now_ns();
    m->body(p, bytes, p->iters);
    uint64_t t1 = bench_now_ns();
    nvshmem_barrier_all();
    uint64_t wrong = p->check && m->verify ? m->verify(p, bytes) : 0;
    /* every PE's wrong count to PE 0 */
    CK(cudaMemcpy(p->report, &wrong, sizeof wrong, cudaMemcpyHostToDevice));
    nvshmem_barrier_all();
    if (p->me != 0) {
        nvshmem_barrier_all();
        return 0;
    }
    uint64_t total = 0;
    for (int pe = 0; pe < p->npes; pe++) total += pe == 0 ? wrong : nvshmem_uint64_g(p->report, pe);
    nvshmem_barrier_all();

    double us = (double)(t1 - t0) / 1e3 / (double)p->iters;
    double gbps = us > 0 ? (double)bytes / us / 1e3 : 0;
    size_t count = m->elem_size ? bytes / m->elem_size : 0;
    long long w = p->check && m->verify ? (long long)total : -1;
    bench_table_row(csv, m->name, bytes, count, m->dtype, "none", ALGO, us, gbps, gbps, w);
    return w > 0 ? w : 0;
}

int main(int argc, char **argv)
{
    perf_t p;
    memset(&p, 0, sizeof p);
    int rank = bench_env_int("DUET_RANK", NULL, -1), nranks = bench_env_int("DUET_NRANKS", NULL, -1);
    int local = bench_env_int("DUET_LOCAL_RANK", NULL, rank);
    g_rank = rank;
    parse_args(&p, argc, argv);
    if (rank < 0 || nranks < 1 || rank >= nranks)
        die("DUET_RANK / DUET_NRANKS not set: start it with duetrun -n N");
    const pmode_t *m = p.mode;
    if (m->pair && nranks < 2) die("mode %s needs at least 2 ranks", m->name);

    int ndev = 0;
    CK(cudaGetDeviceCount(&ndev));
    if (ndev < 1) die("no GPU");
    int dev = local % ndev;
    CK(cudaSetDevice(dev));
    CK(cudaDeviceGetAttribute(&p.sms, cudaDevAttrMultiProcessorCount, dev));

    nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
    char uidpath[512], err[1024];
    bench_uid_path(uidpath, sizeof uidpath, "NVSHMEM_PERF_UID_FILE", PROG, 0);
    if (rank == 0 && nvshmemx_get_uniqueid(&id) != 0) die("nvshmemx_get_uniqueid failed");
    if (bench_share_uid(rank, &id, sizeof id, uidpath, err, sizeof err) != 0) die("%s", err);
    nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
    if (nvshmemx_set_attr_uniqueid_args(rank, nranks, &id, &attr) != 0) die("nvshmemx_set_attr_uniqueid_args failed");
    if (nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr) != 0) die("nvshmemx_init_attr failed");
    if (rank == 0) unlink(uidpath); /* every rank has joined */
    p.me = nvshmem_my_pe(), p.npes = nvshmem_n_pes();
    if (p.me != rank) die("NVSHMEM PE %d is not rank %d", p.me, rank);

    /* flag, slot, report: one 64-byte line each */
    p.flag = (uint64_t *)nvshmem_calloc(3 * 8, sizeof(uint64_t));
    if (!p.flag) die("nvshmem_calloc failed");
    p.slot = p.flag + 8, p.report = p.flag + 16;
    if (m->sized) {
        size_t n = p.maxb ? p.maxb : 1;
        p.target = (char *)nvshmem_malloc(n);
        p.origin = (char *)nvshmem_malloc(n);
        if (!p.target || !p.origin)
            die("cannot allocate 2 x -e = %zu bytes of symmetric heap: raise NVSHMEM_SYMMETRIC_SIZE or lower -e", 2 * n);
    }
    nvshmem_barrier_all();

    FILE *csv = NULL;
    if (p.me == 0) {
        if (p.csv && !(csv = fopen(p.csv, "w"))) die("cannot open %s for writing", p.csv);
        if (csv) fprintf(csv, BENCH_CSV_HEADER "\n");
        int maj = 0, min = 0;
        nvshmem_info_get_version(&maj, &min);
        printf("# nvshmem_perf %s: %d PEs, iters %ld, warmup %ld, NVSHMEM (spec %d.%d)\n", m->name, p.npes, p.iters,
               p.warmup, maj, min);
        bench_table_header();
        fflush(stdout);
    }
    long long total_wrong = 0;
    size_t lo = m->sized ? p.minb : m->fixed_bytes, hi = m->sized ? p.maxb : m->fixed_bytes;
    for (size_t bytes = lo;; bytes = bytes ? bytes * p.factor : 1) {
        total_wrong += run_row(&p, bytes, csv);
        if (bytes >= hi || bytes > hi / p.factor) break; /* the next size is past -e */
    }
    if (csv && fclose(csv) != 0) die("cannot write %s", p.csv);
    if (total_wrong) fprintf(stderr, "nvshmem_perf: %lld wrong results\n", total_wrong);
    nvshmem_barrier_all();
    if (p.origin) nvshmem_free(p.origin);
    if (p.target) nvshmem_free(p.target);
    nvshmem_free(p.flag);
    nvshmem_finalize();
    return total_wrong ? 1 : 0;
}
