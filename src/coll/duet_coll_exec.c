/*
 * The host executor: runs one rank's schedule over the collective channels.
 *
 * A step may run when its `dep` is done and, for a message, when it is the first pending
 * send to its peer (or receive from it) and the peer's inbox has room (or the message has
 * arrived). The executor keeps, per peer, the head of its send queue and of its receive
 * queue, and a list of the local steps (copies, reductions) not yet run; a sweep advances
 * every head as far as it can and runs every local step whose dependency is done. Nothing
 * is bounded by a window, so a schedule that lists many sends before the matching receives
 * still flows. Steps of different chunks overlap: chunk 2 of round 1 moves while chunk 1 of
 * round 2 waits — the pipelining of a chunked ring. A sweep that moves nothing waits one
 * turn of the wait loop (spin, yield, sleep; deadline and abort checked).
 *
 * Every message is signed with its call's signature and checked on arrival; while a wait
 * lasts, the peers that heads wait for (not held back by a local dependency) are looked at:
 * their published calls (duet_coll_sig.h) catch mismatched calls that send nothing here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "coll/duet_coll.h"
#include "coll/duet_coll_sig.h"

typedef struct {
    duet_comm_t c;
    const duet_sched_t *s;
    const duet_coll_call_t *calls;
    uint8_t *done;
} exec_t;

/* Runs step i if it can; 1 if it ran, 0 if not yet, <0 (a status) on error. */
static int try_step(exec_t *x, const duet_step_t *st)
{
    const duet_coll_call_t *call = &x->calls[st->call];
    duet_coll_chan_t *ch = call->chan;
    char *src = call->buf[st->src_buf] + st->src_off, *dst = call->buf[st->dst_buf] + st->dst_off;
    switch (st->kind) {
    case DUET_STEP_COPY:
        memmove(dst, src, st->bytes);
        return 1;
    case DUET_STEP_REDUCE:
        duet_reduce_op(call->dt, call->op, dst, dst, src, st->bytes / call->elem);
        return 1;
    case DUET_STEP_SEND:
        return duet_coll_chan_try_send(x->c, ch, st->peer, src, st->bytes, call->stable[st->src_buf],
                                       (uint32_t)call->call_no, call->sig.hash);
    default: {
        duet_chan_got_t got;
        got.bad = 0;
        const void *msg =
            duet_coll_chan_peek(x->c, ch, st->peer, st->bytes, (uint32_t)call->call_no, call->sig.hash, &got);
        if (!msg)
            return DUET_UNLIKELY(got.bad) ? (int)duet_coll_sig_bad_message(x->c, st->peer, call, &got, st->bytes)
                                          : 0;
        if (st->kind == DUET_STEP_RECV && call->stream)
            duet_copy_stream(dst, msg, st->bytes);
        else if (st->kind == DUET_STEP_RECV)
            memcpy(dst, msg, st->bytes);
        else
            duet_reduce_op(call->dt, call->op, dst, src, msg, st->bytes / call->elem);
        duet_status_t rst = duet_coll_chan_release(x->c, ch, st->peer);
        return rst ? (int)rst : 1;
    }
    }
}

static int is_message(const duet_step_t *st) { return st->kind >= DUET_STEP_SEND; }

/* Runs the head of one queue as far as it goes; returns steps run, or <0 on error. */
static int advance(exec_t *x, int *head, const int *next)
{
    int ran = 0;
    while (*head >= 0) {
        const duet_step_t *st = &x->s->steps[*head];
        if (st->dep >= 0 && !x->done[st->dep]) break;
        int r = try_step(x, st);
        if (r < 0) return r;
        if (r == 0) break;
        x->done[*head] = 1;
        *head = next[*head];
        ran++;
    }
    return ran;
}

/* While a sweep moves nothing: each head that waits on its channel alone (its dependency
 * done) for a mapped peer, in a collective, has that peer looked at. *left: peers seen gone
 * past their call at this look (a bit per queue, up to 64); seen at two looks in a row, with
 * sweeps between that still found nothing, they left without what the head waits for. A net
 * peer is looked at only in long waits (duet_coll_sig_net_due). */
static duet_status_t look_at_peers(exec_t *x, const int *heads, uint64_t *left, const duet_waiter_t *w)
{
    uint64_t now = 0;
    int net_due = -1; /* not asked yet */
    for (int q = 0; q < 2 * x->c->size; q++) {
        if (heads[q] < 0) continue;
        const duet_step_t *st = &x->s->steps[heads[q]];
        const duet_coll_call_t *call = &x->calls[st->call];
        if ((st->dep >= 0 && !x->done[st->dep]) || call->p2p) continue;
        if (!call->chan->peer_block[st->peer] && !(net_due < 0 ? (net_due = duet_coll_sig_net_due(w)) : net_due))
            continue;
        int past = 0;
        duet_status_t err = duet_coll_sig_check_peer(x->c, st->peer, call->call_no, &past);
        if (err) return err;
        if (!past) continue;
        if (q >= 64) continue; /* (a mask of 64 queues: further ones only by their fields) */
        uint64_t bit = 1ull << q;
        if (*left & bit) return duet_coll_sig_peer_left(x->c, st->peer, call->call_no);
        now |= bit;
    }
    *left = now;
    return DUET_OK;
}

