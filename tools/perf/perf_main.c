/*
 * duet-perf — Duet's benchmark tool.
 *
 *   duetrun -n N build/bin/duet-perf MODE [flags]       a sweep (duet-perf -h lists all)
 *   duet-perf --fit [--plot FILE.png] FILE.csv...        analysis of earlier sweeps
 *   duet-perf --list-algos COLLECTIVE                    the algorithms -a can force
 *   duetrun -n N build/bin/duet-perf --calibrate [C...]  measure the tuner's alpha, beta; fit its terms
 *   duetrun -n N build/bin/duet-perf --validate [C...]   the tuner's model against forced runs
 *
 * One process per rank; every rank runs the same loop and rank 0 prints one row per size
 * (per datatype and op with -d all / -o all), as a table on stdout and optionally as CSV
 * (the format every bench/ script and --fit read):
 *   op,bytes,count,dtype,redop,algo,time_us,algbw_GBps,busbw_GBps,wrong
 *
 * A mode is one row of a mode table (perf_onesided.c, perf_coll.c). The driver (run_row)
 * does the rest for every mode alike, per row:
 *
 *   setup -> barrier -> warmup iterations -> barrier -> t0, timed iterations, t1
 *         -> after -> barrier -> verify -> every rank's time and wrong count to rank 0
 *
 * To add a mode: write its setup/body/verify and add a row to a table.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll/duet_coll_tune.h"
#include "perf.h"

void perf_die(const char *fmt, ...)
{
    char msg[1024];
    int rank = duet_my_pe() >= 0 ? duet_my_pe() : (int)duet_cfg()->rank;
    int len = rank >= 0 ? snprintf(msg, sizeof msg, "duet-perf: rank %d: ", rank)
                        : snprintf(msg, sizeof msg, "duet-perf: ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + len, sizeof msg - (size_t)len, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s\n", msg); /* one write: the ranks share the terminal */
    exit(1);
}

static const perf_mode_t *find_mode(const char *name, int device)
{
    if (device) {
#ifdef DUET_HAVE_CUDA
        for (size_t i = 0; i < perf_device_nmodes; i++)
            if (strcmp(name, perf_device_modes[i].name) == 0) return &perf_device_modes[i];
        for (size_t i = 0; i < perf_device_coll_nmodes; i++)
            if (strcmp(name, perf_device_coll_modes[i].name) == 0) return &perf_device_coll_modes[i];
        perf_die("--device: no device mode '%s' (try -h)", name);
#else
        perf_die("--device: this duet-perf is built without CUDA");
#endif
    }
    for (size_t i = 0; i < perf_onesided_nmodes; i++)
        if (strcmp(name, perf_onesided_modes[i].name) == 0) return &perf_onesided_modes[i];
    for (size_t i = 0; i < perf_coll_nmodes; i++)
        if (strcmp(name, perf_coll_modes[i].name) == 0) return &perf_coll_modes[i];
    return NULL;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: duetrun -n N duet-perf MODE [flags]\n"
               "       duet-perf --fit [--plot FILE.png] FILE.csv...   (also: --plot alone)\n"
               "       duet-perf --list-algos COLLECTIVE\n"
               "       duetrun -n N duet-perf --calibrate [COLLECTIVE...] [-b -e -f --rounds ...]\n"
               "       duetrun -n N duet-perf --validate [COLLECTIVE...] [-b -e -f --rounds ...]\n"
               "one-sided modes (rank 0's time):\n");
    for (size_t i = 0; i < perf_onesided_nmodes; i++)
        fprintf(f, "  %-13s %s\n", perf_onesided_modes[i].name, perf_onesided_modes[i].help);
    fprintf(f, "collective modes (nccl-tests' conventions):\n");
    for (size_t i = 0; i < perf_coll_nmodes; i++)
        fprintf(f, "  %-13s %s\n", perf_coll_modes[i].name, perf_coll_modes[i].help);
#ifdef DUET_HAVE_CUDA
    fprintf(f, "device modes (-G / --device MODE; one-sided ones: rank 0's time; collectives as above):\n");
    for (size_t i = 0; i < perf_device_nmodes; i++)
        fprintf(f, "  %-13s %s\n", perf_device_modes[i].name, perf_device_modes[i].help);
    for (size_t i = 0; i < perf_device_coll_nmodes; i++)
        fprintf(f, "  %-13s %s\n", perf_device_coll_modes[i].name, perf_device_coll_modes[i].help);
