/*
 * duet_coll_sim.h — the schedule simulator: builds every rank's schedule of one collective
 * call in one process, runs them together under the host executor's rules, checks them and
 * times them.
 *
 * ---- What runs: the executor's rules (duet_coll_exec.c, duet_coll_chan.c)
 * A step of rank r may run once
 *   - its `dep` has completed;
 *   - it is the earliest unfinished send of r to its peer (sends to one peer go in list
 *     order), or the earliest unfinished receive of r from its peer (likewise);
 *   - a send: fewer than `slots` of the link's messages are unconsumed (as the sender knows
 *     it: see the ack below); a receive: its message has arrived;
 *   (the executor has no window: DUET_SIM_WINDOW is kept as a parameter, set past any
 *   schedule's length, so the window code paths stay testable).
 * The k-th SEND a -> b is matched with the k-th RECV / RECV_REDUCE of b from a. A send
 * takes its data when it runs; a receive writes when it runs. Nothing else orders the steps
 * of a rank: the executor may run them in any order these rules allow.
 *
 * ---- The clock (alpha-beta-gamma, one executor thread per rank)
 * Each rank runs one step at a time; its clock advances by the step's cost, step_us plus
 *   SEND            bytes * beta   (injecting the message; the rank is busy meanwhile)
 *   RECV            bytes * gamma  (copying the message out; by reference: * copy)
 *   RECV_REDUCE     bytes * (gamma + reduce)  (by reference: copy + reduce)
 *   COPY            bytes * copy
 *   REDUCE          bytes * (copy + reduce)
 * (copy: copy_us_per_byte, or gamma when it is 0)
 * A send by reference (the shape's byref, a message of at least DUET_CHAN_BYREF_MIN bytes
 * from the send buffer out of place or from the receive buffer of a recv_stable schedule,
 * inside one host) costs its sender step_us alone: only the offset travels, the receiver's
 * copy out of the sender's heap is the one copy; the sender's last step is not its end, the
 * acknowledgement of its last message by reference is (the executor waits for it).
 * A message sent at time t arrives at t + bytes*beta + alpha: alpha + bytes*beta after its
 * send started. A receive runs at the earliest max(receiver's clock, arrival). When a
 * receive completes at time t, its sender learns at t + alpha that the slot is free (the
 * ack is a message too): with `slots` messages in flight a link carries at most
 * slots * chunk bytes per round trip. Whenever a rank is idle it starts, among the steps
 * that may run at that moment, the one earliest in its schedule (the executor's sweep
 * order). The simulation is event-driven (a heap of arrivals, acks and step completions):
 * its cost is O(steps log steps), independent of the model's times. The makespan is the
 * time the last step of any rank completes. With a host map (duet_coll_args_t.host) and a
 * net alpha in the model, a message between two hosts, its ack and its receive are charged
 * the net alpha, beta and gamma instead: each message by its link's class.
 *
 * ---- Calls back to back
 * With model calls = k > 1 (duet_coll_simulate only) each rank runs its schedule k times in a
 * row, as a stream runs one kernel after another: the steps of a rank's call j + 1 may start
 * once all of its steps of call j are done, whatever the other ranks are at; messages keep
 * their links' order across calls. A rank that finishes early thus starts the next call
 * early, and a call's cost in a run of them is set by the busiest rank as much as by the
 * critical path (a chain broadcast's hops overlap from one call to the next). per_call_us is
 * the last call's increment (the first one's ramp left out). Not with check_data.
 *
 * ---- What is checked
 * Before running (always): every step well formed (kind, buffer, peer in [0, n), dep an
 * earlier step or -1, call 0, offsets and sizes whole elements, a message at most the
 * call's chunk, nothing written into the caller's send buffer); buffer ranges within the
 * sizes the call implies (below); for every ordered pair of ranks, as many sends as
 * receives, the k-th of each of equal size.
 * While running (always): deadlock — steps remain and nothing can run: the report names,
 * for each stuck rank, the step it waits on and the rank it waits for.
 * With check_data: the steps really move data. Each element is a 64-bit token: rank r's
 * input element i is a random-looking key K(r, i); a reduction is a wrapping 64-bit sum,
 * so a result is correct only if every contribution is in it exactly once (a missing or
 * doubled contribution changes the sum; the report says whose). Receive buffers and
 * scratch start poisoned. At the end every element the call defines is compared with the
 * reference: allreduce sum_r K(r, i) on every rank, reduce the same on the root only,
 * broadcast K(root, i), allgather K(r, i) at block r, reduce-scatter sum_r K(r, q*count+i)
 * on rank q, alltoall K(r, q*count+i) at block r of rank q.
 * Also with check_data, races: the simulator runs one order of the steps, but the executor
 * may run another. Two steps of one rank that touch the same element (one writing it) must
 * be ordered by the rules above — by deps, the per-peer order, a message (the send before
 * its receive), a freed slot (the receive of message k before the send of message
 * k + slots on that link) or the window — else the result depends on timing, and the pair
 * is reported as a race. The buffers are laid out as the caller's are, aliasing included,
 * so in-place hazards (a receive overwriting input that a send has yet to read) are races.
 *
 * ---- Buffers of a call (bytes; c = count * elem, n ranks)
 *   allreduce       send c, recv c                     in place: one buffer
 *   broadcast       send c on the root only, recv c    in place (root): one buffer
 *   reduce          send c, recv c on the root only    in place (root): one buffer
 *   allgather       send c, recv n*c                   in place: send = recv + rank*c
 *   reduce-scatter  send n*c, recv c                   in place: recv = send + rank*c
 *   alltoall        send n*c, recv n*c                 in place: one buffer
 *   scratch         the schedule's tmp_bytes
 * The send buffer is read-only (only its in-place alias, the receive buffer, is written).
 * A buffer "on the root only" has size 0 elsewhere: a step that touches it is out of range.
 *
 * Not simulated: point-to-point kinds (a send needs another call's receive) and groups
 * (steps of `call` other than 0).
 */
