/*
 * duet_coll_sim_check.c — the schedule simulator's checks and their reports (duet_coll_sim.h,
 * "What is checked"): every step and buffer range before running, sends matched with
 * receives, a deadlock explained rank by rank, every result element against the reference.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "coll/duet_coll_sim_state.h"

/* ---------------------------------------------------------------- reports */
__attribute__((format(printf, 3, 4))) void duet_coll_sim_report(sim_t *s, unsigned kind, const char *fmt, ...)
{
    duet_sim_result_t *o = s->out;
    o->errors |= kind;
    o->ok = 0;
    size_t used = strlen(o->error), cap = sizeof o->error;
    o->nerrors++;
    if (used + 8 >= cap) return;
    if (used) o->error[used++] = '\n', o->error[used] = '\0';
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(o->error + used, cap - used, fmt, ap);
    va_end(ap);
    if (k > 0 && used + (size_t)k >= cap) memcpy(o->error + cap - 4, "...", 4);
}

const char *duet_coll_sim_buf_name(int b)
{
    static const char *names[] = {"send", "recv", "tmp"};
    return b >= 0 && b < DUET_BUF_COUNT ? names[b] : "?";
}

/* "rank 2 step 7 (send recv[0,64) to 3)" */
const char *duet_coll_sim_step_text(const sim_t *s, int gid, char *b, size_t cap)
{
    int r = s->rank_of[gid], i = gid - s->gbase[r];
    const duet_step_t *st = &s->sc[r].steps[i];
    size_t so = st->src_off, dof = st->dst_off, n = st->bytes;
    switch (st->kind) {
    case DUET_STEP_COPY:
        snprintf(b, cap, "rank %d step %d (copy %s[%zu,%zu) -> %s[%zu,%zu))", r, i, duet_coll_sim_buf_name(st->src_buf),
                 so, so + n, duet_coll_sim_buf_name(st->dst_buf), dof, dof + n);
        break;
    case DUET_STEP_REDUCE:
        snprintf(b, cap, "rank %d step %d (reduce %s[%zu,%zu) into %s[%zu,%zu))", r, i,
                 duet_coll_sim_buf_name(st->src_buf), so, so + n, duet_coll_sim_buf_name(st->dst_buf), dof, dof + n);
        break;
    case DUET_STEP_SEND:
        snprintf(b, cap, "rank %d step %d (send #%d %s[%zu,%zu) to %d)", r, i, s->pos[gid],
                 duet_coll_sim_buf_name(st->src_buf), so, so + n, st->peer);
        break;
    case DUET_STEP_RECV:
        snprintf(b, cap, "rank %d step %d (recv #%d from %d into %s[%zu,%zu))", r, i, s->pos[gid], st->peer,
                 duet_coll_sim_buf_name(st->dst_buf), dof, dof + n);
        break;
    default:
        snprintf(b, cap, "rank %d step %d (recv-reduce #%d from %d: %s[%zu,%zu) + message -> %s[%zu,%zu))", r, i,
                 s->pos[gid], st->peer, duet_coll_sim_buf_name(st->src_buf), so, so + n,
                 duet_coll_sim_buf_name(st->dst_buf), dof, dof + n);
    }
    return b;
}

/* ---------------------------------------------------------------- checks before running */
static int range_ok(const rank_t *k, int buf, size_t off, size_t bytes)
{
    return off <= k->bytes[buf] && bytes <= k->bytes[buf] - off;
}

