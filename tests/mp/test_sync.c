/*
 * test_sync.c — signals, point-to-point synchronization, ordering and barriers, run by
 * every rank under duetrun.
 *
 * Covers:
 *   - duet_put_signal / duet_put_signal_nbi with DUET_SIGNAL_SET and DUET_SIGNAL_ADD, to
 *     every PE including self, many rounds of random sizes (0 .. 16 KiB) at random byte
 *     offsets: the receiver waits for the signal, then every byte must be there;
 *   - duet_signal_op (SET, ADD), duet_signal_fetch, duet_signal_wait_until with all six
 *     comparisons, its value_out, unsigned comparison of large values (each wait starts
 *     from the nearest value that does not satisfy it, and the writer changes the value
 *     only once the waiter says it is waiting, so an off-by-one comparison is caught);
 *   - for every type of DUET_AMO_TYPES (X-macro): duet_test_* against a reference for all
 *     six comparisons over values including negative ones for signed types;
 *     duet_wait_until_* on values a peer writes, all six comparisons (same way); the vector forms
 *     wait_until_all / any / some and their _vector variants, test_all / any / some and
 *     _vector variants, with status arrays excluding elements (excluded elements are made
 *     to satisfy first: they must be ignored), exact indices, the all-excluded and n == 0
 *     cases (any -> SIZE_MAX, some -> count 0, all -> at once);
 *   - duet_fence (put A; fence; put or signal B to the same PE: who sees B sees A),
 *     duet_quiet (put to one PE; quiet; flag to another, which then reads the data),
 *     duet_sync vs duet_barrier / duet_barrier_all (also on a team split by parity), and a
 *     p + wait_until ping-pong;
 *   - argument checks (bad comparison, bad sig_op, misaligned or non-symmetric ivars);
 *   - DUET_WAIT_TIMEOUT: rank 0 starts a copy of this program as a one-rank job with
 *     DUET_WAIT_TIMEOUT=0.5 set (setenv) before duet_init; its wait on a value nobody
 *     writes must fail with DUET_ERR_TIMEOUT within ~1 s and a duet_last_error() message.
 *     (A child process, so that the 0.5 s bound does not apply to rank 0's other waits.)
 *     The other ranks wait in a barrier meanwhile.
 *
 * Usage: test_sync [seed]   (else $DUET_TEST_SEED, else the time; rank 0's seed is used)
 */
#include "duet_test.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAXMSG 16384
#define VN 8 /* elements of each vector-form array */

static int me, npes, left, right;
static duet_comm_t W;

static uint64_t *sig;   /* symmetric uint64_t[64 + 2 * npes]: misc signals, then per-peer */
static uint8_t *dbuf;   /* symmetric npes * (MAXMSG + 8): put_signal inbox, one slot per sender */
static unsigned char *area; /* symmetric 4 KiB: ivars of the type tests, fence / quiet / ping-pong */

/* Boundary waits need the wait to start before the value changes: in phase ph, owners
 * (me % 2 == ph) tell their writer (me + 1) through sig[4] which value they now wait on;
 * the writer writes it only then. A single rank writes its own values. */
enum { ROLE_NONE, ROLE_OWNER, ROLE_WRITER, ROLE_SELF };
static int pair_role(int ph, int *partner)
{
    *partner = me;
    if (npes == 1) return ROLE_SELF;
    if (me % 2 == ph && me + 1 < npes) return *partner = me + 1, ROLE_OWNER;
    if (me % 2 != ph && me >= 1) return *partner = me - 1, ROLE_WRITER;
    return ROLE_NONE;
}

