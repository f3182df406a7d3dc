/*
 * test_rma.c — one-sided put and get, run by every rank under duetrun.
 *
 * Covers, to and from every PE including self:
 *   - bytes: duet_put / duet_put_nbi / duet_get / duet_get_nbi of 0, 1, 7, 33, 1023 bytes
 *     and several MiB (9 MiB with 1-2 ranks: past the shm transport's switch to streaming
 *     stores), the source and the destination at byte offsets 0..7 (unaligned);
 *   - bytes, strided: duet_iput / duet_iget with odd element sizes (1, 3, 5, 7, 16), strides
 *     > 1 on both sides and negative strides (the API allows any non-zero stride);
 *   - every type of DUET_RMA_TYPES (the X-macro generates the calls): put, put_nbi, get,
 *     get_nbi, iput, iget (positive and negative strides), p and g;
 *   - argument checks: zero length is a no-op whatever the addresses, bad PE, address
 *     outside the heap, zero stride, negative stride reaching outside the heap.
 *
 * Model of every transfer: element i (es bytes) goes from source position sb + i*ss*es to
 * destination position db + i*ds*es. Sources are random byte streams (a seeded hash of a
 * per-transfer key and the byte position), destinations are poisoned first, every element
 * is checked, and every other byte of the destination region (guards of 64 bytes on each
 * side, gaps between strided elements) must still hold the poison.
 * Puts: a round's transfers land in the target's inbox, one slot per sender; they are
 * checked by the target after duet_quiet + duet_barrier_all. Gets read each PE's `pub`
 * area, filled once at start with its own stream.
 *
 * Usage: test_rma [seed]   (else $DUET_TEST_SEED, else the time; rank 0's seed is used)
 * Exit 0 on success; on failure every rank prints what failed with the seed and exits 1.
 */
#include "duet_test.h"

#include <float.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GUARD 64
#define MAX_OPS 16

static int me, npes;
static duet_comm_t W;

/* ---- transfers */
enum { K_PUT, K_PUT_NBI, K_IPUT, K_P, K_GET, K_GET_NBI, K_IGET, K_G };
static const char *kind_name[] = {"put", "put_nbi", "iput", "p", "get", "get_nbi", "iget", "g"};

typedef struct {
    int kind, type;      /* type: index in types[], or -1 for the byte forms */
    size_t n, es;        /* elements and element size */
    ptrdiff_t ds, ss;    /* strides in elements (1 for contiguous forms) */
    size_t doff, soff;   /* byte offset of the lowest element past the guard / in the source */
} op_t;

typedef duet_status_t (*xfer_fn)(int kind, void *d, const void *s, ptrdiff_t ds, ptrdiff_t ss, size_t n, int pe);

/* Bytes of a T that a by-value copy keeps: x87 long double has 6 bytes of padding. */
#define SIG_BYTES(T) _Generic((T)0, long double: (LDBL_MANT_DIG == 64 ? (size_t)10 : sizeof(T)), default: sizeof(T))

#define TYPED_XFER(T, N)                                                                          \
    static duet_status_t xfer_##N(int kind, void *d, const void *s, ptrdiff_t ds, ptrdiff_t ss,   \
                                  size_t n, int pe)                                               \
    {                                                                                             \
        T *dt = d;                                                                                \
        const T *st = s;                                                                          \
        duet_status_t rc = DUET_OK;                                                               \
        switch (kind) {                                                                           \
        case K_PUT: return duet_put_##N(W, dt, st, n, pe);                                        \
        case K_PUT_NBI: return duet_put_##N##_nbi(W, dt, st, n, pe);                              \
        case K_IPUT: return duet_iput_##N(W, dt, st, ds, ss, n, pe);                              \
        case K_GET: return duet_get_##N(W, dt, st, n, pe);                                        \
        case K_GET_NBI: return duet_get_##N##_nbi(W, dt, st, n, pe);                              \
        case K_IGET: return duet_iget_##N(W, dt, st, ds, ss, n, pe);                              \
        case K_P:                                                                                 \
            for (size_t i = 0; i < n && !rc; i++)                                                 \
                rc = duet_p_##N(W, dt + (ptrdiff_t)i * ds, st[(ptrdiff_t)i * ss], pe);            \
            return rc;                                                                            \
        case K_G:                                                                                 \
            for (size_t i = 0; i < n && !rc; i++)                                                 \
                rc = duet_g_##N(W, st + (ptrdiff_t)i * ss, pe, dt + (ptrdiff_t)i * ds);           \
            return rc;                                                                            \
        }                                                                                         \
        return DUET_ERR_INTERNAL;                                                                 \
    }
