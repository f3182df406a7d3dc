/*
 * Recursive doubling and recursive halving-doubling (Rabenseifner).
 *
 * Recursive doubling allreduce, 8 ranks: in round k every rank exchanges its whole partial
 * with rank (me XOR 2^k) and combines: log2(n) rounds, each moving the full buffer — few
 * messages (good for small data), much volume.
 *
 *   round 0: 0<->1 2<->3 4<->5 6<->7   round 1: 0<->2 1<->3 ...   round 2: 0<->4 1<->5 ...
 *
 * Rabenseifner: a reduce-scatter by recursive halving (round k: keep one half of the current
 * range, send the other half to the partner, combine what it sends back), then an allgather
 * by recursive doubling in reverse: log2(n) rounds each way, bandwidth-optimal volume.
 *
 * Rank counts that are not powers of two fold first: with p the largest power of two <= n
 * and e = n - p, each even rank below 2e hands its input to the next odd rank and waits;
 * the p remaining ranks run the algorithm; the folded ranks get the result at the end.
 * Combining order: partners combine "mine op theirs", which for sum, prod, min and max gives
 * the same bits on both sides (the operations are commutative), so every rank ends equal.
 */
#include <stdlib.h>
#include "coll/duet_coll.h"

typedef struct {
    int p, extra; /* power-of-two core and folded ranks */
    int newrank;  /* rank inside the core, -1 for a folded-away rank */
} fold_t;

static fold_t fold_of(int r, int n)
{
    fold_t f;
    f.p = 1;
    while (f.p * 2 <= n) f.p *= 2;
    f.extra = n - f.p;
    if (r < 2 * f.extra) f.newrank = r % 2 ? r / 2 : -1;
    else f.newrank = r - f.extra;
    return f;
}

static int real_rank(const fold_t *f, int newrank)
{
    return newrank < f->extra ? 2 * newrank + 1 : newrank + f->extra;
}


/* dep[col] tracks, per chunk column of the buffer, the last step that touched it. */
typedef struct {
    int *dep;
    size_t chunk, columns;
} cols_t;

static int cols_init(cols_t *c, const duet_coll_args_t *a, duet_sched_t *s)
{
    c->chunk = duet_coll_chunk(a);
    c->columns = (a->count * a->elem + c->chunk - 1) / c->chunk;
    c->dep = malloc(sizeof(int) * (c->columns ? c->columns : 1));
    if (!c->dep) {
        s->error = DUET_FAIL(DUET_ERR_NO_MEMORY, COLL, "recursive doubling: out of host memory");
        return -1;
    }
    for (size_t i = 0; i < c->columns; i++) c->dep[i] = -1;
    return 0;
}

/* Byte range [lo, hi) in chunks that never straddle a column boundary, so that dep[]
 * stays per column. */
#define FOR_COLS(s, cl, lo, hi, off, len, col)                                                         \
    for (size_t off = (lo), len, col; off < (hi) && !(s)->error && (col = off / (cl)->chunk,           \
         len = ((col + 1) * (cl)->chunk < (hi) ? (col + 1) * (cl)->chunk : (hi)) - off, 1); off += len)

/* Folding in and out, for non-power-of-two rank counts. */
static void fold_in(const fold_t *f, const duet_coll_args_t *a, duet_sched_t *s, cols_t *c, int *acc_buf)
{
    size_t bytes = a->count * a->elem;
    int r = a->rank;
    if (r >= 2 * f->extra) return;
    FOR_COLS(s, c, 0, bytes, off, len, col) {
        if (f->newrank < 0) duet_sched_send(s, r + 1, DUET_BUF_SEND, off, len, -1);
        else c->dep[col] = duet_sched_recv_reduce(s, r - 1, DUET_BUF_SEND, off, DUET_BUF_RECV, off, len, -1);
    }
    if (f->newrank >= 0) *acc_buf = DUET_BUF_RECV;
}

static void fold_out(const fold_t *f, const duet_coll_args_t *a, duet_sched_t *s, cols_t *c)
{
    size_t bytes = a->count * a->elem;
    int r = a->rank;
    if (r >= 2 * f->extra) return;
    FOR_COLS(s, c, 0, bytes, off, len, col) {
        if (f->newrank < 0) duet_sched_recv(s, r + 1, DUET_BUF_RECV, off, len, -1);
        else duet_sched_send(s, r - 1, DUET_BUF_RECV, off, len, c->dep[col]);
    }
}

