/*
 * duet_coll_sim.c — the schedule simulator's entry points (model and checks in duet_coll_sim.h;
 * its state and its other files: duet_coll_sim_state.h).
 *
 * Why it is exact about deadlock and results although it runs only one order: under the
 * executor's rules running a step never stops another from running later (a link's slots
 * are taken in the order the sender's steps are listed; a message is taken by the one
 * receive it matches; the window only moves forward). So every order the executor can take
 * completes the same steps, and a schedule that deadlocks here deadlocks there. What may
 * differ between orders is data: two steps of a rank that touch the same memory without
 * being ordered by the rules — those pairs are found (races) by searching, for each
 * conflicting pair of accesses met while running, the graph of orderings backwards from
 * the later step; only steps that ran after the earlier one can lie on such a path, which
 * keeps the search short.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "coll/duet_coll_sim_state.h"

/* ---------------------------------------------------------------- the call's buffers */
/* Rank r's buffers as the caller lays them out (duet_coll_sim.h), in elements. */
static void layout(const duet_coll_args_t *a, int r, size_t tmp_bytes, rank_t *k)
{
    size_t c = a->count * a->elem, n = (size_t)a->nranks, sb = c, rb = c;
    switch (a->kind) {
    case DUET_COLL_BROADCAST: sb = r == a->root ? c : 0; break;
    case DUET_COLL_REDUCE: rb = r == a->root ? c : 0; break;
    case DUET_COLL_ALLGATHER: rb = n * c; break;
    case DUET_COLL_REDUCE_SCATTER: sb = n * c; break;
    case DUET_COLL_ALLTOALL: sb = rb = n * c; break;
    default: break;
    }
    size_t e = a->elem, send_at = 0, recv_at = 0, end;
    if (a->in_place && sb && rb) {
        if (a->kind == DUET_COLL_ALLGATHER) send_at = (size_t)r * c / e;
        if (a->kind == DUET_COLL_REDUCE_SCATTER) recv_at = (size_t)r * c / e;
        end = (sb > rb ? sb : rb) / e;
    } else {
        recv_at = sb / e;
        end = (sb + rb) / e;
    }
    k->base[DUET_BUF_SEND] = send_at, k->bytes[DUET_BUF_SEND] = sb;
    k->base[DUET_BUF_RECV] = recv_at, k->bytes[DUET_BUF_RECV] = rb;
    k->base[DUET_BUF_TMP] = end, k->bytes[DUET_BUF_TMP] = tmp_bytes;
    k->elems = end + (tmp_bytes + e - 1) / e;
}

/* Links: each step's place in its link's list; sends and receives matched in order. */
static int build_links(sim_t *s)
{
    int n = s->n;
    size_t links = (size_t)n * (size_t)n;
    s->soff = calloc(links + 1, sizeof(int));
    s->roff = calloc(links + 1, sizeof(int));
    s->slist = malloc(sizeof(int) * (size_t)(s->T ? s->T : 1));
    s->rlist = malloc(sizeof(int) * (size_t)(s->T ? s->T : 1));
    int *fill = calloc(2 * links + 1, sizeof(int));
    if (!s->soff || !s->roff || !s->slist || !s->rlist || !fill) {
        free(fill);
        return -1;
    }
    for (int r = 0; r < n; r++)
        for (int i = 0; i < s->sc[r].nsteps; i++) {
            const duet_step_t *st = &s->sc[r].steps[i];
            if (st->peer < 0 || st->peer >= n) continue; /* reported by duet_coll_sim_check_steps */
            if (is_send(st->kind)) s->soff[(size_t)r * (size_t)n + (size_t)st->peer + 1]++;
            else if (is_recv(st->kind)) s->roff[(size_t)st->peer * (size_t)n + (size_t)r + 1]++;
        }
    for (size_t L = 0; L < links; L++) s->soff[L + 1] += s->soff[L], s->roff[L + 1] += s->roff[L];
    for (int r = 0; r < n; r++)
        for (int i = 0; i < s->sc[r].nsteps; i++) {
            const duet_step_t *st = &s->sc[r].steps[i];
            int gid = s->gbase[r] + i, peer_ok = st->peer >= 0 && st->peer < n;
            if (is_send(st->kind) && peer_ok) {
                size_t L = (size_t)r * (size_t)n + (size_t)st->peer;
                s->pos[gid] = fill[L]++;
                s->slist[s->soff[L] + s->pos[gid]] = gid;
            } else if (is_recv(st->kind) && peer_ok) {
                size_t L = (size_t)st->peer * (size_t)n + (size_t)r;
                s->pos[gid] = fill[links + L]++;
                s->rlist[s->roff[L] + s->pos[gid]] = gid;
            } else {
                s->pos[gid] = -1;
            }
        }
    free(fill);
    return 0;
}

