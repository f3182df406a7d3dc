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

const char *duet_predict_how_name(duet_predict_how_t how)
{
    return how == DUET_PREDICT_SIMULATED ? "simulated" : how == DUET_PREDICT_PER_RANK ? "per-rank model" : "analytic";
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

/* Chunks of a rank's count (a block for the block collectives), plus one. */
static double chunks_of(const duet_coll_args_t *a)
{
    return (double)(a->count * a->elem / duet_coll_chunk(a) + 1);
}

duet_predict_how_t duet_coll_predict_how(const duet_coll_args_t *a)
{
    /* simulate when even the most message-hungry algorithm (one-shot: about 2 n^2 messages
     * per chunk in all) stays under SIMULATE_STEPS_MAX steps — a decision then costs at most
     * some tens of ms, once per call shape and communicator. (The chunks are counted over n
     * times a rank's bytes, as the tuner always has: generous for allreduce.) */
    double n = a->nranks, chunks = chunks_of(a);
    size_t all_bytes = a->count * a->elem * (size_t)a->nranks;
    double sim_chunks = (double)(all_bytes / duet_coll_chunk(a) + 1);
    if (a->nranks <= SIMULATE_UP_TO && sim_chunks * 2.0 * n * n <= SIMULATE_STEPS_MAX) return DUET_PREDICT_SIMULATED;
    /* build a few ranks' schedules while the widest (one-shot, direct: about 2 n steps per
     * chunk) stays small; past that, building alone would take seconds and gigabytes */
    if (a->nranks <= DUET_PREDICT_BUILD_RANKS && chunks * 2.0 * n <= DUET_PREDICT_BUILD_STEPS)
        return DUET_PREDICT_PER_RANK;
    return DUET_PREDICT_ANALYTIC;
}

/* The model's cost of one rank's schedule: each message pays alpha, each byte beta (those of
 * its link's class: duet_coll_model_link). */
static double sched_cost(const duet_sched_t *s, const duet_coll_args_t *a, const duet_coll_model_t *m)
{
    double msgs = 0, bytes = 0, net_msgs = 0, net_bytes = 0; /* by link class */
    int has_net = m->net_alpha_us > 0 && m->net_beta_gbps > 0;
    for (int i = 0; i < s->nsteps; i++) {
        const duet_step_t *st = &s->steps[i];
        if (st->kind == DUET_STEP_SEND) continue; /* count each transfer once, at its receiver */
        int net = has_net && (st->kind == DUET_STEP_RECV || st->kind == DUET_STEP_RECV_REDUCE) &&
                  duet_coll_across(a, s->rank, st->peer);
        if (st->kind != DUET_STEP_COPY) *(net ? &net_msgs : &msgs) += 1;
        *(net ? &net_bytes : &bytes) += (double)st->bytes;
    }
    double cost = msgs * m->alpha_us + bytes * (1.0 / (m->beta_gbps * 1e3));
    return has_net ? cost + net_msgs * m->net_alpha_us + net_bytes * (1.0 / (m->net_beta_gbps * 1e3)) : cost;
}

static duet_status_t simulated_cost(const duet_coll_algo_t *al, const duet_coll_args_t *a,
                                    const duet_coll_model_t *m, double *us)
{
    /* a message costs alpha, and its bytes are copied in and out: half of beta each */
    double half_beta = 0.5 / (m->beta_gbps * 1e3);
    duet_sim_model_t sm = {m->alpha_us, half_beta, half_beta, duet_coll_predict_slots(), 0, 0, 0};
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
    *us = res.time_us;
    return DUET_OK;
}

/* The largest per-rank cost over all ranks (up to 16) or a fixed sample of ranks. */
static duet_status_t per_rank_cost(const duet_coll_algo_t *al, const duet_coll_args_t *a,
                                   const duet_coll_model_t *m, double *us)
{
    int sample[6] = {0, 1, 2, a->nranks / 2, a->nranks - 2, a->nranks - 1}, nsample = 6;
    int all = a->nranks <= 16;
    *us = 0;
    for (int i = 0; i < (all ? a->nranks : nsample); i++) {
        duet_coll_args_t ra = *a;
        ra.rank = all ? i : sample[i];
        if (ra.rank < 0 || ra.rank >= a->nranks) continue;
        duet_sched_t s;
        duet_sched_init(&s, ra.rank, ra.nranks, ra.elem);
        duet_status_t st = al->build(&ra, &s);
        double c = st == DUET_OK ? sched_cost(&s, &ra, m) : 0;
        duet_sched_free(&s);
        if (st) return st;
        if (c > *us) *us = c;
    }
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
    if (al->build == duet_coll_oneshot_allreduce && a->nranks > 1 && a->count * a->elem <= DUET_LANE_BYTES) {
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
        *us = 0.5 * alpha + (double)(a->nranks - 1) * line * h;
        return DUET_OK;
    }
    switch (how) {
    case DUET_PREDICT_SIMULATED: return simulated_cost(al, a, m, us);
    case DUET_PREDICT_PER_RANK: return per_rank_cost(al, a, m, us);
    default: return duet_coll_predict_analytic(al, a, m, us);
    }
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
