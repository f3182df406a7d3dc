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
#include "coll/duet_coll_lane.h"
#include "coll/duet_coll_sig.h"
#include "coll/duet_coll_tune.h"
#include "coll/duet_coll_executor.h"

static void op_release(duet_coll_op_t *o);

static const char *kind_names[DUET_COLL_KIND_COUNT] = {"allreduce", "broadcast", "reduce", "allgather",
                                                       "reducescatter", "alltoall", "send", "recv"};

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

/* The buffers this rank must be given for a call with count > 0: send (all but a receive and
 * a broadcast's non-root ranks) and receive (all but a send and a reduce's non-root ranks). */
static int needs_send(duet_coll_kind_t kind, int rank, int root)
{
    return kind != DUET_COLL_RECV && (kind != DUET_COLL_BROADCAST || rank == root);
}
static int needs_recv(duet_coll_kind_t kind, int rank, int root)
{
    return kind != DUET_COLL_SEND && (kind != DUET_COLL_REDUCE || rank == root);
}

/* gpu: the call runs on the CUDA backend, where a send or receive may name this rank itself
 * (inside a group: a copy on the stream, src/cuda/duet_cuda_group.c). */
static duet_status_t check_args(duet_comm_t c, duet_coll_kind_t kind, const void *sendbuf, void *recvbuf,
                                size_t count, duet_datatype_t dt, duet_op_t op, int root,
                                duet_stream_t stream, int gpu, const char *fn)
{
    duet_status_t st = duet_comm_check_usable(c, fn);
    if (st) return st;
    if (c->async_failure && (st = c->async_failure(c, fn))) return st; /* a GPU kernel's finding */
    size_t es = duet_dtype_size_(dt);
    if (es == 0)
        return duet_error_set(DUET_ERR_INVALID_ARG, "%s: datatype %d is not a duet_datatype_t", fn, (int)dt);
    if (reduces(kind) && ((int)op < 0 || op >= DUET_OP_COUNT))
        return duet_error_set(DUET_ERR_INVALID_ARG, "%s: op %d is not a duet_op_t", fn, (int)op);
    if ((kind == DUET_COLL_BROADCAST || kind == DUET_COLL_REDUCE) && (root < 0 || root >= c->size))
        return duet_error_set(DUET_ERR_INVALID_ARG, "%s: root %d is out of range [0, %d)", fn, root, c->size);
    if ((kind == DUET_COLL_SEND || kind == DUET_COLL_RECV) && (root < 0 || root >= c->size || (root == c->rank && !gpu)))
        return duet_error_set(DUET_ERR_INVALID_ARG, "%s: peer %d is not another rank of [0, %d)%s", fn, root, c->size,
                              root == c->rank ? " (a send or receive to itself: on GPU buffers, inside a group)" : "");
    /* GPU work is routed before it comes here (duet_coll_gpu_accepts) */
    if (stream && !c->heap->dev)
        return duet_error_set(DUET_ERR_UNSUPPORTED, "%s: a CUDA stream was given, but this communicator has only "
                              "the CPU backend (pass NULL for host buffers)", fn);
    size_t sc, rc, bytes;
    buffer_counts(kind, count, c->size, &sc, &rc);
    if (__builtin_mul_overflow(count, (size_t)c->size, &bytes) ||
        __builtin_mul_overflow(count * (size_t)c->size, es, &bytes))
        return duet_error_set(DUET_ERR_INVALID_ARG, "%s: %zu elements overflow", fn, count);
    /* no buffer can be larger than an address space: refused at once, before any schedule */
    bytes = (sc > rc ? sc : rc) * es;
    if (bytes > DUET_MAX_BUFFER_BYTES)
        return duet_error_set(DUET_ERR_INVALID_ARG, "%s: %zu elements of %zu bytes make a %zu-byte buffer, larger "
                              "than any buffer can be (DUET_MAX_BUFFER_BYTES, %zu: the address space)", fn, count,
                              es, bytes, (size_t)DUET_MAX_BUFFER_BYTES);
    int send_needed = needs_send(kind, c->rank, root), recv_needed = needs_recv(kind, c->rank, root);
    if (count && ((send_needed && !sendbuf) || (recv_needed && !recvbuf)))
        return duet_error_set(DUET_ERR_INVALID_ARG, "%s: %s is NULL", fn,
                              send_needed && !sendbuf ? "sendbuf" : "recvbuf");
    return DUET_OK;
}

