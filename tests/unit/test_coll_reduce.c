/*
 * test_coll_reduce.c — datatypes, conversions and reduction kernels (src/coll/duet_coll_dtype.c).
 *
 * Covers: names, parsing (printed names, aliases, case, invalid text) and duet_datatype_size;
 * fp16 and bf16 <-> fp32 against an independent reference built on double arithmetic
 * (frexp / ldexp / nearbyint): all 65536 bit patterns of each (exact value, round trip,
 * NaN stays NaN with its sign), every halfway point between neighbouring values and the
 * floats on either side of it, explicit tricky values (max finite, overflow, subnormal
 * boundaries, ties) and random floats; duet_reduce_op for every type x op on random data
 * (specials included for floats) at counts 0, 1, 7, 1000, 1003 and 1<<20, out of place and with
 * dst == a, dst == b, dst == a == b, at an offset of one element, with poisoned outputs and
 * guard elements; integer wraparound; float MIN/MAX NaN and signed-zero rules; the fp32
 * accumulator path (duet_reduce_to_f32 over several inputs, duet_f32_to_dtype) and AVG
 * finishing (duet_reduce_finish_avg, _f32) against the same reference. fp16 kernels run twice:
 * with the CPU's fast path (F16C) where it has one, and with the portable loops
 * (duet_reduce_fast_paths(0)); the fast conversions must match the portable helpers bit for
 * bit on every fp16 pattern and on random float bit patterns, NaNs included.
 *
 * Usage: test_coll_reduce [seed]   (the seed is printed; failures exit 1)
 */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "coll/duet_coll_dtype.h"

static int g_failed;
static int g_only_half; /* the second pass (portable fp16 loops) tests fp16 only */
#define EXPECT(cond, ...)                                                             \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);           \
            fprintf(stderr, __VA_ARGS__);                                             \
            fputc('\n', stderr);                                                      \
            if (++g_failed > 50) {                                                    \
                fprintf(stderr, "too many failures\n");                               \
                exit(1);                                                              \
            }                                                                         \
        }                                                                             \
    } while (0)

