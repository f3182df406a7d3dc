/*
 * test_coll_group.c — duet_send / duet_recv and groups (duet_group_start / duet_group_end), run
 * by every rank under duetrun.
 *
 * What a channel buffers: DUET_COLL_CHUNK x DUET_COLL_SLOTS per ordered pair of ranks (128 KiB x
 * 8 = 1 MiB by default). "Large" below means well above that (BIGMSG), so that a send completes
 * only while its receiver is receiving.
 *
 * Covers (the default run):
 *   - blocking send/recv outside a group between every pair of ranks (round-robin pairings; the
 *     lower rank sends first, the higher receives first, so no buffering is assumed), counts 0 1 7
 *     1001 40000 and a large one, all datatypes in turn, buffers one element off malloc's
 *     alignment, 64 guard bytes each side;
 *   - ordering: 12 messages in a row from one rank to another (equal sizes next to each other,
 *     small, large, empty) arrive in the order sent, each with its own contents;
 *   - a ring exchange inside one group, both directions at once, large messages (one by one,
 *     every rank's first send would wait for a receiver that is itself sending);
 *   - all-to-all through send/recv in one group (every send queued before any receive), with
 *     per-pair sizes that differ, some 0;
 *   - queuing: after a call inside a group (and after an inner duet_group_end of nested groups)
 *     nothing has arrived yet; everything has after the outermost end; nested groups three deep;
 *   - fused groups: allreduce (int32 sum, float32 sum of small integers: exact), allgather,
 *     a send/recv ring (large), reduce-scatter (int64 max), broadcast (root n-1), reduce (uint8
 *     max, root 0), and the first allreduce again, in one group, every element checked; 300
 *     collectives in one group; a group over two communicators (the world and an even/odd split);
 *   - errors: duet_group_end without start -> DUET_ERR_INVALID_ARG with a message; an invalid
 *     argument inside a group (bad datatype, op or peer, a stream) fails at the call on every
 *     rank (every rank makes the same failing call, so nobody waits), and the valid calls queued
 *     around it still run at duet_group_end; errors found only at duet_group_end (all-to-all in
 *     place; 258 sends and receives in a row, above the 256 one schedule takes) are reported
 *     there on every rank, without a hang; afterwards no group is left open and the
 *     communicator still works; empty groups are fine.
 *
 * Separate runs (one mode each, so that a failure cannot spill into the other checks): a
 * send/recv may sit anywhere among a group's collectives — duet.h puts no condition on it, and
 * NCCL matches point-to-point calls by peer and order alone:
 *   p2p-interleaved    {allreduce, send right, allgather, recv left} on every rank, the message
 *                      as large as an allgather block;
 *   p2p-order-differs  {send right, recv left, allreduce, allgather} on even ranks, {allreduce,
 *                      allgather, recv left, send right} on odd ranks;
 *   p2p-split-large    {send right, allreduce, recv left} on every rank, a large message.
 *
 * Usage: test_coll_group [mode] [seed]   (seed: else $DUET_TEST_SEED, else the time; rank 0's
 * seed is used). Rank 0 prints how many cases passed.
 */
#include "duet_test.h"

#define BIGMSG ((5u << 19) + 13) /* bytes: 2.5 MiB + 13, above what a channel buffers (1 MiB) */

static int me, np, left, right;
static duet_comm_t W;
static long ncases, npassed;
static char ctx[256];

static const size_t dt_size[DUET_DATATYPE_COUNT] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8};

/* A buffer of `bytes` with 64 guard bytes each side, data one `off` bytes in; guards and data
 * hold the random stream `key` (the data as poison, until filled). */
typedef struct {
    uint8_t *raw, *p;
    size_t bytes, lead;
    uint64_t key;
} gbuf_t;

