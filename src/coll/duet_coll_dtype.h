/*
 * duet_coll_dtype.h — datatypes and reduction operations: the tables, the element math and
 * the reduction kernels every collective executor uses.
 *
 * The element-level helpers below are `static inline`, plain C (no vector extensions, no
 * intrinsics), and carry DUET_HD so that a CUDA executor (.cu) can include this header and
 * run bit-identical math on the device. The loops over arrays live in duet_coll_dtype.c.
 *
 * Semantics (all kernels, host and device):
 *   - Integers: SUM and PROD wrap modulo 2^n (computed in the unsigned type: no UB).
 *   - Floats: IEEE arithmetic in the element type, round to nearest even.
 *     fp16 / bf16 by duet_reduce_op: converted to fp32, combined, rounded back after each
 *     pairwise op (correctly rounded: fp32 has at least 2p+2 bits for both). The executor
 *     prefers duet_reduce_to_f32 + duet_f32_to_dtype, which round once, at the end, as the
 *     public API documents.
 *   - MIN / MAX on floats: NaN propagates (if either input is NaN the result is a NaN — unlike
 *     C's fmin/fmax), and -0 < +0 (min(-0, +0) = -0, max(-0, +0) = +0), so MIN and MAX are
 *     commutative bit for bit and every rank gets the same bits whatever the order.
 *     Which NaN (payload, sign) comes out is unspecified.
 *   - AVG: the reduction step is SUM; duet_reduce_finish_avg* divides by the rank count at
 *     the end (integers truncate toward 0; floats divide, never multiply by 1/n).
 *   - Conversions fp16/bf16 <-> fp32 are exact where the value fits, round to nearest even
 *     otherwise, keep infinities, signed zeros and subnormals, and keep NaNs NaN (sign and top
 *     payload bits kept; fp16 NaNs come out quiet, as with x86 F16C, which the host kernels
 *     use when the CPU has it: bit-identical results either way). They assume the default
 *     rounding mode (nearest even) and that subnormal floats are not flushed (no -ffast-math
 *     or FTZ on the host).
 */
#ifndef DUET_COLL_DTYPE_H
#define DUET_COLL_DTYPE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "duet/duet.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__CUDACC__)
#define DUET_HD __host__ __device__
#else
#define DUET_HD
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

/* X(ENUM, name), one row per duet_op_t in enum order; #name is the printed name. */
#define DUET_OP_TABLE(X) \
    X(DUET_SUM, sum) X(DUET_PROD, prod) X(DUET_MIN, min) X(DUET_MAX, max) X(DUET_AVG, avg)

/* ------------------------------------------------------------------------------- names
 * duet_dtype_name / duet_op_name: the printed name, or "invalid" for a value out of range.
 * duet_dtype_parse / duet_op_parse: case-insensitive; 0 and *out set on success, -1 for an
 * unknown or NULL name (*out untouched). Accepted besides the printed names:
 *   int8: i8 char   uint8: u8   int32: i32 int   uint32: u32 uint   int64: i64   uint64: u64
 *   half: fp16 f16 float16   bfloat16: bf16   float: fp32 f32 float32   double: fp64 f64 float64
 *   avg: mean
 * duet_datatype_size (public, duet.h) is implemented in duet_coll_dtype.c; duet_dtype_size_ is
 * the same inline, for the checks every call makes (0 for a value out of range). */
const char *duet_dtype_name(duet_datatype_t dt);
const char *duet_op_name(duet_op_t op);
int duet_dtype_parse(const char *name, duet_datatype_t *out);
int duet_op_parse(const char *name, duet_op_t *out);

static inline DUET_HD size_t duet_dtype_size_(duet_datatype_t dt)
{
    switch (dt) {
#define DUET_SIZE_(E, name, T, size, is_float) \
    case E: return size;
        DUET_DTYPE_TABLE(DUET_SIZE_)
#undef DUET_SIZE_
    default: return 0;
    }
}

/* 1 for the types duet_reduce_to_f32 / duet_f32_to_dtype take (fp16, bf16, fp32). */
static inline DUET_HD int duet_dtype_has_f32_acc(duet_datatype_t dt)
{
    return dt == DUET_FLOAT16 || dt == DUET_BFLOAT16 || dt == DUET_FLOAT32;
}

/* ------------------------------------------------------------------------------- bits */
static inline DUET_HD uint32_t duet_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}
static inline DUET_HD float duet_bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
static inline DUET_HD uint64_t duet_f64_bits(double f)
{
    uint64_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}
static inline DUET_HD double duet_bits_f64(uint64_t u)
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
static inline DUET_HD float duet_f16_to_f32(uint16_t h)
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
static inline DUET_HD uint16_t duet_f32_to_f16(float f)
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
static inline DUET_HD float duet_bf16_to_f32(uint16_t h)
{
    return duet_bits_f32((uint32_t)h << 16);
}

/* fp32 -> bf16, round to nearest even on the dropped 16 bits (overflow carries into Inf;
 * subnormals round the same way); NaN stays NaN (quiet bit set, sign and payload top kept). */