/* ------------------------------------------------------------------------------- random */
static uint64_t g_rng;
static uint64_t rnd(void) /* splitmix64 */
{
    uint64_t z = (g_rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double rnd_unit(void) { return (double)(rnd() >> 11) * 0x1p-53; }

/* ------------------------------------------------------------------------------- reference formats
 * A binary float format: mantissa bits (without the hidden one), exponent bits. The value
 * and the rounding are computed from that description only, in double arithmetic. */
typedef struct {
    int mbits, ebits;
} fmt_t;
static const fmt_t FMT_F16 = {10, 5}, FMT_BF16 = {7, 8}, FMT_F32 = {23, 8};

static double ref_value(fmt_t f, uint32_t bits)
{
    int bias = (1 << (f.ebits - 1)) - 1;
    uint32_t m = bits & ((1u << f.mbits) - 1);
    int e = (int)((bits >> f.mbits) & ((1u << f.ebits) - 1));
    int neg = (bits >> (f.mbits + f.ebits)) & 1;
    double v;
    if (e == (1 << f.ebits) - 1) v = m ? NAN : INFINITY;
    else if (e == 0) v = ldexp((double)m, 1 - bias - f.mbits);
    else v = ldexp((double)(m + (1u << f.mbits)), e - bias - f.mbits);
    return neg ? -v : v;
}

static int ref_is_nan(fmt_t f, uint32_t bits)
{
    uint32_t emax = (1u << f.ebits) - 1;
    return ((bits >> f.mbits) & emax) == emax && (bits & ((1u << f.mbits) - 1)) != 0;
}

/* x rounded to nearest even in format f (any double x; NaN -> a quiet NaN). */
static uint32_t ref_round(fmt_t f, double x)
{
    int bias = (1 << (f.ebits - 1)) - 1, emin = 1 - bias;
    uint32_t sign = signbit(x) ? 1u << (f.mbits + f.ebits) : 0;
    uint32_t inf = ((1u << f.ebits) - 1) << f.mbits;
    if (isnan(x)) return sign | inf | (1u << (f.mbits - 1));
    double a = fabs(x);
    if (isinf(a)) return sign | inf;
    int k;
    double fr = frexp(a, &k); /* a = fr * 2^k, fr in [0.5, 1) */
    int e = k - 1;            /* a in [2^e, 2^(e+1)) */
    if (a == 0 || e < emin) /* 0 or subnormal: units of 2^(emin - mbits), 2^mbits of them = least normal */
        return sign | (uint32_t)nearbyint(ldexp(a, f.mbits - emin));
    double q = nearbyint(fr * (double)(2u << f.mbits)); /* mbits + 1 bits, scaled exactly */
    if (q == (double)(2u << f.mbits)) {
        q = (double)(1u << f.mbits);
        e++;
    }
    if (e > bias) return sign | inf;
    return sign | ((uint32_t)(e + bias) << f.mbits) | ((uint32_t)q - (1u << f.mbits));
}

static uint32_t fbits(float x) { uint32_t u; memcpy(&u, &x, 4); return u; }
static float bitsf(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }
static uint64_t dbits(double x) { uint64_t u; memcpy(&u, &x, 8); return u; }
static float ref_f32(double x) { return bitsf(ref_round(FMT_F32, x)); }

static double g_half_value[65536], g_bf16_value[65536]; /* ref_value of every pattern */

/* ------------------------------------------------------------------------------- names */
static void test_names(void)
{
    static const char *const want[] = {"int8", "uint8", "int32", "uint32", "int64",
                                       "uint64", "half", "bfloat16", "float", "double"};
    static const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8};
    static const char *const ops[] = {"sum", "prod", "min", "max", "avg"};
    for (int i = 0; i < DUET_DATATYPE_COUNT; i++) {
        duet_datatype_t dt = (duet_datatype_t)i, got = DUET_DATATYPE_COUNT;
        EXPECT(strcmp(duet_dtype_name(dt), want[i]) == 0, "%d: %s", i, duet_dtype_name(dt));
        EXPECT(duet_datatype_size(dt) == sizes[i], "%s: %zu", want[i], duet_datatype_size(dt));
        EXPECT(duet_dtype_parse(want[i], &got) == 0 && got == dt, "parse %s", want[i]);
        char upper[32];
        size_t n = strlen(want[i]);
        for (size_t j = 0; j <= n; j++) upper[j] = (char)(want[i][j] >= 'a' ? want[i][j] - 32 : want[i][j]);
        got = DUET_DATATYPE_COUNT;
        EXPECT(duet_dtype_parse(upper, &got) == 0 && got == dt, "parse %s", upper);
    }
#define ROW_(E, name, T, size, is_float)                                                  \
    EXPECT(strcmp(duet_dtype_name(E), #name) == 0 && duet_datatype_size(E) == sizeof(T) && \
               (size) == sizeof(T) && (is_float) == (E >= DUET_FLOAT16),                  \
           "table row %s", #name);
    DUET_DTYPE_TABLE(ROW_)
#undef ROW_
    for (int i = 0; i < DUET_OP_COUNT; i++) {
        duet_op_t got = DUET_OP_COUNT;
        EXPECT(strcmp(duet_op_name((duet_op_t)i), ops[i]) == 0, "%d: %s", i, duet_op_name((duet_op_t)i));
        EXPECT(duet_op_parse(ops[i], &got) == 0 && got == (duet_op_t)i, "parse %s", ops[i]);
    }
    static const struct {
        const char *text;
        duet_datatype_t dt;
    } aliases[] = {
        {"fp16", DUET_FLOAT16},  {"float16", DUET_FLOAT16}, {"FP16", DUET_FLOAT16},
        {"f16", DUET_FLOAT16},   {"bf16", DUET_BFLOAT16},   {"fp32", DUET_FLOAT32},
        {"float32", DUET_FLOAT32}, {"f32", DUET_FLOAT32},   {"fp64", DUET_FLOAT64},
        {"float64", DUET_FLOAT64}, {"f64", DUET_FLOAT64},   {"i8", DUET_INT8},
        {"char", DUET_INT8},     {"u8", DUET_UINT8},        {"i32", DUET_INT32},
        {"int", DUET_INT32},     {"u32", DUET_UINT32},      {"uint", DUET_UINT32},
        {"i64", DUET_INT64},     {"u64", DUET_UINT64},
    };
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++) {
        duet_datatype_t got = DUET_DATATYPE_COUNT;
        EXPECT(duet_dtype_parse(aliases[i].text, &got) == 0 && got == aliases[i].dt, "alias %s",
               aliases[i].text);
    }
    duet_op_t op = DUET_OP_COUNT;
    EXPECT(duet_op_parse("MEAN", &op) == 0 && op == DUET_AVG, "mean");
    static const char *const bad[] = {"", "int16", "float 32", "halff", " half", "sum", "fp8"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        duet_datatype_t got = DUET_DATATYPE_COUNT;
        EXPECT(duet_dtype_parse(bad[i], &got) == -1 && got == DUET_DATATYPE_COUNT, "'%s' accepted",
               bad[i]);
    }
    static const char *const badop[] = {"", "add", "sums", "float", "minimum"};
    for (size_t i = 0; i < sizeof badop / sizeof badop[0]; i++) {
        op = DUET_OP_COUNT;
        EXPECT(duet_op_parse(badop[i], &op) == -1 && op == DUET_OP_COUNT, "'%s' accepted", badop[i]);
    }
    duet_datatype_t dt = DUET_DATATYPE_COUNT;
    EXPECT(duet_dtype_parse(NULL, &dt) == -1 && duet_op_parse(NULL, &op) == -1, "NULL accepted");
    EXPECT(duet_datatype_size(DUET_DATATYPE_COUNT) == 0 && duet_datatype_size((duet_datatype_t)-1) == 0,
           "invalid size");
    EXPECT(strcmp(duet_dtype_name(DUET_DATATYPE_COUNT), "invalid") == 0, "invalid name");
    EXPECT(strcmp(duet_op_name((duet_op_t)-1), "invalid") == 0, "invalid op name");
}

/* ------------------------------------------------------------------------------- conversions */
typedef struct {
    const char *name;
    fmt_t fmt;
    const double *value;
    float (*to_f32)(uint16_t);
    uint16_t (*from_f32)(float);
} half_kind_t;
static float f16_to(uint16_t h) { return duet_f16_to_f32(h); }
static uint16_t f16_from(float f) { return duet_f32_to_f16(f); }
static float bf16_to(uint16_t h) { return duet_bf16_to_f32(h); }
static uint16_t bf16_from(float f) { return duet_f32_to_bf16(f); }
static const half_kind_t KINDS[2] = {
    {"fp16", {10, 5}, g_half_value, f16_to, f16_from},
    {"bf16", {7, 8}, g_bf16_value, bf16_to, bf16_from},
};

/* from_f32(x) must equal ref_round(x) (any NaN for a NaN, with x's sign). */
static void check_round(const half_kind_t *k, float x, const char *what)
{
    uint16_t got = k->from_f32(x);
    uint32_t want = ref_round(k->fmt, (double)x);
    if (isnan(x))
        EXPECT(ref_is_nan(k->fmt, got) && (got >> 15) == (fbits(x) >> 31),
               "%s %s: NaN 0x%08x -> 0x%04x", k->name, what, fbits(x), got);
    else
        EXPECT(got == want, "%s %s: %a (0x%08x) -> 0x%04x, want 0x%04x", k->name, what, (double)x,
               fbits(x), got, want);
}

static void test_conversions(void)
{
    for (int ki = 0; ki < 2; ki++) {
        const half_kind_t *k = &KINDS[ki];
        /* every pattern: exact value, round trip */
        for (uint32_t h = 0; h < 65536; h++) {
            float f = k->to_f32((uint16_t)h);
            double want = k->value[h];
            if (isnan(want)) {
                EXPECT(isnan(f) && (fbits(f) >> 31) == (h >> 15), "%s 0x%04x -> %a", k->name, h, (double)f);
                uint16_t back = k->from_f32(f);
                EXPECT(ref_is_nan(k->fmt, back) && (back >> 15) == (h >> 15), "%s NaN 0x%04x -> 0x%04x",
                       k->name, h, back);
            } else {
                EXPECT((double)f == want && !signbit(f) == !signbit(want), "%s 0x%04x -> %a, want %a",
                       k->name, h, (double)f, want);
                EXPECT(k->from_f32(f) == h, "%s round trip 0x%04x -> 0x%04x", k->name, h, k->from_f32(f));
            }
        }
        /* every halfway point between neighbours (finite, both signs; the last one is the
         * point between max finite and Inf, which overflows) and the floats next to it */
        uint32_t emax_bits = ((1u << k->fmt.ebits) - 1) << k->fmt.mbits;
        for (uint32_t h = 0; h < emax_bits; h++) {
            double lo = k->value[h];
            double hi = h + 1 == emax_bits ? ldexp(2.0, (1 << (k->fmt.ebits - 1)) - 1) : k->value[h + 1];
            float mid = (float)((lo + hi) / 2); /* exact: a float has the bits */
            EXPECT((double)mid == (lo + hi) / 2, "%s midpoint after 0x%04x not exact", k->name, h);
            uint32_t even = (h & 1) ? h + 1 : h;
            for (int s = 0; s < 2; s++) {
                float m = s ? -mid : mid;
                uint16_t sb = s ? 0x8000 : 0;
                EXPECT(k->from_f32(m) == (even | sb), "%s tie %a -> 0x%04x, want 0x%04x", k->name,
                       (double)m, k->from_f32(m), even | sb);
                float up = nextafterf(m, s ? -INFINITY : INFINITY), down = nextafterf(m, 0.0f);
                EXPECT(k->from_f32(up) == ((h + 1) | sb), "%s above tie %a -> 0x%04x", k->name, (double)up,
                       k->from_f32(up));
                EXPECT(k->from_f32(down) == (h | sb), "%s below tie %a -> 0x%04x", k->name, (double)down,
                       k->from_f32(down));
            }
        }
        /* random floats: all bit patterns, and ones near the format's range */
        for (int i = 0; i < 400000; i++) {
            check_round(k, bitsf((uint32_t)rnd()), "random");
            uint32_t u = (uint32_t)rnd();
            if (ki == 0) u = (u & 0x807fffffu) | ((uint32_t)(100 + rnd() % 46) << 23);
            check_round(k, bitsf(u), "in range");
        }
    }
    /* tricky values, with the answers written out */
    static const struct {
        float x;
        uint16_t f16, bf16;
    } cases[] = {
        {0.0f, 0x0000, 0x0000},           {-0.0f, 0x8000, 0x8000},
        {1.0f, 0x3c00, 0x3f80},           {-2.0f, 0xc000, 0xc000},
        {65504.0f, 0x7bff, 0x4780},       {65519.996f, 0x7bff, 0x4780},
        {65520.0f, 0x7c00, 0x4780},       {1e10f, 0x7c00, 0x5015},
        {INFINITY, 0x7c00, 0x7f80},       {-INFINITY, 0xfc00, 0xff80},
        {FLT_MAX, 0x7c00, 0x7f80},        {-FLT_MAX, 0xfc00, 0xff80},
        {0x1p-24f, 0x0001, 0x3380},       {0x1p-25f, 0x0000, 0x3300},
        {0x1.000002p-25f, 0x0001, 0x3300}, {0x1.8p-24f, 0x0002, 0x33c0},
        {0x1p-14f, 0x0400, 0x3880},       {0x1.ffcp-15f, 0x0400, 0x3880},
        {0x1.ffp-15f, 0x03fe, 0x3880},    {0x1.002p0f, 0x3c00, 0x3f80},
        {0x1.006p0f, 0x3c02, 0x3f80},     {0x1.01p0f, 0x3c04, 0x3f80},
        {0x1.018p0f, 0x3c06, 0x3f81},     {FLT_MIN, 0x0000, 0x0080},
        {0x1p-149f, 0x0000, 0x0000},      {-0x1p-149f, 0x8000, 0x8000},
        {0x1.fep127f, 0x7c00, 0x7f7f},    {0x1.ff0000p127f, 0x7c00, 0x7f80},
        {0x1.fefffep127f, 0x7c00, 0x7f7f}, {0x1p-133f, 0x0000, 0x0001},
        {0x1p-134f, 0x0000, 0x0000},      {0x1.8p-133f, 0x0000, 0x0002},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        EXPECT(duet_f32_to_f16(cases[i].x) == cases[i].f16, "fp16(%a) = 0x%04x, want 0x%04x",
               (double)cases[i].x, duet_f32_to_f16(cases[i].x), cases[i].f16);
        EXPECT(duet_f32_to_bf16(cases[i].x) == cases[i].bf16, "bf16(%a) = 0x%04x, want 0x%04x",
               (double)cases[i].x, duet_f32_to_bf16(cases[i].x), cases[i].bf16);
    }
    EXPECT(ref_is_nan(FMT_F16, duet_f32_to_f16(NAN)) && ref_is_nan(FMT_BF16, duet_f32_to_bf16(NAN)), "NaN");
    EXPECT(ref_is_nan(FMT_F16, duet_f32_to_f16(bitsf(0x7f800001u))), "sNaN with low payload");
    EXPECT(ref_is_nan(FMT_BF16, duet_f32_to_bf16(bitsf(0xff800001u))), "bf16 sNaN with low payload");
}

/* ------------------------------------------------------------------------------- reference reduction */
static int is_int(duet_datatype_t dt) { return dt <= DUET_UINT64; }
static int is_signed(duet_datatype_t dt) { return dt == DUET_INT8 || dt == DUET_INT32 || dt == DUET_INT64; }
static int int_bits(duet_datatype_t dt);

/* element sizes, from the table (the hot loops below call this, not the library) */
static const size_t g_size[DUET_DATATYPE_COUNT] = {
#define SIZE_(E, name, T, size, is_float) [E] = size,
    DUET_DTYPE_TABLE(SIZE_)
#undef SIZE_
};
static uint64_t get_raw(duet_datatype_t dt, const void *p, size_t i)
{
    switch (g_size[dt]) {
    case 1: return ((const uint8_t *)p)[i];
    case 2: return ((const uint16_t *)p)[i];
    case 4: return ((const uint32_t *)p)[i];
    default: return ((const uint64_t *)p)[i];
    }
}
static void put_raw(duet_datatype_t dt, void *p, size_t i, uint64_t v)
{
    switch (g_size[dt]) {
    case 1: ((uint8_t *)p)[i] = (uint8_t)v; return;
    case 2: ((uint16_t *)p)[i] = (uint16_t)v; return;
    case 4: ((uint32_t *)p)[i] = (uint32_t)v; return;
    default: ((uint64_t *)p)[i] = v; return;
    }
}
static int int_bits(duet_datatype_t dt) { return (int)g_size[dt] * 8; }
/* A signed element's value, sign-extended from its bits. */
static int64_t sext(uint64_t v, int bits)
{
    if (bits == 64) return (int64_t)v;
    uint64_t m = 1ull << (bits - 1);
    v &= (m << 1) - 1;
    return v & m ? -(int64_t)((m << 1) - v) : (int64_t)v;
}
static double get_float(duet_datatype_t dt, uint64_t raw)
{
    switch (dt) {
    case DUET_FLOAT16: return g_half_value[raw];
    case DUET_BFLOAT16: return g_bf16_value[raw];
    case DUET_FLOAT32: return (double)bitsf((uint32_t)raw); /* exact, by C's rules */
    default: { double d; memcpy(&d, &raw, 8); return d; }
    }
}
/* double -> the type's bits, rounded once (double: already exact) */
static uint64_t put_float(duet_datatype_t dt, double v)
{
    switch (dt) {
    case DUET_FLOAT16: return ref_round(FMT_F16, v);
    case DUET_BFLOAT16: return ref_round(FMT_BF16, v);
    case DUET_FLOAT32: return ref_round(FMT_F32, v);
    default: return dbits(v);
    }
}
/* MIN/MAX as documented: NaN propagates, -0 < +0 */
static double ref_minmax(duet_op_t op, double a, double b)
{
    if (isnan(a) || isnan(b)) return NAN;
    if (a == b) {
        if (a != 0) return a;
        int neg = op == DUET_MIN ? (signbit(a) || signbit(b)) : (signbit(a) && signbit(b));
        return neg ? -0.0 : 0.0;
    }
    return (op == DUET_MIN) == (a < b) ? a : b;
}
/* x op y, exact or rounded once in double */
static double ref_float_op(duet_op_t op, double x, double y)
{
    return op == DUET_PROD ? x * y : op == DUET_MIN || op == DUET_MAX ? ref_minmax(op, x, y) : x + y;
}
/* Bits of one element of dt */
static uint64_t elem_mask(duet_datatype_t dt)
{
    return g_size[dt] == 8 ? ~0ull : (1ull << (8 * g_size[dt])) - 1;
}
/* One element of a op b, as bits of dt. Float sums and products of two fp16 / bf16 / fp32 values
 * are exact in double or within double's 2p+2 bits, so rounding the double gives the correctly
 * rounded result; double itself is checked against C's own arithmetic. */
static uint64_t ref_op(duet_datatype_t dt, duet_op_t op, uint64_t a, uint64_t b)
{
    if (is_int(dt)) {
        int bits = int_bits(dt);
        uint64_t mask = bits == 64 ? ~0ull : (1ull << bits) - 1;
        int lt = is_signed(dt) ? sext(a, bits) < sext(b, bits) : (a & mask) < (b & mask);
        switch (op) {
        case DUET_SUM: case DUET_AVG: return (a + b) & mask;
        case DUET_PROD: return (a * b) & mask;
        case DUET_MIN: return lt ? a : b;
        default: return lt ? b : a;
        }
    }
    return put_float(dt, ref_float_op(op, get_float(dt, a), get_float(dt, b)));
}
static int same_elem(duet_datatype_t dt, uint64_t got, uint64_t want)
{
    if (dt == DUET_FLOAT16 || dt == DUET_BFLOAT16)
        return got == want || (ref_is_nan(dt == DUET_FLOAT16 ? FMT_F16 : FMT_BF16, (uint32_t)got) &&
                               ref_is_nan(dt == DUET_FLOAT16 ? FMT_F16 : FMT_BF16, (uint32_t)want));
    if (dt == DUET_FLOAT32)
        return got == want || (isnan(bitsf((uint32_t)got)) && isnan(bitsf((uint32_t)want)));
    if (dt == DUET_FLOAT64) {
        double g, w;
        memcpy(&g, &got, 8), memcpy(&w, &want, 8);
        return got == want || (isnan(g) && isnan(w));
    }
    return got == want;
}

/* Random elements: integers all bits; floats mostly moderate values (so that products stay
 * mostly finite), one in 16 a special: +-0, +-Inf, NaN, a subnormal, the largest finite. */
static uint64_t rnd_elem(duet_datatype_t dt)
{
    if (is_int(dt)) return rnd();
    double range = dt == DUET_FLOAT16 ? 200 : dt == DUET_BFLOAT16 ? 1e15 : 1e30;
    uint64_t r = rnd();
    double v;
    switch (r & 15 ? 16 : (r >> 4) % 8) {
    case 0: v = 0.0; break;
    case 1: v = -0.0; break;
    case 2: v = (r >> 8) & 1 ? INFINITY : -INFINITY; break;
    case 3: v = NAN; break;
    case 4: v = dt == DUET_FLOAT16 ? 0x1p-20 : dt == DUET_FLOAT64 ? 0x1p-1060 : 0x1p-130; break;
    case 5: /* the largest finite value */
        v = dt == DUET_FLOAT16    ? 65504.0
            : dt == DUET_BFLOAT16 ? 0x1.fep127
            : dt == DUET_FLOAT64  ? DBL_MAX
                                  : FLT_MAX;
        break;
    case 6: v = rnd_unit() * 1e-3; break;
    default: v = (rnd_unit() * 2 - 1) * (rnd() & 1 ? range : 1.0); break;
    }
    if (dt == DUET_FLOAT64) return dbits(v);
    return put_float(dt, v);
}

/* ------------------------------------------------------------------------------- duet_reduce_op */
#define GUARD 4 /* elements on each side of every output, checked after each call */
#define POISON 0xa5

static void *buf_alloc(size_t n, size_t es) { return malloc((n + 2 * GUARD + 1) * es); }

static void check_guards(const char *what, duet_datatype_t dt, const uint8_t *base, size_t n, size_t es)
{
    for (size_t i = 0; i < GUARD * es; i++) {
        EXPECT(base[i] == POISON, "%s %s: guard before the output overwritten", what, duet_dtype_name(dt));
        EXPECT(base[(GUARD + n) * es + i] == POISON, "%s %s n=%zu: guard after the output overwritten",
               what, duet_dtype_name(dt), n);
    }
}

static void test_reduce_op(void)
{
    static const size_t counts[] = {0, 1, 7, 1000, 1003, 1u << 20};
    static const char *const modes[] = {"out of place", "dst == a", "dst == b", "dst == a == b"};
    size_t nmax = 1u << 20;
    for (int d = 0; d < DUET_DATATYPE_COUNT; d++) {
        duet_datatype_t dt = (duet_datatype_t)d;
        if (g_only_half && dt != DUET_FLOAT16) continue;
        size_t es = duet_datatype_size(dt);
        uint8_t *a = buf_alloc(nmax, es), *b = buf_alloc(nmax, es), *o = buf_alloc(nmax, es);
        uint8_t *want = malloc(nmax * es + 1);
        for (size_t i = 0; i < nmax; i++) {
            put_raw(dt, a, i, rnd_elem(dt));
            put_raw(dt, b, i, rnd_elem(dt));
        }
        for (int p = 0; p < DUET_OP_COUNT; p++) {
            duet_op_t op = (duet_op_t)p;
            for (size_t i = 0; i < nmax; i++)
                put_raw(dt, want, i, ref_op(dt, op, get_raw(dt, a, i), get_raw(dt, b, i)));
            for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
                size_t n = counts[c];
                for (int mode = 0; mode < 4; mode++) {
                    if (n == nmax && mode != 0) continue; /* aliasing: the small counts cover it */
                    /* an offset of one element (off the 16-byte alignment) on odd counts */
                    size_t off = n & 1 ? 1 : 0;
                    uint8_t *ia = o + (GUARD + off) * es, *ib = ia, *dst = ia;
                    memset(o, POISON, (n + 2 * GUARD + 1) * es);
                    if (mode == 0) { /* out of place: inputs at their own offsets */
                        ia = a + off * es;
                        ib = b;
                    } else if (mode == 1) {
                        memcpy(dst, a + off * es, n * es);
                        ib = b;
                    } else if (mode == 2) {
                        memcpy(dst, b, n * es);
                        ia = a + off * es;
                    } else {
                        memcpy(dst, a + off * es, n * es);
                    }
                    duet_reduce_op(dt, op, dst, ia, ib, n);
                    check_guards(modes[mode], dt, o + off * es, n, es);
                    for (size_t i = 0; i < n; i++) {
                        /* the operands: a[i + off] and b[i] (a[i + off] twice when dst == a == b) */
                        uint64_t x = get_raw(dt, a, i + off), y = mode == 3 ? x : get_raw(dt, b, i);
                        uint64_t w = mode == 3 || off ? ref_op(dt, op, x, y) : get_raw(dt, want, i);
                        uint64_t g = get_raw(dt, dst, i);
                        if (!same_elem(dt, g, w)) {
                            EXPECT(0, "%s %s n=%zu %s [%zu]: 0x%" PRIx64 " op 0x%" PRIx64 " = 0x%" PRIx64
                                   ", want 0x%" PRIx64, duet_dtype_name(dt), duet_op_name(op), n, modes[mode],
                                   i, x, y, g, w);
                            break;
                        }
                    }
                }
            }
        }
        free(a), free(b), free(o), free(want);
    }
}

/* The rules that random data rarely hits, written out. */
static void test_reduce_cases(void)
{
    struct {
        duet_datatype_t dt;
        duet_op_t op;
        uint64_t a, b, want;
    } cases[] = {
        {DUET_INT32, DUET_SUM, INT32_MAX, 1, (uint32_t)INT32_MIN},
        {DUET_UINT8, DUET_SUM, 255, 1, 0},
        {DUET_INT8, DUET_SUM, (uint8_t)-128, (uint8_t)-1, 127},
        {DUET_INT8, DUET_PROD, 100, 3, 44},
        {DUET_UINT8, DUET_PROD, 255, 255, 1},
        {DUET_INT64, DUET_PROD, (uint64_t)INT64_MIN, (uint64_t)-1, (uint64_t)INT64_MIN},
        {DUET_INT64, DUET_SUM, (uint64_t)INT64_MAX, 1, (uint64_t)INT64_MIN},
        {DUET_UINT64, DUET_PROD, UINT64_MAX, UINT64_MAX, 1},
        {DUET_UINT32, DUET_PROD, 0x10000, 0x10000, 0},
        {DUET_INT32, DUET_MIN, (uint32_t)-5, 3, (uint32_t)-5},
        {DUET_UINT32, DUET_MIN, (uint32_t)-5, 3, 3},
        {DUET_INT8, DUET_MAX, (uint8_t)-5, 3, 3},
        {DUET_FLOAT32, DUET_MIN, 0x80000000u, 0, 0x80000000u},
        {DUET_FLOAT32, DUET_MIN, 0, 0x80000000u, 0x80000000u},
        {DUET_FLOAT32, DUET_MAX, 0x80000000u, 0, 0},
        {DUET_FLOAT32, DUET_MAX, 0, 0x80000000u, 0},
        {DUET_FLOAT64, DUET_MIN, 1ull << 63, 0, 1ull << 63},
        {DUET_FLOAT64, DUET_MAX, 0, 1ull << 63, 0},
        {DUET_FLOAT16, DUET_MIN, 0x8000, 0, 0x8000},
        {DUET_BFLOAT16, DUET_MAX, 0x8000, 0, 0},
        {DUET_FLOAT16, DUET_PROD, 0x5cb0, 0x5cb0, 0x7c00}, /* 300 * 300 -> Inf */
        {DUET_FLOAT16, DUET_SUM, 0x7bff, 0x3c00, 0x7bff},  /* 65504 + 1 */
        {DUET_FLOAT16, DUET_SUM, 0x7bff, 0x4c00, 0x7c00},  /* 65504 + 16: a tie, odd -> Inf */
        {DUET_FLOAT16, DUET_SUM, 0x0001, 0x8001, 0x0000},  /* subnormals cancel to +0 */
        {DUET_BFLOAT16, DUET_SUM, 0x3f80, 0x3b80, 0x3f80}, /* 1 + 2^-8: tie to even */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t out = 0;
        duet_reduce_op(cases[i].dt, cases[i].op, &out, &cases[i].a, &cases[i].b, 1); /* little endian */
        uint64_t mask = elem_mask(cases[i].dt);
        EXPECT((out & mask) == (cases[i].want & mask), "%s %s 0x%" PRIx64 " 0x%" PRIx64 " = 0x%" PRIx64
               ", want 0x%" PRIx64, duet_dtype_name(cases[i].dt), duet_op_name(cases[i].op), cases[i].a,
               cases[i].b, out & mask, cases[i].want);
    }
    /* NaN propagates through MIN and MAX from either side, for every float type */
    for (int d = DUET_FLOAT16; d <= DUET_FLOAT64; d++) {
        duet_datatype_t dt = (duet_datatype_t)d;
        uint64_t nan = put_float(dt, NAN), one = put_float(dt, 1.0), out = 0;
        for (int s = 0; s < 4; s++) {
            duet_op_t op = s & 1 ? DUET_MAX : DUET_MIN;
            duet_reduce_op(dt, op, &out, s & 2 ? &nan : &one, s & 2 ? &one : &nan, 1);
            EXPECT(same_elem(dt, out & elem_mask(dt), nan),
                   "%s %s with NaN: 0x%" PRIx64, duet_dtype_name(dt), duet_op_name(op), out);
        }
    }
}

/* ------------------------------------------------------------------------------- fp32 accumulator */
static void test_accumulate(void)
{
    static const duet_datatype_t types[] = {DUET_FLOAT16, DUET_BFLOAT16, DUET_FLOAT32};
    static const size_t counts[] = {0, 1, 7, 1000, 1003, 65537};
    enum { NIN = 5 };
    size_t nmax = 65537;
    float *acc = malloc(nmax * sizeof(float));
    float *ref = malloc(nmax * sizeof(float));
    for (size_t t = 0; t < 3; t++) {
        duet_datatype_t dt = types[t];
        if (g_only_half && dt != DUET_FLOAT16) continue;
        size_t es = duet_datatype_size(dt);
        uint8_t *in[NIN], *out = buf_alloc(nmax, es);
        for (int k = 0; k < NIN; k++) {
            in[k] = malloc(nmax * es);
            for (size_t i = 0; i < nmax; i++) put_raw(dt, in[k], i, rnd_elem(dt));
        }
        for (int p = 0; p < DUET_OP_COUNT; p++) {
            duet_op_t op = (duet_op_t)p;
            for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
                size_t n = counts[c];
                for (int k = 0; k < NIN; k++) duet_reduce_to_f32(dt, op, acc, in[k], n, k == 0);
                if (op == DUET_AVG) duet_reduce_finish_avg_f32(acc, n, NIN);
                memset(out, POISON, (n + 2 * GUARD + 1) * es);
                duet_f32_to_dtype(dt, out + GUARD * es, acc, n);
                check_guards("f32_to_dtype", dt, out, n, es);
                for (size_t i = 0; i < n; i++) {
                    /* the reference folds the same inputs in the same order, each step rounded
                     * to fp32 by ref_round (exact double op, then one rounding) */
                    double r = get_float(dt, get_raw(dt, in[0], i));
                    for (int k = 1; k < NIN; k++) {
                        double x = get_float(dt, get_raw(dt, in[k], i));
                        r = ref_f32(ref_float_op(op, r, x));
                    }
                    if (op == DUET_AVG) r = ref_f32(r / NIN);
                    ref[i] = (float)r;
                    if (!same_elem(DUET_FLOAT32, fbits(acc[i]), fbits(ref[i]))) {
                        EXPECT(0, "%s %s acc n=%zu [%zu]: %a, want %a", duet_dtype_name(dt), duet_op_name(op),
                               n, i, (double)acc[i], (double)ref[i]);
                        break;
                    }
                    uint64_t g = get_raw(dt, out + GUARD * es, i), w = put_float(dt, r);
                    if (!same_elem(dt, g, w)) {
                        EXPECT(0, "%s %s n=%zu [%zu]: got 0x%" PRIx64 " want 0x%" PRIx64 " (acc %a)",
                               duet_dtype_name(dt), duet_op_name(op), n, i, g, w, r);
                        break;
                    }
                }
            }
        }
        for (int k = 0; k < NIN; k++) free(in[k]);
        free(out);
    }
    /* types without an fp32 accumulator: nothing is written */
    float sentinel[4] = {1, 2, 3, 4};
    int32_t ints[4] = {5, 6, 7, 8};
    duet_reduce_to_f32(DUET_INT32, DUET_SUM, sentinel, ints, 4, 1);
    duet_f32_to_dtype(DUET_INT32, ints, sentinel, 4);
    EXPECT(sentinel[0] == 1 && sentinel[3] == 4 && ints[0] == 5 && ints[3] == 8, "non-float type written");
    EXPECT(duet_dtype_has_f32_acc(DUET_FLOAT16) && duet_dtype_has_f32_acc(DUET_BFLOAT16) &&
               duet_dtype_has_f32_acc(DUET_FLOAT32) && !duet_dtype_has_f32_acc(DUET_FLOAT64) &&
               !duet_dtype_has_f32_acc(DUET_INT8),
           "has_f32_acc");
    free(acc), free(ref);
}

