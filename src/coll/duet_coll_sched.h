/*
 * duet_coll_sched.h — collective algorithms as schedules.
 *
 * An algorithm does not move data itself: for one rank it writes a schedule, an ordered
 * list of steps over three buffers (the caller's send and receive buffers and a private
 * scratch buffer):
 *
 *   COPY         dst <- src                        (local)
 *   REDUCE       dst <- dst (op) src               (local)
 *   SEND         src -> peer                       (one message, <= the channel's chunk)
 *   RECV         dst <- message from peer
 *   RECV_REDUCE  dst <- src (op) message from peer
 *
 * The k-th SEND from rank a to rank b is matched with the k-th RECV(_REDUCE) of b from a,
 * and must have the same size. A step may name one earlier step it waits on (`dep`:
 * forwarding a chunk waits for its arrival); besides that, the executor keeps sends to one
 * peer in order and receives from one peer in order, and is otherwise free to run steps
 * out of order — which is what pipelines a chunked ring.
 *
 * The same schedule feeds the host executor, the tuner (cost = messages on the critical
 * path x alpha + bytes x beta) and the structural checks of the tests.
 */
#ifndef DUET_COLL_SCHED_H
#define DUET_COLL_SCHED_H

#include <stddef.h>
#include <stdint.h>
#include "util/duet_util.h"

typedef enum {
    DUET_STEP_COPY, DUET_STEP_REDUCE, DUET_STEP_SEND, DUET_STEP_RECV, DUET_STEP_RECV_REDUCE
} duet_step_kind_t;
typedef enum { DUET_BUF_SEND, DUET_BUF_RECV, DUET_BUF_TMP, DUET_BUF_COUNT } duet_buf_id_t;

typedef struct {
    uint8_t kind;          /* duet_step_kind_t                                  */
    uint8_t src_buf;       /* duet_buf_id_t: COPY, SEND, RECV_REDUCE operand    */
    uint8_t dst_buf;       /* duet_buf_id_t: COPY, REDUCE, RECV, RECV_REDUCE    */
    uint8_t call;          /* which call of a group: its buffers, type and op   */
    int32_t peer;          /* SEND / RECV*: the other rank                      */
    int32_t dep;           /* an earlier step that must be complete first, or -1 */
    int32_t pad2;
    size_t src_off, dst_off, bytes;
} duet_step_t;

/* The most steps a schedule may hold: a step names another by an int32 index (dep). */
#define DUET_SCHED_MAX_STEPS (INT32_MAX - 1)

typedef struct {
    duet_step_t *steps;
    int nsteps, cap; /* at most DUET_SCHED_MAX_STEPS: push refuses more (never overflow) */
    int rank, nranks;
    size_t tmp_bytes; /* scratch the schedule needs */
    size_t elem;      /* element size: reductions act on whole elements */
    duet_status_t error; /* first failure while building (out of memory) */
    uint8_t call;        /* stamped on every step added (see duet_sched_append) */
    const char *name;    /* the algorithm that built it (the tuner sets it), or NULL */
    uint8_t recv_stable; /* set by the builder: no step writes a part of the receive buffer
                          * after a send has read it, so sends from it may go by reference
                          * (duet_coll_chan.h) — true of broadcast and allgather */
} duet_sched_t;

void duet_sched_init(duet_sched_t *s, int rank, int nranks, size_t elem);
void duet_sched_free(duet_sched_t *s);
/* Sets tmp_bytes to 0 when no step reads or writes the scratch (a builder's room for ranks
 * counts that need it: a call then allocates none). */
void duet_sched_drop_unused_tmp(duet_sched_t *s);

/* Append a step; return its index (or -1 after an allocation failure, recorded in
 * s->error). Zero-byte transfers are not added (they return -1 too, without error). */
int duet_sched_copy(duet_sched_t *s, int src_buf, size_t src_off, int dst_buf, size_t dst_off,
                    size_t bytes, int dep);
int duet_sched_send(duet_sched_t *s, int peer, int src_buf, size_t src_off, size_t bytes, int dep);
int duet_sched_recv(duet_sched_t *s, int peer, int dst_buf, size_t dst_off, size_t bytes, int dep);
int duet_sched_recv_reduce(duet_sched_t *s, int peer, int src_buf, size_t src_off, int dst_buf,
                           size_t dst_off, size_t bytes, int dep);
int duet_sched_reduce(duet_sched_t *s, int src_buf, size_t src_off, int dst_buf, size_t dst_off, size_t bytes,
                      int dep);

/* Appends every step of `more` to `s` as call number `call` (dependencies shifted): a
 * group runs its calls as one schedule. */
duet_status_t duet_sched_append(duet_sched_t *s, const duet_sched_t *more, int call);

/* Splitting `count` elements into `parts` nearly equal pieces: piece i starts at element
 * duet_part_start(count, parts, i); the first count % parts pieces are one larger. */
static inline size_t duet_part_start(size_t count, size_t parts, size_t i)
{
    size_t q = count / parts, r = count % parts;
    return i * q + (i < r ? i : r);
}

#endif
