/*
 * duet-perf — Duet's benchmark tool.
 *
 *   duetrun -n 2 build/bin/duet-perf MODE [flags]        (duet-perf -h lists both)
 *
 * One process per rank; every rank runs the same loop and rank 0 prints one row per size,
 * as a table on stdout and optionally as CSV (the format every bench/ script reads):
 *   op,bytes,count,dtype,redop,algo,time_us,algbw_GBps,busbw_GBps,wrong
 *
 * A mode is one row of `modes` below: how to set up, run n iterations, and verify. The
 * driver (run_mode) does the rest for every mode alike, per size:
 *
 *   setup -> barrier -> warmup iterations -> barrier -> t0, timed iterations, t1
 *         -> barrier -> verify (counts "wrong")
 *
 * One-sided modes (pingpong, put, get, atomic) run between ranks 0 and 1; the other
 * ranks only join the barriers. bench/shmem_perf.c is the same program against OpenSHMEM;
 * keep the two in step.
 *
 * To add a mode (collectives next): write its setup/body/verify, add a row; if it needs a
 * datatype or reduction, set `dtype` / `redop` from new flags in parse_args.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <getopt.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duet/duet.h"
#include "util/duet_util.h"

#define CSV_HEADER "op,bytes,count,dtype,redop,algo,time_us,algbw_GBps,busbw_GBps,wrong"

typedef struct {
    /* options */
    size_t minb, maxb, factor, max_volume;
    long iters, warmup; /* -1: the mode's default */
    long window;
    const char *csv;
    /* job */
    duet_comm_t comm;
    int me, nranks;
    /* symmetric memory: origin is used on rank 0, target is the object accessed on rank 1 */
    uint64_t *flag, *counter, *result, *slot;
    uint8_t *origin, *target;
    /* state carried across iterations */
    uint64_t seq, adds, bad_fetches;
} perf_t;

typedef struct {
    const char *name, *dtype, *redop, *algo;
    size_t elem_size;     /* bytes per element, for the count column (0: count 0)      */
    size_t fixed_bytes;   /* bytes of the single row of a mode that does not sweep     */
    int sized;            /* sweeps -b .. -e by -f                                     */
    int pair;             /* runs between ranks 0 and 1                                */
    int windowed;         /* one iteration is -W operations                            */
    long default_iters;
    void (*setup)(perf_t *, size_t bytes);            /* before the warmup (may be NULL) */
    void (*body)(perf_t *, size_t bytes, long n);     /* n iterations                    */
    uint64_t (*verify)(perf_t *, size_t bytes);       /* after the timed loop; wrongs    */
    const char *help;
} perf_mode_t;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    char msg[1024];
    int rank = duet_my_pe() >= 0 ? duet_my_pe() : (int)duet_cfg()->rank;
    int len = snprintf(msg, sizeof msg, "duet-perf: rank %d: ", rank);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + len, sizeof msg - (size_t)len, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s\n", msg); /* one write: the ranks share the terminal */
    exit(1);
}