/* Whether a call works in place, by the convention of its collective (duet.h); `block` is the
 * bytes of one rank's block. */
static int is_in_place(duet_coll_kind_t kind, const void *send, const void *recv, int rank, size_t block)
{
    if (block == 0) return 0; /* nothing moves */
    if (kind == DUET_COLL_ALLGATHER) return send == (const char *)recv + (size_t)rank * block;
    if (kind == DUET_COLL_REDUCE_SCATTER) return recv == (const char *)send + (size_t)rank * block;
    return send == recv;
}

/* The tuner's exchanges for call o (duet_coll_tune_pick_agreed), under the signature o will
 * have: the number it is given next and its arguments. */
static duet_status_t exchange_for_call(void *ctx, const void *mine, void *all, size_t count, duet_datatype_t dt,
                                       duet_op_t op)
{
    const duet_coll_op_t *o = ctx;
    duet_comm_t c = o->comm;
    duet_coll_sig_t as = {c->coll_calls + 1, {c->coll_calls + 1, o->count, duet_coll_sig_hash(o->kind, o->count, o->dt,
                          o->op, o->root), (int32_t)o->kind, (int32_t)o->dt, (int32_t)o->op, o->root, 0}};
    return duet_coll_allreduce_as(c, mine, all, count, dt, op, &as, o->fn);
}

/* Prepares an operation: checks, the algorithm and its schedule, widening of fp16/bf16,
 * scratch. On error nothing is left allocated. A small allreduce that the tuner gives to
 * one-shot is marked for the lane instead (o->lane; nothing else is prepared) when the
 * caller allows it (o->may_lane: not inside a group, whose calls run as one schedule). */
