/*
 * coll_expect.c — what test_coll's cases must produce (a part of test_coll, with test_coll.c):
 * each rank's inputs, the reference results and their bounds, what every buffer element must
 * hold, and the status a forced algorithm that cannot run a call must give.
 *
 * Inputs: element i of rank r's send buffer in case k is a function of (seed, k, r, i), so
 * every rank computes every other rank's input; rank 0's seed is shared through a symmetric
 * word (one-sided put + barrier, not a collective under test).
 *   integers: random bits (PROD: 3 of 4 elements small, -4..4, so products wrap sometimes but not
 *             always to 0); compared exactly, the reference computed in uint64_t (wraparound),
 *             AVG = the wrapped sum / nranks truncated toward 0.
 *   floats:   SUM, AVG: +-[2^-8, 1); PROD: +-[0.5, 2) (no overflow); MIN, MAX: +-[2^-10, 2^11),
 *             with +-0, +-inf, NaN and subnormals mixed in, elements where every rank has a zero
 *             of random sign and elements where every rank has the same value.
 * Float reference and bound. E = the exact result (long double from the decoded inputs),
 * S = sum of |x_r|, n = ranks, u = unit roundoff of the accumulation type (fp32 for fp16,
 * bf16 and fp32: 2^-24; fp64: 2^-53), v = unit roundoff of the output type when it is
 * narrower (fp16 2^-11, bf16 2^-8; else 0), t = half its smallest subnormal (fp16 2^-25, bf16
 * 2^-134; else 0). The result R must satisfy
 *     SUM   |R - E|   <= A + v (|E| + A) + t,   A = 2 (n-1) u S
 *     AVG   |R - E/n| <= A + v (|E/n| + A) + t, A = 2 (n-1) u S / n + 2 u |E/n|
 *     PROD  |R - E|   <= A + v (|E| + A) + t,   A = 2 (n-1) u |E|
 * i.e. twice the first-order bound of n-1 roundings in the accumulation type in any order, plus
 * ONE rounding to fp16/bf16 at the end. A result rounded to fp16 after every step misses it: on
 * these inputs 12% (3 ranks) to 37% (8 ranks) of the SUM elements fall outside (simulated).
 * MIN / MAX: exact bits; a NaN anywhere gives a NaN (any); -0 < +0.
 */
#include "duet_test.h"
#include "test_coll.h"

#include <math.h>

/* The table of src/coll/duet_coll_tune.c, as DUET_ALGO spells it. */
static const char *const algo_table[NCOLL][10] = {
    [AR] = {"ring", "tree", "dbtree", "rd", "rhd", "oneshot", "twoshot", "hring", "hdbtree"},
    [BC] = {"chain", "tree", "htree"}, [RD] = {"chain", "tree", "htree"}, [AG] = {"ring", "rd", "direct"},
    [RS] = {"ring", "rhd", "direct"}, [A2A] = {"pairwise"}};

const dtinfo_t DT[DUET_DATATYPE_COUNT] = {
    {"int8", 1, 0, 1, 0, 0},   {"uint8", 1, 0, 0, 0, 0},      {"int32", 4, 0, 1, 0, 0},
    {"uint32", 4, 0, 0, 0, 0}, {"int64", 8, 0, 1, 0, 0},      {"uint64", 8, 0, 0, 0, 0},
    {"half", 2, 1, 1, 5, 10},  {"bfloat16", 2, 1, 1, 8, 7},   {"float", 4, 1, 1, 8, 23},
    {"double", 8, 1, 1, 11, 52}};

/* ------------------------------------------------------------------ element bits */
/* (the others: test_coll.h) */
/* A float of format d from its bits, exactly (fp16 and bf16 rebuilt as fp32 bit patterns);
 * *nan set for a NaN. */
static long double fdecode(const dtinfo_t *d, uint64_t b, int *nan)
{
    uint64_t emax = (1ull << d->ebits) - 1, m = b & ((1ull << d->mbits) - 1), e = (b >> d->mbits) & emax;
    uint32_t sign = (uint32_t)(b >> (d->ebits + d->mbits)) << 31, u;
    float f;
    double g;
    *nan = e == emax && m;
    switch (d->es) {
    case 8: memcpy(&g, &b, 8); return g;
    case 4: u = (uint32_t)b; break;
    default:
        if (d->ebits == 8) u = (uint32_t)b << 16; /* bf16: the top half of a float */
        else if (e == emax) u = sign | 0x7f800000u | (uint32_t)m << 13;
        else if (e) u = sign | (uint32_t)(e + 112) << 23 | (uint32_t)m << 13;
        else { /* fp16 subnormal: m * 2^-24, exact in fp32 */
            f = (float)m * 0x1p-24f;
            return sign ? -f : f;
        }
    }
    memcpy(&f, &u, 4);
    return f;
}

