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

/* The algorithm DUET_ALGO forces for `kind` ("ring", or per collective
 * "allreduce:tree,broadcast:ring"), "" when it names none. */
void duet_coll_forced_algo(duet_coll_kind_t kind, char *out, size_t len);

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

/* The host's tune file of a model (`kind` "" for the CPU channels' shared memory, "net" for
 * the net transport's pair, "gpu" for the GPU executor): its one (alpha, beta) pair read into
 * m->alpha_us and m->beta_gbps (0 when it holds a usable pair, else -1; `path` gets its name),
 * or written (a cache only: failures are ignored). */
int duet_coll_tune_file_read(const char *kind, duet_coll_model_t *m, char *path, size_t len);
void duet_coll_tune_file_write(const char *kind, const duet_coll_model_t *m);

/* Forgets a communicator's cached decisions (at its destruction). */
void duet_coll_tune_free(duet_comm_t c);

/* The algorithm for this call: the one DUET_ALGO forces (an error if it cannot run this
 * call), else the cheapest by the alpha-beta model; decisions are cached per call shape.
 * *plan is this rank's schedule: either *sched (built now; the caller frees it) or one the
 * communicator's cache keeps from an earlier identical call — valid until the next pick on
 * this communicator, so run (or copy) it before picking again. */
duet_status_t duet_coll_tune_pick(duet_comm_t c, const duet_coll_args_t *a, duet_datatype_t dt,
                                  const duet_coll_algo_t **algo, duet_sched_t *sched, const duet_sched_t **plan);

#endif
