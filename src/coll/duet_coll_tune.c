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
#include <string.h>
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

duet_status_t duet_coll_tune_pick(duet_comm_t c, const duet_coll_args_t *a, duet_datatype_t dt,
                                  const duet_coll_algo_t **algo, duet_sched_t *sched)
{
    char forced[64];
    forced_name(a->kind, forced, sizeof forced);
    const char *kname = duet_coll_kind_name(a->kind);
    const duet_coll_algo_t *best = NULL;
    double best_cost = 0;
    char line[512];
    int used = snprintf(line, sizeof line, "%s %zu bytes %s:", kname, a->count * a->elem, duet_dtype_name(dt));
    for (int i = 0; i < duet_coll_nalgos; i++) {
        const duet_coll_algo_t *al = &duet_coll_algos[i];
        if (al->kind != a->kind) continue;
        if (forced[0] && strcmp(forced, al->name) != 0) continue;
        duet_sched_t s;
        duet_sched_init(&s, a->rank, a->nranks, a->elem);
        duet_status_t st = al->build(a, &s);
        if (st == DUET_OK) {
            double cost = model_cost(&s, 0.5, 1.0 / 8000.0);
            if (used < (int)sizeof line)
                used += snprintf(line + used, sizeof line - (size_t)used, " %s=%.2fus", al->name, cost);
            if (!best || cost < best_cost) {
                if (best) duet_sched_free(sched);
                best = al;
                best_cost = cost;
                *sched = s; /* kept: the caller runs it */
                continue;
            }
        } else if (forced[0]) {
            duet_sched_free(&s);
            return DUET_FAIL(DUET_ERR_INVALID_ARG, TUNE, "DUET_ALGO forces %s for %s, which cannot run it: %s",
                             forced, kname, duet_last_error());
        }
        duet_sched_free(&s);
    }
    if (!best) {
        if (forced[0])
            return DUET_FAIL(DUET_ERR_INVALID_ARG, TUNE, "DUET_ALGO forces \"%s\" for %s: no such algorithm "
                             "for this collective", forced, kname);
        return DUET_FAIL(DUET_ERR_INTERNAL, TUNE, "no algorithm can run %s", kname);
    }
    DUET_LOG(INFO, TUNE, "%s -> %s%s", line, best->name, forced[0] ? " (forced by DUET_ALGO)" : "");
    *algo = best;
    return DUET_OK;
}
