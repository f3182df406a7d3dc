/*
 * The tuner: which algorithm runs a collective.
 *
 * DUET_ALGO forces a choice, for all collectives ("ring") or per collective
 * ("allreduce:tree,broadcast:ring"); a forced algorithm that cannot run the call is an
 * error, never a silent fallback. Otherwise every algorithm of the collective builds this
 * rank's schedule and is costed as  messages x alpha + bytes x beta  (alpha, beta of the
 * transport), and the cheapest wins. DUET_DEBUG=INFO DUET_DEBUG_SUBSYS=TUNE logs each pick.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "coll/duet_coll_sim.h"
#include "coll/duet_coll_tune.h"

const duet_coll_algo_t duet_coll_algos[] = {
    {"ring", DUET_COLL_ALLREDUCE, duet_coll_ring_allreduce},
    {"tree", DUET_COLL_ALLREDUCE, duet_coll_tree_allreduce},
    {"dbtree", DUET_COLL_ALLREDUCE, duet_coll_dbtree_allreduce},
    {"rd", DUET_COLL_ALLREDUCE, duet_coll_rd_allreduce},
    {"rhd", DUET_COLL_ALLREDUCE, duet_coll_rhd_allreduce},
    {"oneshot", DUET_COLL_ALLREDUCE, duet_coll_oneshot_allreduce},
    {"twoshot", DUET_COLL_ALLREDUCE, duet_coll_twoshot_allreduce},
    {"chain", DUET_COLL_BROADCAST, duet_coll_chain_broadcast},
    {"tree", DUET_COLL_BROADCAST, duet_coll_tree_broadcast},
    {"chain", DUET_COLL_REDUCE, duet_coll_chain_reduce},
    {"tree", DUET_COLL_REDUCE, duet_coll_tree_reduce},
    {"ring", DUET_COLL_ALLGATHER, duet_coll_ring_allgather},
    {"rd", DUET_COLL_ALLGATHER, duet_coll_rd_allgather},
    {"direct", DUET_COLL_ALLGATHER, duet_coll_direct_allgather},
    {"ring", DUET_COLL_REDUCE_SCATTER, duet_coll_ring_reduce_scatter},
    {"rhd", DUET_COLL_REDUCE_SCATTER, duet_coll_rhd_reduce_scatter},
    {"direct", DUET_COLL_REDUCE_SCATTER, duet_coll_direct_reduce_scatter},
    {"pairwise", DUET_COLL_ALLTOALL, duet_coll_pairwise_alltoall},
};
const int duet_coll_nalgos = (int)DUET_ARRAY_LEN(duet_coll_algos);

/* The algorithm DUET_ALGO names for `kind`, "" when it names none. */
static void forced_name(duet_coll_kind_t kind, char *out, size_t len)
{
    const char *spec = duet_cfg()->algo;
    out[0] = '\0';
    const char *kname = duet_coll_kind_name(kind);
    char buf[256];
    snprintf(buf, sizeof buf, "%s", spec);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(tok, ':');
        if (!colon) {
            snprintf(out, len, "%s", tok); /* applies to every collective unless named */
            continue;
        }
        *colon = '\0';
        if (strcmp(tok, kname) == 0) {
            snprintf(out, len, "%s", colon + 1);
            return;
        }
    }
}

/* The model's cost of this rank's schedule: each message pays alpha, each byte beta. */
static double model_cost(const duet_sched_t *s, double alpha_us, double beta_us_per_byte)
{
    double msgs = 0, bytes = 0;
    for (int i = 0; i < s->nsteps; i++) {
        const duet_step_t *st = &s->steps[i];
        if (st->kind == DUET_STEP_SEND) continue; /* count each transfer once, at its receiver */
        if (st->kind != DUET_STEP_COPY) msgs++;
        bytes += (double)st->bytes;
    }
    return msgs * alpha_us + bytes * beta_us_per_byte;
}

/* Up to this many ranks (and steps, below) the tuner simulates every rank's schedule
 * together with src/coll/duet_coll_sim.c — the critical path: a tree's hops add up, a
 * one-shot's messages overlap; past it, the cost is the largest per-rank cost over a fixed
 * sample of ranks. */
