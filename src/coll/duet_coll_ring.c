/*
 * Ring algorithms.
 *
 * Allreduce = reduce-scatter then allgather around the ring r -> r+1. The buffer is cut into
 * n segments; in round k of the reduce-scatter rank r sends segment (r - k) and receives
 * segment (r - k - 1), which it reduces with its own input and forwards in the next round.
 * After n-1 rounds rank r holds segment (r + 1) fully reduced; the allgather passes the
 * finished segments n-1 more rounds around.
 *
 *      4 ranks, segments A B C D          round 0       round 1       round 2
 *      rank 0: sends A, gets D  -> D'    sends D'      ...           holds B (complete)
 *      rank 1: sends B, gets A  -> A'    sends A'
 *      ...
 *
 * Each segment moves in chunks (the channel's message size), and a chunk is forwarded as
 * soon as it has arrived and been reduced: the executor overlaps the rounds chunk by chunk.
 * Per rank: 2(n-1) messages per chunk column, 2(n-1)/n of the buffer sent — the
 * bandwidth-optimal volume. Floating-point order: each element is summed along the ring
 * starting at the rank after its owner; every rank receives the same bits.
 */
#include <stdlib.h>
#include "coll/duet_coll.h"

static size_t seg_off(const duet_coll_args_t *a, int seg)
{
    return duet_part_start(a->count, (size_t)a->nranks, (size_t)seg) * a->elem;
}

duet_status_t duet_coll_ring_allreduce(const duet_coll_args_t *a, duet_sched_t *s)
{
    DUET_SCHED_BEGIN(a, s);
    int n = a->nranks, r = a->rank, right = (r + 1) % n, left = (r + n - 1) % n;
    size_t bytes = a->count * a->elem;
    if (n == 1) {
        duet_sched_copy(s, DUET_BUF_SEND, 0, DUET_BUF_RECV, 0, bytes, -1);
        return s->error;
    }
    size_t chunk = duet_coll_chunk(a); /* whole elements per message */
    /* the widest segment decides how many chunk columns there are */
    size_t widest = seg_off(a, 1) - seg_off(a, 0);
    size_t columns = widest ? (widest + chunk - 1) / chunk : 0;
    /* last[seg][col]: the step that finished this chunk here (its forwarding waits on it);
     * sent[seg][col]: the step that last sent it (overwriting it waits on that) */
    size_t cells = (size_t)n * (columns ? columns : 1);
    int *last = malloc(sizeof(int) * 2 * cells), *sent = last + cells;
    if (!last) return s->error = DUET_FAIL(DUET_ERR_NO_MEMORY, COLL, "ring: out of host memory");
    for (size_t i = 0; i < 2 * cells; i++) last[i] = -1;
    for (int k = 0; k < 2 * (n - 1) && !s->error; k++) {
        int reduce = k < n - 1;
        int send_seg = reduce ? (r - k + 2 * n) % n : (r + 1 - (k - (n - 1)) + 2 * n) % n;
        int recv_seg = (send_seg + n - 1) % n;
        size_t s_lo = seg_off(a, send_seg), s_hi = seg_off(a, send_seg + 1 <= n ? send_seg + 1 : n);
        size_t r_lo = seg_off(a, recv_seg), r_hi = seg_off(a, recv_seg + 1);
        if (send_seg + 1 == n) s_hi = bytes;
        if (recv_seg + 1 == n) r_hi = bytes;
        for (size_t col = 0; col < columns && !s->error; col++) {
            size_t so = s_lo + col * chunk, ro = r_lo + col * chunk;
            if (so < s_hi) {
                size_t len = s_hi - so < chunk ? s_hi - so : chunk;
                /* round 0 sends the input; later rounds forward what arrived last round */
                int src = k == 0 ? DUET_BUF_SEND : DUET_BUF_RECV;
                sent[(size_t)send_seg * columns + col] =
                    duet_sched_send(s, right, src, so, len, last[(size_t)send_seg * columns + col]);
            }
            if (ro < r_hi) {
                size_t len = r_hi - ro < chunk ? r_hi - ro : chunk;
                int *slot = &last[(size_t)recv_seg * columns + col];
                if (reduce)
                    *slot = duet_sched_recv_reduce(s, left, DUET_BUF_SEND, ro, DUET_BUF_RECV, ro, len, -1);
                else /* causality already orders it after our send of this chunk; say so */
                    *slot = duet_sched_recv(s, left, DUET_BUF_RECV, ro, len, sent[(size_t)recv_seg * columns + col]);
            }
        }
    }
    free(last);
    return s->error;
}



