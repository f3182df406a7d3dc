/*
 * The schedule simulator (model and checks in duet_coll_sim.h).
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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "coll/duet_coll_sim.h"

#define MAX_RACE_REPORTS 8 /* then races are no longer searched: one is enough to fail */

/* ---------------------------------------------------------------- tokens
 * Element values: mix() is the splitmix64 finalizer, a bijection, so a value that was
 * never summed can be traced back to where it came from. */
#define TAG_IN 0xA5ull
#define TAG_POISON 0x5Aull

static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static uint64_t unmix(uint64_t z)
{
    z = z ^ (z >> 31) ^ (z >> 62);
    z *= 0x319642b2d24d8ec3ull;
    z = z ^ (z >> 27) ^ (z >> 54);
    z *= 0x96de1b173f119089ull;
    return z ^ (z >> 30) ^ (z >> 60);
}
static uint64_t tag(uint64_t t, int r, size_t i)
{
    return mix(t << 56 | (uint64_t)(r & 0xffffff) << 32 | (uint64_t)(i & 0xffffffffu));
}
/* Rank r's input element i. */
static uint64_t key(int r, size_t i) { return tag(TAG_IN, r, i); }

/* ---------------------------------------------------------------- state */
enum { EV_DONE, EV_ARRIVE, EV_ACK };
typedef struct {
    double t;
    uint64_t order; /* ties: first pushed, first processed */
    int type, rank, gid, link;
} event_t;

typedef struct {
    int first;        /* first unfinished step */
    int busy, kicked;
    int *heap, hn;    /* steps that may run now, min-heap of global ids */
    uint64_t *mem;    /* data (check_data): one token per element */
    int32_t *lastw;   /* per element: the last step that wrote it, -1: none */
    int32_t *readers; /* per element: reads since that write (a list in the pool), 0: none */
    size_t base[DUET_BUF_COUNT], bytes[DUET_BUF_COUNT]; /* layout: element offset, size */
    size_t elems;
} rank_t;

typedef struct {
    const duet_sched_t *sc;
    const duet_coll_args_t *a;
    duet_sim_model_t m;
    int n, check, T;
    size_t msg_limit;
    duet_sim_result_t *out;
    duet_sim_rank_t *stat;
    rank_t *rk;
    /* steps, by global id gid = gbase[r] + index */
    int *gbase, *rank_of, *pos; /* pos: place in its link's send or receive list */
    uint8_t *done, *queued, *bad;
    int *child_off, *child;     /* steps whose dep is this one */
    /* links L = from * n + to: the sends and the receives of each, in order */
    int *soff, *slist, *roff, *rlist;
    int *sends_done, *recvs_done, *arrived, *acked;
    uint64_t **payload;         /* check_data: messages in flight, slot L * slots + pos % slots */
    uint64_t **free_bufs;
    int nfree, cap_free;
    size_t msg_elems;           /* largest message, in elements */
    /* events */
    event_t *ev;
    int nev, cap_ev;
    uint64_t ev_order;
    int *kick, nkick;
    /* races */
    uint32_t *seq, seq_next;     /* the order steps started in */
    int *cand_mark;              /* the step a candidate was last collected for */
    struct { int gid, buf, chain, found; size_t el; } *cand;
    int ncand, cap_cand;
    uint32_t *vis, *tgt, stamp;  /* search marks */
    uint32_t *chain_tgt;         /* per send or receive chain (2 per link): holds a candidate */
    int *stack;
    struct { int32_t gid, next; } *pool;
    int npool, cap_pool;
    int races, oom;
} sim_t;

/* ---------------------------------------------------------------- reports */
__attribute__((format(printf, 3, 4))) static void report(sim_t *s, unsigned kind, const char *fmt, ...)
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

static const char *buf_name(int b)
{
    static const char *names[] = {"send", "recv", "tmp"};
    return b >= 0 && b < DUET_BUF_COUNT ? names[b] : "?";
}