#ifndef DUET_COLL_SIM_H
#define DUET_COLL_SIM_H

#include "coll/duet_coll_tune.h"

#define DUET_SIM_WINDOW (1 << 30) /* the executor has no window: every queue head may run */
#define DUET_SIM_MAX_RANKS 4096 /* links are n x n */
#define DUET_SIM_MAX_CALLS 16   /* calls back to back (duet_sim_model_t.calls) */

/* The cost model (see above). Times in microseconds. */
typedef struct {
    double alpha_us;          /* latency of a message (and of its ack)             */
    double beta_us_per_byte;  /* per byte sent: 1 / bandwidth                      */
    double gamma_us_per_byte; /* per byte copied, reduced or received locally      */
    int slots;                /* messages in flight per link (>= 1)                */
    /* a message between ranks on different hosts (shape->host), when net_alpha_us > 0: its
     * alpha (and its ack's), the sender's and the receiver's cost per byte */
    double net_alpha_us, net_beta_us_per_byte, net_gamma_us_per_byte;
    double step_us;            /* every step a rank runs costs this besides its bytes      */
    double copy_us_per_byte;   /* one copy (COPY, REDUCE, the receive of a message by
                                * reference) when > 0; else gamma                         */
    double reduce_us_per_byte; /* a reducing step's cost per byte beside gamma (REDUCE,
                                * RECV_REDUCE)                                             */
    int calls;                 /* the call run this many times back to back (0 or 1: once;
                                * see "Calls back to back" above)                          */
} duet_sim_model_t;

