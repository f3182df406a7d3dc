/*
 * duet-perf --validate: does the tuner's model predict this machine? And duet-perf
 * --calibrate (at the end): the same sweep of forced algorithms, to fit the model's terms to.
 *
 *   duetrun -n N duet-perf --validate [COLLECTIVE...] [-b 8] [-e 64M] [-f 4] [--rounds 5]
 *                                     [-d float] [-o sum] [--buffers heap|host] [--csv FILE]
 *
 * For each collective (all six without arguments), each size of -b .. -e by -f (duet-perf's
 * size: a rank's largest buffer) and each algorithm of the collective, the algorithm is
 * forced in turn (duet_coll_tune_force, in this one process), timed as a duet-perf row is
 * (every rank's loop, --average of the ranks) and checked (-c), then the same call without
 * forcing: what the tuner runs ("auto", latency lane and fast paths included; its warm-up
 * long enough for the learning tuner to decide, duet_coll_tune_learn_calls, as forcing
 * forgets what it learned). Rounds are
 * outermost, so a slow minute of the machine touches every algorithm alike; each time is
 * the median over --rounds. Iterations per row: 16 MiB / size, between 5 and 200 (a tenth
 * more as warm-up, at least 2); -n sets them.
 *
 * Predicted: what the tuner costs for the same call (duet_coll_tune_costs: its method, the
 * communicator's model). Printed per cell (collective, size): every algorithm's predicted
 * and measured time, error = (predicted - measured) / measured and the spread of its rounds
 * ((max - min) / median); the tuner's pick (the model's cheapest) against the fastest forced
 * algorithm, measured; and auto's time against the fastest. At the end, per collective: the
 * median and largest |error|, how many cells pick within 10 % of the fastest, and the worst
 * pick. An algorithm that cannot run a call is left out of its cell; a cell where the call
 * has no element (allgather of 8 B on 4 ranks) is left out.
 *
 * With --device, the GPU collectives (duet-perf --device MODE: buffers from the GPU heap, or
 * cudaMalloc with --buffers host), each row timed as a stream runs -n calls back to back.
 * Forcing an algorithm runs it in the GPU executor (allreduce's oneshot and twoshot up to
 * 1 MiB: their kernels; twoshot above on GPU-heap buffers: the direct kernel; the model does
 * not cost kernels: printed without a prediction, "a kernel, not costed", and left out of the
 * errors; they still count as the fastest); "auto" is what the library runs unforced, which is a kernel chosen by rule where
 * the buffers allow it (the direct kernels on heap buffers, the one-shot kernel of an
 * allreduce up to 1 MiB, 4 MiB / n beyond 4 ranks), else the model's pick. Predictions are the GPU model's
 * (duet_cuda_coll_costs). A rule's kernel has no prediction: its cell's pick is auto, and the
 * fastest is taken over the forced algorithms and auto alike; where the model picks, as on
 * the host. A forced algorithm the GPU path cannot run (the model says why) is left out.
 *
 * --calibrate --device fits the GPU model's terms alike, to the GPU executor's algorithms
 * forced on GPU buffers (not the kernels that run by rule, nor allreduce's oneshot and twoshot
 * where they run kernels of their own, kernel_algo), alpha fitted too, and saves them in the GPU
 * tune file. The GPU model is a stream model (duet_coll_predict.h), as these rows are timed.
 *
 * CSV (--csv, rank 0): op,bytes,algo,predicted_us,measured_us,spread,error,picked,fastest
 * with one row per algorithm of a cell (algo "auto" for the tuner's run: predicted and error
 * 0); picked and fastest are 0 or 1.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"
#include "coll/duet_coll_fit.h"
#include "coll/duet_coll_sim.h"
#ifdef DUET_HAVE_CUDA
#include "cuda/duet_cuda_coll.h"
#endif

#define MAX_ROUNDS 101
#define MAX_CAND (DUET_PREDICT_MAX + 1) /* the forced algorithms and auto */

typedef struct {
    const char *name; /* NULL: auto */
    int ran;          /* it ran every round */
    double t[MAX_ROUNDS];
    double median, spread, predicted; /* predicted < 0: none */
} cand_t;

typedef struct {
    int cells, picks_close, errors;
    double worst_pick;
    char worst_at[64];
    double err[2048];
} summary_t;

