/*
 * duet_coll_sim_exec.c — the schedule simulator's run (duet_coll_sim.h, "What runs" and "The
 * clock"): the executor's rules, which step may run when, and the event loop that advances
 * each rank's clock over a heap of arrivals, acks and step completions.
 */
#include <stdlib.h>
#include "coll/duet_coll_chan.h"
#include "coll/duet_coll_sim_state.h"

/* ---------------------------------------------------------------- heaps */
static int ev_less(const event_t *x, const event_t *y) { return x->t < y->t || (x->t == y->t && x->order < y->order); }

static void ev_push(sim_t *s, double t, int type, int rank, int gid, int link)
{
    if (s->nev == s->cap_ev) {
        int cap = s->cap_ev ? 2 * s->cap_ev : 1024;
        event_t *p = realloc(s->ev, sizeof *p * (size_t)cap);
        if (!p) {
            s->oom = 1;
            return;
        }
        s->ev = p, s->cap_ev = cap;
    }
    event_t e = {t, s->ev_order++, type, rank, gid, link};
    int i = s->nev++;
    while (i > 0 && ev_less(&e, &s->ev[(i - 1) / 2])) {
        s->ev[i] = s->ev[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    s->ev[i] = e;
}

static event_t ev_pop(sim_t *s)
{
    event_t top = s->ev[0], last = s->ev[--s->nev];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= s->nev) break;
        if (c + 1 < s->nev && ev_less(&s->ev[c + 1], &s->ev[c])) c++;
        if (!ev_less(&s->ev[c], &last)) break;
        s->ev[i] = s->ev[c];
        i = c;
    }
    if (s->nev) s->ev[i] = last;
    return top;
}

static void ready_push(rank_t *k, int gid)
{
    int i = k->hn++;
    while (i > 0 && gid < k->heap[(i - 1) / 2]) {
        k->heap[i] = k->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    k->heap[i] = gid;
}

static int ready_pop(rank_t *k)
{
    int top = k->heap[0], last = k->heap[--k->hn], i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= k->hn) break;
        if (c + 1 < k->hn && k->heap[c + 1] < k->heap[c]) c++;
        if (k->heap[c] >= last) break;
        k->heap[i] = k->heap[c];
        i = c;
    }
    if (k->hn) k->heap[i] = last;
    return top;
}

/* ---------------------------------------------------------------- the executor's rules */
static void kick(sim_t *s, int r)
{
    if (!s->rk[r].kicked) s->rk[r].kicked = 1, s->kick[s->nkick++] = r;
}

/* Queues step gid on its rank if the executor could run it now. */
static void consider(sim_t *s, int gid)
{
    if (s->done[gid] || s->queued[gid]) return;
    int r = s->rank_of[gid], i = gid - s->gbase[r], n = s->n;
    rank_t *k = &s->rk[r];
    const duet_step_t *st = &s->sc[r].steps[i];
    if (i >= k->first + DUET_SIM_WINDOW) return;
    if (s->call_len && i >= s->call_len[r] && k->first < i / s->call_len[r] * s->call_len[r])
        return; /* the rank's previous call is still running */
    if (st->dep >= 0 && !s->done[s->gbase[r] + st->dep]) return;
    if (is_send(st->kind)) {
        size_t L = (size_t)r * (size_t)n + (size_t)st->peer;
        if (s->pos[gid] != s->sends_done[L] || s->pos[gid] >= s->acked[L] + s->m.slots) return;
    } else if (is_recv(st->kind)) {
        size_t L = (size_t)st->peer * (size_t)n + (size_t)r;
        if (s->pos[gid] != s->recvs_done[L] || s->pos[gid] >= s->arrived[L]) return;
    }
    s->queued[gid] = 1;
    ready_push(k, gid);
    kick(s, r);
}

/* ---------------------------------------------------------------- running */
/* Whether a message between ranks x and y takes the net class of the model. */
static int crosses(const sim_t *s, int x, int y)
{
    return s->m.net_alpha_us > 0 && duet_coll_across(s->a, x, y);
}

/* Whether send step st of rank r goes by reference (duet_coll_sim.h, "The clock"). */
static int by_ref(const sim_t *s, int r, const duet_step_t *st)
{
    if (!s->a->byref || st->kind != DUET_STEP_SEND || st->bytes < DUET_CHAN_BYREF_MIN || crosses(s, r, st->peer))
        return 0;
    return (st->src_buf == DUET_BUF_SEND && !s->a->in_place) || (st->src_buf == DUET_BUF_RECV && s->sc[r].recv_stable);
}

