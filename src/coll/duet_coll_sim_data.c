/*
 * duet_coll_sim_data.c — the schedule simulator with check_data: each step's data moved at
 * its start (messages held per link slot), every element access recorded, and the races
 * searched (why the search is exact: duet_coll_sim.c).
 */
#include <stdlib.h>
#include <string.h>
#include "coll/duet_coll_sim_state.h"

#define MAX_RACE_REPORTS 8 /* then races are no longer searched: one is enough to fail */

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
        duet_coll_sim_report(s, DUET_SIM_ERR_RACE, "race: %s and %s both touch byte %zu of %s and nothing orders them",
                             duet_coll_sim_step_text(s, x, t1, sizeof t1), duet_coll_sim_step_text(s, y, t2, sizeof t2),
                             (s->cand[c].el - s->rk[r].base[buf]) * s->a->elem, duet_coll_sim_buf_name(buf));
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
void duet_coll_sim_move_data(sim_t *s, int gid, const duet_step_t *st)
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