/* ------------------------------------------------------------------------------- AVG finishing */
static void test_finish_avg(void)
{
    static const int nranks[] = {1, 2, 3, 7, 8, 200};
    size_t n = 1001;
    for (int d = 0; d < DUET_DATATYPE_COUNT; d++) {
        duet_datatype_t dt = (duet_datatype_t)d;
        if (g_only_half && dt != DUET_FLOAT16) continue;
        size_t es = duet_datatype_size(dt);
        uint8_t *src = malloc(n * es), *buf = buf_alloc(n, es);
        for (size_t i = 0; i < n; i++) put_raw(dt, src, i, rnd_elem(dt));
        for (size_t r = 0; r < sizeof nranks / sizeof nranks[0]; r++) {
            int nr = nranks[r];
            memset(buf, POISON, (n + 2 * GUARD + 1) * es);
            memcpy(buf + GUARD * es, src, n * es);
            duet_reduce_finish_avg(dt, buf + GUARD * es, n, nr);
            check_guards("finish_avg", dt, buf, n, es);
            for (size_t i = 0; i < n; i++) {
                uint64_t x = get_raw(dt, src, i), w;
                if (is_int(dt) && is_signed(dt)) w = (uint64_t)(sext(x, int_bits(dt)) / nr);
                else if (is_int(dt)) w = x / (uint64_t)nr;
                else if (dt == DUET_FLOAT64) w = dbits(get_float(dt, x) / nr);
                else w = put_float(dt, ref_f32(get_float(dt, x) / nr)); /* fp32 quotient, rounded once */
                w &= elem_mask(dt);
                uint64_t g = get_raw(dt, buf + GUARD * es, i);
                if (!same_elem(dt, g, w)) {
                    EXPECT(0, "%s avg /%d [%zu]: 0x%" PRIx64 " -> 0x%" PRIx64 ", want 0x%" PRIx64,
                           duet_dtype_name(dt), nr, i, x, g, w);
                    break;
                }
            }
        }
        free(src), free(buf);
    }
    int32_t iv[3] = {-7, 7, INT32_MIN};
    duet_reduce_finish_avg(DUET_INT32, iv, 3, 2);
    EXPECT(iv[0] == -3 && iv[1] == 3 && iv[2] == INT32_MIN / 2, "int32 avg: %d %d %d", iv[0], iv[1], iv[2]);
    int8_t i8[2] = {-128, 127};
    duet_reduce_finish_avg(DUET_INT8, i8, 2, 3);
    EXPECT(i8[0] == -42 && i8[1] == 42, "int8 avg: %d %d", i8[0], i8[1]);
    float f[2] = {1.0f, 0.0f};
    duet_reduce_finish_avg(DUET_FLOAT32, f, 2, 3);
    EXPECT(f[0] == 1.0f / 3.0f, "float avg divides: %a", (double)f[0]);
    duet_reduce_finish_avg(DUET_FLOAT32, f, 2, 0); /* refused: nothing happens */
    EXPECT(f[0] == 1.0f / 3.0f, "nranks 0 changed the buffer");
}

