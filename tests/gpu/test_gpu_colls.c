/*
 * test_gpu_colls.c — every collective on GPU buffers, stream-ordered (label gpu; every rank
 * needs a GPU; ranks may share one under MPS). Registered by tests/gpu/colls.cmake at 2, 3 and
 * 4 ranks with the tuner's choice, and at 3 (and 4) ranks with algorithms forced by DUET_ALGO.
 *
 *   - duet_allreduce, duet_reduce, duet_reduce_scatter: every datatype x op (SUM PROD MIN MAX
 *     AVG) at counts 1 and 1001; at count 0 and 7 every datatype with one op (the ops rotate);
 *     at a large count (the largest buffer of the call about 3 MiB, odd element count) float32
 *     sum, int32 max, bfloat16 sum and float64 avg;
 *   - duet_broadcast, duet_allgather, duet_alltoall, duet_send / duet_recv: int8 (odd byte
 *     counts), float16 and float64 at counts 0, 1, 7, 1001 and the large count;
 *   - in place and out of place with duet.h's conventions (sendbuf == recvbuf; allgather
 *     sendbuf = recvbuf + rank * count; reduce-scatter recvbuf = sendbuf + rank * count;
 *     all-to-all in place must fail, with DUET_ERR_UNSUPPORTED or DUET_ERR_INVALID_ARG, and
 *     leave the buffer alone; send/recv have no in-place form and run out of place only);
 *     broadcast and reduce with roots 0 and n-1;
 *   - send/recv as a ring exchange (rank r sends to r+1 and receives from r-1), not in a group:
 *     even ranks send then receive, odd ranks receive then send (both calls only queue work on
 *     the stream, so the pairing must be deadlock-free in stream order);
 *   - buffers from the GPU heap (duet_malloc_device) and from plain cudaMalloc, the placement
 *     rotating from case to case (heap -> cuda, cuda -> heap, heap -> heap, cuda -> cuda); all
 *     uploads, calls and downloads on one non-blocking stream, one cudaStreamSynchronize per
 *     case before the check (no device-wide sync, no barrier between cases);
 *   - every element of every buffer the call touches or must not touch is checked: outputs are
 *     poisoned (0xA5 bytes) before the call; the send buffer of an out-of-place call, a
 *     non-root's reduce output and the other blocks of an in-place reduce-scatter must be left
 *     as they were. Moved data must come out bit for bit. Reductions: each rank computes every
 *     rank's input (a function of seed, case, rank and index) and the reference in rank order,
 *     with the library's semantics (integers wrap in their width, integer avg truncates toward
 *     0; fp16 / bf16 reduce in fp32 and round once). Integers exactly; floats within one unit
 *     in the last place of the type relative to the reference (fp16 2^-10, bf16 2^-7, fp32
 *     2^-22, fp64 2^-50) plus fp16's smallest subnormal (inputs are multiples of 1/16 in
 *     [-2, 2], so sums are exact and only products, avg and the final rounding round);
 *   - forced algorithms that cannot run a call (a name the collective does not have, rd
 *     allgather and rhd reduce-scatter at a rank count that is not a power of two) must fail
 *     with DUET_ERR_INVALID_ARG (at count 0 a no-op is accepted too), buffers untouched;
 *   - 200 back-to-back calls of mixed collectives (all selected ones, mixed datatypes, ops,
 *     roots and counts) on one stream without a host sync between, each from its own input
 *     region into its own output region, checked after one sync;
 *   - the direct kernels (symmetric buffers, read where they lie: allreduce above 1 MiB, the
 *     others at any size, so the matrix's heap cases above take them too), each
 *     collective: datatype x op pairs in and out of place at 1-3 MiB, roots 0 and n-1,
 *     heap buffers that are not 16-byte aligned, a receive buffer outside the heap, which may
 *     be, offsets that differ between ranks (each rank's
 *     buffers are read where it says), of the same and of another alignment; and calls that
 *     must not take them (every rank's buffers from cudaMalloc, DUET_ALGO forcing an
 *     algorithm), each checked for the path it took (duet_cuda_coll_traffic) and its result;
 *     8 in-place allreduce sums back to back without a sync (a call whose buffers lie in the
 *     heap on some ranks only is a mismatch: test_gpu_mismatch.c);
 *   - errors: one buffer on the host and the other on the GPU, for the collectives that use
 *     both buffers on every rank -> DUET_ERR_INVALID_ARG and a duet_last_error() message.
 * A failure names the collective, datatype, op, count, placement, root, the buffer and index,
 * the value got and the value expected (the rank is in the report's prefix).
 *
 * Usage: test_gpu_colls [collective|all] with collective one of allreduce broadcast reduce
 * allgather reducescatter alltoall sendrecv (the matrix and the back-to-back calls of that one
 * only). Seed: $DUET_TEST_SEED, else the time. Reads DUET_ALGO as the library does to know
 * which calls must fail (its copy of the algorithm table, algo_table[], must follow
 * src/coll/duet_coll_tune.c). Rank 0 prints "test_gpu_colls: passed".
 */
#include "duet_test.h"
#include "gpu/gpu_elems.h"

