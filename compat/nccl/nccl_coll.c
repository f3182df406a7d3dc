/*
 * The collectives, send and receive: NCCL's arguments checked and mapped onto Duet's
 * (datatypes, operations, where the buffers lie), then run now or queued in the open group.
 *
 * Buffers: device memory (cudaPointerGetAttributes) goes to Duet's CUDA backend with the
 * caller's stream; host memory to the CPU backend with no stream (Duet would send a call with
 * a stream to the GPU), after waiting for the work already on the stream, which may be what
 * writes the host buffer. A call's buffers must all be of one kind.
 */
#include <stdlib.h>
#include <string.h>
#include "nccl_compat.h"
#include "duet/duet_ext.h"

/* NCCL's datatypes in NCCL's order: Duet's type, or -1 where Duet has none (fp8). */
static const int dtype_map[ncclNumTypes] = {
    DUET_INT8, DUET_UINT8, DUET_INT32, DUET_UINT32, DUET_INT64, DUET_UINT64,
    DUET_FLOAT16, DUET_FLOAT32, DUET_FLOAT64, DUET_BFLOAT16, -1, -1};
static const char *const dtype_names[ncclNumTypes] = {"ncclInt8", "ncclUint8", "ncclInt32", "ncclUint32",
                                                      "ncclInt64", "ncclUint64", "ncclFloat16", "ncclFloat32",
                                                      "ncclFloat64", "ncclBfloat16", "ncclFloat8e4m3",
                                                      "ncclFloat8e5m2"};
/* NCCL's built-in operations in NCCL's order (max before min, unlike Duet). */
static const duet_op_t op_map[ncclNumOps] = {DUET_SUM, DUET_PROD, DUET_MAX, DUET_MIN, DUET_AVG};

ncclResult_t nccl_map_datatype(ncclDataType_t dt, duet_datatype_t *out, const char *fn)
{
    if ((int)dt < 0 || (int)dt >= (int)ncclNumTypes)
        return nccl_fail(ncclInvalidArgument, "%s: datatype %d is not an ncclDataType_t", fn, (int)dt);
    if (dtype_map[dt] < 0)
        return nccl_fail(ncclInvalidArgument, "%s: %s: Duet has no 8-bit floating-point types", fn, dtype_names[dt]);
    *out = (duet_datatype_t)dtype_map[dt];
    return ncclSuccess;
}

size_t nccl_datatype_size(ncclDataType_t dt)
{
    return (int)dt >= 0 && (int)dt < (int)ncclNumTypes && dtype_map[dt] >= 0
               ? duet_datatype_size((duet_datatype_t)dtype_map[dt]) : 0;
}

static int reduces(nccl_call_kind_t k)
{
    return k == NCCL_CALL_ALLREDUCE || k == NCCL_CALL_REDUCE || k == NCCL_CALL_REDUCE_SCATTER;
}
static int rooted(nccl_call_kind_t k)
{
    return k == NCCL_CALL_BROADCAST || k == NCCL_CALL_REDUCE || k == NCCL_CALL_GATHER || k == NCCL_CALL_SCATTER;
}