duet_status_t duet_coll_rd_allreduce(const duet_coll_args_t *a, duet_sched_t *s)
{
    DUET_SCHED_BEGIN(a, s);
    fold_t f = fold_of(a->rank, a->nranks);
    size_t bytes = a->count * a->elem;
    cols_t c;
    if (cols_init(&c, a, s)) return s->error;
    int acc = DUET_BUF_SEND; /* where my partial is */
    fold_in(&f, a, s, &c, &acc);
    if (f.newrank >= 0) {
        if (f.p == 1) { /* alone in the core: the result is my (folded) input */
            FOR_COLS(s, &c, 0, bytes, off, len, col) c.dep[col] = duet_sched_copy(s, acc, off, DUET_BUF_RECV, off, len, c.dep[col]);
        }
        for (int d = 1; d < f.p; d *= 2) {
            int partner = real_rank(&f, f.newrank ^ d);
            FOR_COLS(s, &c, 0, bytes, off, len, col) {
                int sent = duet_sched_send(s, partner, acc, off, len, c.dep[col]);
                c.dep[col] = duet_sched_recv_reduce(s, partner, acc, off, DUET_BUF_RECV, off, len, sent);
            }
            acc = DUET_BUF_RECV;
        }
    }
    fold_out(&f, a, s, &c);
    free(c.dep);
    return s->error;
}

/* Element range [lo, hi) of the halving at this level, in bytes. */
static size_t split_at(const duet_coll_args_t *a, size_t lo_el, size_t hi_el)
{
    return (lo_el + (hi_el - lo_el) / 2);
}

duet_status_t duet_coll_rhd_allreduce(const duet_coll_args_t *a, duet_sched_t *s)
{
    DUET_SCHED_BEGIN(a, s);
    fold_t f = fold_of(a->rank, a->nranks);
    size_t bytes = a->count * a->elem, es = a->elem;
    cols_t c;
    if (cols_init(&c, a, s)) return s->error;
    int acc = DUET_BUF_SEND;
    fold_in(&f, a, s, &c, &acc);
    if (f.newrank >= 0) {
        if (acc != DUET_BUF_RECV) { /* partials build up in the receive buffer */
            FOR_COLS(s, &c, 0, bytes, off, len, col) c.dep[col] = duet_sched_copy(s, acc, off, DUET_BUF_RECV, off, len, c.dep[col]);
        }
        /* reduce-scatter by halving: [lo, hi) is the element range I am still responsible for */
        size_t lo = 0, hi = a->count;
        size_t los[32], his[32];
        int levels = 0;
        for (int d = f.p / 2; d >= 1; d /= 2) {
            int partner = real_rank(&f, f.newrank ^ d);
            size_t mid = split_at(a, lo, hi);
            int keep_low = (f.newrank & d) == 0;
            size_t send_lo = keep_low ? mid : lo, send_hi = keep_low ? hi : mid;
            size_t keep_lo = keep_low ? lo : mid, keep_hi = keep_low ? mid : hi;
            FOR_COLS(s, &c, send_lo * es, send_hi * es, off, len, col)
                c.dep[col] = duet_sched_send(s, partner, DUET_BUF_RECV, off, len, c.dep[col]);
            FOR_COLS(s, &c, keep_lo * es, keep_hi * es, off, len, col)
                c.dep[col] = duet_sched_recv_reduce(s, partner, DUET_BUF_RECV, off, DUET_BUF_RECV, off, len, c.dep[col]);
            los[levels] = lo;
            his[levels] = hi;
            levels++;
            lo = keep_lo;
            hi = keep_hi;
        }
        /* allgather by doubling, retracing the halving backwards */
        for (int d = 1, lvl = levels - 1; d < f.p; d *= 2, lvl--) {
            int partner = real_rank(&f, f.newrank ^ d);
            size_t plo = los[lvl], phi = his[lvl], mid = split_at(a, plo, phi);
            int mine_low = (f.newrank & d) == 0;
            size_t other_lo = mine_low ? mid : plo, other_hi = mine_low ? phi : mid;
            FOR_COLS(s, &c, lo * es, hi * es, off, len, col)
                c.dep[col] = duet_sched_send(s, partner, DUET_BUF_RECV, off, len, c.dep[col]);
            FOR_COLS(s, &c, other_lo * es, other_hi * es, off, len, col)
                c.dep[col] = duet_sched_recv(s, partner, DUET_BUF_RECV, off, len, c.dep[col]);
            lo = plo;
            hi = phi;
        }
    }
    fold_out(&f, a, s, &c);
    free(c.dep);
    return s->error;
}

