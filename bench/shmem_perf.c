/*
 * shmem_perf.c — the OpenSHMEM anchor for duet-perf's one-sided modes.
 *
 * The same five modes, flags, table and CSV as duet-perf (tools/perf/), written against
 * OpenSHMEM 1.4 (Open MPI 4.1's oshmem), so that bench/vs_oshmem.sh can run both with the
 * same arguments and compare the CSVs row by row. Keep the two files in step.
 *
 *   oshcc -O2 -o build/bench/shmem_perf bench/shmem_perf.c
 *   oshrun --mca osc ^rdma --allow-run-as-root -np 2 build/bench/shmem_perf pingpong
 *
 * Modes (pingpong/put/get/atomic run between PEs 0 and 1; other PEs only join barriers):
 *   pingpong  PE 0 p's i into PE 1's flag and waits for its own flag == i; PE 1 answers.
 *             time_us = one round trip.
 *   put       PE 0 issues a window of -W putmem_nbi of `bytes` to PE 1, then quiet.
 *   get       the same with getmem_nbi from PE 1.          time_us = per operation.
 *   atomic    PE 0 long_atomic_fetch_add on PE 1's counter; time_us = per operation.
 *   barrier   every PE calls barrier_all; time_us = per barrier.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <shmem.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

#define PROG       "shmem_perf"
#define ALGO       "oshmem"

typedef struct {
    /* options */
    size_t minb, maxb, factor, max_volume;
    long iters, warmup; /* -1: the mode's default */
    long window;
    const char *csv;
    /* job */
    int me, npes;
    /* symmetric memory: origin is used on PE 0, target is the object accessed on PE 1 */
    long *flag, *counter, *result, *slot;
    uint8_t *origin, *target;
    /* state carried across iterations */
    long seq, adds, bad_fetches;
} perf_t;

typedef struct {
    const char *name, *dtype;
    size_t elem_size;     /* bytes per element, for the count column (0: count 0)   */
    size_t fixed_bytes;   /* bytes of the single row of a mode that does not sweep  */
    int sized;            /* sweeps -b .. -e by -f                                  */
    int pair;             /* runs between PEs 0 and 1                               */
    int windowed;         /* one iteration is -W operations                         */
    long default_iters;
    void (*setup)(perf_t *, size_t bytes);          /* before the warmup (may be NULL) */
    void (*body)(perf_t *, size_t bytes, long n);   /* n iterations                    */
    long (*verify)(perf_t *, size_t bytes);         /* after the timed loop; wrongs    */
    const char *help;
} perf_mode_t;

