/*
 * test_coll_mismatch.c — ranks that make different collective calls are caught
 * (src/coll/duet_coll_sig.h), run by every rank under duetrun.
 *
 * For every collective (allreduce, broadcast, reduce, allgather, reduce-scatter, all-to-all,
 * and a group fusing an allreduce with an allgather) and every field it has (count, datatype,
 * op, root), at a small size (allreduce: the latency lane) and a large one (chunked channels;
 * in the symmetric heap with TEST_MISMATCH_HEAP=1: sends by reference), one rank (a different
 * one each case, rank 0 and the last included) makes the call with that field changed:
 *   count     n elements against 2n (small: 2 against 4; and "path": 2 against 100,000, so
 *             that the odd rank leaves the lane for the channels), datatype int32 against
 *             float32 (the same size: only the signature tells them apart), op sum against
 *             max, root 0 against 1.
 * Every rank must return DUET_ERR_INVALID_ARG, with a message naming the odd rank and the
 * field ("with count", "with datatype", ...), except a rank whose part of the call only sends
 * by its own arguments (the root of a broadcast, a non-root rank of a reduce), and a broadcast
 * receiver the odd rank's messages do not reach (another subtree: it must then hold the root's
 * data), which may return DUET_OK (duet.h); no rank may time out (DUET_WAIT_TIMEOUT is far below the test's timeout). The
 * communicator is then revoked: a matched allreduce on it must fail with DUET_ERR_INVALID_ARG on
 * every rank. duet_comm_shrink gives the next case's communicator, whose first call (a matched
 * allreduce of random integers) is checked element by element against the reference.
 *
 * With TEST_MISMATCH_REPEAT=1 each case first makes the very call it then makes mismatched
 * three times, matched: the ranks that keep the shape run the mismatched call on the repeat
 * path (src/coll/duet_coll_api.c), the odd rank on the full path.
 *
 * Usage: test_coll_mismatch [seed]   (DUET_ALGO forces algorithms as for test_coll)
 */
#include "duet_test.h"

#define LARGE 300000 /* elements: 1.2 MB of int32, above what the channels buffer */

enum { AR, BC, RD, AG, RS, A2A, GRP, NCOLL };
static const char *coll_name[NCOLL] = {"allreduce", "broadcast", "reduce", "allgather", "reducescatter",
                                       "alltoall", "group"};
enum { F_COUNT, F_PATH, F_DTYPE, F_OP, F_ROOT, NFIELD };
static const char *field_name[NFIELD] = {"count", "path", "datatype", "op", "root"};
static const char *field_word[NFIELD] = {"with count", "with count", "with datatype", "with op", "with root"};

static int me, np, use_heap, repeat;
static long ncases, npassed;
static char ctx[200];

static int reduces(int coll) { return coll == AR || coll == RD || coll == RS || coll == GRP; }
static int rooted(int coll) { return coll == BC || coll == RD; }

/* Elements of the send and receive buffers for count n. */
static size_t send_elems(int coll, size_t n) { return coll == RS || coll == A2A ? n * (size_t)np : n; }
static size_t recv_elems(int coll, size_t n) { return coll == AG || coll == A2A || coll == GRP ? n * (size_t)np : n; }

static char *sbuf, *rbuf; /* for every case: the largest size; in the heap, allocated on the world */
static size_t sbytes, rbytes;

static void bufs_make(duet_comm_t w)
{
    sbytes = (size_t)2 * LARGE * (size_t)np * 4 + 64;
    rbytes = ((size_t)2 * LARGE * (size_t)np + (size_t)np) * 4 + 64;
    sbuf = use_heap ? duet_malloc(w, sbytes) : malloc(sbytes);
    rbuf = use_heap ? duet_malloc(w, rbytes) : malloc(rbytes);
    CHECK(sbuf && rbuf, "out of memory for %zu + %zu bytes: %s", sbytes, rbytes, duet_last_error());
}

/* A matched allreduce of random integers on c, checked against the reference. With `next` (the
 * number of the call after it): it may instead be ended by the revoke of a faster rank that found
 * the mismatch of that next call (a revoke ends the calls in flight), with that call's report. */
static void matched_allreduce(duet_comm_t c, uint64_t key, const char *what, int next)
{
    enum { N = 1001 };
    int64_t in[N], out[N];
    for (int i = 0; i < N; i++) in[i] = (int64_t)(mix(key * 1000003u + (uint64_t)me * N + (uint64_t)i) % 1000000);
    for (int i = 0; i < N; i++) out[i] = -7;
    duet_status_t st = duet_allreduce(in, out, N, DUET_INT64, DUET_SUM, c, NULL);
    char report[32];
    snprintf(report, sizeof report, "(call #%d)", next);
    if (st == DUET_ERR_INVALID_ARG && next && strstr(duet_last_error(), report)) return;
    if (st != DUET_OK) {
        FAIL("%s: the matched allreduce returned %s: %s", what, duet_status_str(st), duet_last_error());
        return;
    }
    long bad = 0;
    for (int i = 0; i < N; i++) {
        int64_t want = 0;
        for (int r = 0; r < np; r++) want += (int64_t)(mix(key * 1000003u + (uint64_t)r * N + (uint64_t)i) % 1000000);
        bad += out[i] != want;
    }
    EXPECT(bad == 0, "%s: %ld of %d elements of the matched allreduce are wrong", what, bad, N);
}

