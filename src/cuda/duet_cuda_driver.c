/*
 * Looking up the driver API at run time (see duet_cuda_driver.h for why), and turning CUDA
 * errors into Duet errors.
 */
#include <pthread.h>
#include <stdio.h>
#include "cuda/duet_cuda_driver.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static duet_cu_t table;
static int table_ok;

/* The ABI version asked of every symbol: the driver gives the entry point whose signature
 * is the one CUDA 12.0 documents (every call here is older than that). */
#define DUET_CU_ABI 12000

static int lookup(const char *name, void **fn)
{
    enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    cudaError_t err = cudaGetDriverEntryPointByVersion(name, fn, DUET_CU_ABI, cudaEnableDefault, &q);
    if (err != cudaSuccess || q != cudaDriverEntryPointSuccess || !*fn) {
        DUET_LOG(INFO, CUDA, "driver entry point %s: %s", name,
                 err != cudaSuccess ? cudaGetErrorString(err) : "not found");
        (void)cudaGetLastError(); /* do not leave the error sticky for the next runtime call */
        return -1;
    }
    return 0;
}

static void load(void)
{
    int bad = 0;
#define DUET_CU_LOOKUP_(f) bad |= lookup("cu" #f, (void **)&table.f);
    DUET_CU_LOOKUP_(GetErrorString)
    DUET_CU_LOOKUP_(DeviceGet)
    DUET_CU_LOOKUP_(DeviceGetAttribute)
    DUET_CU_LOOKUP_(MemGetAllocationGranularity)
    DUET_CU_LOOKUP_(MemCreate)
    DUET_CU_LOOKUP_(MemRelease)
    DUET_CU_LOOKUP_(MemExportToShareableHandle)
    DUET_CU_LOOKUP_(MemImportFromShareableHandle)
    DUET_CU_LOOKUP_(MemAddressReserve)
    DUET_CU_LOOKUP_(MemAddressFree)
    DUET_CU_LOOKUP_(MemMap)
    DUET_CU_LOOKUP_(MemUnmap)
    DUET_CU_LOOKUP_(MemSetAccess)
#undef DUET_CU_LOOKUP_
    table_ok = !bad;
    if (lookup("cuStreamWriteValue32", (void **)&table.StreamWriteValue32) ||
        lookup("cuStreamWriteValue64", (void **)&table.StreamWriteValue64))
        table.StreamWriteValue32 = NULL, table.StreamWriteValue64 = NULL; /* optional: kernels then */
}

const duet_cu_t *duet_cu(void)
{
    pthread_once(&once, load);
    return table_ok ? &table : NULL;
}

const char *duet_cu_error_str(CUresult r)
{
    const char *s = NULL;
    const duet_cu_t *cu = duet_cu();
    if (!cu || cu->GetErrorString(r, &s) != CUDA_SUCCESS || !s) return "unknown CUDA driver error";
    return s;
}

static duet_status_t fail(const char *what, const char *fmt, va_list ap)
{
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    return DUET_FAIL(DUET_ERR_CUDA, CUDA, "%s: %s", msg, what);
}

duet_status_t duet_cuda_fail_rt_(cudaError_t err, const char *fmt, ...)
{
    (void)cudaGetLastError(); /* clear a non-sticky error so later calls see their own */
    va_list ap;
    va_start(ap, fmt);
    char what[160];
    snprintf(what, sizeof what, "%s (%s)", cudaGetErrorString(err), cudaGetErrorName(err));
    duet_status_t st = fail(what, fmt, ap);
    va_end(ap);
    return st;
}

duet_status_t duet_cuda_fail_cu_(CUresult err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char what[160];
    snprintf(what, sizeof what, "%s (driver error %d)", duet_cu_error_str(err), (int)err);
    duet_status_t st = fail(what, fmt, ap);
    va_end(ap);
    return st;
}
