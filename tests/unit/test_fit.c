/*
 * test_fit.c — the cost model's terms are fitted from measured calls (src/coll/duet_coll_fit.c).
 *
 * Covers:
 *   - "measurements" made by a known model (alpha, beta, a single copy's beta, a memory beta
 *     past a 4 MiB knee, a reduction's cost, a per-step cost and a call cost for each of the four collectives) over forced algorithms of four
 *     collectives, sizes 64 B - 16 MiB, 2 and 4 ranks, copied and by reference: the fit,
 *     started from a plain alpha-beta model that is far off, finds every term again — exactly
 *     without noise (within 2 %), within 15-30 % with 3 % noise — and the knee;
 *   - its error: the fitted model's median error is the noise's, and a small fraction of the
 *     error the starting model makes;
 *   - the spreads: with rounds of independent noise each term's spread is reported, > 0;
 *   - the simulator's clock by reference: a 64 KiB rd allreduce on 2 ranks costs one staged
 *     message's two copies less one copy, plus the acknowledgement's alpha, less than copied;
 *     a 1 KiB one the same;
 *   - a fixed term (duet_coll_fit_fixed: alpha as measured around the ring): kept at the
 *     true alpha, every other term is found again (within 2 %); kept at twice the truth, alpha
 *     stays exactly there (no spread reported for it) and the others absorb what they can, the
 *     fit worse than with the true alpha;
 *   - bad input: too few samples, a sample without a time, a model without alpha: clear errors.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "duet_test.h"
#include "coll/duet_coll_fit.h"
#include "coll/duet_coll_predict.h"
#include "coll/duet_coll_sim.h"

#define ROUNDS 3
#define MAX_SAMPLES 512

static const struct {
    duet_coll_kind_t kind;
    const char *algo;
} algos[] = {
    {DUET_COLL_ALLREDUCE, "ring"},      {DUET_COLL_ALLREDUCE, "rd"},         {DUET_COLL_ALLREDUCE, "rhd"},
    {DUET_COLL_ALLREDUCE, "oneshot"},   {DUET_COLL_ALLREDUCE, "tree"},       {DUET_COLL_BROADCAST, "chain"},
    {DUET_COLL_ALLGATHER, "ring"},      {DUET_COLL_ALLGATHER, "direct"},     {DUET_COLL_REDUCE_SCATTER, "ring"},
    {DUET_COLL_REDUCE_SCATTER, "direct"},
};

static duet_fit_sample_t samples[MAX_SAMPLES];
static double rounds_us[MAX_SAMPLES][ROUNDS];

/* deterministic noise in [-1, 1] */
static double noise(unsigned j, unsigned r)
{
    unsigned x = j * 2654435761u ^ (r + 1) * 40503u;
    x ^= x >> 13, x *= 0x5bd1e995u, x ^= x >> 15;
    return (double)(x % 20001) / 10000.0 - 1.0;
}

/* The samples `truth` predicts, each round off by up to `noisy` (relative). */
static int make_samples(const duet_coll_model_t *truth, double noisy)
{
    int n = 0;
    for (size_t k = 0; k < DUET_ARRAY_LEN(algos); k++)
        for (int ranks = 2; ranks <= 4; ranks += 2)
            for (size_t bytes = 64; bytes <= ((size_t)16 << 20); bytes *= 4) {
                const duet_coll_algo_t *al = duet_sim_find_algo(algos[k].kind, algos[k].algo);
                CHECK(al, "no %s", algos[k].algo);
                CHECK(n < MAX_SAMPLES, "too many samples");
                duet_fit_sample_t *s = &samples[n];
                s->algo = al;
                s->shape = (duet_coll_args_t){al->kind, 0, ranks, 0, bytes / 4, 4, duet_coll_predict_chunk(), 0, 0,
                                              NULL, 0, (int)(n & 1)};
                double t;
                CHECK(duet_coll_predict_cost(al, &s->shape, truth, duet_coll_predict_how(&s->shape), &t) == DUET_OK,
                      "the true model cannot cost %s: %s", algos[k].algo, duet_last_error());
                double sorted[ROUNDS];
                for (int r = 0; r < ROUNDS; r++) sorted[r] = rounds_us[n][r] = t * (1 + noisy * noise((unsigned)n, (unsigned)r));
                s->us = duet_median(sorted, ROUNDS, NULL);
                s->round_us = rounds_us[n];
                n++;
            }
    return n;
}

static double median_err(const duet_coll_model_t *m, int n)
{
    double e[MAX_SAMPLES];
    for (int j = 0; j < n; j++) {
        double t;
        CHECK(duet_coll_predict_cost(samples[j].algo, &samples[j].shape, m, duet_coll_predict_how(&samples[j].shape),
                                     &t) == DUET_OK, "cost: %s", duet_last_error());
        e[j] = fabs(t - samples[j].us) / samples[j].us;
    }
    return duet_median(e, n, NULL);
}

static void near(const char *what, double got, double want, double tol)
{
    EXPECT(fabs(got - want) <= tol * want, "%s: fitted %.4g, true %.4g (tolerance %.0f%%)", what, got, want, 100 * tol);
}

