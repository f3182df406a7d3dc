/*
 * The cost model's terms fitted to measured calls (duet_coll_fit.h says how).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "coll/duet_coll_fit.h"
#include "coll/duet_coll_predict.h"

const char *const duet_fit_term_names[DUET_FIT_TERMS] = {
    "alpha_us", "step_us", "beta_gbps", "copy_gbps", "mem_gbps", "reduce_gbps", "call_allreduce_us",
    "call_broadcast_us", "call_reduce_us", "call_allgather_us", "call_reducescatter_us", "call_alltoall_us"};

#define KNEES 24          /* candidates: none, then 128 KiB << (k - 1) for k = 1..KNEES-1 */
#define LINEARIZE 4       /* derivatives taken again at the new terms, this many times */
#define SWEEPS_MAX 200000 /* coordinate descent on the normal equations: enough for 12 terms */
#define BYTE_US_MIN 1e-9  /* per byte: 500 TB/s, the least a copy may cost (beta stays finite) */

/* theta: the terms as the linear problem has them (duet_coll_fit.h's order): us per message,
 * per step, per byte of a staged message's side and of a single copy in the cache, per byte
 * past it, per byte reduced, per call of each collective. */
typedef struct {
    double t[DUET_FIT_TERMS];
    double knee; /* bytes; 0: none */
} theta_t;

static double per_byte_of(double gbps, double copies) { return gbps > 0 ? copies / (gbps * 1e3) : 0; }
static double gbps_of(double per_byte, double copies) { return per_byte > 0 ? copies / (per_byte * 1e3) : 0; }

static theta_t theta_of(const duet_coll_model_t *m)
{
    theta_t th = {{0}, m->mem_gbps > 0 ? m->knee_bytes : 0};
    th.t[DUET_FIT_ALPHA] = m->alpha_us;
    th.t[DUET_FIT_STEP] = m->step_us;
    th.t[DUET_FIT_BETA] = per_byte_of(m->beta_gbps, 0.5);
    th.t[DUET_FIT_COPY] = m->copy_gbps > 0 ? per_byte_of(m->copy_gbps, 1) : per_byte_of(m->beta_gbps, 0.5);
    th.t[DUET_FIT_MEM] = per_byte_of(m->mem_gbps > 0 ? m->mem_gbps : m->beta_gbps, 0.5);
    th.t[DUET_FIT_REDUCE] = per_byte_of(m->reduce_gbps, 1);
    for (int k = 0; k < DUET_MODEL_CALL_KINDS; k++) th.t[DUET_FIT_CALL + k] = duet_coll_call_us(m, (duet_coll_kind_t)k);
    return th;
}

/* The model's terms in the report's units (us, GB/s), in the fit's order. */
static void values_of(const duet_coll_model_t *m, double v[DUET_FIT_TERMS])
{
    v[DUET_FIT_ALPHA] = m->alpha_us, v[DUET_FIT_STEP] = m->step_us, v[DUET_FIT_BETA] = m->beta_gbps;
    v[DUET_FIT_COPY] = m->copy_gbps, v[DUET_FIT_MEM] = m->mem_gbps, v[DUET_FIT_REDUCE] = m->reduce_gbps;
    for (int k = 0; k < DUET_MODEL_CALL_KINDS; k++) v[DUET_FIT_CALL + k] = m->call_kind_us[k];
}

static void model_of(const theta_t *th, duet_coll_model_t *m)
{
    m->alpha_us = th->t[DUET_FIT_ALPHA] > 1e-4 ? th->t[DUET_FIT_ALPHA] : 1e-4;
    m->call_us = 0; /* each collective's own instead */
    for (int k = 0; k < DUET_MODEL_CALL_KINDS; k++) m->call_kind_us[k] = th->t[DUET_FIT_CALL + k];
    m->step_us = th->t[DUET_FIT_STEP];
    m->beta_gbps = gbps_of(th->t[DUET_FIT_BETA] > BYTE_US_MIN ? th->t[DUET_FIT_BETA] : BYTE_US_MIN, 0.5);
    m->copy_gbps = gbps_of(th->t[DUET_FIT_COPY] > BYTE_US_MIN ? th->t[DUET_FIT_COPY] : BYTE_US_MIN, 1);
    double mem = th->t[DUET_FIT_MEM] > BYTE_US_MIN ? th->t[DUET_FIT_MEM] : BYTE_US_MIN;
    m->mem_gbps = th->knee > 0 ? gbps_of(mem, 0.5) : 0;
    m->knee_bytes = th->knee;
    m->reduce_gbps = gbps_of(th->t[DUET_FIT_REDUCE], 1);
}