static void gb_make(gbuf_t *b, size_t bytes, size_t off, uint64_t key)
{
    b->bytes = bytes, b->lead = 64 + off, b->key = key;
    b->raw = malloc(b->lead + bytes + 64);
    CHECK(b->raw, "out of memory");
    stream_fill(b->raw, b->lead + bytes + 64, key);
    b->p = b->raw + b->lead;
}
static int gb_guards_ok(const gbuf_t *b)
{
    for (size_t j = 0; j < b->lead; j++)
        if (b->raw[j] != stream_byte(b->key, j)) return 0;
    for (size_t j = b->lead + b->bytes; j < b->lead + b->bytes + 64; j++)
        if (b->raw[j] != stream_byte(b->key, j)) return 0;
    return 1;
}
/* Data still the poison it was made with. */
static int gb_untouched(const gbuf_t *b)
{
    for (size_t j = 0; j < b->bytes; j++)
        if (b->p[j] != stream_byte(b->key, b->lead + j)) return 0;
    return 1;
}

/* The contents of message `tag` from rank `from` to rank `to`: bytes of stream msg_key(...). */
static uint64_t msg_key(uint64_t tag, int from, int to) { return key3(tag, (uint64_t)from, (uint64_t)to); }

/* The received buffer b must hold the message (tag, from, to); guards intact. */
static void expect_msg(const gbuf_t *b, uint64_t tag, int from, int to, const char *what)
{
    size_t d = stream_diff(b->p, b->bytes, msg_key(tag, from, to));
    EXPECT(d == SIZE_MAX, "%s: byte %zu of %zu from rank %d differs", what, d, b->bytes, from);
    EXPECT(gb_guards_ok(b), "%s: guard bytes around the receive buffer written", what);
}

static void case_begin(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static long case_failures;
static void case_begin(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx, sizeof ctx, fmt, ap);
    va_end(ap);
    dt_set_context(ctx);
    case_failures = dt_failures();
}
static void case_end(void)
{
    ncases++;
    if (dt_failures() == case_failures) npassed++;
    dt_set_context(NULL);
}

/* duet_group_end() must succeed. A timeout (a hang) leaves messages in the channels that later
 * checks would trip over: stop there. */
#define GROUP_END()                                                                                \
    do {                                                                                           \
        duet_status_t st_ = duet_group_end();                                                      \
        if (st_ == DUET_ERR_TIMEOUT) FATAL("duet_group_end() -> DUET_ERR_TIMEOUT (a hang): stopping here"); \
        EXPECT(st_ == DUET_OK, "duet_group_end() -> %s", duet_status_str(st_));                     \
    } while (0)

/* Round t of a round-robin tournament (circle method): this rank's partner, or -1. */
static int partner_in_round(int t, int m)
{
    if (me == m - 1) return t < np ? t : -1;
    int p = me == t ? m - 1 : (2 * t - me + 2 * (m - 1)) % (m - 1);
    return p < np && p != me ? p : -1;
}

/* ------------------------------------------------------------------ blocking pairs */
static void test_pairs(void)
{
    static const size_t counts[] = {0, 1, 7, 1001, 40000, 0 /* BIGMSG bytes */};
    int m = np % 2 ? np + 1 : np;
    for (int t = 0; t < m - 1; t++) {
        int peer = partner_in_round(t, m);
        if (peer < 0) continue;
        for (int s = 0; s < 6; s++) {
            int dt = (t + s) % DUET_DATATYPE_COUNT;
            size_t es = dt_size[dt], n = s == 5 ? BIGMSG / es : counts[s];
            uint64_t tag = 100 + (uint64_t)(t * 8 + s);
            case_begin("blocking pair: %d <-> %d, %zu elements of type %d", me, peer, n, dt);
            gbuf_t S, R;
            gb_make(&S, n * es, es, key3(1, (uint64_t)me, tag));
            gb_make(&R, n * es, es, key3(2, (uint64_t)me, tag));
            stream_fill(S.p, S.bytes, msg_key(tag, me, peer));
            for (int k = 0; k < 2; k++) {
                if ((k == 0) == (me < peer)) EXPECT_OK(duet_send(S.p, n, (duet_datatype_t)dt, peer, W, NULL));
                else EXPECT_OK(duet_recv(R.p, n, (duet_datatype_t)dt, peer, W, NULL));
            }
            expect_msg(&R, tag, peer, me, "received");
            EXPECT(stream_diff(S.p, S.bytes, msg_key(tag, me, peer)) == SIZE_MAX && gb_guards_ok(&S),
                   "the send buffer changed");
            free(S.raw), free(R.raw);
            case_end();
        }
    }
}

