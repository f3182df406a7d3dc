/*
 * test_coll_again.c — the repeat path (src/coll/duet_coll_api.c: a call of the very shape the
 * last full-path call prepared runs the remembered schedule at once), run by every rank under
 * duetrun.
 *
 * Covers, for broadcast, reduce, allgather, reduce-scatter, all-to-all and an allreduce above
 * the latency lane, at counts 1, 7 and 1000 int32 (sum, max and avg where the kind reduces):
 *   - loops of like calls whose buffers change between calls: two pairs of host buffers and one
 *     in the symmetric heap (sends by reference from 4 KiB), in place and out of place by turns
 *     (in place by each collective's convention: allgather's input inside the output,
 *     reduce-scatter's output inside the input), a reduce's non-root ranks passing no receive
 *     buffer; every element checked against the reference each rank computes from everyone's
 *     inputs, and the bytes around the output left as they were;
 *   - roots that change every few calls (another shape: the full path), and the shapes of all
 *     collectives interleaved, so each repeat follows a call of another kind;
 *   - bad arguments after like calls: a NULL receive buffer (DUET_ERR_INVALID_ARG on every rank,
 *     "recvbuf is NULL"), an all-to-all in place on 2 ranks or more (DUET_ERR_UNSUPPORTED: in
 *     place is part of the shape), then the same shape again works;
 *   - a revoke after like calls: the next like call fails (DUET_ERR_REVOKED), not from memory.
 * Mismatched calls after like calls are test_coll_mismatch's (TEST_MISMATCH_REPEAT=1).
 *
 * Usage: test_coll_again [seed]
 */
#include "duet_test.h"

enum { BC, RD, AG, RS, A2A, AR, NKIND };
static const char *kind_name[NKIND] = {"broadcast", "reduce", "allgather", "reducescatter", "alltoall", "allreduce"};
static const size_t counts[] = {1, 7, 1000};
static const char *op_name(duet_op_t op) { return op == DUET_SUM ? "sum" : op == DUET_MAX ? "max" : "avg"; }
#define NCOUNT (sizeof counts / sizeof counts[0])
#define MAXC 1100 /* the largest count (an allreduce of 1016) */
#define GUARD 16 /* int32 before and after every buffer, checked untouched */

static int me, np;
static duet_comm_t W;
static long ncases, npassed;

static int reduces(int k) { return k == RD || k == RS || k == AR; }

/* Rank r's input element i in call t: small integers (sums of many ranks stay exact). */
static int32_t input(int r, size_t i, uint64_t t) { return (int32_t)(mix(key3((uint64_t)r, i, t)) % 1000); }

static int32_t reduce_ref(duet_op_t op, size_t i, uint64_t t)
{
    int64_t v = input(0, i, t);
    for (int r = 1; r < np; r++) {
        int64_t x = input(r, i, t);
        v = op == DUET_MAX ? (x > v ? x : v) : v + x;
    }
    return (int32_t)(op == DUET_AVG ? v / np : v); /* integers: C division */
}

/* Elements of the send and receive buffers for count c. */
static size_t send_elems(int k, size_t c) { return k == RS || k == A2A ? c * (size_t)np : c; }
static size_t recv_elems(int k, size_t c) { return k == AG || k == A2A ? c * (size_t)np : c; }

/* Buffer sets: 0 and 1 on the host, 2 in the symmetric heap; each GUARD + elements + GUARD. */
static int32_t *sbase[3], *rbase[3];
static size_t cap; /* elements of each buffer between its guards */

static void fill_guards(int32_t *b) { for (int i = 0; i < GUARD; i++) b[i] = b[GUARD + (int)cap + i] = 0x5a5a5a5a; }
static int guards_ok(const int32_t *b)
{
    for (int i = 0; i < GUARD; i++)
        if (b[i] != 0x5a5a5a5a || b[GUARD + (int)cap + i] != 0x5a5a5a5a) return 0;
    return 1;
}

/* The expected element j of my result of kind k (count c, root, op) in call t. */
static int32_t want(int k, size_t c, int root, duet_op_t op, size_t j, uint64_t t)
{
    switch (k) {
    case BC: return input(root, j, t);
    case RD: case AR: return reduce_ref(op, j, t);
    case AG: return input((int)(j / c), j % c, t);
    case RS: return reduce_ref(op, (size_t)me * c + j, t);
    default: return input((int)(j / c), (size_t)me * c + j % c, t); /* A2A: block j / c from that rank */
    }
}