/* Whether forcing algorithm `name` on a GPU row of `bytes` runs a kernel of its own rather
 * than a schedule in the executor (allreduce's oneshot and twoshot up to the kernels' size;
 * twoshot on GPU-heap buffers, the direct kernel, above it): the GPU model does not cost
 * those, so validation prints no prediction for them and calibration leaves them out. */
static int kernel_algo(const perf_t *p, const char *name, size_t bytes)
{
#ifdef DUET_HAVE_CUDA
    return p->device && p->mode &&
           duet_cuda_coll_forced_kernel((duet_coll_kind_t)perf_device_coll_kind(p->mode), name, bytes, !p->host_buffers);
#else
    (void)p, (void)name, (void)bytes;
    return 0;
#endif
}

static void size_iters(perf_t *p, size_t bytes, long fixed)
{
    long it = fixed > 0 ? fixed : (long)((16u << 20) / (bytes ? bytes : 1));
    if (fixed <= 0) it = it < 5 ? 5 : it > 200 ? 200 : it;
    p->iters = it;
    p->warmup = it / 10 < 2 ? 2 : it / 10;
}

static int mode_kind(const perf_t *p)
{
#ifdef DUET_HAVE_CUDA
    if (p->device) return perf_device_coll_kind(p->mode);
#endif
    return perf_coll_kind(p->mode);
}

/* The current row's costs under the model of the executor that runs it: every candidate's
 * prediction, and what the library runs unforced (*path; *rule 1: a kernel chosen by rule,
 * with no prediction, else the model's pick). */
static void cell_costs(perf_t *p, duet_coll_model_t *m, duet_predict_t *pred, char *path, size_t len, int *rule)
{
    *rule = 0;
#ifdef DUET_HAVE_CUDA
    if (p->device) {
        duet_coll_exec_call_t k = perf_device_coll_call(p);
        PERF_CHECK(duet_cuda_coll_costs(p->comm, &k, path, len, rule, m, pred, NULL));
        return;
    }
#endif
    duet_coll_args_t a = perf_coll_args(p, p->me);
    PERF_CHECK(duet_coll_tune_costs(p->comm, &a, m, pred));
    snprintf(path, len, "%s", pred->best >= 0 ? pred->e[pred->best].algo->name : "?");
}

/* GPU rows: the forced candidates the GPU path cannot run, by the model's word (the same on
 * every rank: it depends on the call's shape alone), are left out of the cell. */
static void device_filter(perf_t *p, size_t bytes, cand_t *cand, int ncand)
{
#ifdef DUET_HAVE_CUDA
    const char *why = "";
    if (!p->device || (p->mode->setup && p->mode->setup(p, bytes, &why))) return;
    if (p->count == 0) return;
    duet_coll_model_t m;
    duet_predict_t pred;
    char path[64];
    int rule;
    cell_costs(p, &m, &pred, path, sizeof path, &rule);
    for (int k = 0; k < ncand; k++) {
        if (!cand[k].name) continue;
        int ok = 0;
        for (int i = 0; i < pred.n; i++)
            if (strcmp(pred.e[i].algo->name, cand[k].name) == 0) ok = pred.e[i].status == DUET_OK;
        if (!ok) cand[k].ran = 0;
    }
#else
    (void)p, (void)bytes, (void)cand, (void)ncand;
#endif
}

/* One cell: every candidate, rounds outermost. Returns 0, -1 when the call has no element. */
static int measure_cell(perf_t *p, size_t bytes, cand_t *cand, int ncand, int rounds, uint64_t *wrong)
{
    duet_coll_kind_t kind = (duet_coll_kind_t)mode_kind(p);
    for (int k = 0; k < ncand; k++) cand[k].ran = 1;
    device_filter(p, bytes, cand, ncand);
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < ncand; k++) {
            if (!cand[k].ran) continue;
            PERF_CHECK(duet_coll_tune_force(p->comm, kind, cand[k].name)); /* forgets what was learned */
            p->algo = cand[k].name;
            long warmup = p->warmup;
            if (!cand[k].name && p->warmup < duet_coll_tune_learn_calls() + 2) /* auto: after learning */
                p->warmup = duet_coll_tune_learn_calls() + 2;
            perf_row_t row;
            const char *why = "";
            int got = perf_run_row(p, bytes, &row, &why);
            p->warmup = warmup;
            if (p->count == 0) { /* no element: the same on every rank */
                PERF_CHECK(duet_coll_tune_force(p->comm, kind, NULL));
                p->algo = NULL;
                return -1;
            }
            if (got < 0) {
                cand[k].ran = 0; /* this algorithm cannot run the call: on every rank alike */
                continue;
            }
            if (got > 0) {
                cand[k].t[r] = row.time_us;
                if (row.wrong > 0) *wrong += (uint64_t)row.wrong;
            }
        }
    PERF_CHECK(duet_coll_tune_force(p->comm, kind, NULL));
    p->algo = NULL;
    return 0;
}

