/*
 * Results and messages: ncclGetErrorString, ncclGetLastError, and how Duet's statuses
 * become NCCL results.
 *
 * The last error is Duet's thread-local one (duet_last_error): a failing Duet call has set
 * it already, and nccl_fail() sets it for errors this layer finds itself, so both kinds read
 * the same way. NCCL keeps one message per process; a per-thread one cannot be overwritten by
 * another thread between the failing call and the question.
 */
#include <stdarg.h>
#include <stdio.h>
#include "nccl_compat.h"
#include "duet/duet_ext.h"

ncclResult_t nccl_fail(ncclResult_t r, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    duet_ext_log(DUET_EXT_LOG_WARN, "COLL", "NCCL: %s", msg);
    duet_status_t st = r == ncclSystemError ? DUET_ERR_SYSTEM
                       : r == ncclUnhandledCudaError ? DUET_ERR_CUDA
                       : r == ncclInternalError ? DUET_ERR_INTERNAL
                       : r == ncclInvalidUsage ? DUET_ERR_UNSUPPORTED
                                               : DUET_ERR_INVALID_ARG;
    duet_ext_error_set(st, "%s", msg);
    return r;
}

ncclResult_t nccl_from_duet(duet_status_t st)
{
    switch (st) {
    case DUET_OK: return ncclSuccess;
    case DUET_ERR_INVALID_ARG: return ncclInvalidArgument;
    case DUET_ERR_NO_MEMORY: return ncclSystemError;
    case DUET_ERR_TIMEOUT: return ncclSystemError;
    case DUET_ERR_PEER_FAILED: return ncclRemoteError;
    case DUET_ERR_REVOKED: return ncclRemoteError;
    case DUET_ERR_UNSUPPORTED: return ncclInvalidUsage;
    case DUET_ERR_SYSTEM: return ncclSystemError;
    case DUET_ERR_CUDA: return ncclUnhandledCudaError;
    case DUET_ERR_INTERNAL: return ncclInternalError;
    }
    return ncclInternalError;
}

NCCL_API const char *pncclGetErrorString(ncclResult_t result)
{
    switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the Duet developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    case ncclNumResults: break;
    }
    return "unknown result code";
}
NCCL_ALIAS(ncclGetErrorString)

NCCL_API const char *pncclGetLastError(ncclComm_t comm)
{
    (void)comm;
    return duet_last_error();
}
NCCL_ALIAS(ncclGetLastError)

/* declared deprecated in nccl.h, as in NCCL; defining and aliasing it is no use of it */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
NCCL_API void pncclResetDebugInit(void)
{
    /* Duet reads its settings once per process; nothing to reset */
}
NCCL_ALIAS(ncclResetDebugInit)
