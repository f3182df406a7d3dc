/*
 * duet_coll.h — the collective layer: algorithms (schedule builders), the executor, and
 * the tuner that picks among them.
 */
#ifndef DUET_COLL_H
#define DUET_COLL_H

#include "coll/duet_coll_chan.h"
#include "coll/duet_coll_dtype.h"
#include "coll/duet_coll_sched.h"

typedef enum {
    DUET_COLL_ALLREDUCE, DUET_COLL_BROADCAST, DUET_COLL_REDUCE, DUET_COLL_ALLGATHER,
    DUET_COLL_REDUCE_SCATTER, DUET_COLL_ALLTOALL, DUET_COLL_SEND, DUET_COLL_RECV, DUET_COLL_KIND_COUNT
} duet_coll_kind_t;

/* One collective call, as the algorithms see it. Sizes in bytes of the compute type. */
typedef struct {
    duet_coll_kind_t kind;
    int rank, nranks, root; /* root: the peer of a send / recv */
    size_t count; /* elements: per rank for allgather / reduce-scatter / alltoall blocks */
    size_t elem;  /* bytes per element */
    size_t chunk; /* largest message */
    int in_place;
    int gpu;      /* 1: the GPU executor runs it (the tuner costs it with the GPU's model) */
    /* Which host each rank is on (duet_coll_hosts.c): host[r] in [0, nhosts), or NULL (and
     * nhosts 0 or 1) for one host. The hierarchical algorithms need it; the cost model charges
     * a message between two hosts at the net transport's alpha and beta. */
    const int *host;
    int nhosts;
    /* 1: the buffers lie in the symmetric heap on every rank, so a message of at least
     * DUET_CHAN_BYREF_MIN bytes from a buffer that stays unchanged (the send buffer out of
     * place; the receive buffer of a schedule with recv_stable) goes by reference: the receiver
     * copies it out of the sender's heap, one copy instead of two (duet_coll_chan.h). The tuner
     * sets it from what the ranks agree (duet_coll_tune.c); it changes costs, never schedules. */
    int byref;
} duet_coll_args_t;

/* Whether ranks x and y of the call are on different hosts (their messages cross the net). */
static inline int duet_coll_across(const duet_coll_args_t *a, int x, int y)
{
    return a->host && a->nhosts > 1 && a->host[x] != a->host[y];
}

/* The largest message an algorithm may use: the channel chunk, in whole elements. */
static inline size_t duet_coll_chunk(const duet_coll_args_t *a)
{
    size_t chunk = a->chunk / a->elem * a->elem;
    return chunk ? chunk : a->elem;
}

/* for (off, len) over [lo, hi) in pieces of at most `chunk` bytes; stops at the schedule
 * s's first error (a builder never runs on after one) */
#define DUET_FOR_CHUNKS(s, lo, hi, chunk, off, len)                                                     \
    for (size_t off = (lo), len = 0;                                                                    \
         off < (hi) && !(s)->error && ((len = (hi) - off < (chunk) ? (hi) - off : (chunk)), 1);          \
         off += (chunk))

/* The most chunks the largest buffer of one call may be cut into (DUET_COLL_CHUNK each): every
 * builder's step count is a small multiple of chunks x log2(ranks), and must stay far below
 * DUET_SCHED_MAX_STEPS. 2^26 chunks of the default 128 KiB are 8 TiB. */
#define DUET_SCHED_MAX_CHUNKS ((size_t)1 << 26)

/* The first thing every builder does: refuses, before it builds a step, a call whose byte
 * size overflows, exceeds DUET_MAX_BUFFER_BYTES (duet.h), or needs more than
 * DUET_SCHED_MAX_CHUNKS chunks: such a schedule cannot exist. Returns the error set in s. */
duet_status_t duet_coll_sched_begin(const duet_coll_args_t *a, duet_sched_t *s);
#define DUET_SCHED_BEGIN(a, s)                                                                          \
    do {                                                                                                \
        duet_status_t begin_st_ = duet_coll_sched_begin((a), (s));                                      \
        if (begin_st_) return begin_st_;                                                                \
    } while (0)

/* An algorithm writes rank `a->rank`'s schedule, or returns DUET_ERR_UNSUPPORTED when it
 * does not apply (with a message saying why). */
typedef duet_status_t (*duet_coll_build_fn)(const duet_coll_args_t *a, duet_sched_t *s);

/* A collective call's arguments as its signature holds them (duet_coll_sig.h): published by
 * each rank in a line of its own, compared by a peer that waits long. */
typedef struct {
    uint64_t first;             /* the first call of the run it is part of (a group's calls are one run) */
    uint64_t count;
    uint32_t hash;              /* of kind, count, datatype, op and root (and path): what messages carry */
    int32_t kind, dt, op, root; /* as the caller passed them (op and root where the kind has them) */
    int32_t path;               /* a device executor's choice each rank makes alone that all must share
                                 * (the GPU's direct kernel: its blocks; 0: none, and on the host) */
} duet_coll_sig_args_t;

/* What the steps of one call act on: its buffers (send, receive, scratch of the
 * schedule's tmp_bytes), its compute type and reduction. */
