/*
 * duet-perf's collective modes, with nccl-tests' conventions.
 *
 * Size. -b/-e/-f give the size S in bytes of the largest buffer of one rank, as nccl-tests:
 * count = S / sizeof(dtype) elements, and
 *
 *   mode           call count    send bytes / rank    recv bytes / rank   busbw = algbw x
 *   allreduce      count         S                    S                   2(n-1)/n
 *   broadcast      count         S (root)             S                   1
 *   reduce         count         S                    S (root)            1
 *   allgather      count/n       S/n                  S                   (n-1)/n
 *   reducescatter  count/n       S                    S/n                 (n-1)/n
 *   alltoall       count/n       S                    S                   (n-1)/n
 *   sendrecv       count         S                    S                   1
 *
 * (count/n rounds down, as in nccl-tests, so the bytes column, max(send, recv) actually
 * moved, can be below S; a size under n elements runs with count 0). algbw = bytes / time.
 * sendrecv is a ring exchange in a group: each rank sends to rank+1 and receives from
 * rank-1.
 *
 * Check (-c 1). Every rank can compute any rank's input, so every rank computes the
 * expected content of its own receive buffer, poisons the buffer with the complement of it
 * (a byte that is not written cannot be right), runs the collective once more, and counts
 * the elements that differ (reduce: a rank other than the root checks that its receive
 * buffer was left alone). Reductions use small integers (and +-0.5, +-2 for prod on
 * floats) so that every sum, product, min and max is exact in every type whatever the
 * order of the algorithm; avg on floats is compared within 2 ulp of the type (the library
 * divides in fp32 for fp16/bf16: double rounding). Integer sums and products wrap as the
 * library documents. The other collectives move hashed bytes and compare bit for bit.
 *
 * Algorithm column. -a NAME sets DUET_ALGO=<collective>:NAME before duet_init (the library
 * reads its settings once per process, so one run measures one forced algorithm; see
 * tools/duet-perf-algos.sh for all of them). A size the forced algorithm cannot run is
 * skipped on every rank alike (its builders say so). Without -a the column says
 * "auto:NAME", NAME being what the tuner picks for the call: see tuner_choice().
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "coll/duet_coll_predict.h"
#include "perf.h"

typedef enum { SHAPE_SAME, SHAPE_GATHER, SHAPE_SCATTER, SHAPE_A2A } shape_t;

/* What the driver does not know about a collective: one row per entry of perf_coll_modes. */
typedef struct {
    int kind; /* duet_coll_kind_t; -1: sendrecv (point to point, no algorithms) */
    int reduces, rooted;
    shape_t shape;
    int bus; /* busbw factor: 0: 1, 1: (n-1)/n, 2: 2(n-1)/n */
} coll_info_t;

static const coll_info_t infos[] = {
    {DUET_COLL_ALLREDUCE, 1, 0, SHAPE_SAME, 2},   {DUET_COLL_BROADCAST, 0, 1, SHAPE_SAME, 0},
    {DUET_COLL_REDUCE, 1, 1, SHAPE_SAME, 0},      {DUET_COLL_ALLGATHER, 0, 0, SHAPE_GATHER, 1},
    {DUET_COLL_REDUCE_SCATTER, 1, 0, SHAPE_SCATTER, 1}, {DUET_COLL_ALLTOALL, 0, 0, SHAPE_A2A, 1},
    {-1, 0, 0, SHAPE_SAME, 0},
};

static const coll_info_t *info_of(const perf_mode_t *m)
{
    return &infos[m - perf_coll_modes];
}

/* ------------------------------------------------------------------------ data
 * Element i of rank r's send buffer derives from gen(salt, r, i); the salt changes with
 * the size, datatype and op, so a stale result of an earlier row never passes. */
static uint64_t salt;

