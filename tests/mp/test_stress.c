/*
 * test_stress.c — randomized one-sided stress with an exactly predicted final state.
 *
 * Usage (under duetrun): test_stress [seed]   (or DUET_TEST_SEED=...; else rank 0 draws one
 * and hands it to the others with a put). The seed is printed; pass it back to replay.
 *
 * Every rank runs its own random sequence of operations, drawn from (seed, rank):
 *   put / put_nbi / p / iput of random sizes and offsets into the region that belongs to
 *   the caller on a random peer (regions are per source, so every byte has one writer and
 *   the final contents follow from the writer's sequence alone); put_signal with ADD
 *   (data + a per-source signal count); atomic add (64-bit and 32-bit), inc, xor,
 *   compare-and-swap loops (adding), and fetch_inc tickets whose fetched value sets a bit
 *   in a bitmap with atomic or (so duplicate or lost tickets show); gets of the caller's
 *   own region on a peer, checked at once against a private shadow.
 * The run has several phases separated by barriers. After each phase every rank replays
 * every rank's sequence (the generator is shared) and checks its own memory exactly:
 * each region byte, every counter, the signal counts, the ticket count and its bitmap.
 * Work per rank scales down with the rank count so 8 ranks on 2 cores take a few seconds.
 */
#include "duet_test.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { REGION = 2048, NCTR = 8, PHASES = 8 };

static int me = -1, npes;
static duet_comm_t W;
static uint64_t g_seed;
static uint64_t g_retries; /* compare-and-swap retries: evidence of contention */

/* The symmetric state, all in one block. */
typedef struct {
    uint64_t add64[NCTR];
    uint32_t add32[NCTR];
    uint64_t xor64[NCTR];
    uint64_t tickets;
    uint64_t sig[64];     /* put_signal count per source            */
    uint64_t bitmap[];    /* ticket bits, then npes regions of data  */
} state_t;

static size_t g_bitmap_words;
static state_t *S;           /* symmetric */
static unsigned char *g_data; /* symmetric: region of source r at g_data + r * REGION */

enum { OP_PUT, OP_PUT_NBI, OP_P, OP_IPUT, OP_PUT_SIGNAL, OP_ADD64, OP_ADD32, OP_INC, OP_XOR,
       OP_CSWAP, OP_TICKET, OP_GET, OP_FENCE, OP_COUNT };

typedef struct {
    int type, target, ctr;
    size_t off, len;   /* bytes in the region; iput: len = elements, stride in `stride` */
    size_t stride;
    uint64_t value;
} op_t;

/* The one generator: execution and replay both draw from it. */
static op_t gen_op(uint64_t *rng)
{
    op_t o = {0};
    o.type = (int)rng_below(rng, OP_COUNT);
    o.target = (int)rng_below(rng, (uint64_t)npes);
    o.ctr = (int)rng_below(rng, NCTR);
    o.value = rng_next(rng);
    switch (o.type) {
    case OP_PUT: case OP_PUT_NBI: case OP_PUT_SIGNAL:
        /* mostly small, sometimes up to the whole region, offsets unaligned */
        o.len = rng_below(rng, 4) == 0 ? 1 + rng_below(rng, REGION) : 1 + rng_below(rng, 64);
        o.off = rng_below(rng, REGION - o.len + 1);
        break;
    case OP_P: o.off = 8 * rng_below(rng, REGION / 8); o.len = 8; break;
    case OP_IPUT:
        o.stride = 1 + rng_below(rng, 3);
        o.len = 1 + rng_below(rng, 40);                          /* elements of 4 bytes */
        o.off = 4 * rng_below(rng, (REGION - ((o.len - 1) * o.stride + 1) * 4) / 4 + 1);
        break;
    default: break;
    }
    return o;
}

static void payload(uint64_t value, unsigned char *buf, size_t n)
{
    uint64_t s = value;
    for (size_t i = 0; i < n; i += 8) {
        uint64_t x = rng_next(&s);
        memcpy(buf + i, &x, n - i < 8 ? n - i : 8);
    }
}

/* What a put-like op writes into its region: applied to `region` (a shadow or the expected
 * image); the source buffer used is `src` (len bytes for puts, len*4 for iput). */
static void apply_data(const op_t *o, unsigned char *region, const unsigned char *src)
{
    if (o->type == OP_IPUT) {
        for (size_t i = 0; i < o->len; i++) memcpy(region + o->off + i * o->stride * 4, src + i * 4, 4);
    } else {
        memcpy(region + o->off, src, o->len);
    }
}

/* Expected state of my memory, built by replaying everyone. */
typedef struct {
    uint64_t add64[NCTR], xor64[NCTR], tickets, sig[64];
    uint32_t add32[NCTR];
    unsigned char *data;
} expect_t;

