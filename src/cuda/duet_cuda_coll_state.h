/*
 * duet_cuda_coll_state.h — a communicator's GPU collective state, shared by the one-shot /
 * two-shot kernels' host side (duet_cuda_coll.c) and the schedule executor's
 * (duet_cuda_exec.c). Inside src/cuda only.
 */
#ifndef DUET_CUDA_COLL_STATE_H
#define DUET_CUDA_COLL_STATE_H

#include <cuda_runtime_api.h>
#include "coll/duet_coll.h"
#include "cuda/duet_cuda_exec_kern.h"

#define DUET_CUDA_SCHED_CACHE 32 /* device copies of schedules kept, by call shape */

typedef struct {
    uint64_t key[3];            /* the call shape (duet_cuda_exec.c); key[0] == 0: empty */
    duet_cuda_step_t *steps;    /* device: steps, then heads (2n), then locals */
    int nsteps, nlocal;
} duet_cuda_sched_entry_t;

typedef struct duet_cuda_coll {
    duet_device_comm_t h;
    /* one-shot / two-shot kernels (duet_cuda_coll_kern.h) */
    char *scratch;        /* (the kernels keep their epoch and block counter in it) */
    /* every GPU collective of the communicator, in call order */
    cudaEvent_t last;     /* recorded after the last call queued for now (not captured) */
    cudaStream_t last_stream;
    int have_last;
    /* CUDA graphs (duet_cuda_coll_begin): the call being queued is captured (capturing), into
     * capture cap_id; the last captured call's stream and its own event, recorded inside the
     * capture (an edge of the graph when the next captured call is on another stream) */
    int capturing;
    int graphs;           /* some call was captured: memory a graph may use is never freed before
                           * the state (the executor's schedules, counters and work space) */
    unsigned long long cap_id;
    cudaStream_t cap_stream;
    cudaEvent_t cap_last;
    cudaStream_t aux;     /* non-blocking, never captured: the executor's set-up copies */
    cudaEvent_t aux_done; /* recorded on aux after an eager set-up copy; the call's stream waits */
    cudaMemPool_t pool;   /* the executor's own stream-ordered pool (duet_cuda_exec.c); NULL: none
                           * yet, or none on this device (no_pool: cudaMalloc, and a host wait) */
    int no_pool;
    int prepared;         /* duet_cuda_coll_prepare: 1 the models and the scratch, 2 the GPU model */
    volatile duet_cuda_fail_t *fail_host; /* a kernel's failure (abort, timeout, mismatch), sticky */
    duet_cuda_fail_t *fail_dev;
    /* the schedule executor (duet_cuda_exec_kern.h), allocated by its first call */
    char *exec_scratch;
    int exec_maxchan;
    char *stepdone;       /* local device memory: the executor's step counters (zero between calls) */
    size_t stepdone_bytes;
    char *work;           /* local device memory: fp32 copies, the schedule's scratch */
    size_t work_bytes;
    duet_cuda_sched_entry_t sched[DUET_CUDA_SCHED_CACHE];
    void **retired;       /* device memory replaced after a capture (a graph may still use it):
                           * freed with the state */
    int nretired, retired_cap;
    /* the direct kernel's blocks this GPU holds at once, by datatype and op (0: not asked yet;
     * -1: none) */
    int direct_most[DUET_DATATYPE_COUNT][DUET_OP_COUNT];
    struct duet_cuda_trial *trials; /* the learning tuner's timed calls, per shape on trial
                                     * (DUET_CUDA_TRIALS, duet_cuda_learn.c); NULL: none yet */
} duet_cuda_coll_state_t;

/* The communicator's state; allocated by its first GPU collective (collective: every rank
 * makes that call; it ends with a host barrier). */
duet_status_t duet_cuda_coll_state(duet_comm_t c, duet_cuda_coll_state_t **out, const char *fn);
/* What any GPU collective on c may need of all the ranks together, made in one place at c's
 * first GPU call, before the call is numbered: the state, the host tuner's model, the
 * executor's scratch, and the GPU tuner's model (which may measure with GPU calls: in a group,
 * when the group runs). A call that fails later on one rank only (a mismatch found at queue
 * time) then leaves no rank inside a bootstrap exchange that its peers never make. */
