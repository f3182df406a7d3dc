/*
 * Direct algorithms: every rank talks to every other rank in one round.
 *
 *   one-shot allreduce   each rank sends its whole input to all, and reduces all n inputs
 *                        itself, in rank order 0, 1, ..., n-1 (the same order everywhere,
 *                        so every rank computes the same bits). 1 round, n-1 messages of the
 *                        full size per rank: the latency choice for small data.
 *   two-shot allreduce   direct reduce-scatter (rank b reduces part b of everyone's input),
 *                        then direct allgather of the reduced parts: 2 rounds, 2(n-1)/n of
 *                        the data per rank.
 *   direct allgather / reduce-scatter, and pairwise all-to-all (round k: send to r+k,
 *   receive from r-k, so each round is a perfect matching).
 */
#include "coll/duet_coll.h"



/* acc <- the reduction, in rank order, of every rank's share of one chunk (my share is
 * my_buf at my_off; the others arrive as messages). The steps form one chain starting
 * after `first_dep`; returns its last step. */
static int reduce_in_rank_order(const duet_coll_args_t *a, duet_sched_t *s, int my_buf, size_t my_off, int acc_buf,
                                size_t acc_off, size_t len, int first_dep)
{
    int prev = first_dep;
    for (int p = 0; p < a->nranks; p++) {
        if (p == a->rank)
            prev = p == 0 ? duet_sched_copy(s, my_buf, my_off, acc_buf, acc_off, len, prev)
                          : duet_sched_reduce(s, my_buf, my_off, acc_buf, acc_off, len, prev);
        else if (p == 0)
            prev = duet_sched_recv(s, p, acc_buf, acc_off, len, prev);
        else
            prev = duet_sched_recv_reduce(s, p, acc_buf, acc_off, acc_buf, acc_off, len, prev);
    }
    return prev;
}

duet_status_t duet_coll_oneshot_allreduce(const duet_coll_args_t *a, duet_sched_t *s)
{
    DUET_SCHED_BEGIN(a, s);
    size_t bytes = a->count * a->elem, chunk = duet_coll_chunk(a);
    DUET_FOR_CHUNKS(s, 0, bytes, chunk, off, len) {
        int sent = -1;
        for (int k = 1; k < a->nranks; k++) sent = duet_sched_send(s, (a->rank + k) % a->nranks, DUET_BUF_SEND, off, len, sent);
        if (a->in_place && a->nranks > 1) {
            /* the input is overwritten: reduce into scratch once the chunk is sent, copy back */
            s->tmp_bytes = bytes;
            int done = reduce_in_rank_order(a, s, DUET_BUF_SEND, off, DUET_BUF_TMP, off, len, sent);
            duet_sched_copy(s, DUET_BUF_TMP, off, DUET_BUF_RECV, off, len, done);
        } else {
            reduce_in_rank_order(a, s, DUET_BUF_SEND, off, DUET_BUF_RECV, off, len, -1);
        }
    }
    return s->error;
}

/* Part b of the buffer, in bytes. */
static void part(const duet_coll_args_t *a, int b, size_t *lo, size_t *hi)
{
    *lo = duet_part_start(a->count, (size_t)a->nranks, (size_t)b) * a->elem;
    *hi = duet_part_start(a->count, (size_t)a->nranks, (size_t)b + 1) * a->elem;
}

duet_status_t duet_coll_twoshot_allreduce(const duet_coll_args_t *a, duet_sched_t *s)
{
    DUET_SCHED_BEGIN(a, s);
    int n = a->nranks, r = a->rank;
    size_t chunk = duet_coll_chunk(a), lo, hi;
    /* shot 1: everyone's part b goes to rank b, which reduces it (into scratch: in place,
     * the input part must stay intact until everyone has it) */
    size_t bytes = a->count * a->elem;
    s->tmp_bytes = bytes;
    for (int k = 1; k < n; k++) {
        int b = (r + k) % n;
        part(a, b, &lo, &hi);
        DUET_FOR_CHUNKS(s, lo, hi, chunk, off, len) duet_sched_send(s, b, DUET_BUF_SEND, off, len, -1);
    }
    /* ... and shot 2: each reduced chunk of my part goes to everyone */
    part(a, r, &lo, &hi);
    DUET_FOR_CHUNKS(s, lo, hi, chunk, off, len) {
        int reduced = reduce_in_rank_order(a, s, DUET_BUF_SEND, off, DUET_BUF_TMP, off, len, -1);
        for (int k = 1; k < n; k++) duet_sched_send(s, (r + k) % n, DUET_BUF_TMP, off, len, reduced);
        duet_sched_copy(s, DUET_BUF_TMP, off, DUET_BUF_RECV, off, len, reduced);
    }
    /* their parts land in my receive buffer. In place this overwrites the input part b I
     * sent to b in shot 1, safely: b cannot send its result before it has my part. */
    for (int k = 1; k < n; k++) {
        int b = (r + n - k) % n;
        size_t blo, bhi;
        part(a, b, &blo, &bhi);
        DUET_FOR_CHUNKS(s, blo, bhi, chunk, off, len) duet_sched_recv(s, b, DUET_BUF_RECV, off, len, -1);
    }
    return s->error;
}

