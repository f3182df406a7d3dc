/* Call signatures: hashing, the published calls, and what a mismatch does (design in the header). */
#include <stdio.h>
#include <string.h>
#include "coll/duet_coll_sig.h"
#include "coll/duet_coll_tune.h"
#include "tport/duet_tport.h"

static int reduces(int kind) { return duet_coll_sig_reduces_((duet_coll_kind_t)kind); }
static int rooted(int kind) { return duet_coll_sig_rooted_((duet_coll_kind_t)kind); }

static duet_coll_sig_line_t *lines_at(char *block, const duet_coll_chan_t *ch)
{
    return (duet_coll_sig_line_t *)(void *)(block + ch->sig_off);
}
static size_t report_off(const duet_coll_chan_t *ch, int finder)
{
    return ch->sig_off + DUET_SIG_HISTORY * sizeof(duet_coll_sig_line_t) + (size_t)finder * sizeof(duet_coll_sig_report_t);
}

/* A consistent copy of `rank`'s published line for `call` (a get for a net peer): 1 when that
 * rank has published it and it is still there. */
static int read_line(duet_comm_t c, int rank, uint64_t call, duet_coll_sig_line_t *out)
{
    duet_coll_chan_t *ch = c->chan;
    size_t at = (call % DUET_SIG_HISTORY) * sizeof(duet_coll_sig_line_t);
    if (!ch->peer_block[rank]) {
        duet_tport_ep_t *ep = &c->heap->eps[c->heap_pe[rank]];
        if (ep->ops->get(ep, out, ch->peer_off[rank] + ch->sig_off + at, sizeof *out)) return 0;
        return atomic_load_explicit(&out->call, memory_order_relaxed) == call;
    }
    const duet_coll_sig_line_t *l = lines_at(ch->peer_block[rank], ch) + call % DUET_SIG_HISTORY;
    if (atomic_load_explicit(&l->call, memory_order_acquire) != call) return 0;
    out->a = l->a;
    atomic_thread_fence(memory_order_acquire); /* the writer zeroes call before it rewrites a line */
    if (atomic_load_explicit(&l->call, memory_order_relaxed) != call) return 0;
    atomic_store_explicit(&out->call, call, memory_order_relaxed);
    return 1;
}

/* Whether mapped `rank` has started a run of calls after `call` (so it has left `call`). */
static int gone_past(duet_comm_t c, int rank, uint64_t call)
{
    const duet_coll_sig_line_t *l = lines_at(c->chan->peer_block[rank], c->chan) + (call + 1) % DUET_SIG_HISTORY;
    uint64_t k = atomic_load_explicit(&l->call, memory_order_acquire);
    uint64_t first = l->a.first;
    atomic_thread_fence(memory_order_acquire);
    return k > call && first > call && atomic_load_explicit(&l->call, memory_order_relaxed) == k;
}

/* The call as text: "allreduce of 4 int32 (sum)". */
static void call_text(const duet_coll_sig_line_t *l, char *buf, size_t len)
{
    int n = snprintf(buf, len, "%s of %llu %s", duet_coll_kind_name((duet_coll_kind_t)l->a.kind),
                     (unsigned long long)l->a.count, duet_dtype_name((duet_datatype_t)l->a.dt));
    if (n > 0 && (size_t)n < len && reduces(l->a.kind))
        n += snprintf(buf + n, len - (size_t)n, " (%s)", duet_op_name((duet_op_t)l->a.op));
    if (n > 0 && (size_t)n < len && rooted(l->a.kind)) snprintf(buf + n, len - (size_t)n, " root %d", l->a.root);
}

/* When ranks a and b published other arguments for one call: the text naming both ranks and the
 * first field that differs ("rank 0 called allreduce with count 4, rank 1 with 8 (call #7)"),
 * and 1; 0 when they agree. */
