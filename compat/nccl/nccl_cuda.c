/*
 * The few CUDA runtime calls the NCCL layer makes itself: where a buffer lies (host buffers
 * go to Duet's CPU backend, device buffers to its CUDA backend), the current device, stream
 * synchronization before a host-buffer call, ncclMemAlloc's cudaMalloc, and PreMulSum on
 * device buffers (a stream-ordered scratch buffer and the scaling kernel of nccl_scale.cu).
 * The library links the static CUDA runtime as Duet's core does. Without the CUDA backend
 * every buffer is host memory and the rest reports that there is no CUDA.
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

int nccl_cuda_device_readable(const void *p, const void **devptr)
{
    *devptr = NULL;
    if (!p || !duet_cuda_available()) return 0;
    struct cudaPointerAttributes at;
    if (cudaPointerGetAttributes(&at, p) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    if (at.type == cudaMemoryTypeDevice || at.type == cudaMemoryTypeManaged) *devptr = p;
    else if (at.type == cudaMemoryTypeHost && at.devicePointer) *devptr = at.devicePointer; /* pinned, mapped */
    return *devptr != NULL;
}

ncclResult_t nccl_cuda_scratch_alloc(void **ptr, size_t bytes, cudaStream_t stream, int *kind, const char *fn)
{
    cudaError_t e = cudaMallocAsync(ptr, bytes, stream);
    if (e == cudaSuccess) {
        *kind = NCCL_TEMP_DEVICE_ASYNC;
        return ncclSuccess;
    }
    cudaGetLastError();
    if (e != cudaErrorNotSupported && e != cudaErrorInvalidValue) /* no memory pools: cudaMalloc instead */
        return nccl_fail(ncclUnhandledCudaError, "%s: cudaMallocAsync(%zu) for the scaled input: %s", fn, bytes,
                         cudaGetErrorString(e));
    if ((e = cudaMalloc(ptr, bytes)) != cudaSuccess) {
        cudaGetLastError();
        return nccl_fail(ncclUnhandledCudaError, "%s: cudaMalloc(%zu) for the scaled input: %s", fn, bytes,
                         cudaGetErrorString(e));
    }
    *kind = NCCL_TEMP_DEVICE;
    return ncclSuccess;
}

void nccl_cuda_scratch_free(void *ptr, cudaStream_t stream, int kind)
{
    if (!ptr) return;
    if (kind == NCCL_TEMP_DEVICE_ASYNC ? cudaFreeAsync(ptr, stream) != cudaSuccess : cudaFree(ptr) != cudaSuccess)
        cudaGetLastError(); /* nothing to report it to: the call's result is already decided */
}

ncclResult_t nccl_cuda_copy_async(void *dst, const void *src, size_t bytes, cudaStream_t stream, const char *fn)
{
    cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return nccl_fail(ncclUnhandledCudaError, "%s: copying the input in place: %s", fn, cudaGetErrorString(e));
    }
    return ncclSuccess;
}

int nccl_scale_launch(int dt, void *dst, const void *src, size_t n, const void *scalar_dev,
                      const unsigned char *scalar_imm, void *stream); /* nccl_scale.cu */

ncclResult_t nccl_cuda_scale(duet_datatype_t dt, void *dst, const void *src, size_t n, const void *scalar_dev,
                             const unsigned char scalar_imm[8], cudaStream_t stream, const char *fn)
{
    cudaError_t e = (cudaError_t)nccl_scale_launch((int)dt, dst, src, n, scalar_dev, scalar_imm, stream);
    if (e != cudaSuccess)
        return nccl_fail(ncclUnhandledCudaError, "%s: the PreMulSum scaling kernel: %s", fn, cudaGetErrorString(e));
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
int nccl_cuda_device_readable(const void *p, const void **devptr)
{
    (void)p;
    *devptr = NULL;
    return 0;
}
ncclResult_t nccl_cuda_scratch_alloc(void **ptr, size_t bytes, cudaStream_t stream, int *kind, const char *fn)
{
    (void)ptr, (void)stream, (void)kind;
    return nccl_fail(ncclInvalidUsage, "%s: a %zu-byte device buffer: this Duet is built without CUDA", fn, bytes);
}
void nccl_cuda_scratch_free(void *ptr, cudaStream_t stream, int kind) { (void)ptr, (void)stream, (void)kind; }
ncclResult_t nccl_cuda_copy_async(void *dst, const void *src, size_t bytes, cudaStream_t stream, const char *fn)
{
    (void)dst, (void)src, (void)bytes, (void)stream;
    return nccl_fail(ncclInvalidUsage, "%s: device buffers: this Duet is built without CUDA", fn);
}
ncclResult_t nccl_cuda_scale(duet_datatype_t dt, void *dst, const void *src, size_t n, const void *scalar_dev,
                             const unsigned char scalar_imm[8], cudaStream_t stream, const char *fn)
{
    (void)dt, (void)dst, (void)src, (void)n, (void)scalar_dev, (void)scalar_imm, (void)stream;
    return nccl_fail(ncclInvalidUsage, "%s: device buffers: this Duet is built without CUDA", fn);
}
#endif
