/*
 * The PreMulSum scaling kernel (nccl_redop.c): dst[i] = src[i] * scalar on the caller's stream,
 * so that a device-buffer call with an ncclRedOpCreatePreMulSum operation is this kernel into a
 * stream-ordered scratch buffer, then Duet's sum of the scratch: no host synchronization.
 *
 * The scalar is either an immediate (ncclScalarHostImmediate: its bytes travel in the kernel's
 * arguments) or a device-readable pointer (ncclScalarDevice) that each thread reads when the
 * kernel runs, i.e. at the call's place in the stream, as NCCL does.
 *
 * Arithmetic, as NCCL's FuncPreMulSum: the product in the datatype's precision. Integers wrap in
 * their own width (the product modulo 2^64, truncated); float and double multiply in their type;
 * half and bfloat16 multiply in fp32 and round once to nearest even. For half and bfloat16 that
 * is exactly NCCL's __hmul / __hmul2 result: the product of two 11-bit (8-bit) significands is
 * exact in fp32's 24 bits, so one rounding of it is the correctly rounded half (bf16) product.
 * (The sum that follows is Duet's: fp16 / bf16 accumulate in fp32 and round once.)
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>
#include <type_traits>
#include "duet/duet.h"

namespace {

template <typename T> struct scale_op {
    __device__ __forceinline__ static T mul(T x, T k)
    {
        if constexpr (std::is_integral<T>::value) return (T)((uint64_t)x * (uint64_t)k);
        else return x * k;
    }
};
template <> struct scale_op<__half> {
    __device__ __forceinline__ static __half mul(__half x, __half k)
    {
        return __float2half_rn(__half2float(x) * __half2float(k));
    }
};
template <> struct scale_op<__nv_bfloat16> {
    __device__ __forceinline__ static __nv_bfloat16 mul(__nv_bfloat16 x, __nv_bfloat16 k)
    {
        return __float2bfloat16_rn(__bfloat162float(x) * __bfloat162float(k));
    }
};

struct scalar_bytes {
    unsigned char b[8];
};

template <typename T>
__global__ void nccl_scale_kernel(T *__restrict__ dst, const T *__restrict__ src, size_t n, const T *kp,
                                  scalar_bytes imm)
{
    T k;
    if (kp) k = *kp; /* ncclScalarDevice: the value at the time the kernel runs */
    else memcpy(&k, imm.b, sizeof k);
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        dst[i] = scale_op<T>::mul(src[i], k);
}

template <typename T> int launch(void *dst, const void *src, size_t n, const void *kp, const scalar_bytes &imm,
                                 cudaStream_t s)
{
    const unsigned threads = 256;
    size_t blocks = (n + threads - 1) / threads;
    if (blocks > 2048) blocks = 2048; /* grid-stride beyond: enough to fill an H200 many times over */
    nccl_scale_kernel<T><<<(unsigned)blocks, threads, 0, s>>>((T *)dst, (const T *)src, n, (const T *)kp, imm);
    return (int)cudaGetLastError();
}

} // namespace

/* dst[i] = src[i] * scalar for i < n of Duet datatype dt, enqueued on stream. The scalar is
 * *scalar_dev when that is not NULL (read on the GPU when the kernel runs), else the bytes of
 * scalar_imm (the first sizeof(element)). Returns a cudaError_t (0: enqueued). */
extern "C" int nccl_scale_launch(int dt, void *dst, const void *src, size_t n, const void *scalar_dev,
                                 const unsigned char *scalar_imm, void *stream)
{
    if (n == 0) return 0;
    scalar_bytes imm;
    memcpy(imm.b, scalar_imm, sizeof imm.b);
    cudaStream_t s = (cudaStream_t)stream;
    switch (dt) {
    case DUET_INT8: return launch<int8_t>(dst, src, n, scalar_dev, imm, s);
    case DUET_UINT8: return launch<uint8_t>(dst, src, n, scalar_dev, imm, s);
    case DUET_INT32: return launch<int32_t>(dst, src, n, scalar_dev, imm, s);
    case DUET_UINT32: return launch<uint32_t>(dst, src, n, scalar_dev, imm, s);
    case DUET_INT64: return launch<int64_t>(dst, src, n, scalar_dev, imm, s);
    case DUET_UINT64: return launch<uint64_t>(dst, src, n, scalar_dev, imm, s);
    case DUET_FLOAT16: return launch<__half>(dst, src, n, scalar_dev, imm, s);
    case DUET_BFLOAT16: return launch<__nv_bfloat16>(dst, src, n, scalar_dev, imm, s);
    case DUET_FLOAT32: return launch<float>(dst, src, n, scalar_dev, imm, s);
    case DUET_FLOAT64: return launch<double>(dst, src, n, scalar_dev, imm, s);
    default: return (int)cudaErrorInvalidValue;
    }
}
