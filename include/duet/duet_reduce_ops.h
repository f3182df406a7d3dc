/*
 * duet_reduce_ops.h — the element arithmetic of Duet's reductions: one table of datatypes, one
 * of operations, and x op y for every pair of them, written once for every executor. The host
 * kernels (src/coll/duet_coll_dtype.c), the GPU collectives (src/cuda/duet_cuda_reduce.cuh) and
 * layers built on the device API (compat/nvshmem) all combine elements through these helpers,
 * so a reduction gives the same bits wherever it runs.
 *
 * Plain C, `static inline`; compiled by nvcc they are __host__ __device__ (DUET_REDUCE_HD).
 * Adding an operation is a row of DUET_OP_TABLE and its helper per type below; the executors'
 * loops and dispatch are generated from the tables.
 *
 * Semantics (all kernels, host and device):
 *   - Integers: SUM and PROD wrap modulo 2^n (computed in the unsigned type: no UB).
 *   - Floats: IEEE arithmetic in the element type, round to nearest even.
 *     fp16 / bf16 helpers: converted to fp32, combined, rounded back after each pairwise op
 *     (correctly rounded: fp32 has at least 2p+2 bits for both). An executor that can
 *     accumulates in fp32 with the float helpers and rounds once, at the end, as duet.h
 *     documents for the collectives.
 *   - MIN / MAX on floats: NaN propagates (if either input is NaN the result is a NaN — unlike
 *     C's fmin/fmax), and -0 < +0 (min(-0, +0) = -0, max(-0, +0) = +0), so MIN and MAX are
 *     commutative bit for bit and every rank gets the same bits whatever the order.
 *     Which NaN (payload, sign) comes out is unspecified.
 *   - AVG: the reduction step is SUM (duet_avg_<type> is the sum); the executor divides by the
 *     rank count at the end (integers truncate toward 0; floats divide, never multiply by 1/n).
 *   - Conversions fp16/bf16 <-> fp32 are exact where the value fits, round to nearest even
 *     otherwise, keep infinities, signed zeros and subnormals, and keep NaNs NaN (sign and top
 *     payload bits kept; fp16 NaNs come out quiet, as with x86 F16C, which the host kernels
 *     use when the CPU has it: bit-identical results either way). They assume the default
 *     rounding mode (nearest even) and that subnormal floats are not flushed (no -ffast-math
 *     or FTZ on the host).
 */
#ifndef DUET_REDUCE_OPS_H
#define DUET_REDUCE_OPS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "duet/duet.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__CUDACC__)
#define DUET_REDUCE_HD __host__ __device__
#else
#define DUET_REDUCE_HD
#endif

/* ------------------------------------------------------------------------------- tables
 * X(ENUM, name, ctype, size, is_float), one row per duet_datatype_t in enum order.
 *   name:  a bare token; #name is the name nccl-tests prints ("half", "float", ...), and
 *          duet_<op>_<name> are the element helpers below.
 *   ctype: the storage type (fp16 and bf16 are stored as uint16_t bit patterns).
 *   size:  bytes of one element (== sizeof(ctype)).
 */
#define DUET_DTYPE_TABLE(X)                           \
    X(DUET_INT8,     int8,     int8_t,   1, 0)        \
    X(DUET_UINT8,    uint8,    uint8_t,  1, 0)        \
    X(DUET_INT32,    int32,    int32_t,  4, 0)        \
    X(DUET_UINT32,   uint32,   uint32_t, 4, 0)        \
    X(DUET_INT64,    int64,    int64_t,  8, 0)        \
    X(DUET_UINT64,   uint64,   uint64_t, 8, 0)        \
    X(DUET_FLOAT16,  half,     uint16_t, 2, 1)        \
    X(DUET_BFLOAT16, bfloat16, uint16_t, 2, 1)        \
    X(DUET_FLOAT32,  float,    float,    4, 1)        \
    X(DUET_FLOAT64,  double,   double,   8, 1)

/* X(ENUM, name, ...), one row per duet_op_t in enum order; #name is the printed name and
 * duet_<name>_<type> the element helper below. The arguments after X are handed to every X
 * (at least one: pass _ when X needs none), so a row can be expanded per datatype. */
#define DUET_OP_TABLE(X, ...)                                                                  \
    X(DUET_SUM, sum, __VA_ARGS__) X(DUET_PROD, prod, __VA_ARGS__) X(DUET_MIN, min, __VA_ARGS__) \
    X(DUET_MAX, max, __VA_ARGS__) X(DUET_AVG, avg, __VA_ARGS__)

/* ------------------------------------------------------------------------------- bits */
static inline DUET_REDUCE_HD uint32_t duet_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}
static inline DUET_REDUCE_HD float duet_bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
static inline DUET_REDUCE_HD uint64_t duet_f64_bits(double f)
{
    uint64_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}
