/*
 * duet_proxy_inbox.h — ordered message boxes between the ranks of a heap, in the HOST heap,
 * carried by the heap's endpoints (eps[pe]->ops: shm between ranks of one host, the net
 * transport between hosts). Plain C: the GPU proxy (src/cuda/duet_cuda_proxy.c) is its user,
 * but nothing here needs CUDA, so it is tested on the CPU (tests/mp/test_proxy_inbox.c).
 *
 * Every rank owns one block in its collective zone (private memory, the offsets exchanged at
 * creation). In the block of rank r:
 *
 *   | acked[p]: a 64-byte line per pe p  | inbox[p][s]: messages from p to r   | reply[p][s]: answers of p to r |
 *   |  (p writes: r's messages it has    |  slots of 64-byte header + chunk    |  slots of 64-byte header +     |
 *   |   applied and answered, a count)   |  (p writes, r reads)                |  chunk (p writes, r reads)     |
 *
 * Message m (1, 2, ...) from origin o to target t goes into t's inbox[o][(m - 1) % slots] as
 * one put of header + payload, a fence, and a put of the header's seq word = m (the net
 * collective channel's order, duet_coll_chan.c). The target reads seq (acquire) and applies
 * messages of one origin strictly in order. It answers message m with one put of a reply
 * header (+ payload) into o's reply[t][(m - 1) % slots], a fence, and a put of acked[t] = m in
 * o's block. So:
 *   - per origin and target, messages are applied in the order they were sent (one ordered
 *     box, one reader): the device API's fence holds by construction;
 *   - acked[t] >= m says message m and every earlier one is applied: quiet waits for it;
 *   - flow control: the origin sends m only while m - acked[t] <= slots (a slot is reused only
 *     after its message was answered), and reads the reply of m before it sends m + slots
 *     (the reply slot's next writer): the caller's duty, see duet_proxy_inbox_reply.
 * One thread per rank uses an inbox (the proxy's); nothing here locks.
 */
#ifndef DUET_PROXY_INBOX_H
#define DUET_PROXY_INBOX_H

#include <stdatomic.h>
#include <stdint.h>
#include "heap/duet_heap.h"

#define DUET_PROXY_HDR 64 /* bytes of a slot's header; payload follows */

/* What a message says; the inbox carries it without looking (but at len). */
typedef struct {
    uint32_t kind;  /* the user's message kind */
    uint32_t arg;   /* a small operand (the proxy: signal op, atomic op and width) */
    uint64_t off;   /* an offset at the target (the proxy: in its GPU heap part) */
    uint64_t len;   /* payload bytes that follow the header (<= the inbox's chunk) */
    uint64_t value, cond, aux; /* operands */
} duet_proxy_msg_t;

/* An inbox slot's header, as it lies at the target. seq is written last, by its own put. */
typedef struct {
    duet_proxy_msg_t msg;
    uint64_t pad;
    _Atomic uint64_t seq;
} duet_proxy_slot_t;

/* A reply slot's header, as it lies at the origin. */
typedef struct {
    int32_t status;  /* DUET_OK, or why the target could not apply the message */
    uint32_t pad0;
    uint64_t result; /* the user's result word (the proxy: an atomic's old value) */
    uint64_t len;    /* payload bytes that follow */
    uint64_t pad[5];
} duet_proxy_reply_t;

_Static_assert(sizeof(duet_proxy_slot_t) == DUET_PROXY_HDR, "inbox slot header");
_Static_assert(sizeof(duet_proxy_reply_t) == DUET_PROXY_HDR, "reply slot header");

typedef struct duet_proxy_inbox {
    duet_heap_t *heap;
    int me, npes, slots;
    size_t chunk;        /* payload bytes a slot holds */
    size_t slot_bytes;   /* DUET_PROXY_HDR + chunk */
    size_t zone_off;     /* my block in my collective zone (add user_end) */
    size_t block_bytes;
    char *block;         /* my block, in my segment */
    uint64_t *peer_off;  /* every pe's block, as an offset in its segment */
    uint64_t *sent;      /* messages sent to each pe */
    uint64_t *recvd;     /* messages from each pe answered */
    uint64_t *ack_word;  /* a word per pe: the source of the ack puts (must outlive a put) */
    char *frame;         /* DUET_PROXY_HDR bytes: a reply header without payload */
} duet_proxy_inbox_t;