/* ---- signal_op, signal_fetch, signal_wait_until */
static void test_signal_basic(void)
{
    /* each start value is the nearest one that does not satisfy: an off-by-one returns early */
    static const struct { int cmp; uint64_t init, thr, fin; } w[] = {
        {DUET_CMP_EQ, 49, 50, 50}, {DUET_CMP_NE, 50, 50, 51}, {DUET_CMP_GT, 50, 50, 51},
        {DUET_CMP_GE, 49, 50, 50}, {DUET_CMP_LT, 50, 50, 49}, {DUET_CMP_LE, 51, 50, 50},
        {DUET_CMP_GT, 1, 1, UINT64_MAX}, {DUET_CMP_LT, UINT64_MAX - 1, UINT64_MAX - 1, 3}};
    const int nw = (int)(sizeof w / sizeof w[0]);
    uint64_t v = 0;
    memset(sig, 0, 64 * sizeof *sig);
    EXPECT_BARRIER_ALL("signal basic: init");
    for (int p = 0; p < npes; p++) {
        EXPECT_OK(duet_signal_op(W, &sig[0], (uint64_t)me + 1, DUET_SIGNAL_ADD, p));
        if (me == npes - 1) EXPECT_OK(duet_signal_op(W, &sig[1], 1000u + (uint64_t)p, DUET_SIGNAL_SET, p));
    }
    for (int i = 0; i < 5; i++) EXPECT_OK(duet_signal_op(W, &sig[2], 3, DUET_SIGNAL_ADD, right));
    for (int ph = 0; ph < 2; ph++) { /* signal_wait_until, every comparison, at the boundary */
        int partner, role = pair_role(ph, &partner);
        for (int c = 0; c < nw; c++) sig[8 + c] = w[c].init;
        sig[4] = 0;
        EXPECT_BARRIER_ALL("signal wait: init");
        for (int c = 0; c < nw; c++) {
            if (role == ROLE_WRITER) {
                EXPECT_OK(duet_signal_wait_until(W, &sig[4], DUET_CMP_GE, (uint64_t)c + 1, NULL));
                EXPECT_OK(duet_signal_op(W, &sig[8 + c], w[c].fin, DUET_SIGNAL_SET, partner));
            } else if (role != ROLE_NONE) {
                if (role == ROLE_OWNER) EXPECT_OK(duet_signal_op(W, &sig[4], (uint64_t)c + 1, DUET_SIGNAL_SET, partner));
                else EXPECT_OK(duet_signal_op(W, &sig[8 + c], w[c].fin, DUET_SIGNAL_SET, me));
                v = 12345;
                EXPECT_OK(duet_signal_wait_until(W, &sig[8 + c], w[c].cmp, w[c].thr, &v));
                if (v != w[c].fin)
                    FAIL("signal_wait_until cmp %d thr %" PRIu64 " from %" PRIu64 ": value_out %" PRIu64
                         ", expected %" PRIu64, w[c].cmp, w[c].thr, w[c].init, v, w[c].fin);
            }
        }
        EXPECT_BARRIER_ALL("signal wait: done");
    }
    EXPECT_OK(duet_signal_wait_until(W, &sig[2], DUET_CMP_GE, 15, &v));
    if (v != 15) FAIL("signal_wait_until after 5 ADDs of 3: value_out %" PRIu64, v);
    EXPECT_BARRIER_ALL("signal basic: ops done");
    EXPECT_OK(duet_signal_fetch(W, &sig[0], &v));
    if (v != (uint64_t)npes * (npes + 1) / 2) FAIL("signal ADDs from all ranks: %" PRIu64, v);
    EXPECT_OK(duet_signal_fetch(W, &sig[1], &v));
    if (v != 1000u + (uint64_t)me) FAIL("signal SET by the last rank: %" PRIu64, v);
    /* already satisfied: returns at once, every comparison, value_out may be NULL */
    sig[3] = 50;
    static const uint64_t ok_thr[6] = {50, 49, 49, 50, 51, 50};
    for (int c = 0; c < 6; c++) {
        v = 0;
        EXPECT_OK(duet_signal_wait_until(W, &sig[3], c, ok_thr[c], &v));
        if (v != 50) FAIL("signal_wait_until (already true, cmp %d): value_out %" PRIu64, c, v);
        EXPECT_OK(duet_signal_wait_until(W, &sig[3], c, ok_thr[c], NULL));
    }
    EXPECT_BARRIER_ALL("signal basic: end");
}

/* ---- put_signal: every rank to every rank, flow-controlled by acks */
static void test_put_signal(void)
{
    uint64_t *in_sig = sig + 64, *ack = sig + 64 + npes; /* in_sig[src], ack[dst] */
    int rounds = npes > 4 ? 40 : 150;
    uint8_t **src = calloc((size_t)npes, sizeof *src);
    for (int p = 0; p < npes; p++) src[p] = malloc(MAXMSG);
    memset(in_sig, 0, 2 * (size_t)npes * sizeof *in_sig);
    EXPECT_BARRIER_ALL("put_signal: init");
    for (int j = 0; j < rounds; j++) {
        for (int d = 0; d < npes; d++) {
            int p = (me + d) % npes;
            uint64_t h = key3((uint64_t)j, (uint64_t)me, (uint64_t)p);
            size_t n = h % 5 == 0 ? 0 : (h >> 8) % 3 == 0 ? (size_t)((h >> 16) % MAXMSG) : (size_t)((h >> 16) % 200);
            size_t off = (size_t)(h >> 40) % 8;
            int op = (j + p) % 2 ? DUET_SIGNAL_SET : DUET_SIGNAL_ADD, nbi = (int)((h >> 50) & 1);
            EXPECT_OK(duet_signal_wait_until(W, &ack[p], DUET_CMP_GE, (uint64_t)j, NULL)); /* p has read round j-1 */
            stream_fill(src[p], n, h);
            uint64_t value = op == DUET_SIGNAL_SET ? (uint64_t)j + 1 : 1;
            uint8_t *dest = dbuf + (size_t)me * (MAXMSG + 8) + off;
            if (nbi) EXPECT_OK(duet_put_signal_nbi(W, dest, src[p], n, &in_sig[me], value, op, p));
            else EXPECT_OK(duet_put_signal(W, dest, src[p], n, &in_sig[me], value, op, p));
        }
        EXPECT_OK(duet_quiet(W)); /* the _nbi sources may be reused after this */
        for (int s = 0; s < npes; s++) {
            uint64_t h = key3((uint64_t)j, (uint64_t)s, (uint64_t)me), v = 0;
            size_t n = h % 5 == 0 ? 0 : (h >> 8) % 3 == 0 ? (size_t)((h >> 16) % MAXMSG) : (size_t)((h >> 16) % 200);
            size_t off = (size_t)(h >> 40) % 8, bad;
            EXPECT_OK(duet_signal_wait_until(W, &in_sig[s], DUET_CMP_GE, (uint64_t)j + 1, &v));
            if (v != (uint64_t)j + 1) FAIL("put_signal round %d from %d: signal %" PRIu64 ", expected %d", j, s, v, j + 1);
            if ((bad = stream_diff(dbuf + (size_t)s * (MAXMSG + 8) + off, n, h)) != SIZE_MAX)
                FAIL("put_signal round %d from %d (%zu bytes at offset %zu, %s): byte %zu is wrong after the "
                     "signal was seen", j, s, n, off, (j + me) % 2 ? "SET" : "ADD", bad);
            EXPECT_OK(duet_signal_op(W, &ack[me], 1, DUET_SIGNAL_ADD, s));
        }
    }
    EXPECT_BARRIER_ALL("put_signal: end");
    for (int p = 0; p < npes; p++) free(src[p]);
    free(src);
}