typedef struct {
    char *buf[DUET_BUF_COUNT];
    duet_datatype_t dt;
    duet_op_t op;
    size_t elem;
    duet_coll_chan_t *chan; /* the communicator's collective or point-to-point channels */
    uint8_t stable[DUET_BUF_COUNT]; /* 1: a send from this buffer may go by reference (it
                                     * stays unchanged until the call ends) */
    uint8_t stream;                 /* 1: the receive buffer is larger than the cache:
                                     * received pieces are copied with streaming stores */
    uint8_t p2p;                    /* 1: a send or receive (not a collective) */
    uint64_t call_no;               /* its signature (duet_coll_sig.h): its number, the
                                     * communicator's collective call, or for p2p the
                                     * operation's on its link; */
    duet_coll_sig_args_t sig;       /* and its arguments with their hash (for p2p the hash
                                     * alone), as the executor publishes them */
} duet_coll_call_t;

/* One operation as the caller made it, and what running it takes (duet_coll_api.c). */
typedef struct {
    duet_comm_t comm;
    duet_coll_kind_t kind;
    const void *sendbuf;
    void *recvbuf;
    size_t count;
    duet_datatype_t dt;
    duet_op_t op;
    int root; /* or the peer of send / recv */
    duet_stream_t stream;
    const char *fn;
    int may_lane; /* the lane may run it (duet_coll_lane.h): not part of a group */
    int inner;    /* an exchange the library makes for another call (duet_coll_allreduce_as) */
    /* filled by preparation */
    int lane;     /* runs in the lane, not the executor */
    size_t send_count, recv_count;
    int writes_recv;
    float *wide_send, *wide_recv; /* fp16 / bf16 reduce in fp32 */
    duet_sched_t sched;       /* built for this call (or empty) */
    const duet_sched_t *plan; /* what runs: &sched, or a cached schedule (see the tuner) */
    duet_coll_call_t call;
} duet_coll_op_t;

/* Groups (duet_coll_group.c): the calling thread's nesting depth (queuing a call: the
 * executor table's duet_coll_group_add, duet_coll_executor.h). */
int duet_coll_group_depth(void);
/* Prepares and runs operations of one communicator as one schedule. */
duet_status_t duet_coll_run_fused(duet_coll_op_t *ops, int n);

/* Runs a schedule whose steps name calls[step.call], of ncalls calls (duet_coll_exec.c): it
 * publishes the collectives among them (duet_coll_sig.h); `what` names the operation in errors. */
duet_status_t duet_coll_execute(duet_comm_t c, const duet_sched_t *s, const duet_coll_call_t *calls, int ncalls,
                                const char *what);

/* ---- algorithms, by file */
/* duet_coll_p2p.c: a send or a receive, chunked */
duet_status_t duet_coll_p2p(const duet_coll_args_t *a, duet_sched_t *s);
/* duet_coll_ring.c */
duet_status_t duet_coll_ring_allreduce(const duet_coll_args_t *a, duet_sched_t *s);
duet_status_t duet_coll_ring_allgather(const duet_coll_args_t *a, duet_sched_t *s);
duet_status_t duet_coll_ring_reduce_scatter(const duet_coll_args_t *a, duet_sched_t *s);
/* duet_coll_tree.c */
duet_status_t duet_coll_tree_allreduce(const duet_coll_args_t *a, duet_sched_t *s);
duet_status_t duet_coll_dbtree_allreduce(const duet_coll_args_t *a, duet_sched_t *s);
duet_status_t duet_coll_tree_broadcast(const duet_coll_args_t *a, duet_sched_t *s);
duet_status_t duet_coll_chain_broadcast(const duet_coll_args_t *a, duet_sched_t *s);
duet_status_t duet_coll_tree_reduce(const duet_coll_args_t *a, duet_sched_t *s);
duet_status_t duet_coll_chain_reduce(const duet_coll_args_t *a, duet_sched_t *s);
/* duet_coll_rd.c */
duet_status_t duet_coll_rd_allreduce(const duet_coll_args_t *a, duet_sched_t *s);
duet_status_t duet_coll_rhd_allreduce(const duet_coll_args_t *a, duet_sched_t *s);
duet_status_t duet_coll_rd_allgather(const duet_coll_args_t *a, duet_sched_t *s);
duet_status_t duet_coll_rhd_reduce_scatter(const duet_coll_args_t *a, duet_sched_t *s);
/* duet_coll_direct.c */
duet_status_t duet_coll_oneshot_allreduce(const duet_coll_args_t *a, duet_sched_t *s);
duet_status_t duet_coll_twoshot_allreduce(const duet_coll_args_t *a, duet_sched_t *s);
duet_status_t duet_coll_direct_allgather(const duet_coll_args_t *a, duet_sched_t *s);
duet_status_t duet_coll_direct_reduce_scatter(const duet_coll_args_t *a, duet_sched_t *s);
duet_status_t duet_coll_pairwise_alltoall(const duet_coll_args_t *a, duet_sched_t *s);
/* duet_coll_hier.c: over hosts (a->host), refused on one host */
duet_status_t duet_coll_hier_ring_allreduce(const duet_coll_args_t *a, duet_sched_t *s);
duet_status_t duet_coll_hier_dbtree_allreduce(const duet_coll_args_t *a, duet_sched_t *s);
duet_status_t duet_coll_hier_tree_broadcast(const duet_coll_args_t *a, duet_sched_t *s);
duet_status_t duet_coll_hier_tree_reduce(const duet_coll_args_t *a, duet_sched_t *s);

/* The collectives' module of a communicator's life (core/duet_comm_mod.h, duet_coll_mod.c): its
 * channels, then the tuner's decisions and the executor's bookkeeping. */
extern const struct duet_comm_mod duet_coll_comm_mod;

#endif