/* Well-formedness and ranges of every step; 0 when the schedules cannot be run at all. */
int duet_coll_sim_check_steps(sim_t *s)
{
    int runnable = 1;
    char t[192];
    size_t e = s->a->elem;
    for (int r = 0; r < s->n; r++) {
        const duet_sched_t *sc = &s->sc[r];
        rank_t *k = &s->rk[r];
        for (int i = 0; i < sc->nsteps; i++) {
            const duet_step_t *st = &sc->steps[i];
            int gid = s->gbase[r] + i, kind = st->kind;
            if (kind > DUET_STEP_RECV_REDUCE) {
                duet_coll_sim_report(s, DUET_SIM_ERR_STEP, "rank %d step %d: unknown kind %d", r, i, kind);
                runnable = 0;
                continue;
            }
            if (st->call != 0) {
                duet_coll_sim_report(s, DUET_SIM_ERR_STEP, "rank %d step %d: call %d (groups are not simulated)", r, i,
                                     st->call);
                runnable = 0;
            }
            if ((is_send(kind) || is_recv(kind)) && (st->peer < 0 || st->peer >= s->n)) {
                duet_coll_sim_report(s, DUET_SIM_ERR_STEP, "rank %d step %d: peer %d is not a rank of [0, %d)", r, i,
                                     st->peer, s->n);
                runnable = 0;
            }
            if (st->dep < -1 || st->dep >= sc->nsteps) {
                duet_coll_sim_report(s, DUET_SIM_ERR_STEP, "rank %d step %d: dep %d is no step of its %d", r, i,
                                     st->dep, sc->nsteps);
                runnable = 0;
            } else if (st->dep >= i) {
                duet_coll_sim_report(s, DUET_SIM_ERR_STEP, "rank %d step %d: dep %d is not an earlier step", r, i,
                                     st->dep);
            }
            int sbuf = reads_src(kind) ? st->src_buf : 0, dbuf = writes_dst(kind) ? st->dst_buf : 0;
            if (sbuf >= DUET_BUF_COUNT || dbuf >= DUET_BUF_COUNT) {
                duet_coll_sim_report(s, DUET_SIM_ERR_STEP, "rank %d step %d: buffer %d is none of send, recv, tmp", r,
                                     i, sbuf >= DUET_BUF_COUNT ? sbuf : dbuf);
                runnable = 0;
                continue;
            }
            if (!runnable) continue;
#define TEXT duet_coll_sim_step_text(s, gid, t, sizeof t)
            if (st->bytes % e || (reads_src(kind) && st->src_off % e) || (writes_dst(kind) && st->dst_off % e)) {
                duet_coll_sim_report(s, DUET_SIM_ERR_STEP, "%s: offsets and sizes must be whole %zu-byte elements",
                                     TEXT, e);
                s->bad[gid] = 1;
            }
            if ((is_send(kind) || is_recv(kind)) && st->bytes > s->msg_limit) {
                duet_coll_sim_report(s, DUET_SIM_ERR_STEP, "%s: a %zu-byte message, larger than the chunk (%zu)", TEXT,
                                     st->bytes, s->msg_limit);
            }
            if (writes_dst(kind) && dbuf == DUET_BUF_SEND)
                duet_coll_sim_report(s, DUET_SIM_ERR_STEP, "%s writes into the caller's send buffer (read-only)", TEXT);
            if ((reads_src(kind) && !range_ok(k, sbuf, st->src_off, st->bytes)) ||
                (writes_dst(kind) && !range_ok(k, dbuf, st->dst_off, st->bytes))) {
                int b = reads_src(kind) && !range_ok(k, sbuf, st->src_off, st->bytes) ? sbuf : dbuf;
                duet_coll_sim_report(s, DUET_SIM_ERR_RANGE, "%s: beyond the %zu bytes of rank %d's %s buffer", TEXT,
                                     k->bytes[b], r, duet_coll_sim_buf_name(b));
                s->bad[gid] = 1;
            }
#undef TEXT
        }
    }
    return runnable;
}

/* For every ordered pair: as many sends as receives, each pair of equal size. */
void duet_coll_sim_check_matching(sim_t *s)
{
    char t1[192], t2[192];
    for (int a = 0; a < s->n; a++)
        for (int b = 0; b < s->n; b++) {
            size_t L = (size_t)a * (size_t)s->n + (size_t)b;
            int ns = s->soff[L + 1] - s->soff[L], nr = s->roff[L + 1] - s->roff[L];
            for (int k = 0; k < ns && k < nr; k++) {
                int sg = s->slist[s->soff[L] + k], rg = s->rlist[s->roff[L] + k];
                size_t sb = s->sc[a].steps[sg - s->gbase[a]].bytes, rb = s->sc[b].steps[rg - s->gbase[b]].bytes;
                if (sb != rb)
                    duet_coll_sim_report(s, DUET_SIM_ERR_MATCH, "size mismatch: %s sends %zu B, %s expects %zu B",
                                         duet_coll_sim_step_text(s, sg, t1, sizeof t1), sb,
                                         duet_coll_sim_step_text(s, rg, t2, sizeof t2), rb);
            }
            if (ns > nr)
                duet_coll_sim_report(s, DUET_SIM_ERR_MATCH,
                                     "unmatched: rank %d sends %d messages to %d, which receives %d from it "
                                     "(first left over: %s)",
                                     a, ns, b, nr,
                                     duet_coll_sim_step_text(s, s->slist[s->soff[L] + nr], t1, sizeof t1));
            else if (nr > ns)
                duet_coll_sim_report(s, DUET_SIM_ERR_MATCH,
                                     "unmatched: rank %d receives %d messages from %d, which sends %d to it "
                                     "(first left over: %s)",
                                     b, nr, a, ns,
                                     duet_coll_sim_step_text(s, s->rlist[s->roff[L] + ns], t1, sizeof t1));
        }
}

