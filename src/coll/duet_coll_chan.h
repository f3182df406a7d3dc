/*
 * duet_coll_chan.h — collective channels: one FIFO of messages per ordered pair of ranks,
 * carved out of each rank's collective zone (see heap/duet_heap.h).
 *
 * Rank b's block in its zone, for one communicator of n ranks:
 *
 *   acked[0..n)   one line each: acked[a] = messages of b's to a that a has consumed
 *                 (written by a, polled by b: a sender waits on local memory)
 *   inbox[0..n)   inbox[a] = `slots` slots written by a, read by b; a slot is a 64-byte
 *                 header {seq, len, hash, 48 inline bytes} and `chunk` bytes of data
 *   lane          two lines per sending rank for the latency lane (duet_coll_lane.h)
 *   sig           b's published calls, and a report line per rank (duet_coll_sig.h)
 *
 * Message m (1, 2, ...) from a to b goes to slot (m - 1) % slots of b's inbox[a], once
 * acked[b] at a shows m - slots consumed. Small messages travel inside the header, so the
 * receiver's one cache miss brings both the sequence number and the data. The header also
 * carries the signature of the call the message belongs to (duet_coll_sig.h): seq holds the
 * call's number in its high 32 bits and m modulo 2^32 in its low ones (a slot is reused every
 * `slots` messages, so the low bits tell a new message from an old one), and the hash of the
 * call's arguments sits beside the length.
 *
 * By reference (single copy): a message of at least DUET_CHAN_BYREF_MIN bytes whose source
 * lies in the sender's symmetric heap, and which the sender promises not to change until the
 * call ends, carries only the source's heap offset. The receiver copies (or reduces) straight
 * out of the sender's segment, which it has mapped: one copy instead of two. The sender's
 * call may end only once every such message is acknowledged (duet_coll_chan_byref_wait).
 *
 * A peer reached by the net transport (another host, or DUET_NET=force; docs/NETWORK.md 2.7)
 * has no mapped block: the same layout is written with the transport's puts into its
 * registered segment. A message is the slot's {len, inline data} (from a copy of the slot made
 * here) and, past 48 bytes, the data, then a fence, then seq alone: the receiver, which polls
 * seq in its own memory as for any peer, never sees seq before what it announces. Each put
 * completes locally before the call returns (the copy and the source may be reused); the
 * acknowledgement is an 8-byte put into the sender's acked line. Messages to net peers never
 * go by reference, and nobody rings a net peer's doorbell: its waits poll (their sleep is
 * bounded).
 */
#ifndef DUET_COLL_CHAN_H
#define DUET_COLL_CHAN_H

#include "core/duet_comm.h"
#include "duet/duet.h"

#define DUET_CHAN_INLINE 48
#define DUET_CHAN_BYREF_MIN 4096          /* smaller messages are cheaper copied     */
#define DUET_CHAN_BYREF (1u << 31)        /* in a slot's len: data is in the sender's heap */
#define DUET_CHAN_CHUNK_MAX (1u << 30)    /* a message's length fits 31 bits            */

typedef struct {
    _Atomic uint64_t seq; /* duet_chan_seq(call, message number), stored last */
    uint32_t len;         /* bytes, | DUET_CHAN_BYREF */
    uint32_t hash;        /* of the call's arguments (duet_coll_sig.h) */
    char data[DUET_CHAN_INLINE];
} duet_chan_slot_t;

/* A header's seq word: the call's number (low 32 bits) over the message's (low 32 bits). */
static inline uint64_t duet_chan_seq(uint32_t call, uint64_t m) { return (uint64_t)call << 32 | (uint32_t)m; }