#include <cuda_runtime_api.h>
#include <duet/duet_cuda.h>
#include "coll/duet_coll.h"
#include "cuda/duet_cuda_coll.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CUDA_OK(call)                                                                        \
    do {                                                                                     \
        cudaError_t e_ = (call);                                                             \
        if (e_ != cudaSuccess) FATAL("%s: %s", #call, cudaGetErrorString(e_));               \
    } while (0)

enum { AR, BC, RD, AG, RS, A2A, SR, NCOLL };
static const char *coll_names[NCOLL] = {"allreduce", "broadcast",     "reduce",  "allgather",
                                        "reducescatter", "alltoall", "sendrecv"};
/* the algorithms DUET_ALGO may name per collective (src/coll/duet_coll_tune.c) */
static const char *const algo_table[NCOLL][8] = {
    {"ring", "tree", "dbtree", "rd", "rhd", "oneshot", "twoshot", NULL},
    {"chain", "tree", NULL}, {"chain", "tree", NULL}, {"ring", "rd", "direct", NULL},
    {"ring", "rhd", "direct", NULL}, {"pairwise", NULL}, {NULL}};
static const char *dt_names[] = {"int8", "uint8", "int32", "uint32", "int64", "uint64",
                                 "float16", "bfloat16", "float32", "float64"};
static const char *op_names[] = {"sum", "prod", "min", "max", "avg"};

static int me, npes;
static duet_comm_t W;
static cudaStream_t s1;
static char forced[NCOLL][64]; /* DUET_ALGO's algorithm per collective ("" none) */

enum { BUFB = 4 << 20, LARGE_BYTES = 3 << 20, POISON = 0xA5 };
static char *heap_buf[2], *cu_buf[2]; /* BUFB bytes each */
static char *h_img[2], *h_out[2];     /* pinned staging: images uploaded, buffers downloaded */

static int reduces(int coll) { return coll == AR || coll == RD || coll == RS; }
static int is_pow2(int n) { return (n & (n - 1)) == 0; }

/* Rank r's input element j, encoded at p. */
static void put_input(int dt, char *p, int r, size_t j, uint64_t salt) { store(dt, p, gen_bits(r, j, salt), gen_val(r, j, salt)); }

/* The element at p as text: integers in decimal, floats by value. */
static void fmt_elem(int dt, const char *p, char *out, size_t len)
{
    size_t es = duet_datatype_size(dt);
    uint64_t b = 0;
    memcpy(&b, p, es);
    if (!is_float(dt)) {
        if (is_signed(dt)) snprintf(out, len, "%lld", (long long)(int64_t)sext(dt, b));
        else snprintf(out, len, "%llu", (unsigned long long)sext(dt, b));
        return;
    }
    double v;
    if (dt == DUET_FLOAT64) memcpy(&v, p, 8);
    else if (dt == DUET_FLOAT32) { float f; memcpy(&f, p, 4); v = f; }
    else v = dt == DUET_FLOAT16 ? h2f((uint16_t)b) : b2f((uint16_t)b);
    snprintf(out, len, "%.9g (0x%llx)", v, (unsigned long long)b);
}


static double decode_float(int dt, const char *p)
{
    if (dt == DUET_FLOAT64) { double d; memcpy(&d, p, 8); return d; }
    if (dt == DUET_FLOAT32) { float f; memcpy(&f, p, 4); return f; }
    uint16_t h;
    memcpy(&h, p, 2);
    return dt == DUET_FLOAT16 ? h2f(h) : b2f(h);
}

/* 0 when the element at p is the reduction of element j (within the bound); else why. */
static int check_reduced(int dt, int op, const char *p, size_t j, uint64_t salt, char *why, size_t len)
{
    char g[64];
    fmt_elem(dt, p, g, sizeof g);
    if (!is_float(dt)) {
        size_t es = duet_datatype_size(dt);
        uint64_t want = ref_int(dt, op, npes, j, salt), got = 0, mask = es == 8 ? ~0ull : ((1ull << (8 * es)) - 1);
        memcpy(&got, p, es);
        if ((got & mask) == (want & mask)) return 0;
        char w[64];
        char tmp[8];
        memcpy(tmp, &want, 8);
        fmt_elem(dt, tmp, w, sizeof w);
        snprintf(why, len, "got %s, expected %s", g, w);
        return 1;
    }
    double ref = ref_float(dt, op, npes, j, salt), got = decode_float(dt, p);
    double rel = dt == DUET_FLOAT16 ? 0x1p-10 : dt == DUET_BFLOAT16 ? 0x1p-7 : dt == DUET_FLOAT32 ? 0x1p-22 : 0x1p-50;
    double bound = rel * fabs(ref) + (dt == DUET_FLOAT16 ? 0x1p-24 : 0);
    if (fabs(got - ref) <= bound) return 0; /* a NaN fails */
    snprintf(why, len, "got %s, expected %.9g (bound %.3g)", g, ref, bound);
    return 1;
}

/* ------------------------------------------------------------------------------------
 * Cases: what each buffer holds before and after the call
 * ------------------------------------------------------------------------------------ */
typedef struct {
    int coll, dt, op, root, inplace;
    size_t count;
    uint64_t salt;
    char what[160];
} case_t;

static void case_name(case_t *c, const char *prefix, const char *placement)
{
    snprintf(c->what, sizeof c->what, "%s%s %s%s%s count %zu %s", prefix, coll_names[c->coll], dt_names[c->dt],
             reduces(c->coll) ? " " : "", reduces(c->coll) ? op_names[c->op] : "", c->count,
             c->inplace ? "in place" : "out of place");
    size_t n = strlen(c->what);
    if (c->coll == BC || c->coll == RD) n += (size_t)snprintf(c->what + n, sizeof c->what - n, " root %d", c->root);
    if (placement) snprintf(c->what + n, sizeof c->what - n, " (%s)", placement);
}

/* Elements of the send and receive buffers (duet.h's count meaning per collective). */
static size_t send_elems(const case_t *c) { return c->coll == RS || c->coll == A2A ? c->count * (size_t)npes : c->count; }
static size_t recv_elems(const case_t *c) { return c->coll == AG || c->coll == A2A ? c->count * (size_t)npes : c->count; }
/* In place: the one buffer is the larger of the two. */
static size_t region_elems(const case_t *c, int which)
{
    if (which == 'B') return send_elems(c) > recv_elems(c) ? send_elems(c) : recv_elems(c);
    return which == 'S' ? send_elems(c) : recv_elems(c);
}

/* The library's DUET_ALGO reading (duet_coll_forced_algo): "name" applies to every
 * collective, "coll:name" to one, the first naming a collective wins. */
static void parse_algo(const char *spec)
{
    for (int k = 0; k < NCOLL; k++) {
        char buf[256];
        forced[k][0] = '\0';
        if (k == SR) continue; /* send / recv have no algorithms */
        snprintf(buf, sizeof buf, "%s", spec ? spec : "");
        for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            char *colon = strchr(tok, ':');
            if (!colon) {
                snprintf(forced[k], sizeof forced[k], "%s", tok);
                continue;
            }
            *colon = '\0';
            if (strcmp(tok, coll_names[k]) == 0) {
                snprintf(forced[k], sizeof forced[k], "%s", colon + 1);
                break;
            }
        }
    }
}

