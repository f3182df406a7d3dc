/*
 * mpi_coll_perf.c — the MPI anchor for duet-perf's collective modes.
 *
 * The same collective modes, flags, table and CSV as duet-perf (tools/perf/) (nccl-tests style),
 * written against MPI, so that bench/vs_mpi.sh can run both with the same arguments and
 * compare the CSVs row by row. Keep the two in step.
 *
 *   mpicc -O2 -o build/bench/mpi_coll_perf bench/mpi_coll_perf.c
 *   mpirun --allow-run-as-root -np 2 --bind-to core build/bench/mpi_coll_perf allreduce \
 *       -b 8 -e 64M -f 4 --csv allreduce.csv
 *
 * Sizes follow nccl-tests: `bytes` of a row is
 *   allreduce, broadcast, reduce   the size of the (send = receive) buffer;
 *   allgather                      the TOTAL receive size (nranks x what each rank sends);
 *   reducescatter, alltoall        the TOTAL send size of one rank (nranks x the block one
 *                                  rank receives / sends to each peer).
 * For the last three the per-rank block is bytes / elemsize / nranks elements, rounded
 * down, and the row reports the rounded size (so 8 B of float on 4 ranks is a 0-byte row,
 * as in nccl-tests). `count` is bytes / elemsize: all elements of that buffer.
 *
 *   time_us     per call: rank 0's wall time of the timed loop (MPI_Wtime, after a
 *               barrier) divided by the iterations;
 *   algbw_GBps  bytes / time_us / 1e3;
 *   busbw_GBps  algbw x 2(n-1)/n (allreduce), (n-1)/n (allgather, reducescatter, alltoall),
 *               x 1 (broadcast, reduce) — the nccl-tests factors;
 *   wrong       elements that differ from the expected result, summed over ranks, after one
 *               more call whose output buffer was poisoned first.
 * Iterations: -n per size, but a size whose timed loop would move more than -V bytes
 * (bytes x iterations, default 1 GiB) runs -V / bytes of them (at least 1), and its
 * warmup shrinks in proportion.
 *
 * Inputs are small integers (period 13 along the buffer, different per rank), so every
 * reduction order gives the exact result in every datatype: integer sums and products
 * wrap in their type, as MPI's do. MPI has no fp16/bf16 reduction and no average: -d half,
 * -d bfloat16 and -o avg are refused.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

#define PROG       "mpi_coll_perf"
#define ALGO       "mpi"
#define PERIOD     13      /* of the input pattern along a buffer (odd: power-of-two   */
                           /* offsets never alias)                                     */
#define POISON     (-37)   /* never an expected value (those are >= 1 before wrapping) */

/* ---------------------------------------------------------------- datatypes
 * X(name, C type, MPI datatype). fill_T writes pattern[(phase + j) % PERIOD] converted to
 * T; check_T counts the elements that differ from it. */
#define PERF_DTYPES(X)                          \
    X(int8, int8_t, MPI_INT8_T)                 \
    X(uint8, uint8_t, MPI_UINT8_T)              \
    X(int32, int32_t, MPI_INT32_T)              \
    X(uint32, uint32_t, MPI_UINT32_T)           \
    X(int64, int64_t, MPI_INT64_T)              \
    X(uint64, uint64_t, MPI_UINT64_T)           \
    X(float, float, MPI_FLOAT)                  \
    X(double, double, MPI_DOUBLE)

#define DEFINE_FILL_CHECK(name, T, mpitype)                                                   \
    static void fill_##name(void *buf, size_t n, const int64_t *pat, size_t phase)            \
    {                                                                                         \
        T tab[PERIOD], *b = buf;                                                              \
        for (size_t k = 0; k < PERIOD; k++) tab[k] = (T)pat[(phase + k) % PERIOD];            \
        for (size_t j = 0, k = 0; j < n; j++, k = k + 1 == PERIOD ? 0 : k + 1) b[j] = tab[k]; \
    }                                                                                         \
    static long check_##name(const void *buf, size_t n, const int64_t *pat, size_t phase)     \
    {                                                                                         \
        T tab[PERIOD];                                                                        \
        const T *b = buf;                                                                     \
        long bad = 0;                                                                         \
        for (size_t k = 0; k < PERIOD; k++) tab[k] = (T)pat[(phase + k) % PERIOD];            \
        for (size_t j = 0, k = 0; j < n; j++, k = k + 1 == PERIOD ? 0 : k + 1)                \
            bad += b[j] != tab[k];                                                            \
        return bad;                                                                           \
    }
