/*
 * test_amo.c — remote atomics, run by every rank under duetrun.
 *
 * Covers every atomic of duet.h for every type of its table (the X-macros generate the
 * calls):
 *   - DUET_AMO_TYPES: fetch, set, swap, compare_swap (success and failure), fetch_add, add,
 *     fetch_inc, inc; returned old values and final values checked exactly, on every PE
 *     including self (each rank owns one slot per type on every PE; the owner of the
 *     memory checks the final values after a barrier);
 *   - DUET_AMO_BITWISE_TYPES: fetch_and, and, fetch_or, or, fetch_xor, xor;
 *   - DUET_AMO_EXTENDED_TYPES: fetch, set, swap on float and double;
 *   - contention, per type: all ranks fetch_inc (and fetch_add with a step, negative for
 *     signed types) one counter: the fetched values, gathered, are exactly
 *     {0..N*k-1} * step; add + inc on a counter on every PE; a compare_swap retry loop
 *     whose successful old values are again exactly {0..N*k-1}; for bitwise types xor /
 *     or / and with per-rank patterns (final value determined, fetched values monotone);
 *     a compare_swap spin lock protecting a non-atomic counter updated with g + p;
 *   - misaligned targets -> DUET_ERR_INVALID_ARG with a message, target untouched; bad PE
 *     and non-symmetric targets -> DUET_ERR_INVALID_ARG.
 *
 * Usage: test_amo [seed]   (else $DUET_TEST_SEED, else the time; rank 0's seed is used)
 */
#include "duet_test.h"

#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SLOT 16 /* bytes per (type, rank) slot: fits every AMO type, keeps 16-byte alignment */

static int me, npes, kc; /* kc: operations per rank in the contention phases */
static duet_comm_t W;
static unsigned char *fun;  /* symmetric: [table][rank] slots for the single-op checks */
static unsigned char *ctr;  /* symmetric: contention counters, zeroed per phase */
static int64_t *gather;     /* symmetric: npes * kc normalized values, one row per rank */

/* got == want for a value of type T; the report shows both (as long double) */
#define EXPECT_VAL(T, name, got, want, ...)                                                    \
    do {                                                                                       \
        T g_ = (got), w_ = (want);                                                             \
        if (!(g_ == w_)) {                                                                     \
            char c_[256];                                                                      \
            snprintf(c_, sizeof c_, __VA_ARGS__);                                              \
            FAIL("%s: %s is %.17Lg, expected %.17Lg (%s)", name, #got, (long double)g_,        \
                 (long double)w_, c_);                                                         \
        }                                                                                      \
    } while (0)

/* A retry loop that keeps failing for 10 s is a failure, not a hang. */
static int stuck(int tries)
{
    static struct timespec t0;
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    if (tries == 4095) t0 = t;
    if (t.tv_sec - t0.tv_sec < 10) return 0;
    FAIL("a compare_swap retry loop made no progress for 10 s (%d tries)", tries);
    return 1;
}

/* Random T with wrap-around arithmetic done in uint64_t (no signed overflow). */
#define RND(T, k) ((T)(k))
#define WRAP_ADD(T, a, b) ((T)((uint64_t)(a) + (uint64_t)(b)))
#define IS_SIGNED(T) ((T)-1 < (T)1)

/* Gathers every rank's kc normalized values to every rank and checks they are exactly
 * {0 .. npes*kc-1}. */
static void check_permutation(const int64_t *mine, const char *what)
{
    EXPECT_OK_MSG(dt_allgather(W, gather, mine, sizeof(int64_t) * (size_t)kc), "gather (%s)", what);
    size_t total = (size_t)npes * (size_t)kc;
    unsigned char *seen = calloc(total, 1);
    for (size_t i = 0; i < total; i++) {
        int64_t v = gather[i];
        if (v < 0 || (uint64_t)v >= total) {
            FAIL("%s: rank %zu fetched normalized value %" PRId64 ", outside [0, %zu)", what, i / (size_t)kc, v, total);
            break;
        }
        if (seen[v]++) {
            FAIL("%s: normalized value %" PRId64 " was fetched twice (second by rank %zu)", what, v, i / (size_t)kc);
            break;
        }
    }
    free(seen);
    EXPECT_BARRIER_ALL(what); /* nobody overwrites gather before everyone has checked it */
}

