/*
 * duet-sim — the tuner's cost model as a tool: for a collective, a rank count (up to
 * millions) and a sweep of sizes, every algorithm's predicted time and the one the tuner
 * would pick, under the calibrated or a given alpha-beta model. No ranks are started.
 *
 *   duet-sim allreduce -n 1048576 -b 8 -e 1G -f 4
 *   duet-sim broadcast -n 8 --alpha 0.2 --beta 10 --csv
 *   duet-sim allreduce -n 16 --hosts 4 --net-alpha 20 --net-beta 0.5
 *
 * With --hosts H the ranks are spread in blocks over H hosts (the first n % H hosts one rank
 * more), or --host-sizes lists each host's ranks (uneven hosts); then the hierarchical
 * algorithms are candidates and a message between hosts costs the net pair (--net-alpha,
 * --net-beta, else DUET_TUNE_NET_*, the net tune file, the defaults), as in the tuner.
 *
 * The numbers are the tuner's own (src/coll/duet_coll_predict.h): the same method for the
 * call's size (simulated up to 16 ranks, extended in size past the simulator's bound, analytic
 * anchored at 16 ranks beyond), the
 * same candidates and the same choice. The model: --alpha / --beta, else what a
 * communicator on this host would load without measuring (DUET_TUNE_ALPHA_US and
 * DUET_TUNE_BETA_GBPS, the tune file, the defaults); the header says which. The channel
 * chunk and slots come from DUET_COLL_CHUNK and DUET_COLL_SLOTS, as in the library.
 *
 * Sizes follow duet-perf: a size S is the bytes of a rank's largest buffer; count =
 * S / sizeof(type), divided by n for allgather, reducescatter and alltoall (rounded down).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "coll/duet_coll_chan.h"
#include "coll/duet_coll_predict.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: duet-sim COLLECTIVE -n RANKS [flags]\n"
            "  the tuner's predicted time of every algorithm, and its pick, per size\n"
            "collectives: allreduce broadcast reduce allgather reducescatter alltoall\n"
            "flags:\n"
            "  -n, --ranks N         rank count, 1 .. %d (required)\n"
            "  -b, --minbytes N      smallest size (K/M/G suffixes)                 [8]\n"
            "  -e, --maxbytes N      largest size                                   [64M]\n"
            "  -f, --stepfactor F    multiplier between sizes, at least 2           [2]\n"
            "  -d, --datatype T      int8 uint8 int32 uint32 int64 uint64 half bfloat16 float\n"
            "                        double                                         [float]\n"
            "  -a, --algo NAME       only this algorithm (what DUET_ALGO would force)\n"
            "  -r, --root R          root of broadcast and reduce                   [0]\n"
            "      --in-place        the call is in place\n"
            "      --heap            the buffers lie in the symmetric heap (messages from 4 KiB go\n"
            "                        by reference, one copy: as duet-perf's buffers)\n"
            "      --alpha US        the model's alpha, microseconds per message\n"
            "      --beta GBPS       the model's bandwidth, GB/s (1 GB = 1e9 bytes)\n"
            "      --hosts H         the ranks in blocks over H hosts (hierarchical algorithms,\n"
            "                        net prices between hosts)                      [1]\n"
            "      --host-sizes L,.. each host's rank count, in rank order (uneven hosts)\n"
            "      --net-alpha US    alpha between hosts (the net transport)\n"
            "      --net-beta GBPS   bandwidth between hosts, GB/s\n"
            "      --csv             CSV rows instead of the table\n"
            "  -h, --help\n"
            "without --alpha / --beta: DUET_TUNE_ALPHA_US, DUET_TUNE_BETA_GBPS, else the host's\n"
            "tune file (written by `duetrun -n 2 duet-perf --calibrate`), else the defaults.\n"
            "sizes as duet-perf: S is the bytes of a rank's largest buffer; count = S / sizeof(T),\n"
            "divided by the rank count for allgather, reducescatter and alltoall.\n"
            "method: simulated (<= 16 ranks, small calls), simulated and extended in size (<= 16\n"
            "ranks, larger calls), analytic (closed forms anchored at 16 ranks, more ranks);\n"
            "src/coll/duet_coll_predict.h explains them.\n",
            INT_MAX);
}

/* A command-line error: one line on stderr, exit 2. */
static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "duet-sim: %s\n(duet-sim --help for usage)\n", msg);
    exit(2);
}

