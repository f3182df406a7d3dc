/*
 * test_coll.c — every collective x datatype x op, verified element by element, run by every
 * rank under duetrun; coll.cmake runs it once per algorithm of the tuner's table (forced with
 * -x DUET_ALGO=<collective>:<algorithm>) and once with the tuner's own choice, at 1 2 3 4 5 7 8
 * ranks.
 *
 * Covers:
 *   - duet_allreduce, duet_reduce, duet_reduce_scatter: all 10 datatypes x SUM PROD MIN MAX AVG;
 *     duet_broadcast, duet_allgather, duet_alltoall: all 10 datatypes (random bit patterns,
 *     NaNs included: moved data must come out bit for bit);
 *   - counts 0 (also with NULL buffers), 1, 7, 1001 (fewer than, and not a multiple of, the rank
 *     count), and about 3 MiB for a few (datatype, op) pairs (many chunks, odd count);
 *   - out of place and in place (duet.h: sendbuf == recvbuf; allgather sendbuf = recvbuf +
 *     rank * count; reduce-scatter recvbuf = sendbuf + rank * count), buffers aligned as malloc
 *     returns them or one element off; broadcast roots and reduce roots vary by case, non-roots
 *     pass NULL (broadcast sendbuf, reduce recvbuf) or a poisoned buffer that must stay so;
 *   - outputs poisoned (random bytes) before each call, 64 guard bytes on both sides of every
 *     buffer checked untouched, inputs (const) checked unchanged, every output element checked;
 *   - all ranks got bit-identical allreduce results (hashes of every result exchanged by one-sided
 *     puts). Large allreduce results (count > SHARE_ABOVE) are checked against the reference in
 *     shares, rank r the r-th n-th of the elements (guards, poison and inputs in full): with the
 *     results bit-identical everywhere, every element is still checked on every rank, at 1/n of
 *     the cost (8 ranks on 2 cores otherwise spend seconds recomputing the reference);
 *   - forced algorithms that cannot run a call (rd allgather and rhd reduce-scatter at a rank
 *     count that is not a power of two, pairwise all-to-all in place, a name that is not in the
 *     table for that collective) must fail on every rank with DUET_ERR_INVALID_ARG and a message
 *     naming DUET_ALGO, leaving every buffer untouched (at count 0 a no-op is accepted too);
 *     without DUET_ALGO, all-to-all in place (which no algorithm can run) must fail with
 *     DUET_ERR_INVALID_ARG or DUET_ERR_UNSUPPORTED and a message;
 *   - (tuner run only) every collective on two communicators split from the world (all ranks in
 *     reverse order; evens and odds, both halves at once): int32, half and double, counts 1 and
 *     1001, out of place and in place;
 *   - (tuner run only) duet_send / duet_recv between every pair of ranks (round-robin pairings,
 *     the lower rank sends first), all datatypes, counts 0 1 7 1001;
 *   - (tuner run only) wrong usage: NULL buffers with count > 0, invalid datatype / op / root /
 *     peer, a NULL communicator, a count whose byte size overflows, and a non-NULL stream
 *     (DUET_ERR_UNSUPPORTED on the CPU build) -> the error code and a duet_last_error() message
 *     naming the call, on every rank (every rank makes the same failing call, so nobody waits);
 *     count 0 with NULL buffers is a no-op; a verified allreduce afterwards.
 * Buffers come from malloc, or with TEST_COLL_HEAP=1 from an arena in the symmetric heap (then
 * sends from them may go by reference: the receiver copies out of the sender's heap, one copy).
 * Above 5 ranks (8 ranks share 2 cores) every (type, op, count) runs out of place aligned and in
 * place one off only. Large cases: the (type, op, placement) triples of big_variants(), more up
 * to 5 ranks; none with TEST_COLL_BIG=none in the environment (the small-chunk runs).
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
 *
 * A call that returns DUET_ERR_TIMEOUT (a hang) ends the run: the channels then hold messages
 * that every later case would trip over.
 *
 * Usage: test_coll [seed]   (else $DUET_TEST_SEED, else the time). Reads DUET_ALGO as the
 * library does, to know which collectives to run and which calls must fail (its copy of the
 * algorithm table, algo_table[], and coll.cmake's list must follow src/coll/duet_coll_tune.c).
 * Rank 0 prints one line: "test_coll: N ranks, DUET_ALGO=...: P of C cases passed (T s)".
 */
#include "duet_test.h"
#include "coll/duet_coll_chan.h" /* the by-reference message count */

#include <math.h>

#define GUARD 64     /* bytes of guard before and after every buffer */
#define HMAX 256     /* allreduce result hashes exchanged per datatype */
#define BIG (3u << 20) /* bytes of the large cases */
#define SHARE_ABOVE 65536 /* allreduce counts above this are checked in shares (see the header) */

enum { AR, BC, RD, AG, RS, A2A, NCOLL };
static const char *const coll_name[NCOLL] = {"allreduce", "broadcast", "reduce", "allgather", "reducescatter",
                                              "alltoall"};