DUET_RMA_TYPES(TYPED_XFER)

static const struct {
    const char *name;
    size_t size, sig;
    xfer_fn fn;
} types[] = {
#define TYPE_ROW(T, N) {#N, sizeof(T), SIG_BYTES(T), xfer_##N},
    DUET_RMA_TYPES(TYPE_ROW)
#undef TYPE_ROW
};
#define NTYPES ((int)(sizeof types / sizeof types[0]))

static duet_status_t xfer(const op_t *o, void *d, const void *s, int pe)
{
    if (o->type >= 0) return types[o->type].fn(o->kind, d, s, o->ds, o->ss, o->n, pe);
    switch (o->kind) {
    case K_PUT: return duet_put(W, d, s, o->n, pe);
    case K_PUT_NBI: return duet_put_nbi(W, d, s, o->n, pe);
    case K_IPUT: return duet_iput(W, d, s, o->ds, o->ss, o->n, o->es, pe);
    case K_GET: return duet_get(W, d, s, o->n, pe);
    case K_GET_NBI: return duet_get_nbi(W, d, s, o->n, pe);
    case K_IGET: return duet_iget(W, d, s, o->ds, o->ss, o->n, o->es, pe);
    }
    return DUET_ERR_INTERNAL;
}

static size_t uabs(ptrdiff_t x) { return x < 0 ? (size_t)-x : (size_t)x; }
static size_t round64(size_t x) { return (x + 63) & ~(size_t)63; }
/* bytes from the lowest to the highest element touched */
static size_t extent(size_t n, size_t es, ptrdiff_t stride) { return n ? ((n - 1) * uabs(stride) + 1) * es : 0; }
/* position of element 0 relative to the lowest element */
static size_t base_shift(size_t n, size_t es, ptrdiff_t stride) { return stride < 0 && n ? (n - 1) * uabs(stride) * es : 0; }
static size_t dest_region(const op_t *o) { return round64(GUARD + o->doff + extent(o->n, o->es, o->ds) + GUARD); }
static size_t dest_base(const op_t *o) { return GUARD + o->doff + base_shift(o->n, o->es, o->ds); }
static size_t src_len(const op_t *o) { return round64(o->soff + extent(o->n, o->es, o->ss) + GUARD); }
static size_t src_base(const op_t *o) { return o->soff + base_shift(o->n, o->es, o->ss); }

static void describe(char *buf, size_t len, const op_t *o, const char *dir, int pe, int round)
{
    snprintf(buf, len, "round %d: %s_%s n=%zu es=%zu ds=%td ss=%td doff=%zu soff=%zu %s pe %d", round,
             kind_name[o->kind], o->type >= 0 ? types[o->type].name : "bytes", o->n, o->es, o->ds, o->ss,
             o->doff, o->soff, dir, pe);
}

/* Checks a destination region: transferred elements equal stream K at their source
 * positions, everything else is still `poison`. */
static void check_region(const uint8_t *reg, size_t len, uint8_t poison, uint64_t K, const op_t *o, const char *what)
{
    uint8_t *touched = calloc(len ? len : 1, 1);
    size_t sig = o->kind == K_P ? types[o->type].sig : o->es;
    long bad = 0;
    for (size_t i = 0; i < o->n; i++)
        for (size_t b = 0; b < o->es; b++) {
            size_t d = dest_base(o) + (size_t)((ptrdiff_t)i * o->ds * (ptrdiff_t)o->es) + b;
            size_t s = src_base(o) + (size_t)((ptrdiff_t)i * o->ss * (ptrdiff_t)o->es) + b;
            touched[d] = 1;
            if (b < sig && reg[d] != stream_byte(K, s) && bad++ == 0)
                FAIL("%s: element %zu byte %zu (region byte %zu) is 0x%02x, expected 0x%02x%s", what, i, b, d,
                     reg[d], stream_byte(K, s), reg[d] == poison ? " (still poison: not written)" : "");
        }
    for (size_t j = 0; j < len; j++)
        if (!touched[j] && reg[j] != poison) {
            FAIL("%s: byte %zu outside the transferred elements was overwritten (0x%02x, poison 0x%02x)", what,
                 j, reg[j], poison);
            break;
        }
    free(touched);
}