static void report_cell(perf_t *p, size_t bytes, cand_t *cand, int ncand, int rounds, FILE *csv, summary_t *sum)
{
    duet_coll_model_t model;
    duet_predict_t pred;
    char path[64];
    int rule;
    cell_costs(p, &model, &pred, path, sizeof path, &rule);
    const char *pick = rule ? path : pred.best >= 0 ? pred.e[pred.best].algo->name : "?";
    int fastest = -1, picked = -1, autok = -1;
    for (int k = 0; k < ncand; k++) {
        cand_t *c = &cand[k];
        c->predicted = -1;
        if (!c->ran) continue;
        c->median = duet_median(c->t, rounds, &c->spread); /* the rounds' order is not needed after */
        if (!c->name) {
            autok = k;
            if (rule) picked = k; /* the rule's kernel runs only unforced */
            if (rule && (fastest < 0 || c->median < cand[fastest].median)) fastest = k;
            continue;
        }
        for (int i = 0; i < pred.n && !kernel_algo(p, c->name, bytes); i++)
            if (pred.e[i].status == DUET_OK && strcmp(pred.e[i].algo->name, c->name) == 0) c->predicted = pred.e[i].us;
        if (fastest < 0 || c->median < cand[fastest].median) fastest = k;
        if (!rule && strcmp(c->name, pick) == 0) picked = k;
    }
    if (fastest < 0) return;
    for (int k = 0; k < ncand; k++) {
        const cand_t *c = &cand[k];
        if (!c->ran) continue;
        double err = c->predicted > 0 ? (c->predicted - c->median) / c->median : NAN;
        char mark[128] = "", predicted[32] = "-";
        if (c->predicted > 0) snprintf(predicted, sizeof predicted, "%.2f", c->predicted);
        if (c->name && kernel_algo(p, c->name, bytes)) snprintf(mark, sizeof mark, "(a kernel, not costed) ");
        size_t used = strlen(mark);
        if (!c->name && rule) snprintf(mark, sizeof mark, "%s: picked by rule%s", path, k == fastest ? ", fastest" : "");
        else if (k == picked && k == fastest) snprintf(mark + used, sizeof mark - used, "picked, fastest");
        else if (k == picked) snprintf(mark + used, sizeof mark - used, "picked");
        else if (k == fastest) snprintf(mark + used, sizeof mark - used, "fastest");
        if (c->name)
            printf("%14s %10zu %10s %12s %12.2f %7.0f %7.0f  %s\n", p->mode->name, bytes, c->name, predicted, c->median,
                   100 * c->spread, 100 * err, mark);
        else
            printf("%14s %10zu %10s %12s %12.2f %7.0f %7s  %s%stuner's run: %.2fx the fastest\n", p->mode->name, bytes,
                   "auto", "-", c->median, 100 * c->spread, "", mark, mark[0] ? "; " : "",
                   c->median / cand[fastest].median);
        if (csv)
            fprintf(csv, "%s,%zu,%s,%.4f,%.4f,%.4f,%.4f,%d,%d\n", p->mode->name, bytes, c->name ? c->name : "auto",
                    c->name ? c->predicted : 0.0, c->median, c->spread, c->name ? err : 0.0, k == picked, k == fastest);
        if (c->name && c->predicted > 0 && sum->errors < (int)DUET_ARRAY_LEN(sum->err))
            sum->err[sum->errors++] = fabs(err);
    }
    double ratio = picked >= 0 ? cand[picked].median / cand[fastest].median : NAN;
    printf("# %s %zu: the %s picks %s (%s), fastest %s; pick / fastest %.2f%s\n", p->mode->name, bytes,
           rule ? "rule" : "model", pick, rule ? "a kernel, not costed" : duet_predict_how_name(pred.how),
           cand[fastest].name ? cand[fastest].name : "auto", ratio, autok >= 0 ? "" : " (auto did not run)");
    sum->cells++;
    if (ratio <= 1.10) sum->picks_close++;
    if (!(ratio <= sum->worst_pick)) {
        sum->worst_pick = ratio;
        snprintf(sum->worst_at, sizeof sum->worst_at, "%zu B", bytes);
    }
    fflush(stdout);
}

