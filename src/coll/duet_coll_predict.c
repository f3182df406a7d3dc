/*
 * Predicted cost of an algorithm for a call shape: the three methods the tuner uses (see
 * duet_coll_predict.h), the choice among them, and the candidate loop that the tuner and
 * duet-sim share, so that the tool shows exactly the numbers the tuner compares.
 * The closed forms of the analytic method are in duet_coll_formula.c.
 */
#include <stdio.h>
#include <string.h>
#include "coll/duet_coll_lane.h"
#include "coll/duet_coll_predict.h"
#include "coll/duet_coll_sim.h"

/* Up to this many ranks (and steps, below) the tuner simulates every rank's schedule
 * together with src/coll/duet_coll_sim.c — the critical path: a tree's hops add up, a
 * one-shot's messages overlap. */
#define SIMULATE_UP_TO 16
#define SIMULATE_STEPS_MAX 40000 /* about the steps of all ranks, for the widest algorithm */
/* A stream model's call (duet_coll_model_t.stream) is simulated this many times back to
 * back and costed as the last one's increment: the first call's ramp left out, the overlap
 * of one call's tail with the next call's head counted (duet_coll_sim.h). */
#define STREAM_CALLS 3

static duet_status_t simulated_cost(const duet_coll_algo_t *al, const duet_coll_args_t *a,
                                    const duet_coll_model_t *m, double *us);
static duet_status_t anchored_cost(const duet_coll_algo_t *al, const duet_coll_args_t *a,
                                   const duet_coll_model_t *m, double *us);

const char *duet_predict_how_name(duet_predict_how_t how)
{
    return how == DUET_PREDICT_SIMULATED      ? "simulated"
           : how == DUET_PREDICT_EXTRAPOLATED ? "extended simulation"
                                              : "analytic";
}

size_t duet_coll_predict_chunk(void)
{
    size_t chunk = (duet_cfg()->coll_chunk + 63) & ~(size_t)63; /* as duet_coll_chan_create() */
    return chunk < 64 ? 64 : chunk;
}

int duet_coll_predict_slots(void)
{
    long slots = duet_cfg()->coll_slots; /* as duet_coll_chan_create() */
    return slots < 2 ? 2 : (int)slots;
}

/* Whether every rank's schedule of shape a fits the simulator's budget: even the most
 * message-hungry algorithm (one-shot: about 2 n^2 messages per chunk in all) stays under
 * SIMULATE_STEPS_MAX steps, so a decision costs at most some ms, once per call shape and
 * communicator. (The chunks are counted over n times a rank's bytes, as the tuner always
 * has: generous for allreduce.) */
static int fits_simulator(const duet_coll_args_t *a)
{
    double n = a->nranks;
    size_t all_bytes = a->count * a->elem * (size_t)a->nranks;
    double sim_chunks = (double)(all_bytes / duet_coll_chunk(a) + 1);
    return a->nranks <= SIMULATE_UP_TO && sim_chunks * 2.0 * n * n <= SIMULATE_STEPS_MAX;
}

duet_predict_how_t duet_coll_predict_how(const duet_coll_args_t *a)
{
    if (a->nranks > SIMULATE_UP_TO) return DUET_PREDICT_ANALYTIC;
    if (fits_simulator(a)) return DUET_PREDICT_SIMULATED;
    return DUET_PREDICT_EXTRAPOLATED;
}

/* The bytes of call a's buffers on rank 0's host (duet_coll_sim.h's sizes, every rank's). */
static double host_footprint(const duet_coll_args_t *a)
{
    double c = (double)a->count * (double)a->elem, n = a->nranks, sb = c, rb = c;
    switch (a->kind) {
    case DUET_COLL_ALLGATHER: rb = n * c; break;
    case DUET_COLL_REDUCE_SCATTER: sb = n * c; break;
    case DUET_COLL_ALLTOALL: sb = rb = n * c; break;
    default: break;
    }
    int here = a->nranks;
    if (a->host && a->nhosts > 1)
        for (int r = here = 0; r < a->nranks; r++) here += a->host[r] == a->host[0];
    return (a->in_place ? (sb > rb ? sb : rb) : sb + rb) * here;
}