/* ------------------------------------------------------------------ inputs */
/* Bits of element i of rank `rank`'s input in the case with key K. */
uint64_t tc_gen(int dt, int op, uint64_t K, int rank, size_t i)
{
    const dtinfo_t *d = &DT[dt];
    int minmax = op == DUET_MIN || op == DUET_MAX;
    int same = d->flt && minmax && i % 13 == 6; /* every rank has the same value */
    uint64_t u = mix(K ^ ((uint64_t)(same ? 0xffff : rank) << 48) ^ i * 0xd6e8feb86659fd93ull);
    if (!d->flt || op == RAW) {
        if (op == DUET_PROD && (u & 3)) {
            uint64_t v = (u >> 8) % 9;
            return (d->sgn ? (uint64_t)((int64_t)v - 4) : v) & mask_of(d->es);
        }
        return u & mask_of(d->es);
    }
    int eb = d->ebits, mb = d->mbits, bias = (1 << (eb - 1)) - 1, e;
    uint64_t sign = u >> 63, mant = (u >> 8) & ((1ull << mb) - 1), emax = (1ull << eb) - 1;
    if (op == DUET_PROD) {
        e = (u & 1) ? 0 : -1;
    } else if (minmax) {
        int special = (int)((u >> 1) & 63);
        if (i % 13 == 5 || special == 0) return sign << (eb + mb);                      /* +-0 */
        if (special == 1) return sign << (eb + mb) | emax << mb;                          /* +-inf */
        if (special == 2) return sign << (eb + mb) | emax << mb | mant | 1;               /* NaN */
        if (special == 3) return sign << (eb + mb) | mant | 1;                            /* subnormal */
        e = (int)((u >> 1) % 21) - 10;
    } else {
        e = -(int)((u >> 1) & 7);
    }
    return sign << (eb + mb) | (uint64_t)(e + bias) << mb | mant;
}

/* ------------------------------------------------------------------ reference */

/* The reduction over ranks of element i of every rank's input. */
void tc_reference(int dt, int op, uint64_t K, size_t i, ref_t *r)
{
    const dtinfo_t *d = &DT[dt];
    memset(r, 0, sizeof *r);
    if (!d->flt) {
        uint64_t m = mask_of(d->es), acc = op == DUET_PROD ? 1 : 0;
        for (int p = 0; p < np; p++) {
            uint64_t x = tc_gen(dt, op, K, p, i);
            int less = d->sgn ? sext(x, d->es) < sext(acc, d->es) : x < acc;
            if (op == DUET_SUM || op == DUET_AVG) acc += x;
            else if (op == DUET_PROD) acc *= x;
            else if (p == 0 || (op == DUET_MIN ? less : !less && x != acc)) acc = x;
        }
        acc &= m;
        if (op == DUET_AVG) acc = d->sgn ? (uint64_t)(sext(acc, d->es) / np) & m : acc / (uint64_t)np;
        r->exact = 1;
        r->bits = acc;
        return;
    }
    long double sum = 0, abs_sum = 0, prod = 1, best = 0;
    for (int p = 0; p < np; p++) {
        int nan;
        uint64_t b = tc_gen(dt, op, K, p, i);
        long double x = fdecode(d, b, &nan);
        r->nan |= nan;
        sum += x, abs_sum += fabsl(x), prod *= x;
        if (nan) continue;
        int lt = x < best || (x == best && signbit(x) && !signbit(best));
        int gt = x > best || (x == best && !signbit(x) && signbit(best));
        if (p == 0 || (op == DUET_MIN ? lt : gt)) best = x, r->bits = b;
    }
    if (op == DUET_MIN || op == DUET_MAX) {
        r->exact = !r->nan;
        return;
    }
    long double u = dt == DUET_FLOAT64 ? 0x1p-53L : 0x1p-24L, n = np, a;
    long double v = dt == DUET_FLOAT16 ? 0x1p-11L : dt == DUET_BFLOAT16 ? 0x1p-8L : 0;
    long double t = dt == DUET_FLOAT16 ? 0x1p-25L : dt == DUET_BFLOAT16 ? 0x1p-134L : 0;
    if (op == DUET_PROD) r->val = prod, a = 2 * (n - 1) * u * fabsl(prod);
    else if (op == DUET_SUM) r->val = sum, a = 2 * (n - 1) * u * abs_sum;
    else r->val = sum / n, a = 2 * (n - 1) * u * abs_sum / n + 2 * u * fabsl(sum / n);
    r->tol = a + v * (fabsl(r->val) + a) + t;
}