typedef struct {
    duet_coll_kind_t kind;
    long long ranks;
    size_t minb, maxb, factor;
    duet_datatype_t dt;
    const char *algo;
    int root, in_place, heap, csv;
    double alpha, beta; /* 0: not given */
    double net_alpha, net_beta;
    long long hosts;    /* 0: one host */
    const char *host_sizes;
} sim_args_t;

#define MAX_HOST_MAP (1 << 26) /* ranks of a host map (an int each) */

static size_t size_arg(const char *text, const char *flag)
{
    size_t v;
    if (duet_parse_size(text, &v) != 0) die("%s needs a size in bytes (K/M/G suffixes), not '%s'", flag, text);
    return v;
}

static double positive_arg(const char *text, const char *flag)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || *end || errno || !(v > 0) || v > 1e12) die("%s needs a positive number, not '%s'", flag, text);
    return v;
}

static int kind_of(const char *name, duet_coll_kind_t *kind)
{
    for (int k = 0; k < DUET_COLL_SEND; k++)
        if (strcmp(name, duet_coll_kind_name((duet_coll_kind_t)k)) == 0) {
            *kind = (duet_coll_kind_t)k;
            return 0;
        }
    return -1;
}

static void parse(sim_args_t *s, int argc, char **argv)
{
    enum { OPT_ALPHA = 256, OPT_BETA, OPT_CSV, OPT_IN_PLACE, OPT_HEAP, OPT_HOSTS, OPT_HOST_SIZES, OPT_NET_ALPHA, OPT_NET_BETA };
    static const struct option longopts[] = {
        {"ranks", required_argument, NULL, 'n'},     {"minbytes", required_argument, NULL, 'b'},
        {"maxbytes", required_argument, NULL, 'e'},  {"stepfactor", required_argument, NULL, 'f'},
        {"datatype", required_argument, NULL, 'd'},  {"algo", required_argument, NULL, 'a'},
        {"root", required_argument, NULL, 'r'},      {"in-place", no_argument, NULL, OPT_IN_PLACE},
        {"heap", no_argument, NULL, OPT_HEAP},
        {"alpha", required_argument, NULL, OPT_ALPHA}, {"beta", required_argument, NULL, OPT_BETA},
        {"csv", no_argument, NULL, OPT_CSV},         {"help", no_argument, NULL, 'h'},
        {"hosts", required_argument, NULL, OPT_HOSTS}, {"host-sizes", required_argument, NULL, OPT_HOST_SIZES},
        {"net-alpha", required_argument, NULL, OPT_NET_ALPHA}, {"net-beta", required_argument, NULL, OPT_NET_BETA},
        {NULL, 0, NULL, 0}};
    *s = (sim_args_t){.minb = 8, .maxb = (size_t)64 << 20, .factor = 2, .dt = DUET_FLOAT32, .ranks = -1};
    const char *coll = NULL;
    int c;
    opterr = 0; /* our own messages, below */
    while ((c = getopt_long(argc, argv, "-:n:b:e:f:d:a:r:h", longopts, NULL)) != -1) {
        char *end;
        switch (c) {
        case 1: /* a positional argument: the collective */
            if (coll) die("one collective at a time ('%s' is extra)", optarg);
            coll = optarg;
            break;
        case 'n':
            errno = 0;
            s->ranks = strtoll(optarg, &end, 10);
            if (end == optarg || *end || errno || s->ranks < 1 || s->ranks > INT_MAX)
                die("-n needs a rank count from 1 to %d, not '%s'", INT_MAX, optarg);
            break;
        case 'b': s->minb = size_arg(optarg, "-b"); break;
        case 'e': s->maxb = size_arg(optarg, "-e"); break;
        case 'f': s->factor = size_arg(optarg, "-f"); break;
        case 'd':
            if (duet_dtype_parse(optarg, &s->dt) != 0) die("unknown datatype '%s'", optarg);
            break;
        case 'a': s->algo = optarg; break;
        case 'r':
            errno = 0;
            s->root = (int)strtol(optarg, &end, 10);
            if (end == optarg || *end || errno || s->root < 0) die("-r needs a rank, not '%s'", optarg);
            break;
        case OPT_IN_PLACE: s->in_place = 1; break;
        case OPT_HEAP: s->heap = 1; break;
        case OPT_ALPHA: s->alpha = positive_arg(optarg, "--alpha"); break;
        case OPT_BETA: s->beta = positive_arg(optarg, "--beta"); break;
        case OPT_CSV: s->csv = 1; break;
        case OPT_HOSTS:
            errno = 0;
            s->hosts = strtoll(optarg, &end, 10);
            if (end == optarg || *end || errno || s->hosts < 1) die("--hosts needs a host count, not '%s'", optarg);
            break;
        case OPT_HOST_SIZES: s->host_sizes = optarg; break;
        case OPT_NET_ALPHA: s->net_alpha = positive_arg(optarg, "--net-alpha"); break;
        case OPT_NET_BETA: s->net_beta = positive_arg(optarg, "--net-beta"); break;
        case 'h': usage(stdout); exit(0);
        case ':': die("%s needs a value", argv[optind - 1]);
        default: die("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (!coll) die("which collective? allreduce broadcast reduce allgather reducescatter alltoall");
    if (kind_of(coll, &s->kind) != 0)
        die("unknown collective '%s' (allreduce broadcast reduce allgather reducescatter alltoall)", coll);
    if (s->ranks < 1) die("-n RANKS is required");
    if (s->maxb < s->minb) die("-e is smaller than -b");
    if (s->factor < 2) die("-f must be at least 2");
    if (s->root >= s->ranks) die("-r %d is not below the rank count %lld", s->root, s->ranks);
    if (s->hosts && s->host_sizes) die("--hosts or --host-sizes, not both");
    if (s->hosts > s->ranks) die("--hosts %lld: more hosts than the %lld ranks", s->hosts, s->ranks);
    if ((s->hosts > 1 || s->host_sizes) && s->ranks > MAX_HOST_MAP)
        die("a host map of %lld ranks: at most %d", s->ranks, MAX_HOST_MAP);
    if (s->algo) {
        int found = 0;
        for (int i = 0; i < duet_coll_nalgos; i++)
            found |= duet_coll_algos[i].kind == s->kind && strcmp(duet_coll_algos[i].name, s->algo) == 0;
        if (!found) die("%s has no algorithm '%s' (duet-perf --list-algos %s)", coll, s->algo, coll);
    }
}

/* The call the tuner would see for `bytes` (as duet-perf makes it), and the bytes a rank
 * actually moves (the largest of its buffers). */
static duet_coll_args_t call_of(const sim_args_t *s, size_t bytes, size_t *moved)
{
    size_t es = duet_datatype_size(s->dt), count = bytes / es, n = (size_t)s->ranks;
    int per_block = s->kind == DUET_COLL_ALLGATHER || s->kind == DUET_COLL_REDUCE_SCATTER || s->kind == DUET_COLL_ALLTOALL;
    if (per_block) count /= n;
    *moved = per_block ? count * n * es : count * es;
    int reduces = s->kind == DUET_COLL_ALLREDUCE || s->kind == DUET_COLL_REDUCE || s->kind == DUET_COLL_REDUCE_SCATTER;
    size_t elem = reduces && (s->dt == DUET_FLOAT16 || s->dt == DUET_BFLOAT16) ? sizeof(float) : es; /* widened */
    int rooted = s->kind == DUET_COLL_BROADCAST || s->kind == DUET_COLL_REDUCE;
    duet_coll_args_t a = {s->kind, 0, (int)s->ranks, rooted ? s->root : 0, count, elem, duet_coll_predict_chunk(),
                          count ? s->in_place : 0, 0, NULL, 0, s->heap};
    return a;
}

/* The host of each rank (NULL for one host); *nhosts. Blocks of --hosts, or --host-sizes. */
static int *host_map(const sim_args_t *s, int *nhosts)
{
    *nhosts = 1;
    if (s->hosts <= 1 && !s->host_sizes) return NULL;
    int n = (int)s->ranks, *host = malloc(sizeof(int) * (size_t)n);
    if (!host) die("out of memory for a host map of %d ranks", n);
    if (!s->host_sizes) {
        for (int g = 0; g < s->hosts; g++)
            for (size_t r = duet_part_start((size_t)n, (size_t)s->hosts, (size_t)g);
                 r < duet_part_start((size_t)n, (size_t)s->hosts, (size_t)g + 1); r++)
                host[r] = g;
        *nhosts = (int)s->hosts;
        return host;
    }
    int r = 0, g = 0;
    for (const char *p = s->host_sizes; *p; g++) {
        char *end;
        errno = 0;
        long size = strtol(p, &end, 10);
        if (end == p || errno || size < 1 || (*end && *end != ',') || size > n - r)
            die("--host-sizes needs rank counts >= 1 separated by commas, adding up to %d: '%s'", n, s->host_sizes);
        for (long i = 0; i < size; i++) host[r++] = g;
        p = *end ? end + 1 : end;
    }
    if (r != n) die("--host-sizes %s adds up to %d ranks, not %d", s->host_sizes, r, n);
    *nhosts = g;
    return host;
}

int main(int argc, char **argv)
{
    sim_args_t s;
    parse(&s, argc, argv);
    int nhosts;
    int *host = host_map(&s, &nhosts);
    duet_coll_model_t model;
    char source[700];
    duet_coll_model_local(&model, source, sizeof source);
    if (s.alpha > 0 || s.beta > 0) { /* the command line wins over the rest */
        char rest[600];
        snprintf(rest, sizeof rest, "%.599s", source);
        if (s.alpha > 0) model.alpha_us = s.alpha;
        if (s.beta > 0) model.beta_gbps = s.beta;
        if (s.alpha > 0 && s.beta > 0) snprintf(source, sizeof source, "--alpha and --beta");
        else snprintf(source, sizeof source, "%s; %s from %s", s.alpha > 0 ? "--alpha" : "--beta",
                      s.alpha > 0 ? "beta" : "alpha", rest);
    }
    char net_source[700] = "--net-alpha and --net-beta";
    if (!(s.net_alpha > 0 && s.net_beta > 0)) duet_coll_model_net_source(net_source, sizeof net_source);
    if (s.net_alpha > 0) model.net_alpha_us = s.net_alpha;
    if (s.net_beta > 0) model.net_beta_gbps = s.net_beta;
    char hosts_line[900] = "";
    if (nhosts > 1)
        snprintf(hosts_line, sizeof hosts_line, "hosts: %d (ranks in blocks%s); between hosts alpha %.4g us per "
                 "message, beta %.4g GB/s (from %.600s)", nhosts, s.host_sizes ? " of --host-sizes" : "",
                 model.net_alpha_us, model.net_beta_gbps, net_source);
    /* the candidates, for the header */
    const duet_coll_algo_t *cand[DUET_PREDICT_MAX];
    int ncand = 0;
    for (int i = 0; i < duet_coll_nalgos && ncand < DUET_PREDICT_MAX; i++)
        if (duet_coll_algos[i].kind == s.kind && (!s.algo || strcmp(s.algo, duet_coll_algos[i].name) == 0))
            cand[ncand++] = &duet_coll_algos[i];
    const char *kname = duet_coll_kind_name(s.kind), *tname = duet_dtype_name(s.dt);
    char why[DUET_PREDICT_MAX][200] = {{0}}; /* each candidate's first refusal */
    if (s.csv) { /* the model's values are columns; where they came from goes to stderr */
        fprintf(stderr, "duet-sim: model: alpha %.4g us per message, beta %.4g GB/s (from %s)\n", model.alpha_us,
                model.beta_gbps, source);
        if (hosts_line[0]) fprintf(stderr, "duet-sim: %s\n", hosts_line);
        printf("collective,ranks,bytes,count,dtype,method,alpha_us,beta_gbps");
        for (int i = 0; i < ncand; i++) printf(",%s_us", cand[i]->name);
        printf(",pick\n");
    } else {
        printf("# duet-sim: %s, %lld ranks, %s%s, chunk %zu bytes, %d slots\n", kname, s.ranks, tname,
               s.in_place ? ", in place" : "", duet_coll_predict_chunk(), duet_coll_predict_slots());
        if (s.heap) printf("# buffers in the symmetric heap: messages from %d bytes by reference\n", DUET_CHAN_BYREF_MIN);
        if (model.fit_err > 0)
            printf("# fitted terms: call %.3g us, step %.3g us, copy %.3g GB/s, memory %.3g GB/s past %.3g MiB, "
                   "reduce %.3g GB/s (fit's median error %.0f%%)\n", duet_coll_call_us(&model, s.kind), model.step_us, model.copy_gbps,
                   model.mem_gbps, model.knee_bytes / 1048576.0, model.reduce_gbps, 100 * model.fit_err);
        printf("# model: alpha %.4g us per message, beta %.4g GB/s (from %s)\n", model.alpha_us, model.beta_gbps,
               source);
        if (hosts_line[0]) printf("# %s\n", hosts_line);
        printf("# predicted time per call, microseconds\n");
        printf("%12s %12s %-15s", "bytes", "count", "method");
        for (int i = 0; i < ncand; i++) printf(" %12s", cand[i]->name);
        printf("  %s\n", "pick");
    }
    for (size_t bytes = s.minb;; bytes = bytes ? bytes * s.factor : 1) {
        size_t moved;
        duet_coll_args_t a = call_of(&s, bytes, &moved);
        a.host = host;
        a.nhosts = host ? nhosts : 0;
        duet_predict_t p;
        if (duet_coll_predict_all(&a, &model, s.algo, &p) != DUET_OK) {
            fprintf(stderr, "duet-sim: %s\n", duet_last_error());
            return 1;
        }
        if (s.csv) printf("%s,%lld,%zu,%zu,%s,%s,%g,%g", kname, s.ranks, moved, a.count, tname,
                          duet_predict_how_name(p.how), model.alpha_us, model.beta_gbps);
        else printf("%12zu %12zu %-15s", moved, a.count, duet_predict_how_name(p.how));
        for (int i = 0; i < p.n; i++) {
            if (p.e[i].status != DUET_OK) {
                if (!why[i][0]) snprintf(why[i], sizeof why[i], "%s", p.e[i].why);
                if (s.csv) printf(",");
                else printf(" %12s", "-");
            } else if (s.csv) {
                printf(",%.4f", p.e[i].us);
            } else {
                printf(p.e[i].us < 1e8 ? " %12.2f" : " %12.5g", p.e[i].us); /* keep the columns */
            }
        }
        const char *pick = p.best >= 0 ? p.e[p.best].algo->name : "none";
        printf("%s%s\n", s.csv ? "," : "  ", pick);
        if (bytes >= s.maxb || bytes > s.maxb / s.factor) break; /* the next size is past -e */
    }
    if (!s.csv)
        for (int i = 0; i < ncand; i++)
            if (why[i][0]) printf("# %s: -, cannot run: %s\n", cand[i]->name, why[i]);
    free(host);
    return 0;
}