/* ---------------------------------------------------------------- entry points */
void duet_sim_model_default(duet_sim_model_t *m)
{
    *m = (duet_sim_model_t){0}; /* no net class, no terms beyond alpha-beta-gamma */
    m->alpha_us = 1.0;
    m->beta_us_per_byte = 1e-4;
    m->gamma_us_per_byte = 1e-5;
    long slots = duet_cfg()->coll_slots; /* as duet_coll_chan_create() settles it */
    m->slots = slots < 2 ? 2 : slots > 1 << 20 ? 1 << 20 : (int)slots;
}

const duet_coll_algo_t *duet_sim_find_algo(duet_coll_kind_t kind, const char *name)
{
    for (int i = 0; i < duet_coll_nalgos; i++)
        if (duet_coll_algos[i].kind == kind && strcmp(duet_coll_algos[i].name, name) == 0) return &duet_coll_algos[i];
    return NULL;
}

static duet_status_t check_shape(const duet_coll_args_t *a, const duet_sim_model_t *m, int check_data)
{
    if (!a || !m) return duet_error_set(DUET_ERR_INVALID_ARG, "simulator: NULL shape or model");
    if (m->calls < 0 || m->calls > DUET_SIM_MAX_CALLS || (m->calls > 1 && check_data))
        return duet_error_set(DUET_ERR_INVALID_ARG, "simulator: %d calls back to back%s (0 .. %d, data unchecked)",
                              m->calls, check_data ? " with the data checked" : "", DUET_SIM_MAX_CALLS);
    if ((int)a->kind < 0 || a->kind >= DUET_COLL_SEND)
        return duet_error_set(DUET_ERR_INVALID_ARG, "simulator: kind %d is not a collective it can simulate", (int)a->kind);
    if (a->nranks < 1 || a->nranks > DUET_SIM_MAX_RANKS || a->elem == 0 || m->slots < 1)
        return duet_error_set(DUET_ERR_INVALID_ARG, "simulator: %d ranks, %zu-byte elements, %d slots", a->nranks,
                              a->elem, m->slots);
    if ((a->kind == DUET_COLL_BROADCAST || a->kind == DUET_COLL_REDUCE) && (a->root < 0 || a->root >= a->nranks))
        return duet_error_set(DUET_ERR_INVALID_ARG, "simulator: root %d of %d ranks", a->root, a->nranks);
    for (int r = 0; a->host && r < a->nranks; r++)
        if (a->host[r] < 0 || a->host[r] >= a->nhosts)
            return duet_error_set(DUET_ERR_INVALID_ARG, "simulator: rank %d's host %d is outside [0, %d)", r,
                                  a->host[r], a->nhosts);
    return DUET_OK;
}

static void sim_free(sim_t *s)
{
    if (s->rk)
        for (int r = 0; r < s->n; r++) {
            free(s->rk[r].mem);
            free(s->rk[r].lastw);
            free(s->rk[r].readers);
        }
    if (s->payload)
        for (size_t i = 0; i < (size_t)s->n * (size_t)s->n * (size_t)s->m.slots; i++) free(s->payload[i]);
    for (int i = 0; i < s->nfree; i++) free(s->free_bufs[i]);
    free(s->free_bufs);
    free(s->payload);
    free(s->rk);
    free(s->stat);
    free(s->gbase);
    free(s->rank_of);
    free(s->pos);
    free(s->done);
    free(s->queued);
    free(s->bad);
    free(s->child_off);
    free(s->child);
    free(s->soff);
    free(s->slist);
    free(s->roff);
    free(s->rlist);
    free(s->sends_done);
    free(s->recvs_done);
    free(s->arrived);
    free(s->acked);
    free(s->ev);
    free(s->kick);
    free(s->seq);
    free(s->cand_mark);
    free(s->cand);
    free(s->vis);
    free(s->tgt);
    free(s->chain_tgt);
    free(s->stack);
    free(s->pool);
    free(s->call_len);
    free(s->call_end);
}