/* Every Duet call goes through CHECK: an error ends the run with the library's message. */
#define CHECK(call)                                                                     \
    do {                                                                                \
        duet_status_t st_ = (call);                                                     \
        if (DUET_UNLIKELY(st_ != DUET_OK))                                              \
            die("%s failed: %s: %s", #call, duet_status_str(st_), duet_last_error());    \
    } while (0)

/* The verification byte at offset j of a transfer of `bytes`: differs per size, never
 * periodic at small powers of two. */
static inline uint8_t pattern(size_t j, size_t bytes)
{
    uint32_t x = (uint32_t)j * 2654435761u + (uint32_t)bytes * 40503u + 1u;
    x ^= x >> 15;
    return (uint8_t)(x ^ (x >> 8));
}

static uint64_t check_pattern(const uint8_t *buf, size_t bytes)
{
    uint64_t bad = 0;
    for (size_t j = 0; j < bytes; j++) bad += buf[j] != pattern(j, bytes);
    return bad;
}

/* ---------------------------------------------------------------- pingpong */
static void pingpong_body(perf_t *p, size_t bytes, long n)
{
    for (long i = 0; i < n; i++) {
        uint64_t v = ++p->seq;
        if (p->me == 0) {
            CHECK(duet_p_uint64(p->comm, p->flag, v, 1));
            CHECK(duet_wait_until_uint64(p->comm, p->flag, DUET_CMP_EQ, v));
        } else if (p->me == 1) {
            CHECK(duet_wait_until_uint64(p->comm, p->flag, DUET_CMP_EQ, v));
            CHECK(duet_p_uint64(p->comm, p->flag, v, 0));
        }
    }
}

static uint64_t pingpong_verify(perf_t *p, size_t bytes)
{
    return p->me <= 1 && *p->flag != p->seq;
}

/* ---------------------------------------------------------------- put / get */
static void put_body(perf_t *p, size_t bytes, long n)
{
    if (p->me != 0) return;
    for (long i = 0; i < n; i++) {
        for (long w = 0; w < p->window; w++)
            CHECK(duet_put_nbi(p->comm, p->target, p->origin, bytes, 1));
        CHECK(duet_quiet(p->comm));
    }
}

static void get_body(perf_t *p, size_t bytes, long n)
{
    if (p->me != 0) return;
    for (long i = 0; i < n; i++) {
        for (long w = 0; w < p->window; w++)
            CHECK(duet_get_nbi(p->comm, p->origin, p->target, bytes, 1));
        CHECK(duet_quiet(p->comm));
    }
}

/* One verified transfer: the destination is poisoned with the pattern's complement, so
 * every byte that was not written counts as wrong. */
static uint64_t transfer_verify(perf_t *p, size_t bytes, int is_put)
{
    uint8_t *src = is_put ? p->origin : p->target, *dst = is_put ? p->target : p->origin;
    int src_pe = is_put ? 0 : 1, dst_pe = is_put ? 1 : 0;
    if (p->me == src_pe)
        for (size_t j = 0; j < bytes; j++) src[j] = pattern(j, bytes);
    if (p->me == dst_pe)
        for (size_t j = 0; j < bytes; j++) dst[j] = (uint8_t)~pattern(j, bytes);
    CHECK(duet_barrier_all());
    if (p->me == 0) {
        if (is_put) CHECK(duet_put_nbi(p->comm, p->target, p->origin, bytes, 1));
        else CHECK(duet_get_nbi(p->comm, p->origin, p->target, bytes, 1));
        CHECK(duet_quiet(p->comm));
    }
    CHECK(duet_barrier_all());
    if (p->me == dst_pe) *p->result = check_pattern(dst, bytes);
    CHECK(duet_barrier_all());
    uint64_t wrong = 0;
    if (p->me == 0) CHECK(duet_g_uint64(p->comm, p->result, dst_pe, &wrong));
    return wrong;
}

static uint64_t put_verify(perf_t *p, size_t bytes) { return transfer_verify(p, bytes, 1); }
static uint64_t get_verify(perf_t *p, size_t bytes) { return transfer_verify(p, bytes, 0); }

/* ---------------------------------------------------------------- atomic */
static void atomic_setup(perf_t *p, size_t bytes)
{
    *p->counter = 0; /* the driver's barrier follows before anyone adds */
    p->adds = p->bad_fetches = 0;
}

static void atomic_body(perf_t *p, size_t bytes, long n)
{
    if (p->me != 0) return;
    for (long i = 0; i < n; i++) {
        uint64_t old;
        CHECK(duet_atomic_fetch_add_uint64(p->comm, p->counter, 1, 1, &old));
        p->bad_fetches += old != p->adds++; /* only rank 0 adds: it sees 0, 1, 2, ... */
    }
}

static uint64_t atomic_verify(perf_t *p, size_t bytes)
{
    if (p->me != 0) return 0;
    uint64_t final;
    CHECK(duet_atomic_fetch_uint64(p->comm, p->counter, 1, &final));
    return p->bad_fetches + (final != p->adds);
}

/* ---------------------------------------------------------------- barrier */
static void barrier_body(perf_t *p, size_t bytes, long n)
{
    for (long i = 0; i < n; i++) CHECK(duet_barrier_all());
}

/* Each rank p's round i into its right neighbour's slot, then barriers: a barrier
 * completes earlier puts, so every slot must hold i after it. */
static uint64_t barrier_verify(perf_t *p, size_t bytes)
{
    uint64_t bad = 0, sum = 0;
    for (uint64_t i = 1; i <= 100; i++) {
        CHECK(duet_p_uint64(p->comm, p->slot, i, (p->me + 1) % p->nranks));
        CHECK(duet_barrier_all());
        bad += *(volatile uint64_t *)p->slot != i;
        CHECK(duet_barrier_all());
    }
    *p->result = bad;
    CHECK(duet_barrier_all());
    for (int pe = 0; p->me == 0 && pe < p->nranks; pe++) {
        CHECK(duet_g_uint64(p->comm, p->result, pe, &bad));
        sum += bad;
    }
    return sum;
}

/* ---------------------------------------------------------------- the modes */
static const perf_mode_t modes[] = {
    /* name      dtype     redop   algo  elem fixed sized pair window iters */
    {"pingpong", "uint64", "none", "shm", 8, 8, 0, 1, 0, 10000, NULL, pingpong_body,
     pingpong_verify, "p + wait_until round trip between ranks 0 and 1"},
    {"put", "uint8", "none", "shm", 1, 0, 1, 1, 1, 100, NULL, put_body, put_verify,
     "window of put_nbi from rank 0 to rank 1, then quiet"},
    {"get", "uint8", "none", "shm", 1, 0, 1, 1, 1, 100, NULL, get_body, get_verify,
     "window of get_nbi by rank 0 from rank 1, then quiet"},
    {"atomic", "uint64", "none", "shm", 8, 8, 0, 1, 0, 10000, atomic_setup, atomic_body,
     atomic_verify, "atomic_fetch_add by rank 0 on rank 1's counter"},
    {"barrier", "none", "none", "shm", 0, 0, 0, 0, 0, 10000, NULL, barrier_body, barrier_verify,
     "barrier_all on every rank"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: duetrun -n N duet-perf MODE [flags]\nmodes:\n");
    for (size_t i = 0; i < DUET_ARRAY_LEN(modes); i++)
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
            "      --csv FILE       also write the rows as CSV (rank 0)\n"
            "  -h, --help\n"
            "put/get need 2 x -e bytes of symmetric heap (DUET_SYMMETRIC_SIZE, default 256M).\n");
}

static size_t parse_size_arg(const char *text, const char *flag)
{
    size_t v;
    if (duet_parse_size(text, &v) != 0) {
        fprintf(stderr, "duet-perf: bad value '%s' for %s\n", text, flag);
        exit(2);
    }
    return v;
}

/* Runs before duet_init(): every rank parses the same arguments and fails alike. */
static const perf_mode_t *parse_args(perf_t *p, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"minbytes", required_argument, NULL, 'b'},  {"maxbytes", required_argument, NULL, 'e'},
        {"stepfactor", required_argument, NULL, 'f'}, {"iters", required_argument, NULL, 'n'},
        {"warmup_iters", required_argument, NULL, 'w'}, {"window", required_argument, NULL, 'W'},
        {"max-volume", required_argument, NULL, 'V'}, {"csv", required_argument, NULL, 'C'},
        {"help", no_argument, NULL, 'h'},             {NULL, 0, NULL, 0}};
    p->minb = 8, p->maxb = (size_t)64 << 20, p->factor = 2, p->max_volume = (size_t)1 << 30;
    p->iters = p->warmup = -1, p->window = 64, p->csv = NULL;
    int c;
    while ((c = getopt_long(argc, argv, "b:e:f:n:w:W:V:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'b': p->minb = parse_size_arg(optarg, "-b"); break;
        case 'e': p->maxb = parse_size_arg(optarg, "-e"); break;
        case 'f': p->factor = parse_size_arg(optarg, "-f"); break;
        case 'n': p->iters = (long)parse_size_arg(optarg, "-n"); break;
        case 'w': p->warmup = (long)parse_size_arg(optarg, "-w"); break;
        case 'W': p->window = (long)parse_size_arg(optarg, "-W"); break;
        case 'V': p->max_volume = parse_size_arg(optarg, "-V"); break;
        case 'C': p->csv = optarg; break;
        case 'h':
            if (duet_cfg()->rank <= 0) usage(stdout); /* once under duetrun */
            exit(0);
        default: usage(stderr); exit(2);
        }
    }
    if (optind != argc - 1) {
        usage(stderr);
        exit(2);
    }
    const perf_mode_t *m = NULL;
    for (size_t i = 0; i < DUET_ARRAY_LEN(modes); i++)
        if (strcmp(argv[optind], modes[i].name) == 0) m = &modes[i];
    if (!m) die("unknown mode '%s' (try -h)", argv[optind]);
    if (p->maxb < p->minb) die("-e is smaller than -b");
    if (p->factor < 2) die("-f must be at least 2");
    if (p->iters == 0 || p->window == 0) die("-n and -W must be at least 1");
    if (p->iters < 0) p->iters = m->default_iters;
    if (p->warmup < 0) p->warmup = p->iters / 10 < 5 ? 5 : p->iters / 10;
    return m;
}