/* One rank's part of collective `coll` (not a group), with (count, dt, op, root) as given. */
static duet_status_t call1(duet_comm_t c, int coll, const void *s, void *r, size_t n, duet_datatype_t dt, duet_op_t op,
                           int root)
{
    switch (coll) {
    case AR: return duet_allreduce(s, r, n, dt, op, c, NULL);
    case BC: return duet_broadcast(s, r, n, dt, root, c, NULL);
    case RD: return duet_reduce(s, r, n, dt, op, root, c, NULL);
    case AG: return duet_allgather(s, r, n, dt, c, NULL);
    case RS: return duet_reduce_scatter(s, r, n, dt, op, c, NULL);
    default: return duet_alltoall(s, r, n, dt, c, NULL); /* A2A */
    }
}

/* One rank's part of collective `coll`, with (count, dt, op, root) as given; msg gets the message
 * of the call that failed (a group's: of its first failing call, since the calls after it that
 * succeed, duet_group_end included, clear the thread's last error). */
static duet_status_t call(duet_comm_t c, int coll, const void *s, void *r, size_t n, duet_datatype_t dt, duet_op_t op,
                          int root, char *msg, size_t msg_len)
{
    if (coll != GRP) {
        duet_status_t st = call1(c, coll, s, r, n, dt, op, root);
        snprintf(msg, msg_len, "%s", duet_last_error());
        return st;
    }
    /* a group: the allreduce carries the odd field, the allgather is matched */
    duet_status_t st = duet_group_start(), st2;
    if (st == DUET_OK) st = duet_allreduce(s, r, n, dt, op, c, NULL);
    snprintf(msg, msg_len, "%s", duet_last_error());
    st2 = duet_allgather(s, (char *)r + n * 4, 1, DUET_INT32, c, NULL);
    if (st == DUET_OK && st2 != DUET_OK) snprintf(msg, msg_len, "%s", duet_last_error());
    if (st == DUET_OK) st = st2;
    st2 = duet_group_end();
    if (st == DUET_OK && st2 != DUET_OK) snprintf(msg, msg_len, "%s", duet_last_error());
    return st ? st : st2;
}