duet_status_t duet_cuda_coll_prepare(duet_comm_t c, const char *fn);
/* The executor's symmetric scratch (collective; done by duet_cuda_coll_prepare). */
duet_status_t duet_cuda_exec_prepare(duet_comm_t c, duet_cuda_coll_state_t *s, const char *fn);
/* Before duet_cuda_coll_prepare, for a call on `cs`: refuses with DUET_ERR_UNSUPPORTED when
 * c's GPU collectives are not set up yet and cs is being captured into a CUDA graph (the
 * set-up is collective and synchronous: a warm-up call must come first). */
duet_status_t duet_cuda_coll_capture_guard(duet_comm_t c, cudaStream_t cs, const char *fn);
/* Before queuing a call's kernels on `cs`: the sticky failure (a mismatch a kernel found is
 * reported and the communicator revoked here, duet_cuda_coll_failure), the device, whether cs
 * is being captured (s->capturing), and ordering behind the last call when it went to another
 * stream (in a capture: behind the capture's last call, or, for its first, the last call
 * queued before it, as an external event wait). */
duet_status_t duet_cuda_coll_begin(duet_comm_t c, duet_cuda_coll_state_t *s, cudaStream_t cs, const char *fn);
/* A failure of c's GPU collectives (DUET_OK: none): a mismatch one of its kernels found is
 * reported and c revoked (the first time; later, the report), as fn's error. */
duet_status_t duet_cuda_coll_failure(duet_comm_t c, const char *fn);
/* After: records the call's end. */
duet_status_t duet_cuda_coll_end(duet_cuda_coll_state_t *s, cudaStream_t cs, const char *fn);

/* The learning tuner's side of GPU calls (duet_cuda_learn.c): the ranks' exchange (a host
 * allreduce on the communicator ctx); a counted call of candidate `cand` of shape a on trial,
 * timed on its stream between learn_begin (before its kernels; *trial NULL: not timed, the
 * table is full) and learn_end (after them); before the shape's deciding pick, learn_settle
 * waits (bounded) until its timed calls ran and gives the tuner their times. */
#define DUET_CUDA_TRIALS 8 /* shapes on trial at once that are timed */
typedef struct duet_cuda_trial duet_cuda_trial_t;
duet_status_t duet_cuda_learn_agree(void *ctx, const void *mine, void *all, size_t count, duet_datatype_t dt,
                                    duet_op_t op);
duet_status_t duet_cuda_learn_begin(duet_cuda_coll_state_t *s, const duet_coll_args_t *a, int cand, cudaStream_t cs,
                                    duet_cuda_trial_t **trial, const char *fn);
duet_status_t duet_cuda_learn_end(duet_cuda_trial_t *trial, cudaStream_t cs, const char *fn);
duet_status_t duet_cuda_learn_settle(duet_comm_t c, duet_cuda_coll_state_t *s, const duet_coll_args_t *a,
                                     const char *fn);
void duet_cuda_learn_release(duet_cuda_coll_state_t *s);

/* What the executor runs for one call (prepared in duet_cuda_coll.c). */
typedef struct {
    duet_coll_kind_t kind;
    const void *send;
    void *recv;
    size_t send_count, recv_count; /* elements of the caller's type */
    duet_datatype_t dt;   /* the caller's type */
    duet_datatype_t cdt;  /* the compute type: fp32 for an fp16 / bf16 reduction */
    duet_op_t op;         /* the caller's */
    int writes_recv;      /* 0: reduce on a non-root */
    int nchan;
    const duet_sched_t *plan;
    uint64_t key[3];      /* the call shape: same key, same schedule */
    uint64_t sig;         /* the call's signature word (duet_cuda_sig_kern.h); 0: sends / receives */
} duet_cuda_exec_call_t;

/* Channels (and so the chunk) of a call whose larger buffer has `bytes`: the same on every
 * rank, from the call's shape alone. */
int duet_cuda_exec_channels(duet_comm_t c, size_t bytes);
/* The same for a communicator of nranks ranks (without one: duet_cuda_coll_shape). */
int duet_cuda_exec_channels_for(int nranks, size_t bytes);
/* Queues the call on `cs` (after duet_cuda_coll_begin). */
duet_status_t duet_cuda_exec_run(duet_comm_t c, duet_cuda_coll_state_t *s, const duet_cuda_exec_call_t *x,
                                 cudaStream_t cs, const char *fn);
/* Frees the executor's part of the state (the scratch goes with the heap). */
void duet_cuda_exec_release(duet_cuda_coll_state_t *s);

#endif