/* The status every rank must get (DUET_OK: the call must work). All-to-all in place may fail
 * with DUET_ERR_UNSUPPORTED too; at count 0 a refused case may also succeed (see status_ok). */
static duet_status_t expected_status(const case_t *c)
{
    const char *f = forced[c->coll];
    if (f[0]) {
        int known = 0;
        for (int i = 0; algo_table[c->coll][i]; i++) known |= strcmp(algo_table[c->coll][i], f) == 0;
        if (!known) return DUET_ERR_INVALID_ARG;
        if (c->coll == AG && !strcmp(f, "rd") && !is_pow2(npes)) return DUET_ERR_INVALID_ARG;
        if (c->coll == RS && !strcmp(f, "rhd") && !is_pow2(npes)) return DUET_ERR_INVALID_ARG;
    }
    if (c->coll == A2A && c->inplace && npes > 1 && c->count) return DUET_ERR_INVALID_ARG;
    return DUET_OK;
}

static int status_ok(const case_t *c, duet_status_t st)
{
    duet_status_t want = expected_status(c);
    if (st == want) return 1;
    if (want == DUET_OK) return 0;
    if (c->count == 0 && st == DUET_OK) return 1;
    return c->coll == A2A && c->inplace && st == DUET_ERR_UNSUPPORTED && !forced[A2A][0];
}

typedef enum { W_POISON, W_INPUT, W_REDUCED } want_kind_t;
typedef struct { want_kind_t kind; int rank; size_t idx; } want_t;

/* What element j of a buffer must hold: which = 'S' (send, out of place), 'R' (receive, out
 * of place), 'B' (the one buffer in place); after = 0 before the call or after a refused one.
 * (The model of tests/mp/test_coll.c.) */
static want_t want_of(const case_t *c, int which, size_t j, int after)
{
    size_t n = c->count, mine_lo = (size_t)me * n;
    int root = me == c->root, my_block = j >= mine_lo && j < mine_lo + n;
    want_t in = {W_INPUT, me, j}, poison = {W_POISON, 0, 0}, red = {W_REDUCED, 0, j};
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
    case RS: return which == 'R' ? (want_t){W_REDUCED, 0, mine_lo + j} : my_block ? red : in;
    case A2A: return (want_t){W_INPUT, (int)(j / n), mine_lo + j % n};
    default: return (want_t){W_INPUT, (me + npes - 1) % npes, j}; /* SR: from the previous rank */
    }
}

/* The host image of a buffer before the call. */
static void build_image(const case_t *c, int which, char *host)
{
    size_t es = duet_datatype_size(c->dt), elems = region_elems(c, which);
    for (size_t j = 0; j < elems; j++) {
        want_t w = want_of(c, which, j, 0);
        if (w.kind == W_POISON) memset(host + j * es, POISON, es);
        else put_input(c->dt, host + j * es, w.rank, w.idx, c->salt);
    }
}

/* Checks a downloaded buffer element by element; reports the first wrong element and the
 * number wrong. Returns 1 when all are right. */
