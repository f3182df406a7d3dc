/*
 * Hierarchical algorithms: shared memory inside a host, the network between hosts
 * (docs/NETWORK.md 2.7). They need the call's host map (duet_coll_args_t.host) and refuse a
 * call whose ranks are all on one host, where the flat algorithms already are the whole story.
 *
 * Allreduce (hring, hdbtree), on hosts of L_g ranks, P = the smallest L_g:
 *
 *   host A: a0 a1 a2        1. inside each host, a direct reduce-scatter: the buffer is cut
 *   host B: b0 b1              into P parts, local rank j (j < P) owns part j and reduces the
 *                              others' inputs of it (a0 <- a1, a2; ...);
 *   parts:  [ 0 | 1 ]       2. between hosts, the owners of part j (a0, b0 for part 0; a1, b1
 *                              for part 1) allreduce it with the flat ring or double binary
 *                              tree over hosts (one message per link, the others' parts
 *                              travel on the other local ranks' links at the same time);
 *                           3. inside each host, each owner sends its finished part to the
 *                              other local ranks (a2, which owns nothing, gets both parts).
 *   Hosts of different sizes are handled by P: the ranks past P on a larger host only send
 *   in step 1 and receive in step 3. The result is bit-identical everywhere: each part is
 *   reduced once by its owners and then copied.
 *
 * Broadcast (htree): the flat binary tree over one leader per host (the root on its own
 * host, the first rank elsewhere), then the flat binary tree inside each host from its leader.
 * Reduce (htree): the reverse: a tree reduce inside each host to its leader, then a tree
 * reduce over the leaders to the root (a leader other than the root keeps its host's partial
 * in scratch).
 *
 * How the phases are glued: each phase is a flat algorithm's schedule, built for the group
 * it runs on (its ranks renumbered 0..n-1), with peers, buffers and offsets mapped into the
 * whole call (append_phase). A step of a later phase that waits on nothing inside its own
 * phase waits on the step of the earlier phase that last wrote its bytes (`before`): a step
 * can name one dependency, so the earlier phase's last writes are tracked per byte range
 * (pieces) and both phases cut the buffer into the same chunks from the same origin, so
 * that one piece covers each later step. Step 3 of the allreduce sends each piece of its
 * part as it is finished; a receiver learns the pieces by building the owner's step-2
 * schedule for itself (the owner shares its host index, so the schedules are the same).
 */
#include <stdlib.h>
#include <string.h>
#include "coll/duet_coll.h"

/* ------------------------------------------------------------------------------ the hosts */
typedef struct {
    int n;        /* hosts */
    int *first;   /* host g's ranks are member[first[g] .. first[g + 1]), in rank order */
    int *member;
    int *index;   /* rank -> host, renumbered 0..n-1 in order of first appearance */
    int *local;   /* rank -> its place among its host's ranks */
    int smallest; /* ranks on the smallest host */
} hosts_t;

static void hosts_free(hosts_t *h) { free(h->first); }

static int host_size(const hosts_t *h, int g) { return h->first[g + 1] - h->first[g]; }
static int member_of(const hosts_t *h, int g, int i) { return h->member[h->first[g] + i]; }

