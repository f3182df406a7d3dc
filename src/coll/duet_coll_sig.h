/*
 * duet_coll_sig.h — call signatures: ranks that make different collective calls are caught.
 *
 * Every rank must call the same collectives with the same arguments in the same order. A
 * call's signature is its number on the communicator (one counter per communicator, bumped by
 * every collective, host or GPU; the members of a group each count) and a 32-bit hash of its
 * kind, count, datatype, op and root. It is checked in three places:
 *
 *   1. every message carries it: a channel slot's header and a lane line hold the call number
 *      beside the message number (seq word: call << 32 | message) and the hash beside the
 *      length, so the check reads the cache line the receiver reads anyway;
 *   2. every rank publishes its current call in a line of its own channel block (a few local
 *      stores per call, after the call's first messages are out), a history of
 *      DUET_SIG_HISTORY calls by call number:
 *
 *        line[call % H] = {call, first call of its group, count, hash, kind, datatype, op, root}
 *
 *      a rank that waits for a mapped peer looks at the peer's line for the same call (after the
 *      first spins, every few turns): other arguments are a mismatch at once, whatever path
 *      (lane, channel ring, tree, by reference) each side took; a peer that has started a later
 *      run of calls while the message I wait for is still missing (seen twice, with a sweep of
 *      the channels between) has left the call without sending it: a mismatch too;
 *   3. the latency lane's lines carry it like channel slots.
 *
 * Send and receive are not collectives: their signature is the operation's number on its link
 * (the n-th send to a peer matches the n-th receive from it) and a hash of its size in bytes
 * (count x the datatype's size: datatypes of one size are not told apart, bytes are bytes).
 *
 * A mismatch found anywhere makes every rank fail: the finder writes a report (one line of
 * text naming both ranks and the differing field) into every member's report line of its own,
 * then revokes the communicator with DUET_ERR_INVALID_ARG in the abort words; every wait on it
 * ends with that status and the report as its message, and every later call fails at entry.
 * duet_comm_shrink gives a new communicator.
 *
 * GPU collectives (src/cuda) are numbered on the same counter and publish their line on the
 * host when they are queued (duet_coll_sig_post, which also compares the ring neighbours'
 * lines of that number: the later of two ranks that differ finds it at once); a host exchange
 * such a call makes (duet_coll_allreduce_as) runs under the call's own signature, and the
 * kernels carry it as well (src/cuda/duet_cuda_sig_kern.h); what they find comes back here
 * (duet_coll_sig_gpu_found).
 *
 * A peer reached over the net transport has no
 * mapped block: its messages' signatures are checked, and a wait of 50 ms or more reads its
 * published line with a get (other arguments for the same call are a mismatch); one that has
 * gone past my call without sending what I wait for is not told from one whose last put is
 * still on its way, so that wait ends at DUET_WAIT_TIMEOUT.
 */
#ifndef DUET_COLL_SIG_H
#define DUET_COLL_SIG_H

#include "coll/duet_coll.h"

#define DUET_SIG_HISTORY 8   /* published calls per rank */
#define DUET_SIG_REPORT 256  /* bytes of one report */

/* A published call (one cache line of the publisher's channel block). */
typedef struct duet_coll_sig_line {
    _Atomic uint64_t call; /* the call's number, stored last (0: none yet, or being rewritten) */
    duet_coll_sig_args_t a;
    char pad[DUET_CACHELINE - sizeof(uint64_t) - sizeof(duet_coll_sig_args_t)];
} duet_coll_sig_line_t;

typedef struct {
    _Atomic uint64_t set; /* 1 once text is written */
    char text[DUET_SIG_REPORT - sizeof(uint64_t)];
} duet_coll_sig_report_t;

/* A collective call's signature as its caller made it: its number, and what is hashed and
 * published (op and root as in duet_coll_sig_hash: ignored where the kind has none). */
typedef struct {
    uint64_t call;
    duet_coll_sig_args_t a;
} duet_coll_sig_t;

/* Bytes of a channel block for the published lines and the reports of n ranks. */
static inline size_t duet_coll_sig_bytes(int nranks)
{
    return DUET_SIG_HISTORY * sizeof(duet_coll_sig_line_t) + (size_t)nranks * sizeof(duet_coll_sig_report_t);
}

static inline int duet_coll_sig_reduces_(duet_coll_kind_t k)
{
    return k == DUET_COLL_ALLREDUCE || k == DUET_COLL_REDUCE || k == DUET_COLL_REDUCE_SCATTER;
}
static inline int duet_coll_sig_rooted_(duet_coll_kind_t k) { return k == DUET_COLL_BROADCAST || k == DUET_COLL_REDUCE; }

/* The hash of a call's arguments (op and root as the call's kind uses them): the small fields
 * packed in one word (kind < 256, datatype < 256, op < 256, root), folded with the count by two
 * multiplications (a nanosecond: it is on the latency lane's path). */