static double predict(const duet_fit_sample_t *s, const duet_coll_model_t *m, int *ok)
{
    double us = 0;
    *ok = duet_coll_predict_cost(s->algo, &s->shape, m, duet_coll_predict_how(&s->shape), &us) == DUET_OK;
    return us;
}

/* One sample's derivatives at m: with respect to alpha, call, step, the per-byte costs of a
 * staged side and of a single copy at the sample's own mix of cache and memory (split by
 * `held` afterwards), the reduction. */
typedef struct {
    double d[DUET_FIT_TERMS]; /* d[BETA], d[COPY]: per byte, whatever the mix; d[MEM] unused */
    double held;              /* the share the cache holds under the knee of the row's fit */
    int ok;
} grad_t;

static grad_t gradient(const duet_fit_sample_t *s, const duet_coll_model_t *m)
{
    grad_t g = {{0}, duet_coll_cache_held(m, &s->shape), 1};
    /* flat: the sample's byte costs without a knee, so that each is one term */
    duet_coll_model_t flat = *m;
    double h = duet_coll_copy_us_per_byte(m, &s->shape), one = duet_coll_single_us_per_byte(m, &s->shape);
    flat.mem_gbps = 0, flat.knee_bytes = 0, flat.beta_gbps = gbps_of(h, 0.5), flat.copy_gbps = gbps_of(one, 1);
    double base = predict(s, &flat, &g.ok);
    if ((int)s->shape.kind < DUET_MODEL_CALL_KINDS) g.d[DUET_FIT_CALL + s->shape.kind] = 1; /* added to the prediction */
    double reduce_pb = per_byte_of(m->reduce_gbps, 1);
    for (int i = 0; g.ok && i < DUET_FIT_TERMS; i++) {
        duet_coll_model_t p = flat;
        double step;
        switch (i) {
        case DUET_FIT_ALPHA: step = fmax(0.01 * p.alpha_us, 1e-4), p.alpha_us += step; break;
        case DUET_FIT_STEP: step = fmax(0.01 * p.step_us, 1e-4), p.step_us += step; break;
        case DUET_FIT_BETA: step = 0.01 * h, p.beta_gbps = gbps_of(h + step, 0.5); break;
        case DUET_FIT_COPY: step = 0.01 * one, p.copy_gbps = gbps_of(one + step, 1); break;
        case DUET_FIT_REDUCE: step = fmax(0.01 * reduce_pb, 0.01 * h), p.reduce_gbps = gbps_of(reduce_pb + step, 1); break;
        default: continue; /* calls: 1 for the sample's collective; mem: from the copy's, by the share */
        }
        int ok;
        double t = predict(s, &p, &ok);
        g.ok &= ok;
        g.d[i] = (t - base) / step;
        if (g.d[i] < 0) g.d[i] = 0; /* a dearer term never makes a call cheaper (noise of a tie) */
    }
    return g;
}

/* The row of sample j (weighed by 1/us) under knee `held` shares. */
static void row_of(const grad_t *g, double held, double us, double *row)
{
    for (int i = 0; i < DUET_FIT_TERMS; i++) row[i] = g->d[i] / us;
    row[DUET_FIT_BETA] = held * g->d[DUET_FIT_BETA] / us;
    row[DUET_FIT_COPY] = held * g->d[DUET_FIT_COPY] / us;
    row[DUET_FIT_MEM] = (1 - held) * (g->d[DUET_FIT_BETA] + g->d[DUET_FIT_COPY]) / us;
}

/* min |R theta - 1|^2 with theta >= 0, from the normal equations (A = R'R, b = R'1) by
 * coordinate descent on the scaled problem; terms without data (a zero column) stay 0, and
 * the terms of `fixed` (a bit per term) stay at their value in x. */
static void nnls(const double A[DUET_FIT_TERMS][DUET_FIT_TERMS], const double b[DUET_FIT_TERMS], unsigned fixed,
                 double x[DUET_FIT_TERMS])
{
    double d[DUET_FIT_TERMS], y[DUET_FIT_TERMS] = {0};
    for (int i = 0; i < DUET_FIT_TERMS; i++) {
        d[i] = A[i][i] > 0 ? sqrt(A[i][i]) : 0;
        if (fixed >> i & 1) y[i] = x[i] * d[i];
    }
    for (int sweep = 0; sweep < SWEEPS_MAX; sweep++) {
        double moved = 0;
        for (int i = 0; i < DUET_FIT_TERMS; i++) {
            if (d[i] == 0 || (fixed >> i & 1)) continue;
            double ax = 0;
            for (int k = 0; k < DUET_FIT_TERMS; k++)
                if (d[k] > 0) ax += A[i][k] / (d[i] * d[k]) * y[k];
            double yi = y[i] + (b[i] / d[i] - ax);
            if (yi < 0) yi = 0;
            moved = fmax(moved, fabs(yi - y[i]));
            y[i] = yi;
        }
        if (moved < 1e-13) break;
    }
    for (int i = 0; i < DUET_FIT_TERMS; i++)
        if (!(fixed >> i & 1)) x[i] = d[i] > 0 ? y[i] / d[i] : 0;
}