static int field_text(int a, const duet_coll_sig_line_t *la, int b, const duet_coll_sig_line_t *lb, uint64_t call,
                      char *buf, size_t len)
{
    if (a > b) { /* the lower rank first, so that every finder writes the same text */
        int t = a;
        a = b, b = t;
        const duet_coll_sig_line_t *tl = la;
        la = lb, lb = tl;
    }
    const char *kind = duet_coll_kind_name((duet_coll_kind_t)la->a.kind);
    unsigned long long k = (unsigned long long)call;
    if (la->a.kind != lb->a.kind)
        snprintf(buf, len, "rank %d called %s, rank %d %s (call #%llu)", a, kind, b,
                 duet_coll_kind_name((duet_coll_kind_t)lb->a.kind), k);
    else if (la->a.count != lb->a.count)
        snprintf(buf, len, "rank %d called %s with count %llu, rank %d with %llu (call #%llu)", a, kind,
                 (unsigned long long)la->a.count, b, (unsigned long long)lb->a.count, k);
    else if (la->a.dt != lb->a.dt)
        snprintf(buf, len, "rank %d called %s with datatype %s, rank %d with %s (call #%llu)", a, kind,
                 duet_dtype_name((duet_datatype_t)la->a.dt), b, duet_dtype_name((duet_datatype_t)lb->a.dt), k);
    else if (reduces(la->a.kind) && la->a.op != lb->a.op)
        snprintf(buf, len, "rank %d called %s with op %s, rank %d with %s (call #%llu)", a, kind,
                 duet_op_name((duet_op_t)la->a.op), b, duet_op_name((duet_op_t)lb->a.op), k);
    else if (rooted(la->a.kind) && la->a.root != lb->a.root)
        snprintf(buf, len, "rank %d called %s with root %d, rank %d with %d (call #%llu)", a, kind, la->a.root, b,
                 lb->a.root, k);
    else if (la->a.path != lb->a.path && (!la->a.path || !lb->a.path))
        snprintf(buf, len, "rank %d called %s on buffers %s the GPU heap, rank %d on buffers %s it (call #%llu): a GPU "
                 "collective's buffers lie in the heap on every rank or on none", a, kind,
                 la->a.path ? "in" : "outside", b, lb->a.path ? "in" : "outside", k);
    else if (la->a.path != lb->a.path)
        snprintf(buf, len, "rank %d called %s with %d direct-kernel blocks, rank %d with %d (call #%llu): GPUs of "
                 "different sizes", a, kind, la->a.path, b, lb->a.path, k);
    else
        return 0;
    return 1;
}

/* Writes the report into every member's line of mine (`named`: it names the differing field),
 * revokes c with DUET_ERR_INVALID_ARG and returns it, the message set. */
static duet_status_t fail_(duet_comm_t c, const char *text, int named)
{
    duet_coll_chan_t *ch = c->chan;
    duet_coll_sig_report_t rep;
    memset(&rep, 0, sizeof rep);
    atomic_store_explicit(&rep.set, named ? 2 : 1, memory_order_relaxed);
    size_t n = strlen(text) < sizeof rep.text - 1 ? strlen(text) : sizeof rep.text - 1;
    memcpy(rep.text, text, n); /* (zeroed: terminated) */
    size_t at = report_off(ch, c->rank);
    for (int r = 0; r < c->size; r++) {
        if (!ch->peer_block[r]) { /* a net member: by a put, ordered before the revoke's atomics */
            duet_tport_ep_t *ep = &c->heap->eps[c->heap_pe[r]];
            if (ep->ops->put(ep, ch->peer_off[r] + at, &rep, sizeof rep) == DUET_OK) (void)ep->ops->fence(ep);
            continue;
        }
        duet_coll_sig_report_t *to = (duet_coll_sig_report_t *)(void *)(ch->peer_block[r] + at);
        if (atomic_load_explicit(&to->set, memory_order_relaxed)) continue; /* my first finding stays */
        memcpy(to->text, rep.text, sizeof to->text);
        atomic_store_explicit(&to->set, named ? 2 : 1, memory_order_release);
    }
    duet_comm_revoke_status_(c, DUET_ERR_INVALID_ARG);
    return DUET_FAIL(DUET_ERR_INVALID_ARG, COLL, "%s: the ranks made different collective calls; rank %d revoked "
                     "the communicator (duet_comm_shrink gives a new one)", text, c->rank);
}
static duet_status_t fail(duet_comm_t c, const char *text) { return fail_(c, text, 1); }   /* names the field */
static duet_status_t fail_unnamed(duet_comm_t c, const char *text) { return fail_(c, text, 0); }

duet_status_t duet_coll_sig_check_peer(duet_comm_t c, int peer, uint64_t call, int *past)
{
    duet_coll_sig_line_t theirs, mine;
    char text[512];
    *past = 0;
    if (read_line(c, peer, call, &theirs) && read_line(c, c->rank, call, &mine) &&
        field_text(c->rank, &mine, peer, &theirs, call, text, sizeof text))
        return fail(c, text);
    /* a net peer's later line may be seen before its last puts to me land: no "gone past" there */
    if (c->chan->peer_block[peer]) *past = gone_past(c, peer, call);
    return DUET_OK;
}

/* My call as a published line. */
static void line_of(const duet_coll_call_t *w, duet_coll_sig_line_t *l)
{
    memset(l, 0, sizeof *l);
    atomic_store_explicit(&l->call, w->call_no, memory_order_relaxed);
    l->a = w->sig;
}

