/*
 * duet_coll_chan.h — collective channels: one FIFO of messages per ordered pair of ranks,
 * carved out of each rank's collective zone (see heap/duet_heap.h).
 *
 * Rank b's block in its zone, for one communicator of n ranks:
 *
 *   acked[0..n)   one line each: acked[a] = messages of b's to a that a has consumed
 *                 (written by a, polled by b: a sender waits on local memory)
 *   inbox[0..n)   inbox[a] = `slots` slots written by a, read by b; a slot is a 64-byte
 *                 header {seq, len, 48 inline bytes} and `chunk` bytes of data
 *
 * Message m (1, 2, ...) from a to b goes to slot (m - 1) % slots of b's inbox[a], once
 * acked[b] at a shows m - slots consumed. Small messages travel inside the header, so the
 * receiver's one cache miss brings both the sequence number and the data.
 */
#ifndef DUET_COLL_CHAN_H
#define DUET_COLL_CHAN_H

#include "core/duet_comm.h"
#include "duet/duet.h"

#define DUET_CHAN_INLINE 48

typedef struct {
    _Atomic uint64_t seq; /* the message's number, stored last */
    uint64_t len;
    char data[DUET_CHAN_INLINE];
} duet_chan_slot_t;

typedef struct {
    _Atomic uint64_t value;
    char pad[DUET_CACHELINE - sizeof(uint64_t)];
} duet_chan_line_t;

typedef struct duet_coll_chan {
    size_t chunk;       /* largest message                      */
    int slots;          /* messages in flight per link          */
    size_t slot_stride; /* header + chunk, rounded to 64        */
    size_t block_bytes;
    size_t block_off;   /* my block, as an offset in my zone    */
    char **peer_block;  /* each comm rank's block, mapped here  */
    uint64_t *sent, *recvd; /* messages so far, per peer        */
} duet_coll_chan_t;

/* Collective over comm: carve my block, learn everyone's. */
duet_status_t duet_coll_chan_create(duet_comm_t comm, duet_coll_chan_t **chan);
void duet_coll_chan_destroy(duet_comm_t comm, duet_coll_chan_t *chan);

/* Tries to post one message of `len` <= chunk bytes to `peer`: 1 when sent, 0 when the
 * peer's inbox is full (try again later). */
int duet_coll_chan_try_send(duet_comm_t comm, duet_coll_chan_t *ch, int peer, const void *src, size_t len);

/* Looks at the next message from `peer`: NULL if none yet, else its data; the caller
 * consumes it (copy or reduce) and then calls duet_coll_chan_release(). A message of a
 * size other than `len` is an error (mismatched calls): *st is set. */
const void *duet_coll_chan_peek(duet_comm_t comm, duet_coll_chan_t *ch, int peer, size_t len,
                                duet_status_t *st);
void duet_coll_chan_release(duet_comm_t comm, duet_coll_chan_t *ch, int peer);

#endif