/* Allocates everything a run needs; -1 when out of memory. */
static int sim_alloc(sim_t *s)
{
    int n = s->n;
    size_t T = (size_t)s->T + 1, links = (size_t)n * (size_t)n;
    s->rk = calloc((size_t)n, sizeof *s->rk);
    s->stat = calloc((size_t)n, sizeof *s->stat);
    s->rank_of = malloc(sizeof(int) * T);
    s->pos = malloc(sizeof(int) * T);
    s->done = calloc(T, 1);
    s->queued = calloc(T, 1);
    s->bad = calloc(T, 1);
    s->child_off = calloc(T + 1, sizeof(int));
    s->child = malloc(sizeof(int) * T);
    s->sends_done = calloc(links, sizeof(int));
    s->recvs_done = calloc(links, sizeof(int));
    s->arrived = calloc(links, sizeof(int));
    s->acked = calloc(links, sizeof(int));
    s->kick = malloc(sizeof(int) * (size_t)n);
    s->seq = calloc(T, sizeof *s->seq);
    if (!s->rk || !s->stat || !s->rank_of || !s->pos || !s->done || !s->queued || !s->bad || !s->child_off ||
        !s->child || !s->sends_done || !s->recvs_done || !s->arrived || !s->acked || !s->kick || !s->seq)
        return -1;
    for (int r = 0; r < n; r++) {
        rank_t *k = &s->rk[r];
        layout(s->a, r, s->sc[r].tmp_bytes, k);
        for (int i = 0; i < s->sc[r].nsteps; i++) {
            int gid = s->gbase[r] + i;
            s->rank_of[gid] = r;
            int d = s->sc[r].steps[i].dep;
            if (d >= 0 && d < s->sc[r].nsteps) s->child_off[s->gbase[r] + d + 1]++;
        }
    }
    for (int g = 0; g < s->T; g++) s->child_off[g + 1] += s->child_off[g];
    int *fill = calloc(T, sizeof(int));
    if (!fill) return -1;
    for (int r = 0; r < n; r++)
        for (int i = 0; i < s->sc[r].nsteps; i++) {
            int d = s->sc[r].steps[i].dep;
            if (d < 0 || d >= s->sc[r].nsteps) continue;
            int parent = s->gbase[r] + d;
            s->child[s->child_off[parent] + fill[parent]++] = s->gbase[r] + i;
        }
    free(fill);
    return 0;
}