/* ------------------------------------------------------------------ ordering */
static void test_order(void)
{
    static const size_t sizes[12] = {1000, 1000, 1000, 200000, 1, 200000, 0, 5, 5, 5, BIGMSG, 8};
    int m = np % 2 ? np + 1 : np;
    for (int t = 0; t < m - 1; t++) {
        int peer = partner_in_round(t, m);
        if (peer < 0) continue;
        case_begin("ordering: 12 messages each way between %d and %d", me, peer);
        for (int dir = 0; dir < 2; dir++) {
            int sending = (dir == 0) == (me < peer);
            for (int k = 0; k < 12; k++) {
                uint64_t tag = 5000 + (uint64_t)(t * 32 + dir * 16 + k);
                gbuf_t b;
                gb_make(&b, sizes[k], 0, key3(3, (uint64_t)me, tag));
                if (sending) {
                    stream_fill(b.p, b.bytes, msg_key(tag, me, peer));
                    EXPECT_OK(duet_send(b.p, sizes[k], DUET_UINT8, peer, W, NULL));
                } else {
                    EXPECT_OK(duet_recv(b.p, sizes[k], DUET_UINT8, peer, W, NULL));
                    expect_msg(&b, tag, peer, me, "message out of order or damaged");
                }
                free(b.raw);
            }
        }
        case_end();
    }
}

/* ------------------------------------------------------------------ rings and all-to-all in a group */
static void test_group_ring(void)
{
    if (np < 2) return;
    for (int rep = 0; rep < 2; rep++) {
        size_t n = BIGMSG / 4 + (size_t)rep * 1001; /* int32 / float32 elements */
        duet_datatype_t dt = rep ? DUET_FLOAT32 : DUET_INT32;
        uint64_t tag_r = 9000 + (uint64_t)rep * 2, tag_l = tag_r + 1; /* to the right, to the left */
        case_begin("group ring exchange, both directions, %zu elements", n);
        gbuf_t Sr, Sl, Rl, Rr;
        gb_make(&Sr, n * 4, 4, key3(4, (uint64_t)me, tag_r));
        gb_make(&Sl, n * 4, 0, key3(5, (uint64_t)me, tag_r));
        gb_make(&Rl, n * 4, 4, key3(6, (uint64_t)me, tag_r));
        gb_make(&Rr, n * 4, 0, key3(7, (uint64_t)me, tag_r));
        stream_fill(Sr.p, Sr.bytes, msg_key(tag_r, me, right));
        stream_fill(Sl.p, Sl.bytes, msg_key(tag_l, me, left));
        EXPECT_OK(duet_group_start());
        EXPECT_OK(duet_send(Sr.p, n, dt, right, W, NULL));
        EXPECT_OK(duet_send(Sl.p, n, dt, left, W, NULL));
        EXPECT_OK(duet_recv(Rl.p, n, dt, left, W, NULL));
        EXPECT_OK(duet_recv(Rr.p, n, dt, right, W, NULL));
        EXPECT(gb_untouched(&Rl) && gb_untouched(&Rr), "data arrived before duet_group_end");
        GROUP_END();
        expect_msg(&Rl, tag_r, left, me, "from the left");
        expect_msg(&Rr, tag_l, right, me, "from the right");
        free(Sr.raw), free(Sl.raw), free(Rl.raw), free(Rr.raw);
        case_end();
    }
}

static size_t a2a_bytes(int from, int to, int rep) /* differs per pair; 0 for some */
{
    size_t b = (size_t)(mix((uint64_t)(from * 64 + to + rep * 4096)) % 5) * 50001;
    return rep ? b * 3 : b / 7;
}

