/*
 * gpu_elems.h — what the GPU collective tests (test_gpu_coll.c, test_gpu_colls.c) share: the
 * element encodings of every datatype, each rank's generated inputs, sign extension, and the
 * reference reduction of the inputs.
 * Include after duet_test.h (mix, key3).
 *
 * Inputs: rank r's element j of case `salt` is gen_bits (integers: its low bytes) or, for
 * floats, gen_val = k / 16 with k in [-32, 32] (exact in fp16 / bf16, so sums are exact).
 */
#ifndef GPU_ELEMS_H
#define GPU_ELEMS_H

#include <math.h>
#include <stdint.h>
#include <string.h>
#include <duet/duet.h>

static inline int is_float(int dt) { return dt >= DUET_FLOAT16; }
static inline int is_signed(int dt) { return dt == DUET_INT8 || dt == DUET_INT32 || dt == DUET_INT64; }

static inline uint16_t f2h(float f) /* exact normal values (and 0) only: the inputs */
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffff) == 0) return (uint16_t)(u >> 16);
    uint32_t s = u >> 31, e = (u >> 23) & 0xff, m = u & 0x7fffff;
    return (uint16_t)((s << 15) | ((e - 127 + 15) << 10) | (m >> 13));
}
static inline float h2f(uint16_t h)
{
    uint32_t s = h >> 15, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    float v = e == 0 ? ldexpf((float)m, -24) : e == 31 ? INFINITY : ldexpf((float)(m | 0x400), (int)e - 25);
    return s ? -v : v;
}
static inline float b2f(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Rank r's element j of case `salt`, as raw bits (integers) or a float value k / 16. */
static inline uint64_t gen_bits(int r, size_t j, uint64_t salt) { return mix(key3(salt, (uint64_t)r, (uint64_t)j)); }
static inline double gen_val(int r, size_t j, uint64_t salt)
{
    int k = (int)(gen_bits(r, j, salt) % 65) - 32;
    return k / 16.0;
}

/* One element of type dt at p: floats from v, integers from the low bytes of bits. */
static inline void store(int dt, char *p, uint64_t bits, double v)
{
    switch (dt) {
    case DUET_FLOAT16: { uint16_t h = f2h((float)v); memcpy(p, &h, 2); break; }
    case DUET_BFLOAT16: { float f = (float)v; uint32_t u; memcpy(&u, &f, 4); uint16_t b = (uint16_t)(u >> 16); memcpy(p, &b, 2); break; }
    case DUET_FLOAT32: { float f = (float)v; memcpy(p, &f, 4); break; }
    case DUET_FLOAT64: memcpy(p, &v, 8); break;
    default: memcpy(p, &bits, duet_datatype_size((duet_datatype_t)dt)); break; /* little-endian: the low bytes */
    }
}

/* An integer of type dt, from its low bytes, widened to 64 bits (sign-extended when signed). */
static inline uint64_t sext(int dt, uint64_t b)
{
    switch (dt) {
    case DUET_INT8: return (uint64_t)(int64_t)(int8_t)b;
    case DUET_UINT8: return b & 0xff;
    case DUET_INT32: return (uint64_t)(int64_t)(int32_t)b;
    case DUET_UINT32: return b & 0xffffffffu;
    default: return b;
    }
}

/* The reference: element j reduced over ranks 0..npes-1 in rank order, with the library's
 * semantics (integers wrap in their width, integer avg truncates toward 0; fp16 / bf16 / fp32
 * in fp32, fp64 in fp64). */
static inline uint64_t ref_int(int dt, int op, int npes, size_t j, uint64_t salt)
{
    uint64_t acc = sext(dt, gen_bits(0, j, salt));
    for (int r = 1; r < npes; r++) {
        uint64_t x = sext(dt, gen_bits(r, j, salt));
        if (op == DUET_SUM || op == DUET_AVG) acc += x;
        else if (op == DUET_PROD) acc *= x;
        else {
            int less = is_signed(dt) ? (int64_t)x < (int64_t)acc : x < acc;
            if ((op == DUET_MIN) == less) acc = x;
        }
    }
    acc = sext(dt, acc); /* wrap to the width */
    if (op == DUET_AVG) acc = is_signed(dt) ? (uint64_t)((int64_t)acc / npes) : acc / (uint64_t)npes;
    return acc;
}

static inline double ref_float(int dt, int op, int npes, size_t j, uint64_t salt)
{
    if (dt == DUET_FLOAT64) {
        double acc = gen_val(0, j, salt);
        for (int r = 1; r < npes; r++) {
            double x = gen_val(r, j, salt);
            acc = op == DUET_SUM || op == DUET_AVG ? acc + x : op == DUET_PROD ? acc * x
                : op == DUET_MIN ? (x < acc ? x : acc) : (x > acc ? x : acc);
        }
        return op == DUET_AVG ? acc / npes : acc;
    }
    float acc = (float)gen_val(0, j, salt); /* fp16 / bf16 / fp32 accumulate in fp32 */
    for (int r = 1; r < npes; r++) {
        float x = (float)gen_val(r, j, salt);
        acc = op == DUET_SUM || op == DUET_AVG ? acc + x : op == DUET_PROD ? acc * x
            : op == DUET_MIN ? (x < acc ? x : acc) : (x > acc ? x : acc);
    }
    return op == DUET_AVG ? acc / (float)npes : acc;
}

#endif