static inline DUET_REDUCE_HD double duet_bits_f64(uint64_t u)
{
    double f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* ------------------------------------------------------------------------------- conversions
 * Written as selects between branch-free candidates so that loops over them vectorize. */

/* fp16 -> fp32, exact. The half's exponent+mantissa shifted into place is the float with
 * the exponent bias off by 112: normals add it back; Inf/NaN (exponent 31) go to 255, a NaN
 * with its quiet bit set (as x86's F16C does, so both give the same bits); subnormals
 * m * 2^-24 are built as 2^-14 * (1 + m/1024) - 2^-14, an exact float subtraction. */
static inline DUET_REDUCE_HD float duet_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t em = (uint32_t)(h & 0x7fffu) << 13;
    uint32_t exp = em & 0x0f800000u;
    uint32_t normal = em + 0x38000000u;                                        /* + 112 << 23 */
    uint32_t infnan = (em + 0x70000000u) | ((uint32_t)(em > 0x0f800000u) << 22); /* + 224 << 23 */
    uint32_t sub = duet_f32_bits(duet_bits_f32(em + 0x38800000u) - 6.103515625e-05f); /* 2^-14 */
    uint32_t r = exp == 0x0f800000u ? infnan : exp == 0 ? sub : normal;
    return duet_bits_f32(r | sign);
}

/* fp32 -> fp16, round to nearest even.
 *   |f| >= 65536 (and Inf/NaN):  Inf, or a quiet NaN with the top payload bits
 *   |f| <  2^-14 (fp16 subnormal or 0): |f| + 0.5 puts the fp16 unit 2^-24 at the float's last
 *              bit, so the FPU's own round-to-nearest-even does the rounding
 *   otherwise: rebias (-112 << 23), add 0xfff plus the lowest kept bit (ties to even), shift;
 *              a carry out of the mantissa bumps the exponent (up to Inf past 65520). */