double duet_coll_cache_held(const duet_coll_model_t *m, const duet_coll_args_t *a)
{
    if (!(m->mem_gbps > 0) || !(m->knee_bytes > 0)) return 1;
    double bytes = host_footprint(a);
    return bytes <= m->knee_bytes ? 1 : m->knee_bytes / bytes;
}

/* A byte's cost in the cache, `cached`, mixed past the knee with the memory's. */
static double past_knee(const duet_coll_model_t *m, const duet_coll_args_t *a, double cached)
{
    double held = duet_coll_cache_held(m, a);
    return held < 1 ? held * cached + (1 - held) * 0.5 / (m->mem_gbps * 1e3) : cached;
}

double duet_coll_copy_us_per_byte(const duet_coll_model_t *m, const duet_coll_args_t *a)
{
    return past_knee(m, a, 0.5 / (m->beta_gbps * 1e3));
}

double duet_coll_single_us_per_byte(const duet_coll_model_t *m, const duet_coll_args_t *a)
{
    return past_knee(m, a, m->copy_gbps > 0 ? 1 / (m->copy_gbps * 1e3) : 0.5 / (m->beta_gbps * 1e3));
}

static duet_status_t simulated_cost(const duet_coll_algo_t *al, const duet_coll_args_t *a,
                                    const duet_coll_model_t *m, double *us)
{
    /* a message costs alpha, and its bytes are copied in and out: half of beta each */
    double half_beta = duet_coll_copy_us_per_byte(m, a);
    duet_sim_model_t sm = {.alpha_us = m->alpha_us, .beta_us_per_byte = half_beta, .gamma_us_per_byte = half_beta,
                           .slots = m->slots > 0 ? m->slots : duet_coll_predict_slots(), .step_us = m->step_us,
                           .copy_us_per_byte = duet_coll_single_us_per_byte(m, a),
                           .reduce_us_per_byte = m->reduce_gbps > 0 ? 1 / (m->reduce_gbps * 1e3) : 0,
                           .calls = m->stream ? STREAM_CALLS : 1};
    if (m->net_alpha_us > 0 && m->net_beta_gbps > 0) { /* between hosts: the net pair, halved the same way */
        sm.net_alpha_us = m->net_alpha_us;
        sm.net_beta_us_per_byte = sm.net_gamma_us_per_byte = 0.5 / (m->net_beta_gbps * 1e3);
    }
    duet_sim_result_t res;
    duet_status_t st = duet_coll_simulate(al, a, 0, &sm, &res, NULL);
    if (st) return st;
    if (!res.ok) /* a schedule the simulator rejects never runs */
        return duet_error_set(DUET_ERR_INTERNAL, "%s %s: the simulator rejects its schedule: %s", al->name,
                              duet_coll_kind_name(a->kind), res.error);
    *us = res.per_call_us;
    return DUET_OK;
}

/* About the steps of all ranks' schedules of call a: n times the longer of rank 0's and rank
 * n-1's (building two schedules is cheap next to simulating them all); *st: a builder's
 * refusal. A call whose schedules would hold more than BUILD_STEPS_MAX steps per rank (one-
 * shot: about 2n per chunk) is built at a smaller count and its steps scaled up: building
 * them whole would take seconds and gigabytes, and only their number is wanted. */
#define BUILD_STEPS_MAX (1 << 18)
static double all_steps(const duet_coll_algo_t *al, const duet_coll_args_t *a, duet_status_t *st)
{
    double per_rank = (double)(a->count * a->elem / duet_coll_chunk(a) + 1) * 2.0 * a->nranks;
    duet_coll_args_t small = *a;
    double scale = 1;
    if (per_rank > BUILD_STEPS_MAX) {
        small.count = (size_t)((double)a->count * (BUILD_STEPS_MAX / per_rank));
        if (small.count < 1) small.count = 1;
        scale = (double)a->count / (double)small.count;
    }
    int most = 0;
    *st = DUET_OK;
    for (int r = 0; r < a->nranks && !*st; r += a->nranks > 1 ? a->nranks - 1 : 1) {
        duet_coll_args_t ra = small;
        ra.rank = r;
        duet_sched_t s;
        duet_sched_init(&s, r, a->nranks, a->elem);
        *st = al->build(&ra, &s);
        if (!*st && s.nsteps > most) most = s.nsteps;
        duet_sched_free(&s);
    }
    return (double)most * a->nranks * scale;
}

