/*
 * duet_coll_lane.h — the latency lane: one-shot allreduce of a few bytes in one cache line
 * per peer, without the executor.
 *
 * The channels (duet_coll_chan.h) pay, for each message, an acknowledgement the sender
 * must read before it may reuse a slot — a cache miss on the next call's critical path.
 * A one-shot allreduce needs no acknowledgements at all: every rank sends to every rank in
 * every call, so when I hold all of call k's inputs, every peer has finished call k-1 and
 * read my inputs to it. Two lines per ordered pair, used by call parity, are then enough:
 *
 *   rank b's lane block: line[a][k % 2], written by rank a for lane call k
 *   +----------------------+-----+------+---------------------+
 *   | seq (call << 32 | k) | len | hash | data: up to 48 bytes |   one 64-byte line
 *   +----------------------+-----+------+---------------------+
 *
 * Call k: write my input into line[me][k % 2] of every peer (seq stored last), then wait
 * for line[p][k % 2] of my own block to show seq k for every p, and reduce in rank order
 * 0, 1, ..., n-1 — the order of the one-shot schedule, so every rank computes the same bits.
 * The receiver's one cache miss brings the sequence number and the data together, and the
 * signature of the call (its number on the communicator, in seq's high bits, and the hash of
 * its arguments: duet_coll_sig.h), checked before the data is used.
 *
 * The lane runs exactly the one-shot algorithm; the tuner decides when (see
 * duet_coll_api.c). Every rank must take it for the same calls, which holds because the
 * decision depends only on the call's shape.
 */
#ifndef DUET_COLL_LANE_H
#define DUET_COLL_LANE_H

#include "coll/duet_coll.h"
#include "coll/duet_coll_sig.h"

#define DUET_LANE_BYTES 48 /* payload of one line */

typedef struct {
    _Atomic uint64_t seq; /* duet_chan_seq(the call's number, the lane call's), stored last */
    uint32_t len;
    uint32_t hash; /* of the call's arguments */
    char data[DUET_LANE_BYTES];
} duet_lane_line_t;

/* Bytes of lane memory a rank's channel block needs for n ranks. */
static inline size_t duet_coll_lane_bytes(int nranks) { return (size_t)nranks * 2 * sizeof(duet_lane_line_t); }

/* 1 when an allreduce of this shape fits the lane: at most DUET_LANE_BYTES of input. */
static inline int duet_coll_lane_fits(size_t count, duet_datatype_t dt)
{
    return count * duet_datatype_size(dt) <= DUET_LANE_BYTES;
}

/* One-shot allreduce through the lane (count >= 1 and duet_coll_lane_fits; arguments
 * already checked): the communicator's next collective call (it counts and publishes it:
 * duet_coll_sig.h). fp16 / bf16 are reduced in fp32 and rounded once; AVG divides at the
 * end. sendbuf == recvbuf (in place) is allowed. */
/* With `as`: under another call's signature (duet_coll_allreduce_as), numbered and published
 * as that call; NULL: as the communicator's next call of its own. */
duet_status_t duet_coll_lane_allreduce_as(duet_comm_t c, const void *sendbuf, void *recvbuf, size_t count,
                                          duet_datatype_t dt, duet_op_t op, const duet_coll_sig_t *as, const char *fn);
static inline duet_status_t duet_coll_lane_allreduce(duet_comm_t c, const void *sendbuf, void *recvbuf, size_t count,
                                                     duet_datatype_t dt, duet_op_t op, const char *fn)
{
    return duet_coll_lane_allreduce_as(c, sendbuf, recvbuf, count, dt, op, NULL, fn);
}

#endif