static void *sym_alloc(perf_t *p, size_t bytes)
{
    void *ptr = duet_calloc(p->comm, 1, bytes);
    if (!ptr) die("duet_calloc(%zu) failed: %s", bytes, duet_last_error());
    return ptr;
}

static void setup_memory(perf_t *p, const perf_mode_t *m)
{
    /* flag, counter, result and slot, each on its own cache line */
    const size_t line = DUET_CACHELINE / sizeof(uint64_t);
    p->flag = sym_alloc(p, 4 * DUET_CACHELINE);
    p->counter = p->flag + line, p->result = p->flag + 2 * line, p->slot = p->flag + 3 * line;
    p->origin = p->target = NULL;
    if (!m->sized) return;
    size_t n = p->maxb ? p->maxb : 1, heap = duet_cfg()->symmetric_size;
    if (n > heap / 2 || 2 * n + 4 * DUET_CACHELINE > heap)
        die("%s up to -e %zu needs 2 x %zu bytes of symmetric heap, but DUET_SYMMETRIC_SIZE is "
            "%zu: lower -e or raise DUET_SYMMETRIC_SIZE", m->name, p->maxb, n, heap);
    p->origin = sym_alloc(p, n);
    p->target = sym_alloc(p, n);
}

/* One row: the timed loop for one size. Returns the row's wrong count (rank 0). */
static uint64_t run_size(perf_t *p, const perf_mode_t *m, size_t bytes, FILE *csv)
{
    long iters = p->iters, warmup = p->warmup;
    if (m->windowed && p->max_volume && bytes &&
        (double)bytes * (double)p->window * (double)iters > (double)p->max_volume) {
        /* the same on every rank: it depends only on the arguments */
        iters = (long)(p->max_volume / (bytes * (size_t)p->window));
        if (iters < 1) iters = 1;
        warmup = warmup * iters / p->iters;
        if (warmup < 1) warmup = 1;
    }
    if (m->setup) m->setup(p, bytes);
    CHECK(duet_barrier_all());
    m->body(p, bytes, warmup);
    CHECK(duet_barrier_all());
    uint64_t t0 = duet_time_ns();
    m->body(p, bytes, iters);
    uint64_t t1 = duet_time_ns();
    CHECK(duet_barrier_all());
    uint64_t wrong = m->verify ? m->verify(p, bytes) : 0;
    if (p->me != 0) return 0;

    double ops = (double)iters * (double)(m->windowed ? p->window : 1);
    double us = (double)(t1 - t0) / 1e3 / ops;
    double gbps = us > 0 ? (double)bytes / us / 1e3 : 0;
    double busbw = gbps; /* one-sided modes: every byte crosses once */
    size_t count = m->elem_size ? bytes / m->elem_size : 0;
    printf("  %8s %12zu %12zu %12.3f %12.3f %8llu\n", m->name, bytes, count, us, gbps,
           (unsigned long long)wrong);
    fflush(stdout);
    if (csv)
        fprintf(csv, "%s,%zu,%zu,%s,%s,%s,%.4f,%.4f,%.4f,%llu\n", m->name, bytes, count, m->dtype,
                m->redop, m->algo, us, gbps, busbw, (unsigned long long)wrong);
    return wrong;
}

