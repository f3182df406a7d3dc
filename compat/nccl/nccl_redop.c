/*
 * ncclRedOpCreatePreMulSum / ncclRedOpDestroy, and how a call with such an operation runs:
 * each rank multiplies its input by the scalar, then the values are summed. Duet has no
 * pre-multiplying reduction, so this layer scales a copy of the input and runs Duet's sum on
 * the copy:
 *   - host buffers: a malloc'd copy scaled here (integers wrap, fp16 / bf16 are scaled in
 *     fp32 and rounded once); an ncclScalarDevice scalar is read at the call (from device
 *     memory when it is there: the call is synchronous anyway);
 *   - device buffers: a scratch buffer from cudaMallocAsync on the call's stream, the scaling
 *     kernel (nccl_scale.cu, the same arithmetic) on that stream, then the sum, then
 *     cudaFreeAsync on the stream: all in stream order, no host synchronization. An
 *     ncclScalarDevice scalar in device-readable memory (device, managed, pinned host) is read
 *     by the kernel when it runs, as in NCCL; one in pageable host memory is read at the call.
 *
 * An operation is a slot of the communicator's table; its ncclRedOp_t is ncclNumOps + slot.
 */
#include <stdlib.h>
#include <string.h>
#include "nccl_compat.h"
#include "duet/duet_ext.h"
#include "duet/duet_reduce_ops.h"

NCCL_API ncclResult_t pncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar, ncclDataType_t datatype,
                                                ncclScalarResidence_t residence, ncclComm_t comm)
{
    const char *fn = "ncclRedOpCreatePreMulSum";
    ncclResult_t r = nccl_comm_check(comm, fn);
    if (r) return r;
    duet_datatype_t dt;
    if ((r = nccl_map_datatype(datatype, &dt, fn))) return r;
    if (!op || !scalar) return nccl_fail(ncclInvalidArgument, "%s: op or scalar is NULL", fn);
    if (residence != ncclScalarDevice && residence != ncclScalarHostImmediate)
        return nccl_fail(ncclInvalidArgument, "%s: residence %d is not an ncclScalarResidence_t", fn, (int)residence);
    int slot = 0;
    while (slot < NCCL_COMPAT_MAX_REDOPS && comm->redops[slot].used) slot++;
    if (slot == NCCL_COMPAT_MAX_REDOPS)
        return nccl_fail(ncclInvalidUsage, "%s: %d operations are alive on this communicator, the most Duet keeps "
                         "(ncclRedOpDestroy some)", fn, NCCL_COMPAT_MAX_REDOPS);
    nccl_redop_t *o = &comm->redops[slot];
    memset(o, 0, sizeof *o);
    o->dt = datatype;
    o->residence = residence;
    if (residence == ncclScalarHostImmediate) memcpy(o->value, scalar, duet_datatype_size(dt));
    else o->ptr = scalar;
    o->used = 1;
    *op = (ncclRedOp_t)((int)ncclNumOps + slot);
    return ncclSuccess;
}
NCCL_ALIAS(ncclRedOpCreatePreMulSum)

NCCL_API ncclResult_t pncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm)
{
    ncclResult_t r = nccl_comm_check(comm, "ncclRedOpDestroy");
    if (r) return r;
    int slot = (int)op - (int)ncclNumOps;
    if (nccl_op_builtin(op))
        return nccl_fail(ncclInvalidArgument, "ncclRedOpDestroy: op %d is a built-in operation", (int)op);
    if (slot < 0 || slot >= NCCL_COMPAT_MAX_REDOPS || !comm->redops[slot].used)
        return nccl_fail(ncclInvalidArgument, "ncclRedOpDestroy: op %d was not made by ncclRedOpCreatePreMulSum on "
                         "this communicator (or is destroyed)", (int)op);
    comm->redops[slot].used = 0;
    return ncclSuccess;
}
NCCL_ALIAS(ncclRedOpDestroy)