/* "rank 2 step 7 (send recv[0,64) to 3)" */
static const char *step_text(const sim_t *s, int gid, char *b, size_t cap)
{
    int r = s->rank_of[gid], i = gid - s->gbase[r];
    const duet_step_t *st = &s->sc[r].steps[i];
    size_t so = st->src_off, dof = st->dst_off, n = st->bytes;
    switch (st->kind) {
    case DUET_STEP_COPY:
        snprintf(b, cap, "rank %d step %d (copy %s[%zu,%zu) -> %s[%zu,%zu))", r, i, buf_name(st->src_buf), so, so + n,
                 buf_name(st->dst_buf), dof, dof + n);
        break;
    case DUET_STEP_REDUCE:
        snprintf(b, cap, "rank %d step %d (reduce %s[%zu,%zu) into %s[%zu,%zu))", r, i, buf_name(st->src_buf), so,
                 so + n, buf_name(st->dst_buf), dof, dof + n);
        break;
    case DUET_STEP_SEND:
        snprintf(b, cap, "rank %d step %d (send #%d %s[%zu,%zu) to %d)", r, i, s->pos[gid], buf_name(st->src_buf),
                 so, so + n, st->peer);
        break;
    case DUET_STEP_RECV:
        snprintf(b, cap, "rank %d step %d (recv #%d from %d into %s[%zu,%zu))", r, i, s->pos[gid], st->peer,
                 buf_name(st->dst_buf), dof, dof + n);
        break;
    default:
        snprintf(b, cap, "rank %d step %d (recv-reduce #%d from %d: %s[%zu,%zu) + message -> %s[%zu,%zu))", r, i,
                 s->pos[gid], st->peer, buf_name(st->src_buf), so, so + n, buf_name(st->dst_buf), dof, dof + n);
    }
    return b;
}

/* ---------------------------------------------------------------- the call's buffers */
static int is_send(int k) { return k == DUET_STEP_SEND; }
static int is_recv(int k) { return k == DUET_STEP_RECV || k == DUET_STEP_RECV_REDUCE; }
static int reads_src(int k) { return k != DUET_STEP_RECV; }
static int writes_dst(int k) { return k != DUET_STEP_SEND; }

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

/* ---------------------------------------------------------------- checks before running */
static int range_ok(const rank_t *k, int buf, size_t off, size_t bytes)
{
    return off <= k->bytes[buf] && bytes <= k->bytes[buf] - off;
}

/* Well-formedness and ranges of every step; 0 when the schedules cannot be run at all. */
static int check_steps(sim_t *s)
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
                report(s, DUET_SIM_ERR_STEP, "rank %d step %d: unknown kind %d", r, i, kind);
                runnable = 0;
                continue;
            }
            if (st->call != 0) {
                report(s, DUET_SIM_ERR_STEP, "rank %d step %d: call %d (groups are not simulated)", r, i, st->call);
                runnable = 0;
            }
            if ((is_send(kind) || is_recv(kind)) && (st->peer < 0 || st->peer >= s->n)) {
                report(s, DUET_SIM_ERR_STEP, "rank %d step %d: peer %d is not a rank of [0, %d)", r, i, st->peer, s->n);
                runnable = 0;
            }
            if (st->dep < -1 || st->dep >= sc->nsteps) {
                report(s, DUET_SIM_ERR_STEP, "rank %d step %d: dep %d is no step of its %d", r, i, st->dep, sc->nsteps);
                runnable = 0;
            } else if (st->dep >= i) {
                report(s, DUET_SIM_ERR_STEP, "rank %d step %d: dep %d is not an earlier step", r, i, st->dep);
            }
            int sbuf = reads_src(kind) ? st->src_buf : 0, dbuf = writes_dst(kind) ? st->dst_buf : 0;
            if (sbuf >= DUET_BUF_COUNT || dbuf >= DUET_BUF_COUNT) {
                report(s, DUET_SIM_ERR_STEP, "rank %d step %d: buffer %d is none of send, recv, tmp", r, i,
                       sbuf >= DUET_BUF_COUNT ? sbuf : dbuf);
                runnable = 0;
                continue;
            }
            if (!runnable) continue;