duet_status_t duet_coll_direct_allgather(const duet_coll_args_t *a, duet_sched_t *s)
{
    DUET_SCHED_BEGIN(a, s);
    s->recv_stable = 1; /* every block is written once, by its arrival, before it is forwarded */
    int n = a->nranks, r = a->rank;
    size_t block = a->count * a->elem, chunk = duet_coll_chunk(a);
    if (!a->in_place) duet_sched_copy(s, DUET_BUF_SEND, 0, DUET_BUF_RECV, (size_t)r * block, block, -1);
    DUET_FOR_CHUNKS(s, 0, block, chunk, off, len) {
        for (int k = 1; k < n; k++) duet_sched_send(s, (r + k) % n, DUET_BUF_SEND, off, len, -1);
    }
    for (int k = 1; k < n; k++) {
        int b = (r + n - k) % n;
        DUET_FOR_CHUNKS(s, 0, block, chunk, off, len) duet_sched_recv(s, b, DUET_BUF_RECV, (size_t)b * block + off, len, -1);
    }
    return s->error;
}

duet_status_t duet_coll_direct_reduce_scatter(const duet_coll_args_t *a, duet_sched_t *s)
{
    DUET_SCHED_BEGIN(a, s);
    int n = a->nranks, r = a->rank;
    size_t block = a->count * a->elem, chunk = duet_coll_chunk(a);
    for (int k = 1; k < n; k++) {
        int b = (r + k) % n;
        DUET_FOR_CHUNKS(s, 0, block, chunk, off, len) duet_sched_send(s, b, DUET_BUF_SEND, (size_t)b * block + off, len, -1);
    }
    /* in place, the receive buffer is my block of the input: reduce into scratch */
    int acc = a->in_place && n > 1 ? DUET_BUF_TMP : DUET_BUF_RECV;
    if (acc == DUET_BUF_TMP) s->tmp_bytes = block;
    DUET_FOR_CHUNKS(s, 0, block, chunk, off, len) {
        int done = reduce_in_rank_order(a, s, DUET_BUF_SEND, (size_t)r * block + off, acc, off, len, -1);
        if (acc == DUET_BUF_TMP) duet_sched_copy(s, DUET_BUF_TMP, off, DUET_BUF_RECV, off, len, done);
    }
    return s->error;
}

duet_status_t duet_coll_pairwise_alltoall(const duet_coll_args_t *a, duet_sched_t *s)
{
    DUET_SCHED_BEGIN(a, s);
    int n = a->nranks, r = a->rank;
    size_t block = a->count * a->elem, chunk = duet_coll_chunk(a);
    if (a->in_place && n > 1)
        return s->error = duet_error_set(DUET_ERR_UNSUPPORTED, "alltoall: in place is not supported (pass separate buffers)");
    duet_sched_copy(s, DUET_BUF_SEND, (size_t)r * block, DUET_BUF_RECV, (size_t)r * block, block, -1);
    for (int k = 1; k < n; k++) {
        int to = (r + k) % n, from = (r + n - k) % n;
        DUET_FOR_CHUNKS(s, 0, block, chunk, off, len) {
            duet_sched_send(s, to, DUET_BUF_SEND, (size_t)to * block + off, len, -1);
            duet_sched_recv(s, from, DUET_BUF_RECV, (size_t)from * block + off, len, -1);
        }
    }
    return s->error;
}
