/*
 * duet_coll_fit.h — the cost model's terms, fitted to measured calls.
 *
 * `duet-perf --calibrate` runs every algorithm of every collective, forced, over a sweep of
 * sizes, and hands the medians here (with alpha kept as measured: duet_coll_fit_fixed); the fit finds the terms of duet_coll_model_t (alpha,
 * beta of a staged message, a single copy's, the memory's past a cache knee, the
 * reduction's, the per-step and the per-call costs: duet_coll_predict.h) that predict them best, and says how well.
 *
 * How. A prediction T is the makespan of the algorithm's schedule under the terms: a sum of
 * term x count along its critical path, so T is homogeneous of degree 1 in the terms,
 * T(theta) = sum_i theta_i dT/dtheta_i, wherever the critical path does not change. The
 * derivatives are taken by finite differences of the tuner's own prediction at the current
 * terms; they make one row per sample of a linear least-squares problem, weighed by 1/measured
 * (every size counts the same: the relative error is what is minimised), solved with the
 * terms kept >= 0. The knee is not linear: each candidate (none, 128 KiB .. 512 MiB by 2) is
 * fitted and the best kept. Then the derivatives are taken again at the new terms (the
 * critical paths may have changed) and the fit repeated, a few times. All this from three
 * starts (beta as given, halved and doubled), and of every iterate the one whose real
 * predictions have the smallest median error is the result.
 *
 * The spread of each term: the fit is repeated on each round of measurements alone (at the
 * final derivatives and knee), and (max - min) / median of each term over the rounds is
 * reported; a term that moves a lot between rounds is poorly determined by the sweep.
 */
#ifndef DUET_COLL_FIT_H
#define DUET_COLL_FIT_H

#include "coll/duet_coll_tune.h"

/* One measured call of a forced algorithm. */
typedef struct {
    const duet_coll_algo_t *algo;
    duet_coll_args_t shape; /* as the tuner costs it: rank ignored, placement (in_place, byref) set */
    double us;              /* measured: the median of the rounds */
    const double *round_us; /* each round's time (`rounds` of them, duet_coll_fit), or NULL */
} duet_fit_sample_t;

/* The terms: DUET_FIT_CALL + k is the call term of collective k (duet_coll_kind_t,
 * allreduce .. all-to-all: duet_coll_model_t.call_kind_us). */
enum {
    DUET_FIT_ALPHA, DUET_FIT_STEP, DUET_FIT_BETA, DUET_FIT_COPY, DUET_FIT_MEM, DUET_FIT_REDUCE, DUET_FIT_CALL,
    DUET_FIT_TERMS = DUET_FIT_CALL + DUET_MODEL_CALL_KINDS
};

/* The names of the terms, as --calibrate prints them: "alpha_us", "step_us", ...,
 * "call_allreduce_us", ... */
extern const char *const duet_fit_term_names[DUET_FIT_TERMS];

typedef struct {
    double err_median, err_max; /* over the samples, the fitted model: |predicted - measured| / measured */
    int worst;                  /* the sample of err_max */
    double value[DUET_FIT_TERMS];  /* the fitted terms in the model's units (us, GB/s; 0: none) */
    double spread[DUET_FIT_TERMS]; /* over the rounds: (max - min) / median; 0 without rounds */
    int samples;                   /* used: those the model could cost */
} duet_fit_report_t;

/*
 * Fits m's terms (alpha, beta, call, step, mem and knee, reduce) to the n samples, starting
 * from m as it is (its net pair is kept); on success m holds the fitted model (fit_err its
 * median error) and *rep what the fit found. rounds: how many round_us each sample has (0:
 * none; then no spreads). DUET_ERR_INVALID_ARG for fewer samples than terms, a sample without
 * a positive time or a model without a positive alpha and beta; DUET_ERR_NO_MEMORY.
 */
duet_status_t duet_coll_fit(const duet_fit_sample_t *s, int n, int rounds, duet_coll_model_t *m,
                            duet_fit_report_t *rep);
/* The same with the terms of `fixed` (bit 1 << DUET_FIT_ALPHA, ...) kept at m's values: a term
 * measured directly (alpha, around a ring of every rank, duet_coll_calib.c) that the fit must
 * not trade against the others; a fixed term reports no spread. */
duet_status_t duet_coll_fit_fixed(const duet_fit_sample_t *s, int n, int rounds, unsigned fixed,
                                  duet_coll_model_t *m, duet_fit_report_t *rep);

#endif