static void test_group_alltoall(void)
{
    for (int rep = 0; rep < 2; rep++) {
        case_begin("all-to-all by send/recv in one group, rep %d", rep);
        gbuf_t *S = calloc((size_t)np, sizeof *S), *R = calloc((size_t)np, sizeof *R);
        CHECK(S && R, "out of memory");
        EXPECT_OK(duet_group_start());
        for (int k = 1; k < np; k++) { /* every send first */
            int to = (me + k) % np;
            uint64_t tag = 12000 + (uint64_t)rep;
            gb_make(&S[to], a2a_bytes(me, to, rep), (size_t)k % 3, key3(8, (uint64_t)me, (uint64_t)to));
            stream_fill(S[to].p, S[to].bytes, msg_key(tag, me, to));
            EXPECT_OK(duet_send(S[to].p, S[to].bytes, DUET_INT8, to, W, NULL));
        }
        for (int k = 1; k < np; k++) {
            int from = (me + np - k) % np;
            gb_make(&R[from], a2a_bytes(from, me, rep), (size_t)k % 2, key3(9, (uint64_t)me, (uint64_t)from));
            EXPECT_OK(duet_recv(R[from].p, R[from].bytes, DUET_UINT8, from, W, NULL));
        }
        GROUP_END();
        for (int p = 0; p < np; p++) {
            if (p == me) continue;
            expect_msg(&R[p], 12000 + (uint64_t)rep, p, me, "all-to-all block");
            free(S[p].raw), free(R[p].raw);
        }
        free(S), free(R);
        case_end();
    }
}

/* ------------------------------------------------------------------ nesting */
static void test_nested(void)
{
    case_begin("nested groups");
    int32_t in[5], out[5];
    for (int i = 0; i < 5; i++) in[i] = me * 10 + i, out[i] = -7;
    gbuf_t S = {0}, R = {0};
    uint64_t tag = 14000;
    if (np > 1) {
        gb_make(&S, BIGMSG, 0, key3(10, (uint64_t)me, tag));
        gb_make(&R, BIGMSG, 0, key3(11, (uint64_t)me, tag));
        stream_fill(S.p, S.bytes, msg_key(tag, me, right));
    }
    EXPECT_OK(duet_group_start());
    EXPECT_OK(duet_group_start());
    if (np > 1) EXPECT_OK(duet_recv(R.p, R.bytes, DUET_UINT8, left, W, NULL));
    if (np > 1) EXPECT_OK(duet_send(S.p, S.bytes, DUET_UINT8, right, W, NULL));
    EXPECT_OK(duet_group_start());
    EXPECT_OK(duet_allreduce(in, out, 5, DUET_INT32, DUET_SUM, W, NULL));
    GROUP_END();
    GROUP_END();
    EXPECT(out[0] == -7 && (np < 2 || gb_untouched(&R)), "an inner duet_group_end ran the queued calls");
    GROUP_END();
    for (int i = 0; i < 5; i++)
        EXPECT(out[i] == 10 * (np * (np - 1) / 2) + np * i, "allreduce out[%d] = %d", i, out[i]);
    if (np > 1) expect_msg(&R, tag, left, me, "nested group recv");
    free(S.raw), free(R.raw);
    case_end();
}