static duet_status_t op_prepare(duet_coll_op_t *o)
{
    duet_comm_t c = o->comm;
    duet_status_t st = check_args(c, o->kind, o->sendbuf, o->recvbuf, o->count, o->dt, o->op, o->root, o->stream, 0, o->fn);
    if (st) return st;
    if (!reduces(o->kind)) o->op = DUET_SUM;
    buffer_counts(o->kind, o->count, c->size, &o->send_count, &o->recv_count);
    o->writes_recv = o->kind != DUET_COLL_REDUCE || c->rank == o->root;
    /* fp16 / bf16 reductions run on an fp32 copy: widen, reduce in fp32, round once (op_finish) */
    int wide = (o->dt == DUET_FLOAT16 || o->dt == DUET_BFLOAT16) && reduces(o->kind);
    duet_datatype_t cdt = wide ? DUET_FLOAT32 : o->dt;
    size_t es = duet_dtype_size_(cdt), block = o->count * es;
    const void *send = o->sendbuf;
    void *recv = o->recvbuf;
    int in_place = !wide && is_in_place(o->kind, send, recv, c->rank, block); /* fp32 copies are separate */
    duet_coll_args_t a = {o->kind, c->rank, c->size, o->root, o->count, es, c->chan->chunk, in_place, 0, NULL, 0, 0};
    /* this rank's buffers in the heap: the tuner agrees with the others what it costs */
    a.byref = !wide && duet_coll_chan_heap_range(c, c->chan, send, o->send_count * es) &&
              duet_coll_chan_heap_range(c, c->chan, recv, o->writes_recv ? o->recv_count * es : 0);
    int p2p = o->kind == DUET_COLL_SEND || o->kind == DUET_COLL_RECV;
    if (p2p) {
        duet_sched_init(&o->sched, c->rank, c->size, es);
        st = duet_coll_p2p(&a, &o->sched);
        o->plan = &o->sched;
    } else {
        const duet_coll_algo_t *algo;
        if (o->inner) /* an exchange for another call: the decisions are that call's to write */
            st = duet_coll_tune_pick_inner(c, &a, cdt, &algo, &o->sched, &o->plan);
        else /* exchanges (placement, learning) only outside a group */
            st = duet_coll_tune_pick_agreed(c, &a, cdt, o->may_lane ? exchange_for_call : NULL, o, &algo, &o->sched,
                                            &o->plan);
        o->lane = st == DUET_OK && o->may_lane && o->kind == DUET_COLL_ALLREDUCE && o->count > 0 &&
                  duet_coll_lane_fits(o->count, o->dt) && algo->build == duet_coll_oneshot_allreduce;
        duet_coll_repeat_t *r = st == DUET_OK ? duet_coll_tune_repeat(c) : NULL;
        if (r && o->lane) /* remembered for the fast path (duet_allreduce) */
            r->lane = (duet_coll_lane_hit_t){o->count, (int)o->dt, send == recv, 1};
        else if (r && o->kind == DUET_COLL_ALLREDUCE)
            r->lane.valid = 0;
        if (o->lane) return DUET_OK;
    }
    if (st == DUET_OK && wide) {
        o->wide_send = malloc(sizeof(float) * (o->send_count ? o->send_count : 1));
        o->wide_recv = malloc(sizeof(float) * (o->recv_count ? o->recv_count : 1));
        if (!o->wide_send || !o->wide_recv)
            st = DUET_FAIL(DUET_ERR_NO_MEMORY, COLL, "%s: out of host memory for the fp32 copy", o->fn);
        else if (o->send_count && send)
            duet_reduce_to_f32(o->dt, DUET_SUM, o->wide_send, send, o->send_count, 1);
        send = o->wide_send;
        recv = o->wide_recv;
    }
    /* the signature (duet_coll_sig.h); its number is given when the call runs (number_call) */
    duet_coll_sig_args_t sig = {0, o->count, 0, (int32_t)o->kind, (int32_t)o->dt, (int32_t)o->op, o->root, 0};
    sig.hash = p2p ? duet_coll_sig_hash(DUET_COLL_SEND, o->count * duet_dtype_size_(o->dt), DUET_UINT8, DUET_SUM, 0)
                   : duet_coll_sig_hash(o->kind, o->count, o->dt, o->op, o->root);
    o->call = (duet_coll_call_t){{(char *)(uintptr_t)send, recv, NULL}, cdt, o->op == DUET_AVG ? DUET_SUM : o->op, es,
                                 p2p ? c->p2p : c->chan, {0, 0, 0}, 0, (uint8_t)p2p, 0, sig};
    if (st == DUET_OK) { /* the caller's input is read-only unless it is also the output */
        o->call.stable[DUET_BUF_SEND] = !in_place;
        o->call.stable[DUET_BUF_RECV] = o->plan->recv_stable;
        o->call.stream = o->recv_count * es >= DUET_COPY_STREAM_MIN;
    }
    if (st == DUET_OK && o->plan->tmp_bytes && !(o->call.buf[DUET_BUF_TMP] = malloc(o->plan->tmp_bytes)))
        st = DUET_FAIL(DUET_ERR_NO_MEMORY, COLL, "%s: out of host memory for %zu bytes of scratch", o->fn,
                       o->plan->tmp_bytes);
    if (st) op_release(o);
    return st;
}

/* After the schedule ran: the average's division, rounding back to fp16/bf16. */
/* After a call ran, on either path: AVG divides the result, an fp32 copy is rounded into the
 * receive buffer (count: the elements the call wrote, 0 when it wrote none). */