static void start_step(sim_t *s, int r, int gid, double now)
{
    rank_t *k = &s->rk[r];
    duet_sim_rank_t *rs = &s->stat[r];
    const duet_step_t *st = &s->sc[r].steps[gid - s->gbase[r]];
    int net = is_send(st->kind) || is_recv(st->kind) ? crosses(s, r, st->peer) : 0;
    double bytes = (double)st->bytes, per_byte;
    double copy = s->m.copy_us_per_byte > 0 ? s->m.copy_us_per_byte : s->m.gamma_us_per_byte;
    if (st->kind == DUET_STEP_SEND) per_byte = by_ref(s, r, st) ? 0 : net ? s->m.net_beta_us_per_byte : s->m.beta_us_per_byte;
    else if (is_recv(st->kind) && net) per_byte = s->m.net_gamma_us_per_byte;
    else if (is_recv(st->kind)) { /* out of the slot, or by reference out of the sender's heap */
        size_t L = (size_t)st->peer * (size_t)s->n + (size_t)r;
        int sent = s->slist[s->soff[L] + s->pos[gid]], from = st->peer;
        per_byte = by_ref(s, from, &s->sc[from].steps[sent - s->gbase[from]]) ? copy : s->m.gamma_us_per_byte;
    } else per_byte = copy;
    if (st->kind == DUET_STEP_REDUCE || st->kind == DUET_STEP_RECV_REDUCE) per_byte += s->m.reduce_us_per_byte;
    double dur = s->m.step_us + bytes * per_byte;
    k->busy = 1;
    s->seq[gid] = ++s->seq_next;
    if (s->check && !s->bad[gid]) duet_coll_sim_move_data(s, gid, st);
    switch (st->kind) {
    case DUET_STEP_SEND:
        rs->msgs_sent++, rs->bytes_sent += st->bytes;
        ev_push(s, now + dur + (net ? s->m.net_alpha_us : s->m.alpha_us), EV_ARRIVE, st->peer, gid, r * s->n + st->peer);
        break;
    case DUET_STEP_RECV:
    case DUET_STEP_RECV_REDUCE:
        rs->msgs_recvd++, rs->bytes_recvd += st->bytes;
        break;
    default:
        rs->bytes_local += st->bytes;
    }
    rs->busy_us += dur;
    ev_push(s, now + dur, EV_DONE, r, gid, -1);
}

static void complete(sim_t *s, int r, int gid, double now)
{
    rank_t *k = &s->rk[r];
    const duet_sched_t *sc = &s->sc[r];
    const duet_step_t *st = &sc->steps[gid - s->gbase[r]];
    int n = s->n;
    s->done[gid] = 1;
    k->busy = 0;
    s->stat[r].steps_run++;
    s->stat[r].finish_us = now;
    kick(s, r);
    for (int j = s->child_off[gid]; j < s->child_off[gid + 1]; j++) consider(s, s->child[j]);
    if (is_send(st->kind)) {
        size_t L = (size_t)r * (size_t)n + (size_t)st->peer;
        int next = ++s->sends_done[L];
        if (next < s->soff[L + 1] - s->soff[L]) consider(s, s->slist[s->soff[L] + next]);
    } else if (is_recv(st->kind)) {
        size_t L = (size_t)st->peer * (size_t)n + (size_t)r;
        int next = ++s->recvs_done[L];
        if (next < s->roff[L + 1] - s->roff[L]) consider(s, s->rlist[s->roff[L] + next]);
        ev_push(s, now + (crosses(s, r, st->peer) ? s->m.net_alpha_us : s->m.alpha_us), EV_ACK, st->peer, -1, (int)L);
    }
    int old = k->first;
    while (k->first < sc->nsteps && s->done[s->gbase[r] + k->first]) k->first++;
    if (s->call_len) { /* calls back to back: the call's end; the next call's start */
        int len = s->call_len[r], i = gid - s->gbase[r];
        if (now > s->call_end[i / len]) s->call_end[i / len] = now;
        if (k->first < sc->nsteps && k->first / len > old / len)
            for (int j = k->first / len * len; j < (k->first / len + 1) * len && j < sc->nsteps; j++)
                consider(s, s->gbase[r] + j);
    }
    int lo = old + DUET_SIM_WINDOW, hi = k->first + DUET_SIM_WINDOW < sc->nsteps ? k->first + DUET_SIM_WINDOW : sc->nsteps;
    for (int i = lo; i < hi; i++) consider(s, s->gbase[r] + i);
}

static void process(sim_t *s, const event_t *ev, double now)
{
    switch (ev->type) {
    case EV_DONE:
        complete(s, ev->rank, ev->gid, now);
        break;
    case EV_ARRIVE: {
        int m = s->arrived[ev->link]++;
        if (m < s->roff[ev->link + 1] - s->roff[ev->link]) consider(s, s->rlist[s->roff[ev->link] + m]);
        break;
    }
    default: {
        int sender = ev->link / s->n, gid = s->slist[s->soff[ev->link] + s->acked[ev->link]];
        /* the executor's call ends once its messages by reference are consumed */
        if (by_ref(s, sender, &s->sc[sender].steps[gid - s->gbase[sender]]) && now > s->stat[sender].finish_us)
            s->stat[sender].finish_us = now;
        int m = ++s->acked[ev->link] + s->m.slots - 1;
        if (m < s->soff[ev->link + 1] - s->soff[ev->link]) consider(s, s->slist[s->soff[ev->link] + m]);
    }
    }
}

void duet_coll_sim_run_events(sim_t *s)
{
    for (int r = 0; r < s->n; r++) {
        int w = s->sc[r].nsteps < DUET_SIM_WINDOW ? s->sc[r].nsteps : DUET_SIM_WINDOW;
        for (int i = 0; i < w; i++) consider(s, s->gbase[r] + i);
    }
    double now = 0;
    while (!s->oom) {
        for (int j = 0; j < s->nkick; j++) {
            rank_t *k = &s->rk[s->kick[j]];
            k->kicked = 0;
            if (!k->busy && k->hn) start_step(s, s->kick[j], ready_pop(k), now);
        }
        s->nkick = 0;
        if (!s->nev) break;
        now = s->ev[0].t;
        while (s->nev && s->ev[0].t <= now) {
            event_t ev = ev_pop(s);
            process(s, &ev, now);
        }
    }
}