duet_status_t duet_sim_run(const duet_sched_t *scheds, const duet_coll_args_t *shape, int check_data,
                           const duet_sim_model_t *model, duet_sim_result_t *out, duet_sim_rank_t *ranks)
{
    duet_status_t st = check_shape(shape, model, check_data);
    if (st) return st;
    memset(out, 0, sizeof *out);
    out->ok = 1;
    sim_t s;
    memset(&s, 0, sizeof s);
    s.sc = scheds, s.a = shape, s.m = *model, s.n = shape->nranks, s.check = check_data != 0, s.out = out;
    s.msg_limit = shape->chunk ? (shape->chunk > shape->elem ? shape->chunk : shape->elem) : SIZE_MAX;
    s.gbase = malloc(sizeof(int) * ((size_t)s.n + 1));
    if (!s.gbase) return duet_error_set(DUET_ERR_NO_MEMORY, "simulator: out of host memory");
    s.gbase[0] = 0;
    for (int r = 0; r < s.n; r++) {
        if (scheds[r].nsteps > INT32_MAX - s.gbase[r]) {
            free(s.gbase);
            return duet_error_set(DUET_ERR_INVALID_ARG, "simulator: more than 2^31 steps");
        }
        s.gbase[r + 1] = s.gbase[r] + scheds[r].nsteps;
    }
    s.T = s.gbase[s.n];
    int *heap_space = NULL;
    if (sim_alloc(&s) || build_links(&s)) goto oom;
    if (s.m.calls > 1) { /* each schedule: `calls` copies of the rank's call, in a row */
        s.call_len = malloc(sizeof(int) * (size_t)s.n);
        s.call_end = calloc((size_t)s.m.calls, sizeof(double));
        if (!s.call_len || !s.call_end) goto oom;
        for (int r = 0; r < s.n; r++) {
            if (scheds[r].nsteps % s.m.calls) {
                free(heap_space);
                sim_free(&s);
                return duet_error_set(DUET_ERR_INVALID_ARG, "simulator: rank %d's %d steps are not %d calls", r,
                                      scheds[r].nsteps, s.m.calls);
            }
            s.call_len[r] = scheds[r].nsteps / s.m.calls;
            if (s.call_len[r] == 0) s.call_len[r] = 1; /* an empty schedule: no step to order */
        }
    }
    for (int r = 0; r < s.n; r++) s.stat[r].steps = scheds[r].nsteps;
    if (!duet_coll_sim_check_steps(&s)) goto finish; /* malformed beyond running */
    duet_coll_sim_check_matching(&s);
    for (int r = 0; r < s.n; r++)
        for (int i = 0; i < scheds[r].nsteps; i++) {
            const duet_step_t *x = &scheds[r].steps[i];
            if ((is_send(x->kind) || is_recv(x->kind)) && x->bytes / shape->elem > s.msg_elems)
                s.msg_elems = x->bytes / shape->elem;
        }
    heap_space = malloc(sizeof(int) * ((size_t)s.T + 1));
    if (!heap_space) goto oom;
    for (int r = 0; r < s.n; r++) s.rk[r].heap = heap_space + s.gbase[r];
    if (s.check) {
        size_t T = (size_t)s.T + 1;
        s.payload = calloc((size_t)s.n * (size_t)s.n * (size_t)s.m.slots, sizeof *s.payload);
        s.cand_mark = malloc(sizeof(int) * T);
        s.vis = calloc(T, sizeof *s.vis);
        s.tgt = calloc(T, sizeof *s.tgt);
        s.stack = malloc(sizeof(int) * (4 * T + 4));
        s.chain_tgt = calloc(2 * (size_t)s.n * (size_t)s.n, sizeof *s.chain_tgt);
        if (!s.payload || !s.cand_mark || !s.vis || !s.tgt || !s.stack || !s.chain_tgt) goto oom;
        for (size_t g = 0; g < T; g++) s.cand_mark[g] = -1;
        for (int r = 0; r < s.n; r++) {
            rank_t *k = &s.rk[r];
            size_t ne = k->elems ? k->elems : 1;
            k->mem = malloc(sizeof *k->mem * ne);
            k->lastw = malloc(sizeof *k->lastw * ne);
            k->readers = calloc(ne, sizeof *k->readers);
            if (!k->mem || !k->lastw || !k->readers) goto oom;
            for (size_t e = 0; e < k->elems; e++) k->mem[e] = tag(TAG_POISON, r, e), k->lastw[e] = -1;
            size_t sb = k->bytes[DUET_BUF_SEND] / shape->elem;
            for (size_t i = 0; i < sb; i++) k->mem[k->base[DUET_BUF_SEND] + i] = key(r, i);
        }
    }
    duet_coll_sim_run_events(&s);
    if (s.oom) goto oom;
    int stuck = 0;
    for (int r = 0; r < s.n; r++) stuck |= s.rk[r].first < scheds[r].nsteps;
    if (stuck) duet_coll_sim_report_deadlock(&s);
    else if (s.check) duet_coll_sim_check_results(&s);
    if (s.oom) goto oom;
finish:
    for (int r = 0; r < s.n; r++) {
        duet_sim_rank_t *rs = &s.stat[r];
        if (rs->finish_us > out->time_us || r == 0) out->time_us = rs->finish_us, out->slowest_rank = r;
        if (rs->msgs_sent > out->msgs_max) out->msgs_max = rs->msgs_sent;
        if (rs->bytes_sent > out->bytes_max) out->bytes_max = rs->bytes_sent;
        out->msgs_total += rs->msgs_sent, out->bytes_total += rs->bytes_sent;
        if (rs->steps > out->steps_max) out->steps_max = rs->steps;
    }
    out->per_call_us = s.call_end && out->ok ? s.call_end[s.m.calls - 1] - s.call_end[s.m.calls - 2] : out->time_us;
    if (ranks) memcpy(ranks, s.stat, sizeof *ranks * (size_t)s.n);
    free(heap_space);
    sim_free(&s);
    return DUET_OK;
oom:
    free(heap_space);
    sim_free(&s);
    return duet_error_set(DUET_ERR_NO_MEMORY, "simulator: out of host memory (%d ranks, %d steps)", shape->nranks,
                          s.T);
}