/* The call terms of the collectives swept (algos[]), each against the truth; none for reduce
 * and all-to-all, which are not; the one for every call gone. */
static void check_calls(const duet_coll_model_t *m, const duet_coll_model_t *truth, double tol, const char *what)
{
    static const char *const names[] = {"allreduce", "broadcast", "reduce", "allgather", "reduce-scatter", "all-to-all"};
    for (int k = 0; k < DUET_MODEL_CALL_KINDS; k++) {
        char label[64];
        snprintf(label, sizeof label, "call of a %s%s", names[k], what);
        if (truth->call_kind_us[k] > 0) near(label, m->call_kind_us[k], truth->call_kind_us[k], tol);
        else EXPECT(m->call_kind_us[k] == 0, "%s: %.4g fitted without a sample", label, m->call_kind_us[k]);
    }
    EXPECT(m->call_us == 0, "the fit left a call term for every call: %.4g", m->call_us);
}

static void fit_and_check(const duet_coll_model_t *truth, double noisy, double tol, double tol_small)
{
    int n = make_samples(truth, noisy);
    duet_coll_model_t start = {.alpha_us = 0.5, .beta_gbps = 4.0}, m = start;
    duet_fit_report_t rep;
    double t0 = duet_time_ns() * 1e-9;
    CHECK(duet_coll_fit(samples, n, ROUNDS, &m, &rep) == DUET_OK, "fit: %s", duet_last_error());
    double took = duet_time_ns() * 1e-9 - t0;
    double before = median_err(&start, n), after = median_err(&m, n);
    printf("noise %.0f%%: %d samples fitted in %.1f s: alpha %.4g us, call %.4g us, step %.4g us, beta %.4g GB/s, "
           "copy %.4g GB/s, mem %.4g GB/s past %.4g MiB, reduce %.4g GB/s; median error %.2f%% (the start's %.0f%%), "
           "worst %.1f%%\n", 100 * noisy, n, took, m.alpha_us, m.call_kind_us[0], m.step_us, m.beta_gbps, m.copy_gbps,
           m.mem_gbps, m.knee_bytes / 1048576.0, m.reduce_gbps, 100 * after, 100 * before, 100 * rep.err_max);
    for (int i = 0; i < DUET_FIT_TERMS; i++)
        printf("  %-12s %.4g  spread %.0f%%\n", duet_fit_term_names[i], rep.value[i], 100 * rep.spread[i]);
    near("beta", m.beta_gbps, truth->beta_gbps, tol);
    near("memory beta", m.mem_gbps, truth->mem_gbps, tol);
    near("single copy", m.copy_gbps, truth->copy_gbps, tol_small);
    near("alpha", m.alpha_us, truth->alpha_us, tol_small);
    check_calls(&m, truth, tol_small, "");
    near("step", m.step_us, truth->step_us, tol_small);
    near("reduce", m.reduce_gbps, truth->reduce_gbps, tol_small);
    EXPECT(m.knee_bytes == truth->knee_bytes, "knee: fitted %.0f bytes, true %.0f", m.knee_bytes, truth->knee_bytes);
    EXPECT(rep.samples == n, "%d of %d samples used", rep.samples, n);
    EXPECT(fabs(rep.err_median - after) < 1e-9 && m.fit_err > 0, "the report's error %.4f, the model's %.4f",
           rep.err_median, after);
    EXPECT(after <= noisy * 0.75 + 0.002, "median error %.2f%% with %.0f%% noise", 100 * after, 100 * noisy);
    EXPECT(after < before / 5, "the fit (%.1f%%) is not far better than the start (%.1f%%)", 100 * after, 100 * before);
    for (int i = 0; i < DUET_FIT_TERMS; i++) {
        int unswept = i >= DUET_FIT_CALL && truth->call_kind_us[i - DUET_FIT_CALL] == 0; /* no term, no spread */
        EXPECT(noisy > 0 && !unswept ? rep.spread[i] > 0 && rep.spread[i] < 1 : rep.spread[i] < 1e-3,
               "%s's spread %.3f with %.0f%% noise", duet_fit_term_names[i], rep.spread[i], 100 * noisy);
    }
}

/* The simulator's placement: by reference, a message of at least DUET_CHAN_BYREF_MIN bytes
 * from the send buffer costs its sender nothing per byte and its receiver one copy. */