PERF_DTYPES(DEFINE_FILL_CHECK)

typedef struct {
    const char *name;
    size_t size;
    MPI_Datatype (*mpi)(void); /* MPI handles are not constants in every MPI */
    void (*fill)(void *, size_t, const int64_t *, size_t);
    long (*check)(const void *, size_t, const int64_t *, size_t);
} perf_dtype_t;

#define DEFINE_MPI_GETTER(name, T, mpitype) \
    static MPI_Datatype mpi_##name(void) { return mpitype; }
PERF_DTYPES(DEFINE_MPI_GETTER)
#define DTYPE_ROW(name, T, mpitype) {#name, sizeof(T), mpi_##name, fill_##name, check_##name},
static const perf_dtype_t dtypes[] = {PERF_DTYPES(DTYPE_ROW)};

/* nccl-tests' names first, then the aliases duet-perf may print */
static const struct { const char *alias, *name; } dtype_aliases[] = {
    {"char", "int8"},      {"int", "int32"},       {"float32", "float"}, {"fp32", "float"},
    {"float64", "double"}, {"fp64", "double"},
};

typedef enum { OP_SUM, OP_PROD, OP_MIN, OP_MAX } perf_op_t;
static const char *const op_names[] = {"sum", "prod", "min", "max"};

/* ---------------------------------------------------------------- state */
typedef struct {
    /* options */
    size_t minb, maxb, factor, max_volume;
    long iters, warmup; /* -1: the default */
    int root;
    const perf_dtype_t *dt;
    perf_op_t op;
    const char *csv;
    /* job */
    int me, nranks;
    void *sendbuf, *recvbuf;
    /* patterns: val[q] = rank q's input (PERIOD entries each), red = the reduction of
     * val over all ranks, poison = POISON everywhere */
    int64_t (*val)[PERIOD], red[PERIOD], poison[PERIOD];
} perf_t;

typedef struct {
    const char *name;
    int reduces;           /* takes -o                                                 */
    int blocked;           /* bytes = nranks x a per-rank block                        */
    double (*busbw)(int n); /* busbw / algbw                                           */
    void (*setup)(perf_t *, size_t elems, size_t blk);  /* inputs, before the warmup     */
    void (*body)(perf_t *, size_t elems, size_t blk, long n);
    long (*verify)(perf_t *, size_t elems, size_t blk); /* this rank's wrong elements    */
    const char *help;
} perf_mode_t;