static void finish_result(duet_op_t op, duet_datatype_t dt, void *recvbuf, float *wide, size_t count, int nranks)
{
    if (!count) return;
    if (op == DUET_AVG) {
        if (wide) duet_reduce_finish_avg_f32(wide, count, nranks);
        else duet_reduce_finish_avg(dt, recvbuf, count, nranks);
    }
    if (wide) duet_f32_to_dtype(dt, recvbuf, wide, count);
}

static void op_finish(duet_coll_op_t *o)
{
    finish_result(o->op, o->dt, o->recvbuf, o->wide_recv, o->writes_recv ? o->recv_count : 0, o->comm->size);
}

static void op_release(duet_coll_op_t *o)
{
    free(o->wide_send);
    free(o->wide_recv);
    free(o->call.buf[DUET_BUF_TMP]);
    duet_sched_free(&o->sched);
    o->wide_send = o->wide_recv = NULL;
    o->call.buf[DUET_BUF_TMP] = NULL;
}

/* Numbers a prepared call as it is about to run (its signature's number, duet_coll_sig.h): a
 * collective is the communicator's next call, part of the run that starts at `first` (0: a run
 * of its own; the executor publishes it, after its first sends); a send or receive the next on
 * its link. */
static void number_call(duet_coll_op_t *o, duet_coll_call_t *call, uint64_t first)
{
    duet_comm_t c = o->comm;
    if (call->p2p) {
        duet_coll_chan_t *p = c->p2p;
        call->call_no = o->kind == DUET_COLL_SEND ? ++p->p2p_sends[o->root] : ++p->p2p_recvs[o->root];
        return;
    }
    call->call_no = ++c->coll_calls;
    call->sig.first = first ? first : call->call_no;
}

duet_status_t duet_coll_allreduce_as(duet_comm_t c, const void *sendbuf, void *recvbuf, size_t count,
                                     duet_datatype_t dt, duet_op_t op, const duet_coll_sig_t *as, const char *fn)
{
    duet_coll_op_t o = {.comm = c, .kind = DUET_COLL_ALLREDUCE, .sendbuf = sendbuf, .recvbuf = recvbuf,
                        .count = count, .dt = dt, .op = op, .fn = fn, .may_lane = 1, .inner = 1};
    duet_status_t st = op_prepare(&o);
    if (st) return st;
    if (o.lane) {
        st = duet_coll_lane_allreduce_as(c, sendbuf, recvbuf, count, dt, op, as, fn);
    } else { /* numbered and published as the call it serves */
        o.call.call_no = as->call;
        o.call.sig = as->a;
        if ((st = duet_coll_execute(c, o.plan, &o.call, 1, fn)) == DUET_OK) op_finish(&o);
    }
    op_release(&o);
    return st;
}

/* The error of call fn on c: a mismatch's report when c was revoked for one, else a breadcrumb. */
static duet_status_t failed(duet_comm_t c, duet_status_t st, const char *fn)
{
    if (!duet_coll_sig_explain(c, st, fn)) duet_error_wrap(st, fn);
    return st;
}

/* A checked operation as a device executor's call (where: its accepts() answer). */
static duet_coll_exec_call_t exec_call(const duet_coll_op_t *o, int where)
{
    duet_comm_t c = o->comm;
    size_t sc, rc;
    buffer_counts(o->kind, o->count, c->size, &sc, &rc);
    return (duet_coll_exec_call_t){o->kind, o->sendbuf, o->recvbuf, o->count, sc, rc, o->dt,
                                   reduces(o->kind) ? o->op : DUET_SUM, o->root,
                                   is_in_place(o->kind, o->sendbuf, o->recvbuf, c->rank,
                                               o->count * duet_dtype_size_(o->dt)),
                                   where, o->stream, o->fn, 0, 0, 0};
}