static inline uint32_t duet_coll_sig_hash(duet_coll_kind_t kind, size_t count, duet_datatype_t dt, duet_op_t op,
                                          int root)
{
    uint64_t w = (uint64_t)(uint32_t)(duet_coll_sig_rooted_(kind) ? root : -1) << 32 |
                 (uint64_t)((uint32_t)dt & 0xff) << 16 |
                 (uint64_t)((uint32_t)(duet_coll_sig_reduces_(kind) ? (int)op : 0xff) & 0xff) << 8 | (uint64_t)kind;
    uint64_t h = ((uint64_t)count * 0x9e3779b97f4a7c15ull ^ w) * 0xbf58476d1ce4e5b9ull;
    return (uint32_t)(h >> 32) ^ (uint32_t)h;
}

/* Publishes call number `call` with its arguments in my channel block: the line's number is
 * zeroed before its fields change, so a reader (which reads the number before and after the
 * fields) never mixes two calls' fields. Seven stores to a line of my own (a peer reads it only
 * in a long wait). */
static inline void duet_coll_sig_publish(duet_comm_t c, uint64_t call, const duet_coll_sig_args_t *a)
{
    duet_coll_sig_line_t *l = c->chan->sig_mine + call % DUET_SIG_HISTORY;
    atomic_store_explicit(&l->call, 0, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    l->a = *a;
    atomic_store_explicit(&l->call, call, memory_order_release);
}

/* Whether a wait that has made `turns` turns should look at its peers' published calls now:
 * spinning, after 4096 turns (tens of microseconds: a look makes the peer's next publication a
 * cache miss) and every 512; else (yielding or sleeping turns) every 16. */
static inline int duet_coll_sig_due(const duet_waiter_t *w, int spinning)
{
    return spinning ? w->turns >= 4096 && (w->turns & 511) == 0 : w->turns >= 64 && (w->turns & 15) == 0;
}

/* Whether a wait should look at a peer over the net transport now (a get, tens of microseconds:
 * only once the wait has lasted 50 ms, at the turns duet_coll_sig_due picks). */
static inline int duet_coll_sig_net_due(const duet_waiter_t *w)
{
    return w->start_ns && duet_time_ns() - w->start_ns > 50000000ull;
}

/* Looks at `peer` while I wait for it in collective call `call`: DUET_OK (go on waiting;
 * *past = 1 when the peer, mapped, has started a run of calls after mine) or, when its
 * published call of that number has other arguments, the mismatch (reported, revoked). A net
 * peer's line is read with a get, and only its arguments are compared. */
duet_status_t duet_coll_sig_check_peer(duet_comm_t c, int peer, uint64_t call, int *past);

/* A message from `peer` whose signature or length (got) is not that of my call `want` (a
 * collective, or a send / receive) of `want_len` bytes: reported (the peer's published call of
 * that number names the field) and revoked; returns DUET_ERR_INVALID_ARG. */
duet_status_t duet_coll_sig_bad_message(duet_comm_t c, int peer, const duet_coll_call_t *want,
                                        const duet_chan_got_t *got, uint64_t want_len);

/* The peer has left my call `call` without the message I wait for (seen twice). */
duet_status_t duet_coll_sig_peer_left(duet_comm_t c, int peer, uint64_t call);

/* After a call `fn` on c failed with st: when c was revoked for a mismatch, the error message
 * becomes its report ("fn: rank 0 called allreduce with count 4, rank 1 with 8 (call #7): ..."),
 * the same on every rank, and 1 is returned; else 0 (the message is left as it is). */
int duet_coll_sig_explain(duet_comm_t c, duet_status_t st, const char *fn);

/* A GPU collective's signature, numbered by its caller: published as my call sig->call (part
 * of the run that starts at sig->first: the calls of a GPU group are published when they are
 * queued, all before the first runs, so a peer must not take the later ones as my having left
 * the first), then compared with the lines my ring neighbours (rank - 1, rank + 1, when mapped)
 * have published for that number, if they have: other arguments are reported and c revoked
 * (DUET_ERR_INVALID_ARG, the message set); else DUET_OK. Two loads when they have not. */
duet_status_t duet_coll_sig_post(duet_comm_t c, const duet_coll_sig_t *sig);

/* What a GPU kernel of call `call` found (src/cuda/duet_cuda_sig_kern.h): `theirs` from
 * `peer` where my word `mine` was due. Reported (naming the field when both ranks' published
 * calls of that number are still to be read) and c revoked; returns DUET_ERR_INVALID_ARG. */
duet_status_t duet_coll_sig_gpu_found(duet_comm_t c, int peer, uint64_t call, uint64_t mine, uint64_t theirs);

/* An allreduce on host memory (in place allowed) that runs under another call's signature:
 * the exchange a GPU collective makes on the host is that call, not one of its own, so a
 * peer that made another call is caught in it. Not in a group. */
duet_status_t duet_coll_allreduce_as(duet_comm_t c, const void *sendbuf, void *recvbuf, size_t count,
                                     duet_datatype_t dt, duet_op_t op, const duet_coll_sig_t *as, const char *fn);

#endif
