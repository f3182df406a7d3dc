/*
 * The host executor: runs one rank's schedule over the collective channels.
 *
 * It sweeps a window of the steps not yet done, running every step that can run now:
 * its `dep` is done, it is the earliest pending send to its peer (or receive from it), and
 * for a send the peer's inbox has room, for a receive the message has arrived. Steps of
 * different chunks therefore overlap: chunk 2 of round 1 can move while chunk 1 of round 2
 * waits — the pipelining of a chunked ring. A sweep that moves nothing waits one turn of
 * the wait loop (spin, yield, sleep; deadline and abort checked).
 */
#include <stdlib.h>
#include <string.h>
#include "coll/duet_coll.h"

#define WINDOW 512 /* steps looked at per sweep; schedules interleave their peers well within it */

typedef struct {
    duet_comm_t c;
    const duet_sched_t *s;
    const duet_coll_call_t *calls;
    uint8_t *done;
    uint32_t *send_blocked, *recv_blocked; /* sweep number in which the peer's FIFO is held up */
} exec_t;

/* Runs step i if it can; 1 if it ran, 0 if not yet, <0 (a status) on error. */
static int try_step(exec_t *x, const duet_step_t *st)
{
    duet_coll_chan_t *ch = x->c->chan;
    const duet_coll_call_t *call = &x->calls[st->call];
    char *src = call->buf[st->src_buf] + st->src_off, *dst = call->buf[st->dst_buf] + st->dst_off;
    switch (st->kind) {
    case DUET_STEP_COPY:
        memmove(dst, src, st->bytes);
        return 1;
    case DUET_STEP_REDUCE:
        duet_reduce_op(call->dt, call->op, dst, dst, src, st->bytes / call->elem);
        return 1;
    case DUET_STEP_SEND:
        return duet_coll_chan_try_send(x->c, ch, st->peer, src, st->bytes);
    default: {
        duet_status_t err = DUET_OK;
        const void *msg = duet_coll_chan_peek(x->c, ch, st->peer, st->bytes, &err);
        if (!msg) return err;
        if (st->kind == DUET_STEP_RECV)
            memcpy(dst, msg, st->bytes);
        else
            duet_reduce_op(call->dt, call->op, dst, src, msg, st->bytes / call->elem);
        duet_coll_chan_release(x->c, ch, st->peer);
        return 1;
    }
    }
}

duet_status_t duet_coll_execute(duet_comm_t c, const duet_sched_t *s, const duet_coll_call_t *calls,
                                const char *what)
{
    if (s->error) return s->error;
    if (s->nsteps == 0) return DUET_OK;
    exec_t x = {c, s, calls, NULL, NULL, NULL};
    duet_status_t st = DUET_OK;
    /* bookkeeping lives in the communicator's reusable buffer: no allocation per call */
    size_t fifo_bytes = sizeof(uint32_t) * (size_t)c->size, need = 2 * fifo_bytes + (size_t)s->nsteps;
    if (need > c->exec_mem_bytes) {
        void *mem = realloc(c->exec_mem, need);
        if (!mem) return DUET_FAIL(DUET_ERR_NO_MEMORY, COLL, "%s: out of host memory", what);
        c->exec_mem = mem;
        c->exec_mem_bytes = need;
    }
    memset(c->exec_mem, 0, need);
    x.send_blocked = c->exec_mem;
    x.recv_blocked = (uint32_t *)(void *)((char *)c->exec_mem + fifo_bytes);
    x.done = (uint8_t *)c->exec_mem + 2 * fifo_bytes;
    int first = 0, blocked_step = 0;
    uint32_t sweep = 0;
    duet_waiter_t w;
    int waiting = 0;
    while (first < s->nsteps) {
        int progress = 0;
        ++sweep;
        int end = first + WINDOW < s->nsteps ? first + WINDOW : s->nsteps;
        for (int i = first; i < end; i++) {
            if (x.done[i]) continue;
            const duet_step_t *stp = &s->steps[i];
            uint32_t *fifo = stp->kind == DUET_STEP_SEND                                 ? x.send_blocked
                           : stp->kind == DUET_STEP_RECV || stp->kind == DUET_STEP_RECV_REDUCE ? x.recv_blocked
                                                                                                : NULL;
            int ready = (stp->dep < 0 || x.done[stp->dep]) && (!fifo || fifo[stp->peer] != sweep);
            int r = ready ? try_step(&x, stp) : 0;
            if (r < 0) {
                st = (duet_status_t)r;
                goto out;
            }
            if (r == 0) {
                if (fifo) fifo[stp->peer] = sweep; /* later messages to/from that peer wait */
                if (!progress) blocked_step = i;
                continue;
            }
            x.done[i] = 1;
            progress = 1;
        }
        while (first < s->nsteps && x.done[first]) first++;
        if (progress) {
            waiting = 0;
            continue;
        }
        if (!waiting) {
            duet_waiter_init(&w, &c->wait_ctx, "%s, step %llu of %llu", what, (unsigned long long)blocked_step,
                             (unsigned long long)s->nsteps, s->steps[blocked_step].peer);
            waiting = 1;
        }
        if ((st = duet_waiter_turn(&w))) goto out;
    }
out:
    return st;
}