/* Fits the linear problem of grads g under knee `knee` to times us_of(j); *theta keeps its
 * knee, and its terms of `fixed` their values; returns the sum of squared relative residuals. */
static double solve(const duet_fit_sample_t *s, int n, const grad_t *g, const double *held, int with_mem,
                    const double *us, unsigned fixed, theta_t *theta)
{
    double A[DUET_FIT_TERMS][DUET_FIT_TERMS] = {{0}}, b[DUET_FIT_TERMS] = {0}, row[DUET_FIT_TERMS];
    for (int j = 0; j < n; j++) {
        if (!g[j].ok) continue;
        row_of(&g[j], with_mem ? held[j] : 1, us[j], row);
        for (int i = 0; i < DUET_FIT_TERMS; i++) {
            b[i] += row[i];
            for (int k = 0; k < DUET_FIT_TERMS; k++) A[i][k] += row[i] * row[k];
        }
    }
    nnls((const double(*)[DUET_FIT_TERMS])A, b, fixed, theta->t);
    if (!with_mem || theta->t[DUET_FIT_MEM] <= 0) theta->t[DUET_FIT_MEM] = theta->t[DUET_FIT_BETA];
    double sum = 0;
    for (int j = 0; j < n; j++) {
        if (!g[j].ok) continue;
        row_of(&g[j], with_mem ? held[j] : 1, us[j], row);
        double r = -1;
        for (int i = 0; i < DUET_FIT_TERMS; i++) r += row[i] * theta->t[i];
        sum += r * r;
    }
    (void)s;
    return sum;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* The median |predicted - measured| / measured of model m over the samples it can cost
 * (err: room for n). */
static double median_error(const duet_fit_sample_t *s, int n, const duet_coll_model_t *m, double *err)
{
    int used = 0;
    for (int j = 0; j < n; j++) {
        int ok;
        double t = predict(&s[j], m, &ok);
        if (ok) err[used++] = fabs(t - s[j].us) / s[j].us;
    }
    if (!used) return INFINITY;
    qsort(err, (size_t)used, sizeof *err, cmp_double);
    return used % 2 ? err[used / 2] : 0.5 * (err[used / 2 - 1] + err[used / 2]);
}

duet_status_t duet_coll_fit(const duet_fit_sample_t *s, int n, int rounds, duet_coll_model_t *m,
                            duet_fit_report_t *rep)
{
    return duet_coll_fit_fixed(s, n, rounds, 0, m, rep);
}

duet_status_t duet_coll_fit_fixed(const duet_fit_sample_t *s, int n, int rounds, unsigned fixed,
                                  duet_coll_model_t *m, duet_fit_report_t *rep)
{
    memset(rep, 0, sizeof *rep);
    if (!s || !m || n < DUET_FIT_TERMS || !(m->alpha_us > 0) || !(m->beta_gbps > 0))
        return duet_error_set(DUET_ERR_INVALID_ARG, "fit: %d samples (at least %d) and a model with a positive alpha "
                              "and beta are needed", n, DUET_FIT_TERMS);
    for (int j = 0; j < n; j++)
        if (!(s[j].us > 0) || !s[j].algo)
            return duet_error_set(DUET_ERR_INVALID_ARG, "fit: sample %d has no algorithm or a time of %g us", j, s[j].us);
    grad_t *g = calloc((size_t)n, sizeof *g);
    double *held = calloc((size_t)n, sizeof *held), *us = calloc((size_t)n, sizeof *us), *err = calloc((size_t)n, sizeof *err);
    if (!g || !held || !us || !err) {
        free(g), free(held), free(us), free(err);
        return duet_error_set(DUET_ERR_NO_MEMORY, "fit: out of host memory");
    }
    for (int j = 0; j < n; j++) us[j] = s[j].us;
    duet_coll_model_t start = *m;
    if (!(start.step_us > 0) && !(fixed >> DUET_FIT_STEP & 1)) start.step_us = 0.01; /* a start the derivatives can move from */
    theta_t held_at = theta_of(&start); /* the values of the fixed terms */
    /* Several starts (beta as given, halved, doubled: where the critical paths begin decides
     * which ones the derivatives see), and of every iterate of every start the one whose real
     * predictions are best is kept: from one start the fit can settle on a poorer optimum (the
     * GPU model at 8 ranks: 13 % or 8 % median error from betas 3 % apart, docs/PERF.md). */
    static const double beta_scale[] = {1, 0.5, 2};
    duet_coll_model_t cur = start, kept = start;
    double kept_err = INFINITY;
    for (size_t st = 0; st < DUET_ARRAY_LEN(beta_scale); st++) {
        cur = start;
        if (!(fixed >> DUET_FIT_BETA & 1)) cur.beta_gbps *= beta_scale[st];
        for (int it = 0; it < LINEARIZE; it++) {
            for (int j = 0; j < n; j++) g[j] = gradient(&s[j], &cur);
            double best_sum = INFINITY;
            theta_t best = theta_of(&cur);
            for (int k = 0; k < KNEES; k++) {
                theta_t th = {{0}, k ? (double)(128 << 10) * (double)(1ull << (k - 1)) : 0};
                for (int i = 0; i < DUET_FIT_TERMS; i++)
                    if (fixed >> i & 1) th.t[i] = held_at.t[i];
                duet_coll_model_t probe = cur;
                probe.knee_bytes = th.knee, probe.mem_gbps = th.knee > 0 ? 1 : 0; /* for the shares alone */
                for (int j = 0; j < n; j++) held[j] = duet_coll_cache_held(&probe, &s[j].shape);
                double sum = solve(s, n, g, held, k > 0, us, fixed, &th);
                if (sum < best_sum * (1 - 1e-9)) best_sum = sum, best = th; /* on a tie, the simpler (earlier) */
            }
            model_of(&best, &cur);
            double e = median_error(s, n, &cur, err);
            if (e < kept_err * (1 - 1e-9)) kept_err = e, kept = cur; /* on a tie, the earlier */
        }
    }
    cur = kept;
    for (int j = 0; j < n; j++) g[j] = gradient(&s[j], &cur); /* for the rounds' spreads below */
    theta_t best = theta_of(&cur);
    /* how well the fitted model predicts, with the real predictions (not the linear ones) */
    int used = 0;
    rep->worst = -1;
    for (int j = 0; j < n; j++) {
        int ok;
        double t = predict(&s[j], &cur, &ok);
        if (!ok) continue;
        double e = fabs(t - s[j].us) / s[j].us;
        if (e > rep->err_max || rep->worst < 0) rep->err_max = e, rep->worst = j;
        err[used++] = e;
    }
    qsort(err, (size_t)used, sizeof *err, cmp_double);
    rep->samples = used;
    rep->err_median = used ? (used % 2 ? err[used / 2] : 0.5 * (err[used / 2 - 1] + err[used / 2])) : 0;
    values_of(&cur, rep->value);
    /* each round alone, at the final derivatives and knee: how far each term moves */
    if (rounds > 1) {
        for (int j = 0; j < n; j++) held[j] = duet_coll_cache_held(&cur, &s[j].shape);
        double *vals = calloc((size_t)rounds * DUET_FIT_TERMS, sizeof *vals);
        for (int r = 0; vals && r < rounds; r++) {
            for (int j = 0; j < n; j++) us[j] = s[j].round_us && s[j].round_us[r] > 0 ? s[j].round_us[r] : s[j].us;
            theta_t th = {{0}, best.knee};
            for (int i = 0; i < DUET_FIT_TERMS; i++)
                if (fixed >> i & 1) th.t[i] = held_at.t[i];
            solve(s, n, g, held, best.knee > 0, us, fixed, &th);
            duet_coll_model_t mr = cur;
            model_of(&th, &mr);
            double v[DUET_FIT_TERMS];
            values_of(&mr, v);
            for (int i = 0; i < DUET_FIT_TERMS; i++) vals[(size_t)i * (size_t)rounds + (size_t)r] = v[i];
        }
        for (int i = 0; vals && i < DUET_FIT_TERMS; i++)
            if (rep->value[i] > 0 && !(fixed >> i & 1)) duet_median(vals + (size_t)i * (size_t)rounds, rounds, &rep->spread[i]);
        free(vals);
    }
    cur.fit_err = rep->err_median > 0 ? rep->err_median : 1e-6; /* > 0: the terms are fitted ones */
    cur.net_alpha_us = m->net_alpha_us, cur.net_beta_gbps = m->net_beta_gbps;
    *m = cur;
    free(g), free(held), free(us), free(err);
    return DUET_OK;
}