static void die(const perf_t *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void die(const perf_t *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    bench_vreport(PROG, "PE", p->me, fmt, ap);
    va_end(ap);
    exit(1);
}

/* The verification byte at offset j of a transfer of `bytes`: differs per size, never
 * periodic at small powers of two. */
static inline uint8_t pattern(size_t j, size_t bytes)
{
    uint32_t x = (uint32_t)j * 2654435761u + (uint32_t)bytes * 40503u + 1u;
    x ^= x >> 15;
    return (uint8_t)(x ^ (x >> 8));
}

static long check_pattern(const uint8_t *buf, size_t bytes)
{
    long bad = 0;
    for (size_t j = 0; j < bytes; j++) bad += buf[j] != pattern(j, bytes);
    return bad;
}

/* ---------------------------------------------------------------- pingpong */
static void pingpong_body(perf_t *p, size_t bytes, long n)
{
    for (long i = 0; i < n; i++) {
        long v = ++p->seq;
        if (p->me == 0) {
            shmem_long_p(p->flag, v, 1);
            shmem_long_wait_until(p->flag, SHMEM_CMP_EQ, v);
        } else if (p->me == 1) {
            shmem_long_wait_until(p->flag, SHMEM_CMP_EQ, v);
            shmem_long_p(p->flag, v, 0);
        }
    }
}

static long pingpong_verify(perf_t *p, size_t bytes)
{
    return p->me <= 1 && *p->flag != p->seq;
}

/* ---------------------------------------------------------------- put / get */
static void put_body(perf_t *p, size_t bytes, long n)
{
    if (p->me != 0) return;
    for (long i = 0; i < n; i++) {
        for (long w = 0; w < p->window; w++) shmem_putmem_nbi(p->target, p->origin, bytes, 1);
        shmem_quiet();
    }
}

static void get_body(perf_t *p, size_t bytes, long n)
{
    if (p->me != 0) return;
    for (long i = 0; i < n; i++) {
        for (long w = 0; w < p->window; w++) shmem_getmem_nbi(p->origin, p->target, bytes, 1);
        shmem_quiet();
    }
}

/* One verified transfer: the destination is poisoned with the pattern's complement, so
 * every byte that was not written counts as wrong. */
static long transfer_verify(perf_t *p, size_t bytes, int is_put)
{
    uint8_t *src = is_put ? p->origin : p->target, *dst = is_put ? p->target : p->origin;
    int src_pe = is_put ? 0 : 1, dst_pe = is_put ? 1 : 0;
    if (p->me == src_pe)
        for (size_t j = 0; j < bytes; j++) src[j] = pattern(j, bytes);
    if (p->me == dst_pe)
        for (size_t j = 0; j < bytes; j++) dst[j] = (uint8_t)~pattern(j, bytes);
    shmem_barrier_all();
    if (p->me == 0) {
        if (is_put) shmem_putmem_nbi(p->target, p->origin, bytes, 1);
        else shmem_getmem_nbi(p->origin, p->target, bytes, 1);
        shmem_quiet();
    }
    shmem_barrier_all();
    if (p->me == dst_pe) *p->result = check_pattern(dst, bytes);
    shmem_barrier_all();
    return p->me == 0 ? shmem_long_g(p->result, dst_pe) : 0;
}

static long put_verify(perf_t *p, size_t bytes) { return transfer_verify(p, bytes, 1); }
static long get_verify(perf_t *p, size_t bytes) { return transfer_verify(p, bytes, 0); }

/* ---------------------------------------------------------------- atomic */
static void atomic_setup(perf_t *p, size_t bytes)
{
    *p->counter = 0;
    p->adds = p->bad_fetches = 0;
}

static void atomic_body(perf_t *p, size_t bytes, long n)
{
    if (p->me != 0) return;
    for (long i = 0; i < n; i++) {
        long old = shmem_long_atomic_fetch_add(p->counter, 1, 1);
        p->bad_fetches += old != p->adds++; /* only PE 0 adds: it sees 0, 1, 2, ... */
    }
}

static long atomic_verify(perf_t *p, size_t bytes)
{
    if (p->me != 0) return 0;
    return p->bad_fetches + (shmem_long_atomic_fetch(p->counter, 1) != p->adds);
}

/* ---------------------------------------------------------------- barrier */
static void barrier_body(perf_t *p, size_t bytes, long n)
{
    for (long i = 0; i < n; i++) shmem_barrier_all();
}

/* Each PE p's round i into its right neighbour's slot, then barriers: a barrier
 * completes earlier puts, so every slot must hold i after it. */
static long barrier_verify(perf_t *p, size_t bytes)
{
    long bad = 0, sum = 0;
    for (long i = 1; i <= 100; i++) {
        shmem_long_p(p->slot, i, (p->me + 1) % p->npes);
        shmem_barrier_all();
        bad += *(volatile long *)p->slot != i;
        shmem_barrier_all();
    }
    *p->result = bad;
    shmem_barrier_all();
    for (int pe = 0; p->me == 0 && pe < p->npes; pe++) sum += shmem_long_g(p->result, pe);
    return sum;
}

/* ---------------------------------------------------------------- the modes */
static const perf_mode_t modes[] = {
    {"pingpong", "uint64", 8, 8, 0, 1, 0, 10000, NULL, pingpong_body, pingpong_verify,
     "p + wait_until round trip between PEs 0 and 1"},
    {"put", "uint8", 1, 0, 1, 1, 1, 100, NULL, put_body, put_verify,
     "window of putmem_nbi from PE 0 to PE 1, then quiet"},
    {"get", "uint8", 1, 0, 1, 1, 1, 100, NULL, get_body, get_verify,
     "window of getmem_nbi by PE 0 from PE 1, then quiet"},
    {"atomic", "uint64", 8, 8, 0, 1, 0, 10000, atomic_setup, atomic_body, atomic_verify,
     "fetch_add by PE 0 on PE 1's counter"},
    {"barrier", "none", 0, 0, 0, 0, 0, 10000, NULL, barrier_body, barrier_verify,
     "barrier_all on every PE"},
};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: oshrun -np N shmem_perf MODE [flags]\n"
            "modes:\n");
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
        fprintf(f, "  %-9s %s\n", modes[i].name, modes[i].help);
    fprintf(f,
            "flags:\n"
            "  -b, --minbytes N     smallest size (K/M/G suffixes; put/get only)   [8]\n"
            "  -e, --maxbytes N     largest size                                   [64M]\n"
            "  -f, --stepfactor F   multiplier between sizes                       [2]\n"
            "  -n, --iters N        timed iterations [100 put/get, 10000 others]\n"
            "  -w, --warmup_iters N untimed iterations first [10%% of -n, at least 5]\n"
            "  -W, --window N       operations per iteration of put/get            [64]\n"
            "  -V, --max-volume N   fewer iterations for sizes that would move more\n"
            "                       than N bytes per timed loop (0: no cap)        [1G]\n"
            "      --csv FILE       also write the rows as CSV\n"
            "  -h, --help\n");
}