/* A call too big to simulate on few ranks: simulated at the largest count whose schedules
 * (this algorithm's, counted) fit SIMULATE_STEPS_MAX and at half of it, and extended along
 * the line through the two (past a few chunks a pipeline's time grows by the same amount per
 * chunk), so that it meets the simulator at its boundary. */
static duet_status_t extrapolated_cost(const duet_coll_algo_t *al, const duet_coll_args_t *a,
                                       const duet_coll_model_t *m, double *us)
{
    duet_status_t st;
    double steps = all_steps(al, a, &st);
    if (st) return st;
    if (steps <= SIMULATE_STEPS_MAX) return simulated_cost(al, a, m, us); /* it fits after all */
    duet_coll_args_t hi = *a, lo = *a;
    hi.count = (size_t)((double)a->count * (SIMULATE_STEPS_MAX / steps));
    while (hi.count >= 8 && all_steps(al, &hi, &st) > SIMULATE_STEPS_MAX && !st) hi.count = hi.count * 7 / 8;
    if (st) return st;
    if (hi.count < 8) return anchored_cost(al, a, m, us); /* not even a few elements: the form */
    lo.count = hi.count / 2;
    double t_hi, t_lo;
    st = simulated_cost(al, &hi, m, &t_hi);
    if (st == DUET_OK) st = simulated_cost(al, &lo, m, &t_lo);
    if (st) return st;
    double slope = (t_hi - t_lo) / (double)(hi.count - lo.count);
    *us = t_hi + (slope > 0 ? slope : 0) * (double)(a->count - hi.count);
    return DUET_OK;
}

/* Critical-path lower bounds a prediction never goes below: a ring allreduce's 2(n-1)
 * messages one after another, a ring allgather's or reduce-scatter's n-1, a chain's n-1, a
 * binary tree's depth (twice for an allreduce: up and down), recursive doubling's log2
 * rounds. (alpha: the cheapest link's.) */
static double lower_bound(const duet_coll_algo_t *al, const duet_coll_args_t *a, const duet_coll_model_t *m)
{
    long long n = a->nranks;
    if (n <= 1 || a->count == 0) return 0;
    double alpha = m->alpha_us;
    if (m->net_alpha_us > 0 && m->net_alpha_us < alpha) alpha = m->net_alpha_us;
    int depth = 0;
    while ((2LL << depth) <= n) depth++; /* floor(log2 n): the heap's deepest level, rd's rounds */
    const char *name = al->name;
    int allreduce = al->kind == DUET_COLL_ALLREDUCE;
    if (!strcmp(name, "ring")) return (allreduce ? 2.0 : 1.0) * (double)(n - 1) * alpha;
    if (!strcmp(name, "chain")) return (double)(n - 1) * alpha;
    if (!strcmp(name, "tree") || !strcmp(name, "dbtree")) return (allreduce ? 2.0 : 1.0) * depth * alpha;
    if (!strcmp(name, "rd") || !strcmp(name, "rhd")) return depth * alpha;
    return alpha; /* one message at least */
}

/* The closed form for n > SIMULATE_UP_TO ranks on one host, anchored at SIMULATE_UP_TO ranks:
 * scaled by what the simulator (or its extension in size) gives there over what the form
 * gives there, so that the two methods meet at their boundary; the forms' error changes
 * slowly with n (tests/unit/test_predict.c). Over several hosts the form alone (the first
 * ranks would not show the hosts' pattern). */
static duet_status_t anchored_cost(const duet_coll_algo_t *al, const duet_coll_args_t *a,
                                   const duet_coll_model_t *m, double *us)
{
    duet_status_t st = duet_coll_predict_analytic(al, a, m, us);
    if (st || (a->host && a->nhosts > 1) || a->nranks <= SIMULATE_UP_TO || a->count == 0) return st;
    duet_coll_args_t b = *a;
    b.nranks = SIMULATE_UP_TO;
    b.rank = 0;
    b.root = a->root % SIMULATE_UP_TO;
    double sim = 0, form = 0;
    duet_predict_how_t how = duet_coll_predict_how(&b);
    if (how == DUET_PREDICT_ANALYTIC) return DUET_OK; /* the form there too */
    st = how == DUET_PREDICT_SIMULATED ? simulated_cost(al, &b, m, &sim) : extrapolated_cost(al, &b, m, &sim);
    if (st == DUET_ERR_UNSUPPORTED) { /* refused at 16 ranks, not at n (rd allgather off powers of two) */
        duet_error_clear();
        return DUET_OK;
    }
    if (st == DUET_OK) st = duet_coll_predict_analytic(al, &b, m, &form);
    if (st) return st;
    if (sim > 0 && form > 0) *us *= sim / form;
    return DUET_OK;
}

