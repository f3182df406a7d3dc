/*
 * duet_coll_tune.h — the algorithm table and the tuner that picks from it.
 */
#ifndef DUET_COLL_TUNE_H
#define DUET_COLL_TUNE_H

#include "coll/duet_coll.h"

typedef struct {
    const char *name;      /* as DUET_ALGO spells it */
    duet_coll_kind_t kind;
    duet_coll_build_fn build;
} duet_coll_algo_t;

/* Every algorithm Duet has, one row each. */
extern const duet_coll_algo_t duet_coll_algos[];
extern const int duet_coll_nalgos;

const char *duet_coll_kind_name(duet_coll_kind_t kind);

/* The algorithm forced for `kind` on c: duet_coll_tune_force's on c (c may be NULL), else
 * the one DUET_ALGO names ("ring", or per collective "allreduce:tree,broadcast:ring"); ""
 * when none is. */
void duet_coll_forced_algo(duet_comm_t c, duet_coll_kind_t kind, char *out, size_t len);

/* Forces algorithm `name` of duet_coll_algos[] for c's calls of `kind` over DUET_ALGO (NULL
 * or "": the tuner picks again, or DUET_ALGO forces), and forgets c's decisions. For tools
 * that measure every algorithm in one process (duet-perf --validate): not collective, but
 * every rank must force the same before its next call of the kind. DUET_ERR_INVALID_ARG
 * for a kind without such an algorithm, DUET_ERR_NO_MEMORY. */
duet_status_t duet_coll_tune_force(duet_comm_t c, duet_coll_kind_t kind, const char *name);

/* The alpha-beta model of a communicator's channels (duet_coll_calib.c): from the
 * settings, the host's tune file, or measured once; the same on every rank. Collective the
 * first time it is called on a communicator. */
duet_status_t duet_coll_model_get(duet_comm_t c, duet_coll_model_t *model);
/* The model as this process would have it without measuring, for tools: the settings over
 * the host's tune files over the defaults (both pairs; `source` speaks of the shm pair). `source` (len bytes) says where it came from.
 * Returns 1 when the tune file was read, 0 when it is absent or unusable (a communicator
 * would measure then). */
int duet_coll_model_local(duet_coll_model_t *model, char *source, size_t len);
/* Where duet_coll_model_local's net pair comes from, in words. */
void duet_coll_model_net_source(char *source, size_t len);
/* Measures anew (collective), updates the tune file and forgets cached decisions. */
duet_status_t duet_coll_calibrate(duet_comm_t c, duet_coll_model_t *model);

/* Which host each rank of c is on, for the collectives (duet_coll_hosts.c): host[r] in
 * [0, nhosts), valid while c lives. Local: no exchange. */
duet_status_t duet_coll_hosts_get(duet_comm_t c, const int **host, int *nhosts);

/* The rank layout a measurement was made with (part of a tune file's key): ranks on rank 0's
 * host, and hosts. */
typedef struct {
    int ranks, hosts;
} duet_coll_layout_t;

/* c's layout (local: the host map is known once the collectives have started). */
duet_status_t duet_coll_layout_get(duet_comm_t c, duet_coll_layout_t *lay);

/* The tune files (duet_coll_tune_file.c): a model's measured (alpha, beta) pair of one kind of
 * link ("" the CPU channels' shared memory, "net" the net transport's, "gpu" the GPU
 * executor's), kept per key: this machine's CPU model and cores, Duet's version and the
 * layout (NULL when the reader does not know it: any layout matches). Read: the pair of the
 * first line that matches into m->alpha_us and m->beta_gbps, 0; -1 when there is none (the
 * file absent, or measured elsewhere: then the caller measures; `path` gets the file's name).
 * Write: this key's line replaced, the others kept (a cache only: failures are ignored). */
int duet_coll_tune_file_read(const char *kind, const duet_coll_layout_t *layout, duet_coll_model_t *m, char *path,
                             size_t len);
void duet_coll_tune_file_write(const char *kind, const duet_coll_layout_t *layout, const duet_coll_model_t *m);
/* This run's key, "cpu=... cores=N duet=X.Y.Z[ ranks=R hosts=H]", as the files hold it. */
void duet_coll_tune_key(const duet_coll_layout_t *layout, char *out, size_t len);

/* Forgets a communicator's decisions and repeat records (a new model: they were taken under
 * the old one), keeping what duet_coll_tune_force set. */
void duet_coll_tune_forget(duet_comm_t c);
/* Frees the tuner's state of a communicator (at its destruction). */
void duet_coll_tune_free(duet_comm_t c);

/* The last full-path call's preparation on a communicator, for the repeat path (a loop of
 * like calls skips checks, tuner and schedule: duet_coll_api.c's `again`). It names the
 * tuner's cached schedule, so it is valid only until the tuner writes its cache again (any
 * pick that misses clears it) or forgets it (duet_coll_tune_free). */
typedef struct {
    int valid;
    duet_coll_kind_t kind;
    duet_datatype_t dt;
    duet_op_t op;        /* as prepared: DUET_SUM where the kind has no op */
    int root, in_place;  /* in place by the collective's convention (duet.h) */
    int needs_send, needs_recv; /* the buffers this rank must be given (when count > 0) */
    size_t count, block; /* block: bytes of one rank's block (in place is judged by it) */
    size_t recv_count;   /* elements the call writes, 0 when none (the average divides them) */
    const duet_sched_t *plan;  /* the tuner's cached schedule */
    duet_coll_call_t call;     /* the call as prepared; buffers and number are set per call */
} duet_coll_again_t;