/* The repeat path. A loop of like calls (a small broadcast, reduce, allgather, ... in a
 * training step) prepares the same call every time: checks, the tuner's cached pick, the
 * signature's hash. The last call that took the full path and ran on the tuner's cached
 * schedule, with no scratch and no fp32 copy, is remembered (remember); a call of its very
 * shape — kind, count, datatype, op, root, in place or not — on the same communicator, with
 * its buffers given, no stream, no group open and no TUNE log, runs that schedule at once
 * (again_fits, run_again): every check the full path makes is one this shape has passed or
 * one again_fits makes itself, and any other call takes the full path, which reports. */
static void remember(const duet_coll_op_t *o)
{
    duet_comm_t c = o->comm;
    duet_coll_again_t *g = duet_coll_tune_again(c);
    if (!g || o->call.p2p || o->wide_send || o->plan == &o->sched || o->plan->tmp_bytes) {
        if (g) g->valid = 0;
        return;
    }
    *g = (duet_coll_again_t){1, o->kind, o->dt, o->op, o->root, !o->call.stable[DUET_BUF_SEND],
                             needs_send(o->kind, c->rank, o->root), needs_recv(o->kind, c->rank, o->root),
                             o->count, o->count * o->call.elem, o->writes_recv ? o->recv_count : 0, o->plan,
                             o->call};
}

static int again_fits(duet_comm_t c, duet_coll_kind_t kind, const void *sendbuf, const void *recvbuf, size_t count,
                      duet_datatype_t dt, duet_op_t op, int root, duet_stream_t stream, const char *fn)
{
    if (!duet_comm_is_live(c) || c->magic != DUET_COMM_MAGIC) return 0;
    const duet_coll_again_t *g = duet_coll_tune_again(c);
    return g && g->valid && g->kind == kind && g->count == count && g->dt == dt && g->root == root &&
           g->op == (reduces(kind) ? op : DUET_SUM) && !stream &&
           (!count || ((sendbuf || !g->needs_send) && (recvbuf || !g->needs_recv))) &&
           is_in_place(kind, sendbuf, recvbuf, c->rank, g->block) == g->in_place &&
           !atomic_load_explicit(&duet_comm_ft(c)->abort, memory_order_relaxed) && duet_coll_group_depth() == 0 &&
           !duet_log_enabled(DUET_LOG_INFO, DUET_SUBSYS_TUNE) &&
           (!c->async_failure || c->async_failure(c, fn) == DUET_OK);
}

static duet_status_t run_again(duet_comm_t c, const void *sendbuf, void *recvbuf, const char *fn)
{
    const duet_coll_again_t *g = duet_coll_tune_again(c);
    duet_coll_call_t call = g->call;
    call.buf[DUET_BUF_SEND] = (char *)(uintptr_t)sendbuf;
    call.buf[DUET_BUF_RECV] = recvbuf;
    call.call_no = ++c->coll_calls;
    call.sig.first = call.call_no;
    duet_status_t st = duet_coll_execute(c, g->plan, &call, 1, fn);
    if (st) return failed(c, st, fn);
    finish_result(g->op, g->dt, recvbuf, NULL, g->recv_count, c->size); /* never an fp32 copy here */
    return duet_error_ok(DUET_OK);
}

/* One operation, by its executor: on GPU buffers or a stream (the device executor's accepts()
 * said so, so there is one) checked here by the GPU's rules, else the host executor's. */
static duet_status_t submit(duet_coll_op_t *o, int where)
{
    duet_comm_t c = o->comm;
    if (!where) { /* as the caller made it: the host executor checks it (c too) */
        duet_coll_exec_call_t k = {.kind = o->kind, .send = o->sendbuf, .recv = o->recvbuf, .count = o->count,
                                   .dt = o->dt, .op = o->op, .root = o->root, .stream = o->stream, .fn = o->fn};
        return duet_coll_host_executor.run(c, &k);
    }
    duet_status_t st = check_args(c, o->kind, o->sendbuf, o->recvbuf, o->count, o->dt, o->op, o->root, o->stream,
                                  1, o->fn);
    if (st) return failed(c, st, o->fn);
    duet_coll_exec_call_t k = exec_call(o, where);
    if ((st = duet_coll_gpu_executor->run(c, &k))) return failed(c, st, o->fn); /* numbers it as the host's */
    return duet_error_ok(DUET_OK);
}