static void die(const perf_t *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void die(const perf_t *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    bench_vreport(PROG, "rank", p ? p->me : -1, fmt, ap);
    va_end(ap);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

#define MPI_CHECK(p, call)                                                 \
    do {                                                                   \
        int rc_ = (call);                                                  \
        if (rc_ != MPI_SUCCESS) {                                          \
            char es_[MPI_MAX_ERROR_STRING];                                \
            int el_ = 0;                                                   \
            MPI_Error_string(rc_, es_, &el_);                              \
            die(p, "%s failed: %s", #call, es_);                           \
        }                                                                  \
    } while (0)

static MPI_Op mpi_op(perf_op_t op)
{
    switch (op) {
    case OP_SUM: return MPI_SUM;
    case OP_PROD: return MPI_PROD;
    case OP_MIN: return MPI_MIN;
    default: return MPI_MAX;
    }
}

/* Rank q's input at position k (mod PERIOD): 1..13 for sum/min/max, 1 or 2 for prod (so a
 * product over n ranks is at most 2^n). */
static void make_patterns(perf_t *p)
{
    p->val = malloc(sizeof(*p->val) * (size_t)p->nranks);
    if (!p->val) die(p, "out of memory");
    for (int k = 0; k < PERIOD; k++) {
        p->poison[k] = POISON;
        for (int q = 0; q < p->nranks; q++) {
            int64_t v = p->op == OP_PROD ? ((k + q) % PERIOD < 4 ? 2 : 1)
                                         : (int64_t)((k + 3 * (size_t)q) % PERIOD) + 1;
            p->val[q][k] = v;
            /* int64 arithmetic; the products only wrap (as the type does) past 62 ranks */
            int64_t r = p->red[k];
            if (q == 0) r = v;
            else if (p->op == OP_SUM) r += v;
            else if (p->op == OP_PROD) r = (int64_t)((uint64_t)r * (uint64_t)v);
            else if (p->op == OP_MIN) r = v < r ? v : r;
            else r = v > r ? v : r;
            p->red[k] = r;
        }
    }
}

static inline uint8_t *at(void *buf, const perf_t *p, size_t elems)
{
    return (uint8_t *)buf + elems * p->dt->size;
}

/* ---------------------------------------------------------------- allreduce */
static void allreduce_setup(perf_t *p, size_t elems, size_t blk)
{
    p->dt->fill(p->sendbuf, elems, p->val[p->me], 0);
}

static void allreduce_body(perf_t *p, size_t elems, size_t blk, long n)
{
    for (long i = 0; i < n; i++)
        MPI_CHECK(p, MPI_Allreduce(p->sendbuf, p->recvbuf, (int)elems, p->dt->mpi(),
                                   mpi_op(p->op), MPI_COMM_WORLD));
}

static long allreduce_verify(perf_t *p, size_t elems, size_t blk)
{
    p->dt->fill(p->recvbuf, elems, p->poison, 0);
    allreduce_body(p, elems, blk, 1);
    return p->dt->check(p->recvbuf, elems, p->red, 0);
}

/* ---------------------------------------------------------------- reduce */
static void reduce_body(perf_t *p, size_t elems, size_t blk, long n)
{
    for (long i = 0; i < n; i++)
        MPI_CHECK(p, MPI_Reduce(p->sendbuf, p->recvbuf, (int)elems, p->dt->mpi(), mpi_op(p->op),
                                p->root, MPI_COMM_WORLD));
}

static long reduce_verify(perf_t *p, size_t elems, size_t blk)
{
    p->dt->fill(p->recvbuf, elems, p->poison, 0);
    reduce_body(p, elems, blk, 1);
    return p->me == p->root ? p->dt->check(p->recvbuf, elems, p->red, 0) : 0;
}

/* ---------------------------------------------------------------- broadcast
 * MPI_Bcast works in place: the root's recvbuf holds the data. */
static void broadcast_setup(perf_t *p, size_t elems, size_t blk)
{
    p->dt->fill(p->recvbuf, elems, p->me == p->root ? p->val[p->root] : p->poison, 0);
}

static void broadcast_body(perf_t *p, size_t elems, size_t blk, long n)
{
    for (long i = 0; i < n; i++)
        MPI_CHECK(p, MPI_Bcast(p->recvbuf, (int)elems, p->dt->mpi(), p->root, MPI_COMM_WORLD));
}

static long broadcast_verify(perf_t *p, size_t elems, size_t blk)
{
    broadcast_setup(p, elems, blk);
    broadcast_body(p, elems, blk, 1);
    return p->dt->check(p->recvbuf, elems, p->val[p->root], 0);
}

/* ---------------------------------------------------------------- allgather
 * Each rank sends blk elements; recvbuf[q * blk ...] = rank q's block. */
static void allgather_setup(perf_t *p, size_t elems, size_t blk)
{
    p->dt->fill(p->sendbuf, blk, p->val[p->me], 0);
}

static void allgather_body(perf_t *p, size_t elems, size_t blk, long n)
{
    MPI_Datatype t = p->dt->mpi();
    for (long i = 0; i < n; i++)
        MPI_CHECK(p, MPI_Allgather(p->sendbuf, (int)blk, t, p->recvbuf, (int)blk, t,
                                   MPI_COMM_WORLD));
}

static long allgather_verify(perf_t *p, size_t elems, size_t blk)
{
    long bad = 0;
    p->dt->fill(p->recvbuf, elems, p->poison, 0);
    allgather_body(p, elems, blk, 1);
    for (int q = 0; q < p->nranks; q++)
        bad += p->dt->check(at(p->recvbuf, p, (size_t)q * blk), blk, p->val[q], 0);
    return bad;
}

/* ---------------------------------------------------------------- reducescatter
 * Each rank sends nranks x blk elements and receives the reduction of block `me`. */
static void reducescatter_setup(perf_t *p, size_t elems, size_t blk)
{
    p->dt->fill(p->sendbuf, elems, p->val[p->me], 0);
}

static void reducescatter_body(perf_t *p, size_t elems, size_t blk, long n)
{
    for (long i = 0; i < n; i++)
        MPI_CHECK(p, MPI_Reduce_scatter_block(p->sendbuf, p->recvbuf, (int)blk, p->dt->mpi(),
                                              mpi_op(p->op), MPI_COMM_WORLD));
}

static long reducescatter_verify(perf_t *p, size_t elems, size_t blk)
{
    p->dt->fill(p->recvbuf, blk, p->poison, 0);
    reducescatter_body(p, elems, blk, 1);
    return p->dt->check(p->recvbuf, blk, p->red, ((size_t)p->me * blk) % PERIOD);
}

/* ---------------------------------------------------------------- alltoall
 * sendbuf[q * blk ...] goes to rank q; recvbuf[q * blk ...] comes from rank q. */
static void alltoall_body(perf_t *p, size_t elems, size_t blk, long n)
{
    MPI_Datatype t = p->dt->mpi();
    for (long i = 0; i < n; i++)
        MPI_CHECK(p, MPI_Alltoall(p->sendbuf, (int)blk, t, p->recvbuf, (int)blk, t,
                                  MPI_COMM_WORLD));
}

static long alltoall_verify(perf_t *p, size_t elems, size_t blk)
{
    long bad = 0;
    size_t phase = ((size_t)p->me * blk) % PERIOD; /* where my block starts in q's sendbuf */
    p->dt->fill(p->recvbuf, elems, p->poison, 0);
    alltoall_body(p, elems, blk, 1);
    for (int q = 0; q < p->nranks; q++)
        bad += p->dt->check(at(p->recvbuf, p, (size_t)q * blk), blk, p->val[q], phase);
    return bad;
}

/* ---------------------------------------------------------------- the modes */
static double bus_one(int n) { return 1.0; }
static double bus_ring(int n) { return (double)(n - 1) / n; }
static double bus_allreduce(int n) { return 2.0 * (n - 1) / n; }

static const perf_mode_t modes[] = {
    {"allreduce", 1, 0, bus_allreduce, allreduce_setup, allreduce_body, allreduce_verify,
     "MPI_Allreduce; bytes = buffer size"},
    {"broadcast", 0, 0, bus_one, broadcast_setup, broadcast_body, broadcast_verify,
     "MPI_Bcast from -r; bytes = buffer size"},
    {"reduce", 1, 0, bus_one, allreduce_setup, reduce_body, reduce_verify,
     "MPI_Reduce to -r; bytes = buffer size"},
    {"allgather", 0, 1, bus_ring, allgather_setup, allgather_body, allgather_verify,
     "MPI_Allgather; bytes = total received (nranks x sent)"},
    {"reducescatter", 1, 1, bus_ring, reducescatter_setup, reducescatter_body,
     reducescatter_verify, "MPI_Reduce_scatter_block; bytes = total sent (nranks x received)"},
    {"alltoall", 0, 1, bus_ring, reducescatter_setup, alltoall_body, alltoall_verify,
     "MPI_Alltoall; bytes = total sent by one rank"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: mpirun -np N mpi_coll_perf MODE [flags]\nmodes:\n");
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
        fprintf(f, "  %-13s %s\n", modes[i].name, modes[i].help);
    fprintf(f,
            "flags:\n"
            "  -b, --minbytes N     smallest size (K/M/G suffixes)                 [8]\n"
            "  -e, --maxbytes N     largest size                                   [64M]\n"
            "  -f, --stepfactor F   multiplier between sizes                       [2]\n"
            "  -n, --iters N        timed iterations per size                      [1000]\n"
            "  -w, --warmup_iters N untimed iterations first [10%% of -n, at least 5]\n"
            "  -d, --datatype T     int8 uint8 int32 uint32 int64 uint64 float double [float]\n"
            "  -o, --op OP          sum prod min max (reducing modes)              [sum]\n"
            "  -r, --root R         root of broadcast/reduce                       [0]\n"
            "  -V, --max-volume N   fewer iterations for sizes that would move more\n"
            "                       than N bytes per timed loop (0: no cap)        [1G]\n"
            "      --csv FILE       also write the rows as CSV (rank 0)\n"
            "  -h, --help\n");
}

static const perf_dtype_t *find_dtype(const char *name)
{
    for (size_t i = 0; i < sizeof(dtype_aliases) / sizeof(dtype_aliases[0]); i++)
        if (strcmp(name, dtype_aliases[i].alias) == 0) name = dtype_aliases[i].name;
    for (size_t i = 0; i < sizeof(dtypes) / sizeof(dtypes[0]); i++)
        if (strcmp(name, dtypes[i].name) == 0) return &dtypes[i];
    return NULL;
}

/* Runs before MPI_Init: errors exit(2) on every rank alike. */
static const perf_mode_t *parse_args(perf_t *p, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"minbytes", required_argument, NULL, 'b'},   {"maxbytes", required_argument, NULL, 'e'},
        {"stepfactor", required_argument, NULL, 'f'}, {"iters", required_argument, NULL, 'n'},
        {"warmup_iters", required_argument, NULL, 'w'}, {"datatype", required_argument, NULL, 'd'},
        {"op", required_argument, NULL, 'o'},         {"root", required_argument, NULL, 'r'},
        {"max-volume", required_argument, NULL, 'V'}, {"csv", required_argument, NULL, 'C'},
        {"help", no_argument, NULL, 'h'},             {NULL, 0, NULL, 0}};
    const char *dname = "float", *oname = "sum";
    p->minb = 8, p->maxb = 64u << 20, p->factor = 2, p->max_volume = 1u << 30;
    p->iters = p->warmup = -1, p->root = 0, p->csv = NULL;
    int c;
    while ((c = getopt_long(argc, argv, "b:e:f:n:w:d:o:r:V:h", longopts, NULL)) != -1) {
        if (bench_sweep_flag(PROG, c, optarg, &p->minb, &p->maxb, &p->factor, &p->iters,
                             &p->warmup))
            continue;
        switch (c) {
        case 'd': dname = optarg; break;
        case 'o': oname = optarg; break;
        case 'r': p->root = (int)bench_parse_size(PROG, optarg, "-r"); break;
        case 'V': p->max_volume = bench_parse_size(PROG, optarg, "-V"); break;
        case 'C': p->csv = optarg; break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); exit(2);
        }
    }
    const char *err = NULL;
    const perf_mode_t *m = NULL;
    if (optind != argc - 1) {
        usage(stderr);
        exit(2);
    }
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
        if (strcmp(argv[optind], modes[i].name) == 0) m = &modes[i];
    p->dt = find_dtype(dname);
    p->op = (perf_op_t)-1;
    for (int i = 0; i < 4; i++)
        if (strcmp(oname, op_names[i]) == 0) p->op = (perf_op_t)i;
    if (!m) err = "unknown mode (try -h)";
    else if (!p->dt && (!strcmp(dname, "half") || !strcmp(dname, "float16") ||
                        !strcmp(dname, "bfloat16")))
        err = "MPI has no 16-bit float datatype to reduce; use float";
    else if (!p->dt) err = "unknown datatype (-d)";
    else if (strcmp(oname, "avg") == 0) err = "MPI has no average reduction (-o avg)";
    else if ((int)p->op < 0) err = "unknown reduction (-o)";
    else if (p->maxb < p->minb) err = "-e is smaller than -b";
    else if (p->factor < 2) err = "-f must be at least 2";
    else if (p->iters == 0) err = "-n must be at least 1";
    if (err) {
        fprintf(stderr, "mpi_coll_perf: %s\n", err);
        exit(2);
    }
    if (p->iters < 0) p->iters = 1000;
    if (p->warmup < 0) p->warmup = bench_default_warmup(p->iters);
    return m;
}

/* One row: the timed loop for nominal size `nominal`. Returns the row's wrong count
 * (rank 0; other ranks return 0). */
static long run_size(perf_t *p, const perf_mode_t *m, size_t nominal, FILE *csv)
{
    size_t esz = p->dt->size, elems = nominal / esz, blk = elems;
    if (m->blocked) {
        blk = elems / (size_t)p->nranks; /* nccl-tests rounds down to whole blocks */
        elems = blk * (size_t)p->nranks;
    }
    if (blk > (size_t)INT32_MAX) die(p, "%zu elements per call exceed MPI's int count", blk);
    size_t bytes = elems * esz;

    long iters = p->iters, warmup = p->warmup;
    if (p->max_volume && bytes && (double)bytes * (double)iters > (double)p->max_volume) {
        /* the same on every rank: it depends only on the arguments */
        iters = (long)(p->max_volume / bytes);
        if (iters < 1) iters = 1;
        warmup = warmup * iters / p->iters;
        if (warmup < 1) warmup = 1;
    }
    if (m->setup) m->setup(p, elems, blk);
    MPI_CHECK(p, MPI_Barrier(MPI_COMM_WORLD));
    m->body(p, elems, blk, warmup);
    MPI_CHECK(p, MPI_Barrier(MPI_COMM_WORLD));
    double t0 = MPI_Wtime();
    m->body(p, elems, blk, iters);
    double t1 = MPI_Wtime();
    MPI_CHECK(p, MPI_Barrier(MPI_COMM_WORLD));
    long mine = m->verify(p, elems, blk), wrong = 0;
    MPI_CHECK(p, MPI_Reduce(&mine, &wrong, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
    if (p->me != 0) return 0;

    double us = (t1 - t0) * 1e6 / (double)iters;
    double gbps = us > 0 ? (double)bytes / us / 1e3 : 0;
    double busbw = gbps * m->busbw(p->nranks);
    const char *redop = m->reduces ? op_names[p->op] : "none";
    printf("  %13s %12zu %12zu %8s %5s %12.3f %12.3f %12.3f %8ld\n", m->name, bytes, elems,
           p->dt->name, redop, us, gbps, busbw, wrong);
    fflush(stdout);
    bench_csv_row(csv, m->name, bytes, elems, p->dt->name, redop, ALGO, us, gbps, busbw, wrong);
    return wrong;
}

int main(int argc, char **argv)
{
    perf_t p = {0};
    p.me = -1;
    const perf_mode_t *m = parse_args(&p, argc, argv);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &p.me);
    MPI_Comm_size(MPI_COMM_WORLD, &p.nranks);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (p.root >= p.nranks) die(&p, "-r %d: there are only %d ranks", p.root, p.nranks);
    make_patterns(&p);

    /* every mode's buffers fit in -e bytes each; touched now, not inside the first row */
    size_t n = p.maxb > 64 ? p.maxb : 64;
    p.sendbuf = aligned_alloc(4096, (n + 4095) / 4096 * 4096);
    p.recvbuf = aligned_alloc(4096, (n + 4095) / 4096 * 4096);
    if (!p.sendbuf || !p.recvbuf) die(&p, "cannot allocate 2 x %zu bytes", n);
    memset(p.sendbuf, 0, n);
    memset(p.recvbuf, 0, n);

    FILE *csv = NULL;
    if (p.me == 0) {
        if (p.csv && !(csv = fopen(p.csv, "w"))) die(&p, "cannot open %s for writing", p.csv);
        if (csv) fprintf(csv, BENCH_CSV_HEADER "\n");
        printf("# mpi_coll_perf %s: %d ranks, iters %ld, warmup %ld, max volume %zu, root %d\n",
               m->name, p.nranks, p.iters, p.warmup, p.max_volume, p.root);
        printf("# %13s %12s %12s %8s %5s %12s %12s %12s %8s\n", "op", "bytes", "count", "type",
               "redop", "time_us", "algbw_GBps", "busbw_GBps", "wrong");
    }

    long total_wrong = 0;
    for (size_t bytes = p.minb;; bytes = bytes ? bytes * p.factor : 1) {
        total_wrong += run_size(&p, m, bytes, csv);
        if (bytes >= p.maxb || bytes > p.maxb / p.factor) break; /* the next is past -e */
    }
    if (csv && fclose(csv) != 0) die(&p, "cannot write %s", p.csv);
    if (total_wrong) fprintf(stderr, "mpi_coll_perf: %ld wrong results\n", total_wrong);
    MPI_Bcast(&total_wrong, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    free(p.sendbuf);
    free(p.recvbuf);
    free(p.val);
    MPI_Finalize();
    return total_wrong ? 1 : 0;
}