/* Whether a report that names the field is in my block (another rank's). */
static int named_report_here(duet_comm_t c)
{
    for (int r = 0; r < c->size; r++) {
        const duet_coll_sig_report_t *rep =
            (const duet_coll_sig_report_t *)(const void *)(c->chan->peer_block[c->rank] + report_off(c->chan, r));
        if (atomic_load_explicit(&rep->set, memory_order_acquire) == 2) return 1;
    }
    return 0;
}

/* Peer's published line for `call`: 1 when read. A message can come before its sender's line
 * (published after the first sends), and a loaded machine can keep the sender off its core for
 * a while, so this waits for it (1 s at most, through the wait loop; less when the peer has gone
 * past, or another rank's report that names the field is here: that one will be shown). */
static int await_line(duet_comm_t c, int peer, uint64_t call, duet_coll_sig_line_t *out)
{
    if (read_line(c, peer, call, out)) return 1;
    duet_wait_ctx_t ctx = c->wait_ctx;
    ctx.timeout_s = 1.0;
    ctx.abort_flag = NULL; /* another rank's revoke does not stop the peer from publishing */
    duet_waiter_t w;
    duet_waiter_init(&w, &ctx, "%s: rank %llu's published call", "a mismatch's report", (unsigned long long)peer, 0, peer);
    while (!read_line(c, peer, call, out)) {
        if ((c->chan->peer_block[peer] && gone_past(c, peer, call)) || named_report_here(c) || duet_waiter_turn(&w))
            return 0;
    }
    return 1;
}

/* The text for my call `want` and peer's of the same number, when they differ (1); 0 when
 * they agree; -1 when peer's line is not to be had. *mine gets my call as a line. */
static int compare(duet_comm_t c, int peer, const duet_coll_call_t *want, duet_coll_sig_line_t *mine, char *text,
                   size_t len)
{
    duet_coll_sig_line_t theirs;
    line_of(want, mine);
    /* mine first: the peer may be here too, waiting for my line */
    duet_coll_sig_publish(c, want->call_no, &want->sig);
    if (!await_line(c, peer, want->call_no, &theirs)) return -1;
    return field_text(c->rank, mine, peer, &theirs, want->call_no, text, len);
}

duet_status_t duet_coll_sig_peer_left(duet_comm_t c, int peer, uint64_t call)
{
    duet_coll_sig_line_t mine, theirs;
    char text[512], what[64];
    int cmp = -1;
    if (read_line(c, c->rank, call, &mine) && read_line(c, peer, call, &theirs))
        cmp = field_text(c->rank, &mine, peer, &theirs, call, text, sizeof text);
    else if (!read_line(c, c->rank, call, &mine))
        memset(&mine, 0, sizeof mine);
    if (cmp == 1) return fail(c, text);
    call_text(&mine, what, sizeof what);
    if (cmp == 0)
        snprintf(text, sizeof text, "ranks %d and %d made the same call #%llu (%s), but rank %d left it without the "
                 "message rank %d waits for (different DUET_ALGO / DUET_COLL_* settings?)", c->rank < peer ? c->rank : peer,
                 c->rank < peer ? peer : c->rank, (unsigned long long)call, what, peer, c->rank);
    else
        snprintf(text, sizeof text, "rank %d went past call #%llu without the message rank %d waits for in it (%s)",
                 peer, (unsigned long long)call, c->rank, what);
    return fail_unnamed(c, text);
}

duet_status_t duet_coll_sig_bad_message(duet_comm_t c, int peer, const duet_coll_call_t *want,
                                        const duet_chan_got_t *got, uint64_t want_len)
{
    char text[512], what[64];
    uint64_t call = want->call_no;
    if (want->p2p) {
        if (got->len == want_len)
            snprintf(text, sizeof text, "rank %d's send #%u to rank %d does not match rank %d's receive #%llu from "
                     "it: their sizes in bytes differ", peer, got->call, c->rank, c->rank, (unsigned long long)call);
        else
            snprintf(text, sizeof text, "rank %d's send #%u to rank %d carries %llu bytes where rank %d's receive "
                     "expects %llu", peer, got->call, c->rank, (unsigned long long)got->len, c->rank,
                     (unsigned long long)want_len);
        return fail(c, text);
    }
    duet_coll_sig_line_t mine;
    int cmp = compare(c, peer, want, &mine, text, sizeof text);
    if (cmp == 1) return fail(c, text);
    call_text(&mine, what, sizeof what);
    if (got->call != (uint32_t)call)
        snprintf(text, sizeof text, "rank %d sent a message of its call #%u to rank %d, which is in call #%llu (%s)",
                 peer, got->call, c->rank, (unsigned long long)call, what), cmp = -1;
    else if (cmp == 0)
        snprintf(text, sizeof text, "ranks %d and %d made the same call #%llu (%s), but rank %d sent a %llu-byte "
                 "message where rank %d expects %llu (different DUET_ALGO / DUET_COLL_* settings?)",
                 c->rank < peer ? c->rank : peer, c->rank < peer ? peer : c->rank, (unsigned long long)call, what, peer,
                 (unsigned long long)got->len, c->rank, (unsigned long long)want_len);
    else
        snprintf(text, sizeof text, "rank %d's message of call #%llu has arguments other than rank %d's (%s): "
                 "count, datatype, op or root differ", peer, (unsigned long long)call, c->rank, what);
    return fail_unnamed(c, text);
}