/* ---- the host executor (coll/duet_coll_executor.h) */

/* The host's operation for an executor's call, as the caller made it (nothing prepared). */
static duet_coll_op_t op_of(duet_comm_t c, const duet_coll_exec_call_t *k)
{
    return (duet_coll_op_t){.comm = c, .kind = (duet_coll_kind_t)k->kind, .sendbuf = k->send, .recvbuf = k->recv,
                            .count = k->count, .dt = k->dt, .op = k->op, .root = k->root, .stream = k->stream,
                            .fn = k->fn};
}

/* A call on host memory: now, or queued when a group is open. */
static duet_status_t host_run(duet_comm_t c, duet_coll_exec_call_t *k)
{
    duet_coll_op_t op = op_of(c, k), *o = &op;
    if (duet_coll_group_depth() > 0) { /* bad arguments are reported now, the rest at group end */
        duet_status_t st = check_args(c, o->kind, o->sendbuf, o->recvbuf, o->count, o->dt, o->op, o->root,
                                      o->stream, 0, o->fn);
        if (st && duet_coll_sig_explain(c, st, o->fn)) return st;
        return st ? st : duet_coll_group_add(&duet_coll_host_executor, c, k);
    }
    o->may_lane = 1;
    duet_status_t st = op_prepare(o);
    if (st) return failed(c, st, o->fn);
    if (o->lane) {
        st = duet_coll_lane_allreduce(c, o->sendbuf, o->recvbuf, o->count, o->dt, o->op, o->fn);
    } else {
        remember(o);
        number_call(o, &o->call, 0);
        uint64_t t0 = duet_time_ns();
        if ((st = duet_coll_execute(c, o->plan, &o->call, 1, o->fn)) == DUET_OK) {
            duet_coll_tune_record(c, (double)(duet_time_ns() - t0) * 1e-3); /* the learning tuner's */
            op_finish(o);
        }
    }
    op_release(o);
    /* success leaves no error: not even a candidate the tuner tried and rejected */
    return st ? failed(c, st, o->fn) : duet_error_ok(DUET_OK);
}

/* A group's host calls: per communicator (communicators in the order they first appeared),
 * every send and receive together with the group's first collective as one schedule — their
 * steps interleave in the executor, so exchanges that would deadlock one by one complete,
 * wherever the sends and receives sit among the collectives — then the remaining collectives
 * one at a time, in order, so a later collective sees the results of an earlier one. Sends and
 * receives travel on their own channels (comm->p2p): they match by peer and order among
 * themselves, as NCCL's do. */
static duet_status_t host_group_run(const duet_coll_group_call_t *calls, int n)
{
    duet_coll_op_t *ops = calloc((size_t)n, sizeof *ops);
    if (!ops) return DUET_FAIL(DUET_ERR_NO_MEMORY, COLL, "duet_group_end: out of host memory");
    for (int i = 0; i < n; i++) ops[i] = op_of(calls[i].comm, &calls[i].call);
    duet_status_t st = DUET_OK;
    /* stable partition by communicator: ops of the first communicator, then the next ... */
    for (int i = 0; i < n && st == DUET_OK;) {
        duet_comm_t c = ops[i].comm;
        int j = i;
        for (int k = i; k < n; k++) {
            if (ops[k].comm != c) continue;
            duet_coll_op_t t = ops[k];
            for (int m = k; m > j; m--) ops[m] = ops[m - 1];
            ops[j++] = t;
        }
        /* within the communicator: sends and receives first (stable), then the collectives */
        int first_coll = i;
        for (int k = i; k < j; k++) {
            if (ops[k].kind != DUET_COLL_SEND && ops[k].kind != DUET_COLL_RECV) continue;
            duet_coll_op_t t = ops[k];
            for (int m = k; m > first_coll; m--) ops[m] = ops[m - 1];
            ops[first_coll++] = t;
        }
        int end = first_coll < j ? first_coll + 1 : j; /* ... fused with the first collective */
        st = duet_coll_run_fused(ops + i, end - i);
        for (int k = end; k < j && st == DUET_OK; k++) st = duet_coll_run_fused(ops + k, 1);
        i = j;
    }
    free(ops);
    return st;
}