static inline uint64_t mix64(uint64_t x)
{
    x ^= x >> 30, x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27, x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static inline uint64_t gen(int rank, size_t i)
{
    return mix64(salt + (uint64_t)rank * 0x9e3779b97f4a7c15ull + (uint64_t)i * 0xd1b54a32d192ed03ull);
}

/* Bytes [off, off + len) of rank r's send buffer of a data-moving collective. */
static void pattern_bytes(uint8_t *dst, int rank, size_t off, size_t len)
{
    uint64_t w = 0;
    for (size_t j = off; j < off + len; j++) {
        if (j == off || (j & 7) == 0) w = gen(rank, j >> 3);
        dst[j - off] = (uint8_t)(w >> ((j & 7) * 8));
    }
}

typedef enum { CLS_SINT, CLS_UINT, CLS_FLOAT } cls_t;

static cls_t dt_class(duet_datatype_t dt)
{
    switch (dt) {
    case DUET_INT8: case DUET_INT32: case DUET_INT64: return CLS_SINT;
    case DUET_UINT8: case DUET_UINT32: case DUET_UINT64: return CLS_UINT;
    default: return CLS_FLOAT;
    }
}

/* The tool's own fp16 / bf16 conversions (not the library's: the reference stays
 * independent of the code it checks). Round to nearest even. */
static uint16_t enc_half(double v)
{
    uint16_t s = signbit(v) ? 0x8000 : 0;
    double a = fabs(v);
    if (a == 0) return s;
    if (isnan(v)) return 0x7e00;
    if (a >= 65520.0) return s | 0x7c00;
    int e;
    double m = frexp(a, &e); /* a = m 2^e, m in [0.5, 1) */
    int biased = e + 14;
    if (biased <= 0) return s | (uint16_t)lrint(a * 16777216.0); /* subnormal: units of 2^-24 */
    long f = lrint((2 * m - 1) * 1024);
    if (f == 1024) f = 0, biased++;
    if (biased >= 31) return s | 0x7c00;
    return s | (uint16_t)(biased << 10) | (uint16_t)f;
}

static double dec_half(uint16_t h)
{
    int e = (h >> 10) & 31, f = h & 1023;
    double v = e == 0 ? ldexp(f, -24) : e == 31 ? (f ? NAN : INFINITY) : ldexp(1024 + f, e - 25);
    return h & 0x8000 ? -v : v;
}

static uint16_t enc_bf16(double v)
{
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    if (isnan(f)) return 0x7fc0;
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static double dec_bf16(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void st_flt(duet_datatype_t dt, void *buf, size_t i, double v)
{
    switch (dt) {
    case DUET_FLOAT16: ((uint16_t *)buf)[i] = enc_half(v); break;
    case DUET_BFLOAT16: ((uint16_t *)buf)[i] = enc_bf16(v); break;
    case DUET_FLOAT32: ((float *)buf)[i] = (float)v; break;
    default: ((double *)buf)[i] = v; break;
    }
}

static double ld_flt(duet_datatype_t dt, const void *buf, size_t i)
{
    switch (dt) {
    case DUET_FLOAT16: return dec_half(((const uint16_t *)buf)[i]);
    case DUET_BFLOAT16: return dec_bf16(((const uint16_t *)buf)[i]);
    case DUET_FLOAT32: return ((const float *)buf)[i];
    default: return ((const double *)buf)[i];
    }
}

/* Integers: stored with C's conversion to the type (modulo 2^bits). */
static void st_int(duet_datatype_t dt, void *buf, size_t i, uint64_t v)
{
    switch (dt) {
    case DUET_INT8: case DUET_UINT8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    case DUET_INT32: case DUET_UINT32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
    default: ((uint64_t *)buf)[i] = v; break;
    }
}

/* The value of v wrapped to the type, as a signed 64-bit number (uint64: its bits). */
static int64_t wrap_int(duet_datatype_t dt, uint64_t v)
{
    switch (dt) {
    case DUET_INT8: return (int8_t)v;
    case DUET_UINT8: return (uint8_t)v;
    case DUET_INT32: return (int32_t)v;
    case DUET_UINT32: return (uint32_t)v;
    default: return (int64_t)v;
    }
}

/* Reduction inputs: element i of rank r. */
static inline int64_t in_int(const perf_t *p, cls_t cls, int rank, size_t i)
{
    static const int64_t sprod[4] = {-1, 1, 2, 3};
    uint64_t h = gen(rank, i);
    if (p->op == DUET_PROD) return cls == CLS_SINT ? sprod[h & 3] : (int64_t)(h % 3) + 1;
    return cls == CLS_SINT ? (int64_t)(h % 9) - 4 : (int64_t)(h % 9);
}

static inline double in_flt(const perf_t *p, int rank, size_t i)
{
    static const double prod[6] = {-2, -1, -0.5, 0.5, 1, 2};
    uint64_t h = gen(rank, i);
    return p->op == DUET_PROD ? prod[h % 6] : (double)(int)(h % 9) - 4;
}

/* The expected result of element i of a reduction. */
static uint64_t ref_int(const perf_t *p, cls_t cls, size_t i)
{
    uint64_t acc = (uint64_t)in_int(p, cls, 0, i);
    for (int r = 1; r < p->nranks; r++) {
        int64_t x = in_int(p, cls, r, i), a = (int64_t)acc;
        switch (p->op) {
        case DUET_PROD: acc *= (uint64_t)x; break;
        case DUET_MIN: acc = (uint64_t)(x < a ? x : a); break;
        case DUET_MAX: acc = (uint64_t)(x > a ? x : a); break;
        default: acc += (uint64_t)x; break; /* sum, avg */
        }
    }
    if (p->op != DUET_AVG) return acc;
    int64_t w = wrap_int(p->dtype, acc); /* the library sums in the type, then divides */
    return cls == CLS_SINT ? (uint64_t)(w / p->nranks) : (uint64_t)w / (uint64_t)p->nranks;
}

static double ref_flt(const perf_t *p, size_t i)
{
    double acc = in_flt(p, 0, i);
    for (int r = 1; r < p->nranks; r++) {
        double x = in_flt(p, r, i);
        switch (p->op) {
        case DUET_PROD: acc *= x; break;
        case DUET_MIN: acc = x < acc ? x : acc; break;
        case DUET_MAX: acc = x > acc ? x : acc; break;
        default: acc += x; break;
        }
    }
    return p->op == DUET_AVG ? acc / p->nranks : acc;
}

/* Expected reduction results for elements [g0, g0 + len), into buf as the datatype. */
static void ref_reduction(const perf_t *p, void *buf, size_t g0, size_t len)
{
    cls_t cls = dt_class(p->dtype);
    for (size_t j = 0; j < len; j++) {
        if (cls == CLS_FLOAT) st_flt(p->dtype, buf, j, ref_flt(p, g0 + j));
        else st_int(p->dtype, buf, j, ref_int(p, cls, g0 + j));
    }
}

/* Relative tolerance of avg on floats: 2 ulp of the type. */
static double avg_tolerance(duet_datatype_t dt)
{
    switch (dt) {
    case DUET_FLOAT16: return ldexp(1, -9);
    case DUET_BFLOAT16: return ldexp(1, -6);
    case DUET_FLOAT32: return ldexp(1, -22);
    default: return ldexp(1, -51);
    }
}

/* Elements of got that differ from want (len elements of es bytes). */
static uint64_t compare(const perf_t *p, const uint8_t *got, const uint8_t *want, size_t len, size_t es,
                        int reduced)
{
    uint64_t bad = 0;
    if (!reduced || dt_class(p->dtype) != CLS_FLOAT) {
        for (size_t j = 0; j < len; j++) bad += memcmp(got + j * es, want + j * es, es) != 0;
        return bad;
    }
    double tol = p->op == DUET_AVG ? avg_tolerance(p->dtype) : 0;
    for (size_t j = 0; j < len; j++) {
        double g = ld_flt(p->dtype, got, j), w = ld_flt(p->dtype, want, j);
        bad += !(g == w || fabs(g - w) <= tol * fabs(w)); /* a NaN is wrong */
    }
    return bad;
}

/* ------------------------------------------------------------------------ the algorithm */
static const duet_coll_algo_t *find_algo(int kind, const char *name)
{
    for (int i = 0; i < duet_coll_nalgos; i++)
        if ((int)duet_coll_algos[i].kind == kind && strcmp(duet_coll_algos[i].name, name) == 0)
            return &duet_coll_algos[i];
    return NULL;
}

static const perf_mode_t *find_coll_mode(const char *name);

int perf_coll_kind(const perf_mode_t *m) { return info_of(m)->kind; }

const perf_mode_t *perf_coll_find_mode(const char *name) { return find_coll_mode(name); }

static const perf_mode_t *find_coll_mode(const char *name)
{
    for (size_t i = 0; i < perf_coll_nmodes; i++)
        if (strcmp(perf_coll_modes[i].name, name) == 0) return &perf_coll_modes[i];
    return NULL;
}

int perf_coll_list_algos(FILE *f, const char *coll)
{
    const perf_mode_t *m = find_coll_mode(coll);
    if (!m) return -1;
    for (int i = 0; i < duet_coll_nalgos; i++)
        if ((int)duet_coll_algos[i].kind == info_of(m)->kind) fprintf(f, "%s\n", duet_coll_algos[i].name);
    return 0;
}

void perf_coll_force_algo(const perf_t *p)
{
    if (!p->algo) return;
    if (!p->mode->coll && p->device && find_coll_mode(p->mode->name) && !strchr(p->algo, ',') &&
        strcmp(p->algo, "all") != 0) {
        /* a collective on GPU buffers (--device allreduce, broadcast, ...): the GPU has its own
         * set of algorithms (allreduce: oneshot, twoshot too); the library refuses a name it
         * cannot run at the first call */
        char spec[256];
        snprintf(spec, sizeof spec, "%s:%s", p->mode->name, p->algo);
        if (setenv("DUET_ALGO", spec, 1) != 0) perf_die("setenv(DUET_ALGO) failed");
        return;
    }
    if (!p->mode->coll) perf_die("-a applies to the collective modes, not to %s", p->mode->name);
    int kind = info_of(p->mode)->kind;
    if (kind < 0) perf_die("-a: %s is point to point and has no algorithms to choose", p->mode->name);
    if (strcmp(p->algo, "all") == 0 || strchr(p->algo, ','))
        perf_die("-a %s: the library reads DUET_ALGO once per process, so each algorithm needs a run "
                 "of its own; tools/duet-perf-algos.sh %s -a %s [flags] runs them one after the "
                 "other and joins their CSV", p->algo, p->mode->name, p->algo);
    if (!find_algo(kind, p->algo)) {
        char names[256] = "";
        for (int i = 0; i < duet_coll_nalgos; i++)
            if ((int)duet_coll_algos[i].kind == kind)
                snprintf(names + strlen(names), sizeof names - strlen(names), " %s", duet_coll_algos[i].name);
        perf_die("-a %s: %s has no such algorithm; it has:%s", p->algo, p->mode->name, names);
    }
    /* ours first: the tuner takes the first entry naming the collective */
    const char *old = getenv("DUET_ALGO");
    char spec[512];
    snprintf(spec, sizeof spec, "%s:%s%s%s", p->mode->name, p->algo, old && old[0] ? "," : "", old ? old : "");
    if (setenv("DUET_ALGO", spec, 1) != 0) perf_die("setenv(DUET_ALGO) failed");
}

/* The tuner's view of rank `rank`'s call of the current row (as duet_coll_api.c's
 * op_prepare builds it). */
duet_coll_args_t perf_coll_args(const perf_t *p, int rank)
{
    const coll_info_t *ci = info_of(p->mode);
    size_t es = duet_datatype_size(p->dtype);
    if (ci->reduces && (p->dtype == DUET_FLOAT16 || p->dtype == DUET_BFLOAT16)) es = sizeof(float);
    duet_coll_args_t a = {(duet_coll_kind_t)ci->kind, rank, p->nranks, ci->rooted ? p->root : 0,
                          p->count, es, p->comm->chan->chunk, 0, 0, NULL, 0, p->bufs_in_heap};
    return a;
}

/* 0 when the forced algorithm builds a schedule for every rank of this call (the builders
 * are pure functions of the call), else 1 with the builder's reason. */
static int forced_cannot_run(const perf_t *p, const char **why)
{
    static char reason[300];
    const duet_coll_algo_t *al = find_algo(info_of(p->mode)->kind, p->algo);
    for (int r = 0; r < p->nranks; r++) {
        duet_coll_args_t a = perf_coll_args(p, r);
        duet_sched_t s;
        duet_sched_init(&s, r, p->nranks, a.elem);
        duet_status_t st = al->build(&a, &s);
        duet_sched_free(&s);
        if (st) {
            snprintf(reason, sizeof reason, "%s cannot run it: %s", p->algo, duet_last_error());
            *why = reason;
            return 1;
        }
    }
    return 0;
}

/* The algorithm the tuner picks for this row's call, asked without changing the library
 * (duet_coll_tune_costs remembers and logs nothing): the forced one, else the cheapest. It
 * needs the alpha-beta model, which the first collective on the communicator loads
 * (collectively): until then, or if the tuner fails, the answer is "?". */
static const char *tuner_choice(const perf_t *p)
{
    if (!p->comm->model_ready) return "?";
    const coll_info_t *ci = info_of(p->mode);
    static char forced[64];
    duet_coll_forced_algo(p->comm, (duet_coll_kind_t)ci->kind, forced, sizeof forced);
    if (forced[0]) return forced;
    duet_coll_args_t a = perf_coll_args(p, p->me);
    duet_coll_model_t model;
    duet_predict_t pred;
    if (duet_coll_tune_costs(p->comm, &a, &model, &pred) != DUET_OK || pred.best < 0) return "?";
    return pred.e[pred.best].algo->name;
}

/* ------------------------------------------------------------------------ the mode */
/* The send and receive buffers come from the symmetric heap, as a Duet program would
 * allocate them (collectives then move data with one copy: duet_coll_chan.h), unless
 * --buffers host or the heap is too small; the reference buffer is private memory. */
void perf_coll_alloc(perf_t *p)
{
    size_t n = p->maxb > 64 ? p->maxb : 64, heap = duet_cfg()->symmetric_size;
    p->bufs_in_heap = !p->host_buffers && n <= heap / 2 - (1u << 20); /* the same on every rank */
    void **bufs[3] = {&p->sendbuf, &p->recvbuf, &p->refbuf};
    for (int i = 0; i < 3; i++) {
        if (p->bufs_in_heap && i < 2) {
            if (!(*bufs[i] = duet_calloc(p->comm, 1, n)))
                perf_die("duet_calloc of %zu bytes: %s", n, duet_last_error());
            continue;
        }
        if (posix_memalign(bufs[i], 4096, n) != 0) perf_die("out of memory for 3 x %zu bytes of buffers", n);
        memset(*bufs[i], 0, n); /* first touch now, not in a timed loop */
    }
}

void perf_coll_free(perf_t *p)
{
    if (p->bufs_in_heap) {
        duet_free(p->comm, p->recvbuf);
        duet_free(p->comm, p->sendbuf);
    } else {
        free(p->sendbuf);
        free(p->recvbuf);
    }
    free(p->refbuf);
    p->sendbuf = p->recvbuf = p->refbuf = NULL;
    if (p->stamps) duet_free(p->comm, p->stamps); /* --timing call's */
    p->stamps = NULL, p->stamps_cap = 0;
}

static int coll_setup(perf_t *p, size_t bytes, const char **why)
{
    const coll_info_t *ci = info_of(p->mode);
    size_t es = duet_datatype_size(p->dtype), total = bytes / es, n = (size_t)p->nranks;
    size_t send = total, recv = total;
    p->count = total;
    switch (ci->shape) {
    case SHAPE_SAME: break;
    case SHAPE_GATHER: p->count = total / n, send = p->count, recv = p->count * n; break;
    case SHAPE_SCATTER: p->count = total / n, send = p->count * n, recv = p->count; break;
    case SHAPE_A2A: p->count = total / n, send = recv = p->count * n; break;
    }
    p->send_bytes = send * es, p->recv_bytes = recv * es;
    p->row_bytes = (send > recv ? send : recv) * es;
    double f = (double)(p->nranks - 1) / p->nranks;
    p->busbw_factor = ci->bus == 2 ? 2 * f : ci->bus == 1 ? f : 1;
    salt = mix64(bytes * 0x2545f4914f6cdd1dull ^ ((uint64_t)p->dtype << 40) ^ ((uint64_t)p->op << 48));

    if (p->algo && forced_cannot_run(p, why)) return 1;
    snprintf(p->row_algo, sizeof p->row_algo, "%s", ci->kind < 0 ? "p2p" : p->algo ? p->algo : "auto");

    if (ci->reduces) {
        cls_t cls = dt_class(p->dtype);
        for (size_t i = 0; i < send; i++) {
            if (cls == CLS_FLOAT) st_flt(p->dtype, p->sendbuf, i, in_flt(p, p->me, i));
            else st_int(p->dtype, p->sendbuf, i, (uint64_t)in_int(p, cls, p->me, i));
        }
    } else {
        pattern_bytes(p->sendbuf, p->me, 0, p->send_bytes);
    }
    memset(p->recvbuf, 0xa5, p->recv_bytes);
    return 0;
}

static void coll_run(perf_t *p, long iters)
{
    const coll_info_t *ci = info_of(p->mode);
    const void *s = p->sendbuf;
    void *r = p->recvbuf;
    size_t c = p->count;
    duet_datatype_t dt = p->dtype;
    duet_comm_t comm = p->comm;
    int right = (p->me + 1) % p->nranks, left = (p->me + p->nranks - 1) % p->nranks;
    for (long i = 0; i < iters; i++) {
        if (p->stamping) { /* --timing call: each call alone, its start and end kept */
            PERF_CHECK(duet_barrier(comm));
            p->stamps[2 * i] = duet_time_ns();
        }
        switch (ci->kind) {
        case DUET_COLL_ALLREDUCE: PERF_CHECK(duet_allreduce(s, r, c, dt, p->op, comm, NULL)); break;
        case DUET_COLL_BROADCAST: PERF_CHECK(duet_broadcast(s, r, c, dt, p->root, comm, NULL)); break;
        case DUET_COLL_REDUCE: PERF_CHECK(duet_reduce(s, r, c, dt, p->op, p->root, comm, NULL)); break;
        case DUET_COLL_ALLGATHER: PERF_CHECK(duet_allgather(s, r, c, dt, comm, NULL)); break;
        case DUET_COLL_REDUCE_SCATTER: PERF_CHECK(duet_reduce_scatter(s, r, c, dt, p->op, comm, NULL)); break;
        case DUET_COLL_ALLTOALL: PERF_CHECK(duet_alltoall(s, r, c, dt, comm, NULL)); break;
        default:
            PERF_CHECK(duet_group_start());
            PERF_CHECK(duet_send(s, c, dt, right, comm, NULL));
            PERF_CHECK(duet_recv(r, c, dt, left, comm, NULL));
            PERF_CHECK(duet_group_end());
            break;
        }
        if (p->stamping) p->stamps[2 * i + 1] = duet_time_ns();
    }
}

static void coll_body(perf_t *p, size_t bytes, long n) { coll_run(p, n); }

/* After the timed loop, on rank 0: name the tuner's choice. */
static void coll_after(perf_t *p, size_t bytes)
{
    if (info_of(p->mode)->kind >= 0 && !p->algo && p->me == 0)
        snprintf(p->row_algo, sizeof p->row_algo, "auto:%s", tuner_choice(p));
}

static uint64_t coll_verify(perf_t *p, size_t bytes)
{
    const coll_info_t *ci = info_of(p->mode);
    size_t es = duet_datatype_size(p->dtype), c = p->count, blk = c * es;
    uint8_t *want = p->refbuf;
    int untouched = 0; /* reduce, not the root: recvbuf must stay as it was */
    switch (ci->kind) {
    case DUET_COLL_ALLREDUCE: ref_reduction(p, want, 0, c); break;
    case DUET_COLL_REDUCE:
        if (p->me == p->root) ref_reduction(p, want, 0, c);
        else untouched = 1, memset(want, 0x5a, p->recv_bytes);
        break;
    case DUET_COLL_REDUCE_SCATTER: ref_reduction(p, want, (size_t)p->me * c, c); break;
    case DUET_COLL_BROADCAST: pattern_bytes(want, p->root, 0, blk); break;
    case DUET_COLL_ALLGATHER:
        for (int r = 0; r < p->nranks; r++) pattern_bytes(want + (size_t)r * blk, r, 0, blk);
        break;
    case DUET_COLL_ALLTOALL:
        for (int r = 0; r < p->nranks; r++) pattern_bytes(want + (size_t)r * blk, r, (size_t)p->me * blk, blk);
        break;
    default: pattern_bytes(want, (p->me + p->nranks - 1) % p->nranks, 0, blk); break;
    }
    for (size_t j = 0; j < p->recv_bytes; j++) ((uint8_t *)p->recvbuf)[j] = (uint8_t)(untouched ? want[j] : ~want[j]);
    PERF_CHECK(duet_barrier_all());
    coll_run(p, 1);
    return compare(p, p->recvbuf, want, p->recv_bytes / es, es, ci->reduces && !untouched);
}

/* In the order of infos[] above. */
const perf_mode_t perf_coll_modes[] = {
#define COLL_MODE(mode, text, reduction)                                                       \
    {.name = mode, .sized = 1, .default_iters = 1000, .coll = 1, .setup = coll_setup,          \
     .body = coll_body, .verify = coll_verify, .help = text, .after = coll_after,             \
     .redop_from_flags = reduction}
    COLL_MODE("allreduce", "duet_allreduce: every rank gets the reduction of all", 1),
    COLL_MODE("broadcast", "duet_broadcast from -r ROOT", 0),
    COLL_MODE("reduce", "duet_reduce to -r ROOT", 1),
    COLL_MODE("allgather", "duet_allgather (bytes: the receive buffer, n blocks)", 0),
    COLL_MODE("reducescatter", "duet_reduce_scatter (bytes: the send buffer, n blocks)", 1),
    COLL_MODE("alltoall", "duet_alltoall (bytes: each buffer, n blocks)", 0),
    COLL_MODE("sendrecv", "ring exchange: send to rank+1, recv from rank-1, in a group", 0),
#undef COLL_MODE
};
const size_t perf_coll_nmodes = DUET_ARRAY_LEN(perf_coll_modes);
_Static_assert(DUET_ARRAY_LEN(perf_coll_modes) == DUET_ARRAY_LEN(infos), "one info row per mode");