static duet_status_t hosts_of(const duet_coll_args_t *a, const char *name, hosts_t *h)
{
    memset(h, 0, sizeof *h);
    int n = a->nranks;
    if (!a->host || a->nhosts < 2)
        return duet_error_set(DUET_ERR_UNSUPPORTED, "%s %s: every rank is on one host (a hierarchical algorithm "
                              "needs ranks on two hosts or more; the flat ones cover one host)", name,
                              a->kind == DUET_COLL_ALLREDUCE ? "allreduce" : a->kind == DUET_COLL_BROADCAST ? "broadcast"
                                                                                                           : "reduce");
    size_t ints = (size_t)(a->nhosts + 1) + 3 * (size_t)n + 2 * (size_t)a->nhosts;
    h->first = malloc(sizeof(int) * ints);
    if (!h->first) return DUET_FAIL(DUET_ERR_NO_MEMORY, COLL, "%s: out of host memory", name);
    h->member = h->first + a->nhosts + 1;
    h->index = h->member + n;
    h->local = h->index + n;
    int *renumber = h->local + n, *fill = renumber + a->nhosts;
    for (int g = 0; g < a->nhosts; g++) renumber[g] = -1;
    for (int r = 0; r < n; r++) {
        int id = a->host[r];
        if (id < 0 || id >= a->nhosts) {
            hosts_free(h);
            return duet_error_set(DUET_ERR_INVALID_ARG, "%s: rank %d's host %d is outside [0, %d)", name, r, id,
                                  a->nhosts);
        }
        if (renumber[id] < 0) renumber[id] = h->n++;
        h->index[r] = renumber[id];
    }
    if (h->n < 2) {
        hosts_free(h);
        return duet_error_set(DUET_ERR_UNSUPPORTED, "%s: every rank is on one host (a hierarchical algorithm "
                              "needs ranks on two hosts or more)", name);
    }
    for (int g = 0; g <= h->n; g++) h->first[g] = 0;
    for (int r = 0; r < n; r++) h->first[h->index[r] + 1]++;
    for (int g = 0; g < h->n; g++) h->first[g + 1] += h->first[g];
    for (int g = 0; g < h->n; g++) fill[g] = h->first[g];
    for (int r = 0; r < n; r++) {
        int g = h->index[r];
        h->local[r] = fill[g] - h->first[g];
        h->member[fill[g]++] = r;
    }
    h->smallest = n;
    for (int g = 0; g < h->n; g++)
        if (host_size(h, g) < h->smallest) h->smallest = host_size(h, g);
    return DUET_OK;
}

/* ------------------------------------------------------------------- pieces: last writers */
/* Bytes [lo, hi) of buffer `buf` were last written by step `step` (-1: by no step so far). */
typedef struct {
    size_t lo, hi;
    int step;
} piece_t;

typedef struct {
    int buf;
    piece_t *p;
    int n;
} pieces_t;

static int size_cmp(const void *x, const void *y)
{
    size_t a = *(const size_t *)x, b = *(const size_t *)y;
    return a < b ? -1 : a > b;
}

static int writes(const duet_step_t *st) { return st->kind != DUET_STEP_SEND; }

/* The last writer (in list order) of each byte of buffer `buf` in [lo, hi) among the steps
 * of s, as runs of equal writers covering [lo, hi). In a race-free schedule the writes of
 * one byte are ordered, and the builders append them in that order. */
static duet_status_t last_writers(const duet_sched_t *s, int buf, size_t lo, size_t hi, pieces_t *out)
{
    out->buf = buf;
    out->p = NULL;
    out->n = 0;
    if (hi <= lo) return DUET_OK;
    int nw = 0;
    for (int i = 0; i < s->nsteps; i++) nw += writes(&s->steps[i]) && s->steps[i].dst_buf == buf;
    size_t *cut = malloc(sizeof(size_t) * (2 * (size_t)nw + 2));
    int *writer = malloc(sizeof(int) * (2 * (size_t)nw + 2));
    out->p = malloc(sizeof(piece_t) * (2 * (size_t)nw + 2));
    if (!cut || !writer || !out->p) {
        free(cut);
        free(writer);
        free(out->p);
        out->p = NULL;
        return DUET_FAIL(DUET_ERR_NO_MEMORY, COLL, "hierarchical schedule: out of host memory");
    }
    int ncut = 0;
    cut[ncut++] = lo;
    cut[ncut++] = hi;
    for (int i = 0; i < s->nsteps; i++) {
        const duet_step_t *st = &s->steps[i];
        if (!writes(st) || st->dst_buf != buf) continue;
        size_t b = st->dst_off, e = st->dst_off + st->bytes;
        if (b > lo && b < hi) cut[ncut++] = b;
        if (e > lo && e < hi) cut[ncut++] = e;
    }
    qsort(cut, (size_t)ncut, sizeof *cut, size_cmp);
    int u = 0;
    for (int i = 0; i < ncut; i++)
        if (u == 0 || cut[i] != cut[u - 1]) cut[u++] = cut[i];
    for (int i = 0; i + 1 < u; i++) writer[i] = -1;
    for (int i = 0; i < s->nsteps; i++) { /* later writes paint over earlier ones */
        const duet_step_t *st = &s->steps[i];
        if (!writes(st) || st->dst_buf != buf) continue;
        size_t b = st->dst_off < lo ? lo : st->dst_off, e = st->dst_off + st->bytes > hi ? hi : st->dst_off + st->bytes;
        if (b >= e) continue;
        int k = 0, top = u - 1; /* the cut at b */
        while (k < top) {
            int mid = (k + top) / 2;
            if (cut[mid] < b) k = mid + 1;
            else top = mid;
        }
        for (; k + 1 < u && cut[k] < e; k++) writer[k] = i;
    }
    for (int i = 0; i + 1 < u; i++) {
        if (out->n && out->p[out->n - 1].step == writer[i]) out->p[out->n - 1].hi = cut[i + 1];
        else out->p[out->n++] = (piece_t){cut[i], cut[i + 1], writer[i]};
    }
    free(cut);
    free(writer);
    return DUET_OK;
}