/* ------------------------------------------------------------------ fused collectives */
static void test_fused(void)
{
    case_begin("fused group: allreduce x3, allgather, reduce-scatter, broadcast, reduce, ring");
    enum { NA = 1001, NG = 7, NR = 33, NB = 517 };
    int32_t *ai = malloc(NA * 4), *ao = malloc(NA * 4), *a2o = malloc(NA * 4);
    float *af = malloc(NA * 4), *afo = malloc(NA * 4);
    int64_t *gi = malloc(NG * 8), *go = malloc(NG * 8 * (size_t)np);
    int64_t *ri = malloc(NR * 8 * (size_t)np), *ro = malloc(NR * 8);
    double *bb = malloc(NB * 8);
    uint8_t *di = malloc(NB), *dout = malloc(NB);
    CHECK(ai && ao && a2o && af && afo && gi && go && ri && ro && bb && di && dout, "out of memory");
    for (int i = 0; i < NA; i++) ai[i] = (int32_t)(i * 7 + me), af[i] = (float)(i % 100 - me), ao[i] = a2o[i] = -1, afo[i] = -1;
    for (int i = 0; i < NG; i++) gi[i] = (int64_t)me * 1000 + i;
    for (int i = 0; i < NG * np; i++) go[i] = -1;
    for (int i = 0; i < NR * np; i++) ri[i] = (int64_t)((i * 31 + me * 17) % 101) - 50;
    for (int i = 0; i < NR; i++) ro[i] = -999;
    for (int i = 0; i < NB; i++) bb[i] = me == np - 1 ? i * 0.5 : -1, di[i] = (uint8_t)(i * 3 + me * 5), dout[i] = 0xee;
    gbuf_t S = {0}, R = {0};
    uint64_t tag = 15000;
    if (np > 1) {
        gb_make(&S, BIGMSG, 0, key3(12, (uint64_t)me, tag));
        gb_make(&R, BIGMSG, 1, key3(13, (uint64_t)me, tag));
        stream_fill(S.p, S.bytes, msg_key(tag, me, right));
    }
    EXPECT_OK(duet_group_start());
    EXPECT_OK(duet_allreduce(ai, ao, NA, DUET_INT32, DUET_SUM, W, NULL));
    EXPECT_OK(duet_allgather(gi, go, NG, DUET_INT64, W, NULL));
    if (np > 1) EXPECT_OK(duet_send(S.p, S.bytes, DUET_UINT8, right, W, NULL));
    if (np > 1) EXPECT_OK(duet_recv(R.p, R.bytes, DUET_UINT8, left, W, NULL));
    EXPECT_OK(duet_allreduce(af, afo, NA, DUET_FLOAT32, DUET_SUM, W, NULL));
    EXPECT_OK(duet_reduce_scatter(ri, ro, NR, DUET_INT64, DUET_MAX, W, NULL));
    EXPECT_OK(duet_broadcast(bb, bb, NB, DUET_FLOAT64, np - 1, W, NULL));
    EXPECT_OK(duet_reduce(di, dout, NB, DUET_UINT8, DUET_MAX, 0, W, NULL));
    EXPECT_OK(duet_allreduce(ai, a2o, NA, DUET_INT32, DUET_SUM, W, NULL));
    EXPECT(ao[0] == -1 && go[0] == -1 && ro[0] == -999, "results before duet_group_end");
    GROUP_END();
    long bad = 0;
    for (int i = 0; i < NA; i++) {
        int32_t want = (int32_t)(np * i * 7 + np * (np - 1) / 2);
        float fw = 0;
        for (int p = 0; p < np; p++) fw += (float)(i % 100 - p);
        bad += ao[i] != want || a2o[i] != want || afo[i] != fw;
    }
    for (int i = 0; i < NG * np; i++) bad += go[i] != (int64_t)(i / NG) * 1000 + i % NG;
    for (int i = 0; i < NR; i++) {
        int64_t want = INT64_MIN;
        for (int p = 0; p < np; p++) {
            int64_t v = (int64_t)(((me * NR + i) * 31 + p * 17) % 101) - 50;
            want = v > want ? v : want;
        }
        bad += ro[i] != want;
    }
    for (int i = 0; i < NB; i++) bad += bb[i] != i * 0.5;
    for (int i = 0; i < NB && me == 0; i++) {
        uint8_t want = 0;
        for (int p = 0; p < np; p++) want = (uint8_t)(i * 3 + p * 5) > want ? (uint8_t)(i * 3 + p * 5) : want;
        bad += dout[i] != want;
    }
    EXPECT(bad == 0, "%ld collective result elements wrong", bad);
    if (np > 1) expect_msg(&R, tag, left, me, "fused ring");
    free(ai), free(ao), free(a2o), free(af), free(afo), free(gi), free(go), free(ri), free(ro), free(bb), free(di), free(dout);
    free(S.raw), free(R.raw);
    case_end();

    case_begin("300 collectives in one group");
    enum { NMANY = 300 };
    int32_t *many = malloc(sizeof(int32_t) * NMANY * 2);
    CHECK(many, "out of memory");
    EXPECT_OK(duet_group_start());
    for (int i = 0; i < NMANY; i++) {
        many[2 * i] = me + i, many[2 * i + 1] = -1;
        EXPECT_OK(duet_allreduce(&many[2 * i], &many[2 * i + 1], 1, DUET_INT32, DUET_SUM, W, NULL));
    }
    GROUP_END();
    for (int i = 0; i < NMANY; i++)
        EXPECT(many[2 * i + 1] == np * (np - 1) / 2 + np * i, "call %d of %d: %d", i, NMANY, many[2 * i + 1]);
    free(many);
    case_end();

    /* two communicators in one group: the world, and evens / odds */
    case_begin("group over two communicators");
    duet_comm_t half = NULL;
    EXPECT_OK(duet_comm_split(W, me % 2, me, &half));
    if (half) {
        int32_t x[3] = {me, 1, -me}, yw[3] = {0}, yh[3] = {0};
        int hn = duet_comm_size(half);
        EXPECT_OK(duet_group_start());
        EXPECT_OK(duet_allreduce(x, yw, 3, DUET_INT32, DUET_SUM, W, NULL));
        EXPECT_OK(duet_allreduce(x, yh, 3, DUET_INT32, DUET_MAX, half, NULL));
        GROUP_END();
        int hmax = me % 2 + 2 * (hn - 1);
        EXPECT(yw[0] == np * (np - 1) / 2 && yw[1] == np && yw[2] == -yw[0], "world allreduce %d %d %d", yw[0], yw[1], yw[2]);
        EXPECT(yh[0] == hmax && yh[1] == 1 && yh[2] == -(me % 2), "split allreduce %d %d %d (want max %d)", yh[0], yh[1],
               yh[2], hmax);
        EXPECT_OK(duet_comm_destroy(half));
    }
    case_end();
}