static const perf_mode_t *parse_args(perf_t *p, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"minbytes", required_argument, NULL, 'b'},  {"maxbytes", required_argument, NULL, 'e'},
        {"stepfactor", required_argument, NULL, 'f'}, {"iters", required_argument, NULL, 'n'},
        {"warmup_iters", required_argument, NULL, 'w'}, {"window", required_argument, NULL, 'W'},
        {"max-volume", required_argument, NULL, 'V'}, {"csv", required_argument, NULL, 'C'},
        {"help", no_argument, NULL, 'h'},             {NULL, 0, NULL, 0}};
    p->minb = 8, p->maxb = 64u << 20, p->factor = 2, p->max_volume = 1u << 30;
    p->iters = p->warmup = -1, p->window = 64, p->csv = NULL;
    int c;
    while ((c = getopt_long(argc, argv, "b:e:f:n:w:W:V:h", longopts, NULL)) != -1) {
        if (bench_sweep_flag(PROG, c, optarg, &p->minb, &p->maxb, &p->factor, &p->iters,
                             &p->warmup))
            continue;
        switch (c) {
        case 'W': p->window = (long)bench_parse_size(PROG, optarg, "-W"); break;
        case 'V': p->max_volume = bench_parse_size(PROG, optarg, "-V"); break;
        case 'C': p->csv = optarg; break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); exit(2);
        }
    }
    if (optind != argc - 1) {
        usage(stderr);
        exit(2);
    }
    const perf_mode_t *m = NULL;
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
        if (strcmp(argv[optind], modes[i].name) == 0) m = &modes[i];
    if (!m) die(p, "unknown mode '%s' (try -h)", argv[optind]);
    if (p->maxb < p->minb) die(p, "-e is smaller than -b");
    if (p->factor < 2) die(p, "-f must be at least 2");
    if (p->iters == 0 || p->window == 0) die(p, "-n and -W must be at least 1");
    if (p->iters < 0) p->iters = m->default_iters;
    if (p->warmup < 0) p->warmup = bench_default_warmup(p->iters);
    return m;
}

static void setup_memory(perf_t *p, const perf_mode_t *m)
{
    /* flag, counter, result and slot, each on its own cache line */
    const size_t line = 64 / sizeof(long);
    p->flag = shmem_calloc(4 * line, sizeof(long));
    if (!p->flag) die(p, "shmem_calloc of %zu bytes failed", 4 * line * sizeof(long));
    p->counter = p->flag + line, p->result = p->flag + 2 * line, p->slot = p->flag + 3 * line;
    p->origin = p->target = NULL;
    if (m->sized) {
        size_t n = p->maxb ? p->maxb : 1;
        p->origin = shmem_malloc(n);
        p->target = shmem_malloc(n);
        if (!p->origin || !p->target)
            die(p, "cannot allocate 2 x -e = %zu bytes of symmetric heap; raise "
                   "SHMEM_SYMMETRIC_HEAP_SIZE or lower -e", 2 * n);
        memset(p->origin, 0, n);
        memset(p->target, 0, n);
    }
    shmem_barrier_all();
}