/* The table of src/coll/duet_coll_tune.c, as DUET_ALGO spells it. */
static const char *const algo_table[NCOLL][10] = {
    [AR] = {"ring", "tree", "dbtree", "rd", "rhd", "oneshot", "twoshot", "hring", "hdbtree"},
    [BC] = {"chain", "tree", "htree"}, [RD] = {"chain", "tree", "htree"}, [AG] = {"ring", "rd", "direct"},
    [RS] = {"ring", "rhd", "direct"}, [A2A] = {"pairwise"}};
static const char *const op_names[] = {"sum", "prod", "min", "max", "avg", "bits"};
#define RAW DUET_OP_COUNT /* "op" of the collectives that only move data: random bits */

typedef struct {
    const char *name;
    size_t es;
    int flt, sgn, ebits, mbits;
} dtinfo_t;
static const dtinfo_t DT[DUET_DATATYPE_COUNT] = {
    {"int8", 1, 0, 1, 0, 0},   {"uint8", 1, 0, 0, 0, 0},      {"int32", 4, 0, 1, 0, 0},
    {"uint32", 4, 0, 0, 0, 0}, {"int64", 8, 0, 1, 0, 0},      {"uint64", 8, 0, 0, 0, 0},
    {"half", 2, 1, 1, 5, 10},  {"bfloat16", 2, 1, 1, 8, 7},   {"float", 4, 1, 1, 8, 23},
    {"double", 8, 1, 1, 11, 52}};

static int me, np, big_ranks;
static duet_comm_t W;
static char forced[NCOLL][64]; /* "" = the tuner chooses */
static const char *algo_env;
static long ncases, npassed;
static uint64_t *hsym, hashes[HMAX];
static int nhash;
static char ctx[640];
static const char *comm_tag = ""; /* which communicator, when not the world */

/* ------------------------------------------------------------------ element bits */
static uint64_t mask_of(size_t es) { return es == 8 ? ~0ull : (1ull << (8 * es)) - 1; }
static uint64_t load_bits(const char *p, size_t es)
{
    uint8_t a; uint16_t b; uint32_t c; uint64_t d;
    switch (es) {
    case 1: memcpy(&a, p, 1); return a;
    case 2: memcpy(&b, p, 2); return b;
    case 4: memcpy(&c, p, 4); return c;
    default: memcpy(&d, p, 8); return d;
    }
}
static void store_bits(char *p, size_t es, uint64_t v)
{
    uint8_t a = (uint8_t)v; uint16_t b = (uint16_t)v; uint32_t c = (uint32_t)v;
    switch (es) {
    case 1: memcpy(p, &a, 1); return;
    case 2: memcpy(p, &b, 2); return;
    case 4: memcpy(p, &c, 4); return;
    default: memcpy(p, &v, 8); return;
    }
}
static int64_t sext(uint64_t v, size_t es) { return es == 8 ? (int64_t)v : (int64_t)(v << (64 - 8 * es)) >> (64 - 8 * es); }

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
static uint64_t gen(int dt, int op, uint64_t K, int rank, size_t i)
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
typedef struct {
    int exact;         /* compare bits (integers, MIN / MAX) */
    int nan;           /* a NaN is wanted                    */
    uint64_t bits;
    long double val, tol;
} ref_t;