/* The last allreduce shape the tuner gave to the latency lane on a communicator (the lane's
 * fast path, duet_coll_api.c's lane_again). The lane's choice follows from the shape and the
 * model alone, so it stays valid while the cache's other entries change, until the tuner
 * forgets its decisions (duet_coll_tune_free, as a new model does). */
typedef struct {
    size_t count;
    int dt, in_place, valid;
} duet_coll_lane_hit_t;

/* A communicator's repeat records, one record in coll: the first member of the tuner's cache. */
typedef struct {
    duet_coll_again_t again; /* the repeat path's */
    duet_coll_lane_hit_t lane; /* the lane's */
} duet_coll_repeat_t;

/* c's repeat records, or NULL before the tuner's first decision on c. */
static inline duet_coll_repeat_t *duet_coll_tune_repeat(duet_comm_t c)
{
    return (duet_coll_repeat_t *)(void *)c->tune;
}
/* c's repeat-path record, or NULL before the tuner's first decision on c. */
static inline duet_coll_again_t *duet_coll_tune_again(duet_comm_t c)
{
    duet_coll_repeat_t *r = duet_coll_tune_repeat(c);
    return r ? &r->again : NULL;
}

/* The algorithm for this call: the one DUET_ALGO forces (an error if it cannot run this
 * call), else the cheapest by the alpha-beta model; decisions are cached per call shape.
 * *plan is this rank's schedule: either *sched (built now; the caller frees it) or one the
 * communicator's cache keeps from an earlier identical call — valid until the next pick on
 * this communicator, so run (or copy) it before picking again. */
duet_status_t duet_coll_tune_pick(duet_comm_t c, const duet_coll_args_t *a, duet_datatype_t dt,
                                  const duet_coll_algo_t **algo, duet_sched_t *sched, const duet_sched_t **plan);

/* An exchange between the ranks for the tuner, as part of the call being prepared (under
 * its signature, so a rank that makes another call is caught as a mismatch): all[i] = op of
 * mine[i] over the ranks, `count` elements of dt. The tuner uses it to agree the ranks'
 * placement (duet_coll_tune.c, "Placement": uint8 MIN) and what they measured ("Learning":
 * double MAX). */
typedef duet_status_t (*duet_coll_agree_fn)(void *ctx, const void *mine, void *all, size_t count, duet_datatype_t dt,
                                            duet_op_t op);

/* duet_coll_tune_pick, with exchanges through `agree` where the pick needs them; agree NULL
 * (inside a group, or an exchange for another call): a call whose pick depends on placement
 * is costed as copied and out of place on every rank, and nothing is learned from it.
 * (duet_coll_tune_pick: agree NULL.) */
duet_status_t duet_coll_tune_pick_agreed(duet_comm_t c, const duet_coll_args_t *a, duet_datatype_t dt,
                                         duet_coll_agree_fn agree, void *ctx, const duet_coll_algo_t **algo,
                                         duet_sched_t *sched, const duet_sched_t **plan);

/* duet_coll_tune_pick for an exchange the library makes inside another call's preparation
 * (duet_coll_allreduce_as): the decisions are neither read nor written (the call it serves
 * may be in the middle of its own), so *plan is always *sched. */
duet_status_t duet_coll_tune_pick_inner(duet_comm_t c, const duet_coll_args_t *a, duet_datatype_t dt,
                                        const duet_coll_algo_t **algo, duet_sched_t *sched, const duet_sched_t **plan);

/* The time of the call last picked with an exchange on c (its full path, after it ran), for
 * the learning tuner; a call that failed is not recorded. */
void duet_coll_tune_record(duet_comm_t c, double us);

/* Learning a GPU call, whose time is known only once its stream ran it. Candidates timed per
 * shape, and counted calls of each: */
#define DUET_TUNE_LEARN_MAX 3
#define DUET_TUNE_LEARN_CALLS 6
/* The call last picked with an exchange on c: -1 when the tuner has it on no trial; -2 when
 * it is on trial but not counted (a candidate's warm-up); else the candidate (0 ..
 * DUET_TUNE_LEARN_MAX - 1) whose counted call it is. Either way on trial, the call is then
 * recorded (duet_coll_tune_record, a GPU call with 0) once it is queued. */
int duet_coll_tune_trial(duet_comm_t c);
/* 1 when every candidate of shape a has had its calls: the shape's next pick with an exchange
 * decides, from the times recorded, or from those given just before it: */
int duet_coll_tune_deciding(duet_comm_t c, const duet_coll_args_t *a);
/* sum[i]: the total time, us, of candidate i's counted calls of shape a (replacing what was
 * recorded). Every rank gives them (0 for none measured), before the deciding pick. */
void duet_coll_tune_set_times(duet_comm_t c, const duet_coll_args_t *a, const double *sum);

/* The most calls of one shape that learning takes before it decides (0 when DUET_TUNE_LEARN
 * is off): a benchmark's warm-up of at least this measures what was learned. */
int duet_coll_tune_learn_calls(void);

/* Where learning stands for call shape a on c (a->byref and a->in_place ignored; for tests
 * and tools): -1 no decision cached, 0 nothing to learn (or learning off), 1 timing its
 * candidates, 2 decided by what was measured. */
int duet_coll_tune_learn_phase(duet_comm_t c, const duet_coll_args_t *a);

#endif
