/*
 * The few CUDA runtime calls the NCCL layer makes itself: where a buffer lies (host buffers
 * go to Duet's CPU backend, device buffers to its CUDA backend), the current device, stream
 * synchronization before a host-buffer call, ncclMemAlloc's cudaMalloc. Without the CUDA
 * backend every buffer is host memory and the rest reports that there is no CUDA.
 */
#include "nccl_compat.h"

#ifdef DUET_HAVE_CUDA
#include <cuda_runtime.h>

int nccl_cuda_is_device_ptr(const void *p)
{
    if (!p || !duet_cuda_available()) return 0;
    struct cudaPointerAttributes at;
    if (cudaPointerGetAttributes(&at, p) != cudaSuccess) {
        cudaGetLastError(); /* a host pointer CUDA never saw: not an error to keep */
        return 0;
    }
    return at.type == cudaMemoryTypeDevice || at.type == cudaMemoryTypeManaged;
}

int nccl_cuda_current_device(void)
{
    int dev = -1;
    if (!duet_cuda_available() || cudaGetDevice(&dev) != cudaSuccess) return -1;
    return dev;
}

void nccl_cuda_set_device(int dev)
{
    if (dev >= 0) cudaSetDevice(dev);
}

ncclResult_t nccl_cuda_stream_sync(cudaStream_t stream, const char *fn)
{
    if (!stream || !duet_cuda_available()) return ncclSuccess;
    cudaError_t e = cudaStreamSynchronize(stream);
    if (e != cudaSuccess)
        return nccl_fail(ncclUnhandledCudaError, "%s: cudaStreamSynchronize before a host-buffer call: %s", fn,
                         cudaGetErrorString(e));
    return ncclSuccess;
}

ncclResult_t nccl_cuda_malloc(void **ptr, size_t size)
{
    cudaError_t e = cudaMalloc(ptr, size);
    if (e != cudaSuccess)
        return nccl_fail(ncclUnhandledCudaError, "ncclMemAlloc: cudaMalloc(%zu): %s", size, cudaGetErrorString(e));
    return ncclSuccess;
}

ncclResult_t nccl_cuda_free(void *ptr)
{
    cudaError_t e = cudaFree(ptr);
    if (e != cudaSuccess)
        return nccl_fail(ncclUnhandledCudaError, "ncclMemFree: cudaFree: %s", cudaGetErrorString(e));
    return ncclSuccess;
}

ncclResult_t nccl_cuda_copy_to_host(void *dst, const void *src, size_t bytes)
{
    cudaError_t e = cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess)
        return nccl_fail(ncclUnhandledCudaError, "reading a PreMulSum scalar from the device: %s",
                         cudaGetErrorString(e));
    return ncclSuccess;
}

#else /* no CUDA backend: every buffer is host memory */

int nccl_cuda_is_device_ptr(const void *p)
{
    (void)p;
    return 0;
}
int nccl_cuda_current_device(void) { return -1; }
void nccl_cuda_set_device(int dev) { (void)dev; }
ncclResult_t nccl_cuda_stream_sync(cudaStream_t stream, const char *fn)
{
    (void)stream;
    (void)fn;
    return ncclSuccess;
}
ncclResult_t nccl_cuda_malloc(void **ptr, size_t size)
{
    (void)ptr;
    return nccl_fail(ncclInvalidUsage, "ncclMemAlloc(%zu): this Duet is built without CUDA", size);
}
ncclResult_t nccl_cuda_free(void *ptr)
{
    (void)ptr;
    return nccl_fail(ncclInvalidUsage, "ncclMemFree: this Duet is built without CUDA");
}
ncclResult_t nccl_cuda_copy_to_host(void *dst, const void *src, size_t bytes)
{
    (void)dst;
    (void)src;
    (void)bytes;
    return nccl_fail(ncclInvalidUsage, "a device PreMulSum scalar: this Duet is built without CUDA");
}
#endif
