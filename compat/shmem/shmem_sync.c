/*
 * shmem_sync.c — point-to-point synchronization (wait_until, test, their _all / _any /
 * _some and _vector forms, for every point-to-point type), shmem_signal_wait_until, the
 * deprecated shmem_*_wait, fence / quiet, and the poll loop of waits Duet's core cannot do.
 *
 * ivars in the symmetric heap: Duet's duet_wait_until_* / duet_test_* (its wait loop sleeps
 * on the doorbell a put rings). ivars in static data: one scanner per type here, polled by
 * shm_poll_turn, a turn of Duet's own wait loop (duet_ext_waiter_t: spin, yield, then sleeps
 * on the doorbell; the world's revoke or a dead peer ends the wait, so does DUET_WAIT_TIMEOUT,
 * and a long wait shows in the hang report), and a peer's shmem_global_exit, looked at every
 * 64 turns. Every way a wait fails, heap or static, prints the call, the address and what it
 * waited for (shm_poll_describe).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "shmem_internal.h"

/* ---- the bound: Duet's own (DUET_WAIT_TIMEOUT, duet_wait_timeout(); 0 = wait forever) */
double shm_wait_timeout(void) { return duet_wait_timeout(); }

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static const char *cmp_text(int cmp)
{
    static const char *const t[] = {"==", "!=", ">", ">=", "<", "<="};
    return cmp >= SHMEM_CMP_EQ && cmp <= SHMEM_CMP_LE ? t[cmp] : "?";
}

void shm_poll_describe(const shm_poll_t *p, char *buf, size_t len)
{
    int range;
    size_t off;
    const char *where = shm_static_lookup(p->addr, 1, &range, &off) ? "static data" : "symmetric heap";
    char val[32];
    if (p->is_signed) snprintf(val, sizeof val, "%lld", (long long)p->value);
    else snprintf(val, sizeof val, "%llu", p->value);
    switch (p->kind) {
    case SHM_WAIT_LOCK:
        snprintf(buf, len, "the lock at %p (%s, PE 0's copy) to serve ticket %llu", p->addr, where, p->value);
        return;
    case SHM_WAIT_SIGNAL:
        snprintf(buf, len, "the signal at %p (%s) to become %s %s", p->addr, where, cmp_text(p->cmp), val);
        return;
    default: break;
    }
    if (p->n == 1 && !p->vector) {
        snprintf(buf, len, "the %s at %p (%s) to become %s %s", p->tname, p->addr, where, cmp_text(p->cmp), val);
        return;
    }
    static const char *const mode[] = {"all", "any", "some"};
    if (p->vector)
        snprintf(buf, len, "%s of %zu %s ivars at %p (%s) to compare %s their cmp_values", mode[p->mode], p->n,
                 p->tname, p->addr, where, cmp_text(p->cmp));
    else
        snprintf(buf, len, "%s of %zu %s ivars at %p (%s) to become %s %s", mode[p->mode], p->n, p->tname, p->addr,
                 where, cmp_text(p->cmp), val);
}

void shm_wait_fail(const shm_poll_t *p, duet_status_t st)
{
    char what[256], dead[128] = "", why[512];
    shm_exit_if_asked();
    snprintf(why, sizeof why, "%s", duet_last_error()); /* before other calls replace it */
    shm_poll_describe(p, what, sizeof what);
    int failed[8], nfailed = 0;
    if (st == DUET_ERR_PEER_FAILED && duet_comm_get_failed(shm_g.world, failed, 8, &nfailed) == DUET_OK &&
        nfailed > 0) { /* "PE 3 died: " / "PEs 2, 5 died: " */
        size_t at = (size_t)snprintf(dead, sizeof dead, "PE%s", nfailed > 1 ? "s" : "");
        for (int i = 0; i < nfailed && i < 8 && at < sizeof dead; i++)
            at += (size_t)snprintf(dead + at, sizeof dead - at, "%s %d", i ? "," : "", failed[i]);
        if (at < sizeof dead) snprintf(dead + at, sizeof dead - at, "%s died: ", nfailed > 8 ? ", ..." : "");
    }
    shm_die(p->fn, "waiting for %s: %s%s (%s)", what, dead, why, duet_status_str(st));
}