#define SIMULATE_UP_TO 16
#define SIMULATE_STEPS_MAX 40000 /* about the steps of all ranks, for the widest algorithm */

/* One model for all candidates of a decision: simulate when the call is small enough that
 * even the most message-hungry algorithm (one-shot: about 2 n^2 messages per chunk) stays
 * under SIMULATE_STEPS_MAX steps — a decision then costs at most some tens of ms, once per
 * call shape and communicator. */
static int worth_simulating(const duet_coll_args_t *a)
{
    size_t bytes = a->count * a->elem * (size_t)a->nranks, chunk = duet_coll_chunk(a);
    double chunks = (double)(bytes / chunk + 1);
    return a->nranks <= SIMULATE_UP_TO && chunks * 2.0 * a->nranks * a->nranks <= SIMULATE_STEPS_MAX;
}

/* The model's cost of an algorithm for this call, the same number on every rank (so every
 * rank picks the same algorithm). */
static duet_status_t algo_cost(const duet_coll_algo_t *al, const duet_coll_args_t *a, const duet_coll_model_t *m,
                               int simulate, double *cost)
{
    if (simulate) {
        /* a message costs alpha, and its bytes are copied in and out: half of beta each */
        duet_sim_model_t sm = {m->alpha_us, 0.5 / (m->beta_gbps * 1e3), 0.5 / (m->beta_gbps * 1e3),
                               duet_cfg()->coll_slots < 2 ? 2 : (int)duet_cfg()->coll_slots};
        duet_sim_result_t res;
        duet_status_t st = duet_coll_simulate(al, a, 0, &sm, &res, NULL);
        if (st) return st;
        if (!res.ok) /* a schedule the simulator rejects never runs */
            return duet_error_set(DUET_ERR_INTERNAL, "%s %s: the simulator rejects its schedule: %s", al->name,
                                  duet_coll_kind_name(a->kind), res.error);
        *cost = res.time_us;
        return DUET_OK;
    }
    int sample[6] = {0, 1, 2, a->nranks / 2, a->nranks - 2, a->nranks - 1}, nsample = 6;
    int all = a->nranks <= 16;
    *cost = 0;
    for (int i = 0; i < (all ? a->nranks : nsample); i++) {
        duet_coll_args_t ra = *a;
        ra.rank = all ? i : sample[i];
        if (ra.rank < 0 || ra.rank >= a->nranks) continue;
        duet_sched_t s;
        duet_sched_init(&s, ra.rank, ra.nranks, ra.elem);
        duet_status_t st = al->build(&ra, &s);
        double c = st == DUET_OK ? model_cost(&s, m->alpha_us, 1.0 / (m->beta_gbps * 1e3)) : 0;
        duet_sched_free(&s);
        if (st) return st;
        if (c > *cost) *cost = c;
    }
    return DUET_OK;
}

/* Decisions already taken on this communicator, by call shape. */
#define TUNE_CACHE 64
#define CACHED_STEPS_MAX 4096 /* schedules up to this size are kept for reuse */
struct duet_coll_tune_cache {
    struct {
        uint64_t key1, key2;
        int algo;           /* index in duet_coll_algos, -1: empty */
        duet_sched_t sched; /* this rank's schedule for the shape (nsteps 0: not kept) */
        char why[512];      /* the TUNE log line: each candidate's predicted time, the choice */
    } e[TUNE_CACHE];
};

void duet_coll_tune_free(duet_comm_t c)
{
    if (c->tune)
        for (int i = 0; i < TUNE_CACHE; i++) duet_sched_free(&c->tune->e[i].sched);
    free(c->tune);
    c->tune = NULL;
}