static int check_image(const case_t *c, int which, const char *host, int after)
{
    size_t es = duet_datatype_size(c->dt), elems = region_elems(c, which), bad = 0;
    char why[256] = "", first[320] = "";
    for (size_t j = 0; j < elems; j++) {
        const char *p = host + j * es;
        want_t w = want_of(c, which, j, after);
        char want[8];
        int wrong;
        if (w.kind == W_REDUCED) wrong = check_reduced(c->dt, c->op, p, w.idx, c->salt, why, sizeof why);
        else {
            if (w.kind == W_POISON) memset(want, POISON, es);
            else put_input(c->dt, want, w.rank, w.idx, c->salt);
            if ((wrong = memcmp(p, want, es) != 0)) {
                char g[64], e[64];
                fmt_elem(c->dt, p, g, sizeof g);
                fmt_elem(c->dt, want, e, sizeof e);
                if (w.kind == W_POISON) snprintf(why, sizeof why, "got %s, expected it untouched (%s)", g, e);
                else snprintf(why, sizeof why, "got %s, expected %s (rank %d's element %zu)", g, e, w.rank, w.idx);
            }
        }
        if (wrong && bad++ == 0) snprintf(first, sizeof first, "index %zu: %s", j, why);
    }
    if (bad)
        FAIL("%s: %s buffer: %zu of %zu elements wrong; first at %s", c->what,
             which == 'S' ? "send" : which == 'R' ? "receive" : "in-place", bad, elems, first);
    return bad == 0;
}

/* ------------------------------------------------------------------------------------
 * Calls
 * ------------------------------------------------------------------------------------ */
/* The ring exchange: send to me+1, receive from me-1; even ranks send first, odd receive
 * first, so the pairs match in stream order whatever the rank count. */
static duet_status_t sendrecv_ring(const void *send, void *recv, size_t count, int dt, cudaStream_t s)
{
    int to = (me + 1) % npes, from = (me + npes - 1) % npes;
    duet_status_t st;
    if (me % 2 == 0) {
        st = duet_send(send, count, (duet_datatype_t)dt, to, W, s);
        if (st == DUET_OK) st = duet_recv(recv, count, (duet_datatype_t)dt, from, W, s);
    } else {
        st = duet_recv(recv, count, (duet_datatype_t)dt, from, W, s);
        if (st == DUET_OK) st = duet_send(send, count, (duet_datatype_t)dt, to, W, s);
    }
    return st;
}

static duet_status_t launch(const case_t *c, const void *send, void *recv, cudaStream_t s)
{
    duet_datatype_t dt = (duet_datatype_t)c->dt;
    duet_op_t op = (duet_op_t)c->op;
    switch (c->coll) {
    case AR: return duet_allreduce(send, recv, c->count, dt, op, W, s);
    case BC: return duet_broadcast(send, recv, c->count, dt, c->root, W, s);
    case RD: return duet_reduce(send, recv, c->count, dt, op, c->root, W, s);
    case AG: return duet_allgather(send, recv, c->count, dt, W, s);
    case RS: return duet_reduce_scatter(send, recv, c->count, dt, op, W, s);
    case A2A: return duet_alltoall(send, recv, c->count, dt, W, s);
    default: return sendrecv_ring(send, recv, c->count, c->dt, s);
    }
}

/* The send and receive pointers of a case whose buffers start at a (send or the one in-place
 * buffer) and b (receive, out of place). */
static void case_pointers(const case_t *c, char *a, char *b, const void **send, void **recv)
{
    size_t block = c->count * duet_datatype_size(c->dt);
    *send = a;
    *recv = b;
    if (!c->inplace) return;
    *send = c->coll == AG ? a + (size_t)me * block : a;
    *recv = c->coll == RS ? a + (size_t)me * block : a;
}

static int check_status(const case_t *c, duet_status_t st)
{
    if (status_ok(c, st)) return 1;
    if (expected_status(c) == DUET_OK) FAIL("%s: %s (%s)", c->what, duet_status_str(st), duet_last_error());
    else FAIL("%s: returned %s, expected %s", c->what, duet_status_str(st), duet_status_str(expected_status(c)));
    return 0;
}

/* One case: upload the images, call, download, synchronize, check every buffer. */
static int run_case(case_t *c, char *a, char *b)
{
    int regions = c->inplace ? 1 : 2;
    const int which[2] = {c->inplace ? 'B' : 'S', 'R'};
    char *dev[2] = {a, b};
    size_t es = duet_datatype_size(c->dt);
    for (int k = 0; k < regions; k++) {
        size_t bytes = region_elems(c, which[k]) * es;
        build_image(c, which[k], h_img[k]);
        if (bytes) CUDA_OK(cudaMemcpyAsync(dev[k], h_img[k], bytes, cudaMemcpyHostToDevice, s1));
    }
    const void *send;
    void *recv;
    case_pointers(c, a, b, &send, &recv);
    duet_status_t st = launch(c, send, recv, s1);
    int ok = check_status(c, st);
    for (int k = 0; k < regions; k++) {
        size_t bytes = region_elems(c, which[k]) * es;
        if (bytes) CUDA_OK(cudaMemcpyAsync(h_out[k], dev[k], bytes, cudaMemcpyDeviceToHost, s1));
    }
    CUDA_OK(cudaStreamSynchronize(s1));
    for (int k = 0; k < regions; k++) ok &= check_image(c, which[k], h_out[k], st == DUET_OK);
    return ok;
}

/* ------------------------------------------------------------------------------------
 * The matrix
 * ------------------------------------------------------------------------------------ */
