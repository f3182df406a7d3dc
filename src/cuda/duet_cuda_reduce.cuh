/*
 * duet_cuda_reduce.cuh — the reduction arithmetic of the GPU collectives (duet_cuda_coll.cu,
 * duet_cuda_exec.cu): the element helpers the host kernels use (include/duet/duet_reduce_ops.h,
 * through duet_reduce_combine) applied in an accumulation type: integers in 64 bits, then
 * wrapped to their own width; fp16 / bf16 accumulate in fp32 and round once; avg divides at
 * the end (integers truncating toward 0).
 */
#ifndef DUET_CUDA_REDUCE_CUH
#define DUET_CUDA_REDUCE_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>
#include <type_traits>
#include "duet/duet.h"
#include "duet/duet_reduce_ops.h"

namespace duet_cuda_reduce {

/* Storage type T, accumulation type A. */
template <typename T> struct acc_;
template <> struct acc_<int8_t> { using A = int64_t; };
template <> struct acc_<uint8_t> { using A = uint64_t; };
template <> struct acc_<int32_t> { using A = int64_t; };
template <> struct acc_<uint32_t> { using A = uint64_t; };
template <> struct acc_<int64_t> { using A = int64_t; };
template <> struct acc_<uint64_t> { using A = uint64_t; };
template <> struct acc_<__half> { using A = float; };
template <> struct acc_<__nv_bfloat16> { using A = float; };
template <> struct acc_<float> { using A = float; };
template <> struct acc_<double> { using A = double; };

template <typename T> __device__ __forceinline__ typename acc_<T>::A widen(T v) { return (typename acc_<T>::A)v; }
template <> __device__ __forceinline__ float widen<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float widen<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T, typename A> __device__ __forceinline__ T narrow(A v) { return (T)v; }
template <> __device__ __forceinline__ __half narrow<__half, float>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 narrow<__nv_bfloat16, float>(float v)
{
    return __float2bfloat16_rn(v);
}

/* x op y in the accumulation type, by the host's helper for that type: integer sums and
 * products wrap modulo 2^64 (so also in the stored width, after narrowing); float min / max
 * propagate NaNs and order -0 below +0, bit for bit as on the host. */
template <int OP, typename A> __device__ __forceinline__ A combine(A x, A y) { return duet_reduce_combine<OP, A>(x, y); }

/* The final value: avg divides (integers after wrapping to T, truncating toward 0). */
template <typename T, int OP, typename A> __device__ __forceinline__ T finish(A acc, int n)
{
    if constexpr (OP == DUET_AVG) {
        if constexpr (std::is_integral<A>::value) return (T)(narrow<T, A>(acc) / (T)n);
        else return narrow<T, A>(acc / (A)n);
    } else {
        return narrow<T, A>(acc);
    }
}

__device__ __forceinline__ uint64_t now_ns()
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

} // namespace duet_cuda_reduce

#endif