duet_status_t duet_coll_tune_pick(duet_comm_t c, const duet_coll_args_t *a, duet_datatype_t dt,
                                  const duet_coll_algo_t **algo, duet_sched_t *sched, const duet_sched_t **plan)
{
    const char *kname = duet_coll_kind_name(a->kind);
    uint64_t key1 = ((uint64_t)a->kind << 56) ^ (a->count * a->elem), key2 = ((uint64_t)(uint32_t)a->root << 32) |
                    ((uint64_t)a->in_place << 16) | (uint64_t)a->elem;
    size_t slot = (size_t)((key1 * 0x9e3779b97f4a7c15ull) ^ key2) % TUNE_CACHE;
    if (!c->tune && (c->tune = calloc(1, sizeof *c->tune)))
        for (int i = 0; i < TUNE_CACHE; i++) c->tune->e[i].algo = -1;
    const duet_coll_algo_t *best = NULL;
    if (c->tune && c->tune->e[slot].algo >= 0 && c->tune->e[slot].key1 == key1 && c->tune->e[slot].key2 == key2) {
        best = &duet_coll_algos[c->tune->e[slot].algo];
        DUET_LOG(INFO, TUNE, "%s", c->tune->e[slot].why); /* one line per call, cached or not */
        if (c->tune->e[slot].sched.nsteps) { /* the same call again: run the same schedule */
            *algo = best;
            *plan = &c->tune->e[slot].sched;
            return DUET_OK;
        }
    }
    if (!best) {
        duet_coll_model_t model;
        duet_status_t mst = duet_coll_model_get(c, &model);
        if (mst) return mst;
        char forced[64];
        forced_name(a->kind, forced, sizeof forced);
        int simulate = worth_simulating(a);
        double best_cost = 0;
        char line[512], refused[256] = "";
        duet_status_t refusal = DUET_OK;
        int used = snprintf(line, sizeof line, "%s %zu bytes %s, %d ranks, %s:", kname, a->count * a->elem,
                            duet_dtype_name(dt), a->nranks, simulate ? "simulated" : "per-rank model");
        for (int i = 0; i < duet_coll_nalgos; i++) {
            const duet_coll_algo_t *al = &duet_coll_algos[i];
            if (al->kind != a->kind || (forced[0] && strcmp(forced, al->name) != 0)) continue;
            double cost = 0;
            duet_status_t st = algo_cost(al, a, &model, simulate, &cost);
            if (st != DUET_OK) {
                if (forced[0]) {
                    char why[256]; /* the builder's reason; the message below overwrites it */
                    snprintf(why, sizeof why, "%s", duet_last_error());
                    return DUET_FAIL(DUET_ERR_INVALID_ARG, TUNE, "DUET_ALGO forces %s for %s, which cannot run "
                                     "it: %s", forced, kname, why);
                }
                refusal = st;
                snprintf(refused, sizeof refused, "%s", duet_last_error());
                continue;
            }
            if (used < (int)sizeof line)
                used += snprintf(line + used, sizeof line - (size_t)used, " %s=%.2fus", al->name, cost);
            if (!best || cost < best_cost) {
                best = al;
                best_cost = cost;
            }
        }
        if (!best) {
            if (forced[0])
                return DUET_FAIL(DUET_ERR_INVALID_ARG, TUNE, "DUET_ALGO forces \"%s\" for %s: no such "
                                 "algorithm for this collective", forced, kname);
            return DUET_FAIL(refusal ? refusal : DUET_ERR_INTERNAL, TUNE, "no algorithm can run this %s: %s", kname,
                             refused[0] ? refused : "none is registered");
        }
        if (used < (int)sizeof line)
            snprintf(line + used, sizeof line - (size_t)used, " -> %s%s", best->name,
                     forced[0] ? " (forced by DUET_ALGO)" : "");
        DUET_LOG(INFO, TUNE, "%s", line);
        if (c->tune) snprintf(c->tune->e[slot].why, sizeof c->tune->e[slot].why, "%s", line);
    }
    duet_sched_init(sched, a->rank, a->nranks, a->elem);
    duet_status_t st = best->build(a, sched);
    *algo = best;
    *plan = sched;
    if (st) {
        duet_sched_free(sched);
        return st;
    }
    if (c->tune) { /* remember the decision, and a small schedule itself (the cache owns it) */
        duet_sched_free(&c->tune->e[slot].sched);
        c->tune->e[slot].key1 = key1;
        c->tune->e[slot].key2 = key2;
        c->tune->e[slot].algo = (int)(best - duet_coll_algos);
        if (sched->nsteps > 0 && sched->nsteps <= CACHED_STEPS_MAX) {
            c->tune->e[slot].sched = *sched;
            duet_sched_init(sched, a->rank, a->nranks, a->elem); /* ownership moved */
            *plan = &c->tune->e[slot].sched;
        }
    }
    return DUET_OK;
}