int duet_coll_sig_explain(duet_comm_t c, duet_status_t st, const char *fn)
{
    if (st != DUET_ERR_INVALID_ARG || !duet_comm_is_live(c) || c->magic != DUET_COMM_MAGIC || !c->chan) return 0;
    if (atomic_load_explicit(&duet_comm_ft(c)->abort, memory_order_acquire) != DUET_ERR_INVALID_ARG) return 0;
    duet_coll_chan_t *ch = c->chan;
    const duet_coll_sig_report_t *best = NULL;
    int by = -1;
    uint64_t best_set = 0;
    for (int r = 0; r < c->size; r++) { /* one that names the field, from the lowest rank */
        const duet_coll_sig_report_t *rep =
            (const duet_coll_sig_report_t *)(const void *)(ch->peer_block[c->rank] + report_off(ch, r));
        uint64_t set = atomic_load_explicit(&rep->set, memory_order_acquire);
        if (set > best_set) best = rep, by = r, best_set = set;
    }
    if (!best) return 0;
    char text[sizeof best->text];
    memcpy(text, best->text, sizeof text);
    text[sizeof text - 1] = '\0';
    duet_error_set(st, "%s: %s: the ranks made different collective calls; rank %d revoked the communicator "
                   "(duet_comm_shrink gives a new one)", fn, text, by);
    return 1;
}

duet_status_t duet_coll_sig_post(duet_comm_t c, const duet_coll_sig_t *sig)
{
    duet_coll_sig_publish(c, sig->call, &sig->a);
    if (c->size < 2 || !duet_cfg()->test_sig_post) return DUET_OK;
    duet_coll_sig_line_t mine, theirs;
    char text[512];
    int nb[2] = {(c->rank + c->size - 1) % c->size, (c->rank + 1) % c->size};
    for (int i = 0; i < (nb[0] == nb[1] ? 1 : 2); i++) {
        if (!c->chan->peer_block[nb[i]] || !read_line(c, nb[i], sig->call, &theirs)) continue;
        if (read_line(c, c->rank, sig->call, &mine) && field_text(c->rank, &mine, nb[i], &theirs, sig->call, text, sizeof text))
            return fail(c, text);
    }
    return DUET_OK;
}

duet_status_t duet_coll_sig_gpu_found(duet_comm_t c, int peer, uint64_t call, uint64_t mine, uint64_t theirs)
{
    duet_coll_sig_line_t ml, tl;
    char text[512], what[64];
    /* the call the word came from (its 64-bit number near mine), then mine: the first of them
     * whose published lines both ranks still have, and differ, names the field */
    uint64_t from = call + (uint64_t)(int64_t)(int32_t)((uint32_t)(theirs >> 32) - (uint32_t)call);
    uint64_t tries[2] = {from, call};
    for (int i = 0; i < (from == call || !mine ? 1 : 2); i++)
        if (theirs && read_line(c, c->rank, tries[i], &ml) && await_line(c, peer, tries[i], &tl) &&
            field_text(c->rank, &ml, peer, &tl, tries[i], text, sizeof text))
            return fail(c, text);
    if (!read_line(c, c->rank, call, &ml)) memset(&ml, 0, sizeof ml);
    call_text(&ml, what, sizeof what);
    if (!mine)
        snprintf(text, sizeof text, "rank %d's message of its GPU collective call #%llu reached rank %d in a send / "
                 "receive", peer, (unsigned long long)from, c->rank);
    else if (!theirs)
        snprintf(text, sizeof text, "rank %d's message of a send / receive reached rank %d in GPU collective call "
                 "#%llu (%s)", peer, c->rank, (unsigned long long)call, what);
    else if (from != call)
        snprintf(text, sizeof text, "rank %d's message of its GPU call #%llu reached rank %d in call #%llu (%s)", peer,
                 (unsigned long long)from, c->rank, (unsigned long long)call, what);
    else
        snprintf(text, sizeof text, "rank %d's GPU call #%llu has arguments other than rank %d's (%s): count, "
                 "datatype, op or root differ", peer, (unsigned long long)call, c->rank, what);
    return fail_unnamed(c, text);
}