/* dst[i] = src[i] * scalar in the type of dt. */
static void scale(duet_datatype_t dt, void *dst, const void *src, size_t n, const unsigned char *s)
{
#define SCALE_INT_(T)                                                                 \
    do {                                                                              \
        T k, *d = dst;                                                                \
        const T *x = src;                                                             \
        memcpy(&k, s, sizeof k);                                                      \
        for (size_t i = 0; i < n; i++) d[i] = (T)((uint64_t)x[i] * (uint64_t)k);      \
    } while (0)
#define SCALE_HALF_(to_f32, from_f32)                                                 \
    do {                                                                              \
        uint16_t kb, *d = dst;                                                        \
        const uint16_t *x = src;                                                      \
        memcpy(&kb, s, sizeof kb);                                                    \
        float k = to_f32(kb);                                                         \
        for (size_t i = 0; i < n; i++) d[i] = from_f32(to_f32(x[i]) * k);             \
    } while (0)
    switch (dt) {
    case DUET_INT8: SCALE_INT_(int8_t); break;
    case DUET_UINT8: SCALE_INT_(uint8_t); break;
    case DUET_INT32: SCALE_INT_(int32_t); break;
    case DUET_UINT32: SCALE_INT_(uint32_t); break;
    case DUET_INT64: SCALE_INT_(int64_t); break;
    case DUET_UINT64: SCALE_INT_(uint64_t); break;
    case DUET_FLOAT16: SCALE_HALF_(duet_f16_to_f32, duet_f32_to_f16); break;
    case DUET_BFLOAT16: SCALE_HALF_(duet_bf16_to_f32, duet_f32_to_bf16); break;
    case DUET_FLOAT32: {
        float k, *d = dst;
        const float *x = src;
        memcpy(&k, s, sizeof k);
        for (size_t i = 0; i < n; i++) d[i] = x[i] * k;
        break;
    }
    case DUET_FLOAT64: {
        double k, *d = dst;
        const double *x = src;
        memcpy(&k, s, sizeof k);
        for (size_t i = 0; i < n; i++) d[i] = x[i] * k;
        break;
    }
    default: break;
    }
#undef SCALE_INT_
#undef SCALE_HALF_
}

ncclResult_t nccl_redop_apply(nccl_call_t *c)
{
    if (nccl_op_builtin(c->nccl_op) || c->kind == NCCL_CALL_BROADCAST || c->kind == NCCL_CALL_ALLGATHER ||
        c->kind == NCCL_CALL_ALLTOALL || c->kind == NCCL_CALL_GATHER || c->kind == NCCL_CALL_SCATTER ||
        c->kind == NCCL_CALL_SEND || c->kind == NCCL_CALL_RECV)
        return ncclSuccess;
    const nccl_redop_t *o = &c->comm->redops[(int)c->nccl_op - (int)ncclNumOps];
    size_t elem = duet_datatype_size(c->dt);
    size_t n = c->kind == NCCL_CALL_REDUCE_SCATTER ? c->count * (size_t)c->comm->nranks : c->count;
    if (n == 0) return ncclSuccess;
    unsigned char k[8] = {0};
    if (c->device) {
        const void *kdev = NULL;
        if (o->residence == ncclScalarHostImmediate) memcpy(k, o->value, elem);
        else if (!nccl_cuda_device_readable(o->ptr, &kdev)) memcpy(k, o->ptr, elem); /* pageable: read now */
        ncclResult_t r = nccl_cuda_scratch_alloc(&c->temp, n * elem, c->stream, &c->temp_kind, c->fn);
        if (r) {
            c->temp = NULL;
            return r;
        }
        return nccl_cuda_scale(c->dt, c->temp, c->send, n, kdev, k, c->stream, c->fn);
    }
    if (o->residence == ncclScalarHostImmediate) memcpy(k, o->value, elem);
    else if (nccl_cuda_is_device_ptr(o->ptr)) {
        ncclResult_t r = nccl_cuda_copy_to_host(k, o->ptr, elem);
        if (r) return r;
    } else memcpy(k, o->ptr, elem);
    c->temp_kind = NCCL_TEMP_HOST;
    if (!(c->temp = malloc(n * elem)))
        return nccl_fail(ncclSystemError, "%s: out of host memory for the scaled copy (%zu bytes)", c->fn, n * elem);
    scale(c->dt, c->temp, c->send, n, k);
    return ncclSuccess;
}