/* ---- rounds: the same list of transfers on every rank */
/* 9 MiB crosses the shm transport's switch to streaming stores (8 MiB): kept to 1-2 ranks */
static size_t big_len(void) { return npes > 4 ? (2u << 20) + 5 : npes > 2 ? (3u << 20) + 5 : (9u << 20) + 3; }

static int make_round(int r, op_t *ops)
{
    static const size_t sizes[] = {0, 1, 7, 33, 1023};
    static const struct { size_t es; ptrdiff_t ds, ss; } strided[8] = {
        {1, 2, 3}, {3, 2, 1}, {5, -2, 3}, {16, 3, -1}, {3, -1, -4}, {8, 1, 1}, {7, -1, -1}, {2, 4, -2}};
    int k = 0;
    if (r < 40) { /* byte forms: every size x every destination offset 0..7 */
        size_t n = sizes[r / 8], off = (size_t)r % 8;
        ops[k++] = (op_t){K_PUT, -1, n, 1, 1, 1, off, (off * 5 + 3) % 8};
        ops[k++] = (op_t){K_PUT_NBI, -1, n, 1, 1, 1, (off + 3) % 8, off};
        ops[k++] = (op_t){K_IPUT, -1, n, strided[off].es, strided[off].ds, strided[off].ss, off, (off + 1) % 8};
        ops[k++] = (op_t){K_IPUT, -1, n / 3 + 1, strided[(off + 4) % 8].es, strided[(off + 4) % 8].ds,
                          strided[(off + 4) % 8].ss, 7 - off, off};
        return k;
    }
    if ((r -= 40) == 0) { /* several MiB, unaligned, and a big strided one */
        size_t L = big_len();
        ops[k++] = (op_t){K_PUT, -1, L, 1, 1, 1, 3, 5};
        ops[k++] = (op_t){K_PUT_NBI, -1, L, 1, 1, 1, 0, 7};
        ops[k++] = (op_t){K_IPUT, -1, L / 16, 4, 2, -3, 4, 0};
        return k;
    }
    if ((r -= 1) < NTYPES) { /* one round per type */
        size_t es = types[r].size;
        ops[k++] = (op_t){K_PUT, r, 33, es, 1, 1, es, 0};
        ops[k++] = (op_t){K_PUT, r, 1, es, 1, 1, 0, es};
        ops[k++] = (op_t){K_PUT, r, 0, es, 1, 1, 0, 0};
        ops[k++] = (op_t){K_PUT_NBI, r, 7, es, 1, 1, 2 * es, 3 * es};
        ops[k++] = (op_t){K_IPUT, r, 33, es, 2, 3, 0, es};
        ops[k++] = (op_t){K_IPUT, r, 7, es, -3, 2, es, 0};
        ops[k++] = (op_t){K_IPUT, r, 5, es, 1, -2, 0, 0};
        ops[k++] = (op_t){K_IPUT, r, 4, es, -1, -1, 3 * es, es};
        ops[k++] = (op_t){K_IPUT, r, 1, es, 5, 7, 0, 0};
        ops[k++] = (op_t){K_P, r, 1, es, 1, 1, es, 0};
        ops[k++] = (op_t){K_P, r, 9, es, 3, -2, 0, es};
        return k;
    }
    return -1;
}

/* With many ranks on few cores, the MiB round only goes to self and the next rank. */
static int targeted(int from, int to, int big) { return !big || npes <= 4 || to == from || to == (from + 1) % npes; }
static int get_kind(int put_kind) { return put_kind + K_GET; }

static void *xalloc(size_t n)
{
    void *p = aligned_alloc(64, round64(n ? n : 1));
    CHECK(p, "out of memory");
    return p;
}