/* One row: the timed loop for one size. Returns the row's wrong count (PE 0). */
static long run_size(perf_t *p, const perf_mode_t *m, size_t bytes, FILE *csv)
{
    long iters = p->iters, warmup = p->warmup;
    if (m->windowed && p->max_volume && bytes &&
        (double)bytes * (double)p->window * (double)iters > (double)p->max_volume) {
        /* the same on every PE: it depends only on the arguments */
        iters = (long)(p->max_volume / (bytes * (size_t)p->window));
        if (iters < 1) iters = 1;
        warmup = warmup * iters / p->iters;
        if (warmup < 1) warmup = 1;
    }
    if (m->setup) m->setup(p, bytes);
    shmem_barrier_all();
    m->body(p, bytes, warmup);
    shmem_barrier_all();
    uint64_t t0 = bench_now_ns();
    m->body(p, bytes, iters);
    uint64_t t1 = bench_now_ns();
    shmem_barrier_all();
    long wrong = m->verify ? m->verify(p, bytes) : 0;
    if (p->me != 0) return 0;

    double ops = (double)iters * (double)(m->windowed ? p->window : 1);
    double us = (double)(t1 - t0) / 1e3 / ops;
    double gbps = us > 0 ? (double)bytes / us / 1e3 : 0;
    double busbw = gbps; /* one-sided modes: every byte crosses once */
    size_t count = m->elem_size ? bytes / m->elem_size : 0;
    printf("  %8s %12zu %12zu %12.3f %12.3f %8ld\n", m->name, bytes, count, us, gbps, wrong);
    fflush(stdout);
    bench_csv_row(csv, m->name, bytes, count, m->dtype, "none", ALGO, us, gbps, busbw, wrong);
    return wrong;
}

int main(int argc, char **argv)
{
    perf_t p = {0};
    p.me = -1;
    const perf_mode_t *m = parse_args(&p, argc, argv);
    shmem_init();
    p.me = shmem_my_pe(), p.npes = shmem_n_pes();
    if (m->pair && p.npes < 2) die(&p, "mode %s needs at least 2 PEs", m->name);
    setup_memory(&p, m);

    FILE *csv = NULL;
    if (p.me == 0) {
        if (p.csv && !(csv = fopen(p.csv, "w"))) die(&p, "cannot open %s for writing", p.csv);
        if (csv) fprintf(csv, BENCH_CSV_HEADER "\n");
        printf("# shmem_perf %s: %d PEs, iters %ld, warmup %ld", m->name, p.npes, p.iters,
               p.warmup);
        if (m->windowed) printf(", window %ld, max volume %zu", p.window, p.max_volume);
        printf("\n# %8s %12s %12s %12s %12s %8s\n", "op", "bytes", "count", "time_us",
               "algbw_GBps", "wrong");
    }

    long total_wrong = 0;
    size_t lo = m->sized ? p.minb : m->fixed_bytes, hi = m->sized ? p.maxb : m->fixed_bytes;
    for (size_t bytes = lo;; bytes = bytes ? bytes * p.factor : 1) {
        total_wrong += run_size(&p, m, bytes, csv);
        if (bytes >= hi || bytes > hi / p.factor) break; /* the next size is past -e */
    }
    if (csv && fclose(csv) != 0) die(&p, "cannot write %s", p.csv);
    if (total_wrong) fprintf(stderr, "shmem_perf: %ld wrong results\n", total_wrong);
    shmem_barrier_all();
    shmem_free(p.target);
    shmem_free(p.origin);
    shmem_free(p.flag);
    shmem_finalize();
    return total_wrong ? 1 : 0;
}