/* A message that came with another signature or size than the receiver's (peek). */
typedef struct {
    int bad;
    uint32_t call, hash;
    uint64_t len;
} duet_chan_got_t;

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
    size_t lane_off;    /* the lane, as an offset in a block    */
    size_t sig_off;     /* published calls, then reports (duet_coll_sig.h) */
    struct duet_coll_sig_line *sig_mine; /* my published calls (in my block) */
    uint64_t lane_calls; /* lane calls so far on this channel set */
    char **peer_block;  /* each comm rank's block, mapped here (NULL: a net peer) */
    size_t *peer_off;   /* each comm rank's block as an offset in its segment (net puts) */
    duet_chan_slot_t net_stage; /* the slot header being put to a net peer (puts complete locally) */
    uint64_t net_ack;           /* the acknowledgement being put to a net peer */
    uint64_t *sent, *recvd; /* messages so far, per peer        */
    uint64_t *byref_last;   /* my last message by reference, per peer (0: none pending) */
    int byref;              /* 1: this channel set may send by reference */
    int byref_any;          /* 1: some byref_last is set */
    uint64_t byref_sent;    /* messages sent by reference, in all (for tests and tools) */
    uint64_t *p2p_sends, *p2p_recvs; /* send / recv operations so far, per peer (their signature) */
} duet_coll_chan_t;

/* Collective over comm: carve my block, learn everyone's. */
duet_status_t duet_coll_chan_create(duet_comm_t comm, duet_coll_chan_t **chan);
void duet_coll_chan_destroy(duet_comm_t comm, duet_coll_chan_t *chan);

/* Tries to post one message of `len` <= chunk bytes to `peer`, signed {call, hash}: 1 when
 * sent, 0 when the peer's inbox is full (try again later), < 0 (a duet_status_t, message set)
 * when the net transport failed. stable: the caller keeps src unchanged until the call ends,
 * so the message may go by reference (see above). */
int duet_coll_chan_try_send(duet_comm_t comm, duet_coll_chan_t *ch, int peer, const void *src, size_t len,
                            int stable, uint32_t call, uint32_t hash);

/* 1 when messages from [p, p + len) could go by reference on ch: ch may send by reference
 * and the range lies in my user heap (len 0 or p NULL: 1, nothing to send from). */
int duet_coll_chan_heap_range(duet_comm_t comm, const duet_coll_chan_t *ch, const void *p, size_t len);

/* Waits until every message sent by reference has been consumed (the end of a call). */
duet_status_t duet_coll_chan_byref_wait(duet_comm_t comm, duet_coll_chan_t *ch, const char *what);

/* Looks at the next message from `peer`: NULL if none yet, else its data (in my inbox, or
 * in the sender's heap for a message by reference); the caller consumes it (copy or reduce)
 * and then calls duet_coll_chan_release(). A message whose signature is not {call, hash} or
 * whose size is not `len` (mismatched calls) is not consumed: NULL, and got->bad = 1 with what
 * it carries (the caller reports it: duet_coll_sig_bad_message). */
const void *duet_coll_chan_peek(duet_comm_t comm, duet_coll_chan_t *ch, int peer, size_t len, uint32_t call,
                                uint32_t hash, duet_chan_got_t *got);
duet_status_t duet_coll_chan_release(duet_comm_t comm, duet_coll_chan_t *ch, int peer);

/* Writes a line {seq, len, hash, data} at `off` of a net peer's block (a slot header, a lane
 * line): {len, hash, the data when it fits the line's 48 bytes, else the data after the line},
 * a fence, then seq, each put complete locally on return (the channel's net_stage holds the
 * copy). The peer, polling seq in its own memory, never sees seq before what it announces. */
duet_status_t duet_coll_chan_net_line(duet_comm_t comm, duet_coll_chan_t *ch, int peer, size_t off, uint64_t seq,
                                      uint32_t hash, const void *src, size_t len);

/* The start of `rank`'s lane (mapped here: not for a net peer). */
static inline char *duet_coll_chan_lane(duet_coll_chan_t *ch, int rank) { return ch->peer_block[rank] + ch->lane_off; }

#endif