/* ---------------------------------------------------------------- deadlock */
/* Where a step another rank waits for stands: beyond its rank's window, or blocked too. */
static void other_side(const sim_t *s, int gid, char *b, size_t cap)
{
    int r = s->rank_of[gid], i = gid - s->gbase[r];
    if (i >= s->rk[r].first + DUET_SIM_WINDOW)
        snprintf(b, cap, "; that is its step %d, beyond the %d-step window (its first unfinished step is %d)", i,
                 DUET_SIM_WINDOW, s->rk[r].first);
    else
        snprintf(b, cap, "; that is its step %d, blocked as well", i);
}

/* Why rank r cannot go on: the step it waits on and the rank it waits for. */
static void explain_stuck(sim_t *s, int r, char *b, size_t cap, int *waits_for)
{
    rank_t *k = &s->rk[r];
    int n = s->n, gid = s->gbase[r] + k->first;
    char t[192], o[128];
    *waits_for = -1;
    for (int iter = 0; iter < 4 * s->T + 8; iter++) {
        const duet_step_t *st = &s->sc[r].steps[gid - s->gbase[r]];
        int i = gid - s->gbase[r], p = s->pos[gid];
        duet_coll_sim_step_text(s, gid, t, sizeof t);
        if (i >= k->first + DUET_SIM_WINDOW) {
            snprintf(b, cap, "%s lies beyond the %d-step window", t, DUET_SIM_WINDOW);
            return;
        }
        if (st->dep >= 0 && !s->done[s->gbase[r] + st->dep]) {
            gid = s->gbase[r] + st->dep;
            continue;
        }
        if (is_send(st->kind)) {
            size_t L = (size_t)r * (size_t)n + (size_t)st->peer;
            if (p != s->sends_done[L]) {
                gid = s->slist[s->soff[L] + s->sends_done[L]];
                continue;
            }
            *waits_for = st->peer;
            int m = p - s->m.slots, nr = s->roff[L + 1] - s->roff[L];
            if (m < nr) other_side(s, s->rlist[s->roff[L] + m], o, sizeof o);
            else snprintf(o, sizeof o, "; it never receives it");
            snprintf(b, cap, "%s waits for rank %d to consume message #%d (%d slots full)%s", t, st->peer, m,
                     s->m.slots, o);
            return;
        }
        if (is_recv(st->kind)) {
            size_t L = (size_t)st->peer * (size_t)n + (size_t)r;
            if (p != s->recvs_done[L]) {
                gid = s->rlist[s->roff[L] + s->recvs_done[L]];
                continue;
            }
            *waits_for = st->peer;
            if (p >= s->soff[L + 1] - s->soff[L]) {
                snprintf(b, cap, "%s waits for rank %d, which never sends it", t, st->peer);
            } else {
                other_side(s, s->slist[s->soff[L] + p], o, sizeof o);
                snprintf(b, cap, "%s waits for rank %d to send it%s", t, st->peer, o);
            }
            return;
        }
        snprintf(b, cap, "%s cannot run", t);
        return;
    }
    snprintf(b, cap, "rank %d: (waiting chain too long)", r);
}

