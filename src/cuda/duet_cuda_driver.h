/*
 * duet_cuda_driver.h — the few CUDA driver-API calls Duet makes, as function pointers.
 *
 * The library links only the static CUDA runtime, never libcuda: a machine without a driver
 * (CI) must still start Duet's programs and run them on the CPU. The driver's entry points
 * are looked up once through cudaGetDriverEntryPointByVersion; duet_cu() is NULL when that
 * fails (no driver, or one too old), and the caller then treats the GPU as absent.
 */
#ifndef DUET_CUDA_DRIVER_H
#define DUET_CUDA_DRIVER_H

#include <cuda.h>
#include <cuda_runtime_api.h>
#include "util/duet_util.h"

typedef struct {
    CUresult (*GetErrorString)(CUresult, const char **);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetAttribute)(int *, CUdevice_attribute, CUdevice);
    CUresult (*MemGetAllocationGranularity)(size_t *, const CUmemAllocationProp *,
                                            CUmemAllocationGranularity_flags);
    CUresult (*MemCreate)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                          unsigned long long);
    CUresult (*MemRelease)(CUmemGenericAllocationHandle);
    CUresult (*MemExportToShareableHandle)(void *, CUmemGenericAllocationHandle, CUmemAllocationHandleType,
                                           unsigned long long);
    CUresult (*MemImportFromShareableHandle)(CUmemGenericAllocationHandle *, void *, CUmemAllocationHandleType);
    CUresult (*MemAddressReserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
    CUresult (*MemAddressFree)(CUdeviceptr, size_t);
    CUresult (*MemMap)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
    CUresult (*MemUnmap)(CUdeviceptr, size_t);
    CUresult (*MemSetAccess)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
    /* optional (NULL when the driver lacks them): stream memory operations */
    CUresult (*StreamWriteValue32)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
    CUresult (*StreamWriteValue64)(CUstream, CUdeviceptr, cuuint64_t, unsigned int);
} duet_cu_t;

/* The driver's entry points, or NULL when the driver cannot give all of them. Thread-safe;
 * the lookup happens once. */
const duet_cu_t *duet_cu(void);

/* The name of a driver error, for messages ("CUDA_ERROR_OUT_OF_MEMORY"). Never NULL. */
const char *duet_cu_error_str(CUresult r);

/* Record a failed CUDA runtime / driver call as DUET_ERR_CUDA with its error string. */
#define DUET_CUDA_FAIL_RT(err, ...) duet_cuda_fail_rt_((err), __VA_ARGS__)
duet_status_t duet_cuda_fail_rt_(cudaError_t err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
duet_status_t duet_cuda_fail_cu_(CUresult err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