static void describe_poll(void *arg, char *buf, size_t len) { shm_poll_describe(arg, buf, len); }

void shm_poll_turn(shm_poll_t *p)
{
    if (p->turns++ == 0) { /* the first turn: the wait begins */
        p->start_ns = now_ns();
        duet_ext_waiter_init(p->w, shm_g.world, describe_poll, p);
    }
    duet_status_t st = duet_ext_waiter_turn(p->w);
    if ((p->turns & 63) == 0) shm_exit_if_asked(); /* a peer's shmem_global_exit */
    if (st == DUET_ERR_TIMEOUT) {
        char what[256];
        shm_poll_describe(p, what, sizeof what);
        shm_die(p->fn, "timed out after %.1f s (DUET_WAIT_TIMEOUT=%g) waiting for %s",
                (double)(now_ns() - p->start_ns) * 1e-9, shm_wait_timeout(), what);
    }
    if (st != DUET_OK) shm_wait_fail(p, st);
}

static void check_cmp(int cmp, const char *fn)
{
    if (cmp < SHMEM_CMP_EQ || cmp > SHMEM_CMP_LE) shm_die(fn, "comparison %d is not a SHMEM_CMP_* value", cmp);
}

/* 1 when [ivars, +bytes) is static data (polled here), 0 when it is Duet's to wait on. */
static int is_static(const void *ivars, size_t bytes, const char *fn)
{
    int range;
    size_t off;
    shm_require_init(fn);
    return bytes && shm_static_find(ivars, bytes, fn, &range, &off);
}

/* the description of a wait on n ivars of type T (N its TYPENAME) */
#define SHM_POLL_OF_(T, N, fn_, iv, n_, cmp_, mode_, vec_, val_)                                   \
    (shm_poll_t){.fn = (fn_), .addr = (iv), .kind = SHM_WAIT_IVARS, .tname = #N, .n = (n_),        \
                 .cmp = (cmp_), .mode = (mode_), .vector = (vec_), .is_signed = (T)-1 < (T)1,       \
                 .value = (unsigned long long)(val_)}

/* One scan: how many included elements compare true (indices of those into `indices` when
 * given), the first of them, and how many are included. */
#define SHM_SCANNER_(T, N)                                                                         \
    static int cmp_##N(T a, int cmp, T b)                                                          \
    {                                                                                              \
        switch (cmp) {                                                                             \
        case SHMEM_CMP_EQ: return a == b;                                                          \
        case SHMEM_CMP_NE: return a != b;                                                          \
        case SHMEM_CMP_GT: return a > b;                                                           \
        case SHMEM_CMP_GE: return a >= b;                                                          \
        case SHMEM_CMP_LT: return a < b;                                                           \
        default: return a <= b;                                                                    \
        }                                                                                          \
    }                                                                                              \
    /* polls static ivars until the mode's condition holds (or once, if !wait): the number      \
     * satisfied; *first the first index satisfied (SIZE_MAX if none); *included how many */   \
    static size_t poll_##N(T *iv, size_t n, const int *status, int cmp, T value, const T *values,  \
                           size_t *indices, int mode, int wait, size_t *first, size_t *included,   \
                           const char *fn)                                                         \
    {                                                                                              \
        shm_poll_t p = SHM_POLL_OF_(T, N, fn, iv, n, cmp, mode, values != NULL, value);            \
        duet_ext_waiter_t w;                                                                       \
        p.w = &w;                                                                                  \
        for (;;) {                                                                                 \
            size_t sat = 0, inc = 0;                                                               \
            *first = SIZE_MAX;                                                                     \
            for (size_t i = 0; i < n; i++) {                                                       \
                if (status && status[i]) continue;                                                 \
                inc++;                                                                             \
                T v;                                                                               \
                __atomic_load(&iv[i], &v, __ATOMIC_ACQUIRE);                                       \
                if (!cmp_##N(v, cmp, values ? values[i] : value)) continue;                        \
                if (*first == SIZE_MAX) *first = i;                                                \
                if (indices && mode == MODE_SOME) indices[sat] = i;                                \
                sat++;                                                                             \
            }                                                                                      \
            *included = inc;                                                                       \
            int done = inc == 0 || (mode == MODE_ALL ? sat == inc : sat > 0);                     \
            if (done || !wait) return sat;                                                         \
            shm_poll_turn(&p);                                                                     \
        }                                                                                          \
    }                                                                                              \
    /* a heap wait Duet failed */                                                                  \
    static void heap_fail_##N(T *iv, size_t n, int cmp, int mode, const T *values, T value,         \
                              duet_status_t st, const char *fn)                                    \
    {                                                                                              \
        if (st == DUET_OK) return;                                                                 \
        shm_poll_t p = SHM_POLL_OF_(T, N, fn, iv, n, cmp, mode, values != NULL, value);            \
        shm_wait_fail(&p, st);                                                                     \
    }