/* A wait's label ("duet_broadcast #7 (tree broadcast)"), written only when the waiter reads
 * it: a snprintf per wait was 3 % of a small call, and most waits are short. */
typedef struct {
    char text[96];
    const char *what, *name;
    uint64_t call;
} wait_label_t;

static void write_label(void *arg)
{
    wait_label_t *l = arg;
    snprintf(l->text, sizeof l->text, "%s #%llu (%s)", l->what, (unsigned long long)l->call,
             l->name ? l->name : "a schedule");
}

/* Publishes the collectives of a schedule's calls (duet_coll_sig.h). Inline: a loop around one
 * call was half the cost of publishing a single call. */
static inline __attribute__((always_inline)) void publish(duet_comm_t c, const duet_coll_call_t *calls, int ncalls)
{
    for (int i = 0; i < ncalls; i++)
        if (!calls[i].p2p)
            duet_coll_sig_publish(c, calls[i].call_no, &calls[i].sig);
}

duet_status_t duet_coll_execute(duet_comm_t c, const duet_sched_t *s, const duet_coll_call_t *calls, int ncalls,
                                const char *what)
{
    if (s->error) return s->error;
    if (s->nsteps == 0) {
        publish(c, calls, ncalls);
        return DUET_OK;
    }
    int n = c->size, nsteps = s->nsteps;
    /* bookkeeping in the communicator's reusable buffer: no allocation per call.
     * heads[2n] (send, receive per peer), tails[2n], next[nsteps], local[nsteps], done[nsteps] */
    size_t need = sizeof(int) * (4 * (size_t)n + 2 * (size_t)nsteps) + (size_t)nsteps;
    if (need > c->exec_mem_bytes) {
        void *mem = realloc(c->exec_mem, need);
        if (!mem) return DUET_FAIL(DUET_ERR_NO_MEMORY, COLL, "%s: out of host memory", what);
        c->exec_mem = mem;
        c->exec_mem_bytes = need;
    }
    int *heads = c->exec_mem, *tails = heads + 2 * n, *next = tails + 2 * n, *local = next + nsteps;
    exec_t x = {c, s, calls, (uint8_t *)(local + nsteps)};
    memset(x.done, 0, (size_t)nsteps);
    for (int q = 0; q < 2 * n; q++) heads[q] = tails[q] = -1;
    int nlocal = 0;
    for (int i = 0; i < nsteps; i++) { /* thread each message into its peer's queue */
        const duet_step_t *st = &s->steps[i];
        next[i] = -1;
        if (!is_message(st)) {
            local[nlocal++] = i;
            continue;
        }
        int q = 2 * st->peer + (st->kind != DUET_STEP_SEND);
        if (tails[q] >= 0) next[tails[q]] = i;
        else heads[q] = i;
        tails[q] = i;
    }
    int pending = nsteps, waiting = 0, stuck = 0, spinning = c->wait_ctx.spin_us > 0, published = 0;
    uint64_t left = 0;
    duet_status_t st = DUET_OK;
    duet_waiter_t w;
    wait_label_t label;
    while (pending > 0) {
        int progress = 0;
        for (int q = 0; q < 2 * n; q++) {
            if (heads[q] < 0) continue;
            int r = advance(&x, &heads[q], next);
            if (r < 0) return (duet_status_t)r;
            if (r == 0 && !progress) stuck = heads[q];
            progress += r;
        }
        int kept = 0;
        for (int k = 0; k < nlocal; k++) { /* local steps: any whose dependency is done */
            int i = local[k];
            const duet_step_t *stp = &s->steps[i];
            if (stp->dep >= 0 && !x.done[stp->dep]) {
                local[kept++] = i;
                continue;
            }
            try_step(&x, stp);
            x.done[i] = 1;
            progress++;
        }
        nlocal = kept;
        pending -= progress;
        if (!published) { /* after the first sends (a miss on the published line holds back what follows it) */
            publish(c, calls, ncalls);
            published = 1;
        }
        if (progress) {
            waiting = 0;
            left = 0;
            continue;
        }
        if (!waiting) { /* the call named as a report of the wait shows it (once per wait; written if read) */
            label.what = what, label.name = s->name, label.call = calls[s->steps[stuck].call].call_no;
            duet_waiter_init(&w, &c->wait_ctx, "%s, step %llu of %llu", label.text, (unsigned long long)stuck,
                             (unsigned long long)nsteps, s->steps[stuck].peer);
            duet_waiter_label_later(&w, write_label, &label);
            waiting = 1;
        }
        if ((st = duet_waiter_turn(&w))) return st;
        if (duet_coll_sig_due(&w, spinning) && (st = look_at_peers(&x, heads, &left, &w))) return st;
    }
    /* messages sent by reference are read from my buffers: the call ends when they are */
    return c->chan->byref_any ? duet_coll_chan_byref_wait(c, c->chan, what) : DUET_OK;
}