ncclResult_t nccl_call_prepare(nccl_call_t *c)
{
    ncclResult_t r = nccl_comm_check(c->comm, c->fn);
    if (r) return r;
    if (c->comm->finalized) return nccl_fail(ncclInvalidUsage, "%s: comm was finalized", c->fn);
    if ((r = nccl_map_datatype(c->nccl_dt, &c->dt, c->fn))) return r;
    int n = c->comm->nranks, me = c->comm->rank;
    if (reduces(c->kind)) {
        if (nccl_op_builtin(c->nccl_op)) {
            c->op = op_map[c->nccl_op];
        } else {
            int i = (int)c->nccl_op - (int)ncclNumOps;
            if (i < 0 || i >= NCCL_COMPAT_MAX_REDOPS || !c->comm->redops[i].used)
                return nccl_fail(ncclInvalidArgument, "%s: op %d is neither a built-in operation nor one made by "
                                 "ncclRedOpCreatePreMulSum on this communicator", c->fn, (int)c->nccl_op);
            if (c->comm->redops[i].dt != c->nccl_dt)
                return nccl_fail(ncclInvalidArgument, "%s: op %d was made for %s, the call is on %s", c->fn,
                                 (int)c->nccl_op, dtype_names[c->comm->redops[i].dt], dtype_names[c->nccl_dt]);
            c->op = DUET_SUM;
        }
    }
    if (rooted(c->kind) && (c->root < 0 || c->root >= n))
        return nccl_fail(ncclInvalidArgument, "%s: root %d is out of range [0, %d)", c->fn, c->root, n);
    if ((c->kind == NCCL_CALL_SEND || c->kind == NCCL_CALL_RECV) && (c->root < 0 || c->root >= n))
        return nccl_fail(ncclInvalidArgument, "%s: peer %d is out of range [0, %d)", c->fn, c->root, n);
    /* where the buffers lie: only those this rank uses count */
    int uses_send = c->kind != NCCL_CALL_RECV && (c->kind != NCCL_CALL_SCATTER || me == c->root) &&
                    (c->kind != NCCL_CALL_BROADCAST || me == c->root);
    int uses_recv = c->kind != NCCL_CALL_SEND && (c->kind != NCCL_CALL_REDUCE || me == c->root) &&
                    (c->kind != NCCL_CALL_GATHER || me == c->root);
    int sd = uses_send && nccl_cuda_is_device_ptr(c->send), rd = uses_recv && nccl_cuda_is_device_ptr(c->recv);
    if (c->count && uses_send && uses_recv && sd != rd)
        return nccl_fail(ncclInvalidArgument, "%s: sendbuff is %s memory and recvbuff %s memory: Duet needs both on "
                         "the host or both on the device", c->fn, sd ? "device" : "host", rd ? "device" : "host");
    c->device = sd || rd;
    if (c->device && c->comm->cuda_dev < 0)
        return nccl_fail(ncclInvalidUsage, "%s: device buffers, but this communicator has no GPU heap (not every "
                         "rank has a GPU, or DUET_CUDA=off): it runs on host buffers only", c->fn);
    return ncclSuccess;
}

ncclResult_t nccl_call_submit(nccl_call_t *c)
{
    ncclResult_t r = nccl_comm_enter(c->comm, c->fn); /* inside c->comm until the call returns */
    if (r) return r;
    if ((r = nccl_call_prepare(c)) == ncclSuccess)
        r = nccl_group_depth() > 0 ? nccl_group_add_call(c) : nccl_calls_run(c, 1);
    duet_ext_inflight_leave();
    return r;
}

duet_status_t nccl_call_issue(nccl_call_t *c)
{
    duet_comm_t dc = c->comm->dc;
    duet_stream_t s = c->device ? (duet_stream_t)c->stream : NULL;
    const void *send = c->temp ? c->temp : c->send;
    switch (c->kind) {
    case NCCL_CALL_ALLREDUCE: return duet_allreduce(send, c->recv, c->count, c->dt, c->op, dc, s);
    case NCCL_CALL_BROADCAST: return duet_broadcast(send, c->recv, c->count, c->dt, c->root, dc, s);
    case NCCL_CALL_REDUCE: return duet_reduce(send, c->recv, c->count, c->dt, c->op, c->root, dc, s);
    case NCCL_CALL_ALLGATHER: return duet_allgather(send, c->recv, c->count, c->dt, dc, s);
    case NCCL_CALL_REDUCE_SCATTER: return duet_reduce_scatter(send, c->recv, c->count, c->dt, c->op, dc, s);
    case NCCL_CALL_ALLTOALL: return duet_alltoall(send, c->recv, c->count, c->dt, dc, s);
    case NCCL_CALL_SEND: return duet_send(send, c->count, c->dt, c->root, dc, s);
    case NCCL_CALL_RECV: return duet_recv(c->recv, c->count, c->dt, c->root, dc, s);
    case NCCL_CALL_GATHER:
    case NCCL_CALL_SCATTER: return nccl_gather_issue(c);
    }
    return duet_ext_error_set(DUET_ERR_INTERNAL, "%s: unknown call kind %d", c->fn, (int)c->kind);
}