/* The one step that last wrote bytes [off, off + len) of buffer buf, by `before`, or -1;
 * -2 when they were written by several (the phases' chunks do not line up: a bug here). */
static int writer_of(const pieces_t *before, int buf, size_t off, size_t len)
{
    if (!before || before->buf != buf || len == 0) return -1;
    int found = -1;
    for (int i = 0; i < before->n; i++) {
        const piece_t *p = &before->p[i];
        if (p->hi <= off || p->lo >= off + len || p->step < 0) continue;
        if (found >= 0 && found != p->step) return -2;
        found = p->step;
    }
    return found;
}

/* -------------------------------------------------------------- phases: sub-schedules */
/* Where a phase's buffer lies in the whole call's buffers. */
typedef struct {
    int buf;
    size_t off;
} place_t;

/* Appends `sub` (a flat algorithm's schedule for a group of ranks) to s: its rank i is
 * peer_of[i], its buffer b is at place[b], its dependencies are shifted; a step with none
 * waits on the earlier phase's last writer of its bytes (before, may be NULL). idx[i]: the
 * index in s of sub's step i. */
static duet_status_t append_phase(duet_sched_t *s, const duet_sched_t *sub, const int *peer_of, const place_t *place,
                                  const pieces_t *before, int *idx)
{
    for (int i = 0; i < sub->nsteps && s->error == DUET_OK; i++) {
        const duet_step_t *st = &sub->steps[i];
        int sb = place[st->src_buf].buf, db = place[st->dst_buf].buf;
        size_t so = place[st->src_buf].off + st->src_off, dof = place[st->dst_buf].off + st->dst_off;
        int dep = st->dep >= 0 ? idx[st->dep] : -1;
        if (st->dep < 0) {
            int reads = st->kind != DUET_STEP_RECV, wr = writes(st);
            int w1 = reads ? writer_of(before, sb, so, st->bytes) : -1;
            int w2 = wr ? writer_of(before, db, dof, st->bytes) : -1;
            if (w1 == -2 || w2 == -2 || (w1 >= 0 && w2 >= 0 && w1 != w2))
                return s->error = DUET_FAIL(DUET_ERR_INTERNAL, COLL, "hierarchical schedule: a step of %zu bytes "
                                            "spans pieces of two steps of the previous phase", st->bytes);
            dep = w1 >= 0 ? w1 : w2;
        }
        int peer = st->kind >= DUET_STEP_SEND ? peer_of[st->peer] : -1;
        switch (st->kind) {
        case DUET_STEP_COPY:
            if (sb == db && so == dof) { /* a copy onto itself (a group of one, in place): nothing */
                idx[i] = dep;
                continue;
            }
            idx[i] = duet_sched_copy(s, sb, so, db, dof, st->bytes, dep);
            break;
        case DUET_STEP_REDUCE: idx[i] = duet_sched_reduce(s, sb, so, db, dof, st->bytes, dep); break;
        case DUET_STEP_SEND: idx[i] = duet_sched_send(s, peer, sb, so, st->bytes, dep); break;
        case DUET_STEP_RECV: idx[i] = duet_sched_recv(s, peer, db, dof, st->bytes, dep); break;
        default: idx[i] = duet_sched_recv_reduce(s, peer, sb, so, db, dof, st->bytes, dep); break;
        }
    }
    return s->error;
}

/* Pieces of a phase (in its own coordinates: buffer `buf`, bytes [0, bytes)) in the whole
 * call's: its place, and its steps' indices in s (a piece written by none keeps `none`). */
static void pieces_to_call(pieces_t *p, const place_t *place, const int *idx, int none)
{
    for (int i = 0; i < p->n; i++) {
        p->p[i].lo += place[p->buf].off;
        p->p[i].hi += place[p->buf].off;
        p->p[i].step = p->p[i].step >= 0 ? idx[p->p[i].step] : none;
    }
    p->buf = place[p->buf].buf;
}