/*
 * Ring allgather: rank r's block sits at r in every receive buffer. Round k (0..n-2) sends
 * block (r - k) to the right and receives block (r - k - 1) from the left, which the next
 * round forwards.
 */
duet_status_t duet_coll_ring_allgather(const duet_coll_args_t *a, duet_sched_t *s)
{
    DUET_SCHED_BEGIN(a, s);
    s->recv_stable = 1; /* every block is written once, by its arrival, before it is forwarded */
    int n = a->nranks, r = a->rank, right = (r + 1) % n, left = (r + n - 1) % n;
    size_t block = a->count * a->elem, chunk = duet_coll_chunk(a);
    /* my own block first (in place it is already there) */
    duet_sched_copy(s, DUET_BUF_SEND, 0, DUET_BUF_RECV, (size_t)r * block, block, -1);
    size_t columns = (block + chunk - 1) / chunk;
    int *arrived = malloc(sizeof(int) * (size_t)n * (columns ? columns : 1));
    if (!arrived) return s->error = DUET_FAIL(DUET_ERR_NO_MEMORY, COLL, "ring: out of host memory");
    for (size_t i = 0; i < (size_t)n * (columns ? columns : 1); i++) arrived[i] = -1;
    for (int k = 0; k < n - 1; k++) {
        int sb = (r - k + n) % n, rb = (sb + n - 1) % n;
        size_t col = 0;
        DUET_FOR_CHUNKS(s, 0, block, chunk, off, len) {
            /* round 0 sends my block from the send buffer: no copy to wait for */
            if (k == 0) duet_sched_send(s, right, DUET_BUF_SEND, off, len, -1);
            else duet_sched_send(s, right, DUET_BUF_RECV, (size_t)sb * block + off, len, arrived[(size_t)sb * columns + col]);
            arrived[(size_t)rb * columns + col] = duet_sched_recv(s, left, DUET_BUF_RECV, (size_t)rb * block + off, len, -1);
            col++;
        }
    }
    free(arrived);
    return s->error;
}

/*
 * Ring reduce-scatter: block b of every send buffer is reduced into rank b's receive
 * buffer. Round k sends the partial of block (r - k - 1) and receives block (r - k - 2),
 * adds its own input, and forwards it; after n-1 rounds rank r has received block r from
 * the left with every other rank's input in it. Partials live in scratch.
 */
duet_status_t duet_coll_ring_reduce_scatter(const duet_coll_args_t *a, duet_sched_t *s)
{
    DUET_SCHED_BEGIN(a, s);
    int n = a->nranks, r = a->rank, right = (r + 1) % n, left = (r + n - 1) % n;
    size_t block = a->count * a->elem, chunk = duet_coll_chunk(a);
    if (n == 1) {
        duet_sched_copy(s, DUET_BUF_SEND, 0, DUET_BUF_RECV, 0, block, -1);
        return s->error;
    }
    s->tmp_bytes = block * (size_t)n;
    size_t columns = (block + chunk - 1) / chunk;
    int *done = malloc(sizeof(int) * (size_t)n * (columns ? columns : 1));
    if (!done) return s->error = DUET_FAIL(DUET_ERR_NO_MEMORY, COLL, "ring: out of host memory");
    for (size_t i = 0; i < (size_t)n * (columns ? columns : 1); i++) done[i] = -1;
    for (int k = 0; k < n - 1; k++) {
        int sb = (r - k - 1 + 2 * n) % n, rb = (sb + n - 1) % n;
        int last = k == n - 2; /* the final round lands in the receive buffer */
        size_t col = 0;
        DUET_FOR_CHUNKS(s, 0, block, chunk, off, len) {
            if (k == 0) duet_sched_send(s, right, DUET_BUF_SEND, (size_t)sb * block + off, len, -1);
            else duet_sched_send(s, right, DUET_BUF_TMP, (size_t)sb * block + off, len, done[(size_t)sb * columns + col]);
            done[(size_t)rb * columns + col] =
                duet_sched_recv_reduce(s, left, DUET_BUF_SEND, (size_t)rb * block + off, last ? DUET_BUF_RECV : DUET_BUF_TMP,
                                       last ? off : (size_t)rb * block + off, len, -1);
            col++;
        }
    }
    free(done);
    return s->error;
}