/* Runs one mismatched case on c; returns the next case's communicator (shrunk from c). */
static duet_comm_t run_case(duet_comm_t c, int coll, int field, int large, int odd, uint64_t key)
{
    snprintf(ctx, sizeof ctx, "%s, %s differs on rank %d, %s%s", coll_name[coll], field_name[field], odd,
             large ? "large" : "small", use_heap ? ", in the heap" : "");
    dt_set_context(ctx);
    ncases++;
    long before = dt_failures();
    /* the mismatched call's number: after the matched allreduce (#1) and the like calls (a group
     * is two calls) */
    int odd_call = 2 + (repeat ? 3 : 0) * (coll == GRP ? 2 : 1);
    matched_allreduce(c, key, "before the mismatch", odd_call);
    size_t n = large ? LARGE : 2;
    duet_datatype_t dt = DUET_INT32;
    duet_op_t op = DUET_SUM;
    int root = 0;
    char msg[512];
    char report[32];
    snprintf(report, sizeof report, "(call #%d)", odd_call);
    for (int i = 0; i < (repeat ? 3 : 0); i++) { /* the call's shape, matched (its data is test_coll_again's) */
        duet_status_t st = call(c, coll, sbuf, rbuf, n, dt, op, root, msg, sizeof msg);
        /* a rank still in it may be stopped by the revoke of one that found the mismatch after it */
        EXPECT(st == DUET_OK || (st == DUET_ERR_INVALID_ARG && strstr(msg, report)),
               "matched call %d of the shape before the mismatch: %s: %s", i + 1, duet_status_str(st), msg);
    }
    if (me == odd) {
        if (field == F_COUNT) n *= 2;
        if (field == F_PATH) n = 100000;
        if (field == F_DTYPE) dt = DUET_FLOAT32;
        if (field == F_OP) op = DUET_MAX;
        if (field == F_ROOT) root = 1;
    }
    size_t extra = coll == GRP ? (size_t)np : 0; /* the group's allgather lands after the allreduce */
    size_t sb = send_elems(coll, n) * 4, rb = (recv_elems(coll, n) + extra) * 4;
    char *s = sbuf, *r = rbuf;
    for (size_t i = 0; i < sb; i++) s[i] = (char)(i * 7 + (size_t)me);
    memset(r, 0x5a, rb);
    double t0 = now_s();
    duet_status_t st = call(c, coll, s, r, n, dt, op, root, msg, sizeof msg);
    double took = now_s() - t0;
    /* may return OK: a rank that only sends, by its own arguments; or a broadcast's receiver that
     * the odd rank's messages do not reach (another subtree): then with the root's data */
    int sender_only = (coll == BC && me == root) || (coll == RD && me != root);
    int bc_intact = 0;
    if (st == DUET_OK && coll == BC && me != odd && !sender_only) {
        bc_intact = 1;
        for (size_t i = 0; i < n * 4 && bc_intact; i++) bc_intact = r[i] == (char)(i * 7 + (size_t)root);
    }
    if (st == DUET_OK) {
        EXPECT(sender_only || bc_intact, "the mismatched call returned DUET_OK on a rank that receives%s (%.2f s)",
               coll == BC ? " with data other than the root's" : "", took);
    } else {
        EXPECT(st == DUET_ERR_INVALID_ARG, "the mismatched call returned %s after %.2f s, want DUET_ERR_INVALID_ARG: %s",
               duet_status_str(st), took, msg);
        EXPECT(dt_names_rank(msg, odd, field_word[field]), "the message does not name rank %d and \"%s\": %s", odd,
               field_word[field], msg);
    }
    /* the communicator is revoked: a matched call fails on every rank, also on a sender-only one */
    int64_t x = me, y = 0;
    st = duet_allreduce(&x, &y, 1, DUET_INT64, DUET_SUM, c, NULL);
    EXPECT(st == DUET_ERR_INVALID_ARG, "a matched allreduce after the mismatch returned %s, want "
           "DUET_ERR_INVALID_ARG (revoked): %s", duet_status_str(st), duet_last_error());
    duet_comm_t next = dt_shrink_whole(c);
    if (dt_failures() == before) npassed++;
    dt_set_context(NULL);
    return next;
}

int main(int argc, char **argv)
{
    CHECK_OK(duet_init());
    duet_comm_t W = dt_world(&me, &np);
    uint64_t *sym = duet_malloc(W, sizeof *sym);
    CHECK(sym, "duet_malloc: %s", duet_last_error());
    uint64_t seed = dt_pick_seed(dt_seed_text(argc, argv), (uint64_t)time(NULL));
    CHECK_OK(dt_share_seed(W, sym, &seed));
    use_heap = getenv("TEST_MISMATCH_HEAP") && atoi(getenv("TEST_MISMATCH_HEAP"));
    repeat = getenv("TEST_MISMATCH_REPEAT") && atoi(getenv("TEST_MISMATCH_REPEAT"));
    const char *algo = getenv("DUET_ALGO");
    if (me == 0)
        printf("test_coll_mismatch: %d ranks, DUET_ALGO=%s%s%s\n", np, algo && algo[0] ? algo : "(tuner)",
               use_heap ? ", buffers in the heap" : "", repeat ? ", after like calls" : "");
    if (np < 2) { /* nobody to disagree with */
        CHECK_OK(duet_finalize());
        return dt_finish();
    }
    bufs_make(W);
    double t0 = now_s();
    duet_comm_t c = W;
    uint64_t k = 0;
    for (int coll = 0; coll < NCOLL; coll++)
        for (int field = 0; field < NFIELD; field++) {
            if ((field == F_OP && !reduces(coll)) || (field == F_ROOT && !rooted(coll))) continue;
            if (field == F_PATH && coll != AR) continue; /* the lane against the channels */
            for (int large = 0; large < 2; large++) {
                if (field == F_PATH && large) continue;
                if (use_heap && !large) continue;
                int odd = (int)((uint64_t)(coll * 7 + field * 3 + large) % (uint64_t)np);
                if (field == F_ROOT) odd = (coll + large) % 2 ? 0 : 1; /* the root itself, or its replacement */
                c = run_case(c, coll, field, large, odd, seed + ++k);
            }
        }
    dt_set_context("after every case");
    matched_allreduce(c, seed + 999, "the last communicator", 0);
    EXPECT_OK(duet_barrier(c));
    if (c != W) EXPECT_OK(duet_comm_destroy(c));
    if (!use_heap) free(sbuf), free(rbuf); /* (heap buffers go with the heap) */
    if (me == 0) printf("test_coll_mismatch: %ld of %ld cases passed (%.2f s)\n", npassed, ncases, now_s() - t0);
    CHECK_OK(duet_finalize());
    return dt_finish();
}