/* A flat algorithm's schedule for rank `rank` of a group of `n`: the call's shape otherwise
 * (count, in place and root as given). */
static duet_status_t build_group(const duet_coll_args_t *a, duet_coll_build_fn build, int rank, int n, int root,
                                 size_t count, int in_place, duet_sched_t *sub)
{
    duet_coll_args_t ga = *a;
    ga.rank = rank;
    ga.nranks = n;
    ga.root = root;
    ga.count = count;
    ga.in_place = in_place;
    ga.host = NULL;
    ga.nhosts = 0;
    duet_sched_init(sub, rank, n, a->elem);
    duet_status_t st = build(&ga, sub);
    if (st) duet_sched_free(sub);
    return st;
}

/* Builds a phase's schedule and appends it (append_phase); *pieces, when asked for, gets the
 * phase's last writers of its buffer `buf` over [0, bytes), in the call's coordinates. */
static duet_status_t run_phase(duet_sched_t *s, const duet_coll_args_t *a, duet_coll_build_fn build, int rank, int n,
                               int root, size_t count, int in_place, const int *peer_of, const place_t *place,
                               const pieces_t *before, int buf, pieces_t *pieces, int none)
{
    duet_sched_t sub;
    duet_status_t st = build_group(a, build, rank, n, root, count, in_place, &sub);
    if (st) return s->error = st;
    int *idx = malloc(sizeof(int) * (size_t)(sub.nsteps ? sub.nsteps : 1));
    if (!idx) st = DUET_FAIL(DUET_ERR_NO_MEMORY, COLL, "hierarchical schedule: out of host memory");
    if (!st) st = append_phase(s, &sub, peer_of, place, before, idx);
    if (!st && pieces) st = last_writers(&sub, buf, 0, count * a->elem, pieces);
    if (!st && pieces) pieces_to_call(pieces, place, idx, none);
    size_t need = place[DUET_BUF_TMP].off + sub.tmp_bytes;
    if (sub.tmp_bytes && need > s->tmp_bytes) s->tmp_bytes = need;
    free(idx);
    duet_sched_free(&sub);
    return s->error = st ? st : s->error;
}

/* ------------------------------------------------------------------------------ allreduce */
/* The pieces in which part `count` (elements) leaves step 2 on any owner of this host: from
 * the owner's own step-2 schedule (its host index is mine). */
static duet_status_t part_pieces(const duet_coll_args_t *a, duet_coll_build_fn across, const hosts_t *h, int g,
                                 size_t count, pieces_t *out)
{
    duet_sched_t sub;
    duet_status_t st = build_group(a, across, g, h->n, 0, count, 1, &sub);
    if (st) return st;
    st = last_writers(&sub, DUET_BUF_RECV, 0, count * a->elem, out);
    duet_sched_free(&sub);
    return st;
}