#endif
    fprintf(f,
            "flags:\n"
            "  -b, --minbytes N     smallest size (K/M/G suffixes)                 [8]\n"
            "  -e, --maxbytes N     largest size                                   [64M]\n"
            "  -f, --stepfactor F   multiplier between sizes                       [2]\n"
            "  -n, --iters N        timed iterations [100 put/get, 1000 collectives, 10000 others]\n"
            "  -w, --warmup_iters N untimed iterations first [10%% of -n, at least 5]\n"
            "  -c, --check 0|1      verify every row against a reference; wrong counts\n"
            "                       wrong elements (bytes for put/get), -1: not checked [1]\n"
            "  -d, --datatype T     int8 uint8 int32 uint32 int64 uint64 half bfloat16 float\n"
            "                       double, or all                                 [float]\n"
            "  -o, --op OP          sum prod min max avg, or all                   [sum]\n"
            "  -r, --root R         root of broadcast and reduce                   [0]\n"
            "  -a, --algo NAME      force the collective's algorithm (DUET_ALGO=<mode>:NAME);\n"
            "                       one per run: tools/duet-perf-algos.sh runs them all\n"
            "      --average 0|1|2|3  a collective row's time from the ranks' times:\n"
            "                       0 rank 0, 1 mean, 2 min, 3 max (nccl-tests' -a)  [1]\n"
            "  -W, --window N       operations per iteration of put/get            [64]\n"
            "  -V, --max-volume N   fewer iterations for sizes that would move more than\n"
            "                       N bytes per timed loop (put/get, collectives; 0: no cap) [1G]\n"
            "      --buffers heap|host  collectives' send and receive buffers: from the\n"
            "                       symmetric heap (one copy per transfer) or malloc   [heap]\n"
            "      --csv FILE       also write the rows as CSV (rank 0)\n"
            "      --fit            after the sweep (or of CSV files): alpha-beta fit per algorithm\n"
            "                       (least squares on relative error), crossovers, fastest per size\n"
            "      --plot FILE.png  time and busbw against size, with the fits (gnuplot)\n"
            "      --list-algos C   the algorithms of collective C, one per line\n"
            "      --calibrate [C..] measure the tuner's alpha and beta anew, then fit the model's\n"
            "                       terms to every algorithm of each C forced over -b .. -e\n"
            "                       (16 B .. 16 MiB by 4, 3 rounds) and save them (collective);\n"
            "                       with --device the GPU model's, to the GPU executor's algorithms\n"
            "      --validate [C..] every algorithm of each collective C (all six without) forced\n"
            "                       in turn over -b .. -e by -f (default 4): the tuner's predictions\n"
            "                       against the medians measured, its pick against the fastest;\n"
            "                       with --device on GPU buffers (--buffers host: cudaMalloc)\n"
            "      --rounds R       --validate: rounds, each time the median of R               [5]\n"
            "      --timing loop|call  a collective row's time: loop, each rank's time per call\n"
            "                       in a loop of back-to-back calls (which may overlap), combined\n"
            "                       by --average; call, each call alone after a barrier, from the\n"
            "                       first rank's start to the last rank's end, the median over the\n"
            "                       calls (one host)   [loop; call for --calibrate and --validate]\n"
            "  -G, --device         run the device mode MODE (GPU buffers, or from inside a kernel;\n"
            "                       CUDA builds; make run adds the GPU sweep when a GPU is present)\n"
            "      --floor          with --device allreduce: print each row's memory-traffic floor\n"
            "  -h, --help\n"
            "sizes (as nccl-tests): a size S is the bytes of the largest buffer of a rank:\n"
            "  allreduce, broadcast, reduce, sendrecv: S per rank; allgather: S received\n"
            "  (S/n sent); reducescatter: S sent (S/n received); alltoall: S sent and received.\n"
            "  count = S / sizeof(type), divided by n where the call takes a per-rank block\n"
            "  (rounded down; the bytes column is what was actually moved).\n"
            "  algbw = bytes / time (GB = 1e9 B); busbw = algbw x 2(n-1)/n (allreduce),\n"
            "  (n-1)/n (allgather, reducescatter, alltoall), 1 (broadcast, reduce, sendrecv).\n"
            "  time = average over -n iterations of each rank's loop, combined by --average.\n"
            "algo column: the forced algorithm, auto:NAME the tuner's choice, p2p (sendrecv),\n"
            "  shm (one-sided). A size the forced algorithm cannot run is skipped.\n"
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

typedef struct {
    int list_algos, calibrate, validate, rounds;
    char **files; /* analysis: CSV files */
    const perf_mode_t *modes[8]; /* --validate: its collectives */
    int nmodes;
    int nfiles;
} cli_t;

/* Runs before duet_init(): every rank parses the same arguments and fails alike. Must not
 * read the settings (duet_cfg) unless it exits: -a sets DUET_ALGO afterwards. */
static void parse_args(perf_t *p, cli_t *cli, int argc, char **argv)
{
    enum { OPT_CSV = 256, OPT_AVERAGE, OPT_FIT, OPT_PLOT, OPT_LIST, OPT_CALIBRATE, OPT_BUFFERS,
           OPT_DEVICE, OPT_FLOOR, OPT_VALIDATE, OPT_ROUNDS, OPT_TIMING };
    static const struct option longopts[] = {
        {"minbytes", required_argument, NULL, 'b'},  {"maxbytes", required_argument, NULL, 'e'},
        {"stepfactor", required_argument, NULL, 'f'}, {"iters", required_argument, NULL, 'n'},
        {"warmup_iters", required_argument, NULL, 'w'}, {"window", required_argument, NULL, 'W'},
        {"max-volume", required_argument, NULL, 'V'}, {"check", required_argument, NULL, 'c'},
        {"datatype", required_argument, NULL, 'd'},  {"op", required_argument, NULL, 'o'},
        {"root", required_argument, NULL, 'r'},      {"algo", required_argument, NULL, 'a'},
        {"average", required_argument, NULL, OPT_AVERAGE}, {"csv", required_argument, NULL, OPT_CSV},
        {"fit", no_argument, NULL, OPT_FIT},         {"plot", required_argument, NULL, OPT_PLOT},
        {"list-algos", no_argument, NULL, OPT_LIST}, {"calibrate", no_argument, NULL, OPT_CALIBRATE},
        {"buffers", required_argument, NULL, OPT_BUFFERS}, {"device", no_argument, NULL, OPT_DEVICE},
        {"floor", no_argument, NULL, OPT_FLOOR},     {"validate", no_argument, NULL, OPT_VALIDATE},
        {"rounds", required_argument, NULL, OPT_ROUNDS},     {"timing", required_argument, NULL, OPT_TIMING},
        {"help", no_argument, NULL, 'h'},            {NULL, 0, NULL, 0}};
    const char *dtype = "float", *op = "sum";
    int factor_set = 0, iters_set = 0, minb_set = 0, maxb_set = 0, timing_set = 0;
    p->minb = 8, p->maxb = (size_t)64 << 20, p->factor = 2, p->max_volume = (size_t)1 << 30;
    p->iters = p->warmup = -1, p->window = 64, p->csv = NULL;
    p->check = 1, p->average = PERF_TIME_MEAN, p->root = 0, p->algo = NULL;
    int c;
    while ((c = getopt_long(argc, argv, "b:e:f:n:w:W:V:c:d:o:r:a:Gh", longopts, NULL)) != -1) {
        switch (c) {
        case 'b': p->minb = parse_size_arg(optarg, "-b"), minb_set = 1; break;
        case 'e': p->maxb = parse_size_arg(optarg, "-e"), maxb_set = 1; break;
        case 'f': p->factor = parse_size_arg(optarg, "-f"), factor_set = 1; break;
        case 'n': p->iters = (long)parse_size_arg(optarg, "-n"), iters_set = 1; break;
        case 'w': p->warmup = (long)parse_size_arg(optarg, "-w"); break;
        case 'W': p->window = (long)parse_size_arg(optarg, "-W"); break;
        case 'V': p->max_volume = parse_size_arg(optarg, "-V"); break;
        case 'c': p->check = (int)parse_size_arg(optarg, "-c") != 0; break;
        case 'd': dtype = optarg; break;
        case 'o': op = optarg; break;
        case 'r': p->root = (int)parse_size_arg(optarg, "-r"); break;
        case 'a': p->algo = optarg; break;
        case OPT_AVERAGE: p->average = (int)parse_size_arg(optarg, "--average"); break;
        case OPT_CSV: p->csv = optarg; break;
        case OPT_FIT: p->fit = 1; break;
        case OPT_PLOT: p->plot = optarg; break;
        case OPT_LIST: cli->list_algos = 1; break;
        case OPT_CALIBRATE: cli->calibrate = 1; break;
        case 'G':
        case OPT_DEVICE: p->device = 1; break;
        case OPT_FLOOR: p->floor = 1; break;
        case OPT_VALIDATE: cli->validate = 1; break;
        case OPT_ROUNDS: cli->rounds = (int)parse_size_arg(optarg, "--rounds"); break;
        case OPT_TIMING:
            if (strcmp(optarg, "loop") != 0 && strcmp(optarg, "call") != 0) {
                fprintf(stderr, "duet-perf: --timing takes loop or call, not \"%s\"\n", optarg);
                exit(2);
            }
            p->timing = strcmp(optarg, "call") == 0 ? PERF_TIMING_CALL : PERF_TIMING_LOOP, timing_set = 1;
            break;
        case OPT_BUFFERS:
            if (strcmp(optarg, "heap") != 0 && strcmp(optarg, "host") != 0) {
                fprintf(stderr, "duet-perf: --buffers takes heap or host, not \"%s\"\n", optarg);
                exit(2);
            }
            p->host_buffers = strcmp(optarg, "host") == 0;
            break;
        case 'h':
            if (duet_cfg()->rank <= 0) usage(stdout); /* once under duetrun */
            exit(0);
        default: usage(stderr); exit(2);
        }
    }
    int npos = argc - optind;
    if (cli->validate || cli->calibrate) {
        /* the collective modes named, else all six; -b .. -e by -f: 8 B .. 64 MiB by 4
         * (--calibrate: 16 B .. 16 MiB, between --validate's sizes, so that a validation
         * after it is measured on calls the fit has not seen) */
        if (cli->calibrate && !minb_set) p->minb = 16;
        if (cli->calibrate && !maxb_set) p->maxb = (size_t)16 << 20;
        if (p->algo) perf_die("--validate forces every algorithm itself: no -a");
#ifndef DUET_HAVE_CUDA
        if (p->device) perf_die("--device: a Duet built without CUDA");
#endif
        static const char *all[] = {"allreduce", "broadcast", "reduce", "allgather", "reducescatter", "alltoall"};
        cli->nmodes = npos ? npos : (int)DUET_ARRAY_LEN(all);
        if (cli->nmodes > (int)DUET_ARRAY_LEN(cli->modes)) perf_die("--validate: at most %d collectives",
                                                                    (int)DUET_ARRAY_LEN(cli->modes));
        for (int i = 0; i < cli->nmodes; i++) {
            const char *name = npos ? argv[optind + i] : all[i];
            const perf_mode_t *m = perf_coll_find_mode(name);
#ifdef DUET_HAVE_CUDA
            if (p->device && m && perf_coll_kind(m) >= 0) m = perf_device_coll_find_mode(name);
#endif
            if (!m || (!p->device && perf_coll_kind(m) < 0))
                perf_die("--validate: '%s' is not a collective with algorithms", name);
            cli->modes[i] = m;
        }
        if (!factor_set) p->factor = 4;
        /* what the model predicts: one call's span (GPU calls: the loop's time per call, as
         * a stream runs them back to back) */
        if (!timing_set) p->timing = p->device ? PERF_TIMING_LOOP : PERF_TIMING_CALL;
        if (cli->rounds <= 0) cli->rounds = cli->calibrate ? 3 : 5;
        p->mode = cli->modes[0];
        p->max_volume = 0;
        npos = 1; /* the checks below, for the first mode */
    } else if (cli->list_algos) {
        if (npos != 1) {
            usage(stderr);
            exit(2);
        }
        if (cli->list_algos) cli->files = &argv[optind];
        return;
    }
    if (npos < 1) {
        usage(stderr);
        exit(2);
    }
    if (!cli->validate && !cli->calibrate) p->mode = find_mode(argv[optind], p->device);
    if (!p->mode) {
        if (!p->fit && !p->plot) perf_die("unknown mode '%s' (try -h)", argv[optind]);
        cli->files = &argv[optind], cli->nfiles = npos; /* analysis of CSV files */
        return;
    }
    if (npos != 1 && !cli->validate && !cli->calibrate)
        perf_die("one mode per run; '%s' is extra (CSV files go without a mode)", argv[optind + 1]);
    const perf_mode_t *m = p->mode;
    if (p->maxb < p->minb) perf_die("-e is smaller than -b");
    if (p->factor < 2) perf_die("-f must be at least 2");
    if (p->iters == 0 || p->window == 0) perf_die("-n and -W must be at least 1");
    if (p->average < 0 || p->average > 3) perf_die("--average takes 0, 1, 2 or 3");
    if (p->iters < 0) p->iters = m->default_iters;
    if (p->warmup < 0) p->warmup = p->iters / 10 < 5 ? 5 : p->iters / 10;
    /* datatypes and ops: one-sided modes have their own; a non-reducing collective has none */
    p->ndtypes = p->nops = 1;
    p->dtypes[0] = DUET_FLOAT32, p->ops[0] = DUET_SUM;
    if (m->coll) {
        if (strcmp(dtype, "all") == 0) {
            for (int i = 0; i < DUET_DATATYPE_COUNT; i++) p->dtypes[i] = (duet_datatype_t)i;
            p->ndtypes = DUET_DATATYPE_COUNT;
        } else if (duet_dtype_parse(dtype, &p->dtypes[0]) != 0) {
            perf_die("-d %s: unknown datatype (int8 uint8 int32 uint32 int64 uint64 half bfloat16 "
                     "float double, or all)", dtype);
        }
        if (strcmp(op, "all") == 0) {
            for (int i = 0; i < DUET_OP_COUNT; i++) p->ops[i] = (duet_op_t)i;
            p->nops = DUET_OP_COUNT;
        } else if (duet_op_parse(op, &p->ops[0]) != 0) {
            perf_die("-o %s: unknown op (sum prod min max avg, or all)", op);
        }
        if (!m->redop_from_flags) p->nops = 1; /* redop column "none" */
    }
    if (cli->validate || cli->calibrate) {
        if (p->ndtypes > 1 || p->nops > 1) perf_die("--validate: one datatype and one op");
        if (!iters_set) p->iters = -1; /* per size (perf_validate.c) */
    }
}

/* ---------------------------------------------------------------- memory */
static void *sym_alloc(perf_t *p, size_t bytes)
{
    void *ptr = duet_calloc(p->comm, 1, bytes);
    if (!ptr) perf_die("duet_calloc(%zu) failed: %s", bytes, duet_last_error());
    return ptr;
}

static void setup_memory(perf_t *p, const perf_mode_t *m)
{
    /* flag, counter, result, slot and report (2 words), each on its own cache line */
    const size_t line = DUET_CACHELINE / sizeof(uint64_t);
    p->flag = sym_alloc(p, 5 * DUET_CACHELINE);
    p->counter = p->flag + line, p->result = p->flag + 2 * line, p->slot = p->flag + 3 * line;
    p->report = p->flag + 4 * line;
    p->origin = p->target = NULL;
    if (m->coll) {
        perf_coll_alloc(p);
        return;
    }
    if (!m->sized || p->device) return; /* device modes take GPU memory in their setup */
    size_t n = p->maxb ? p->maxb : 1, heap = duet_cfg()->symmetric_size;
    if (n > heap / 2 || 2 * n + 5 * DUET_CACHELINE > heap)
        perf_die("%s up to -e %zu needs 2 x %zu bytes of symmetric heap, but DUET_SYMMETRIC_SIZE is "
                 "%zu: lower -e or raise DUET_SYMMETRIC_SIZE", m->name, p->maxb, n, heap);
    p->origin = sym_alloc(p, n);
    p->target = sym_alloc(p, n);
}

/* ---------------------------------------------------------------- output */
static void human(char *out, size_t len, size_t bytes)
{
    static const char *unit[] = {"", "K", "M", "G", "T"};
    int u = 0;
    while (u < 4 && bytes >= 1024 && bytes % 1024 == 0) bytes /= 1024, u++;
    snprintf(out, len, "%zu%s", bytes, unit[u]);
}

/* The live progress line: rank 0, stderr on a terminal, rewritten in place. */
typedef struct {
    int on, row, rows;
    uint64_t t0;
} progress_t;

static void progress_show(progress_t *pr, const perf_t *p, size_t bytes)
{
    if (!pr->on) return;
    char h[32];
    human(h, sizeof h, bytes);
    fprintf(stderr, "\r\033[K  duet-perf %s%s%s %s%s%s: %sB, row %d of %d, %.1f s", p->mode->name,
            p->algo ? " -a " : "", p->algo ? p->algo : "", p->mode->coll ? duet_dtype_name(p->dtype) : "",
            p->mode->redop_from_flags ? " " : "", p->mode->redop_from_flags ? duet_op_name(p->op) : "", h,
            pr->row + 1, pr->rows, (double)(duet_time_ns() - pr->t0) * 1e-9);
}

static void progress_clear(const progress_t *pr)
{
    if (pr->on) fprintf(stderr, "\r\033[K");
}

static void print_header(const perf_t *p)
{
    const perf_mode_t *m = p->mode;
    printf("# duet-perf %s: %d ranks, iters %ld, warmup %ld", m->name, p->nranks, p->iters, p->warmup);
    if (m->windowed) printf(", window %ld", p->window);
    if (m->windowed || m->coll || m->gpu_coll) printf(", max volume %zu", p->max_volume);
    if (m->coll) {
        static const char *avg[] = {"rank 0", "mean over ranks", "min over ranks", "max over ranks"};
        printf(", algo %s, check %d, time: %s", p->algo ? p->algo : "auto (tuner)", p->check, avg[p->average]);
        if (strcmp(m->name, "reduce") == 0 || strcmp(m->name, "broadcast") == 0) printf(", root %d", p->root);
        printf(", buffers %s", p->bufs_in_heap ? "in the symmetric heap" : "host (malloc)");
    }
    printf("\n# %12s %12s %12s %8s %6s %14s %12s %12s %12s %8s\n", "op", "bytes", "count", "dtype",
           "redop", "algo", "time_us", "algbw_GBps", "busbw_GBps", "wrong");
    fflush(stdout);
}

static void print_row(const perf_row_t *r, FILE *csv)
{
    char wrong[32];
    if (r->wrong < 0) snprintf(wrong, sizeof wrong, "N/A");
    else snprintf(wrong, sizeof wrong, "%lld", r->wrong);
    printf("  %12s %12zu %12zu %8s %6s %14s %12.3f %12.3f %12.3f %8s\n", r->op, r->bytes, r->count, r->dtype,
           r->redop, r->algo, r->time_us, r->algbw, r->busbw, wrong);
    fflush(stdout);
    if (csv)
        fprintf(csv, "%s,%zu,%zu,%s,%s,%s,%.4f,%.4f,%.4f,%lld\n", r->op, r->bytes, r->count, r->dtype, r->redop,
                r->algo, r->time_us, r->algbw, r->busbw, r->wrong);
}

/* ---------------------------------------------------------------- the driver */
static double as_double(uint64_t bits)
{
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

/* Every rank's time per operation and wrong count, to rank 0 (through symmetric memory,
 * not a collective: the collective under test may be forced to any algorithm). */
static void gather_report(perf_t *p, double us, uint64_t wrong, double *time_us, uint64_t *total_wrong)
{
    memcpy(&p->report[0], &us, sizeof us);
    p->report[1] = wrong;
    PERF_CHECK(duet_barrier_all());
    if (p->me != 0) return;
    double sum = 0, lo = us, hi = us;
    *total_wrong = 0;
    for (int pe = 0; pe < p->nranks; pe++) {
        uint64_t t = p->report[0], w = p->report[1];
        if (pe != 0) {
            PERF_CHECK(duet_g_uint64(p->comm, &p->report[0], pe, &t));
            PERF_CHECK(duet_g_uint64(p->comm, &p->report[1], pe, &w));
        }
        double x = as_double(t);
        sum += x, lo = x < lo ? x : lo, hi = x > hi ? x : hi;
        *total_wrong += w;
    }
    if (!(p->mode->coll || p->mode->gpu_coll) || p->average == PERF_TIME_RANK0) *time_us = us;
    else *time_us = p->average == PERF_TIME_MEAN ? sum / p->nranks : p->average == PERF_TIME_MIN ? lo : hi;
}

/* --timing call: room for n calls' stamps (collective: every rank has the same n). */
static void stamps_reserve(perf_t *p, long n)
{
    if (n <= p->stamps_cap) return;
    if (p->stamps) PERF_CHECK(duet_free(p->comm, p->stamps));
    p->stamps = duet_malloc(p->comm, sizeof *p->stamps * 2 * (size_t)n);
    if (!p->stamps) perf_die("--timing call: %zu bytes of symmetric heap for the stamps: %s",
                             sizeof *p->stamps * 2 * (size_t)n, duet_last_error());
    p->stamps_cap = n;
}

/* --timing call, on rank 0 after the timed loop (and a barrier): the median over the n calls
 * of the span from the first rank's start to the last rank's end. Ranks on several hosts do
 * not share a clock: then each rank's median call time, the largest. */
static double stamps_median_us(perf_t *p, long n)
{
    duet_coll_layout_t lay;
    PERF_CHECK(duet_coll_layout_get(p->comm, &lay));
    int one_host = lay.hosts <= 1;
    size_t bytes = sizeof *p->stamps * 2 * (size_t)n;
    uint64_t *all = malloc(bytes), *lo = malloc(sizeof *lo * (size_t)n), *hi = malloc(sizeof *hi * (size_t)n);
    double *span = malloc(sizeof *span * (size_t)n), worst = 0;
    if (!all || !lo || !hi || !span) perf_die("out of memory");
    for (int pe = 0; pe < p->nranks; pe++) {
        if (pe == p->me) memcpy(all, p->stamps, bytes);
        else PERF_CHECK(duet_get(p->comm, all, p->stamps, bytes, pe));
        for (long i = 0; i < n; i++) {
            uint64_t a = all[2 * i], b = all[2 * i + 1];
            if (one_host) {
                lo[i] = pe == 0 || a < lo[i] ? a : lo[i];
                hi[i] = pe == 0 || b > hi[i] ? b : hi[i];
            } else {
                span[i] = (double)(b - a) / 1e3;
            }
        }
        if (!one_host) {
            double med = duet_median(span, (int)n, NULL);
            worst = med > worst ? med : worst;
        }
    }
    if (one_host) {
        for (long i = 0; i < n; i++) span[i] = (double)(hi[i] - lo[i]) / 1e3;
        worst = duet_median(span, (int)n, NULL);
    }
    free(all), free(lo), free(hi), free(span);
    return worst;
}

int perf_run_row(perf_t *p, size_t bytes, perf_row_t *row, const char **why)
{
    const perf_mode_t *m = p->mode;
    long iters = p->iters, warmup = p->warmup;
    double per_iter = (double)bytes * (double)(m->windowed ? p->window : 1);
    if ((m->windowed || m->coll || m->gpu_coll) && p->max_volume && bytes && per_iter * (double)iters > (double)p->max_volume) {
        /* the same on every rank: it depends only on the arguments */
        iters = (long)((double)p->max_volume / per_iter);
        if (iters < 1) iters = 1;
        warmup = warmup * iters / p->iters;
        if (warmup < 1) warmup = 1;
    }
    p->row_bytes = bytes, p->busbw_factor = 1;
    snprintf(p->row_algo, sizeof p->row_algo, "%s", m->algo ? m->algo : "");
    /* a one-sided row's transport to rank 1: shm where its memory is mapped here, else net */
    if (m->algo && !strcmp(m->algo, "shm") && p->nranks > 1 && p->slot && !duet_ptr(p->comm, p->slot, 1))
        snprintf(p->row_algo, sizeof p->row_algo, "net");
    if (m->setup && m->setup(p, bytes, why)) return -1;
    PERF_CHECK(duet_barrier_all());
    m->body(p, bytes, warmup);
    int stamp = p->timing == PERF_TIMING_CALL && m->coll;
    if (stamp) stamps_reserve(p, iters);
    PERF_CHECK(duet_barrier_all());
    uint64_t t0 = duet_time_ns();
    p->stamping = stamp;
    m->body(p, bytes, iters);
    p->stamping = 0;
    uint64_t t1 = duet_time_ns();
    if (m->after) m->after(p, bytes);
    PERF_CHECK(duet_barrier_all());
    double call_us = stamp && p->me == 0 ? stamps_median_us(p, iters) : 0;
    uint64_t wrong = p->check && m->verify ? m->verify(p, bytes) : 0;

    double ops = (double)iters * (double)(m->windowed ? p->window : 1);
    double us = (double)(t1 - t0) / 1e3 / ops, time_us = us;
    uint64_t total_wrong = 0;
    gather_report(p, us, wrong, &time_us, &total_wrong); /* (a barrier: rank 0 has read the stamps) */
    if (stamp) time_us = call_us;
#ifdef DUET_HAVE_CUDA
    if (p->floor && p->device) perf_floor_print(p, bytes, time_us);
#endif
    if (p->me != 0) return 0;

    memset(row, 0, sizeof *row);
    snprintf(row->op, sizeof row->op, "%s", m->name);
    snprintf(row->dtype, sizeof row->dtype, "%s", m->dtype ? m->dtype : duet_dtype_name(p->dtype));
    snprintf(row->redop, sizeof row->redop, "%s",
             m->redop ? m->redop : m->redop_from_flags ? duet_op_name(p->op) : "none");
    snprintf(row->algo, sizeof row->algo, "%s", p->row_algo);
    row->bytes = p->row_bytes;
    size_t es = m->coll ? duet_datatype_size(p->dtype) : m->elem_size;
    row->count = es ? row->bytes / es : 0;
    row->time_us = time_us;
    row->algbw = time_us > 0 ? (double)row->bytes / time_us / 1e3 : 0;
    row->busbw = row->algbw * p->busbw_factor;
    row->wrong = p->check && m->verify ? (long long)total_wrong : -1;
    return 1;
}

/* The analysis of rows: --fit and --plot. */
static int analyze(const perf_t *p, perf_row_t *rows, size_t nrows)
{
    int rc = 0;
    if (p->fit && perf_fit_report(stdout, rows, nrows) != 0) rc = 1;
    if (p->plot && perf_plot(p->plot, rows, nrows) != 0) rc = 1;
    return rc;
}

static int run_analysis(perf_t *p, const cli_t *cli)
{
    perf_row_t *rows = NULL;
    size_t nrows = 0;
    for (int i = 0; i < cli->nfiles; i++)
        if (perf_read_csv(cli->files[i], &rows, &nrows) != 0) return 1;
    int rc = analyze(p, rows, nrows);
    free(rows);
    return rc;
}

int main(int argc, char **argv)
{
    perf_t p = {0};
    cli_t cli = {0};
    parse_args(&p, &cli, argc, argv);
    if (cli.list_algos) {
        if (perf_coll_list_algos(stdout, cli.files[0]) != 0)
            perf_die("--list-algos: '%s' is not a collective mode (try -h)", cli.files[0]);
        return 0;
    }
    if (!p.mode) return run_analysis(&p, &cli);

    const perf_mode_t *m = p.mode;
    perf_coll_force_algo(&p); /* before anything reads the settings */
    PERF_CHECK(duet_init());
    p.comm = duet_comm_world();
    p.me = duet_my_pe(), p.nranks = duet_n_pes();
    if ((m->pair || strcmp(m->name, "sendrecv") == 0) && p.nranks < 2)
        perf_die("mode %s needs at least 2 ranks", m->name);
    if (p.root < 0 || p.root >= p.nranks) perf_die("-r %d: the root must be a rank, 0 .. %d", p.root, p.nranks - 1);
    setup_memory(&p, m);
    if (cli.validate || cli.calibrate) {
        int vrc = cli.calibrate ? perf_calibrate(&p, cli.modes, cli.nmodes, cli.rounds)
                                : perf_validate(&p, cli.modes, cli.nmodes, cli.rounds);
        if (m->coll) perf_coll_free(&p);
#ifdef DUET_HAVE_CUDA
        if (p.device) perf_device_coll_free(&p);
#endif
        PERF_CHECK(duet_free(p.comm, p.flag));
        PERF_CHECK(duet_finalize());
        return vrc;
    }

    FILE *csv = NULL;
    perf_row_t *rows = NULL;
    size_t nrows = 0, sizes = 0;
    size_t lo = m->sized ? p.minb : m->fixed_bytes, hi = m->sized ? p.maxb : m->fixed_bytes;
    for (size_t bytes = lo;; bytes = bytes ? bytes * p.factor : 1) {
        sizes++;
        if (bytes >= hi || bytes > hi / p.factor) break; /* the next size is past -e */
    }
    progress_t pr = {p.me == 0 && isatty(STDERR_FILENO), 0, (int)sizes * p.ndtypes * p.nops, duet_time_ns()};
    if (p.me == 0) {
        if (p.csv && !(csv = fopen(p.csv, "w"))) perf_die("cannot open %s for writing", p.csv);
        if (csv) fprintf(csv, PERF_CSV_HEADER "\n");
        if (!(rows = calloc((size_t)pr.rows, sizeof *rows))) perf_die("out of memory");
        print_header(&p);
    }

    uint64_t total_wrong = 0;
    for (int d = 0; d < p.ndtypes; d++) {
        for (int o = 0; o < p.nops; o++) {
            p.dtype = p.dtypes[d], p.op = p.ops[o];
            for (size_t bytes = lo;; bytes = bytes ? bytes * p.factor : 1) {
                if (p.me == 0) progress_show(&pr, &p, bytes);
                perf_row_t *row = p.me == 0 ? &rows[nrows] : NULL;
                perf_row_t scratch;
                const char *why = "";
                int got = perf_run_row(&p, bytes, row ? row : &scratch, &why);
                if (p.me == 0 && got) progress_clear(&pr);
                if (p.me == 0 && got < 0) {
                    printf("# %12s %12zu %12s %8s %6s %14s  skipped: %s\n", m->name, p.row_bytes, "",
                           duet_dtype_name(p.dtype), m->redop_from_flags ? duet_op_name(p.op) : "none",
                           p.algo ? p.algo : "", why);
                    fflush(stdout);
                } else if (got > 0) {
                    print_row(row, csv);
                    total_wrong += row->wrong > 0 ? (uint64_t)row->wrong : 0;
                    nrows++;
                }
                pr.row++;
                if (bytes >= hi || bytes > hi / p.factor) break;
            }
        }
    }
    progress_clear(&pr);
    if (csv && fclose(csv) != 0) perf_die("cannot write %s", p.csv);
    if (total_wrong)
        fprintf(stderr, "duet-perf: %llu wrong results\n", (unsigned long long)total_wrong);
    int rc = total_wrong ? 1 : 0;
    if (p.me == 0 && (p.fit || p.plot) && analyze(&p, rows, nrows) != 0) rc = 1;
    free(rows);
    if (m->coll) perf_coll_free(&p);
#ifdef DUET_HAVE_CUDA
    if (p.device) perf_device_free(&p);
    if (p.device) perf_device_coll_free(&p);
#endif
    PERF_CHECK(duet_free(p.comm, p.target));
    PERF_CHECK(duet_free(p.comm, p.origin));
    PERF_CHECK(duet_free(p.comm, p.flag));
    PERF_CHECK(duet_finalize());
    return rc;
}