static size_t large_count(int coll, int dt)
{
    size_t per = (size_t)LARGE_BYTES / duet_datatype_size(dt);
    if (coll == AG || coll == RS || coll == A2A) per /= (size_t)npes; /* the whole buffer ~3 MiB */
    return per | 1;
}

/* Which (datatype, op) pairs run at count index ci (0, 1, 7, 1001, large). */
static int sampled(int coll, int dt, int op, int ci)
{
    if (!reduces(coll)) return op == 0 && (dt == DUET_INT8 || dt == DUET_FLOAT16 || dt == DUET_FLOAT64);
    if (ci == 1 || ci == 3) return 1;
    if (ci == 4)
        return (dt == DUET_FLOAT32 && op == DUET_SUM) || (dt == DUET_INT32 && op == DUET_MAX) ||
               (dt == DUET_BFLOAT16 && op == DUET_SUM) || (dt == DUET_FLOAT64 && op == DUET_AVG);
    return op == (dt + ci) % DUET_OP_COUNT; /* counts 0 and 7: each datatype, ops rotating */
}

static const char *placements[4] = {"heap -> cudaMalloc", "cudaMalloc -> heap", "heap -> heap",
                                    "cudaMalloc -> cudaMalloc"};

static void run_matrix(int coll, long *cases, long *passed, uint64_t *salt)
{
    static const size_t counts[] = {0, 1, 7, 1001, 0 /* large */};
    int nroots = (coll == BC || coll == RD) && npes > 1 ? 2 : 1;
    for (int dt = 0; dt < DUET_DATATYPE_COUNT; dt++)
        for (int op = 0; op < DUET_OP_COUNT; op++)
            for (int ci = 0; ci < 5; ci++) {
                if (!sampled(coll, dt, op, ci)) continue;
                for (int ri = 0; ri < nroots; ri++)
                    for (int inplace = 0; inplace < (coll == SR ? 1 : 2); inplace++) {
                        case_t c = {coll, dt, op, ri ? npes - 1 : 0, inplace, ci == 4 ? large_count(coll, dt) : counts[ci],
                                    (*salt)++, ""};
                        int p = (int)((*cases / 2) % 4);
                        char *a = p == 0 || p == 2 ? heap_buf[0] : cu_buf[0];
                        char *b = p == 1 || p == 2 ? heap_buf[1] : cu_buf[1];
                        case_name(&c, "", inplace ? (p & 1 ? "cudaMalloc" : "heap") : placements[p]);
                        if (inplace) a = p & 1 ? cu_buf[0] : heap_buf[0];
                        (*cases)++;
                        *passed += run_case(&c, a, b);
                    }
            }
}

/* ------------------------------------------------------------------------------------
 * Back-to-back calls without a host sync
 * ------------------------------------------------------------------------------------ */
enum { CALLS = 200 };

static size_t align256(size_t x) { return (x + 255) & ~(size_t)255; }

/* Call k of the back-to-back run, of collective coll. */
static case_t b2b_case(int k, int coll)
{
    static const size_t counts[] = {7, 1001, 3001};
    static const int red_dt[] = {DUET_FLOAT32, DUET_INT32, DUET_BFLOAT16, DUET_FLOAT64, DUET_UINT8, DUET_FLOAT16};
    static const int move_dt[] = {DUET_INT8, DUET_FLOAT16, DUET_FLOAT64};
    case_t c = {coll, reduces(coll) ? red_dt[k % 6] : move_dt[k % 3], k % DUET_OP_COUNT, k % npes, 0,
                counts[(k / 3 + k) % 3], 1000000 + (uint64_t)k, ""};
    char prefix[48];
    snprintf(prefix, sizeof prefix, "back-to-back call %d: ", k);
    case_name(&c, prefix, k & 1 ? "heap -> cudaMalloc" : "cudaMalloc -> heap");
    return c;
}