void duet_coll_sim_report_deadlock(sim_t *s)
{
    int stuck = 0, first = -1;
    char list[256] = "", why[448] = "";
    size_t used = 0;
    for (int r = 0; r < s->n; r++) {
        if (s->rk[r].first >= s->sc[r].nsteps) continue;
        int q;
        char b[448];
        explain_stuck(s, r, b, sizeof b, &q);
        if (stuck++ == 0) first = r, snprintf(why, sizeof why, "%s", b);
        if (used + 16 < sizeof list) {
            int w = q >= 0 ? snprintf(list + used, sizeof list - used, " %d->%d", r, q)
                           : snprintf(list + used, sizeof list - used, " %d", r);
            used += w > 0 ? (size_t)w : 0;
        }
    }
    if (used >= sizeof list) used = sizeof list - 1;
    duet_coll_sim_report(s, DUET_SIM_ERR_DEADLOCK,
                         "deadlock: %d of %d ranks stuck (rank->rank it waits for:%s); rank %d: %s", stuck, s->n, list,
                         first, why);
}

/* ---------------------------------------------------------------- results */
/* What a wrong element holds, as far as it can be told. */
static void diagnose(const sim_t *s, uint64_t got, uint64_t want, int reduce, size_t src_i, char *b, size_t cap)
{
    uint64_t u = unmix(got);
    if (u >> 56 == TAG_POISON) {
        snprintf(b, cap, "never written");
        return;
    }
    if (u >> 56 == TAG_IN && ((u >> 32) & 0xffffff) < (uint64_t)s->n) {
        snprintf(b, cap, "holds rank %d's input element %llu alone", (int)((u >> 32) & 0xffffff),
                 (unsigned long long)(u & 0xffffffffu));
        return;
    }
    if (reduce) {
        uint64_t d = got - want;
        for (int r = 0; r < s->n; r++) {
            if (d == key(r, src_i)) {
                snprintf(b, cap, "rank %d's contribution counted twice", r);
                return;
            }
            if (d == (uint64_t)0 - key(r, src_i)) {
                snprintf(b, cap, "rank %d's contribution missing", r);
                return;
            }
        }
    }
    snprintf(b, cap, "wrong value");
}

void duet_coll_sim_check_results(sim_t *s)
{
    const duet_coll_args_t *a = s->a;
    size_t count = a->count;
    int n = s->n, kind = a->kind, reduce = kind == DUET_COLL_ALLREDUCE || kind == DUET_COLL_REDUCE ||
                                           kind == DUET_COLL_REDUCE_SCATTER;
    size_t nsum = kind == DUET_COLL_REDUCE_SCATTER ? count * (size_t)n : reduce ? count : 0;
    uint64_t *sum = calloc(nsum ? nsum : 1, sizeof *sum);
    if (!sum) {
        s->oom = 1;
        return;
    }
    for (size_t i = 0; i < nsum; i++)
        for (int r = 0; r < n; r++) sum[i] += key(r, i);
    for (int q = 0; q < n; q++) {
        rank_t *k = &s->rk[q];
        size_t outs = k->bytes[DUET_BUF_RECV] / a->elem, wrong = 0;
        if (kind == DUET_COLL_REDUCE && q != a->root) continue;
        const uint64_t *out = k->mem + k->base[DUET_BUF_RECV];
        for (size_t p = 0; p < outs; p++) {
            uint64_t want;
            size_t src_i = p;
            int from = a->root;
            switch (kind) {
            case DUET_COLL_BROADCAST: want = key(a->root, p); break;
            case DUET_COLL_ALLGATHER: from = (int)(p / count), src_i = p % count, want = key(from, src_i); break;
            case DUET_COLL_ALLTOALL:
                from = (int)(p / count), src_i = (size_t)q * count + p % count, want = key(from, src_i);
                break;
            case DUET_COLL_REDUCE_SCATTER: src_i = (size_t)q * count + p, want = sum[src_i]; break;
            default: want = sum[p];
            }
            if (out[p] == want) continue;
            if (wrong++ == 0) {
                char d[96];
                diagnose(s, out[p], want, reduce, src_i, d, sizeof d);
                duet_coll_sim_report(s, DUET_SIM_ERR_DATA, "data: rank %d's recv element %zu (byte %zu) is wrong: %s",
                                     q, p, p * a->elem, d);
            }
        }
        if (wrong > 1)
            duet_coll_sim_report(s, DUET_SIM_ERR_DATA, "data: rank %d: %zu of %zu result elements wrong", q, wrong,
                                 outs);
    }
    free(sum);
}