int main(int argc, char **argv)
{
    perf_t p = {0};
    const perf_mode_t *m = parse_args(&p, argc, argv);
    CHECK(duet_init());
    p.comm = duet_comm_world();
    p.me = duet_my_pe(), p.nranks = duet_n_pes();
    if (m->pair && p.nranks < 2) die("mode %s needs at least 2 ranks", m->name);
    setup_memory(&p, m);

    FILE *csv = NULL;
    if (p.me == 0) {
        if (p.csv && !(csv = fopen(p.csv, "w"))) die("cannot open %s for writing", p.csv);
        if (csv) fprintf(csv, CSV_HEADER "\n");
        printf("# duet-perf %s: %d ranks, iters %ld, warmup %ld", m->name, p.nranks, p.iters,
               p.warmup);
        if (m->windowed) printf(", window %ld, max volume %zu", p.window, p.max_volume);
        printf("\n# %8s %12s %12s %12s %12s %8s\n", "op", "bytes", "count", "time_us",
               "algbw_GBps", "wrong");
    }

    uint64_t total_wrong = 0;
    size_t lo = m->sized ? p.minb : m->fixed_bytes, hi = m->sized ? p.maxb : m->fixed_bytes;
    for (size_t bytes = lo;; bytes = bytes ? bytes * p.factor : 1) {
        total_wrong += run_size(&p, m, bytes, csv);
        if (bytes >= hi || bytes > hi / p.factor) break; /* the next size is past -e */
    }
    if (csv && fclose(csv) != 0) die("cannot write %s", p.csv);
    if (total_wrong)
        fprintf(stderr, "duet-perf: %llu wrong results\n", (unsigned long long)total_wrong);
    CHECK(duet_free(p.comm, p.target));
    CHECK(duet_free(p.comm, p.origin));
    CHECK(duet_free(p.comm, p.flag));
    CHECK(duet_finalize());
    return total_wrong ? 1 : 0;
}