static duet_status_t hier_allreduce(const duet_coll_args_t *a, duet_sched_t *s, duet_coll_build_fn across,
                                    const char *name)
{
    hosts_t h;
    duet_status_t st = hosts_of(a, name, &h);
    if (st) return st;
    int me = a->rank, g = h.index[me], l = h.local[me], L = host_size(&h, g), P = h.smallest;
    size_t chunk = duet_coll_chunk(a), elem = a->elem;
    int *last_send = malloc(sizeof(int) * ((size_t)P + (size_t)h.n));
    if (!last_send) {
        hosts_free(&h);
        return s->error = DUET_FAIL(DUET_ERR_NO_MEMORY, COLL, "%s: out of host memory", name);
    }
    int *peer_of = last_send + P;
    /* 1. reduce-scatter inside the host: part j to local rank j */
    int reduced = -1; /* my part's last reduction: the chain of them ends in it */
    for (int j = 0; j < P; j++) {
        size_t lo = duet_part_start(a->count, (size_t)P, (size_t)j) * elem;
        size_t hi = duet_part_start(a->count, (size_t)P, (size_t)j + 1) * elem;
        last_send[j] = -1;
        if (j != l) {
            DUET_FOR_CHUNKS(s, lo, hi, chunk, off, len)
            last_send[j] = duet_sched_send(s, member_of(&h, g, j), DUET_BUF_SEND, off, len, -1);
            continue;
        }
        DUET_FOR_CHUNKS(s, lo, hi, chunk, off, len) {
            int src = DUET_BUF_SEND; /* my own input, then the running partial */
            for (int i = 0; i < L; i++) {
                if (i == l) continue;
                reduced = duet_sched_recv_reduce(s, member_of(&h, g, i), src, off, DUET_BUF_RECV, off, len, reduced);
                src = DUET_BUF_RECV;
            }
        }
    }
    /* 2. my part across the hosts, with the local rank l of every host */
    pieces_t done = {DUET_BUF_RECV, NULL, 0};
    if (l < P && s->error == DUET_OK) {
        size_t lo = duet_part_start(a->count, (size_t)P, (size_t)l) * elem;
        size_t hi = duet_part_start(a->count, (size_t)P, (size_t)l + 1) * elem;
        if (hi > lo) {
            for (int x = 0; x < h.n; x++) peer_of[x] = member_of(&h, x, l);
            place_t place[DUET_BUF_COUNT] = {{L > 1 ? DUET_BUF_RECV : DUET_BUF_SEND, lo}, {DUET_BUF_RECV, lo},
                                             {DUET_BUF_TMP, 0}};
            piece_t whole = {lo, hi, reduced};
            pieces_t before = {DUET_BUF_RECV, &whole, 1};
            st = run_phase(s, a, across, g, h.n, 0, (hi - lo) / elem, L > 1 ? 1 : a->in_place, peer_of, place,
                           &before, DUET_BUF_RECV, &done, reduced);
        }
    }
    /* 3. allgather inside the host: each owner sends the pieces of its part as they finish */
    for (int j = 0; j < P && L > 1 && s->error == DUET_OK && st == DUET_OK; j++) {
        size_t lo = duet_part_start(a->count, (size_t)P, (size_t)j) * elem;
        size_t hi = duet_part_start(a->count, (size_t)P, (size_t)j + 1) * elem;
        if (hi == lo) continue;
        if (j == l) {
            for (int k = 0; k < done.n; k++)
                DUET_FOR_CHUNKS(s, done.p[k].lo, done.p[k].hi, chunk, off, len)
            for (int i = 0; i < L; i++)
                if (i != l) duet_sched_send(s, member_of(&h, g, i), DUET_BUF_RECV, off, len, done.p[k].step);
            continue;
        }
        pieces_t theirs = {DUET_BUF_RECV, NULL, 0};
        st = part_pieces(a, across, &h, g, (hi - lo) / elem, &theirs);
        for (int k = 0; st == DUET_OK && k < theirs.n; k++)
            DUET_FOR_CHUNKS(s, lo + theirs.p[k].lo, lo + theirs.p[k].hi, chunk, off, len)
        /* in place, my input of this part was read by my step-1 sends: after them */
        duet_sched_recv(s, member_of(&h, g, j), DUET_BUF_RECV, off, len, a->in_place ? last_send[j] : -1);
        free(theirs.p);
    }
    free(done.p);
    free(last_send);
    hosts_free(&h);
    if (st && !s->error) s->error = st;
    return s->error;
}

duet_status_t duet_coll_hier_ring_allreduce(const duet_coll_args_t *a, duet_sched_t *s)
{
    DUET_SCHED_BEGIN(a, s);
    return hier_allreduce(a, s, duet_coll_ring_allreduce, "hring");
}

duet_status_t duet_coll_hier_dbtree_allreduce(const duet_coll_args_t *a, duet_sched_t *s)
{
    DUET_SCHED_BEGIN(a, s);
    return hier_allreduce(a, s, duet_coll_dbtree_allreduce, "hdbtree");
}

/* ----------------------------------------------------------------------- broadcast, reduce */
/* The leader of host x: the root on the root's host, else its first rank. */
static int leader_of(const hosts_t *h, int x, int root)
{
    return h->index[root] == x ? root : member_of(h, x, 0);
}