/* Collective over the heap's bootstrap `b`: every rank says whether it wants an inbox (want);
 * if any does, every rank makes one (NULL and DUET_OK in *out when none does). chunk and
 * slots must be equal on every rank (checked: DUET_ERR_INVALID_ARG naming the rank). */
duet_status_t duet_proxy_inbox_create(duet_heap_t *h, duet_boot_t *b, int want, size_t chunk, int slots,
                                      duet_proxy_inbox_t **out);
void duet_proxy_inbox_destroy(duet_proxy_inbox_t *ib); /* NULL is a no-op; not collective */

/* ---- origin side */
/* 1 when a message to pe may be sent now (flow control). */
static inline int duet_proxy_inbox_room(const duet_proxy_inbox_t *ib, int pe, uint64_t acked)
{
    return ib->sent[pe] - acked < (uint64_t)ib->slots;
}
/* Messages pe has applied and answered (acquire: their replies are readable). */
static inline uint64_t duet_proxy_inbox_acked(const duet_proxy_inbox_t *ib, int pe)
{
    return atomic_load_explicit((_Atomic uint64_t *)(void *)(ib->block + (size_t)pe * DUET_CACHELINE),
                                memory_order_acquire);
}
/* Sends msg (msg->len <= chunk) to pe; `frame` is the caller's buffer of DUET_PROXY_HDR +
 * msg->len bytes whose payload starts at frame + DUET_PROXY_HDR (so header and payload go in
 * one put); the header part is overwritten. Needs room (duet_proxy_inbox_room). The message's
 * number goes to *m (may be NULL). Returns when the frame may be reused; errors of the
 * endpoint come back as they are (wrapped). */
duet_status_t duet_proxy_inbox_send(duet_proxy_inbox_t *ib, int pe, const duet_proxy_msg_t *msg, void *frame,
                                    uint64_t *m);
/* The reply to message m from pe, once acked >= m, until message m + slots is sent; its payload
 * at (char *)reply + DUET_PROXY_HDR. */
static inline const duet_proxy_reply_t *duet_proxy_inbox_reply(const duet_proxy_inbox_t *ib, int pe, uint64_t m)
{
    size_t at = (size_t)ib->npes * DUET_CACHELINE + (size_t)ib->npes * (size_t)ib->slots * ib->slot_bytes +
                ((size_t)pe * (size_t)ib->slots + (size_t)((m - 1) % (uint64_t)ib->slots)) * ib->slot_bytes;
    return (const duet_proxy_reply_t *)(const void *)(ib->block + at);
}

/* ---- target side */
/* The next message from origin (its payload at (char *)msg + DUET_PROXY_HDR), or NULL when it
 * has not arrived. Stays valid until answered. */
const duet_proxy_msg_t *duet_proxy_inbox_peek(const duet_proxy_inbox_t *ib, int origin);
/* The k-th unanswered message from origin (k = 0: peek's), or NULL when it has not arrived
 * (or k is not below slots); so several may be applied before the first is answered. Answers
 * still go in order (answer takes the oldest). */
const duet_proxy_msg_t *duet_proxy_inbox_peek_at(const duet_proxy_inbox_t *ib, int origin, int k);
/* Answers the peeked message of origin and releases its slot: a reply header (status, result)
 * with `len` payload bytes from frame + DUET_PROXY_HDR (frame NULL when len == 0; else a
 * caller buffer as in send), a fence, then the ack. */
duet_status_t duet_proxy_inbox_answer(duet_proxy_inbox_t *ib, int origin, duet_status_t status, uint64_t result,
                                      void *frame, size_t len);

#endif