int perf_validate(perf_t *p, const perf_mode_t *const *modes, int nmodes, int rounds)
{
    if (rounds < 1 || rounds > MAX_ROUNDS) perf_die("--rounds takes 1 .. %d", MAX_ROUNDS);
    long fixed = p->iters;
    p->dtype = p->dtypes[0], p->op = p->ops[0];
    FILE *csv = NULL;
    if (p->me == 0 && p->csv) {
        if (!(csv = fopen(p->csv, "w"))) perf_die("cannot open %s for writing", p->csv);
        fprintf(csv, "op,bytes,algo,predicted_us,measured_us,spread,error,picked,fastest\n");
    }
    summary_t *sums = calloc((size_t)nmodes, sizeof *sums);
    cand_t *cand = calloc(MAX_CAND, sizeof *cand);
    if (!sums || !cand) perf_die("out of memory");
    uint64_t wrong = 0;
    int header = 0;
    for (int mi = 0; mi < nmodes; mi++) {
        p->mode = modes[mi];
        int kind = mode_kind(p), ncand = 0;
        for (int i = 0; i < duet_coll_nalgos && ncand < MAX_CAND - 1; i++)
            if ((int)duet_coll_algos[i].kind == kind) cand[ncand++] = (cand_t){.name = duet_coll_algos[i].name};
        cand[ncand++] = (cand_t){.name = NULL};
        for (size_t bytes = p->minb;; bytes = bytes ? bytes * p->factor : 1) {
            size_iters(p, bytes, fixed);
            if (measure_cell(p, bytes, cand, ncand, rounds, &wrong) == 0 && p->me == 0) {
                if (!header++) {
                    duet_coll_model_t m;
                    duet_predict_t pred;
                    char path[64];
                    int rule;
                    cell_costs(p, &m, &pred, path, sizeof path, &rule);
                    printf("# duet-perf --validate%s: %d ranks, %s %s, buffers %s, median of %d rounds; model: "
                           "alpha %.4g us, beta %.4g GB/s\n", p->device ? " --device" : "", p->nranks,
                           duet_dtype_name(p->dtype), duet_op_name(p->op),
                           p->device ? (p->bufs_in_heap ? "GPU heap" : "cudaMalloc") : p->bufs_in_heap ? "heap" : "host",
                           rounds, m.alpha_us, m.beta_gbps);
                    printf("# %12s %10s %10s %12s %12s %7s %7s\n", "op", "bytes", "algo", "predicted_us",
                           "measured_us", "spread%", "error%");
                }
                report_cell(p, bytes, cand, ncand, rounds, csv, &sums[mi]);
            }
            if (bytes >= p->maxb || bytes > p->maxb / p->factor) break;
        }
    }
    if (p->me == 0) {
        printf("# summary: %12s %6s %14s %14s %18s %12s\n", "collective", "cells", "median |err| %", "worst |err| %",
               "picks within 10%", "worst pick");
        for (int mi = 0; mi < nmodes; mi++) {
            summary_t *s = &sums[mi];
            if (!s->cells) continue;
            int e = s->errors;
            double med = e ? duet_median(s->err, e, NULL) : NAN; /* sorts: err[e - 1] is the worst */
            printf("# summary: %12s %6d %14.0f %14.0f %12d of %-3d %7.2fx at %s\n", modes[mi]->name, s->cells, 100 * med,
                   s->errors ? 100 * s->err[s->errors - 1] : NAN, s->picks_close, s->cells, s->worst_pick, s->worst_at);
        }
    }
    if (csv && fclose(csv) != 0) perf_die("cannot write %s", p->csv);
    free(cand);
    free(sums);
    if (wrong) fprintf(stderr, "duet-perf: %llu wrong results\n", (unsigned long long)wrong);
    return wrong ? 1 : 0;
}

/* ---------------------------------------------------------------- --calibrate */
typedef struct {
    duet_fit_sample_t *s;
    double *round_us; /* rounds per sample, in sample order */
    int n, cap, rounds;
} samples_t;

/* The shape the tuner costs for the current row (rank 0's; GPU rows: as the GPU executor
 * costs it). */