static void run_back_to_back(const int *colls, int ncolls)
{
    static case_t cs[CALLS];
    size_t off[CALLS][2], total[2] = {0, 0}; /* [0]: cudaMalloc'd, [1]: GPU heap */
    int side[CALLS], n = 0;                  /* side[i]: where call i's send buffer is */
    for (int k = 0; k < CALLS; k++) {
        case_t c = b2b_case(k, colls[k % ncolls]);
        if (expected_status(&c) != DUET_OK) continue;
        size_t es = duet_datatype_size(c.dt);
        int sx = k & 1; /* the send buffer's side; the receive buffer is on the other */
        off[n][sx] = total[sx], total[sx] += align256(send_elems(&c) * es);
        off[n][1 - sx] = total[1 - sx], total[1 - sx] += align256(recv_elems(&c) * es);
        side[n] = sx;
        cs[n++] = c;
    }
    if (n == 0) return;
    char *dev[2], *img[2], *out[2];
    CUDA_OK(cudaMalloc((void **)&dev[0], total[0]));
    dev[1] = duet_malloc_device(W, total[1]);
    CHECK(dev[1] != NULL, "duet_malloc_device(%zu)", total[1]);
    for (int s = 0; s < 2; s++) {
        CUDA_OK(cudaMallocHost((void **)&img[s], total[s]));
        CUDA_OK(cudaMallocHost((void **)&out[s], total[s]));
    }
    for (int i = 0; i < n; i++) {
        int sx = side[i];
        build_image(&cs[i], 'S', img[sx] + off[i][sx]);
        build_image(&cs[i], 'R', img[1 - sx] + off[i][1 - sx]);
    }
    for (int s = 0; s < 2; s++) CUDA_OK(cudaMemcpyAsync(dev[s], img[s], total[s], cudaMemcpyHostToDevice, s1));
    int ok[CALLS];
    for (int i = 0; i < n; i++) {
        int sx = side[i];
        duet_status_t st = launch(&cs[i], dev[sx] + off[i][sx], dev[1 - sx] + off[i][1 - sx], s1);
        ok[i] = st == DUET_OK;
        if (!ok[i]) FAIL("%s: %s (%s)", cs[i].what, duet_status_str(st), duet_last_error());
    }
    for (int s = 0; s < 2; s++) CUDA_OK(cudaMemcpyAsync(out[s], dev[s], total[s], cudaMemcpyDeviceToHost, s1));
    CUDA_OK(cudaStreamSynchronize(s1));
    long good = 0;
    for (int i = 0; i < n; i++) {
        int sx = side[i];
        int g = check_image(&cs[i], 'S', out[sx] + off[i][sx], ok[i]);
        g &= check_image(&cs[i], 'R', out[1 - sx] + off[i][1 - sx], ok[i]);
        good += g && ok[i];
    }
    if (me == 0) printf("test_gpu_colls: %d back-to-back calls: %ld right\n", n, good);
    for (int s = 0; s < 2; s++) {
        CUDA_OK(cudaFreeHost(img[s]));
        CUDA_OK(cudaFreeHost(out[s]));
    }
    CUDA_OK(cudaFree(dev[0]));
    CHECK_OK(duet_free(W, dev[1]));
}

/* ------------------------------------------------------------------------------------
 * The direct kernels: buffers in the GPU heap (allreduce beyond the shot kernels' size) are
 * read where they lie, at whatever offset each rank has them; anything else keeps the executor
 * ------------------------------------------------------------------------------------ */
/* The algorithm the library runs for case c at send / recv (collective), and whether that is
 * a direct kernel. */
static int runs_direct(const case_t *c, const void *send, void *recv, char *algo, size_t len)
{
    static const int kinds[NCOLL] = {DUET_COLL_ALLREDUCE, DUET_COLL_BROADCAST, DUET_COLL_REDUCE, DUET_COLL_ALLGATHER,
                                     DUET_COLL_REDUCE_SCATTER, DUET_COLL_ALLTOALL, DUET_COLL_SEND};
    duet_cuda_coll_call_t k = {kinds[c->coll], send, recv, c->count, send_elems(c), recv_elems(c),
                               (duet_datatype_t)c->dt, reduces(c->coll) ? (duet_op_t)c->op : DUET_SUM, c->root,
                               c->inplace, DUET_CUDA_ROUTED | DUET_CUDA_SEND_DEVICE | DUET_CUDA_RECV_DEVICE, s1,
                               "test", 0, 0, 0};
    double staged, direct;
    CHECK_OK(duet_cuda_coll_traffic(W, &k, algo, len, &staged, &direct));
    return strstr(algo, "direct kernel") != NULL;
}

/* One case at buffers a (send, or the in-place one) and b, checked as in the matrix, and the
 * path it took against `want_direct`. */
static void direct_case(int coll, int dt, int op, int root, size_t count, int inplace, char *a, char *b,
                        int want_direct, const char *placement, long *cases, long *passed, uint64_t *salt)
{
    case_t c = {coll, dt, op, root, inplace, count, (*salt)++, ""};
    case_name(&c, "direct: ", placement);
    const void *send;
    void *recv;
    case_pointers(&c, a, b, &send, &recv);
    char algo[64];
    (*cases)++;
    /* a call the forced algorithm cannot run must fail (run_case checks that); it has no path */
    int direct = expected_status(&c) == DUET_OK ? runs_direct(&c, send, recv, algo, sizeof algo) : want_direct;
    if (direct != want_direct) {
        FAIL("%s: runs %s, expected %s", c.what, algo, want_direct ? "a direct kernel" : "another path");
        return;
    }
    *passed += run_case(&c, a, b);
}

/* in-place sums back to back without a host sync: after k calls every element is
 * n^(k-1) x (the sum of the inputs), exact in float32 for these small integers */
static void direct_back_to_back(size_t count, long *cases, long *passed)
{
    enum { K = 8 };
    float *h = (float *)(void *)h_img[0];
    for (size_t j = 0; j < count; j++) h[j] = (float)(me + 1 + (int)(j % 3));
    CUDA_OK(cudaMemcpyAsync(heap_buf[0], h, count * 4, cudaMemcpyHostToDevice, s1));
    for (int k = 0; k < K; k++) CHECK_OK(duet_allreduce(heap_buf[0], heap_buf[0], count, DUET_FLOAT32, DUET_SUM, W, s1));
    float *out = (float *)(void *)h_out[0];
    CUDA_OK(cudaMemcpyAsync(out, heap_buf[0], count * 4, cudaMemcpyDeviceToHost, s1));
    CUDA_OK(cudaStreamSynchronize(s1));
    double scale = pow((double)npes, K - 1);
    size_t bad = 0, first = 0;
    for (size_t j = 0; j < count; j++) {
        double want = scale * ((double)npes * (npes + 1) / 2 + (double)npes * (double)(j % 3));
        if ((double)out[j] != want && bad++ == 0) first = j;
    }
    (*cases)++;
    if (bad) FAIL("direct: %d in-place float32 sums of count %zu back to back: %zu wrong, first at %zu: got %g, "
                  "expected %g", K, count, bad, first, (double)out[first],
                  scale * ((double)npes * (npes + 1) / 2 + (double)npes * (double)(first % 3)));
    else (*passed)++;
}

