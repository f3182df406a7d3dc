/* Building schedules: a growable array of steps. */
#include <stdlib.h>
#include <string.h>
#include "coll/duet_coll.h"

void duet_sched_init(duet_sched_t *s, int rank, int nranks, size_t elem)
{
    memset(s, 0, sizeof *s);
    s->rank = rank;
    s->nranks = nranks;
    s->elem = elem;
}

void duet_sched_free(duet_sched_t *s)
{
    free(s->steps);
    s->steps = NULL;
    s->nsteps = s->cap = 0;
}

void duet_sched_drop_unused_tmp(duet_sched_t *s)
{
    for (int i = 0; i < s->nsteps && s->tmp_bytes; i++) {
        const duet_step_t *t = &s->steps[i];
        int reads = t->kind != DUET_STEP_RECV, writes = t->kind != DUET_STEP_SEND;
        if ((reads && t->src_buf == DUET_BUF_TMP) || (writes && t->dst_buf == DUET_BUF_TMP)) return;
    }
    s->tmp_bytes = 0;
}

duet_status_t duet_coll_sched_begin(const duet_coll_args_t *a, duet_sched_t *s)
{
    if (s->error) return s->error;
    size_t per = a->kind == DUET_COLL_ALLGATHER || a->kind == DUET_COLL_REDUCE_SCATTER ||
                 a->kind == DUET_COLL_ALLTOALL ? (size_t)(a->nranks > 0 ? a->nranks : 1) : 1;
    size_t bytes, chunk = duet_coll_chunk(a);
    if (__builtin_mul_overflow(a->count, a->elem, &bytes) || __builtin_mul_overflow(bytes, per, &bytes))
        return s->error = duet_error_set(DUET_ERR_INVALID_ARG, "schedule: %zu elements of %zu bytes (x %zu ranks) "
                                         "overflow", a->count, a->elem, per);
    if (bytes > DUET_MAX_BUFFER_BYTES)
        return s->error = duet_error_set(DUET_ERR_INVALID_ARG, "schedule: a %zu-byte buffer is larger than any "
                                         "can be (DUET_MAX_BUFFER_BYTES, %zu)", bytes, (size_t)DUET_MAX_BUFFER_BYTES);
    if (bytes / chunk >= DUET_SCHED_MAX_CHUNKS)
        return s->error = duet_error_set(DUET_ERR_INVALID_ARG, "schedule: %zu bytes in messages of %zu make more "
                                         "than %zu chunks, the most one call may have (raise DUET_COLL_CHUNK)",
                                         bytes, chunk, DUET_SCHED_MAX_CHUNKS);
    return DUET_OK;
}

static int push(duet_sched_t *s, const duet_step_t *st)
{
    if (s->error || st->bytes == 0) return -1;
    if (s->nsteps == s->cap) {
        if (s->nsteps >= DUET_SCHED_MAX_STEPS) { /* step indices (and deps) are int32 */
            s->error = DUET_FAIL(DUET_ERR_INVALID_ARG, COLL, "schedule: more than %d steps", DUET_SCHED_MAX_STEPS);
            return -1;
        }
        size_t want = s->cap ? 2 * (size_t)s->cap : 64;
        int cap = want > (size_t)DUET_SCHED_MAX_STEPS ? DUET_SCHED_MAX_STEPS : (int)want;
        duet_step_t *p = realloc(s->steps, sizeof *p * (size_t)cap);
        if (!p) {
            s->error = DUET_FAIL(DUET_ERR_NO_MEMORY, COLL, "schedule: out of host memory (%d steps)", s->nsteps);
            return -1;
        }
        s->steps = p;
        s->cap = cap;
    }
    s->steps[s->nsteps] = *st;
    s->steps[s->nsteps].call = s->call;
    return s->nsteps++;
}

int duet_sched_copy(duet_sched_t *s, int src_buf, size_t src_off, int dst_buf, size_t dst_off, size_t bytes,
                    int dep)
{
    if (src_buf == dst_buf && src_off == dst_off) return dep; /* in place: nothing to do */
    duet_step_t st = {DUET_STEP_COPY, (uint8_t)src_buf, (uint8_t)dst_buf, 0, -1, dep, 0, src_off, dst_off, bytes};
    return push(s, &st);
}

int duet_sched_send(duet_sched_t *s, int peer, int src_buf, size_t src_off, size_t bytes, int dep)
{
    duet_step_t st = {DUET_STEP_SEND, (uint8_t)src_buf, 0, 0, peer, dep, 0, src_off, 0, bytes};
    return push(s, &st);
}

int duet_sched_recv(duet_sched_t *s, int peer, int dst_buf, size_t dst_off, size_t bytes, int dep)
{
    duet_step_t st = {DUET_STEP_RECV, 0, (uint8_t)dst_buf, 0, peer, dep, 0, 0, dst_off, bytes};
    return push(s, &st);
}

int duet_sched_reduce(duet_sched_t *s, int src_buf, size_t src_off, int dst_buf, size_t dst_off, size_t bytes,
                      int dep)
{
    duet_step_t st = {DUET_STEP_REDUCE, (uint8_t)src_buf, (uint8_t)dst_buf, 0, -1, dep, 0, src_off, dst_off, bytes};
    return push(s, &st);
}

duet_status_t duet_sched_append(duet_sched_t *s, const duet_sched_t *more, int call)
{
    if (more->error) return s->error = more->error;
    int base = s->nsteps;
    uint8_t saved = s->call;
    s->call = (uint8_t)call;
    for (int i = 0; i < more->nsteps && !s->error; i++) {
        duet_step_t st = more->steps[i];
        if (st.dep >= 0) st.dep += base;
        push(s, &st);
    }
    s->call = saved;
    return s->error; /* each call keeps its own scratch (duet_coll_call_t) */
}

int duet_sched_recv_reduce(duet_sched_t *s, int peer, int src_buf, size_t src_off, int dst_buf, size_t dst_off,
                           size_t bytes, int dep)
{
    duet_step_t st = {DUET_STEP_RECV_REDUCE, (uint8_t)src_buf, (uint8_t)dst_buf, 0, peer, dep, 0,
                      src_off, dst_off, bytes};
    return push(s, &st);
}