#define TEXT step_text(s, gid, t, sizeof t)
            if (st->bytes % e || (reads_src(kind) && st->src_off % e) || (writes_dst(kind) && st->dst_off % e)) {
                report(s, DUET_SIM_ERR_STEP, "%s: offsets and sizes must be whole %zu-byte elements", TEXT, e);
                s->bad[gid] = 1;
            }
            if ((is_send(kind) || is_recv(kind)) && st->bytes > s->msg_limit) {
                report(s, DUET_SIM_ERR_STEP, "%s: a %zu-byte message, larger than the chunk (%zu)", TEXT, st->bytes,
                       s->msg_limit);
            }
            if (writes_dst(kind) && dbuf == DUET_BUF_SEND)
                report(s, DUET_SIM_ERR_STEP, "%s writes into the caller's send buffer (read-only)", TEXT);
            if ((reads_src(kind) && !range_ok(k, sbuf, st->src_off, st->bytes)) ||
                (writes_dst(kind) && !range_ok(k, dbuf, st->dst_off, st->bytes))) {
                int b = reads_src(kind) && !range_ok(k, sbuf, st->src_off, st->bytes) ? sbuf : dbuf;
                report(s, DUET_SIM_ERR_RANGE, "%s: beyond the %zu bytes of rank %d's %s buffer", TEXT, k->bytes[b], r,
                       buf_name(b));
                s->bad[gid] = 1;
            }
#undef TEXT
        }
    }
    return runnable;
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
            if (st->peer < 0 || st->peer >= n) continue; /* reported by check_steps */
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

/* For every ordered pair: as many sends as receives, each pair of equal size. */
static void check_matching(sim_t *s)
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
                    report(s, DUET_SIM_ERR_MATCH, "size mismatch: %s sends %zu B, %s expects %zu B",
                           step_text(s, sg, t1, sizeof t1), sb, step_text(s, rg, t2, sizeof t2), rb);
            }
            if (ns > nr)
                report(s, DUET_SIM_ERR_MATCH, "unmatched: rank %d sends %d messages to %d, which receives %d from it "
                       "(first left over: %s)", a, ns, b, nr, step_text(s, s->slist[s->soff[L] + nr], t1, sizeof t1));
            else if (nr > ns)
                report(s, DUET_SIM_ERR_MATCH, "unmatched: rank %d receives %d messages from %d, which sends %d to it "
                       "(first left over: %s)", b, nr, a, ns, step_text(s, s->rlist[s->roff[L] + ns], t1, sizeof t1));
        }
}

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

/* ---------------------------------------------------------------- races */
/* The steps that must complete before gid may start, but for the window. */
static int preds(const sim_t *s, int gid, int out[4])
{
    int r = s->rank_of[gid], i = gid - s->gbase[r], n = s->n, np = 0;
    const duet_step_t *st = &s->sc[r].steps[i];
    if (st->dep >= 0) out[np++] = s->gbase[r] + st->dep;
    int p = s->pos[gid];
    if (is_send(st->kind)) {
        size_t L = (size_t)r * (size_t)n + (size_t)st->peer;
        if (p > 0) out[np++] = s->slist[s->soff[L] + p - 1];
        if (p >= s->m.slots && p - s->m.slots < s->roff[L + 1] - s->roff[L])
            out[np++] = s->rlist[s->roff[L] + p - s->m.slots]; /* the slot it reuses was freed */
    } else if (is_recv(st->kind)) {
        size_t L = (size_t)st->peer * (size_t)n + (size_t)r;
        if (p > 0) out[np++] = s->rlist[s->roff[L] + p - 1];
        if (p < s->soff[L + 1] - s->soff[L]) out[np++] = s->slist[s->soff[L] + p]; /* its message */
    }
    return np;
}

/* The send or receive chain of a step (sends of a link in order, or its receives), -1 for
 * local steps. */
static int chain_of(const sim_t *s, int gid)
{
    int r = s->rank_of[gid];
    const duet_step_t *st = &s->sc[r].steps[gid - s->gbase[r]];
    if (is_send(st->kind)) return 2 * (r * s->n + st->peer);
    if (is_recv(st->kind)) return 2 * (st->peer * s->n + r) + 1;
    return -1;
}