static unsigned char *g_shadow; /* my own region on each target, as I wrote it */

static void execute(const op_t *o, unsigned char *src)
{
    int t = o->target;
    unsigned char *dest = g_data + (size_t)me * REGION;
    size_t n = o->type == OP_IPUT ? o->len * 4 : o->len;
    payload(o->value, src, n);
    switch (o->type) {
    case OP_PUT: CHECK_OK(duet_put(W, dest + o->off, src, o->len, t)); break;
    case OP_PUT_NBI:
        CHECK_OK(duet_put_nbi(W, dest + o->off, src, o->len, t));
        CHECK_OK(duet_quiet(W)); /* src is reused by the next op */
        break;
    case OP_P: {
        uint64_t v;
        memcpy(&v, src, 8);
        CHECK_OK(duet_p_uint64(W, (uint64_t *)(void *)(dest + o->off), v, t));
        break;
    }
    case OP_IPUT:
        CHECK_OK(duet_iput_uint32(W, (uint32_t *)(void *)(dest + o->off), (const uint32_t *)(void *)src,
                                  (ptrdiff_t)o->stride, 1, o->len, t));
        break;
    case OP_PUT_SIGNAL:
        CHECK_OK(duet_put_signal(W, dest + o->off, src, o->len, &S->sig[me], 1, DUET_SIGNAL_ADD, t));
        break;
    case OP_ADD64: CHECK_OK(duet_atomic_add_uint64(W, &S->add64[o->ctr], o->value, t)); break;
    case OP_ADD32: CHECK_OK(duet_atomic_add_uint32(W, &S->add32[o->ctr], (uint32_t)o->value, t)); break;
    case OP_INC: CHECK_OK(duet_atomic_inc_uint64(W, &S->add64[o->ctr], t)); break;
    case OP_XOR: CHECK_OK(duet_atomic_xor_uint64(W, &S->xor64[o->ctr], o->value, t)); break;
    case OP_CSWAP: {
        uint64_t old, seen;
        CHECK_OK(duet_atomic_fetch_uint64(W, &S->add64[o->ctr], t, &old));
        for (int tries = 0;; tries++) {
            CHECK(tries < 1000000, "compare-and-swap never succeeded");
            CHECK_OK(duet_atomic_compare_swap_uint64(W, &S->add64[o->ctr], old, old + o->value, t, &seen));
            if (seen == old) break;
            old = seen;
            g_retries++;
        }
        break;
    }
    case OP_TICKET: {
        uint64_t ticket;
        CHECK_OK(duet_atomic_fetch_inc_uint64(W, &S->tickets, t, &ticket));
        CHECK(ticket / 64 < g_bitmap_words, "ticket %" PRIu64 " beyond any possible count", ticket);
        CHECK_OK(duet_atomic_or_uint64(W, &S->bitmap[ticket / 64], 1ull << (ticket % 64), t));
        break;
    }
    case OP_GET: {
        CHECK_OK(duet_quiet(W));
        CHECK_OK(duet_get(W, src, dest, REGION, t));
        unsigned char *sh = g_shadow + (size_t)t * REGION;
        for (size_t i = 0; i < REGION; i++)
            CHECK(src[i] == sh[i], "get of my region on pe %d: byte %zu = 0x%02x, I wrote 0x%02x", t,
                  i, src[i], sh[i]);
        break;
    }
    case OP_FENCE: CHECK_OK(duet_fence(W)); break;
    }
    if (o->type <= OP_PUT_SIGNAL) apply_data(o, g_shadow + (size_t)t * REGION, src);
}

static void replay(const op_t *o, int src_rank, expect_t *e, unsigned char *tmp)
{
    if (o->target != me) return;
    switch (o->type) {
    case OP_PUT: case OP_PUT_NBI: case OP_P: case OP_IPUT: case OP_PUT_SIGNAL:
        payload(o->value, tmp, o->type == OP_IPUT ? o->len * 4 : o->len);
        apply_data(o, e->data + (size_t)src_rank * REGION, tmp);
        if (o->type == OP_PUT_SIGNAL) e->sig[src_rank]++;
        break;
    case OP_ADD64: case OP_CSWAP: e->add64[o->ctr] += o->value; break;
    case OP_INC: e->add64[o->ctr] += 1; break;
    case OP_ADD32: e->add32[o->ctr] += (uint32_t)o->value; break;
    case OP_XOR: e->xor64[o->ctr] ^= o->value; break;
    case OP_TICKET: e->tickets++; break;
    default: break;
    }
}