/* Allgather by recursive doubling: round d exchanges the d blocks gathered so far. Powers
 * of two only. */
duet_status_t duet_coll_rd_allgather(const duet_coll_args_t *a, duet_sched_t *s)
{
    DUET_SCHED_BEGIN(a, s);
    s->recv_stable = 1; /* every block is written once, by its arrival, before it is forwarded */
    int n = a->nranks, r = a->rank;
    if (n & (n - 1))
        return s->error = duet_error_set(DUET_ERR_UNSUPPORTED, "rd allgather needs a power-of-two rank count, not %d", n);
    size_t block = a->count * a->elem, chunk = duet_coll_chunk(a);
    int prev = duet_sched_copy(s, DUET_BUF_SEND, 0, DUET_BUF_RECV, (size_t)r * block, block, -1);
    for (int d = 1; d < n; d *= 2) {
        int partner = r ^ d, mine = r / d * d, theirs = partner / d * d;
        int last = prev;
        for (size_t off = 0; off < (size_t)d * block; off += chunk) {
            size_t len = (size_t)d * block - off < chunk ? (size_t)d * block - off : chunk;
            duet_sched_send(s, partner, DUET_BUF_RECV, (size_t)mine * block + off, len, prev);
            last = duet_sched_recv(s, partner, DUET_BUF_RECV, (size_t)theirs * block + off, len, prev);
        }
        /* the next round sends what every earlier round brought: its receives wait on this
         * round's, and this round's last receive comes last from its partner */
        prev = last;
    }
    return s->error;
}

/* Reduce-scatter by recursive halving over blocks: powers of two only. */
duet_status_t duet_coll_rhd_reduce_scatter(const duet_coll_args_t *a, duet_sched_t *s)
{
    DUET_SCHED_BEGIN(a, s);
    int n = a->nranks, r = a->rank;
    if (n & (n - 1))
        return s->error = duet_error_set(DUET_ERR_UNSUPPORTED, "rhd reduce-scatter needs a power-of-two rank count, not %d", n);
    size_t block = a->count * a->elem, chunk = duet_coll_chunk(a);
    if (n == 1) {
        duet_sched_copy(s, DUET_BUF_SEND, 0, DUET_BUF_RECV, 0, block, -1);
        return s->error;
    }
    s->tmp_bytes = block * (size_t)n;
    int lo = 0, hi = n, src = DUET_BUF_SEND, prev = -1;
    for (int d = n / 2; d >= 1; d /= 2) {
        int partner = r ^ d, mid = (lo + hi) / 2, keep_low = (r & d) == 0;
        int slo = keep_low ? mid : lo, shi = keep_low ? hi : mid, klo = keep_low ? lo : mid, khi = keep_low ? mid : hi;
        int final = d == 1;
        for (size_t off = 0; off < (size_t)(shi - slo) * block; off += chunk) {
            size_t len = (size_t)(shi - slo) * block - off < chunk ? (size_t)(shi - slo) * block - off : chunk;
            duet_sched_send(s, partner, src, (size_t)slo * block + off, len, prev);
        }
        int last = -1;
        for (size_t off = 0; off < (size_t)(khi - klo) * block; off += chunk) {
            size_t len = (size_t)(khi - klo) * block - off < chunk ? (size_t)(khi - klo) * block - off : chunk;
            last = duet_sched_recv_reduce(s, partner, src, (size_t)klo * block + off, final ? DUET_BUF_RECV : DUET_BUF_TMP,
                                          final ? off : (size_t)klo * block + off, len, prev);
        }
        prev = last;
        src = DUET_BUF_TMP;
        lo = klo;
        hi = khi;
    }
    return s->error;
}