/* ------------------------------------------------------------------ errors */
static void expect_fails(duet_status_t st, duet_status_t want, const char *what)
{
    if (st != want) FAIL("%s -> %s, want %s", what, duet_status_str(st), duet_status_str(want));
    else if (dt_error_primed() || !duet_last_error()[0]) FAIL("%s: %s without a message of its own", what, duet_status_str(st));
}

static void check_sum(const int32_t *out, int n, const char *what)
{
    for (int i = 0; i < n; i++)
        EXPECT(out[i] == np * (np + 1) / 2 + np * i, "%s: out[%d] = %d", what, i, out[i]);
}

static void test_errors(void)
{
    int32_t in[4], out[4], big[4];
    for (int i = 0; i < 4; i++) in[i] = me + 1 + i;

    case_begin("duet_group_end without duet_group_start");
    dt_prime_error();
    expect_fails(duet_group_end(), DUET_ERR_INVALID_ARG, "duet_group_end()");
    case_end();

    case_begin("empty group, and empty nested groups");
    EXPECT_OK(duet_group_start());
    GROUP_END();
    EXPECT_OK(duet_group_start());
    EXPECT_OK(duet_group_start());
    GROUP_END();
    GROUP_END();
    case_end();

    case_begin("invalid arguments inside a group: failing at the call, the rest runs");
    memset(out, 0, sizeof out);
    EXPECT_OK(duet_group_start());
    EXPECT_OK(duet_allreduce(in, out, 4, DUET_INT32, DUET_SUM, W, NULL));
    dt_prime_error();
    expect_fails(duet_allreduce(in, big, 4, (duet_datatype_t)77, DUET_SUM, W, NULL), DUET_ERR_INVALID_ARG,
                 "allreduce with datatype 77 in a group");
    dt_prime_error();
    expect_fails(duet_send(in, 4, DUET_INT32, me, W, NULL), DUET_ERR_INVALID_ARG, "send to itself in a group");
    dt_prime_error();
    expect_fails(duet_recv(big, 4, DUET_INT32, np, W, NULL), DUET_ERR_INVALID_ARG, "recv from rank n in a group");
    dt_prime_error();
    expect_fails(duet_reduce(in, big, 4, DUET_INT32, DUET_OP_COUNT, 0, W, NULL), DUET_ERR_INVALID_ARG,
                 "reduce with op DUET_OP_COUNT in a group");
    dt_prime_error();
    expect_fails(duet_broadcast(in, big, 4, DUET_INT32, 0, W, (duet_stream_t)in), DUET_ERR_UNSUPPORTED,
                 "broadcast with a stream in a group");
    GROUP_END();
    check_sum(out, 4, "the valid allreduce of the group");
    case_end();

    if (np > 1) {
        case_begin("an error found at duet_group_end (all-to-all in place), on every rank");
        int32_t *a = malloc(sizeof(int32_t) * 4 * (size_t)np);
        CHECK(a, "out of memory");
        for (int i = 0; i < 4 * np; i++) a[i] = i;
        memset(out, 0, sizeof out);
        EXPECT_OK(duet_group_start());
        EXPECT_OK(duet_allreduce(in, out, 4, DUET_INT32, DUET_SUM, W, NULL));
        duet_status_t st = duet_alltoall(a, a, 4, DUET_INT32, W, NULL);
        EXPECT(st == DUET_OK || st == DUET_ERR_INVALID_ARG || st == DUET_ERR_UNSUPPORTED,
               "all-to-all in place in a group -> %s", duet_status_str(st));
        dt_prime_error();
        st = duet_group_end();
        EXPECT(st == DUET_ERR_INVALID_ARG || st == DUET_ERR_UNSUPPORTED,
               "duet_group_end with an all-to-all in place -> %s, want DUET_ERR_INVALID_ARG or DUET_ERR_UNSUPPORTED",
               duet_status_str(st));
        EXPECT(st == DUET_OK || !dt_error_primed(), "duet_group_end failed without a message");
        dt_prime_error();
        expect_fails(duet_group_end(), DUET_ERR_INVALID_ARG, "duet_group_end() after the failed group");
        memset(out, 0, sizeof out);
        EXPECT_OK(duet_allreduce(in, out, 4, DUET_INT32, DUET_SUM, W, NULL));
        check_sum(out, 4, "allreduce after the failed group");
        free(a);
        case_end();
    }

    if (np > 1) {
        case_begin("258 sends and receives in a row in a group (one schedule takes 256), on every rank");
        enum { K = 129 };
        uint8_t *sb = malloc(2 * K), *rb = sb + K;
        CHECK(sb, "out of memory");
        for (int nk = K; nk >= K - 1; nk--) { /* 2 x 129 calls fail; 2 x 128 work */
            for (int i = 0; i < K; i++) sb[i] = (uint8_t)(me * 7 + i), rb[i] = 0;
            EXPECT_OK(duet_group_start());
            for (int i = 0; i < nk; i++) EXPECT_OK(duet_send(&sb[i], 1, DUET_UINT8, right, W, NULL));
            for (int i = 0; i < nk; i++) EXPECT_OK(duet_recv(&rb[i], 1, DUET_UINT8, left, W, NULL));
            dt_prime_error();
            if (nk == K) {
                expect_fails(duet_group_end(), DUET_ERR_UNSUPPORTED, "duet_group_end() with 258 sends and receives");
                dt_prime_error();
                expect_fails(duet_group_end(), DUET_ERR_INVALID_ARG, "duet_group_end() after the failed group");
            } else {
                GROUP_END();
                for (int i = 0; i < nk; i++)
                    EXPECT(rb[i] == (uint8_t)(left * 7 + i), "message %d of 128 from the left: %d", i, rb[i]);
            }
        }
        memset(out, 0, sizeof out);
        EXPECT_OK(duet_allreduce(in, out, 4, DUET_INT32, DUET_SUM, W, NULL));
        check_sum(out, 4, "allreduce after the failed group");
        free(sb);
        case_end();
    }

    EXPECT_BARRIER_ALL("errors");
}