static duet_coll_args_t cell_shape(perf_t *p)
{
#ifdef DUET_HAVE_CUDA
    if (p->device) {
        duet_coll_exec_call_t k = perf_device_coll_call(p);
        duet_coll_model_t m;
        duet_predict_t pred;
        duet_coll_args_t a;
        char path[64];
        int rule;
        PERF_CHECK(duet_cuda_coll_costs(p->comm, &k, path, sizeof path, &rule, &m, &pred, &a));
        a.rank = 0;
        return a;
    }
#endif
    return perf_coll_args(p, 0);
}


/* Every forced candidate that ran in the cell just measured becomes a sample of the fit. */
static void add_samples(perf_t *p, const cand_t *cand, int ncand, samples_t *ss)
{
    duet_coll_args_t a = cell_shape(p);
    for (int k = 0; k < ncand; k++) {
        if (!cand[k].ran || !cand[k].name || kernel_algo(p, cand[k].name, a.count * a.elem)) continue;
        if (ss->n == ss->cap) {
            ss->cap = ss->cap ? 2 * ss->cap : 256;
            ss->s = realloc(ss->s, sizeof *ss->s * (size_t)ss->cap);
            ss->round_us = realloc(ss->round_us, sizeof *ss->round_us * (size_t)ss->cap * (size_t)ss->rounds);
            if (!ss->s || !ss->round_us) perf_die("out of memory");
        }
        double *r = ss->round_us + (size_t)ss->n * (size_t)ss->rounds, sorted[MAX_ROUNDS];
        memcpy(r, cand[k].t, sizeof *r * (size_t)ss->rounds);
        memcpy(sorted, cand[k].t, sizeof *r * (size_t)ss->rounds);
        ss->s[ss->n++] = (duet_fit_sample_t){duet_sim_find_algo(a.kind, cand[k].name), a,
                                             duet_median(sorted, ss->rounds, NULL), NULL};
    }
}

static void print_fit(const perf_t *p, const samples_t *ss, const duet_coll_model_t *pair, const duet_coll_model_t *m,
                      const duet_fit_report_t *rep)
{
    if (p->device)
        printf("calibrate --device: %d ranks: the GPU model's start: alpha %.3f us, beta %.2f GB/s (the GPU "
               "executor's send / receive ping-pong and stream; alpha fitted below)\n", p->nranks, pair->alpha_us,
               pair->beta_gbps);
    else
        printf("calibrate: %d ranks: alpha %.3f us (%s; spread %.0f %% over 7 repeats), beta %.2f GB/s (stream; "
               "spread %.0f %%)\n", p->nranks, pair->alpha_us, p->nranks > 2 ?
               "a token around the ring of the host's ranks, per hop" : "ping-pong, half a round trip",
               100 * pair->alpha_spread, pair->beta_gbps, 100 * pair->beta_spread);
    printf("calibrate: the model fitted to %d forced calls (%zu B .. %zu B by %zu, buffers %s, medians of %d rounds):\n",
           rep->samples, p->minb, p->maxb, p->factor, p->bufs_in_heap ? "heap" : "host", ss->rounds);
    static const char *const what[DUET_FIT_TERMS] = {
        "per message", "per step a rank runs", "a staged message's copies in the cache (two)",
        "a single copy in the cache (by reference, local)", "copies past the cache", "reductions, beside the copy",
        "per allreduce", "per broadcast", "per reduce", "per allgather", "per reduce-scatter", "per all-to-all"};
    int swept[DUET_MODEL_CALL_KINDS] = {0};
    for (int j = 0; j < ss->n; j++)
        if ((int)ss->s[j].shape.kind < DUET_MODEL_CALL_KINDS) swept[ss->s[j].shape.kind] = 1;
    for (int i = 0; i < DUET_FIT_TERMS; i++) {
        if (i >= DUET_FIT_CALL && !swept[i - DUET_FIT_CALL]) continue; /* a collective not swept: no term */
        char spread[32];
        if (i == DUET_FIT_ALPHA && !p->device) snprintf(spread, sizeof spread, "measured, kept");
        else snprintf(spread, sizeof spread, "spread %4.0f %%", 100 * rep->spread[i]);
        printf("  %-21s %10.4g   %-15s   %s\n", duet_fit_term_names[i], rep->value[i], spread,
               rep->value[i] > 0 || i != DUET_FIT_MEM ? what[i] : "(no knee: beta at every size)");
    }
    printf("  %-21s %10.4g   (the bytes of a call's buffers on a host that the cache holds)\n", "knee_MiB",
           m->knee_bytes / 1048576.0);
    const duet_fit_sample_t *w = rep->worst >= 0 ? &ss->s[rep->worst] : NULL;
    printf("  fit error: median %.1f %%, worst %.0f %% (%s %s, %zu bytes per rank)\n", 100 * rep->err_median,
           100 * rep->err_max, w ? duet_coll_kind_name(w->shape.kind) : "-", w ? w->algo->name : "-",
           w ? w->shape.count * w->shape.elem : 0);
}