duet_status_t duet_coll_hier_tree_broadcast(const duet_coll_args_t *a, duet_sched_t *s)
{
    DUET_SCHED_BEGIN(a, s);
    hosts_t h;
    duet_status_t st = hosts_of(a, "htree", &h);
    if (st) return st;
    s->recv_stable = 1; /* each chunk of the receive buffer is written once, then only sent */
    int me = a->rank, g = h.index[me], L = host_size(&h, g), lead = leader_of(&h, g, a->root);
    int *peer_of = malloc(sizeof(int) * (size_t)(h.n > L ? h.n : L));
    if (!peer_of) st = DUET_FAIL(DUET_ERR_NO_MEMORY, COLL, "htree: out of host memory");
    place_t same[DUET_BUF_COUNT] = {{DUET_BUF_SEND, 0}, {DUET_BUF_RECV, 0}, {DUET_BUF_TMP, 0}};
    pieces_t arrived = {DUET_BUF_RECV, NULL, 0};
    if (!st && me == lead) { /* across the hosts' leaders */
        for (int x = 0; x < h.n; x++) peer_of[x] = leader_of(&h, x, a->root);
        st = run_phase(s, a, duet_coll_tree_broadcast, g, h.n, h.index[a->root], a->count, a->in_place, peer_of, same,
                       NULL, DUET_BUF_RECV, &arrived, -1);
    }
    if (!st && L > 1) { /* inside my host, from its leader's receive buffer */
        for (int i = 0; i < L; i++) peer_of[i] = member_of(&h, g, i);
        place_t inside[DUET_BUF_COUNT] = {{DUET_BUF_RECV, 0}, {DUET_BUF_RECV, 0}, {DUET_BUF_TMP, 0}};
        st = run_phase(s, a, duet_coll_tree_broadcast, h.local[me], L, h.local[lead], a->count, 1, peer_of, inside,
                       &arrived, DUET_BUF_RECV, NULL, -1);
    }
    free(arrived.p);
    free(peer_of);
    hosts_free(&h);
    if (st && !s->error) s->error = st;
    return s->error;
}

duet_status_t duet_coll_hier_tree_reduce(const duet_coll_args_t *a, duet_sched_t *s)
{
    DUET_SCHED_BEGIN(a, s);
    hosts_t h;
    duet_status_t st = hosts_of(a, "htree", &h);
    if (st) return st;
    int me = a->rank, root = a->root, g = h.index[me], L = host_size(&h, g), lead = leader_of(&h, g, root);
    size_t bytes = a->count * a->elem;
    /* my host's partial: the root's receive buffer, or the first `bytes` of a leader's
     * scratch; the phases' own scratch follows it */
    place_t partial = me == root ? (place_t){DUET_BUF_RECV, 0} : (place_t){DUET_BUF_TMP, 0};
    int *peer_of = malloc(sizeof(int) * (size_t)(h.n > L ? h.n : L));
    if (!peer_of) st = DUET_FAIL(DUET_ERR_NO_MEMORY, COLL, "htree: out of host memory");
    pieces_t reduced = {partial.buf, NULL, 0};
    int my_in_place = me == root ? a->in_place : 0;
    if (!st && L > 1) { /* inside my host, to its leader */
        for (int i = 0; i < L; i++) peer_of[i] = member_of(&h, g, i);
        place_t inside[DUET_BUF_COUNT] = {{DUET_BUF_SEND, 0}, partial, {DUET_BUF_TMP, bytes}};
        st = run_phase(s, a, duet_coll_tree_reduce, h.local[me], L, h.local[lead], a->count, my_in_place, peer_of,
                       inside, NULL, DUET_BUF_RECV, me == lead ? &reduced : NULL, -1);
        if (!st && me == lead && me != root && bytes > s->tmp_bytes) s->tmp_bytes = bytes;
    }
    if (!st && me == lead) { /* across the hosts' leaders, to the root */
        for (int x = 0; x < h.n; x++) peer_of[x] = leader_of(&h, x, root);
        place_t across[DUET_BUF_COUNT] = {L > 1 ? partial : (place_t){DUET_BUF_SEND, 0}, partial, {DUET_BUF_TMP, bytes}};
        st = run_phase(s, a, duet_coll_tree_reduce, g, h.n, h.index[root], a->count, L > 1 ? 1 : my_in_place, peer_of,
                       across, L > 1 ? &reduced : NULL, DUET_BUF_RECV, NULL, -1);
        if (!st && L > 1 && me != root && bytes > s->tmp_bytes) s->tmp_bytes = bytes;
    }
    free(reduced.p);
    free(peer_of);
    hosts_free(&h);
    if (st && !s->error) s->error = st;
    return s->error;
}
