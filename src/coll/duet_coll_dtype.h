/*
 * duet_coll_dtype.h — datatypes and reduction operations inside the library: their names,
 * sizes, and the reduction kernels every host executor uses (loops over arrays, in
 * duet_coll_dtype.c). The tables and the element arithmetic, with their semantics, are the
 * public include/duet/duet_reduce_ops.h, which the GPU code shares.
 */
#ifndef DUET_COLL_DTYPE_H
#define DUET_COLL_DTYPE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "duet/duet.h"
#include "duet/duet_reduce_ops.h"

#ifdef __cplusplus
extern "C" {
#endif

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

static inline DUET_REDUCE_HD size_t duet_dtype_size_(duet_datatype_t dt)
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
static inline DUET_REDUCE_HD int duet_dtype_has_f32_acc(duet_datatype_t dt)
{
    return dt == DUET_FLOAT16 || dt == DUET_BFLOAT16 || dt == DUET_FLOAT32;
}

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