/* One call of kind k in call t on buffer set b, in place or not; checked. */
static void one_call(int k, size_t c, int root, duet_op_t op, uint64_t t, int b, int in_place)
{
    if (k == A2A) in_place = 0; /* refused (run_null) */
    int32_t *s = sbase[b] + GUARD, *r = rbase[b] + GUARD;
    size_t se = send_elems(k, c), re = recv_elems(k, c);
    fill_guards(sbase[b]);
    fill_guards(rbase[b]);
    for (size_t j = 0; j < re; j++) r[j] = -99999;
    const int32_t *send = s;
    int32_t *recv = r;
    if (in_place) { /* the input where the convention puts it */
        if (k == AG) send = r + (size_t)me * c;
        else if (k == RS) recv = s + (size_t)me * c;
        else send = r;
    }
    int32_t *in = (int32_t *)(uintptr_t)send;
    if (k == BC) {
        if (me == root) for (size_t j = 0; j < c; j++) in[j] = input(me, j, t);
    } else if (k == AG) {
        for (size_t j = 0; j < c; j++) in[j] = input(me, j, t);
    } else {
        for (size_t j = 0; j < se; j++) in[j] = input(me, j, t);
    }
    if (k == RD && me != root && t % 2) recv = NULL; /* not used on a non-root rank */
    ncases++;
    duet_status_t st;
    switch (k) {
    case BC: st = duet_broadcast(send, recv, c, DUET_INT32, root, W, NULL); break;
    case RD: st = duet_reduce(send, recv, c, DUET_INT32, op, root, W, NULL); break;
    case AG: st = duet_allgather(send, recv, c, DUET_INT32, W, NULL); break;
    case RS: st = duet_reduce_scatter(send, recv, c, DUET_INT32, op, W, NULL); break;
    case A2A: st = duet_alltoall(send, recv, c, DUET_INT32, W, NULL); break;
    default: st = duet_allreduce(send, recv, c, DUET_INT32, op, W, NULL); break;
    }
    if (st != DUET_OK) {
        FAIL("%s count %zu root %d op %s call %llu: %s (%s)", kind_name[k], c, root, op_name(op),
             (unsigned long long)t, duet_status_str(st), duet_last_error());
        return;
    }
    if (recv && (k != RD || me == root)) {
        size_t n = k == RD || k == RS || k == AR || k == BC ? c : re;
        for (size_t j = 0; j < n; j++)
            if (recv[j] != want(k, c, root, op, j, t)) {
                FAIL("%s count %zu root %d op %s call %llu (set %d, %s): element %zu is %d, want %d", kind_name[k], c,
                     root, op_name(op), (unsigned long long)t, b, in_place ? "in place" : "out of place", j,
                     (int)recv[j], (int)want(k, c, root, op, j, t));
                return;
            }
    }
    if (!guards_ok(sbase[b]) || !guards_ok(rbase[b])) {
        FAIL("%s count %zu call %llu: a byte around the buffers was written", kind_name[k], c, (unsigned long long)t);
        return;
    }
    npassed++;
}

/* Loops of like calls: each shape 6 times in a row (buffers and in place changing), the root
 * moving every 3 calls; then all shapes interleaved. */
static void run_loops(void)
{
    const duet_op_t ops[] = {DUET_SUM, DUET_MAX, DUET_AVG};
    uint64_t t = 1;
    for (int k = 0; k < NKIND; k++)
        for (size_t ci = 0; ci < NCOUNT; ci++)
            for (int o = 0; o < (reduces(k) ? 3 : 1); o++) {
                size_t c = k == AR && counts[ci] < 16 ? counts[ci] + 16 : counts[ci]; /* above the lane */
                for (int i = 0; i < 6; i++, t++)
                    one_call(k, c, (i / 3) % np, ops[o], t, i % 3, (i / 2) % 2);
            }
    for (int round = 0; round < 4; round++)
        for (int k = 0; k < NKIND; k++)
            for (size_t ci = 0; ci < NCOUNT; ci++, t++)
                one_call(k, counts[ci] + (k == AR ? 16 : 0), round % np, DUET_SUM, t, (int)(t % 3), round % 2);
}

