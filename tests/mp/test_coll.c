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
 * The inputs, the reference results and the float bound: coll_expect.c.
 *
 * A call that returns DUET_ERR_TIMEOUT (a hang) ends the run: the channels then hold messages
 * that every later case would trip over.
 *
 * Usage: test_coll [seed]   (else $DUET_TEST_SEED, else the time). Reads DUET_ALGO as the
 * library does, to know which collectives to run and which calls must fail (its copy of the
 * algorithm table, algo_table[] in coll_expect.c, and coll.cmake's list must follow
 * src/coll/duet_coll_tune.c).
 * Rank 0 prints one line: "test_coll: N ranks, DUET_ALGO=...: P of C cases passed (T s)".
 */
#include "duet_test.h"
#include "test_coll.h"
#include "coll/duet_coll_chan.h" /* the by-reference message count */

#define GUARD 64     /* bytes of guard before and after every buffer */
#define HMAX 256     /* allreduce result hashes exchanged per datatype */
#define BIG (3u << 20) /* bytes of the large cases */
#define SHARE_ABOVE 65536 /* allreduce counts above this are checked in shares (see the header) */

static const char *const coll_name[NCOLL] = {"allreduce", "broadcast", "reduce", "allgather", "reducescatter",
                                              "alltoall"};
static const char *const op_names[] = {"sum", "prod", "min", "max", "avg", "bits"};

int me, np; /* test_coll.h */
static int big_ranks;
static duet_comm_t W;
char forced[NCOLL][64]; /* "" = the tuner chooses */
static const char *algo_env;
static long ncases, npassed;
static uint64_t *hsym, hashes[HMAX];
static int nhash;
static char ctx[640];
static const char *comm_tag = ""; /* which communicator, when not the world */

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
    for (size_t i = 0; i < n; i++) store_bits(b->p + (from + i) * DT[dt].es, DT[dt].es, tc_gen(dt, op, K, me, first_index + i));
}
static int poison_ok(const buf_t *b, size_t byte_lo, size_t byte_hi)
{
    for (size_t j = byte_lo; j < byte_hi; j++)
        if ((uint8_t)b->raw[j] != stream_byte(b->key, j)) return 0;
    return 1;
}

/* ------------------------------------------------------------------ one case */
/* Piece `i` of `count` elements cut into `parts`: where it starts. */
static size_t part_start(size_t count, size_t parts, size_t i) { return i * (count / parts) + (i < count % parts ? i : count % parts); }

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
        want_t wt = tc_want_of(c, which, j, after);
        const char *p = b->p + j * es;
        if (c->coll == AR && wt.kind == W_REDUCE && (j < share_lo || j >= share_hi)) continue;
        uint64_t want = 0, got = load_bits(p, es);
        ref_t r;
        int ok;
        if (wt.kind == W_POISON) ok = poison_ok(b, b->lead + j * es, b->lead + (j + 1) * es);
        else if (wt.kind == W_INPUT) ok = got == (want = tc_gen(c->dt, c->op, c->K, wt.rank, wt.idx));
        else tc_reference(c->dt, c->op, c->K, wt.idx, &r), ok = tc_ref_match(c->dt, &r, p, w, sizeof w);
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
    duet_status_t want = tc_expected_status(c);
    buf_t S = {0}, R = {0}, B = {0};
    const void *sp;
    void *rp;
    int root = me == c->root;
    if (c->inplace) {
        size_t elems = scount > rcount ? scount : rcount;
        buf_make(&B, elems, es, c->off, c->K ^ 0xb);
        for (size_t j = 0; j < elems; j++) {
            want_t w = tc_want_of(c, 'B', j, 0);
            if (w.kind == W_INPUT) store_bits(B.p + j * es, es, tc_gen(c->dt, c->op, c->K, me, w.idx));
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
                for (size_t i = 0; i < n; i++) store_bits(S.p + i * es, es, tc_gen(dt, RAW, K ^ (uint64_t)me, me, i));
                if (peer >= 0) {
                    for (int k = 0; k < 2; k++) {
                        if ((k == 0) == (me < peer)) EXPECT_OK(duet_send(S.p, n, (duet_datatype_t)dt, peer, W, NULL));
                        else EXPECT_OK(duet_recv(R.p, n, (duet_datatype_t)dt, peer, W, NULL));
                    }
                    size_t bad = 0;
                    for (size_t i = 0; i < n; i++)
                        bad += load_bits(R.p + i * es, es) != tc_gen(dt, RAW, K ^ (uint64_t)peer, peer, i);
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