/* A step that touched memory the running step touches: it must be ordered before it. */
static void add_candidate(sim_t *s, int x, int y, int buf, size_t el)
{
    if (x < 0 || x == y || s->cand_mark[x] == y) return;
    s->cand_mark[x] = y;
    if (s->ncand == s->cap_cand) {
        int cap = s->cap_cand ? 2 * s->cap_cand : 256;
        void *p = realloc(s->cand, sizeof *s->cand * (size_t)cap);
        if (!p) {
            s->oom = 1;
            return;
        }
        s->cand = p, s->cap_cand = cap;
    }
    s->cand[s->ncand].gid = x, s->cand[s->ncand].buf = buf, s->cand[s->ncand].el = el;
    s->cand[s->ncand].chain = chain_of(s, x), s->cand[s->ncand].found = 0;
    s->ncand++;
}

/* Elements [e0, e1) of step y's rank, read (write 0) or written by y: the earlier accesses
 * it conflicts with become candidates. */
static void collect(sim_t *s, int y, int buf, size_t e0, size_t e1, int write)
{
    rank_t *k = &s->rk[s->rank_of[y]];
    int32_t prev_w = -1, prev_list = -1;
    for (size_t e = e0; e < e1; e++) {
        int32_t w = k->lastw[e], list = k->readers[e];
        if (w != prev_w) add_candidate(s, w, y, buf, e), prev_w = w;
        if (write && list != prev_list)
            for (int32_t l = list; l; l = s->pool[l].next) add_candidate(s, s->pool[l].gid, y, buf, e);
        prev_list = list;
    }
}

/* Which candidates must complete before y starts, whatever order the executor takes: a
 * depth-first search backwards from y over the orderings (its dep first: most orderings are
 * chains of deps), pruned at steps that ran before the oldest candidate (they cannot follow
 * it), until every candidate is found. A visited step of a send or receive chain also finds
 * the candidates earlier in that chain (the per-peer order); one far enough behind a visited
 * step of y's rank is found through the window. Candidates not found are races. */
static void resolve(sim_t *s, int y)
{
    int r = s->rank_of[y], remaining = s->ncand, top = 0, maxidx = -1;
    uint32_t minseq = UINT32_MAX;
    if (++s->stamp == 0) { /* wrapped: forget old marks */
        memset(s->vis, 0, sizeof *s->vis * (size_t)s->T);
        memset(s->tgt, 0, sizeof *s->tgt * (size_t)s->T);
        memset(s->chain_tgt, 0, sizeof *s->chain_tgt * 2 * (size_t)s->n * (size_t)s->n);
        s->stamp = 1;
    }
    for (int c = 0; c < s->ncand; c++) {
        int x = s->cand[c].gid;
        s->tgt[x] = s->stamp;
        if (s->cand[c].chain >= 0) s->chain_tgt[s->cand[c].chain] = s->stamp;
        if (s->seq[x] < minseq) minseq = s->seq[x];
    }
    s->stack[top++] = y;
    while (top && remaining) {
        int z = s->stack[--top], p[4], np;
        if (s->vis[z] == s->stamp) continue;
        s->vis[z] = s->stamp;
        int ch = s->pos[z] >= 0 ? chain_of(s, z) : -1;
        if (s->tgt[z] == s->stamp || (ch >= 0 && s->chain_tgt[ch] == s->stamp))
            for (int c = 0; c < s->ncand; c++) {
                const int x = s->cand[c].gid;
                if (s->cand[c].found) continue;
                if (x == z || (ch >= 0 && s->cand[c].chain == ch && s->pos[x] < s->pos[z]))
                    s->cand[c].found = 1, remaining--;
            }
        if (s->rank_of[z] == r && z - s->gbase[r] > maxidx) maxidx = z - s->gbase[r];
        np = preds(s, z, p);
        for (int j = np - 1; j >= 0; j--) /* the dep ends up on top */
            if (s->vis[p[j]] != s->stamp && s->seq[p[j]] >= minseq) s->stack[top++] = p[j];
    }
    for (int c = 0; c < s->ncand && s->races < MAX_RACE_REPORTS; c++) {
        int x = s->cand[c].gid;
        if (s->cand[c].found || x - s->gbase[r] + DUET_SIM_WINDOW <= maxidx) continue;
        char t1[192], t2[192];
        int buf = s->cand[c].buf;
        s->races++;
        report(s, DUET_SIM_ERR_RACE, "race: %s and %s both touch byte %zu of %s and nothing orders them",
               step_text(s, x, t1, sizeof t1), step_text(s, y, t2, sizeof t2),
               (s->cand[c].el - s->rk[r].base[buf]) * s->a->elem, buf_name(buf));
    }
    s->ncand = 0;
}