static void verify(const expect_t *e, int phase)
{
    for (int c = 0; c < NCTR; c++) {
        CHECK(S->add64[c] == e->add64[c], "phase %d: add64[%d] = %" PRIu64 ", want %" PRIu64, phase, c,
              S->add64[c], e->add64[c]);
        CHECK(S->add32[c] == e->add32[c], "phase %d: add32[%d] = %u, want %u", phase, c, S->add32[c], e->add32[c]);
        CHECK(S->xor64[c] == e->xor64[c], "phase %d: xor64[%d] = %" PRIx64 ", want %" PRIx64, phase, c,
              S->xor64[c], e->xor64[c]);
    }
    for (int r = 0; r < npes; r++)
        CHECK(S->sig[r] == e->sig[r], "phase %d: signal count from %d = %" PRIu64 ", want %" PRIu64, phase,
              r, S->sig[r], e->sig[r]);
    CHECK(S->tickets == e->tickets, "phase %d: %" PRIu64 " tickets, want %" PRIu64, phase, S->tickets, e->tickets);
    for (uint64_t b = 0; b < (uint64_t)g_bitmap_words * 64; b++) {
        int set = (int)(S->bitmap[b / 64] >> (b % 64)) & 1;
        CHECK(set == (b < e->tickets), "phase %d: ticket bit %" PRIu64 " is %d (%" PRIu64 " tickets): "
              "a ticket was handed out twice or lost", phase, b, set, e->tickets);
    }
    for (int r = 0; r < npes; r++)
        for (size_t i = 0; i < REGION; i++) {
            unsigned char got = g_data[(size_t)r * REGION + i], want = e->data[(size_t)r * REGION + i];
            CHECK(got == want, "phase %d: region of source %d, byte %zu = 0x%02x, want 0x%02x", phase, r,
                  i, got, want);
        }
}

int main(int argc, char **argv)
{
    setenv("DUET_SYMMETRIC_SIZE", "16M", 1);
    CHECK_OK(duet_init());
    W = dt_world(&me, &npes);
    CHECK(npes <= 64, "at most 64 ranks");

    /* the seed: argv, the environment, or rank 0's clock handed out with puts */
    uint64_t *seed_sym = duet_malloc(W, sizeof(uint64_t));
    CHECK(seed_sym, "malloc");
    if (me == 0)
        g_seed = dt_pick_seed(dt_seed_text(argc, argv), (uint64_t)time(NULL) ^ ((uint64_t)clock() << 20));
    CHECK_OK(dt_share_seed(W, seed_sym, &g_seed));

    const int ops = 960000 / npes > 50000 ? 960000 / npes : 50000;
    const int per_phase = ops / PHASES;
    g_bitmap_words = ((size_t)npes * (size_t)ops + 63) / 64 + 1;
    size_t bytes = sizeof(state_t) + g_bitmap_words * sizeof(uint64_t);
    bytes = (bytes + 63) & ~(size_t)63;
    S = duet_calloc(W, 1, bytes + (size_t)npes * REGION);
    CHECK(S, "calloc of %zu bytes", bytes + (size_t)npes * REGION);
    g_data = (unsigned char *)S + bytes;
    if (me == 0)
        printf("test_stress: %d ranks, %d ops per rank in %d phases, seed %" PRIu64 "\n", npes, ops,
               PHASES, g_seed);

    g_shadow = calloc((size_t)npes, REGION);
    unsigned char *src = malloc(REGION), *tmp = malloc(REGION);
    expect_t e;
    memset(&e, 0, sizeof e);
    e.data = calloc((size_t)npes, REGION);
    uint64_t *rngs = malloc(sizeof(uint64_t) * (size_t)npes); /* replay position per source */
    for (int r = 0; r < npes; r++) rngs[r] = g_seed ^ (0x5851f42d4c957f2dull * (uint64_t)(r + 1));
    uint64_t mine = rngs[me];
    CHECK_OK(duet_barrier(W)); /* the calloc'ed state is zero everywhere before anyone writes */

    for (int phase = 0; phase < PHASES; phase++) {
        for (int i = 0; i < per_phase; i++) {
            op_t o = gen_op(&mine);
            execute(&o, src);
        }
        CHECK_OK(duet_barrier(W));
        for (int r = 0; r < npes; r++)
            for (int i = 0; i < per_phase; i++) {
                op_t o = gen_op(&rngs[r]);
                replay(&o, r, &e, tmp);
            }
        verify(&e, phase);
        CHECK_OK(duet_barrier(W)); /* nobody starts the next phase while others still check */
    }

    free(rngs);
    free(e.data);
    free(src);
    free(tmp);
    free(g_shadow);
    CHECK_OK(duet_free(W, S));
    CHECK_OK(duet_free(W, seed_sym));
    CHECK_OK(duet_finalize());
    if (me == 0) printf("test_stress: passed (rank 0 retried %" PRIu64 " compare-and-swaps)\n", g_retries);
    return 0;
}