static int host_accepts(duet_comm_t c, const void *sendbuf, const void *recvbuf, duet_stream_t stream)
{
    (void)c, (void)sendbuf, (void)recvbuf, (void)stream;
    return DUET_COLL_ROUTED; /* every call no device executor takes */
}

const duet_coll_executor_t duet_coll_host_executor = {
    sizeof(duet_coll_executor_t), "host", host_accepts, host_run, host_group_run, duet_coll_model_get,
};

/* Runs prepared-to-be operations of one communicator as a single schedule. */
duet_status_t duet_coll_run_fused(duet_coll_op_t *ops, int n)
{
    if (n > 256)
        return DUET_FAIL(DUET_ERR_UNSUPPORTED, COLL, "duet_group_end: %d operations on one communicator in a "
                         "group; at most 256 are supported", n);
    duet_status_t st = DUET_OK;
    int prepared = 0;
    duet_coll_call_t *calls = malloc(sizeof *calls * (size_t)(n ? n : 1));
    duet_sched_t all;
    duet_sched_init(&all, ops[0].comm->rank, ops[0].comm->size, 1);
    if (!calls) st = DUET_FAIL(DUET_ERR_NO_MEMORY, COLL, "duet_group_end: out of host memory");
    for (; st == DUET_OK && prepared < n; prepared++) {
        if ((st = op_prepare(&ops[prepared]))) {
            failed(ops[prepared].comm, st, ops[prepared].fn);
            break;
        }
        calls[prepared] = ops[prepared].call;
        st = duet_sched_append(&all, ops[prepared].plan, prepared); /* copied before the next pick */
    }
    if (st == DUET_OK) {
        uint64_t first = ops[0].comm->coll_calls + 1;
        for (int i = 0; i < n; i++) number_call(&ops[i], &calls[i], first);
        if ((st = duet_coll_execute(ops[0].comm, &all, calls, n, "a group")))
            (void)duet_coll_sig_explain(ops[0].comm, st, "duet_group_end");
        for (int i = 0; st == DUET_OK && i < n; i++) op_finish(&ops[i]);
    }
    for (int i = 0; i < prepared; i++) op_release(&ops[i]);
    duet_sched_free(&all);
    free(calls);
    return st;
}

static duet_status_t collective_(duet_comm_t c, duet_coll_kind_t kind, const void *sendbuf, void *recvbuf,
                                 size_t count, duet_datatype_t dt, duet_op_t op, int root, duet_stream_t stream,
                                 const char *fn)
{
    int where = duet_coll_gpu_accepts(c, sendbuf, recvbuf, stream);
    if (!where && again_fits(c, kind, sendbuf, recvbuf, count, dt, op, root, stream, fn))
        return run_again(c, sendbuf, recvbuf, fn);
    duet_coll_op_t o = {.comm = c, .kind = kind, .sendbuf = sendbuf, .recvbuf = recvbuf, .count = count, .dt = dt,
                        .op = op, .root = root, .stream = stream, .fn = fn};
    return submit(&o, where);
}

/* Every collective is a call in flight on its communicator (duet_comm_enter). */
static duet_status_t collective(duet_comm_t c, duet_coll_kind_t kind, const void *sendbuf, void *recvbuf,
                                size_t count, duet_datatype_t dt, duet_op_t op, int root, duet_stream_t stream,
                                const char *fn)
{
    DUET_COMM_CALL(c, fn, collective_(c, kind, sendbuf, recvbuf, count, dt, op, root, stream, fn));
}