/* ---- integer AMO types: single-op checks, misalignment, contention */
#define AMO_TEST(T, N)                                                                            \
    static T fun_final_##N(int t, int r, int p, T *a_out)                                         \
    {                                                                                             \
        T v2 = RND(T, key3((uint64_t)t, (uint64_t)r, (uint64_t)p * 8 + 2));                       \
        T a = RND(T, key3((uint64_t)t, (uint64_t)r, (uint64_t)p * 8 + 4));                        \
        T b = RND(T, key3((uint64_t)t, (uint64_t)r, (uint64_t)p * 8 + 5));                        \
        if (a_out) a_out[0] = a, a_out[1] = b;                                                    \
        return WRAP_ADD(T, WRAP_ADD(T, WRAP_ADD(T, v2, a), b), 2);                                \
    }                                                                                             \
    static void amo_##N(int t)                                                                    \
    {                                                                                             \
        const char *nm = #N;                                                                      \
        T *mine = (T *)(void *)(fun + ((size_t)t * (size_t)npes + (size_t)me) * SLOT);            \
        for (int p = 0; p < npes; p++) {                                                          \
            T v0 = RND(T, key3((uint64_t)t, (uint64_t)me, (uint64_t)p * 8 + 0));                  \
            T v1 = RND(T, key3((uint64_t)t, (uint64_t)me, (uint64_t)p * 8 + 1));                  \
            T v2 = RND(T, key3((uint64_t)t, (uint64_t)me, (uint64_t)p * 8 + 2));                  \
            T ab[2], old = 0, cur = 0;                                                            \
            T fin = fun_final_##N(t, me, p, ab);                                                  \
            EXPECT_OK(duet_atomic_set_##N(W, mine, v0, p));                                       \
            EXPECT_OK(duet_atomic_fetch_##N(W, mine, p, &cur));                                   \
            EXPECT_VAL(T, nm, cur, v0, "fetch after set, pe %d", p);                              \
            EXPECT_OK(duet_atomic_swap_##N(W, mine, v1, p, &old));                                \
            EXPECT_VAL(T, nm, old, v0, "swap, pe %d", p);                                         \
            EXPECT_OK(duet_atomic_compare_swap_##N(W, mine, v1, v2, p, &old));                    \
            EXPECT_VAL(T, nm, old, v1, "compare_swap (matching), pe %d", p);                      \
            EXPECT_OK(duet_atomic_compare_swap_##N(W, mine, WRAP_ADD(T, v2, 1), v0, p, &old));    \
            EXPECT_VAL(T, nm, old, v2, "compare_swap (not matching), pe %d", p);                  \
            EXPECT_OK(duet_atomic_fetch_##N(W, mine, p, &cur));                                   \
            EXPECT_VAL(T, nm, cur, v2, "value after a failed compare_swap, pe %d", p);            \
            EXPECT_OK(duet_atomic_fetch_add_##N(W, mine, ab[0], p, &old));                        \
            EXPECT_VAL(T, nm, old, v2, "fetch_add, pe %d", p);                                    \
            EXPECT_OK(duet_atomic_add_##N(W, mine, ab[1], p));                                    \
            EXPECT_OK(duet_atomic_fetch_inc_##N(W, mine, p, &old));                               \
            EXPECT_VAL(T, nm, old, WRAP_ADD(T, WRAP_ADD(T, v2, ab[0]), ab[1]), "fetch_inc, pe %d", p); \
            EXPECT_OK(duet_atomic_inc_##N(W, mine, p));                                           \
            EXPECT_OK(duet_atomic_fetch_##N(W, mine, p, &cur));                                   \
            EXPECT_VAL(T, nm, cur, fin, "fetch after add + inc, pe %d", p);                       \
        }                                                                                         \
        /* misaligned targets are refused and leave the target alone */                           \
        T *mis = (T *)(void *)((char *)mine + 1), *half = (T *)(void *)((char *)mine + sizeof(T) / 2); \
        T before = *mine, dummy;                                                                  \
        EXPECT_INVALID(duet_atomic_set_##N(W, mis, 1, me), "atomic_set_" #N " misaligned by 1");  \
        EXPECT_INVALID(duet_atomic_fetch_##N(W, half, me, &dummy), "atomic_fetch_" #N " misaligned by size/2"); \
        EXPECT_INVALID(duet_atomic_swap_##N(W, mis, 1, me, &dummy), "atomic_swap_" #N " misaligned"); \
        EXPECT_INVALID(duet_atomic_compare_swap_##N(W, half, before, 1, me, &dummy), "atomic_compare_swap_" #N " misaligned"); \
        EXPECT_INVALID(duet_atomic_fetch_add_##N(W, mis, 1, me, &dummy), "atomic_fetch_add_" #N " misaligned"); \
        EXPECT_INVALID(duet_atomic_add_##N(W, half, 1, me), "atomic_add_" #N " misaligned");      \
        EXPECT_INVALID(duet_atomic_fetch_inc_##N(W, mis, me, &dummy), "atomic_fetch_inc_" #N " misaligned"); \
        EXPECT_INVALID(duet_atomic_inc_##N(W, half, me), "atomic_inc_" #N " misaligned");         \
        EXPECT_INVALID(duet_atomic_inc_##N(W, mine, npes), "atomic_inc_" #N " to PE npes");       \
        EXPECT_INVALID(duet_atomic_inc_##N(W, &dummy, me), "atomic_inc_" #N " on a non-symmetric address"); \
        EXPECT_VAL(T, nm, *mine, before, "own slot after the refused calls");                     \
        EXPECT_BARRIER_ALL("after single-op atomics");                                            \
        for (int r = 0; r < npes; r++) {                                                          \
            T *slot = (T *)(void *)(fun + ((size_t)t * (size_t)npes + (size_t)r) * SLOT);         \
            EXPECT_VAL(T, nm, *slot, fun_final_##N(t, r, me, NULL), "final value written by rank %d", r); \
        }                                                                                         \
        /* contention: fetch_inc and fetch_add (step) on one target, add + inc on every PE */    \
        int tgt = t % npes;                                                                       \
        T *cinc = (T *)(void *)ctr, *cadd = cinc + 8, *cevery = cinc + 16, *ccas = cinc + 24;    \
        memset(ctr, 0, 64 * 8);                                                                   \
        EXPECT_BARRIER_ALL("before contention");                                                  \
        T step = IS_SIGNED(T) ? (T)-3 : (T)3;                                                     \
        int64_t *norm = malloc(sizeof(int64_t) * (size_t)kc * 3);                                 \
        for (int i = 0; i < kc; i++) {                                                            \
            T a = 0, b = 0;                                                                       \
            EXPECT_OK(duet_atomic_fetch_inc_##N(W, cinc, tgt, &a));                               \
            EXPECT_OK(duet_atomic_fetch_add_##N(W, cadd, step, tgt, &b));                         \
            for (int p = 0; p < npes; p++) {                                                      \
                EXPECT_OK(duet_atomic_add_##N(W, cevery, (T)(me + 1), p));                        \
                EXPECT_OK(duet_atomic_inc_##N(W, cevery, p));                                     \
            }                                                                                     \
            norm[i] = (int64_t)a;                                                                 \
            norm[kc + i] = (int64_t)b % (int64_t)step == 0 ? (int64_t)b / (int64_t)step : -1;     \
            if (i && (norm[i] <= norm[i - 1] || norm[kc + i] <= norm[kc + i - 1]))                \
                FAIL("%s: my fetched values do not increase: inc %" PRId64 " after %" PRId64      \
                     ", add %" PRId64 " after %" PRId64, nm, norm[i], norm[i - 1], norm[kc + i],  \
                     norm[kc + i - 1]);                                                           \
        }                                                                                         \
        /* compare_swap retry loop: each success takes one number */                             \
        for (int i = 0; i < kc; i++) {                                                            \
            T seen = 0, old = 0;                                                                  \
            EXPECT_OK(duet_atomic_fetch_##N(W, ccas, tgt, &seen));                                \
            for (int tries = 0;; tries++) {                                                       \
                if (duet_atomic_compare_swap_##N(W, ccas, seen, WRAP_ADD(T, seen, 1), tgt, &old)) { \
                    FAIL("%s: compare_swap failed: %s", nm, duet_last_error());                   \
                    break;                                                                        \
                }                                                                                 \
                if (old == seen) break;                                                           \
                seen = old;                                                                       \
                if (tries % 8 == 7) sched_yield();                                                \
                if (tries % 4096 == 4095 && stuck(tries)) break;                                  \
            }                                                                                     \
            norm[2 * kc + i] = (int64_t)seen;                                                     \
        }                                                                                         \
        check_permutation(norm, "fetch_inc_" #N " values");                                       \
        check_permutation(norm + kc, "fetch_add_" #N " values / step");                           \
        check_permutation(norm + 2 * kc, "compare_swap_" #N " counter values");                   \
        free(norm);                                                                               \
        T n_ops = (T)(npes * kc);                                                                 \
        if (me == tgt) {                                                                          \
            EXPECT_VAL(T, nm, *cinc, n_ops, "fetch_inc counter");                                 \
            EXPECT_VAL(T, nm, *cadd, (T)((uint64_t)n_ops * (uint64_t)step), "fetch_add counter"); \
            EXPECT_VAL(T, nm, *ccas, n_ops, "compare_swap counter");                              \
        }                                                                                         \
        EXPECT_VAL(T, nm, *cevery, (T)(kc * (npes * (npes + 1) / 2 + npes)), "add + inc counter"); \
        EXPECT_BARRIER_ALL("after contention");                                                   \
    }
DUET_AMO_TYPES(AMO_TEST)

/* ---- bitwise types */
#define BIT_TEST(T, N)                                                                            \
    static T bit_final_##N(int t, int r, int p, T *ops)                                           \
    {                                                                                             \
        for (int i = 0; i < 7; i++) ops[i] = RND(T, key3((uint64_t)t + 100, (uint64_t)r, (uint64_t)p * 8 + (uint64_t)i)); \
        T x = ops[0];                                                                             \
        x &= ops[1]; x &= ops[2]; x |= ops[3]; x |= ops[4]; x ^= ops[5]; x ^= ops[6];             \
        return x;                                                                                 \
    }                                                                                             \
    static void bit_##N(int t)                                                                    \
    {                                                                                             \
        const char *nm = #N;                                                                      \
        T *mine = (T *)(void *)(fun + ((size_t)t * (size_t)npes + (size_t)me) * SLOT);            \
        for (int p = 0; p < npes; p++) {                                                          \
            T o[7], old = 0, x;                                                                   \
            T fin = bit_final_##N(t, me, p, o);                                                   \
            EXPECT_OK(duet_atomic_set_##N(W, mine, o[0], p));                                     \
            EXPECT_OK(duet_atomic_fetch_and_##N(W, mine, o[1], p, &old));                         \
            EXPECT_VAL(T, nm, old, o[0], "fetch_and, pe %d", p);                                  \
            EXPECT_OK(duet_atomic_and_##N(W, mine, o[2], p));                                     \
            x = o[0] & o[1] & o[2];                                                               \
            EXPECT_OK(duet_atomic_fetch_or_##N(W, mine, o[3], p, &old));                          \
            EXPECT_VAL(T, nm, old, x, "fetch_or, pe %d", p);                                      \
            EXPECT_OK(duet_atomic_or_##N(W, mine, o[4], p));                                      \
            x = x | o[3] | o[4];                                                                  \
            EXPECT_OK(duet_atomic_fetch_xor_##N(W, mine, o[5], p, &old));                         \
            EXPECT_VAL(T, nm, old, x, "fetch_xor, pe %d", p);                                     \
            EXPECT_OK(duet_atomic_xor_##N(W, mine, o[6], p));                                     \
            EXPECT_OK(duet_atomic_fetch_##N(W, mine, p, &old));                                   \
            EXPECT_VAL(T, nm, old, fin, "fetch after the bitwise ops, pe %d", p);                 \
        }                                                                                         \
        T dummy, *mis = (T *)(void *)((char *)mine + 2);                                          \
        EXPECT_INVALID(duet_atomic_fetch_xor_##N(W, mis, 1, me, &dummy), "atomic_fetch_xor_" #N " misaligned"); \
        EXPECT_INVALID(duet_atomic_and_##N(W, mis, 1, me), "atomic_and_" #N " misaligned");       \
        EXPECT_INVALID(duet_atomic_or_##N(W, mis, 1, npes), "atomic_or_" #N " misaligned, bad PE"); \
        EXPECT_BARRIER_ALL("after single-op bitwise atomics");                                    \
        for (int r = 0; r < npes; r++) {                                                          \
            T o[7], *slot = (T *)(void *)(fun + ((size_t)t * (size_t)npes + (size_t)r) * SLOT);   \
            EXPECT_VAL(T, nm, *slot, bit_final_##N(t, r, me, o), "final bitwise value written by rank %d", r); \
        }                                                                                         \
        /* contention on every PE: xor an odd number of times, or in my bits, and out my bit */  \
        T *cx = (T *)(void *)ctr, *co = cx + 8, *ca = cx + 16, all_x = 0, all_o = 0, all_bits = 0; \
        memset(ctr, 0, 64 * 8);                                                                   \
        *ca = (T)~(T)0;                                                                           \
        EXPECT_BARRIER_ALL("before bitwise contention");                                          \
        int bits = (int)sizeof(T) * 8;                                                            \
        for (int r = 0; r < npes; r++) {                                                          \
            T pat = RND(T, key3((uint64_t)t + 200, (uint64_t)r, 0));                              \
            all_x ^= pat;                                                                         \
            all_o |= pat | (T)((T)1 << (r % bits));                                               \
            all_bits |= (T)((T)1 << (r % bits));                                                  \
        }                                                                                         \
        T pat = RND(T, key3((uint64_t)t + 200, (uint64_t)me, 0)), mybit = (T)((T)1 << (me % bits)); \
        for (int i = 0; i < 2 * (kc / 4) + 1; i++)                                                \
            for (int p = 0; p < npes; p++) {                                                      \
                T old = 0;                                                                        \
                EXPECT_OK(duet_atomic_fetch_xor_##N(W, cx, pat, p, &old));                        \
                if (i == 0) {                                                                     \
                    EXPECT_OK(duet_atomic_fetch_or_##N(W, co, pat, p, &old));                     \
                    EXPECT_OK(duet_atomic_or_##N(W, co, mybit, p));                               \
                    EXPECT_OK(duet_atomic_fetch_and_##N(W, ca, (T)~mybit, p, &old));              \
                } else {                                                                          \
                    EXPECT_OK(duet_atomic_fetch_or_##N(W, co, 0, p, &old));                       \
                    if ((old & (pat | mybit)) != (pat | mybit))                                   \
                        FAIL("%s: fetch_or on pe %d lost my earlier bits", nm, p);                \
                    EXPECT_OK(duet_atomic_fetch_and_##N(W, ca, (T)~(T)0, p, &old));               \
                    if (old & mybit) FAIL("%s: fetch_and on pe %d sees my cleared bit set", nm, p); \
                }                                                                                 \
            }                                                                                     \
        EXPECT_BARRIER_ALL("after bitwise contention");                                           \
        EXPECT_VAL(T, nm, *cx, all_x, "xor of every rank's pattern");                             \
        EXPECT_VAL(T, nm, *co, all_o, "or of every rank's pattern and bit");                      \
        EXPECT_VAL(T, nm, *ca, (T)~all_bits, "and clearing every rank's bit");                    \
        EXPECT_BARRIER_ALL("after bitwise checks");                                               \
    }
DUET_AMO_BITWISE_TYPES(BIT_TEST)

/* ---- float and double: fetch, set, swap */
#define EXT_TEST(T, N)                                                                            \
    static T ext_val_##N(int t, int r, int p, int i)                                              \
    {                                                                                             \
        return (T)((int64_t)(key3((uint64_t)t + 300, (uint64_t)r, (uint64_t)p * 8 + (uint64_t)i) >> 44) - (1 << 19)) / (T)8; \
    }                                                                                             \
    static void ext_##N(int t)                                                                    \
    {                                                                                             \
        const char *nm = #N;                                                                      \
        T *mine = (T *)(void *)(fun + ((size_t)t * (size_t)npes + (size_t)me) * SLOT);            \
        for (int p = 0; p < npes; p++) {                                                          \
            T old = 0, cur = 0;                                                                   \
            EXPECT_OK(duet_atomic_set_##N(W, mine, ext_val_##N(t, me, p, 0), p));                 \
            EXPECT_OK(duet_atomic_fetch_##N(W, mine, p, &cur));                                   \
            EXPECT_VAL(T, nm, cur, ext_val_##N(t, me, p, 0), "fetch after set, pe %d", p);        \
            EXPECT_OK(duet_atomic_swap_##N(W, mine, ext_val_##N(t, me, p, 1), p, &old));          \
            EXPECT_VAL(T, nm, old, ext_val_##N(t, me, p, 0), "swap, pe %d", p);                   \
            EXPECT_OK(duet_atomic_swap_##N(W, mine, ext_val_##N(t, me, p, 2), p, &old));          \
            EXPECT_VAL(T, nm, old, ext_val_##N(t, me, p, 1), "second swap, pe %d", p);            \
        }                                                                                         \
        T dummy, *mis = (T *)(void *)((char *)mine + 1);                                          \
        EXPECT_INVALID(duet_atomic_set_##N(W, mis, 1, me), "atomic_set_" #N " misaligned");       \
        EXPECT_INVALID(duet_atomic_fetch_##N(W, mis, me, &dummy), "atomic_fetch_" #N " misaligned"); \
        EXPECT_INVALID(duet_atomic_swap_##N(W, mis, 1, me, &dummy), "atomic_swap_" #N " misaligned"); \
        EXPECT_BARRIER_ALL("after float atomics");                                                \
        for (int r = 0; r < npes; r++) {                                                          \
            T *slot = (T *)(void *)(fun + ((size_t)t * (size_t)npes + (size_t)r) * SLOT);         \
            EXPECT_VAL(T, nm, *slot, ext_val_##N(t, r, me, 2), "final value written by rank %d", r); \
        }                                                                                         \
        /* every rank swaps its own value into one word: each value is seen exactly once */     \
        int tgt = (t + 1) % npes;                                                                 \
        T *w = (T *)(void *)ctr;                                                                  \
        memset(ctr, 0, 64);                                                                       \
        EXPECT_BARRIER_ALL("before float swap contention");                                       \
        int64_t *norm = malloc(sizeof(int64_t) * (size_t)kc);                                     \
        for (int i = 0; i < kc; i++) {                                                            \
            T old = 0;                                                                            \
            EXPECT_OK(duet_atomic_swap_##N(W, w, (T)(me * kc + i + 1), tgt, &old));               \
            norm[i] = (int64_t)old;                                                               \
        }                                                                                         \
        EXPECT_BARRIER_ALL("after float swap contention");                                        \
        T last = 0;                                                                               \
        EXPECT_OK(duet_atomic_fetch_##N(W, w, tgt, &last));                                       \
        /* the values fetched plus the one left are {0 .. N*kc}: shift the left one to 0 */     \
        for (int i = 0; i < kc; i++)                                                              \
            norm[i] = norm[i] == 0 ? (int64_t)last - 1 : norm[i] - 1;                             \
        check_permutation(norm, "swap_" #N " values");                                            \
        free(norm);                                                                               \
    }
DUET_AMO_EXTENDED_TYPES(EXT_TEST)

/* A compare_swap spin lock on one PE guards a plain counter on another, updated by g + p. */
static void lock_test(void)
{
    int tgt = 0, dpe = (npes - 1);
    long *lock = (long *)(void *)ctr;
    long long *data = (long long *)(void *)(ctr + 64);
    memset(ctr, 0, 128);
    EXPECT_BARRIER_ALL("before the lock test");
    for (int i = 0; i < kc; i++) {
        long old = -1;
        for (int spins = 0;; spins++) {
            if (duet_atomic_compare_swap_long(W, lock, 0, me + 1, tgt, &old)) {
                FAIL("lock: compare_swap: %s", duet_last_error());
                return;
            }
            if (old == 0) break;
            sched_yield(); /* the holder may need this core */
            if (spins % 4096 == 4095 && stuck(spins)) return;
        }
        long long v = -1;
        EXPECT_OK(duet_g_longlong(W, data, dpe, &v));
        EXPECT_OK(duet_p_longlong(W, data, v + 1, dpe));
        EXPECT_OK(duet_quiet(W)); /* the update lands before the lock is released */
        EXPECT_OK(duet_atomic_swap_long(W, lock, 0, tgt, &old));
        if (old != me + 1) FAIL("lock: held by me, but the lock word was %ld on release", old);
    }
    EXPECT_BARRIER_ALL("after the lock test");
    if (me == dpe && *data != (long long)npes * kc)
        FAIL("lock: the protected counter is %lld, expected %lld (mutual exclusion broken)", *data, (long long)npes * kc);
    if (me == tgt && *lock != 0) FAIL("lock: lock word is %ld at the end", *lock);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* lines survive a killed job */
    uint64_t seed = dt_pick_seed(dt_seed_text(argc, argv), (uint64_t)time(NULL));
    CHECK_OK(duet_init());
    W = dt_world(&me, &npes);
    kc = npes > 4 ? 256 : 1024;

    int ntables = 0;
#define COUNT(T, N) ntables++;
    DUET_AMO_TYPES(COUNT) DUET_AMO_BITWISE_TYPES(COUNT) DUET_AMO_EXTENDED_TYPES(COUNT)
#undef COUNT
    uint64_t *sym_seed = duet_malloc(W, sizeof(uint64_t));
    fun = duet_calloc(W, (size_t)ntables * (size_t)npes, SLOT);
    ctr = duet_malloc(W, 64 * 8);
    gather = duet_malloc(W, sizeof(int64_t) * (size_t)npes * (size_t)kc);
    CHECK(sym_seed && fun && ctr && gather, "allocation failed");
    EXPECT_OK_MSG(dt_share_seed(W, sym_seed, &seed), "seed");
    if (me == 0) printf("test_amo: %d PEs, seed %" PRIu64 "\n", npes, seed);

    int t = 0;
#define RUN(T, N) amo_##N(t++);
    DUET_AMO_TYPES(RUN)
#undef RUN
#define RUN(T, N) bit_##N(t++);
    DUET_AMO_BITWISE_TYPES(RUN)
#undef RUN
#define RUN(T, N) ext_##N(t++);
    DUET_AMO_EXTENDED_TYPES(RUN)
#undef RUN
    lock_test();

    EXPECT_BARRIER_ALL("final");
    EXPECT_OK(duet_free(W, gather));
    EXPECT_OK(duet_free(W, ctr));
    EXPECT_OK(duet_free(W, fun));
    EXPECT_OK(duet_free(W, sym_seed));
    EXPECT_OK(duet_finalize());
    if (dt_finish()) return 1;
    if (me == 0) printf("test_amo: %d atomic tables passed on %d PEs\n", ntables, npes);
    return 0;
}