static void test_direct(const int *colls, int ncolls)
{
    long cases = 0, passed = 0;
    uint64_t salt = 1u << 20;
    for (int i = 0; i < ncolls; i++) {
        int coll = colls[i];
        if (coll == SR) continue;
        /* a forced algorithm keeps the executor (allreduce: but twoshot, which this is) */
        int allowed = forced[coll][0] == '\0' || (coll == AR && strcmp(forced[coll], "twoshot") == 0);
        int split = coll == AG || coll == RS || coll == A2A, last = npes - 1;
        static const struct { int dt, op; } pairs[] = {
            {DUET_FLOAT32, DUET_SUM}, {DUET_FLOAT16, DUET_SUM}, {DUET_BFLOAT16, DUET_AVG}, {DUET_INT8, DUET_PROD},
            {DUET_INT64, DUET_MIN},   {DUET_FLOAT64, DUET_MAX}, {DUET_UINT32, DUET_SUM},
        };
        size_t npairs = reduces(coll) ? sizeof pairs / sizeof pairs[0] : 3;
        for (size_t j = 0; j < npairs; j++) {
            int dt = reduces(coll) ? pairs[j].dt : j == 0 ? DUET_INT8 : j == 1 ? DUET_FLOAT16 : DUET_FLOAT64;
            int op = reduces(coll) ? pairs[j].op : DUET_SUM;
            size_t es = duet_datatype_size(dt);
            /* the largest buffer 1 to 3 MiB, odd counts (not whole 16-byte packs) */
            size_t count = (size_t)(((1 << 20) + (int)j * 333331) / (int)es) | 1;
            if (split) count = count / (size_t)npes | 1;
            int root = (int)j % 2 ? last : 0;
            direct_case(coll, dt, op, root, count, 0, heap_buf[0], heap_buf[1], allowed, "heap -> heap", &cases,
                        &passed, &salt);
            if (coll != A2A)
                direct_case(coll, dt, op, root, count, 1, heap_buf[0], NULL, allowed, "heap", &cases, &passed, &salt);
        }
        size_t count = split ? ((3u << 19) + 5) / (size_t)npes : (3u << 19) + 5;
        /* in the heap but not 16-byte aligned: element by element */
        direct_case(coll, DUET_FLOAT16, DUET_SUM, 0, count, 0, heap_buf[0] + 2, heap_buf[1] + 6, allowed,
                    "heap+2 -> heap+6", &cases, &passed, &salt);
        /* what is only read locally may be anywhere: receive buffers (but allreduce's) */
        if (coll != AR) {
            char *b = me == last ? cu_buf[1] : heap_buf[1];
            direct_case(coll, DUET_FLOAT32, DUET_SUM, last, count / 2, 0, heap_buf[0], b, allowed,
                        "heap -> last rank's cudaMalloc", &cases, &passed, &salt);
        }
        /* offsets that differ between ranks: 16-byte aligned everywhere (packs), then of
         * another alignment on every other rank (element by element) */
        count = split ? ((1u << 20) / 4 + 4097) / (size_t)npes : (1u << 20) / 4 + 4097;
        direct_case(coll, DUET_FLOAT32, DUET_SUM, 0, count, 0, heap_buf[0] + 256 * (size_t)me,
                    heap_buf[1] + 4096 * (size_t)(npes - 1 - me), allowed, "heap+256*rank -> heap+4096*(n-1-rank)",
                    &cases, &passed, &salt);
        direct_case(coll, DUET_FLOAT32, DUET_MAX, last, count, 0, heap_buf[0] + 4 * (size_t)(me % 2),
                    heap_buf[1] + 8 * (size_t)(me % 2), allowed, "heap+4*(rank%2) -> heap+8*(rank%2)", &cases,
                    &passed, &salt);
        if (coll != A2A)
            direct_case(coll, DUET_INT32, DUET_SUM, 0, count, 1, heap_buf[0] + 1024 * (size_t)me, NULL, allowed,
                        "heap+1024*rank", &cases, &passed, &salt);
        /* nothing in the heap on any rank: the executor */
        direct_case(coll, DUET_FLOAT32, DUET_MAX, last, count, 0, cu_buf[0], cu_buf[1], 0, "cudaMalloc -> cudaMalloc",
                    &cases, &passed, &salt);
        if (coll != A2A)
            direct_case(coll, DUET_INT32, DUET_SUM, 0, count, 1, cu_buf[0], NULL, 0, "cudaMalloc", &cases, &passed,
                        &salt);
        if (coll == AR) direct_back_to_back((3u << 20) / 4 + 11, &cases, &passed);
    }
    if (me == 0) printf("test_gpu_colls: direct kernels: %ld of %ld cases passed\n", passed, cases);
}