/* Schedule s, `calls` times in a row (calls back to back, duet_coll_sim.h). */
static duet_status_t repeat(duet_sched_t *s, int calls)
{
    duet_sched_t one = *s; /* the call's steps, handed over */
    duet_sched_init(s, one.rank, one.nranks, one.elem);
    s->tmp_bytes = one.tmp_bytes, s->recv_stable = one.recv_stable, s->name = one.name;
    duet_status_t st = DUET_OK;
    for (int k = 0; k < calls && st == DUET_OK; k++) st = duet_sched_append(s, &one, 0);
    duet_sched_free(&one);
    return st;
}

duet_status_t duet_coll_simulate(const duet_coll_algo_t *algo, const duet_coll_args_t *shape, int check_data,
                                 const duet_sim_model_t *model, duet_sim_result_t *out, duet_sim_rank_t *ranks)
{
    duet_status_t st = check_shape(shape, model, check_data);
    if (st) return st;
    if (!algo || algo->kind != shape->kind)
        return duet_error_set(DUET_ERR_INVALID_ARG, "simulator: the algorithm is not one for %s",
                              duet_coll_kind_name(shape->kind));
    int n = shape->nranks, refused = 0, failed = -1;
    duet_status_t fail_st = DUET_OK;
    char first_msg[256] = "";
    duet_sched_t *sc = calloc((size_t)n, sizeof *sc);
    if (!sc) return duet_error_set(DUET_ERR_NO_MEMORY, "simulator: out of host memory");
    for (int r = 0; r < n; r++) {
        duet_coll_args_t a = *shape;
        a.rank = r;
        duet_sched_init(&sc[r], r, n, shape->elem);
        duet_status_t b = algo->build(&a, &sc[r]);
        if (b == DUET_OK && model->calls > 1) b = repeat(&sc[r], model->calls);
        if (b == DUET_OK) continue;
        if (failed < 0) {
            failed = r, fail_st = b;
            snprintf(first_msg, sizeof first_msg, "%s", duet_last_error());
        }
        if (b == DUET_ERR_UNSUPPORTED) refused++;
        if (b == DUET_ERR_NO_MEMORY) break;
        duet_sched_free(&sc[r]); /* an empty schedule in its place */
        duet_sched_init(&sc[r], r, n, shape->elem);
    }
    if (fail_st == DUET_ERR_NO_MEMORY) st = duet_error_set(DUET_ERR_NO_MEMORY, "%s", first_msg);
    else if (refused == n) st = duet_error_set(DUET_ERR_UNSUPPORTED, "%s", first_msg);
    else {
        st = duet_sim_run(sc, shape, check_data, model, out, ranks);
        if (st == DUET_OK && failed >= 0) {
            char keep[sizeof out->error];
            memcpy(keep, out->error, sizeof keep);
            out->error[0] = '\0';
            sim_t s = {.out = out};
            duet_coll_sim_report(&s, DUET_SIM_ERR_BUILD, "build: %s %s failed on rank %d (%s): %s", algo->name,
                                 duet_coll_kind_name(shape->kind), failed, duet_status_str(fail_st), first_msg);
            size_t used = strlen(out->error);
            if (keep[0] && used + 2 < sizeof out->error)
                snprintf(out->error + used, sizeof out->error - used, "\n%s", keep);
        }
    }
    for (int r = 0; r < n; r++) duet_sched_free(&sc[r]);
    free(sc);
    return st;
}
