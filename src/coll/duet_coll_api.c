/*
 * The collective calls: check the arguments, pick an algorithm, build this rank's schedule,
 * run it.
 *
 * fp16 and bf16 are reduced in fp32: the input is widened into a scratch buffer, the
 * collective runs on fp32, and the result is rounded once into the caller's buffer.
 * DUET_AVG runs as a sum and divides at the end.
 */
#include <stdlib.h>
#include <string.h>
#include "coll/duet_coll.h"
#include "coll/duet_coll_tune.h"

static const char *kind_names[DUET_COLL_KIND_COUNT] = {"allreduce", "broadcast", "reduce", "allgather",
                                                       "reducescatter", "alltoall"};

const char *duet_coll_kind_name(duet_coll_kind_t kind) { return kind_names[kind]; }

/* Elements of the send and receive buffers, for count as the caller passed it. */
static void buffer_counts(duet_coll_kind_t kind, size_t count, int n, size_t *send, size_t *recv)
{
    *send = *recv = count;
    if (kind == DUET_COLL_ALLGATHER) *recv = count * (size_t)n;
    if (kind == DUET_COLL_REDUCE_SCATTER) *send = count * (size_t)n;
    if (kind == DUET_COLL_ALLTOALL) *send = *recv = count * (size_t)n;
}

static int reduces(duet_coll_kind_t kind)
{
    return kind == DUET_COLL_ALLREDUCE || kind == DUET_COLL_REDUCE || kind == DUET_COLL_REDUCE_SCATTER;
}

static duet_status_t check_args(duet_comm_t c, duet_coll_kind_t kind, const void *sendbuf, void *recvbuf,
                                size_t count, duet_datatype_t dt, duet_op_t op, int root,
                                duet_stream_t stream, const char *fn)
{
    duet_status_t st = duet_comm_check(c, fn);
    if (st) return st;
    if (duet_datatype_size(dt) == 0)
        return duet_error_set(DUET_ERR_INVALID_ARG, "%s: datatype %d is not a duet_datatype_t", fn, (int)dt);
    if (reduces(kind) && ((int)op < 0 || op >= DUET_OP_COUNT))
        return duet_error_set(DUET_ERR_INVALID_ARG, "%s: op %d is not a duet_op_t", fn, (int)op);
    if ((kind == DUET_COLL_BROADCAST || kind == DUET_COLL_REDUCE) && (root < 0 || root >= c->size))
        return duet_error_set(DUET_ERR_INVALID_ARG, "%s: root %d is out of range [0, %d)", fn, root, c->size);
    if (stream)
        return duet_error_set(DUET_ERR_UNSUPPORTED, "%s: a CUDA stream was given, but this build has only "
                              "the CPU backend (pass NULL for host buffers)", fn);
    size_t sc, rc, bytes;
    buffer_counts(kind, count, c->size, &sc, &rc);
    if (__builtin_mul_overflow(count, (size_t)c->size, &bytes) ||
        __builtin_mul_overflow(count * (size_t)c->size, duet_datatype_size(dt), &bytes))
        return duet_error_set(DUET_ERR_INVALID_ARG, "%s: %zu elements overflow", fn, count);
    int needs_send = kind != DUET_COLL_BROADCAST || c->rank == root;
    int needs_recv = kind != DUET_COLL_REDUCE || c->rank == root;
    if (count && ((needs_send && !sendbuf) || (needs_recv && !recvbuf)))
        return duet_error_set(DUET_ERR_INVALID_ARG, "%s: %s is NULL", fn, needs_send && !sendbuf ? "sendbuf" : "recvbuf");
    return DUET_OK;
}

/* Runs `kind` on buffers of the compute type. */
static duet_status_t run(duet_comm_t c, duet_coll_kind_t kind, const void *sendbuf, void *recvbuf, size_t count,
                         duet_datatype_t cdt, duet_op_t op, int root, const char *fn)
{
    size_t block = count * duet_datatype_size(cdt);
    int in_place = kind == DUET_COLL_ALLGATHER        ? sendbuf == (char *)recvbuf + (size_t)c->rank * block
                 : kind == DUET_COLL_REDUCE_SCATTER ? recvbuf == (const char *)sendbuf + (size_t)c->rank * block
                                                    : sendbuf == recvbuf;
    duet_coll_args_t a = {kind, c->rank, c->size, root, count, duet_datatype_size(cdt), c->chan->chunk, in_place};
    const duet_coll_algo_t *algo;
    duet_sched_t s;
    duet_status_t st = duet_coll_tune_pick(c, &a, cdt, &algo, &s);
    if (st) return st;
    c->coll_calls++;
    duet_coll_call_t call = {{(char *)(uintptr_t)sendbuf, recvbuf, NULL}, cdt, op == DUET_AVG ? DUET_SUM : op,
                             a.elem};
    if (s.tmp_bytes && !(call.buf[DUET_BUF_TMP] = malloc(s.tmp_bytes)))
        st = DUET_FAIL(DUET_ERR_NO_MEMORY, COLL, "%s: out of host memory for %zu bytes of scratch", fn, s.tmp_bytes);
    if (st == DUET_OK) st = duet_coll_execute(c, &s, &call, fn);
    free(call.buf[DUET_BUF_TMP]);
    duet_sched_free(&s);
    return st;
}

