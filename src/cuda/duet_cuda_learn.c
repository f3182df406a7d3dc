/*
 * duet_cuda_learn.c — the learning tuner's clock and exchange for GPU collectives
 * (duet_coll_tune.c, "Learning").
 *
 * A GPU call only queues work, so its time is not two host clock reads and is not known when
 * the call returns. A counted call of a shape on trial (duet_coll_tune_trial) is bracketed by
 * two timing events on its stream, kept in the shape's trial here; nothing waits for them.
 * At the shape's deciding call (duet_coll_tune_deciding), and only there, the host waits
 * (bounded: the communicator's wait) until the trial's calls have run, hands each
 * candidate's total to the tuner (duet_coll_tune_set_times), and the ranks agree on the
 * slowest rank's means with a host allreduce (duet_cuda_learn_agree): one wait and one
 * exchange per call shape, once. A call captured into a CUDA graph or run in a group is not
 * on trial (duet_cuda_coll.c). Every rank makes the same calls, so every rank has the same
 * trials; a shape that finds the table full is not timed, and then keeps the predicted best
 * (a trial whose shape left the tuner's cache before deciding keeps its slot).
 */
#include <stdlib.h>
#include <string.h>
#include "coll/duet_coll_tune.h"
#include "cuda/duet_cuda_coll.h"
#include "cuda/duet_cuda_coll_state.h"
#include "cuda/duet_cuda_driver.h"

#define PAIRS (DUET_TUNE_LEARN_MAX * DUET_TUNE_LEARN_CALLS)

struct duet_cuda_trial {
    int used, n;             /* n: pairs recorded                                 */
    duet_coll_args_t shape;  /* the tuner's key: kind, count, elem, root          */
    int cand[PAIRS];         /* the candidate each pair timed                     */
    cudaEvent_t ev[PAIRS][2]; /* made when first needed, kept for the next trials */
};

duet_status_t duet_cuda_learn_agree(void *ctx, const void *mine, void *all, size_t count, duet_datatype_t dt,
                                    duet_op_t op)
{
    return duet_allreduce(mine, all, count, dt, op, (duet_comm_t)ctx, NULL);
}

static int same_shape(const duet_coll_args_t *x, const duet_coll_args_t *y)
{
    return x->kind == y->kind && x->count == y->count && x->elem == y->elem && x->root == y->root;
}

static duet_cuda_trial_t *trial_of(duet_cuda_coll_state_t *s, const duet_coll_args_t *a, int make)
{
    if (!s->trials && make) s->trials = calloc(DUET_CUDA_TRIALS, sizeof *s->trials);
    if (!s->trials) return NULL;
    duet_cuda_trial_t *free_one = NULL;
    for (int i = 0; i < DUET_CUDA_TRIALS; i++) {
        duet_cuda_trial_t *t = &s->trials[i];
        if (t->used && same_shape(&t->shape, a)) return t;
        if (!t->used && !free_one) free_one = t;
    }
    if (!make || !free_one) return NULL;
    free_one->used = 1;
    free_one->n = 0;
    free_one->shape = *a;
    return free_one;
}

duet_status_t duet_cuda_learn_begin(duet_cuda_coll_state_t *s, const duet_coll_args_t *a, int cand, cudaStream_t cs,
                                    duet_cuda_trial_t **trial, const char *fn)
{
    *trial = NULL;
    duet_cuda_trial_t *t = trial_of(s, a, 1);
    if (t && t->n > 0 && cand < t->cand[t->n - 1]) t->n = 0; /* the tuner began again (its entry was evicted) */
    if (!t || t->n >= PAIRS) return DUET_OK; /* not timed: on every rank alike */
    cudaError_t err = cudaSuccess;
    for (int e = 0; e < 2 && err == cudaSuccess; e++)
        if (!t->ev[t->n][e] && (err = cudaEventCreate(&t->ev[t->n][e])) != cudaSuccess) t->ev[t->n][e] = NULL;
    if (err == cudaSuccess) err = cudaEventRecord(t->ev[t->n][0], cs);
    if (err != cudaSuccess) return DUET_CUDA_FAIL_RT(err, "%s: the learning tuner's start event", fn);
    t->cand[t->n] = cand;
    *trial = t;
    return DUET_OK;
}

duet_status_t duet_cuda_learn_end(duet_cuda_trial_t *t, cudaStream_t cs, const char *fn)
{
    cudaError_t err = cudaEventRecord(t->ev[t->n][1], cs);
    if (err != cudaSuccess) return DUET_CUDA_FAIL_RT(err, "%s: the learning tuner's end event", fn);
    t->n++;
    return DUET_OK;
}

duet_status_t duet_cuda_learn_settle(duet_comm_t c, duet_cuda_coll_state_t *s, const duet_coll_args_t *a,
                                     const char *fn)
{
    double sum[DUET_TUNE_LEARN_MAX] = {0};
    duet_cuda_trial_t *t = trial_of(s, a, 0);
    for (int i = 0; t && i < t->n; i++) {
        duet_waiter_t w;
        duet_waiter_init(&w, &c->wait_ctx, "%s", "the GPU calls the tuner timed (it learns the fastest algorithm "
                         "of a call shape, once; DUET_TUNE_LEARN=0 turns that off)", 0, 0, -1);
        cudaError_t err;
        while ((err = cudaEventQuery(t->ev[i][1])) == cudaErrorNotReady) {
            duet_status_t st = duet_waiter_turn(&w);
            if (st) return st;
        }
        float ms = 0;
        if (err == cudaSuccess) err = cudaEventElapsedTime(&ms, t->ev[i][0], t->ev[i][1]);
        if (err != cudaSuccess) return DUET_CUDA_FAIL_RT(err, "%s: the learning tuner's timing of a call", fn);
        if (t->cand[i] >= 0 && t->cand[i] < DUET_TUNE_LEARN_MAX) sum[t->cand[i]] += (double)ms * 1e3;
    }
    if (t) t->used = 0;
    duet_coll_tune_set_times(c, a, sum);
    return DUET_OK;
}

void duet_cuda_learn_release(duet_cuda_coll_state_t *s)
{
    if (!s->trials) return;
    for (int i = 0; i < DUET_CUDA_TRIALS; i++)
        for (int p = 0; p < PAIRS; p++)
            for (int e = 0; e < 2; e++)
                if (s->trials[i].ev[p][e]) cudaEventDestroy(s->trials[i].ev[p][e]);
    free(s->trials);
    s->trials = NULL;
}