int perf_calibrate(perf_t *p, const perf_mode_t *const *modes, int nmodes, int rounds)
{
    if (rounds < 1 || rounds > MAX_ROUNDS) perf_die("--rounds takes 1 .. %d", MAX_ROUNDS);
    duet_coll_model_t pair;
#ifdef DUET_HAVE_CUDA
    if (p->device) {
        /* the GPU model's measured pair (its first GPU collective measures it, or the tune
         * file has it), the fitted terms of an earlier calibration dropped: the fit's start */
        PERF_CHECK(duet_cuda_coll_model(p->comm, &pair));
        pair = (duet_coll_model_t){.alpha_us = pair.alpha_us, .beta_gbps = pair.beta_gbps, .stream = pair.stream,
                                  .slots = pair.slots};
    } else
#endif
    PERF_CHECK(duet_coll_calibrate(p->comm, &pair)); /* alpha and beta: the fit's start */
    long fixed = p->iters;
    p->dtype = p->dtypes[0], p->op = p->ops[0];
    cand_t *cand = calloc(MAX_CAND, sizeof *cand);
    samples_t ss = {.rounds = rounds};
    if (!cand) perf_die("out of memory");
    uint64_t wrong = 0;
    for (int mi = 0; mi < nmodes; mi++) {
        p->mode = modes[mi];
        int kind = mode_kind(p);
        for (size_t bytes = p->minb;; bytes = bytes ? bytes * p->factor : 1) {
            int ncand = 0;
            for (int i = 0; i < duet_coll_nalgos && ncand < MAX_CAND; i++)
                if ((int)duet_coll_algos[i].kind == kind && !kernel_algo(p, duet_coll_algos[i].name, bytes))
                    cand[ncand++] = (cand_t){.name = duet_coll_algos[i].name};
            size_iters(p, bytes, fixed);
            if (measure_cell(p, bytes, cand, ncand, rounds, &wrong) == 0 && p->me == 0) add_samples(p, cand, ncand, &ss);
            if (bytes >= p->maxb || bytes > p->maxb / p->factor) break;
        }
    }
    int rc = wrong ? 1 : 0;
    if (p->me == 0) {
        for (int j = 0; j < ss.n; j++) ss.s[j].round_us = ss.round_us + (size_t)j * (size_t)rounds;
        duet_coll_model_t m = pair;
        duet_fit_report_t rep;
        /* alpha as measured (around the ring at this rank count), not fitted: left free, the fit
         * traded it against the per-call term from 4 ranks (docs/PERF.md, issue 20). The GPU's
         * alpha is fitted: its measurement (a send / receive ping-pong, an executor launch per
         * message) is not what a message inside one collective's kernel costs. */
        unsigned kept = p->device ? 0u : 1u << DUET_FIT_ALPHA;
        const char *kind = p->device ? "gpu" : "";
        if (duet_coll_fit_fixed(ss.s, ss.n, rounds, kept, &m, &rep) != DUET_OK) {
            fprintf(stderr, "duet-perf: --calibrate: %s\n", duet_last_error());
            rc = 1;
        } else {
            m.alpha_spread = pair.alpha_spread, m.beta_spread = pair.beta_spread; /* the ping-pong's */
            print_fit(p, &ss, &pair, &m, &rep);
            duet_coll_layout_t lay;
            PERF_CHECK(duet_coll_layout_get(p->comm, &lay));
            duet_coll_tune_file_write(kind, &lay, &m);
            char path[512];
            duet_coll_model_t back = {.stream = m.stream}; /* read as the GPU tuner reads it (its costing) */
            int saved = duet_coll_tune_file_read(kind, &lay, &back, path, sizeof path) == 0 && back.fit_err > 0;
            printf("calibrate: %s %s\n", saved ? "saved in" : "could not save to", path);
            if (!saved) rc = 1;
        }
    }
    if (wrong) fprintf(stderr, "duet-perf: %llu wrong results\n", (unsigned long long)wrong);
    free(cand);
    free(ss.s);
    free(ss.round_us);
    return rc;
}