static duet_status_t collective(duet_comm_t c, duet_coll_kind_t kind, const void *sendbuf, void *recvbuf,
                                size_t count, duet_datatype_t dt, duet_op_t op, int root, duet_stream_t stream,
                                const char *fn)
{
    duet_status_t st = check_args(c, kind, sendbuf, recvbuf, count, dt, op, root, stream, fn);
    if (st) return st;
    if (!reduces(kind)) op = DUET_SUM;
    size_t sc, rc;
    buffer_counts(kind, count, c->size, &sc, &rc);
    int writes_recv = kind != DUET_COLL_REDUCE || c->rank == root;
    int half = dt == DUET_FLOAT16 || dt == DUET_BFLOAT16;
    if (!half || !reduces(kind)) {
        st = run(c, kind, sendbuf, recvbuf, count, dt, op, root, fn);
        if (st == DUET_OK && op == DUET_AVG && writes_recv) duet_reduce_finish_avg(dt, recvbuf, rc, c->size);
        return st ? duet_error_wrap(st, fn) : DUET_OK;
    }
    /* fp16 / bf16: widen, reduce in fp32, round once */
    float *wide_send = malloc(sizeof(float) * (sc ? sc : 1)), *wide_recv = malloc(sizeof(float) * (rc ? rc : 1));
    if (!wide_send || !wide_recv) {
        free(wide_send);
        free(wide_recv);
        return DUET_FAIL(DUET_ERR_NO_MEMORY, COLL, "%s: out of host memory for the fp32 copy", fn);
    }
    if (sc) duet_reduce_to_f32(dt, DUET_SUM, wide_send, sendbuf, sc, 1);
    st = run(c, kind, wide_send, wide_recv, count, DUET_FLOAT32, op, root, fn);
    if (st == DUET_OK && writes_recv && rc) {
        if (op == DUET_AVG) duet_reduce_finish_avg_f32(wide_recv, rc, c->size);
        duet_f32_to_dtype(dt, recvbuf, wide_recv, rc);
    }
    free(wide_send);
    free(wide_recv);
    return st ? duet_error_wrap(st, fn) : DUET_OK;
}

duet_status_t duet_allreduce(const void *sendbuf, void *recvbuf, size_t count, duet_datatype_t dt, duet_op_t op,
                             duet_comm_t comm, duet_stream_t stream)
{
    return collective(comm, DUET_COLL_ALLREDUCE, sendbuf, recvbuf, count, dt, op, 0, stream, "duet_allreduce");
}

duet_status_t duet_broadcast(const void *sendbuf, void *recvbuf, size_t count, duet_datatype_t dt, int root,
                             duet_comm_t comm, duet_stream_t stream)
{
    return collective(comm, DUET_COLL_BROADCAST, sendbuf, recvbuf, count, dt, DUET_SUM, root, stream,
                      "duet_broadcast");
}

duet_status_t duet_reduce(const void *sendbuf, void *recvbuf, size_t count, duet_datatype_t dt, duet_op_t op,
                          int root, duet_comm_t comm, duet_stream_t stream)
{
    return collective(comm, DUET_COLL_REDUCE, sendbuf, recvbuf, count, dt, op, root, stream, "duet_reduce");
}

duet_status_t duet_allgather(const void *sendbuf, void *recvbuf, size_t sendcount, duet_datatype_t dt,
                             duet_comm_t comm, duet_stream_t stream)
{
    return collective(comm, DUET_COLL_ALLGATHER, sendbuf, recvbuf, sendcount, dt, DUET_SUM, 0, stream,
                      "duet_allgather");
}

duet_status_t duet_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount, duet_datatype_t dt,
                                  duet_op_t op, duet_comm_t comm, duet_stream_t stream)
{
    return collective(comm, DUET_COLL_REDUCE_SCATTER, sendbuf, recvbuf, recvcount, dt, op, 0, stream,
                      "duet_reduce_scatter");
}

duet_status_t duet_alltoall(const void *sendbuf, void *recvbuf, size_t count, duet_datatype_t dt,
                            duet_comm_t comm, duet_stream_t stream)
{
    return collective(comm, DUET_COLL_ALLTOALL, sendbuf, recvbuf, count, dt, DUET_SUM, 0, stream,
                      "duet_alltoall");
}