static int32_t pool_cons(sim_t *s, int32_t gid, int32_t next)
{
    if (s->npool == s->cap_pool) {
        int cap = s->cap_pool ? 2 * s->cap_pool : 4096;
        void *p = realloc(s->pool, sizeof *s->pool * (size_t)cap);
        if (!p) {
            s->oom = 1;
            return next;
        }
        s->pool = p, s->cap_pool = cap;
        if (s->npool == 0) s->pool[s->npool++].gid = -1; /* index 0: the empty list */
    }
    s->pool[s->npool].gid = gid, s->pool[s->npool].next = next;
    return s->npool++;
}

/* Records step gid's access to elements [e0, e1). */
static void record(sim_t *s, int gid, size_t e0, size_t e1, int write)
{
    rank_t *k = &s->rk[s->rank_of[gid]];
    int32_t prev_list = -1, new_list = 0;
    for (size_t e = e0; e < e1; e++) {
        int32_t list = k->readers[e];
        if (write) {
            k->lastw[e] = gid;
            k->readers[e] = 0;
            continue;
        }
        if (list != prev_list) new_list = list && s->pool[list].gid == gid ? list : pool_cons(s, gid, list);
        k->readers[e] = new_list;
        prev_list = list;
    }
}

/* ---------------------------------------------------------------- moving data */
static uint64_t *payload_get(sim_t *s)
{
    if (s->nfree) return s->free_bufs[--s->nfree];
    uint64_t *p = malloc(sizeof *p * (s->msg_elems ? s->msg_elems : 1));
    if (!p) s->oom = 1;
    return p;
}

static void payload_put(sim_t *s, uint64_t *p)
{
    if (!p) return;
    if (s->nfree == s->cap_free) {
        int cap = s->cap_free ? 2 * s->cap_free : 64;
        uint64_t **q = realloc(s->free_bufs, sizeof *q * (size_t)cap);
        if (!q) {
            free(p);
            return;
        }
        s->free_bufs = q, s->cap_free = cap;
    }
    s->free_bufs[s->nfree++] = p;
}

/* The data of step gid, run at its start. */
static void move_data(sim_t *s, int gid, const duet_step_t *st)
{
    int r = s->rank_of[gid], kind = st->kind;
    rank_t *k = &s->rk[r];
    size_t e = s->a->elem, ne = st->bytes / e;
    size_t src = reads_src(kind) ? k->base[st->src_buf] + st->src_off / e : 0;
    size_t dst = writes_dst(kind) ? k->base[st->dst_buf] + st->dst_off / e : 0;
    if (kind == DUET_STEP_COPY && src == dst) return; /* memmove onto itself: nothing happens */
    if (s->races < MAX_RACE_REPORTS) {
        if (reads_src(kind)) collect(s, gid, st->src_buf, src, src + ne, 0);
        if (writes_dst(kind)) collect(s, gid, st->dst_buf, dst, dst + ne, 1);
        if (s->ncand) resolve(s, gid);
    }
    if (reads_src(kind)) record(s, gid, src, src + ne, 0);
    if (kind == DUET_STEP_REDUCE) record(s, gid, dst, dst + ne, 0);
    if (writes_dst(kind)) record(s, gid, dst, dst + ne, 1);
    uint64_t *mem = k->mem;
    switch (kind) {
    case DUET_STEP_COPY:
        memmove(mem + dst, mem + src, ne * sizeof *mem);
        break;
    case DUET_STEP_REDUCE:
        for (size_t j = 0; j < ne; j++) mem[dst + j] += mem[src + j];
        break;
    case DUET_STEP_SEND: {
        size_t L = (size_t)r * (size_t)s->n + (size_t)st->peer;
        uint64_t **slot = &s->payload[L * (size_t)s->m.slots + (size_t)(s->pos[gid] % s->m.slots)];
        payload_put(s, *slot); /* cannot happen: the slot was consumed before it was freed */
        *slot = payload_get(s);
        if (*slot) memcpy(*slot, mem + src, ne * sizeof *mem);
        break;
    }
    default: {
        size_t L = (size_t)st->peer * (size_t)s->n + (size_t)r;
        uint64_t **slot = &s->payload[L * (size_t)s->m.slots + (size_t)(s->pos[gid] % s->m.slots)];
        int sg = s->slist[s->soff[L] + s->pos[gid]];
        const duet_step_t *sst = &s->sc[st->peer].steps[sg - s->gbase[st->peer]];
        if (*slot && !s->bad[sg] && sst->bytes == st->bytes) {
            if (kind == DUET_STEP_RECV) memcpy(mem + dst, *slot, ne * sizeof *mem);
            else for (size_t j = 0; j < ne; j++) mem[dst + j] = mem[src + j] + (*slot)[j];
        }
        payload_put(s, *slot);
        *slot = NULL;
    }
    }
}