static void run_round(int r, uint8_t *inbox, const uint8_t *pub)
{
    op_t ops[MAX_OPS];
    size_t off[MAX_OPS + 1];
    int nops = make_round(r, ops), big = 0;
    off[0] = 0;
    for (int k = 0; k < nops; k++) {
        off[k + 1] = off[k] + dest_region(&ops[k]);
        big |= ops[k].n * ops[k].es > 65536;
    }
    size_t slot = off[nops];
    uint8_t poison = (uint8_t)(0xA5 + 29 * r);
    char what[256];

    /* puts: poison my inbox; everyone writes its slot at each target; check my inbox */
    memset(inbox, poison, slot * (size_t)npes);
    EXPECT_OK_MSG(duet_barrier_all(), "round %d: barrier before the puts", r);
    uint8_t *src[MAX_OPS];
    for (int k = 0; k < nops; k++) {
        src[k] = xalloc(src_len(&ops[k]));
        stream_fill(src[k], src_len(&ops[k]), key3((uint64_t)r, (uint64_t)me, (uint64_t)k));
    }
    for (int p = 0; p < npes; p++)
        for (int k = 0; k < nops && targeted(me, p, big); k++) {
            describe(what, sizeof what, &ops[k], "to", p, r);
            EXPECT_OK_MSG(xfer(&ops[k], inbox + (size_t)me * slot + off[k] + dest_base(&ops[k]), src[k] + src_base(&ops[k]), p),
                          "%s", what);
        }
    EXPECT_OK_MSG(duet_quiet(W), "round %d: quiet", r);
    EXPECT_OK_MSG(duet_barrier_all(), "round %d: barrier after the puts", r);
    for (int s = 0; s < npes; s++)
        for (int k = 0; k < nops; k++) {
            op_t o = ops[k];
            describe(what, sizeof what, &o, "from", s, r);
            if (!targeted(s, me, big)) o.n = 0; /* nobody wrote here: all poison */
            check_region(inbox + (size_t)s * slot + off[k], dest_region(&o), poison, key3((uint64_t)r, (uint64_t)s, (uint64_t)k),
                         &o, what);
        }
    for (int k = 0; k < nops; k++) free(src[k]);

    /* gets: the same shapes read from each PE's pub area into poisoned local buffers */
    for (int p = 0; p < npes; p++) {
        if (!targeted(me, p, big)) continue;
        uint8_t *dst[MAX_OPS];
        for (int k = 0; k < nops; k++) {
            op_t o = ops[k];
            o.kind = get_kind(o.kind);
            dst[k] = xalloc(dest_region(&o));
            memset(dst[k], poison, dest_region(&o));
            describe(what, sizeof what, &o, "from", p, r);
            EXPECT_OK_MSG(xfer(&o, dst[k] + dest_base(&o), pub + src_base(&o), p), "%s", what);
        }
        EXPECT_OK_MSG(duet_quiet(W), "round %d: quiet after gets", r); /* completes the _nbi ones */
        for (int k = 0; k < nops; k++) {
            op_t o = ops[k];
            o.kind = get_kind(o.kind);
            describe(what, sizeof what, &o, "from", p, r);
            check_region(dst[k], dest_region(&o), poison, key3(~0ull, (uint64_t)p, 0), &o, what);
            free(dst[k]);
        }
    }
}