duet_status_t duet_coll_predict_cost(const duet_coll_algo_t *al, const duet_coll_args_t *a,
                                     const duet_coll_model_t *m, duet_predict_how_t how, double *us)
{
    if (!al || !a || !m || !us || al->kind != a->kind || a->nranks < 1 || a->elem == 0)
        return duet_error_set(DUET_ERR_INVALID_ARG, "predict: no algorithm, shape or model, or they do not match");
    if (!(m->alpha_us > 0) || !(m->beta_gbps > 0))
        return duet_error_set(DUET_ERR_INVALID_ARG, "predict: alpha %g us and beta %g GB/s must be positive",
                              m->alpha_us, m->beta_gbps);
    if (al->build == duet_coll_oneshot_allreduce && a->nranks > 1 && a->count * a->elem <= DUET_LANE_BYTES &&
        !m->stream) {
        /* the latency lane runs it (duet_coll_lane.h): a lane message is one cache line where
         * a channel message is two (its slot and the acknowledgement), so half an alpha; and
         * a rank writes its line to the n-1 peers one after another (beta / 2 per byte, as
         * the simulator charges a sender) */
        double line = (double)sizeof(duet_lane_line_t), alpha = m->alpha_us, gbps = m->beta_gbps;
        for (int r = 1; r < a->nranks; r++) /* ranks on several hosts: a line crosses the net */
            if (duet_coll_across(a, 0, r)) {
                duet_coll_model_link(m, a, 0, r, &alpha, &gbps);
                break;
            }
        double h = 0.5 / (gbps * 1e3);
        *us = 0.5 * alpha + (double)(a->nranks - 1) * line * h + duet_coll_call_us(m, a->kind);
        return DUET_OK;
    }
    duet_status_t st;
    switch (how) {
    case DUET_PREDICT_SIMULATED: st = simulated_cost(al, a, m, us); break;
    case DUET_PREDICT_EXTRAPOLATED: st = extrapolated_cost(al, a, m, us); break;
    default: st = anchored_cost(al, a, m, us);
    }
    /* (a stream's call is not bound by its own critical path: it overlaps its neighbours) */
    double floor_us = st == DUET_OK && !m->stream ? lower_bound(al, a, m) : 0;
    if (st == DUET_OK && *us < floor_us) *us = floor_us;
    if (st == DUET_OK) *us += duet_coll_call_us(m, a->kind);
    return st;
}

duet_status_t duet_coll_predict_all(const duet_coll_args_t *a, const duet_coll_model_t *m, const char *only,
                                    duet_predict_t *out)
{
    memset(out, 0, sizeof *out);
    out->best = -1;
    if (!a || !m || !(m->alpha_us > 0) || !(m->beta_gbps > 0))
        return duet_error_set(DUET_ERR_INVALID_ARG, "predict: the model needs a positive alpha and beta");
    if ((int)a->kind < 0 || a->kind >= DUET_COLL_SEND)
        return duet_error_set(DUET_ERR_INVALID_ARG, "predict: kind %d has no algorithms to choose from", (int)a->kind);
    out->how = duet_coll_predict_how(a);
    for (int i = 0; i < duet_coll_nalgos && out->n < DUET_PREDICT_MAX; i++) {
        const duet_coll_algo_t *al = &duet_coll_algos[i];
        if (al->kind != a->kind || (only && only[0] && strcmp(only, al->name) != 0)) continue;
        duet_predict_entry_t *e = &out->e[out->n];
        e->algo = al;
        e->status = duet_coll_predict_cost(al, a, m, out->how, &e->us);
        if (e->status != DUET_OK) snprintf(e->why, sizeof e->why, "%s", duet_last_error());
        else if (out->best < 0 || e->us < out->e[out->best].us) out->best = out->n;
        out->n++;
    }
    return DUET_OK;
}