static inline DUET_REDUCE_HD uint16_t duet_f32_to_f16(float f)
{
    uint32_t u = duet_f32_bits(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t a = u & 0x7fffffffu;
    uint32_t normal = (a + 0xc8000fffu + ((a >> 13) & 1u)) >> 13;
    uint32_t sub = duet_f32_bits(duet_bits_f32(a) + 0.5f) - 0x3f000000u;
    uint32_t big = a > 0x7f800000u ? (0x7e00u | ((a >> 13) & 0x3ffu)) : 0x7c00u;
    uint32_t r = a >= 0x47800000u ? big : a < 0x38800000u ? sub : normal;
    return (uint16_t)(r | sign);
}

/* bf16 -> fp32, exact: bf16 is the top half of a float. */
static inline DUET_REDUCE_HD float duet_bf16_to_f32(uint16_t h)
{
    return duet_bits_f32((uint32_t)h << 16);
}

/* fp32 -> bf16, round to nearest even on the dropped 16 bits (overflow carries into Inf;
 * subnormals round the same way); NaN stays NaN (quiet bit set, sign and payload top kept). */
static inline DUET_REDUCE_HD uint16_t duet_f32_to_bf16(float f)
{
    uint32_t u = duet_f32_bits(f);
    uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    uint32_t nan = (u >> 16) | 0x40u;
    return (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

/* ------------------------------------------------------------------------------- element ops
 * duet_<op>_<name>(x, y) for every row of the tables (op avg = sum: the reduction step).
 * Integer types compute in their unsigned twin; 1u * promotes narrow types to unsigned int,
 * so uint8 * uint8 never becomes a signed int multiply. */
#define DUET_INT_OPS_(name, T, U)                                                              \
    static inline DUET_REDUCE_HD T duet_sum_##name(T x, T y) { return (T)(U)(1u * (U)x + (U)y); }     \
    static inline DUET_REDUCE_HD T duet_prod_##name(T x, T y) { return (T)(U)(1u * (U)x * (U)y); }    \
    static inline DUET_REDUCE_HD T duet_min_##name(T x, T y) { return x < y ? x : y; }                \
    static inline DUET_REDUCE_HD T duet_max_##name(T x, T y) { return x > y ? x : y; }                \
    static inline DUET_REDUCE_HD T duet_avg_##name(T x, T y) { return duet_sum_##name(x, y); }
DUET_INT_OPS_(int8, int8_t, uint8_t)
DUET_INT_OPS_(uint8, uint8_t, uint8_t)
DUET_INT_OPS_(int32, int32_t, uint32_t)
DUET_INT_OPS_(uint32, uint32_t, uint32_t)
DUET_INT_OPS_(int64, int64_t, uint64_t)
DUET_INT_OPS_(uint64, uint64_t, uint64_t)
#undef DUET_INT_OPS_

/* Float MIN/MAX. Ordered and different: the smaller/larger. Otherwise (equal, or a NaN) the
 * result is built from both bit patterns: OR keeps a NaN a NaN (exponent all ones, mantissa
 * non-zero) and gives -0 for (+0, -0); MAX flips the sign bit back to (sign x AND sign y),
 * giving +0 for (+0, -0). Equal non-zero values have equal bits, so both give that value. */
#define DUET_FLT_OPS_(name, T, B, SIGN)                                                        \
    static inline DUET_REDUCE_HD T duet_sum_##name(T x, T y) { return x + y; }                        \
    static inline DUET_REDUCE_HD T duet_prod_##name(T x, T y) { return x * y; }                       \
    static inline DUET_REDUCE_HD T duet_min_##name(T x, T y)                                          \
    {                                                                                          \
        T tie = duet_bits_##B(duet_##B##_bits(x) | duet_##B##_bits(y));                       \
        return x < y ? x : y < x ? y : tie;                                                    \
    }                                                                                          \
    static inline DUET_REDUCE_HD T duet_max_##name(T x, T y)                                          \
    {                                                                                          \
        T tie = duet_bits_##B((duet_##B##_bits(x) | duet_##B##_bits(y)) ^                     \
                              ((duet_##B##_bits(x) ^ duet_##B##_bits(y)) & (SIGN)));           \
        return x > y ? x : y > x ? y : tie;                                                    \
    }                                                                                          \
    static inline DUET_REDUCE_HD T duet_avg_##name(T x, T y) { return x + y; }
DUET_FLT_OPS_(float, float, f32, 0x80000000u)
DUET_FLT_OPS_(double, double, f64, 0x8000000000000000ull)
#undef DUET_FLT_OPS_

/* fp16 / bf16: combine in fp32, round once per op. */
#define DUET_HALF_OPS_(name, TO, FROM)                                                         \
    static inline DUET_REDUCE_HD uint16_t duet_sum_##name(uint16_t x, uint16_t y)                     \
    { return FROM(TO(x) + TO(y)); }                                                            \
    static inline DUET_REDUCE_HD uint16_t duet_prod_##name(uint16_t x, uint16_t y)                    \
    { return FROM(TO(x) * TO(y)); }                                                            \
    static inline DUET_REDUCE_HD uint16_t duet_min_##name(uint16_t x, uint16_t y)                     \
    { return FROM(duet_min_float(TO(x), TO(y))); }                                             \
    static inline DUET_REDUCE_HD uint16_t duet_max_##name(uint16_t x, uint16_t y)                     \
    { return FROM(duet_max_float(TO(x), TO(y))); }                                             \
    static inline DUET_REDUCE_HD uint16_t duet_avg_##name(uint16_t x, uint16_t y)                     \
    { return duet_sum_##name(x, y); }
DUET_HALF_OPS_(half, duet_f16_to_f32, duet_f32_to_f16)
DUET_HALF_OPS_(bfloat16, duet_bf16_to_f32, duet_f32_to_bf16)
#undef DUET_HALF_OPS_

#ifdef __cplusplus
}

/* C++ (the CUDA code): duet_reduce_combine<DUET_OP, T>(x, y) is duet_<op>_<name>(x, y) for the
 * types stored as themselves (not fp16 / bf16, whose storage is uint16_t: combine their fp32
 * values as float). Generated from the tables above, host and device. */
template <int OP, typename T> struct duet_reduce_op_;
#define DUET_REDUCE_NATIVE_TYPES_(X)                                                           \
    X(int8, int8_t) X(uint8, uint8_t) X(int32, int32_t) X(uint32, uint32_t) X(int64, int64_t)   \
    X(uint64, uint64_t) X(float, float) X(double, double)
#define DUET_REDUCE_SPEC_(E, op, name, T)                                                      \
    template <> struct duet_reduce_op_<E, T> {                                                 \
        static DUET_REDUCE_HD inline T f(T x, T y) { return duet_##op##_##name(x, y); }        \
    };
#define DUET_REDUCE_SPECS_(name, T) DUET_OP_TABLE(DUET_REDUCE_SPEC_, name, T)
DUET_REDUCE_NATIVE_TYPES_(DUET_REDUCE_SPECS_)
#undef DUET_REDUCE_SPECS_
#undef DUET_REDUCE_SPEC_
#undef DUET_REDUCE_NATIVE_TYPES_
template <int OP, typename T> DUET_REDUCE_HD inline T duet_reduce_combine(T x, T y)
{
    return duet_reduce_op_<OP, T>::f(x, y);
}
#endif

#endif