/* The fast path of the latency lane: an allreduce of the very shape the tuner last gave to
 * the lane on this communicator (a loop of small allreduces) skips preparation — about 30 ns
 * of a call that moves one cache line. It checks all that the full path would (a bad argument
 * falls through to the full path, which reports it); with the TUNE log on, every call takes
 * the full path, which prints the tuner's line. */
static int lane_again(duet_comm_t c, const void *sendbuf, void *recvbuf, size_t count, duet_datatype_t dt,
                      duet_op_t op, duet_stream_t stream)
{
    /* (c is live: the caller entered it, duet_comm_enter) */
    const duet_coll_repeat_t *r = duet_coll_tune_repeat(c);
    return r && r->lane.valid && r->lane.count == count &&
           !atomic_load_explicit(&duet_comm_ft(c)->abort, memory_order_relaxed) &&
           r->lane.dt == (int)dt && r->lane.in_place == (sendbuf == recvbuf) &&
           sendbuf && recvbuf && !stream && (unsigned)op < DUET_OP_COUNT &&
           duet_coll_group_depth() == 0 && !duet_log_enabled(DUET_LOG_INFO, DUET_SUBSYS_TUNE) &&
           (!c->async_failure || c->async_failure(c, "duet_allreduce") == DUET_OK);
}

/* (inlined into duet_allreduce: one call more costs the latency lane 5-10 ns, measured) */
static inline __attribute__((always_inline)) duet_status_t allreduce_(const void *sendbuf, void *recvbuf,
                                                                      size_t count, duet_datatype_t dt,
                                                                      duet_op_t op, duet_comm_t comm,
                                                                      duet_stream_t stream, int entered)
{
    int where = duet_coll_gpu_accepts(comm, sendbuf, recvbuf, stream);
    if (!where && entered && lane_again(comm, sendbuf, recvbuf, count, dt, op, stream)) {
        duet_status_t st = duet_coll_lane_allreduce(comm, sendbuf, recvbuf, count, dt, op, "duet_allreduce");
        return st ? failed(comm, st, "duet_allreduce") : DUET_OK;
    }
    if (!where && again_fits(comm, DUET_COLL_ALLREDUCE, sendbuf, recvbuf, count, dt, op, 0, stream, "duet_allreduce"))
        return run_again(comm, sendbuf, recvbuf, "duet_allreduce");
    duet_coll_op_t o = {.comm = comm, .kind = DUET_COLL_ALLREDUCE, .sendbuf = sendbuf, .recvbuf = recvbuf,
                        .count = count, .dt = dt, .op = op, .stream = stream, .fn = "duet_allreduce"};
    return submit(&o, where);
}

duet_status_t duet_allreduce(const void *sendbuf, void *recvbuf, size_t count, duet_datatype_t dt, duet_op_t op,
                             duet_comm_t comm, duet_stream_t stream)
{
    int in = duet_comm_enter(comm, "duet_allreduce");
    if (in < 0) return (duet_status_t)in;
    duet_status_t st = allreduce_(sendbuf, recvbuf, count, dt, op, comm, stream, in);
    if (in) duet_inflight_leave();
    return st;
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

duet_status_t duet_send(const void *sendbuf, size_t count, duet_datatype_t dt, int peer, duet_comm_t comm,
                        duet_stream_t stream)
{
    return collective(comm, DUET_COLL_SEND, sendbuf, NULL, count, dt, DUET_SUM, peer, stream, "duet_send");
}

duet_status_t duet_recv(void *recvbuf, size_t count, duet_datatype_t dt, int peer, duet_comm_t comm,
                        duet_stream_t stream)
{
    return collective(comm, DUET_COLL_RECV, NULL, recvbuf, count, dt, DUET_SUM, peer, stream, "duet_recv");
}