/* The reduction over ranks of element i of every rank's input. */
static void reference(int dt, int op, uint64_t K, size_t i, ref_t *r)
{
    const dtinfo_t *d = &DT[dt];
    memset(r, 0, sizeof *r);
    if (!d->flt) {
        uint64_t m = mask_of(d->es), acc = op == DUET_PROD ? 1 : 0;
        for (int p = 0; p < np; p++) {
            uint64_t x = gen(dt, op, K, p, i);
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
        uint64_t b = gen(dt, op, K, p, i);
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
static int ref_match(int dt, const ref_t *r, const char *p, char *why, size_t len)
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

/* ------------------------------------------------------------------ buffers */
typedef struct {
    char *raw, *p;  /* raw: malloc'd; p: the data, GUARD + off elements in */
    size_t elems, lead, total;
    uint64_t key;   /* guards and poison: bytes of random stream `key` */
} buf_t;

/* TEST_COLL_HEAP=1: buffers are cut from this symmetric arena, rewound after every case */
static char *arena;
static size_t arena_used, arena_cap;
#define ARENA_BYTES (24u << 20)

static void buf_make(buf_t *b, size_t elems, size_t es, int off, uint64_t key)
{
    b->elems = elems, b->key = key;
    b->lead = GUARD + (size_t)off * es;
    b->total = b->lead + elems * es + GUARD;
    if (arena) {
        CHECK(arena_used + b->total <= arena_cap, "the heap arena is too small for %zu more bytes", b->total);
        b->raw = arena + arena_used;
        arena_used += (b->total + 63) & ~(size_t)63;
    } else {
        b->raw = malloc(b->total);
    }
    CHECK(b->raw, "out of memory (%zu bytes)", b->total);
    for (size_t j = 0; j < b->total; j += 8) { /* stream_fill(), a word at a time */
        uint64_t w = mix(key ^ ((j >> 3) * 0xd6e8feb86659fd93ull));
        for (size_t k = 0; k < 8 && j + k < b->total; k++) b->raw[j + k] = (char)(uint8_t)(w >> (8 * k));
    }
    b->p = b->raw + b->lead;
}
static void buf_release(buf_t *b)
{
    if (!arena) free(b->raw);
    else if (b->raw) arena_used = (size_t)(b->raw - arena); /* buffers are released newest first */
    b->raw = NULL;
}

static void buf_fill(buf_t *b, int dt, int op, uint64_t K, size_t from, size_t n, size_t first_index)
{
    for (size_t i = 0; i < n; i++) store_bits(b->p + (from + i) * DT[dt].es, DT[dt].es, gen(dt, op, K, me, first_index + i));
}
static int poison_ok(const buf_t *b, size_t byte_lo, size_t byte_hi)
{
    for (size_t j = byte_lo; j < byte_hi; j++)
        if ((uint8_t)b->raw[j] != stream_byte(b->key, j)) return 0;
    return 1;
}

/* ------------------------------------------------------------------ one case */
typedef struct {
    int coll, dt, op, root, inplace, off;
    size_t count;
    uint64_t K;
    int nulls;      /* count 0: NULL buffers; broadcast / reduce: NULL on non-roots */
    int want_fail;  /* 0, or the status every rank must get */
} case_t;

enum { W_POISON, W_INPUT, W_REDUCE };
/* Piece `i` of `count` elements cut into `parts`: where it starts. */
static size_t part_start(size_t count, size_t parts, size_t i) { return i * (count / parts) + (i < count % parts ? i : count % parts); }
typedef struct { int kind, rank; size_t idx; } want_t;

/* What element j of a buffer must hold: which = 'S' (send, out of place), 'R' (receive, out
 * of place), 'B' (the one buffer in place); after = 0 before the call (or after a failed one). */
static want_t want_of(const case_t *c, int which, size_t j, int after)
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

static void check_buf(const case_t *c, const buf_t *b, int which, int after)
{
    if (!b->raw) return;
    size_t es = DT[c->dt].es, bad = 0, first = 0, share_lo = 0, share_hi = SIZE_MAX;
    if (c->count > SHARE_ABOVE) /* see the header: large allreduce results are checked in shares */
        share_lo = part_start(c->count, (size_t)np, (size_t)me),
        share_hi = part_start(c->count, (size_t)np, (size_t)me + 1);
    char why[256] = "", w[256];
    if (!poison_ok(b, 0, b->lead)) FAIL("buffer %c: the guard before it was written", which);
    if (!poison_ok(b, b->lead + b->elems * es, b->total)) FAIL("buffer %c: the guard after it was written", which);
    for (size_t j = 0; j < b->elems; j++) {
        want_t wt = want_of(c, which, j, after);
        const char *p = b->p + j * es;
        if (c->coll == AR && wt.kind == W_REDUCE && (j < share_lo || j >= share_hi)) continue;
        uint64_t want = 0, got = load_bits(p, es);
        ref_t r;
        int ok;
        if (wt.kind == W_POISON) ok = poison_ok(b, b->lead + j * es, b->lead + (j + 1) * es);
        else if (wt.kind == W_INPUT) ok = got == (want = gen(c->dt, c->op, c->K, wt.rank, wt.idx));
        else reference(c->dt, c->op, c->K, wt.idx, &r), ok = ref_match(c->dt, &r, p, w, sizeof w);
        if (ok || bad++) continue;
        first = j;
        if (wt.kind == W_POISON) snprintf(why, sizeof why, "written (0x%" PRIx64 "), should be untouched", got);
        else if (wt.kind == W_INPUT)
            snprintf(why, sizeof why, "got 0x%" PRIx64 ", want 0x%" PRIx64 " (rank %d's element %zu)", got, want,
                     wt.rank, wt.idx);
        else snprintf(why, sizeof why, "%s", w);
    }
    if (bad) FAIL("buffer %c: %zu of %zu elements wrong; first [%zu]: %s", which, bad, b->elems, first, why);
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
static duet_status_t expected_status(const case_t *c)
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

static uint64_t hash_bytes(const char *p, size_t n)
{
    uint64_t h = 0x1234567ull ^ n;
    for (size_t j = 0; j < n; j++) h = (h ^ (uint8_t)p[j]) * 0x100000001b3ull;
    return h;
}

static uint64_t serial; /* cases so far: the same sequence on every rank of a communicator */

static void run_case(case_t *c)
{
    size_t n = c->count, es = DT[c->dt].es, N = n * (size_t)np;
    size_t scount = c->coll == RS || c->coll == A2A ? N : n, rcount = c->coll == AG || c->coll == A2A ? N : n;
    c->K = key3(++serial, (uint64_t)c->coll, (uint64_t)(c->dt * 16 + c->op));
    c->root = (int)(serial % (uint64_t)np);
    c->nulls = (int)(serial / 3 % 2);
    snprintf(ctx, sizeof ctx, "%s%s %s %s count %zu %s off %d root %d%s (case %" PRIu64 ")%s%s", comm_tag, coll_name[c->coll],
             DT[c->dt].name, op_names[c->op], n, c->inplace ? "in place" : "out of place", c->off, c->root,
             c->nulls ? " nulls" : "", serial, forced[c->coll][0] ? ", forced " : "", forced[c->coll]);
    dt_set_context(ctx);
    long failures = dt_failures();
    duet_status_t want = expected_status(c);
    buf_t S = {0}, R = {0}, B = {0};
    const void *sp;
    void *rp;
    int root = me == c->root;
    if (c->inplace) {
        size_t elems = scount > rcount ? scount : rcount;
        buf_make(&B, elems, es, c->off, c->K ^ 0xb);
        for (size_t j = 0; j < elems; j++) {
            want_t w = want_of(c, 'B', j, 0);
            if (w.kind == W_INPUT) store_bits(B.p + j * es, es, gen(c->dt, c->op, c->K, me, w.idx));
        }
        sp = rp = B.p;
        if (c->coll == AG) sp = B.p + (size_t)me * n * es;
        if (c->coll == RS) rp = B.p + (size_t)me * n * es;
    } else {
        if (!(c->coll == BC && !root && c->nulls)) buf_make(&S, scount, es, c->off, c->K ^ 0x5);
        if (!(c->coll == RD && !root && c->nulls)) buf_make(&R, rcount, es, c->off ? 0 : 1, c->K ^ 0x7);
        if (S.raw && !(c->coll == BC && !root)) buf_fill(&S, c->dt, c->op, c->K, 0, scount, 0);
        sp = S.p, rp = R.p;
    }
    if (n == 0 && c->nulls) sp = rp = NULL;
    duet_status_t st;
    dt_prime_error();
    switch (c->coll) {
    case AR: st = duet_allreduce(sp, rp, n, (duet_datatype_t)c->dt, (duet_op_t)c->op, W, NULL); break;
    case BC: st = duet_broadcast(sp, rp, n, (duet_datatype_t)c->dt, c->root, W, NULL); break;
    case RD: st = duet_reduce(sp, rp, n, (duet_datatype_t)c->dt, (duet_op_t)c->op, c->root, W, NULL); break;
    case AG: st = duet_allgather(sp, rp, n, (duet_datatype_t)c->dt, W, NULL); break;
    case RS: st = duet_reduce_scatter(sp, rp, n, (duet_datatype_t)c->dt, (duet_op_t)c->op, W, NULL); break;
    default: st = duet_alltoall(sp, rp, n, (duet_datatype_t)c->dt, W, NULL); break;
    }
    if (want != DUET_OK && n == 0 && st == DUET_OK) want = DUET_OK; /* nothing to run: a no-op is fine too */
    if (want == DUET_OK) {
        EXPECT(st == DUET_OK, "returned %s", duet_status_str(st));
    } else if (forced[c->coll][0]) {
        EXPECT(st == want, "a forced algorithm that cannot run the call returned %s, want %s", duet_status_str(st),
               duet_status_str(want));
        if (st != DUET_OK)
            EXPECT(!dt_error_primed() && strstr(duet_last_error(), "DUET_ALGO"),
                   "the refusal's message does not name DUET_ALGO");
    } else { /* all-to-all in place, the tuner's choice */
        EXPECT(st == DUET_ERR_INVALID_ARG || st == DUET_ERR_UNSUPPORTED,
               "all-to-all in place (no algorithm runs it) returned %s, want DUET_ERR_INVALID_ARG or "
               "DUET_ERR_UNSUPPORTED", duet_status_str(st));
        if (st != DUET_OK) EXPECT(!dt_error_primed(), "%s without a message", duet_status_str(st));
    }
    if (st == DUET_ERR_TIMEOUT) /* the channels now hold who knows what: later cases would only cascade */
        FATAL("%s returned DUET_ERR_TIMEOUT (a hang): stopping here", coll_name[c->coll]);
    int after = st == DUET_OK;
    check_buf(c, &S, 'S', after);
    check_buf(c, &R, 'R', after);
    check_buf(c, &B, 'B', after);
    if (c->coll == AR) {
        const char *out = c->inplace ? B.p : R.p;
        CHECK(nhash < HMAX, "too many allreduce cases in one exchange");
        hashes[nhash++] = after && out ? hash_bytes(out, n * es) : 0;
    }
    buf_release(&B), buf_release(&R), buf_release(&S);
    ncases++;
    if (dt_failures() == failures) npassed++;
    dt_set_context(NULL);
}

/* Every rank's allreduce hashes must be those of rank 0 (collective). */
static void exchange_hashes(int dt)
{
    static uint64_t mine[HMAX];
    memcpy(mine, hashes, sizeof mine);
    EXPECT_OK_MSG(dt_allgather(W, hsym, mine, sizeof mine), "hash exchange");
    for (int r = 1; r < np; r++)
        for (int k = 0; k < nhash; k++)
            if (hsym[(size_t)r * HMAX + k] != hsym[k]) {
                FAIL("allreduce %s: rank %d's result of case %d of this datatype differs from rank 0's in some "
                     "bits", DT[dt].name, r, k);
                break;
            }
    nhash = 0;
}

/* ------------------------------------------------------------------ the matrix */
/* The large case of (collective, type, op): a mask of the variants (bit v: v of run_collective)
 * that run it, 0 for none. Up to 5 ranks a few pairs per collective, both placements between
 * them; above, one pair. */
static int big_variants(int coll, int dt, int op)
{
    if (big_ranks < 0 || (coll != BC && coll != AG && coll != A2A && op != DUET_SUM)) return 0;
    if (np > big_ranks) {
        switch (coll) {
        case AR: case RS: return dt == DUET_FLOAT32 ? 1 : 0;
        case AG: return dt == DUET_INT32 ? 8 : 0;
        case BC: return dt == DUET_INT8 ? 1 : 0;
        case A2A: return dt == DUET_INT64 ? 1 : 0;
        default: return 0;
        }
    }
    switch (coll) {
    case AR: return dt == DUET_FLOAT32 ? 9 : dt == DUET_FLOAT16 ? 1 : dt == DUET_INT32 ? 8 : 0;
    case RD: return dt == DUET_FLOAT32 ? 8 : dt == DUET_BFLOAT16 ? 1 : 0;
    case RS: return dt == DUET_INT32 ? 8 : dt == DUET_BFLOAT16 ? 1 : 0;
    case BC: return dt == DUET_INT8 ? 9 : 0;
    case AG: return dt == DUET_FLOAT32 ? 9 : 0;
    default: return dt == DUET_INT64 ? 1 : 0;
    }
}

/* The matrix of one collective. light: three types (int32, half, double), counts 1 and 1001,
 * out of place aligned and in place one off, no large case (the split communicators). */
static void run_collective(int coll, int light)
{
    static const size_t sizes[] = {0, 1, 7, 1001};
    int reducing = coll == AR || coll == RD || coll == RS;
    for (int dt = 0; dt < DUET_DATATYPE_COUNT; dt++) {
        if (light && dt != DUET_INT32 && dt != DUET_FLOAT16 && dt != DUET_FLOAT64) continue;
        for (int op = reducing ? 0 : RAW; op < (reducing ? DUET_OP_COUNT : RAW + 1); op++) {
            for (int s = light ? 1 : 0; s <= 4; s++) {
                size_t count = s < 4 ? sizes[s] : 0;
                if (light && s == 2) continue;
                if (s == 4) {
                    if (light || !big_variants(coll, dt, op)) continue;
                    count = BIG / DT[dt].es / (coll == AG || coll == RS || coll == A2A ? (size_t)np : 1) + 1;
                }
                for (int v = 0; v < 4; v++) {
                    /* above 5 ranks (and for the large size): out of place aligned, in place one off */
                    if (s == 4 ? !(big_variants(coll, dt, op) >> v & 1) : (np > 5 || light) && (v == 1 || v == 2))
                        continue;
                    /* all-to-all in place is refused whatever the type: two types are enough */
                    if (coll == A2A && (v >> 1) && np > 1 && (dt > DUET_UINT8 || light)) continue;
                    case_t c = {.coll = coll, .dt = dt, .op = op, .inplace = v >> 1, .off = v & 1, .count = count};
                    run_case(&c);
                }
            }
        }
        if (coll == AR) exchange_hashes(dt);
    }
}

/* The light matrix of every collective on two communicators split from the world: all ranks in
 * reverse order, and evens / odds (the halves run at the same time, each on its own). */
static void run_split(void)
{
    duet_comm_t world = W, sub[2] = {NULL, NULL};
    int wme = me, wnp = np;
    static const char *const tags[2] = {"reversed world: ", "even/odd half: "};
    EXPECT_OK(duet_comm_split(world, 0, wnp - wme, &sub[0]));
    EXPECT_OK(duet_comm_split(world, wme % 2, wme, &sub[1]));
    for (int k = 0; k < 2; k++) {
        if (!sub[k]) continue;
        W = sub[k], me = duet_comm_rank(sub[k]), np = duet_comm_size(sub[k]), comm_tag = tags[k];
        EXPECT(me == (k ? wme / 2 : wnp - 1 - wme), "rank %d in the %s", me, tags[k]);
        for (int c = 0; c < NCOLL; c++) run_collective(c, 1);
        W = world, me = wme, np = wnp, comm_tag = "";
        EXPECT_OK(duet_comm_destroy(sub[k]));
    }
    serial = (serial | 0xfffff) + 1; /* the halves may have run different numbers of cases */
}

/* ------------------------------------------------------------------ send / recv */
/* Round t of a round-robin tournament (circle method): this rank's partner, or -1. */
static int partner_in_round(int t, int m)
{
    if (me == m - 1) return t < np ? t : -1; /* m - 1 is the fixed seat */
    int p = me == t ? m - 1 : (2 * t - me + 2 * (m - 1)) % (m - 1);
    return p < np && p != me ? p : -1;
}

static void run_sendrecv(void)
{
    static const size_t sizes[] = {0, 1, 7, 1001};
    int m = np % 2 ? np + 1 : np;
    for (int t = 0; t < m - 1; t++) {
        int peer = partner_in_round(t, m);
        for (int dt = 0; dt < DUET_DATATYPE_COUNT; dt++)
            for (int s = 0; s < 4; s++) {
                size_t n = sizes[s], es = DT[dt].es;
                uint64_t K = key3(1000 + (uint64_t)t, (uint64_t)dt, (uint64_t)s);
                /* the key of a message is its sender's: K ^ sender */
                snprintf(ctx, sizeof ctx, "send/recv %s count %zu, round %d, peer %d", DT[dt].name, n, t, peer);
                dt_set_context(ctx);
                long failures = dt_failures();
                buf_t S, R;
                buf_make(&S, n, es, s & 1, K ^ 0x11 ^ (uint64_t)me);
                buf_make(&R, n, es, s & 1, K ^ 0x13 ^ (uint64_t)me);
                for (size_t i = 0; i < n; i++) store_bits(S.p + i * es, es, gen(dt, RAW, K ^ (uint64_t)me, me, i));
                if (peer >= 0) {
                    for (int k = 0; k < 2; k++) {
                        if ((k == 0) == (me < peer)) EXPECT_OK(duet_send(S.p, n, (duet_datatype_t)dt, peer, W, NULL));
                        else EXPECT_OK(duet_recv(R.p, n, (duet_datatype_t)dt, peer, W, NULL));
                    }
                    size_t bad = 0;
                    for (size_t i = 0; i < n; i++)
                        bad += load_bits(R.p + i * es, es) != gen(dt, RAW, K ^ (uint64_t)peer, peer, i);
                    EXPECT(bad == 0, "%zu of %zu received elements wrong", bad, n);
                    EXPECT(poison_ok(&R, 0, R.lead) && poison_ok(&R, R.lead + n * es, R.total), "guards written");
                    EXPECT(S.raw && stream_diff((uint8_t *)S.raw, S.lead, S.key) == SIZE_MAX, "send guard written");
                    ncases++;
                    if (dt_failures() == failures) npassed++;
                }
                buf_release(&R), buf_release(&S);
                dt_set_context(NULL);
            }
    }
}

/* ------------------------------------------------------------------ wrong usage */
#define BAD(call, want, fn)                                                                            \
    do {                                                                                               \
        dt_prime_error();                                                                              \
        duet_status_t st_ = (call);                                                                    \
        ncases++;                                                                                      \
        if (st_ != (want)) FAIL("%s -> %s, want %s", #call, duet_status_str(st_), duet_status_str(want)); \
        else if (dt_error_primed() || !strstr(duet_last_error(), fn))                                  \
            FAIL("%s: the message \"%s\" does not name %s", #call, duet_last_error(), fn);             \
        else npassed++;                                                                                \
    } while (0)
#define OK0(call)                                                                                      \
    do {                                                                                               \
        duet_status_t st_ = (call);                                                                    \
        ncases++;                                                                                      \
        if (st_ != DUET_OK) FAIL("%s -> %s, want DUET_OK (count 0)", #call, duet_status_str(st_));      \
        else npassed++;                                                                                \
    } while (0)

static void run_wrong_usage(void)
{
    const duet_status_t E = DUET_ERR_INVALID_ARG, U = DUET_ERR_UNSUPPORTED;
    const duet_datatype_t I = DUET_INT32;
    const duet_op_t S = DUET_SUM;
    size_t big = SIZE_MAX / 2 + 1;
    int32_t *a = calloc((size_t)np * 4, sizeof *a), *b = calloc((size_t)np * 4, sizeof *b);
    void *st = (void *)a; /* any non-NULL "stream" */
    CHECK(a && b, "out of memory");
    dt_set_context("wrong usage");
    /* NULL buffers, count > 0: every rank needs both buffers in these calls */
    BAD(duet_allreduce(NULL, b, 1, I, S, W, NULL), E, "duet_allreduce");
    BAD(duet_allreduce(a, NULL, 1, I, S, W, NULL), E, "duet_allreduce");
    BAD(duet_broadcast(a, NULL, 1, I, 0, W, NULL), E, "duet_broadcast");
    BAD(duet_reduce(NULL, b, 1, I, S, 0, W, NULL), E, "duet_reduce");
    BAD(duet_allgather(NULL, b, 1, I, W, NULL), E, "duet_allgather");
    BAD(duet_allgather(a, NULL, 1, I, W, NULL), E, "duet_allgather");
    BAD(duet_reduce_scatter(NULL, b, 1, I, S, W, NULL), E, "duet_reduce_scatter");
    BAD(duet_reduce_scatter(a, NULL, 1, I, S, W, NULL), E, "duet_reduce_scatter");
    BAD(duet_alltoall(NULL, b, 1, I, W, NULL), E, "duet_alltoall");
    BAD(duet_alltoall(a, NULL, 1, I, W, NULL), E, "duet_alltoall");
    BAD(duet_send(NULL, 1, I, (me + 1) % np, W, NULL), E, "duet_send");
    BAD(duet_recv(NULL, 1, I, (me + 1) % np, W, NULL), E, "duet_recv");
    /* invalid datatype, op, root, peer, communicator */
    duet_datatype_t bad_dt[] = {(duet_datatype_t)-1, DUET_DATATYPE_COUNT, (duet_datatype_t)1000};
    for (int k = 0; k < 3; k++) {
        BAD(duet_allreduce(a, b, 1, bad_dt[k], S, W, NULL), E, "duet_allreduce");
        BAD(duet_broadcast(a, b, 1, bad_dt[k], 0, W, NULL), E, "duet_broadcast");
        BAD(duet_reduce(a, b, 1, bad_dt[k], S, 0, W, NULL), E, "duet_reduce");
        BAD(duet_allgather(a, b, 1, bad_dt[k], W, NULL), E, "duet_allgather");
        BAD(duet_reduce_scatter(a, b, 1, bad_dt[k], S, W, NULL), E, "duet_reduce_scatter");
        BAD(duet_alltoall(a, b, 1, bad_dt[k], W, NULL), E, "duet_alltoall");
        BAD(duet_send(a, 1, bad_dt[k], (me + 1) % np, W, NULL), E, "duet_send");
        BAD(duet_recv(b, 1, bad_dt[k], (me + 1) % np, W, NULL), E, "duet_recv");
        BAD(duet_allreduce(a, b, 0, bad_dt[k], S, W, NULL), E, "duet_allreduce");
    }
    duet_op_t bad_op[] = {(duet_op_t)-1, DUET_OP_COUNT};
    for (int k = 0; k < 2; k++) {
        BAD(duet_allreduce(a, b, 1, I, bad_op[k], W, NULL), E, "duet_allreduce");
        BAD(duet_reduce(a, b, 1, I, bad_op[k], 0, W, NULL), E, "duet_reduce");
        BAD(duet_reduce_scatter(a, b, 1, I, bad_op[k], W, NULL), E, "duet_reduce_scatter");
    }
    int bad_root[] = {-1, np, 1 << 30};
    for (int k = 0; k < 3; k++) {
        BAD(duet_broadcast(a, b, 1, I, bad_root[k], W, NULL), E, "duet_broadcast");
        BAD(duet_reduce(a, b, 1, I, S, bad_root[k], W, NULL), E, "duet_reduce");
        BAD(duet_send(a, 1, I, bad_root[k], W, NULL), E, "duet_send");
        BAD(duet_recv(b, 1, I, bad_root[k], W, NULL), E, "duet_recv");
    }
    BAD(duet_send(a, 1, I, me, W, NULL), E, "duet_send"); /* to itself */
    BAD(duet_recv(b, 1, I, me, W, NULL), E, "duet_recv");
    BAD(duet_allreduce(a, b, 1, I, S, NULL, NULL), E, "duet_allreduce");
    BAD(duet_broadcast(a, b, 1, I, 0, NULL, NULL), E, "duet_broadcast");
    BAD(duet_alltoall(a, b, 1, I, NULL, NULL), E, "duet_alltoall");
    BAD(duet_send(a, 1, I, 0, NULL, NULL), E, "duet_send");
    /* byte counts that overflow size_t */
    BAD(duet_allreduce(a, b, big, I, S, W, NULL), E, "duet_allreduce");
    BAD(duet_allgather(a, b, big, I, W, NULL), E, "duet_allgather");
    BAD(duet_reduce_scatter(a, b, big, I, S, W, NULL), E, "duet_reduce_scatter");
    BAD(duet_alltoall(a, b, big, I, W, NULL), E, "duet_alltoall");
    BAD(duet_broadcast(a, b, SIZE_MAX, DUET_FLOAT64, 0, W, NULL), E, "duet_broadcast");
    /* a stream: the CPU build has no GPU backend */
    BAD(duet_allreduce(a, b, 1, I, S, W, st), U, "duet_allreduce");
    BAD(duet_broadcast(a, b, 1, I, 0, W, st), U, "duet_broadcast");
    BAD(duet_reduce(a, b, 1, I, S, 0, W, st), U, "duet_reduce");
    BAD(duet_allgather(a, b, 1, I, W, st), U, "duet_allgather");
    BAD(duet_reduce_scatter(a, b, 1, I, S, W, st), U, "duet_reduce_scatter");
    BAD(duet_alltoall(a, b, 1, I, W, st), U, "duet_alltoall");
    if (np > 1) {
        BAD(duet_send(a, 1, I, (me + 1) % np, W, st), U, "duet_send");
        BAD(duet_recv(b, 1, I, (me + np - 1) % np, W, st), U, "duet_recv");
    }
    /* count 0: no-ops whatever the buffers */
    OK0(duet_allreduce(NULL, NULL, 0, I, S, W, NULL));
    OK0(duet_broadcast(NULL, NULL, 0, I, np - 1, W, NULL));
    OK0(duet_reduce(NULL, NULL, 0, I, DUET_AVG, np - 1, W, NULL));
    OK0(duet_allgather(NULL, NULL, 0, I, W, NULL));
    OK0(duet_reduce_scatter(NULL, NULL, 0, DUET_FLOAT16, DUET_AVG, W, NULL));
    OK0(duet_alltoall(NULL, NULL, 0, I, W, NULL));
    /* and the communicator still works: sum of (rank + 1) over ranks, 4 elements */
    for (int i = 0; i < 4; i++) a[i] = me + 1 + i;
    memset(b, 0, sizeof(int32_t) * 4);
    EXPECT_OK(duet_allreduce(a, b, 4, I, S, W, NULL));
    for (int i = 0; i < 4; i++) EXPECT(b[i] == np * (np + 1) / 2 + np * i, "b[%d] = %d after the errors", i, b[i]);
    dt_set_context(NULL);
    free(a), free(b);
}

/* ------------------------------------------------------------------ main */
/* What DUET_ALGO forces for each collective, parsed as src/coll/duet_coll_tune.c does. */
static void parse_algo(const char *spec)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", spec ? spec : "");
    for (int c = 0; c < NCOLL; c++) {
        int named = 0;
        forced[c][0] = '\0';
        snprintf(buf, sizeof buf, "%s", spec ? spec : "");
        for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok && !named; tok = strtok_r(NULL, ",", &save)) {
            char *colon = strchr(tok, ':');
            if (!colon) snprintf(forced[c], sizeof forced[c], "%s", tok);
            else if ((size_t)(colon - tok) == strlen(coll_name[c]) && !strncmp(tok, coll_name[c], strlen(coll_name[c])))
                snprintf(forced[c], sizeof forced[c], "%s", colon + 1), named = 1;
        }
    }
}

int main(int argc, char **argv)
{
    CHECK_OK(duet_init());
    W = dt_world(&me, &np);
    uint64_t seed = dt_pick_seed(dt_seed_text(argc, argv), (uint64_t)time(NULL) ^ (uint64_t)getpid());
    uint64_t *seed_sym = duet_malloc(W, sizeof(uint64_t));
    hsym = duet_malloc(W, sizeof(uint64_t) * HMAX * (size_t)np);
    CHECK(seed_sym && hsym, "duet_malloc");
    CHECK_OK(dt_share_seed(W, seed_sym, &seed));
    const char *heap = getenv("TEST_COLL_HEAP");
    if (heap && !strcmp(heap, "1")) {
        arena_cap = ARENA_BYTES;
        CHECK((arena = duet_malloc(W, arena_cap)), "duet_malloc of the arena: %s", duet_last_error());
    }
    algo_env = getenv("DUET_ALGO");
    parse_algo(algo_env);
    const char *big = getenv("TEST_COLL_BIG"); /* "none": no large cases (small-chunk runs) */
    big_ranks = big && !strcmp(big, "none") ? -1 : 5;
    int tuned = !algo_env || !algo_env[0];
    if (me == 0)
        printf("test_coll: %d ranks, seed %" PRIu64 ", DUET_ALGO=%s, buffers %s\n", np, seed,
               tuned ? "(tuner)" : algo_env, arena ? "in the symmetric heap" : "malloc");
    double t0 = now_s();
    if (tuned) {
        run_wrong_usage();
        run_sendrecv();
    }
    for (int c = 0; c < NCOLL; c++)
        if (tuned || forced[c][0]) run_collective(c, 0);
    if (tuned) run_split();
    EXPECT_BARRIER_ALL("end");
    if (me == 0)
        printf("test_coll: %d ranks, DUET_ALGO=%s: %ld of %ld cases passed (%.2f s)\n", np,
               tuned ? "(tuner)" : algo_env, npassed, ncases, now_s() - t0);
    if (arena && np > 1) { /* the large cases must have gone by reference somewhere (between mapped peers) */
        long long total = 0, mine = (long long)W->chan->byref_sent;
        CHECK_OK(duet_allreduce(&mine, &total, 1, DUET_INT64, DUET_SUM, W, NULL));
        if (me == 0) printf("test_coll: %lld messages went by reference\n", total);
        if (W->net_peers == np - 1) /* every peer over the net transport (DUET_NET=force): never by reference */
            EXPECT(total == 0, "%lld messages to net peers went by reference", total);
        else
            EXPECT(total > 0 || big_ranks < np, "buffers in the heap, but no message went by reference");
    }
    if (arena) duet_free(W, arena);
    duet_free(W, hsym);
    duet_free(W, seed_sym);
    int rc = dt_finish();
    EXPECT_OK(duet_finalize());
    return rc ? rc : dt_finish();
}