/* A call that must be refused with `want` and a message holding `word`. */
static void expect_refused(duet_status_t st, duet_status_t want, const char *word, const char *what)
{
    ncases++;
    if (st != want || !strstr(duet_last_error(), word))
        FAIL("%s: %s, \"%s\"; want %s, \"%s\"", what, duet_status_str(st), duet_last_error(), duet_status_str(want),
             word);
    else
        npassed++;
}

/* A NULL receive buffer on every rank after like calls: refused on every rank, and the same
 * shape runs again afterwards. */
static void run_null(void)
{
    for (uint64_t t = 0; t < 4; t++) one_call(BC, 7, 0, DUET_SUM, 5000 + t, 0, 0);
    expect_refused(duet_broadcast(sbase[0] + GUARD, NULL, 7, DUET_INT32, 0, W, NULL), DUET_ERR_INVALID_ARG,
                   "recvbuf is NULL", "a broadcast into NULL after like calls");
    for (uint64_t t = 0; t < 4; t++) one_call(BC, 7, 0, DUET_SUM, 5100 + t, 0, 0);
    /* in place is part of the shape: an all-to-all in place (unsupported) after like ones */
    if (np < 2) return; /* (one rank: in place is a copy, supported) */
    for (uint64_t t = 0; t < 4; t++) one_call(A2A, 7, 0, DUET_SUM, 5200 + t, 1, 0);
    expect_refused(duet_alltoall(rbase[1] + GUARD, rbase[1] + GUARD, 7, DUET_INT32, W, NULL), DUET_ERR_UNSUPPORTED,
                   "in place", "an all-to-all in place after like ones");
    for (uint64_t t = 0; t < 4; t++) one_call(A2A, 7, 0, DUET_SUM, 5300 + t, 0, 0);
}

/* A revoke after like calls (on a copy of the world): the next like call fails at entry. */
static void run_revoke(void)
{
    duet_comm_t world = W, D = NULL;
    CHECK_OK(duet_comm_split(world, 0, me, &D));
    W = D;
    for (uint64_t t = 0; t < 4; t++) one_call(AG, 7, 0, DUET_SUM, 6000 + t, 1, 0);
    EXPECT_BARRIER_ALL("before the revoke");
    CHECK_OK(duet_comm_revoke(D));
    ncases++;
    int32_t x[7 * 8 + 8];
    duet_status_t st = duet_allgather(x, x + 8, 7, DUET_INT32, D, NULL);
    if (st != DUET_ERR_REVOKED)
        FAIL("a like allgather after the revoke: %s (%s); want DUET_ERR_REVOKED", duet_status_str(st),
             duet_last_error());
    else
        npassed++;
    CHECK_OK(duet_comm_destroy(D));
    W = world;
}

int main(int argc, char **argv)
{
    CHECK_OK(duet_init());
    W = dt_world(&me, &np);
    (void)argc, (void)argv;
    cap = (size_t)MAXC * (size_t)np;
    size_t bytes = (cap + 2 * GUARD) * sizeof(int32_t);
    for (int b = 0; b < 3; b++) {
        sbase[b] = b == 2 ? duet_malloc(W, bytes) : malloc(bytes);
        rbase[b] = b == 2 ? duet_malloc(W, bytes) : malloc(bytes);
        CHECK(sbase[b] && rbase[b], "out of memory for %zu bytes: %s", bytes, duet_last_error());
    }
    if (me == 0) printf("test_coll_again: %d ranks\n", np);
    double t0 = now_s();
    run_loops();
    run_null();
    run_revoke();
    EXPECT_BARRIER_ALL("end");
    if (me == 0) printf("test_coll_again: %ld of %ld cases passed (%.2f s)\n", npassed, ncases, now_s() - t0);
    for (int b = 0; b < 2; b++) free(sbase[b]), free(rbase[b]);
    duet_free(W, sbase[2]);
    duet_free(W, rbase[2]);
    CHECK_OK(duet_finalize());
    return dt_finish();
}