static inline DUET_HD uint16_t duet_f32_to_bf16(float f)
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
    static inline DUET_HD T duet_sum_##name(T x, T y) { return (T)(U)(1u * (U)x + (U)y); }     \
    static inline DUET_HD T duet_prod_##name(T x, T y) { return (T)(U)(1u * (U)x * (U)y); }    \
    static inline DUET_HD T duet_min_##name(T x, T y) { return x < y ? x : y; }                \
    static inline DUET_HD T duet_max_##name(T x, T y) { return x > y ? x : y; }                \
    static inline DUET_HD T duet_avg_##name(T x, T y) { return duet_sum_##name(x, y); }
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
    static inline DUET_HD T duet_sum_##name(T x, T y) { return x + y; }                        \
    static inline DUET_HD T duet_prod_##name(T x, T y) { return x * y; }                       \
    static inline DUET_HD T duet_min_##name(T x, T y)                                          \
    {                                                                                          \
        T tie = duet_bits_##B(duet_##B##_bits(x) | duet_##B##_bits(y));                       \
        return x < y ? x : y < x ? y : tie;                                                    \
    }                                                                                          \
    static inline DUET_HD T duet_max_##name(T x, T y)                                          \
    {                                                                                          \
        T tie = duet_bits_##B((duet_##B##_bits(x) | duet_##B##_bits(y)) ^                     \
                              ((duet_##B##_bits(x) ^ duet_##B##_bits(y)) & (SIGN)));           \
        return x > y ? x : y > x ? y : tie;                                                    \
    }                                                                                          \
    static inline DUET_HD T duet_avg_##name(T x, T y) { return x + y; }
DUET_FLT_OPS_(float, float, f32, 0x80000000u)
DUET_FLT_OPS_(double, double, f64, 0x8000000000000000ull)
#undef DUET_FLT_OPS_

/* fp16 / bf16: combine in fp32, round once per op. */
#define DUET_HALF_OPS_(name, TO, FROM)                                                         \
    static inline DUET_HD uint16_t duet_sum_##name(uint16_t x, uint16_t y)                     \
    { return FROM(TO(x) + TO(y)); }                                                            \
    static inline DUET_HD uint16_t duet_prod_##name(uint16_t x, uint16_t y)                    \
    { return FROM(TO(x) * TO(y)); }                                                            \
    static inline DUET_HD uint16_t duet_min_##name(uint16_t x, uint16_t y)                     \
    { return FROM(duet_min_float(TO(x), TO(y))); }                                             \
    static inline DUET_HD uint16_t duet_max_##name(uint16_t x, uint16_t y)                     \
    { return FROM(duet_max_float(TO(x), TO(y))); }                                             \
    static inline DUET_HD uint16_t duet_avg_##name(uint16_t x, uint16_t y)                     \
    { return duet_sum_##name(x, y); }
DUET_HALF_OPS_(half, duet_f16_to_f32, duet_f32_to_f16)
DUET_HALF_OPS_(bfloat16, duet_bf16_to_f32, duet_f32_to_bf16)
#undef DUET_HALF_OPS_

/* ------------------------------------------------------------------------------- kernels
 * All take element counts; count 0 does nothing. `dt` and `op` must be valid values of
 * their enums (anything else: nothing is written). Buffers need the alignment of the
 * element type; they must not overlap except as stated. */

/* dst[i] = a[i] op b[i]. dst may be a or b exactly (or both). For AVG this is the SUM step. */
void duet_reduce_op(duet_datatype_t dt, duet_op_t op, void *dst, const void *a, const void *b,
                    size_t count);

/* fp32 accumulation for dt in {FLOAT16, BFLOAT16, FLOAT32} (duet_dtype_has_f32_acc):
 *   acc[i] = first ? (float)in[i] : acc[i] op (float)in[i]     (AVG: SUM)
 * Other types: nothing is written. in must not overlap acc. */
void duet_reduce_to_f32(duet_datatype_t dt, duet_op_t op, float *acc, const void *in, size_t count,
                        int first);

/* out[i] = acc[i] rounded once to dt (FLOAT16, BFLOAT16, FLOAT32; others: nothing is
 * written). out must not overlap acc, except out == acc for FLOAT32 (then nothing to do). */
void duet_f32_to_dtype(duet_datatype_t dt, void *out, const float *acc, size_t count);

/* AVG's last step, in place: buf[i] /= nranks (nranks >= 1; otherwise nothing happens).
 * Integers: C division (truncates toward 0). float/double: a true division. fp16/bf16:
 * converted to fp32, divided, rounded once. */
void duet_reduce_finish_avg(duet_datatype_t dt, void *buf, size_t count, int nranks);
/* The same on an fp32 accumulator: acc[i] /= (float)nranks. */
void duet_reduce_finish_avg_f32(float *acc, size_t count, int nranks);

/* For tests and benchmarks: 0 turns off the CPU-specific fp16 kernels (F16C), so the
 * portable ones run; 1 (the default) turns them back on. Returns the previous setting.
 * Not thread-safe: call it while no reduction runs. */
int duet_reduce_fast_paths(int enable);

#ifdef __cplusplus
}
#endif
#endif /* DUET_COLL_DTYPE_H */