static void byref_clock(const duet_coll_model_t *m)
{
    const duet_coll_algo_t *rd = duet_sim_find_algo(DUET_COLL_ALLREDUCE, "rd");
    double t[2][2];
    for (int big = 0; big < 2; big++)
        for (int byref = 0; byref < 2; byref++) {
            size_t count = big ? 16384 : 256; /* 64 KiB, 1 KiB */
            duet_coll_args_t a = {DUET_COLL_ALLREDUCE, 0, 2, 0, count, 4, duet_coll_predict_chunk(), 0, 0, NULL, 0, byref};
            CHECK(duet_coll_predict_cost(rd, &a, m, DUET_PREDICT_SIMULATED, &t[big][byref]) == DUET_OK, "rd: %s",
                  duet_last_error());
        }
    EXPECT(t[0][1] == t[0][0], "1 KiB rd: by reference %.3f us, copied %.3f (below the by-reference size)", t[0][1], t[0][0]);
    /* copied: send h + receive h; by reference: the receive's one copy, and the sender's call
     * ends when its message is acknowledged (alpha after the peer's receive) */
    double h = duet_coll_copy_us_per_byte(m, &(duet_coll_args_t){.kind = DUET_COLL_ALLREDUCE, .nranks = 2,
                                                                  .count = 16384, .elem = 4});
    double one = duet_coll_single_us_per_byte(m, &(duet_coll_args_t){.kind = DUET_COLL_ALLREDUCE, .nranks = 2,
                                                                      .count = 16384, .elem = 4});
    double want = 65536 * (2 * h - one) - m->alpha_us;
    EXPECT(fabs((t[1][0] - t[1][1]) - want) < 0.02 * want, "64 KiB rd: copied %.3f us, by reference %.3f: %.3f apart, "
           "want %.3f", t[1][0], t[1][1], t[1][0] - t[1][1], want);
}

/* Alpha kept where it is told; the other terms fitted around it. */
static void fixed_alpha(const duet_coll_model_t *truth)
{
    int n = make_samples(truth, 0);
    duet_coll_model_t m = {.alpha_us = truth->alpha_us, .beta_gbps = 4.0};
    duet_fit_report_t rep;
    CHECK(duet_coll_fit_fixed(samples, n, ROUNDS, 1u << DUET_FIT_ALPHA, &m, &rep) == DUET_OK, "fit: %s",
          duet_last_error());
    EXPECT(m.alpha_us == truth->alpha_us && rep.value[DUET_FIT_ALPHA] == truth->alpha_us,
           "alpha kept at %.4g: model %.6g, report %.6g", truth->alpha_us, m.alpha_us, rep.value[DUET_FIT_ALPHA]);
    EXPECT(rep.spread[DUET_FIT_ALPHA] == 0, "a kept term reports a spread of %.3f", rep.spread[DUET_FIT_ALPHA]);
    near("beta (alpha kept)", m.beta_gbps, truth->beta_gbps, 0.02);
    near("single copy (alpha kept)", m.copy_gbps, truth->copy_gbps, 0.02);
    check_calls(&m, truth, 0.02, " (alpha kept)");
    near("step (alpha kept)", m.step_us, truth->step_us, 0.02);
    near("reduce (alpha kept)", m.reduce_gbps, truth->reduce_gbps, 0.02);
    double good = rep.err_median;
    duet_coll_model_t w = {.alpha_us = 2 * truth->alpha_us, .beta_gbps = 4.0};
    CHECK(duet_coll_fit_fixed(samples, n, ROUNDS, 1u << DUET_FIT_ALPHA, &w, &rep) == DUET_OK, "fit: %s",
          duet_last_error());
    EXPECT(w.alpha_us == 2 * truth->alpha_us, "alpha kept at %.4g moved to %.6g", 2 * truth->alpha_us, w.alpha_us);
    EXPECT(rep.err_median > good, "a wrong alpha kept fits as well (%.4f) as the true one (%.4f)", rep.err_median,
           good);
    printf("alpha kept: at the truth median error %.3f%%, at twice the truth %.2f%%\n", 100 * good,
           100 * rep.err_median);
}

int main(void)
{
    duet_coll_model_t truth = {.alpha_us = 0.15, .beta_gbps = 9.0, .step_us = 0.08, .copy_gbps = 30.0,
                               .mem_gbps = 3.0, .knee_bytes = 4 << 20, .reduce_gbps = 25.0,
                               .call_kind_us = {0.4, 0.7, 0, 0.9, 0.3, 0}};
    byref_clock(&truth);
    fit_and_check(&truth, 0, 0.02, 0.02);
    fit_and_check(&truth, 0.03, 0.15, 0.3);
    fixed_alpha(&truth);

    duet_coll_model_t m = {.alpha_us = 0.5, .beta_gbps = 4.0};
    duet_fit_report_t rep;
    EXPECT(duet_coll_fit(samples, DUET_FIT_TERMS - 1, 0, &m, &rep) == DUET_ERR_INVALID_ARG &&
               strstr(duet_last_error(), "samples"), "too few samples: %s", duet_last_error());
    double keep = samples[3].us;
    samples[3].us = 0;
    EXPECT(duet_coll_fit(samples, 40, 0, &m, &rep) == DUET_ERR_INVALID_ARG && strstr(duet_last_error(), "sample 3"),
           "a sample without a time: %s", duet_last_error());
    samples[3].us = keep;
    duet_coll_model_t bad = {.alpha_us = 0, .beta_gbps = 4.0};
    EXPECT(duet_coll_fit(samples, 40, 0, &bad, &rep) == DUET_ERR_INVALID_ARG, "a model without alpha");
    return dt_finish();
}