/* ------------------------------------------------------------------ send/recv among collectives */
/* One group with a send to the right and a receive from the left placed among an allreduce
 * and an allgather as `mode` says; everything verified. */
static void test_p2p_among(const char *mode)
{
    if (np < 2) return;
    int interleaved = !strcmp(mode, "p2p-interleaved"), split = !strcmp(mode, "p2p-split-large");
    int before = !interleaved && !split && me % 2 == 0, after = !interleaved && !split && me % 2 == 1;
    /* interleaved: the message as large as an allgather block (a mix-up is silent); order-differs:
     * a size of its own; split: large */
    {
        size_t n = interleaved ? 64 : 1001, bytes = split ? BIGMSG : interleaved ? n * 4 : 1332;
        case_begin("%s: send/recv of %zu bytes among an allreduce and an allgather of %zu int32", mode, bytes, n);
        int32_t *ai = malloc(n * 4), *ao = malloc(n * 4), *go = malloc(n * 4 * (size_t)np);
        uint64_t tag = 16000;
        gbuf_t S, R;
        CHECK(ai && ao && go, "out of memory");
        gb_make(&S, bytes, 0, key3(14, (uint64_t)me, tag));
        gb_make(&R, bytes, 0, key3(15, (uint64_t)me, tag));
        stream_fill(S.p, S.bytes, msg_key(tag, me, right));
        for (size_t i = 0; i < n; i++) ai[i] = (int32_t)i + me, ao[i] = -1;
        EXPECT_OK(duet_group_start());
        if (before) EXPECT_OK(duet_send(S.p, bytes, DUET_UINT8, right, W, NULL));
        if (before) EXPECT_OK(duet_recv(R.p, bytes, DUET_UINT8, left, W, NULL));
        if (split) EXPECT_OK(duet_send(S.p, bytes, DUET_UINT8, right, W, NULL));
        EXPECT_OK(duet_allreduce(ai, ao, n, DUET_INT32, DUET_SUM, W, NULL));
        if (interleaved) EXPECT_OK(duet_send(S.p, bytes, DUET_UINT8, right, W, NULL));
        if (!split) EXPECT_OK(duet_allgather(ai, go, n, DUET_INT32, W, NULL));
        if (interleaved || split) EXPECT_OK(duet_recv(R.p, bytes, DUET_UINT8, left, W, NULL));
        if (after) EXPECT_OK(duet_recv(R.p, bytes, DUET_UINT8, left, W, NULL));
        if (after) EXPECT_OK(duet_send(S.p, bytes, DUET_UINT8, right, W, NULL));
        GROUP_END();
        long bad = 0;
        for (size_t i = 0; i < n; i++) bad += ao[i] != (int32_t)(np * (int)i + np * (np - 1) / 2);
        for (size_t i = 0; i < n * (size_t)np && !split; i++) bad += go[i] != (int32_t)(i % n + i / n);
        EXPECT(bad == 0, "%ld collective result elements wrong", bad);
        expect_msg(&R, tag, left, me, "the send/recv among the collectives");
        free(ai), free(ao), free(go), free(S.raw), free(R.raw);
        case_end();
        EXPECT_BARRIER_ALL(mode);
    }
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 && !strncmp(argv[1], "p2p-", 4) ? argv[1] : NULL;
    if (mode && strcmp(mode, "p2p-interleaved") && strcmp(mode, "p2p-order-differs") && strcmp(mode, "p2p-split-large")) {
        fprintf(stderr, "test_coll_group: unknown mode %s\n", mode);
        return 2;
    }
    if (mode) argc--, argv++;
    CHECK_OK(duet_init());
    W = dt_world(&me, &np);
    left = (me + np - 1) % np, right = (me + 1) % np;
    uint64_t seed = dt_pick_seed(dt_seed_text(argc, argv), (uint64_t)time(NULL) ^ (uint64_t)getpid());
    uint64_t *seed_sym = duet_malloc(W, sizeof(uint64_t));
    CHECK(seed_sym, "duet_malloc");
    CHECK_OK(dt_share_seed(W, seed_sym, &seed));
    if (me == 0) printf("test_coll_group%s%s: %d ranks, seed %" PRIu64 "\n", mode ? " " : "", mode ? mode : "", np, seed);
    double t0 = now_s();
    if (mode) {
        test_p2p_among(mode);
    } else {
        test_errors();
        test_pairs();
        test_order();
        test_group_ring();
        test_group_alltoall();
        test_nested();
        test_fused();
    }
    EXPECT_BARRIER_ALL("end");
    if (me == 0)
        printf("test_coll_group%s%s: %d ranks: %ld of %ld cases passed (%.2f s)\n", mode ? " " : "", mode ? mode : "",
               np, npassed, ncases, now_s() - t0);
    duet_free(W, seed_sym);
    int rc = dt_finish();
    EXPECT_OK(duet_finalize());
    return rc ? rc : dt_finish();
}