/* ---- wait_until / test, scalar and vector, per AMO type */
/* A non-satisfying start, a threshold, a satisfying end, for each comparison. */
static const struct { int cmp; long long init, thr, fin; } scal[6] = {
    {DUET_CMP_EQ, -6, -7, -7}, {DUET_CMP_NE, -7, -7, 3}, {DUET_CMP_GT, -3, -3, -2},
    {DUET_CMP_GE, -4, -3, -3}, {DUET_CMP_LT, -3, -3, -4}, {DUET_CMP_LE, -2, -3, -3}};

#define SYNC_TEST(T, N)                                                                           \
    static int ref_##N(T a, int c, T b)                                                           \
    {                                                                                             \
        return c == DUET_CMP_EQ ? a == b : c == DUET_CMP_NE ? a != b : c == DUET_CMP_GT ? a > b   \
             : c == DUET_CMP_GE ? a >= b : c == DUET_CMP_LT ? a < b : a <= b;                     \
    }                                                                                             \
    static void sync_##N(int t)                                                                   \
    {                                                                                             \
        T *iv = (T *)(void *)area, base = (T)((T)-1 < (T)1 ? 0 : 20), vals[7];                    \
        vals[0] = 0, vals[1] = 1, vals[2] = (T)-1, vals[3] = (T)-3, vals[4] = (T)(key3(2, (uint64_t)t, 0)); \
        vals[5] = (T)((uint64_t)1 << (sizeof(T) * 8 - 1)), vals[6] = (T)((uint64_t)vals[5] - 1);         \
        for (int a = 0; a < 7; a++) /* local: test against the reference */                      \
            for (int b = 0; b < 7; b++)                                                           \
                for (int c = 0; c < 6; c++) {                                                     \
                    int sat = -1;                                                                 \
                    iv[40] = vals[a];                                                             \
                    EXPECT_OK(duet_test_##N(W, &iv[40], c, vals[b], &sat));                       \
                    if (sat != ref_##N(vals[a], c, vals[b]))                                      \
                        FAIL("test_" #N "(%lld cmp %d %lld) = %d", (long long)vals[a], c, (long long)vals[b], sat); \
                    if (sat == 1) EXPECT_OK(duet_wait_until_##N(W, &iv[40], c, vals[b]));         \
                }                                                                                 \
        /* remote, at the boundary (see pair_role): the writer moves each ivar init -> fin */   \
        for (int ph = 0; ph < 2; ph++) {                                                          \
            int partner, role = pair_role(ph, &partner);                                          \
            for (int c = 0; c < 6; c++) iv[c] = (T)(base + (T)scal[c].init);                      \
            iv[6] = base ? 1 : 0; /* extreme: unsigned max > 1, signed min < 0 */                 \
            sig[4] = 0;                                                                           \
            EXPECT_BARRIER_ALL("wait_until: init");                                               \
            for (int c = 0; c < 7 && role != ROLE_NONE; c++) {                                    \
                int cmp = c < 6 ? scal[c].cmp : base ? DUET_CMP_GT : DUET_CMP_LT;                 \
                T thr = c < 6 ? (T)(base + (T)scal[c].thr) : base ? (T)1 : (T)0;                  \
                T fin = c < 6 ? (T)(base + (T)scal[c].fin) : base ? (T)-1 : vals[5];              \
                int sat = 0;                                                                      \
                if (role == ROLE_WRITER) {                                                        \
                    EXPECT_OK(duet_signal_wait_until(W, &sig[4], DUET_CMP_GE, (uint64_t)c + 1, NULL)); \
                    EXPECT_OK(duet_atomic_set_##N(W, &iv[c], fin, partner));                      \
                    continue;                                                                     \
                }                                                                                 \
                if (role == ROLE_OWNER) EXPECT_OK(duet_signal_op(W, &sig[4], (uint64_t)c + 1, DUET_SIGNAL_SET, partner)); \
                else EXPECT_OK(duet_atomic_set_##N(W, &iv[c], fin, me));                          \
                EXPECT_OK(duet_wait_until_##N(W, &iv[c], cmp, thr));                              \
                if (iv[c] != fin) FAIL("wait_until_" #N " cmp %d returned; value %lld, expected %lld", cmp, (long long)iv[c], (long long)fin); \
                EXPECT_OK(duet_test_##N(W, &iv[c], cmp, thr, &sat));                              \
                if (sat != 1) FAIL("test_" #N " cmp %d after the wait: %d", cmp, sat);            \
            }                                                                                     \
            EXPECT_BARRIER_ALL("wait_until: done");                                               \
        }                                                                                         \
        /* vector forms: arrays [all, any, some, all_v, any_v, some_v] of VN, two excluded */    \
        int c = t % 6, cmp = scal[c].cmp, st[VN] = {0}, none[VN], chosen;                         \
        T thr = (T)(base + (T)scal[c].thr), vthr[VN];                                             \
        st[t % VN] = st[(t + 3) % VN] = 1;                                                        \
        for (chosen = (int)(key3(3, (uint64_t)t, (uint64_t)left) % VN); st[chosen]; chosen = (chosen + 1) % VN) {}         \
        for (int i = 0; i < VN; i++) {                                                            \
            none[i] = 1;                                                                          \
            vthr[i] = (T)(thr + (T)i);                                                            \
            for (int k = 0; k < 6; k++) iv[k * 8 + i] = (T)(base + (T)scal[c].init + (k >= 3 ? (T)i : 0)); \
        }                                                                                         \
        EXPECT_BARRIER_ALL("vector: init");                                                       \
        int rchosen;                                                                              \
        for (rchosen = (int)(key3(3, (uint64_t)t, (uint64_t)me) % VN); st[rchosen]; rchosen = (rchosen + 1) % VN) {}         \
        for (int k = 0; k < 6; k++) {                                                             \
            T *arr = &iv[k * 8];                                                                  \
            T d = k >= 3 ? 1 : 0, fin = (T)(base + (T)scal[c].fin);                               \
            if (k % 3 == 0) { /* all: every included element, none of the excluded */             \
                for (int i = VN - 1; i >= 0; i--)                                                 \
                    if (!st[i]) EXPECT_OK(duet_atomic_set_##N(W, &arr[i], (T)(fin + d * (T)i), right)); \
            } else { /* any / some: the excluded first, then one included */                      \
                for (int i = 0; i < VN; i++)                                                      \
                    if (st[i]) EXPECT_OK(duet_atomic_set_##N(W, &arr[i], (T)(fin + d * (T)i), right)); \
                EXPECT_OK(duet_fence(W));                                                         \
                EXPECT_OK(duet_atomic_set_##N(W, &arr[rchosen], (T)(fin + d * (T)rchosen), right)); \
            }                                                                                     \
        }                                                                                         \
        size_t idx = 777, idxs[VN], cnt = 777;                                                    \
        EXPECT_OK(duet_wait_until_all_##N(W, &iv[0], VN, st, cmp, thr));                          \
        EXPECT_OK(duet_wait_until_any_##N(W, &iv[8], VN, st, cmp, thr, &idx));                    \
        if (idx != (size_t)chosen) FAIL("wait_until_any_" #N ": index %zu, expected %d", idx, chosen); \
        EXPECT_OK(duet_wait_until_some_##N(W, &iv[16], VN, st, cmp, thr, idxs, &cnt));            \
        if (cnt != 1 || idxs[0] != (size_t)chosen) FAIL("wait_until_some_" #N ": count %zu first %zu, expected 1 x %d", cnt, idxs[0], chosen); \
        EXPECT_OK(duet_wait_until_all_vector_##N(W, &iv[24], VN, st, cmp, vthr));                 \
        EXPECT_OK(duet_wait_until_any_vector_##N(W, &iv[32], VN, st, cmp, vthr, &idx));           \
        if (idx != (size_t)chosen) FAIL("wait_until_any_vector_" #N ": index %zu, expected %d", idx, chosen); \
        cnt = 777;                                                                                \
        EXPECT_OK(duet_wait_until_some_vector_##N(W, &iv[40], VN, st, cmp, vthr, idxs, &cnt));    \
        if (cnt != 1 || idxs[0] != (size_t)chosen) FAIL("wait_until_some_vector_" #N ": count %zu, expected 1 x %d", cnt, chosen); \
        for (int k = 0; k < 6; k += 3)                                                            \
            for (int i = 0; i < VN; i++)                                                          \
                if (!st[i] && !ref_##N(iv[k * 8 + i], cmp, k ? vthr[i] : thr))                     \
                    FAIL("wait_until_all%s_" #N " returned before element %d was satisfied", k ? "_vector" : "", i); \
        EXPECT_BARRIER_ALL("vector: writes done"); /* now every value is final: exact test_* results */ \
        for (int k = 0; k < 6; k += 3) {                                                          \
            const T *vv = k ? vthr : NULL;                                                        \
            int sat = -1, want_some = 0;                                                          \
            for (int i = 0; i < VN; i++) want_some += !st[i];                                     \
            if (vv) EXPECT_OK(duet_test_all_vector_##N(W, &iv[k * 8], VN, st, cmp, vv, &sat));    \
            else EXPECT_OK(duet_test_all_##N(W, &iv[0], VN, st, cmp, thr, &sat));                 \
            if (sat != 1) FAIL("test_all%s_" #N " on the 'all' array: %d", vv ? "_vector" : "", sat); \
            if (vv) EXPECT_OK(duet_test_all_vector_##N(W, &iv[k * 8], VN, NULL, cmp, vv, &sat));  \
            else EXPECT_OK(duet_test_all_##N(W, &iv[0], VN, NULL, cmp, thr, &sat));               \
            if (sat != 0) FAIL("test_all%s_" #N " without status (excluded unsatisfied): %d", vv ? "_vector" : "", sat); \
            cnt = 777;                                                                            \
            if (vv) EXPECT_OK(duet_test_some_vector_##N(W, &iv[k * 8], VN, st, cmp, vv, idxs, &cnt)); \
            else EXPECT_OK(duet_test_some_##N(W, &iv[0], VN, st, cmp, thr, idxs, &cnt));          \
            int seen[VN] = {0}, badset = cnt != (size_t)want_some;                                \
            for (size_t q = 0; q < cnt && q < VN && !badset; q++)                                 \
                badset = idxs[q] >= VN || st[idxs[q]] || seen[idxs[q]]++;                         \
            if (badset) FAIL("test_some%s_" #N " on the 'all' array: count %zu, expected %d", vv ? "_vector" : "", cnt, want_some); \
            idx = 777;                                                                            \
            if (vv) EXPECT_OK(duet_test_any_vector_##N(W, &iv[k * 8 + 8], VN, st, cmp, vv, &idx)); \
            else EXPECT_OK(duet_test_any_##N(W, &iv[8], VN, st, cmp, thr, &idx));                 \
            if (idx != (size_t)chosen) FAIL("test_any%s_" #N ": %zu, expected %d", vv ? "_vector" : "", idx, chosen); \
            if (vv) EXPECT_OK(duet_test_some_vector_##N(W, &iv[k * 8 + 16], VN, NULL, cmp, vv, idxs, &cnt)); \
            else EXPECT_OK(duet_test_some_##N(W, &iv[16], VN, NULL, cmp, thr, idxs, &cnt));       \
            if (cnt != 3) FAIL("test_some%s_" #N " without status: count %zu, expected 3", vv ? "_vector" : "", cnt); \
            for (size_t q = 0; q < cnt && q < VN; q++)                                            \
                if (idxs[q] >= VN || (!st[idxs[q]] && idxs[q] != (size_t)chosen)) FAIL("test_some" #N ": index %zu is not satisfied", idxs[q]); \
            if (vv) EXPECT_OK(duet_test_all_vector_##N(W, &iv[k * 8 + 8], VN, st, cmp, vv, &sat)); \
            else EXPECT_OK(duet_test_all_##N(W, &iv[8], VN, st, cmp, thr, &sat));                 \
            if (sat != 0) FAIL("test_all%s_" #N " with one of six satisfied: %d", vv ? "_vector" : "", sat); \
            /* every element excluded, and n == 0 */                                              \
            for (int z = 0; z < 2; z++) {                                                         \
                size_t n = z ? 0 : VN;                                                            \
                idx = 777, cnt = 777, sat = -1;                                                   \
                if (vv) {                                                                         \
                    EXPECT_OK(duet_wait_until_all_vector_##N(W, &iv[k * 8], n, none, cmp, vv));   \
                    EXPECT_OK(duet_wait_until_any_vector_##N(W, &iv[k * 8], n, none, cmp, vv, &idx)); \
                    EXPECT_OK(duet_wait_until_some_vector_##N(W, &iv[k * 8], n, none, cmp, vv, idxs, &cnt)); \
                } else {                                                                          \
                    EXPECT_OK(duet_wait_until_all_##N(W, &iv[0], n, none, cmp, thr));             \
                    EXPECT_OK(duet_wait_until_any_##N(W, &iv[0], n, none, cmp, thr, &idx));       \
                    EXPECT_OK(duet_wait_until_some_##N(W, &iv[0], n, none, cmp, thr, idxs, &cnt)); \
                }                                                                                 \
                if (idx != SIZE_MAX || cnt != 0) FAIL("wait_until_any/some%s_" #N " all excluded (n %zu): index %zu count %zu", vv ? "_vector" : "", n, idx, cnt); \
                idx = 777, cnt = 777;                                                             \
                if (vv) {                                                                         \
                    EXPECT_OK(duet_test_all_vector_##N(W, &iv[k * 8], n, none, cmp, vv, &sat));   \
                    EXPECT_OK(duet_test_any_vector_##N(W, &iv[k * 8], n, none, cmp, vv, &idx));   \
                    EXPECT_OK(duet_test_some_vector_##N(W, &iv[k * 8], n, none, cmp, vv, idxs, &cnt)); \
                } else {                                                                          \
                    EXPECT_OK(duet_test_all_##N(W, &iv[0], n, none, cmp, thr, &sat));             \
                    EXPECT_OK(duet_test_any_##N(W, &iv[0], n, none, cmp, thr, &idx));             \
                    EXPECT_OK(duet_test_some_##N(W, &iv[0], n, none, cmp, thr, idxs, &cnt));      \
                }                                                                                 \
                if (sat != 1 || idx != SIZE_MAX || cnt != 0) FAIL("test_all/any/some%s_" #N " all excluded (n %zu): %d %zu %zu", vv ? "_vector" : "", n, sat, idx, cnt); \
            }                                                                                     \
        }                                                                                         \
        /* nothing satisfied yet: test_any -> SIZE_MAX, test_some -> 0, test_all -> 0 */         \
        for (int i = 0; i < VN; i++) iv[48 + i] = (T)(base + (T)scal[c].init);                    \
        int sat = -1;                                                                             \
        idx = 777, cnt = 777;                                                                     \
        EXPECT_OK(duet_test_any_##N(W, &iv[48], VN, NULL, cmp, thr, &idx));                       \
        EXPECT_OK(duet_test_some_##N(W, &iv[48], VN, st, cmp, thr, idxs, &cnt));                  \
        EXPECT_OK(duet_test_all_##N(W, &iv[48], VN, st, cmp, thr, &sat));                         \
        if (idx != SIZE_MAX || cnt != 0 || sat != 0) FAIL("test_any/some/all_" #N " none satisfied: %zu %zu %d", idx, cnt, sat); \
        EXPECT_INVALID(duet_wait_until_##N(W, &iv[0], 6, thr), "wait_until_" #N " cmp 6");        \
        EXPECT_INVALID(duet_test_any_##N(W, &iv[0], VN, NULL, -1, thr, &idx), "test_any_" #N " cmp -1"); \
        EXPECT_INVALID(duet_test_##N(W, (T *)(void *)((char *)iv + 1), DUET_CMP_EQ, 0, &sat), "test_" #N " misaligned"); \
        EXPECT_INVALID(duet_wait_until_##N(W, &thr, DUET_CMP_EQ, thr), "wait_until_" #N " non-symmetric"); \
        EXPECT_BARRIER_ALL("vector: checks done");                                                \
    }
DUET_AMO_TYPES(SYNC_TEST)

/* ---- fence: put A; fence; B (a p or a signal) to the same PE; who sees B sees A */
static void test_fence(void)
{
    uint8_t *a = area + 1024, *src = malloc(1024);
    uint64_t *flag = (uint64_t *)(void *)(area + 2048), *fsig = flag + 1, *ack = flag + 2;
    int rounds = npes > 4 ? 60 : 200;
    memset(area + 1024, 0, 1024 + 64);
    EXPECT_BARRIER_ALL("fence: init");
    for (int j = 1; j <= rounds; j++) {
        EXPECT_OK(duet_signal_wait_until(W, ack, DUET_CMP_GE, (uint64_t)j - 1, NULL)); /* right read j-1 */
        size_t n = 1 + key3(4, (uint64_t)j, (uint64_t)me) % 1024;
        stream_fill(src, n, key3(5, (uint64_t)j, (uint64_t)me));
        EXPECT_OK(duet_put(W, a, src, n, right));
        EXPECT_OK(duet_fence(W));
        if (j % 2) EXPECT_OK(duet_p_uint64(W, flag, (uint64_t)j, right));
        else EXPECT_OK(duet_signal_op(W, fsig, (uint64_t)j, DUET_SIGNAL_SET, right));
        if (j % 2) EXPECT_OK(duet_wait_until_uint64(W, flag, DUET_CMP_EQ, (uint64_t)j));
        else EXPECT_OK(duet_signal_wait_until(W, fsig, DUET_CMP_EQ, (uint64_t)j, NULL));
        size_t m = 1 + key3(4, (uint64_t)j, (uint64_t)left) % 1024, bad;
        if ((bad = stream_diff(a, m, key3(5, (uint64_t)j, (uint64_t)left))) != SIZE_MAX)
            FAIL("fence round %d: saw B from %d but byte %zu of A is stale", j, left, bad);
        EXPECT_OK(duet_signal_op(W, ack, (uint64_t)j, DUET_SIGNAL_SET, left));
    }
    EXPECT_BARRIER_ALL("fence: end");
    free(src);
}

/* ---- quiet: put to PE me+1; quiet; flag PE me+2, which then gets the data from me+1 */
static void test_quiet(void)
{
    uint8_t *data = area + 3072, *src = malloc(512), *got = malloc(512);
    uint64_t *flag = (uint64_t *)(void *)(area + 3072 + 512), *ack = flag + 1;
    int a = (me + 1) % npes, b = (me + 2) % npes, s = (me - 2 + 2 * npes) % npes, sa = (s + 1) % npes;
    int rounds = npes > 4 ? 40 : 150;
    memset(area + 3072, 0, 512 + 64);
    EXPECT_BARRIER_ALL("quiet: init");
    for (int j = 1; j <= rounds; j++) {
        EXPECT_OK(duet_signal_wait_until(W, ack, DUET_CMP_GE, (uint64_t)j - 1, NULL));
        stream_fill(src, 512, key3(6, (uint64_t)j, (uint64_t)me));
        EXPECT_OK(duet_put_nbi(W, data, src, 512, a));
        EXPECT_OK(duet_quiet(W));
        EXPECT_OK(duet_atomic_set_uint64(W, flag, (uint64_t)j, b));
        EXPECT_OK(duet_wait_until_uint64(W, flag, DUET_CMP_GE, (uint64_t)j)); /* from s */
        EXPECT_OK(duet_get(W, got, data, 512, sa));
        size_t bad = stream_diff(got, 512, key3(6, (uint64_t)j, (uint64_t)s));
        if (bad != SIZE_MAX) FAIL("quiet round %d: rank %d flagged me after quiet, but byte %zu at %d is stale", j, s, bad, sa);
        EXPECT_OK(duet_signal_op(W, ack, (uint64_t)j, DUET_SIGNAL_SET, s));
    }
    EXPECT_BARRIER_ALL("quiet: end");
    free(src);
    free(got);
}

/* ---- sync (entry only) vs barrier (completion too), on the world and on a team */
static void test_sync_barrier(void)
{
    uint64_t *cnt = (uint64_t *)(void *)(area + 3712), *arr = cnt + 8; /* arr[npes] */
    int rounds = npes > 4 ? 30 : 100;
    memset(cnt, 0, 8 * 8);
    memset(arr, 0xff, 8 * (size_t)npes);
    EXPECT_BARRIER_ALL("sync: init");
    for (int j = 0; j < rounds; j++) {
        uint64_t v = 0;
        EXPECT_OK(duet_atomic_fetch_inc_uint64(W, cnt, 0, &v)); /* a fetching atomic is complete on return */
        EXPECT_OK(duet_sync(W));
        EXPECT_OK(duet_atomic_fetch_uint64(W, cnt, 0, &v));
        if (v < (uint64_t)npes * (j + 1) || v > (uint64_t)npes * (j + 2))
            FAIL("duet_sync round %d: counter %" PRIu64 ", expected [%d, %d]", j, v, npes * (j + 1), npes * (j + 2));
        uint64_t mine = (uint64_t)j; /* the _nbi source lives until the barrier's quiet */
        for (int p = 0; p < npes; p++) EXPECT_OK(duet_put_nbi(W, &arr[me], &mine, 8, p));
        EXPECT_OK(j % 2 ? duet_barrier(W) : duet_barrier_all()); /* completes my puts, waits for everyone's */
        for (int r = 0; r < npes; r++) /* nobody puts j+1 before I enter the next duet_sync */
            if (arr[r] != (uint64_t)j)
                FAIL("barrier round %d: rank %d's put shows %" PRIu64, j, r, arr[r]);
    }
    EXPECT_BARRIER_ALL("sync: world done");
    duet_comm_t team = NULL;
    EXPECT_OK(duet_comm_split(W, me % 2, 0, &team));
    if (!team) { FAIL("duet_comm_split gave no team"); return; }
    int tn = duet_comm_size(team);
    cnt[1] = 0;
    EXPECT_OK(duet_barrier(team));
    for (int j = 0; j < rounds; j++) {
        uint64_t v = 0;
        EXPECT_OK(duet_atomic_fetch_inc_uint64(team, &cnt[1], 0, &v));
        EXPECT_OK(duet_sync(team));
        EXPECT_OK(duet_atomic_fetch_uint64(team, &cnt[1], 0, &v));
        if (v < (uint64_t)tn * (j + 1) || v > (uint64_t)tn * (j + 2))
            FAIL("duet_sync(team) round %d: counter %" PRIu64 ", expected [%d, %d]", j, v, tn * (j + 1), tn * (j + 2));
    }
    EXPECT_OK(duet_barrier(team));
    EXPECT_OK(duet_comm_destroy(team));
    EXPECT_BARRIER_ALL("sync: team done");
}

/* ---- ping-pong between ranks 2k and 2k+1 with p + wait_until */
static void test_pingpong(void)
{
    long *ping = (long *)(void *)(area + 3968), *pong = ping + 1;
    int rounds = npes > 4 ? 300 : 1000, peer = me ^ 1;
    *ping = *pong = 0;
    EXPECT_BARRIER_ALL("pingpong: init");
    if (peer < npes) {
        for (long i = 1; i <= rounds; i++) {
            if (me % 2 == 0) {
                EXPECT_OK(duet_p_long(W, ping, i, peer));
                EXPECT_OK(duet_wait_until_long(W, pong, DUET_CMP_GE, i));
                if (*pong != i) FAIL("pingpong round %ld: pong %ld", i, *pong);
            } else {
                EXPECT_OK(duet_wait_until_long(W, ping, DUET_CMP_GE, i));
                if (*ping != i) FAIL("pingpong round %ld: ping %ld", i, *ping);
                EXPECT_OK(duet_p_long(W, pong, i, peer));
            }
        }
    }
    EXPECT_BARRIER_ALL("pingpong: end");
}

static void test_args(void)
{
    uint64_t local = 0, v;
    uint8_t src[8] = {0};
    EXPECT_INVALID(duet_signal_wait_until(W, &sig[0], 6, 0, &v), "signal_wait_until cmp 6");
    EXPECT_INVALID(duet_signal_wait_until(W, &sig[0], -1, 0, &v), "signal_wait_until cmp -1");
    EXPECT_INVALID(duet_signal_wait_until(W, &local, DUET_CMP_EQ, 0, &v), "signal_wait_until non-symmetric");
    EXPECT_INVALID(duet_signal_fetch(W, (uint64_t *)(void *)((char *)sig + 4), &v), "signal_fetch misaligned");
    EXPECT_INVALID(duet_signal_op(W, &sig[0], 1, 7, right), "signal_op sig_op 7");
    EXPECT_INVALID(duet_signal_op(W, &sig[0], 1, DUET_SIGNAL_ADD, npes), "signal_op PE npes");
    EXPECT_INVALID(duet_put_signal(W, dbuf, src, 8, &local, 1, DUET_SIGNAL_SET, right), "put_signal non-symmetric signal");
    EXPECT_INVALID(duet_put_signal_nbi(W, dbuf, src, 8, &sig[0], 1, 2, right), "put_signal_nbi sig_op 2");
    EXPECT_INVALID(duet_put_signal(W, src, src, 8, &sig[0], 1, DUET_SIGNAL_SET, right), "put_signal non-symmetric dest");
}

/* ---- the DUET_WAIT_TIMEOUT child: a one-rank job of its own */
static int timeout_child(void)
{
    static const char *launch[] = {"DUET_RANK", "DUET_NRANKS", "DUET_LOCAL_RANK", "DUET_LOCAL_SIZE",
                                   "DUET_BOOT_ADDR", "DUET_BOOT_LISTEN_FD"};
    for (size_t i = 0; i < sizeof launch / sizeof launch[0]; i++) unsetenv(launch[i]);
    setenv("DUET_WAIT_TIMEOUT", "0.5", 1);
    dt_set_context("timeout child");
    CHECK_OK(duet_init());
    W = dt_world(&me, &npes);
    long *x = duet_calloc(W, 1, sizeof(long));
    uint64_t *s = duet_calloc(W, 1, sizeof(uint64_t));
    CHECK(x && s && npes == 1, "setup failed");
    double t0 = now_s();
    duet_status_t st = duet_wait_until_long(W, x, DUET_CMP_EQ, 1);
    double t1 = now_s();
    const char *msg = duet_last_error();
    if (st != DUET_ERR_TIMEOUT) FAIL("wait_until with DUET_WAIT_TIMEOUT=0.5 returned %s", duet_status_str(st));
    if (t1 - t0 < 0.45 || t1 - t0 > 1.5) FAIL("wait_until timed out after %.3f s, expected ~0.5 s", t1 - t0);
    if (!msg || !msg[0]) FAIL("DUET_ERR_TIMEOUT without a duet_last_error() message");
    else printf("test_sync: timeout after %.3f s: %s\n", t1 - t0, msg);
    t0 = now_s();
    st = duet_signal_wait_until(W, s, DUET_CMP_GT, 0, NULL);
    t1 = now_s();
    if (st != DUET_ERR_TIMEOUT || t1 - t0 > 1.5 || !duet_last_error()[0])
        FAIL("signal_wait_until: %s after %.3f s, message \"%s\"", duet_status_str(st), t1 - t0, duet_last_error());
    EXPECT_OK(duet_free(W, s));
    EXPECT_OK(duet_free(W, x));
    EXPECT_OK(duet_finalize());
    return dt_finish();
}

static void test_timeout(const char *self)
{
    if (me == 0) {
        pid_t pid = fork();
        if (pid == 0) {
            execl("/proc/self/exe", self, "--timeout-child", (char *)NULL);
            _exit(127);
        }
        int status = 0;
        if (pid < 0 || waitpid(pid, &status, 0) != pid) FAIL("cannot run the timeout child");
        else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) FAIL("the DUET_WAIT_TIMEOUT child failed (status 0x%x)", status);
    }
    EXPECT_BARRIER_ALL("after the timeout test");
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* lines survive a killed job */
    if (argc > 1 && strcmp(argv[1], "--timeout-child") == 0) return timeout_child();
    uint64_t seed = dt_pick_seed(dt_seed_text(argc, argv), (uint64_t)time(NULL));
    CHECK_OK(duet_init());
    W = dt_world(&me, &npes);
    left = (me - 1 + npes) % npes;
    right = (me + 1) % npes;
    sig = duet_calloc(W, 64 + 2 * (size_t)npes, sizeof(uint64_t));
    dbuf = duet_malloc(W, (size_t)npes * (MAXMSG + 8));
    area = duet_calloc(W, 4096, 1);
    CHECK(sig && dbuf && area, "allocation failed");
    EXPECT_OK_MSG(dt_share_seed(W, &sig[63], &seed), "seed");
    if (me == 0) printf("test_sync: %d PEs, seed %" PRIu64 "\n", npes, seed);

    test_signal_basic();
    test_put_signal();
    int t = 0;
#define RUN(T, N) sync_##N(t++);
    DUET_AMO_TYPES(RUN)
#undef RUN
    test_fence();
    test_quiet();
    test_sync_barrier();
    test_pingpong();
    test_args();
    test_timeout(argv[0]);

    EXPECT_BARRIER_ALL("final");
    EXPECT_OK(duet_free(W, area));
    EXPECT_OK(duet_free(W, dbuf));
    EXPECT_OK(duet_free(W, sig));
    EXPECT_OK(duet_finalize());
    if (dt_finish()) return 1;
    if (me == 0) printf("test_sync: passed on %d PEs\n", npes);
    return 0;
}
