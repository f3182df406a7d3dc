/* The latency lane: one-shot allreduce of up to 48 bytes (design in the header). */
#include <stddef.h>
#include <string.h>
#include "coll/duet_coll_lane.h"
#include "coll/duet_coll_sig.h"

/* a lane line to a net peer is written as a channel slot's header (duet_coll_chan_net_line) */
_Static_assert(sizeof(duet_lane_line_t) == sizeof(duet_chan_slot_t) &&
                   offsetof(duet_lane_line_t, len) == offsetof(duet_chan_slot_t, len) &&
                   offsetof(duet_lane_line_t, hash) == offsetof(duet_chan_slot_t, hash) &&
                   offsetof(duet_lane_line_t, data) == offsetof(duet_chan_slot_t, data) &&
                   DUET_LANE_BYTES == DUET_CHAN_INLINE,
               "a lane line has a channel slot header's layout");

/* The line `from` writes for `call` in the lane of `owner`: its place in owner's block, and
 * the line itself where owner's block is mapped here. */
static size_t lane_line_off(duet_coll_chan_t *ch, int from, uint64_t call)
{
    return ch->lane_off + (2 * (size_t)from + (call & 1)) * sizeof(duet_lane_line_t);
}
static duet_lane_line_t *lane_line(duet_coll_chan_t *ch, int owner, int from, uint64_t call)
{
    return (duet_lane_line_t *)(void *)(ch->peer_block[owner] + lane_line_off(ch, from, call));
}

static int arrived(const duet_lane_line_t *line, uint64_t k)
{
    return (uint32_t)atomic_load_explicit(&line->seq, memory_order_acquire) == (uint32_t)k;
}

/* Waits until rank p's line of lane call k is in my block (of whatever collective call: the
 * caller checks its signature). The peer's published call is looked at meanwhile: one in
 * another call of the same number, or (mapped) gone past it without writing my line, is a
 * mismatch. */
static duet_status_t await_input(duet_comm_t c, const duet_lane_line_t *line, int p, uint64_t k, uint64_t call,
                                 const char *fn)
{
    if (arrived(line, k)) return DUET_OK;
    duet_waiter_t w;
    duet_waiter_init(&w, &c->wait_ctx, "%s (one-shot lane, call %llu)", fn, (unsigned long long)k, 0, p);
    duet_status_t st = DUET_OK;
    int past = 0, spinning = c->wait_ctx.spin_us > 0, mapped = c->chan->peer_block[p] != NULL;
    while (!arrived(line, k)) {
        if ((st = duet_waiter_turn(&w))) break;
        if (duet_coll_sig_due(&w, spinning) && (mapped || duet_coll_sig_net_due(&w))) {
            int was = past; /* seen past my call at the last look, and my line still missing since */
            if ((st = duet_coll_sig_check_peer(c, p, call, &past))) break;
            if (was && past && !arrived(line, k)) return duet_coll_sig_peer_left(c, p, call);
        }
    }
    return st;
}

duet_status_t duet_coll_lane_allreduce_as(duet_comm_t c, const void *sendbuf, void *recvbuf, size_t count,
                                          duet_datatype_t dt, duet_op_t op, const duet_coll_sig_t *as, const char *fn)
{
    duet_coll_chan_t *ch = c->chan;
    int n = c->size;
    size_t bytes = count * duet_dtype_size_(dt);
    uint64_t k = ++ch->lane_calls, call = as ? as->call : ++c->coll_calls;
    duet_coll_sig_args_t sig = {call, count, 0, DUET_COLL_ALLREDUCE, (int32_t)dt, (int32_t)op, 0, 0};
    if (as) sig = as->a;
    else sig.hash = duet_coll_sig_hash(DUET_COLL_ALLREDUCE, count, dt, op, 0);
    uint32_t hash = sig.hash;
    uint64_t seq = duet_chan_seq((uint32_t)call, k);
    char mine[DUET_LANE_BYTES]; /* a copy: in place, recvbuf is written before the input is used */
    memcpy(mine, sendbuf, bytes);
    for (int i = 1; i < n; i++) { /* send: my line in every peer's lane, seq last */
        int p = (c->rank + i) % n;
        if (!ch->peer_block[p]) { /* a net peer: the same line, by puts */
            duet_status_t st = duet_coll_chan_net_line(c, ch, p, lane_line_off(ch, c->rank, k), seq, hash, mine, bytes);
            if (st) return duet_error_wrap(st, fn);
            continue;
        }
        duet_lane_line_t *line = lane_line(ch, p, c->rank, k);
        memcpy(line->data, mine, bytes);
        line->len = (uint32_t)bytes;
        line->hash = hash;
        atomic_store_explicit(&line->seq, seq, memory_order_release);
    }
    for (int i = 1; i < n; i++) {
        int p = (c->rank + i) % n;
        if (ch->peer_block[p]) duet_doorbell_ring(c->heap->eps[c->heap_pe[p]].doorbell);
    }
    /* published after my lines are out: a line a waiting peer has read costs its next store a
     * miss, which must not hold back the stores of my input behind it */
    duet_coll_sig_publish(c, call, &sig);
    /* reduce in rank order; fp16 / bf16 accumulate in fp32 and round once */
    duet_op_t step = op == DUET_AVG ? DUET_SUM : op;
    int wide = dt == DUET_FLOAT16 || dt == DUET_BFLOAT16;
    union {
        char bytes[DUET_LANE_BYTES];
        float f32[DUET_LANE_BYTES / 2];
        double align;
    } acc;
    /* a line of another call (signature or size) is a mismatch: reported, and the communicator
     * revoked (so no later call reads a line of this one) */
    for (int i = 1; i < n; i++) {
        int p = (c->rank + i) % n;
        const duet_lane_line_t *line = lane_line(ch, c->rank, p, k);
        duet_status_t st = await_input(c, line, p, k, call, fn);
        if (st) return st;
        uint64_t got = atomic_load_explicit(&line->seq, memory_order_relaxed);
        if (DUET_UNLIKELY(got != seq || line->hash != hash || line->len != bytes)) {
            duet_chan_got_t bad = {1, (uint32_t)(got >> 32), line->hash, line->len};
            duet_coll_call_t want;
            memset(&want, 0, sizeof want);
            want.call_no = call, want.sig = sig;
            return duet_coll_sig_bad_message(c, p, &want, &bad, bytes);
        }
    }
    for (int p = 0; p < n; p++) {
        const void *in = p == c->rank ? (const void *)mine : lane_line(ch, c->rank, p, k)->data;
        if (wide)
            duet_reduce_to_f32(dt, step, acc.f32, in, count, p == 0);
        else if (p == 0)
            memcpy(acc.bytes, in, bytes);
        else
            duet_reduce_op(dt, step, acc.bytes, acc.bytes, in, count);
    }
    if (wide) {
        if (op == DUET_AVG) duet_reduce_finish_avg_f32(acc.f32, count, n);
        duet_f32_to_dtype(dt, recvbuf, acc.f32, count);
    } else {
        if (op == DUET_AVG) duet_reduce_finish_avg(dt, acc.bytes, count, n);
        memcpy(recvbuf, acc.bytes, bytes);
    }
    return DUET_OK;
}