/* Kinds of problems found, as bits of duet_sim_result_t.errors. */
enum {
    DUET_SIM_ERR_BUILD = 1 << 0,    /* the algorithm failed for some ranks, not all      */
    DUET_SIM_ERR_STEP = 1 << 1,     /* a malformed step (kind, buffer, peer, dep, size,
                                     * alignment, chunk, a write into the send buffer)   */
    DUET_SIM_ERR_RANGE = 1 << 2,    /* a buffer range beyond the buffer's size           */
    DUET_SIM_ERR_MATCH = 1 << 3,    /* unmatched sends / receives, or sizes that differ  */
    DUET_SIM_ERR_DEADLOCK = 1 << 4, /* steps remain and none can run                     */
    DUET_SIM_ERR_RACE = 1 << 5,     /* unordered steps touch the same element            */
    DUET_SIM_ERR_DATA = 1 << 6,     /* a result element differs from the reference       */
};

/* One rank's traffic and time. */
typedef struct {
    uint64_t msgs_sent, bytes_sent, msgs_recvd, bytes_recvd;
    uint64_t bytes_local; /* COPY and REDUCE bytes                                  */
    int steps;            /* of its schedule                                        */
    int steps_run;        /* completed (less than steps after a deadlock)          */
    double finish_us;     /* when its last step completed                          */
    double busy_us;       /* time spent running steps                              */
} duet_sim_rank_t;

typedef struct {
    int ok;               /* 1: no problem of any kind was found                    */
    unsigned errors;      /* DUET_SIM_ERR_* bits of the problems found              */
    int nerrors;          /* problems found; the first few are described in error   */
    double time_us;       /* makespan: the last completion on any rank              */
    double per_call_us;   /* with model calls > 1: what the last call added (the end of
                           * the last call, less the end of the one before); else time_us */
    int slowest_rank;     /* the rank that finished last                            */
    uint64_t msgs_max, bytes_max;     /* most messages / bytes sent by one rank     */
    uint64_t msgs_total, bytes_total; /* over all ranks                             */
    int steps_max;        /* longest schedule                                       */
    char error[512];      /* "" when ok; else the first problems, one per line      */
} duet_sim_result_t;

/* A model for tests and tools: alpha 1 us, 10 GB/s (beta 1e-4 us/B), gamma 1e-5 us/B
 * (100 GB/s), and the slots the library's channels use (DUET_COLL_SLOTS, at least 2). */
void duet_sim_model_default(duet_sim_model_t *m);

/* The table's algorithm `name` for `kind` (duet_coll_algos[]), NULL when there is none. */
const duet_coll_algo_t *duet_sim_find_algo(duet_coll_kind_t kind, const char *name);

/*
 * Builds the schedule of every rank 0..shape->nranks-1 of `shape` (shape->rank is ignored)
 * with algo->build and simulates them (duet_sim_run). check_data: also move data and check
 * every result element and races (costs memory and time per element: use it for
 * correctness, not for timing large calls). ranks: NULL, or room for nranks entries.
 * Returns DUET_OK when the simulation ran — then *out says what it found (out->ok) —;
 * DUET_ERR_UNSUPPORTED when the algorithm refuses the call on every rank (the message of
 * the first refusal in duet_last_error()); DUET_ERR_INVALID_ARG for a shape that cannot be
 * simulated (the algorithm is for another kind, a point-to-point kind, nranks outside
 * [1, DUET_SIM_MAX_RANKS], elem 0, slots < 1, a root out of range); DUET_ERR_NO_MEMORY.
 */
duet_status_t duet_coll_simulate(const duet_coll_algo_t *algo, const duet_coll_args_t *shape, int check_data,
                                 const duet_sim_model_t *model, duet_sim_result_t *out, duet_sim_rank_t *ranks);

/*
 * Simulates given schedules: scheds[r] is rank r's, for r in [0, shape->nranks) (for
 * hand-built schedules: tests of the simulator itself); with model calls = k > 1, scheds[r]
 * holds k copies of rank r's call one after another (its steps a multiple of k). The rest as
 * duet_coll_simulate.
 */
duet_status_t duet_sim_run(const duet_sched_t *scheds, const duet_coll_args_t *shape, int check_data,
                           const duet_sim_model_t *model, duet_sim_result_t *out, duet_sim_rank_t *ranks);

#endif