/* ---------------------------------------------------------------- running */
/* Whether a message between ranks x and y takes the net class of the model. */
static int crosses(const sim_t *s, int x, int y)
{
    return s->m.net_alpha_us > 0 && duet_coll_across(s->a, x, y);
}

static void start_step(sim_t *s, int r, int gid, double now)
{
    rank_t *k = &s->rk[r];
    duet_sim_rank_t *rs = &s->stat[r];
    const duet_step_t *st = &s->sc[r].steps[gid - s->gbase[r]];
    int net = is_send(st->kind) || is_recv(st->kind) ? crosses(s, r, st->peer) : 0;
    double bytes = (double)st->bytes;
    double dur = st->kind == DUET_STEP_SEND ? bytes * (net ? s->m.net_beta_us_per_byte : s->m.beta_us_per_byte)
                                            : bytes * (net ? s->m.net_gamma_us_per_byte : s->m.gamma_us_per_byte);
    k->busy = 1;
    s->seq[gid] = ++s->seq_next;
    if (s->check && !s->bad[gid]) move_data(s, gid, st);
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
        int m = ++s->acked[ev->link] + s->m.slots - 1;
        if (m < s->soff[ev->link + 1] - s->soff[ev->link]) consider(s, s->slist[s->soff[ev->link] + m]);
    }
    }
}

static void run(sim_t *s)
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
        step_text(s, gid, t, sizeof t);
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

static void report_deadlock(sim_t *s)
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
    report(s, DUET_SIM_ERR_DEADLOCK, "deadlock: %d of %d ranks stuck (rank->rank it waits for:%s); rank %d: %s",
           stuck, s->n, list, first, why);
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

static void check_results(sim_t *s)
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
                report(s, DUET_SIM_ERR_DATA, "data: rank %d's recv element %zu (byte %zu) is wrong: %s", q, p,
                       p * a->elem, d);
            }
        }
        if (wrong > 1) report(s, DUET_SIM_ERR_DATA, "data: rank %d: %zu of %zu result elements wrong", q, wrong, outs);
    }
    free(sum);
}

/* ---------------------------------------------------------------- entry points */
void duet_sim_model_default(duet_sim_model_t *m)
{
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

static duet_status_t check_shape(const duet_coll_args_t *a, const duet_sim_model_t *m)
{
    if (!a || !m) return duet_error_set(DUET_ERR_INVALID_ARG, "simulator: NULL shape or model");
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
    duet_status_t st = check_shape(shape, model);
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
    for (int r = 0; r < s.n; r++) s.stat[r].steps = scheds[r].nsteps;
    if (!check_steps(&s)) goto finish; /* malformed beyond running */
    check_matching(&s);
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
    run(&s);
    if (s.oom) goto oom;
    int stuck = 0;
    for (int r = 0; r < s.n; r++) stuck |= s.rk[r].first < scheds[r].nsteps;
    if (stuck) report_deadlock(&s);
    else if (s.check) check_results(&s);
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

duet_status_t duet_coll_simulate(const duet_coll_algo_t *algo, const duet_coll_args_t *shape, int check_data,
                                 const duet_sim_model_t *model, duet_sim_result_t *out, duet_sim_rank_t *ranks)
{
    duet_status_t st = check_shape(shape, model);
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
            report(&s, DUET_SIM_ERR_BUILD, "build: %s %s failed on rank %d (%s): %s", algo->name,
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