/* ------------------------------------------------------------------------------------
 * Errors: one buffer on the host, the other on the GPU
 * ------------------------------------------------------------------------------------ */
static void test_mixed_buffers(void)
{
    enum { N = 4 };
    float *host = malloc(sizeof(float) * N * (size_t)npes);
    CHECK(host != NULL, "host memory");
    for (int i = 0; i < N * npes; i++) host[i] = (float)i;
    char *dev[2] = {heap_buf[0], cu_buf[0]};
    for (int d = 0; d < 2; d++) {
        void *g = dev[d];
        const char *where = d ? "cudaMalloc" : "heap";
        EXPECT_INVALID(duet_allreduce(host, g, N, DUET_FLOAT32, DUET_SUM, W, s1), where);
        EXPECT_INVALID(duet_allreduce(g, host, N, DUET_FLOAT32, DUET_SUM, W, s1), where);
        EXPECT_INVALID(duet_allgather(host, g, N, DUET_FLOAT32, W, s1), where);
        EXPECT_INVALID(duet_allgather(g, host, N, DUET_FLOAT32, W, s1), where);
        EXPECT_INVALID(duet_reduce_scatter(host, g, N, DUET_FLOAT32, DUET_SUM, W, s1), where);
        EXPECT_INVALID(duet_reduce_scatter(g, host, N, DUET_FLOAT32, DUET_SUM, W, s1), where);
        EXPECT_INVALID(duet_alltoall(host, g, N, DUET_FLOAT32, W, s1), where);
        EXPECT_INVALID(duet_alltoall(g, host, N, DUET_FLOAT32, W, s1), where);
    }
    CUDA_OK(cudaStreamSynchronize(s1));
    free(host);
}

/* ------------------------------------------------------------------------------------ */
static int parse_selection(const char *arg, int *colls)
{
    int n = 0;
    for (int k = 0; k < NCOLL; k++) {
        if (k == SR && npes < 2) continue; /* no peer to exchange with */
        if (!arg || !strcmp(arg, "all") || !strcmp(arg, coll_names[k]) ||
            (k == RS && !strcmp(arg, "reduce_scatter")))
            colls[n++] = k;
    }
    return n;
}

static void setup(void)
{
    CHECK(duet_cuda_available() && duet_cuda_device(W) >= 0, "no GPU heap: this test needs a GPU on every rank");
    for (int k = 0; k < 2; k++) {
        heap_buf[k] = duet_malloc_device(W, BUFB);
        CHECK(heap_buf[k] != NULL, "duet_malloc_device(%d)", BUFB);
        CUDA_OK(cudaMalloc((void **)&cu_buf[k], BUFB));
        CUDA_OK(cudaMallocHost((void **)&h_img[k], BUFB));
        CUDA_OK(cudaMallocHost((void **)&h_out[k], BUFB));
    }
    CUDA_OK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
}

static void teardown(void)
{
    CUDA_OK(cudaStreamDestroy(s1));
    for (int k = 0; k < 2; k++) {
        CHECK_OK(duet_free(W, heap_buf[k]));
        CUDA_OK(cudaFree(cu_buf[k]));
        CUDA_OK(cudaFreeHost(h_img[k]));
        CUDA_OK(cudaFreeHost(h_out[k]));
    }
}

int main(int argc, char **argv)
{
    setenv("DUET_CUDA_HEAP_SIZE", "256M", 0);
    CHECK_OK(duet_init());
    W = dt_world(&me, &npes);
    const char *arg = argc > 1 ? argv[1] : "all";
    int colls[NCOLL], ncolls = parse_selection(arg, colls);
    if (ncolls == 0 && strcmp(arg, "sendrecv") != 0) {
        if (me == 0)
            fprintf(stderr, "usage: test_gpu_colls [allreduce|broadcast|reduce|allgather|reducescatter|alltoall|"
                            "sendrecv|all]\n");
        CHECK_OK(duet_finalize());
        return 2;
    }
    uint64_t seed = dt_pick_seed(getenv("DUET_TEST_SEED"), (uint64_t)time(NULL));
    uint64_t *slot = duet_malloc(W, sizeof(uint64_t));
    CHECK(slot != NULL, "host slot");
    CHECK_OK(dt_share_seed(W, slot, &seed));
    const char *algo = getenv("DUET_ALGO");
    parse_algo(algo);
    if (me == 0)
        printf("test_gpu_colls: %d ranks, %s, DUET_ALGO=%s, seed %llu\n", npes, arg, algo ? algo : "",
               (unsigned long long)seed);
    setup();
    uint64_t salt = 1;
    for (int i = 0; i < ncolls; i++) {
        long cases = 0, passed = 0;
        run_matrix(colls[i], &cases, &passed, &salt);
        if (me == 0) printf("test_gpu_colls: %s: %ld of %ld cases passed\n", coll_names[colls[i]], passed, cases);
    }
    if (ncolls) run_back_to_back(colls, ncolls);
    test_direct(colls, ncolls);
    test_mixed_buffers();
    teardown();
    CHECK_OK(duet_free(W, slot));
    CHECK_OK(duet_finalize());
    int rc = dt_finish();
    if (me == 0 && rc == 0) printf("test_gpu_colls: passed\n");
    return rc;
}