/* ---- the entry points ---------------------------------------------------------------------- */
#define CALL(k, name) .kind = (k), .fn = name, .comm = comm, .nccl_dt = datatype, .stream = stream

NCCL_API ncclResult_t pncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                     ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
    nccl_call_t c = {CALL(NCCL_CALL_ALLREDUCE, "ncclAllReduce"), .send = sendbuff, .recv = recvbuff,
                     .count = count, .nccl_op = op};
    return nccl_call_submit(&c);
}
NCCL_ALIAS(ncclAllReduce)

NCCL_API ncclResult_t pncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                     int root, ncclComm_t comm, cudaStream_t stream)
{
    nccl_call_t c = {CALL(NCCL_CALL_BROADCAST, "ncclBroadcast"), .send = sendbuff, .recv = recvbuff,
                     .count = count, .root = root};
    return nccl_call_submit(&c);
}
NCCL_ALIAS(ncclBroadcast)

NCCL_API ncclResult_t pncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                                 cudaStream_t stream)
{
    nccl_call_t c = {CALL(NCCL_CALL_BROADCAST, "ncclBcast"), .send = buff, .recv = buff, .count = count,
                     .root = root};
    return nccl_call_submit(&c);
}
NCCL_ALIAS(ncclBcast)

NCCL_API ncclResult_t pncclReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                  ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream)
{
    nccl_call_t c = {CALL(NCCL_CALL_REDUCE, "ncclReduce"), .send = sendbuff, .recv = recvbuff, .count = count,
                     .nccl_op = op, .root = root};
    return nccl_call_submit(&c);
}
NCCL_ALIAS(ncclReduce)

NCCL_API ncclResult_t pncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
                                     ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
    nccl_call_t c = {CALL(NCCL_CALL_ALLGATHER, "ncclAllGather"), .send = sendbuff, .recv = recvbuff,
                     .count = sendcount};
    return nccl_call_submit(&c);
}
NCCL_ALIAS(ncclAllGather)

NCCL_API ncclResult_t pncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                                         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                         cudaStream_t stream)
{
    nccl_call_t c = {CALL(NCCL_CALL_REDUCE_SCATTER, "ncclReduceScatter"), .send = sendbuff, .recv = recvbuff,
                     .count = recvcount, .nccl_op = op};
    return nccl_call_submit(&c);
}
NCCL_ALIAS(ncclReduceScatter)

NCCL_API ncclResult_t pncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                    ncclComm_t comm, cudaStream_t stream)
{
    nccl_call_t c = {CALL(NCCL_CALL_ALLTOALL, "ncclAlltoAll"), .send = sendbuff, .recv = recvbuff, .count = count};
    return nccl_call_submit(&c);
}
NCCL_ALIAS(ncclAlltoAll)

NCCL_API ncclResult_t pncclGather(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                  int root, ncclComm_t comm, cudaStream_t stream)
{
    nccl_call_t c = {CALL(NCCL_CALL_GATHER, "ncclGather"), .send = sendbuff, .recv = recvbuff, .count = count,
                     .root = root};
    return nccl_call_submit(&c);
}
NCCL_ALIAS(ncclGather)

NCCL_API ncclResult_t pncclScatter(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                   int root, ncclComm_t comm, cudaStream_t stream)
{
    nccl_call_t c = {CALL(NCCL_CALL_SCATTER, "ncclScatter"), .send = sendbuff, .recv = recvbuff, .count = count,
                     .root = root};
    return nccl_call_submit(&c);
}
NCCL_ALIAS(ncclScatter)

NCCL_API ncclResult_t pncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
                                ncclComm_t comm, cudaStream_t stream)
{
    nccl_call_t c = {CALL(NCCL_CALL_SEND, "ncclSend"), .send = sendbuff, .count = count, .root = peer};
    return nccl_call_submit(&c);
}
NCCL_ALIAS(ncclSend)

NCCL_API ncclResult_t pncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                                cudaStream_t stream)
{
    nccl_call_t c = {CALL(NCCL_CALL_RECV, "ncclRecv"), .recv = recvbuff, .count = count, .root = peer};
    return nccl_call_submit(&c);
}
NCCL_ALIAS(ncclRecv)