/* "" if the element at p is what r wants, else a description of both. */
int tc_ref_match(int dt, const ref_t *r, const char *p, char *why, size_t len)
{
    const dtinfo_t *d = &DT[dt];
    uint64_t b = load_bits(p, d->es);
    int nan = 0;
    long double x = d->flt ? fdecode(d, b, &nan) : 0;
    int ok = r->exact ? b == r->bits : r->nan ? nan : !nan && fabsl(x - r->val) <= r->tol;
    if (!ok)
        snprintf(why, len, "got 0x%" PRIx64 " (%Lg), want %s0x%" PRIx64 " (%Lg +- %Lg)", b, x,
                 r->nan ? "a NaN, not " : r->exact ? "" : "about ", r->bits, r->val, r->tol);
    return ok;
}

/* ------------------------------------------------------------------ one case */

/* What element j of a buffer must hold: which = 'S' (send, out of place), 'R' (receive, out
 * of place), 'B' (the one buffer in place); after = 0 before the call (or after a failed one). */
want_t tc_want_of(const case_t *c, int which, size_t j, int after)
{
    size_t n = c->count, mine_lo = (size_t)me * n;
    int root = me == c->root, my_block = j >= mine_lo && j < mine_lo + n;
    want_t in = {W_INPUT, me, j}, poison = {W_POISON, 0, 0}, red = {W_REDUCE, 0, j};
    if (which == 'S') return c->coll == BC && !root ? poison : in;
    if (which == 'B' && !after) {
        if (c->coll == BC && !root) return poison;
        if (c->coll == AG) return my_block ? (want_t){W_INPUT, me, j - mine_lo} : poison;
        return in;
    }
    if (which == 'R' && !after) return poison;
    switch (c->coll) {
    case AR: return red;
    case BC: return (want_t){W_INPUT, c->root, j};
    case RD: return root ? red : which == 'B' ? in : poison;
    case AG: return (want_t){W_INPUT, (int)(j / n), j % n};
    case RS: return which == 'R' ? (want_t){W_REDUCE, 0, mine_lo + j} : my_block ? red : in;
    default: return (want_t){W_INPUT, (int)(j / n), mine_lo + j % n};
    }
}

static int is_pow2(int n) { return (n & (n - 1)) == 0; }

/* The hosts the collectives see: DUET_COLL_RANKS_PER_HOST's blocks (the library's test
 * setting), else tests/net's hosts of DUET_TEST_RANKS_PER_HOST ranks, else one. */
static int hosts_of_run(void)
{
    const char *fake = getenv("DUET_COLL_RANKS_PER_HOST"), *real = getenv("DUET_TEST_RANKS_PER_HOST");
    int per = fake && atoi(fake) > 0 ? atoi(fake) : real && atoi(real) > 0 ? atoi(real) : np;
    return (np + per - 1) / per;
}

/* The status every rank must get for this case (DUET_OK: the call must work). */
duet_status_t tc_expected_status(const case_t *c)
{
    const char *f = forced[c->coll];
    if (f[0]) {
        int known = 0;
        for (int i = 0; algo_table[c->coll][i]; i++) known |= strcmp(algo_table[c->coll][i], f) == 0;
        if (!known) return DUET_ERR_INVALID_ARG;
        if (c->coll == AG && !strcmp(f, "rd") && !is_pow2(np)) return DUET_ERR_INVALID_ARG;
        if (c->coll == RS && !strcmp(f, "rhd") && !is_pow2(np)) return DUET_ERR_INVALID_ARG;
        if (f[0] == 'h' && hosts_of_run() < 2) return DUET_ERR_INVALID_ARG; /* hierarchical, one host */
    }
    if (c->coll == A2A && c->inplace && np > 1) return DUET_ERR_INVALID_ARG; /* or UNSUPPORTED, unforced */
    return DUET_OK;
}