#define MODE_ALL SHM_MODE_ALL
#define MODE_ANY SHM_MODE_ANY
#define MODE_SOME SHM_MODE_SOME
SHMEM_X_SYNC_TYPES(SHM_SCANNER_)

/* Each form: static -> poll_<N>, heap -> Duet. W is the world communicator. POLLED(iv, bytes,
 * fn) says whether to poll here; HEAP(call) is Duet's heap wait, or DUET_OK for the types
 * Duet's core has no waits for (short, unsigned short: always polled, see below). */
#define W shm_g.world
#define SHM_HEAP_(call) call
#define SHM_NO_HEAP_(call) DUET_OK
#define SHM_SYNC_(T, N) SHM_SYNC_WITH_(T, N, is_static, SHM_HEAP_)
#define SHM_SYNC_WITH_(T, N, POLLED, HEAP)                                                         \
    void shmem_##N##_wait_until(T *ivar, int cmp, T v)                                             \
    {                                                                                              \
        const char *fn = "shmem_" #N "_wait_until";                                                \
        size_t first, inc;                                                                         \
        check_cmp(cmp, fn);                                                                        \
        if (POLLED(ivar, sizeof(T), fn)) poll_##N(ivar, 1, NULL, cmp, v, NULL, NULL, MODE_ALL, 1, &first, &inc, fn); \
        else heap_fail_##N(ivar, 1, cmp, MODE_ALL, NULL, v, HEAP(duet_wait_until_##N(W, ivar, cmp, v)), fn);                                 \
    }                                                                                              \
    int shmem_##N##_test(T *ivar, int cmp, T v)                                                    \
    {                                                                                              \
        const char *fn = "shmem_" #N "_test";                                                      \
        size_t first, inc;                                                                         \
        int ok = 0;                                                                                \
        check_cmp(cmp, fn);                                                                        \
        if (POLLED(ivar, sizeof(T), fn))                                                           \
            return poll_##N(ivar, 1, NULL, cmp, v, NULL, NULL, MODE_ALL, 0, &first, &inc, fn) == 1; \
        shm_check(HEAP(duet_test_##N(W, ivar, cmp, v, &ok)), fn);                                  \
        return ok != 0;                                                                            \
    }                                                                                              \
    SHM_SYNC_MULTI_(T, N, POLLED, HEAP, , T v, v, NULL)                                            \
    SHM_SYNC_MULTI_(T, N, POLLED, HEAP, _vector, T *vs, 0, vs)

/* _all / _any / _some, waiting and testing; VPARAM is the value or the vector of values. */
#define SHM_SYNC_MULTI_(T, N, POLLED, HEAP, SFX, VPARAM, VAL, VALS)                                \
    void shmem_##N##_wait_until_all##SFX(T *iv, size_t n, const int *st, int cmp, VPARAM)          \
    {                                                                                              \
        const char *fn = "shmem_" #N "_wait_until_all" #SFX;                                       \
        size_t first, inc;                                                                         \
        check_cmp(cmp, fn);                                                                        \
        if (POLLED(iv, shm_bytes(n, sizeof(T), fn), fn))                                           \
            poll_##N(iv, n, st, cmp, VAL, VALS, NULL, MODE_ALL, 1, &first, &inc, fn);              \
        else if (n) heap_fail_##N(iv, n, cmp, MODE_ALL, VALS, VAL, HEAP(duet_wait_until_all##SFX##_##N(W, iv, n, st, cmp, VALS_OR_VAL_##SFX(VAL, VALS))), fn); \
    }                                                                                              \
    size_t shmem_##N##_wait_until_any##SFX(T *iv, size_t n, const int *st, int cmp, VPARAM)        \
    {                                                                                              \
        const char *fn = "shmem_" #N "_wait_until_any" #SFX;                                       \
        size_t first = SIZE_MAX, inc;                                                              \
        check_cmp(cmp, fn);                                                                        \
        if (POLLED(iv, shm_bytes(n, sizeof(T), fn), fn))                                           \
            poll_##N(iv, n, st, cmp, VAL, VALS, NULL, MODE_ANY, 1, &first, &inc, fn);              \
        else if (n) heap_fail_##N(iv, n, cmp, MODE_ANY, VALS, VAL, HEAP(duet_wait_until_any##SFX##_##N(W, iv, n, st, cmp, VALS_OR_VAL_##SFX(VAL, VALS), &first)), fn); \
        return first;                                                                              \
    }                                                                                              \
    size_t shmem_##N##_wait_until_some##SFX(T *iv, size_t n, size_t *idx, const int *st, int cmp, VPARAM) \
    {                                                                                              \
        const char *fn = "shmem_" #N "_wait_until_some" #SFX;                                      \
        size_t first, inc, count = 0;                                                              \
        check_cmp(cmp, fn);                                                                        \
        if (POLLED(iv, shm_bytes(n, sizeof(T), fn), fn))                                           \
            count = poll_##N(iv, n, st, cmp, VAL, VALS, idx, MODE_SOME, 1, &first, &inc, fn);      \
        else if (n) heap_fail_##N(iv, n, cmp, MODE_SOME, VALS, VAL, HEAP(duet_wait_until_some##SFX##_##N(W, iv, n, st, cmp, VALS_OR_VAL_##SFX(VAL, VALS), idx, &count)), fn); \
        return count;                                                                              \
    }                                                                                              \
    int shmem_##N##_test_all##SFX(T *iv, size_t n, const int *st, int cmp, VPARAM)                 \
    {                                                                                              \
        const char *fn = "shmem_" #N "_test_all" #SFX;                                             \
        size_t first, inc;                                                                         \
        int ok = 1;                                                                                \
        check_cmp(cmp, fn);                                                                        \
        if (POLLED(iv, shm_bytes(n, sizeof(T), fn), fn))                                           \
            return poll_##N(iv, n, st, cmp, VAL, VALS, NULL, MODE_ALL, 0, &first, &inc, fn) == inc; \
        if (n) shm_check(HEAP(duet_test_all##SFX##_##N(W, iv, n, st, cmp, VALS_OR_VAL_##SFX(VAL, VALS), &ok)), fn); \
        return ok != 0;                                                                            \
    }                                                                                              \
    size_t shmem_##N##_test_any##SFX(T *iv, size_t n, const int *st, int cmp, VPARAM)              \
    {                                                                                              \
        const char *fn = "shmem_" #N "_test_any" #SFX;                                             \
        size_t first = SIZE_MAX, inc;                                                              \
        check_cmp(cmp, fn);                                                                        \
        if (POLLED(iv, shm_bytes(n, sizeof(T), fn), fn))                                           \
            poll_##N(iv, n, st, cmp, VAL, VALS, NULL, MODE_ANY, 0, &first, &inc, fn);              \
        else if (n) shm_check(HEAP(duet_test_any##SFX##_##N(W, iv, n, st, cmp, VALS_OR_VAL_##SFX(VAL, VALS), &first)), fn); \
        return first;                                                                              \
    }                                                                                              \
    size_t shmem_##N##_test_some##SFX(T *iv, size_t n, size_t *idx, const int *st, int cmp, VPARAM) \
    {                                                                                              \
        const char *fn = "shmem_" #N "_test_some" #SFX;                                            \
        size_t first, inc, count = 0;                                                              \
        check_cmp(cmp, fn);                                                                        \
        if (POLLED(iv, shm_bytes(n, sizeof(T), fn), fn))                                           \
            count = poll_##N(iv, n, st, cmp, VAL, VALS, idx, MODE_SOME, 0, &first, &inc, fn);      \
        else if (n) shm_check(HEAP(duet_test_some##SFX##_##N(W, iv, n, st, cmp, VALS_OR_VAL_##SFX(VAL, VALS), idx, &count)), fn); \
        return count;                                                                              \
    }
#define VALS_OR_VAL_(VAL, VALS) VAL
#define VALS_OR_VAL__vector(VAL, VALS) VALS
SHMEM_X_SYNC_TYPES(SHM_SYNC_)

uint64_t shmem_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t cmp_value)
{
    const char *fn = "shmem_signal_wait_until";
    uint64_t v = 0;
    check_cmp(cmp, fn);
    duet_ext_waiter_t w;
    shm_poll_t p = {.fn = fn, .addr = sig_addr, .kind = SHM_WAIT_SIGNAL, .n = 1, .cmp = cmp, .value = cmp_value, .w = &w};
    if (!is_static(sig_addr, sizeof *sig_addr, fn)) {
        duet_status_t st = duet_signal_wait_until(W, sig_addr, cmp, cmp_value, &v);
        if (st != DUET_OK) shm_wait_fail(&p, st);
        return v;
    }
    while (!cmp_uint64(v = __atomic_load_n(sig_addr, __ATOMIC_ACQUIRE), cmp, cmp_value)) shm_poll_turn(&p);
    return v;
}

/* ---- deprecated: the short and unsigned short point-to-point forms. OpenSHMEM 1.5 keeps them
 * (wait_until, test, their _all / _any / _some and _vector forms, and the C11 generic names
 * over short and unsigned short) as deprecated; Duet's core has no 16-bit waits, so they are
 * polled here wherever the ivars lie (the caller's own memory: a plain load sees a peer's
 * put, heap or static), with the same bound and failure lines as the static-data waits. */
static int always_polled(const void *ivars, size_t bytes, const char *fn)
{
    (void)ivars;
    (void)bytes;
    shm_require_init(fn);
    return 1;
}
SHMEM_X_DEP_SYNC_TYPES(SHM_SCANNER_)
#define SHM_SYNC_POLLED_(T, N) SHM_SYNC_WITH_(T, N, always_polled, SHM_NO_HEAP_)
SHMEM_X_DEP_SYNC_TYPES(SHM_SYNC_POLLED_)

/* ---- deprecated: shmem_<T>_wait(ivar, value) waits while *ivar == value */
void shmem_short_wait(short *ivar, short v) { shmem_short_wait_until(ivar, SHMEM_CMP_NE, v); }
void shmem_int_wait(int *ivar, int v) { shmem_int_wait_until(ivar, SHMEM_CMP_NE, v); }
void shmem_long_wait(long *ivar, long v) { shmem_long_wait_until(ivar, SHMEM_CMP_NE, v); }
void shmem_longlong_wait(long long *ivar, long long v) { shmem_longlong_wait_until(ivar, SHMEM_CMP_NE, v); }
void shmem_wait(long *ivar, long v) { shmem_long_wait_until(ivar, SHMEM_CMP_NE, v); }

/* ---- ordering: static-data stores are plain stores, so a CPU fence orders and completes
 * them; Duet's fence / quiet do the heap's transports. */
void shmem_ctx_fence(shmem_ctx_t ctx)
{
    struct duet_shmem_team *t = shm_ctx_team(ctx, "shmem_ctx_fence");
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    shm_check(duet_fence(t->comm), "shmem_fence");
}
void shmem_ctx_quiet(shmem_ctx_t ctx)
{
    struct duet_shmem_team *t = shm_ctx_team(ctx, "shmem_ctx_quiet");
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    shm_check(duet_quiet(t->comm), "shmem_quiet");
}
void shmem_fence(void) { shmem_ctx_fence(SHMEM_CTX_DEFAULT); }
void shmem_quiet(void) { shmem_ctx_quiet(SHMEM_CTX_DEFAULT); }