/* ------------------------------------------------------------------------------- fast = portable */
static void test_fast_paths_agree(void)
{
    size_t n = 1u << 18;
    uint16_t *h = malloc(n * sizeof *h);
    float *f = malloc(n * sizeof *f);
    for (uint32_t i = 0; i < 65536; i++) h[i] = (uint16_t)i;
    duet_reduce_to_f32(DUET_FLOAT16, DUET_SUM, f, h, 65536, 1);
    for (uint32_t i = 0; i < 65536; i++)
        EXPECT(fbits(f[i]) == fbits(duet_f16_to_f32((uint16_t)i)), "fp16 0x%04x: kernel 0x%08x, helper 0x%08x",
               i, fbits(f[i]), fbits(duet_f16_to_f32((uint16_t)i)));
    for (size_t i = 0; i < n; i++) f[i] = bitsf((uint32_t)rnd());
    f[0] = NAN, f[1] = bitsf(0x7f800001u), f[2] = bitsf(0xffc01234u), f[3] = 65520.0f, f[4] = 0x1p-25f;
    duet_f32_to_dtype(DUET_FLOAT16, h, f, n);
    for (size_t i = 0; i < n; i++) {
        if (h[i] != duet_f32_to_f16(f[i])) {
            EXPECT(0, "float 0x%08x: kernel 0x%04x, helper 0x%04x", fbits(f[i]), h[i], duet_f32_to_f16(f[i]));
            break;
        }
    }
    free(h), free(f);
}

int main(int argc, char **argv)
{
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : (uint64_t)time(NULL) ^ ((uint64_t)clock() << 32);
    printf("test_coll_reduce: seed %" PRIu64 "\n", seed);
    fflush(stdout);
    g_rng = seed;
    for (uint32_t h = 0; h < 65536; h++) {
        g_half_value[h] = ref_value(FMT_F16, h);
        g_bf16_value[h] = ref_value(FMT_BF16, h);
    }
    test_names();
    test_conversions();
    test_fast_paths_agree();
    for (int pass = 0; pass < 2; pass++) { /* pass 1: fp16 through the portable loops */
        g_only_half = pass;
        EXPECT(duet_reduce_fast_paths(!pass) == 1, "fast path setting");
        test_reduce_cases();
        test_reduce_op();
        test_accumulate();
        test_finish_avg();
    }
    EXPECT(duet_reduce_fast_paths(1) == 0, "fast path setting");
    if (g_failed) {
        fprintf(stderr, "test_coll_reduce: %d failures (seed %" PRIu64 ")\n", g_failed, seed);
        return 1;
    }
    printf("test_coll_reduce: ok\n");
    return 0;
}