/* ---- argument checks (local, no peer involved) */
static void check_args(uint8_t *inbox, uint8_t *first)
{
    char local[64] = {0}, dst[16];
    int peer = (me + 1) % npes;
    EXPECT_OK_MSG(duet_put(W, NULL, NULL, 0, peer), "zero-length put with NULL addresses");
    EXPECT_OK_MSG(duet_get(W, NULL, NULL, 0, peer), "zero-length get with NULL addresses");
    EXPECT_OK_MSG(duet_put_nbi(W, local, local, 0, peer), "zero-length put_nbi to a non-symmetric address");
    EXPECT_OK_MSG(duet_get_nbi(W, local, local, 0, peer), "zero-length get_nbi from a non-symmetric address");
    EXPECT_OK_MSG(duet_iput(W, NULL, NULL, 1, 1, 0, 8, peer), "zero-element iput");
    EXPECT_OK_MSG(duet_iget_int(W, NULL, NULL, 1, 1, 0, peer), "zero-element iget_int");
    EXPECT_OK_MSG(duet_put_double(W, NULL, NULL, 0, peer), "zero-element put_double");
    EXPECT_INVALID(duet_put(W, local, dst, 8, peer), "put to a non-symmetric address");
    EXPECT_INVALID(duet_get(W, dst, local, 8, peer), "get from a non-symmetric address");
    EXPECT_INVALID(duet_put(W, inbox, dst, 8, npes), "put to PE npes");
    EXPECT_INVALID(duet_put(W, inbox, dst, 8, -1), "put to PE -1");
    EXPECT_INVALID(duet_get(W, dst, inbox, 8, npes + 3), "get from PE npes+3");
    EXPECT_INVALID(duet_put(W, inbox, dst, SIZE_MAX / 2, peer), "put running past the end of the heap");
    EXPECT_INVALID(duet_p_long(W, (long *)(void *)local, 1, peer), "p to a non-symmetric address");
    EXPECT_INVALID(duet_g_int(W, (int *)(void *)local, peer, (int *)(void *)dst), "g from a non-symmetric address");
    EXPECT_INVALID(duet_put(W, inbox, NULL, 8, peer), "put from a NULL source");
    EXPECT_INVALID(duet_iput(W, inbox, local, 0, 1, 2, 4, peer), "iput with dst_stride 0");
    EXPECT_INVALID(duet_iget(W, local, inbox, 1, 0, 2, 4, peer), "iget with src_stride 0");
    EXPECT_INVALID(duet_iput_long(W, (long *)(void *)inbox, (long *)(void *)local, -1, 1, (size_t)1 << 40, peer),
                   "iput whose negative stride reaches below the heap");
    EXPECT_INVALID(duet_iput_long(W, (long *)(void *)inbox, (long *)(void *)local, 1, 1, SIZE_MAX / 4, peer),
                   "iput whose extent overflows");
    EXPECT_INVALID(duet_put_long(W, (long *)(void *)inbox, (long *)(void *)local, SIZE_MAX / 4, peer),
                   "put_long whose byte count overflows");
    duet_status_t st = duet_put(NULL, inbox, local, 8, peer);
    EXPECT_INVALID(st, "put on a NULL communicator");
    /* a negative stride must not reach into the heap's internal area just below the first block */
    if (!duet_addr_accessible(W, first - 1, peer)) {
        EXPECT_INVALID(duet_iput(W, first, local, -1, 1, 2, 8, peer), "iput reaching 8 bytes below the user heap");
        EXPECT_INVALID(duet_iget(W, local, first, 1, -1, 2, 8, peer), "iget reaching 8 bytes below the user heap");
        EXPECT_INVALID(duet_put(W, first - 8, local, 8, peer), "put 8 bytes below the user heap");
    }
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* lines survive a killed job */
    uint64_t seed = dt_pick_seed(dt_seed_text(argc, argv), (uint64_t)time(NULL));
    CHECK_OK(duet_init());
    W = dt_world(&me, &npes);

    /* rank 0's seed is everyone's seed */
    uint64_t *sym_seed = duet_malloc(W, sizeof(uint64_t));
    CHECK(sym_seed, "duet_malloc of the seed word failed");
    EXPECT_OK_MSG(dt_share_seed(W, sym_seed, &seed), "seed broadcast");
    if (me == 0) printf("test_rma: %d PEs, seed %" PRIu64 "\n", npes, seed);

    /* the largest round decides the inbox; pub holds the stream every get reads */
    size_t max_slot = 0, pub_len = big_len() + 8192;
    op_t ops[MAX_OPS];
    int nrounds = 0;
    for (int n; (n = make_round(nrounds, ops)) >= 0; nrounds++) {
        size_t slot = 0;
        for (int k = 0; k < n; k++) {
            slot += dest_region(&ops[k]);
            CHECK(src_len(&ops[k]) <= pub_len, "bug: pub too small");
        }
        if (slot > max_slot) max_slot = slot;
    }
    uint8_t *inbox = duet_malloc(W, max_slot * (size_t)npes);
    uint8_t *pub = duet_malloc(W, pub_len);
    CHECK(inbox && pub, "duet_malloc failed");
    stream_fill(pub, pub_len, key3(~0ull, (uint64_t)me, 0));
    EXPECT_OK_MSG(duet_barrier_all(), "barrier after filling pub");

    check_args(inbox, (uint8_t *)sym_seed); /* the first block */
    for (int r = 0; r < nrounds; r++) run_round(r, inbox, pub);

    EXPECT_OK_MSG(duet_barrier_all(), "final barrier");
    EXPECT_OK_MSG(duet_free(W, pub), "free pub");
    EXPECT_OK_MSG(duet_free(W, inbox), "free inbox");
    EXPECT_OK_MSG(duet_free(W, sym_seed), "free seed");
    EXPECT_OK_MSG(duet_finalize(), "finalize");
    if (dt_finish()) return 1;
    if (me == 0) printf("test_rma: %d rounds passed on %d PEs\n", nrounds, npes);
    return 0;
}
