/*
 * shmem_sync.c — point-to-point synchronization (wait_until, test, their _all / _any /
 * _some and _vector forms, for every point-to-point type), shmem_signal_wait_until, the
 * deprecated shmem_*_wait, fence / quiet, and the poll loop of waits Duet's core cannot do.
 *
 * ivars in the symmetric heap: Duet's duet_wait_until_* / duet_test_* (its wait loop sleeps
 * on the doorbell a put rings). ivars in static data: one scanner per type here, polled by
 * shm_poll_turn (spin, yield, then 20 us sleeps; every 64 turns it looks at the world's
 * health, so a dead peer or a peer's shmem_global_exit ends the wait).
 */
#include <sched.h>
#include <time.h>

#include "shmem_internal.h"

void shm_poll_turn(shm_poll_t *p)
{
    p->turns++;
    if (p->turns < 128) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    } else if (p->turns < 4096) {
        sched_yield(); /* 8 PEs on 2 cores: let the writer run */
    } else {
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
    }
    if ((p->turns & 63) == 0) {
        shm_exit_if_asked();
        duet_status_t st = duet_comm_status(shm_g.world);
        if (st != DUET_OK) shm_fail(p->fn, st);
    }
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

enum { MODE_ALL, MODE_ANY, MODE_SOME };

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
        shm_poll_t p = {0, fn};                                                                    \
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
    }
SHMEM_X_SYNC_TYPES(SHM_SCANNER_)

/* Each form: static -> poll_<N>, heap -> Duet. W is the world communicator. */
#define W shm_g.world
#define SHM_SYNC_(T, N)                                                                            \
    void shmem_##N##_wait_until(T *ivar, int cmp, T v)                                             \
    {                                                                                              \
        const char *fn = "shmem_" #N "_wait_until";                                                \
        size_t first, inc;                                                                         \
        check_cmp(cmp, fn);                                                                        \
        if (is_static(ivar, sizeof(T), fn)) poll_##N(ivar, 1, NULL, cmp, v, NULL, NULL, MODE_ALL, 1, &first, &inc, fn); \
        else shm_check(duet_wait_until_##N(W, ivar, cmp, v), fn);                                 \
    }                                                                                              \
    int shmem_##N##_test(T *ivar, int cmp, T v)                                                    \
    {                                                                                              \
        const char *fn = "shmem_" #N "_test";                                                      \
        size_t first, inc;                                                                         \
        int ok = 0;                                                                                \
        check_cmp(cmp, fn);                                                                        \
        if (is_static(ivar, sizeof(T), fn))                                                        \
            return poll_##N(ivar, 1, NULL, cmp, v, NULL, NULL, MODE_ALL, 0, &first, &inc, fn) == 1; \
        shm_check(duet_test_##N(W, ivar, cmp, v, &ok), fn);                                        \
        return ok != 0;                                                                            \
    }                                                                                              \
    SHM_SYNC_MULTI_(T, N, , T v, v, NULL)                                                          \
    SHM_SYNC_MULTI_(T, N, _vector, T *vs, 0, vs)

/* _all / _any / _some, waiting and testing; VPARAM is the value or the vector of values. */
#define SHM_SYNC_MULTI_(T, N, SFX, VPARAM, VAL, VALS)                                              \
    void shmem_##N##_wait_until_all##SFX(T *iv, size_t n, const int *st, int cmp, VPARAM)          \
    {                                                                                              \
        const char *fn = "shmem_" #N "_wait_until_all" #SFX;                                       \
        size_t first, inc;                                                                         \
        check_cmp(cmp, fn);                                                                        \
        if (is_static(iv, shm_bytes(n, sizeof(T), fn), fn))                                        \
            poll_##N(iv, n, st, cmp, VAL, VALS, NULL, MODE_ALL, 1, &first, &inc, fn);              \
        else if (n) shm_check(duet_wait_until_all##SFX##_##N(W, iv, n, st, cmp, VALS_OR_VAL_##SFX(VAL, VALS)), fn); \
    }                                                                                              \
    size_t shmem_##N##_wait_until_any##SFX(T *iv, size_t n, const int *st, int cmp, VPARAM)        \
    {                                                                                              \
        const char *fn = "shmem_" #N "_wait_until_any" #SFX;                                       \
        size_t first = SIZE_MAX, inc;                                                              \
        check_cmp(cmp, fn);                                                                        \
        if (is_static(iv, shm_bytes(n, sizeof(T), fn), fn))                                        \
            poll_##N(iv, n, st, cmp, VAL, VALS, NULL, MODE_ANY, 1, &first, &inc, fn);              \
        else if (n) shm_check(duet_wait_until_any##SFX##_##N(W, iv, n, st, cmp, VALS_OR_VAL_##SFX(VAL, VALS), &first), fn); \
        return first;                                                                              \
    }                                                                                              \
    size_t shmem_##N##_wait_until_some##SFX(T *iv, size_t n, size_t *idx, const int *st, int cmp, VPARAM) \
    {                                                                                              \
        const char *fn = "shmem_" #N "_wait_until_some" #SFX;                                      \
        size_t first, inc, count = 0;                                                              \
        check_cmp(cmp, fn);                                                                        \
        if (is_static(iv, shm_bytes(n, sizeof(T), fn), fn))                                        \
            count = poll_##N(iv, n, st, cmp, VAL, VALS, idx, MODE_SOME, 1, &first, &inc, fn);      \
        else if (n) shm_check(duet_wait_until_some##SFX##_##N(W, iv, n, st, cmp, VALS_OR_VAL_##SFX(VAL, VALS), idx, &count), fn); \
        return count;                                                                              \
    }                                                                                              \
    int shmem_##N##_test_all##SFX(T *iv, size_t n, const int *st, int cmp, VPARAM)                 \
    {                                                                                              \
        const char *fn = "shmem_" #N "_test_all" #SFX;                                             \
        size_t first, inc;                                                                         \
        int ok = 1;                                                                                \
        check_cmp(cmp, fn);                                                                        \
        if (is_static(iv, shm_bytes(n, sizeof(T), fn), fn))                                        \
            return poll_##N(iv, n, st, cmp, VAL, VALS, NULL, MODE_ALL, 0, &first, &inc, fn) == inc; \
        if (n) shm_check(duet_test_all##SFX##_##N(W, iv, n, st, cmp, VALS_OR_VAL_##SFX(VAL, VALS), &ok), fn); \
        return ok != 0;                                                                            \
    }                                                                                              \
    size_t shmem_##N##_test_any##SFX(T *iv, size_t n, const int *st, int cmp, VPARAM)              \
    {                                                                                              \
        const char *fn = "shmem_" #N "_test_any" #SFX;                                             \
        size_t first = SIZE_MAX, inc;                                                              \
        check_cmp(cmp, fn);                                                                        \
        if (is_static(iv, shm_bytes(n, sizeof(T), fn), fn))                                        \
            poll_##N(iv, n, st, cmp, VAL, VALS, NULL, MODE_ANY, 0, &first, &inc, fn);              \
        else if (n) shm_check(duet_test_any##SFX##_##N(W, iv, n, st, cmp, VALS_OR_VAL_##SFX(VAL, VALS), &first), fn); \
        return first;                                                                              \
    }                                                                                              \
    size_t shmem_##N##_test_some##SFX(T *iv, size_t n, size_t *idx, const int *st, int cmp, VPARAM) \
    {                                                                                              \
        const char *fn = "shmem_" #N "_test_some" #SFX;                                            \
        size_t first, inc, count = 0;                                                              \
        check_cmp(cmp, fn);                                                                        \
        if (is_static(iv, shm_bytes(n, sizeof(T), fn), fn))                                        \
            count = poll_##N(iv, n, st, cmp, VAL, VALS, idx, MODE_SOME, 0, &first, &inc, fn);      \
        else if (n) shm_check(duet_test_some##SFX##_##N(W, iv, n, st, cmp, VALS_OR_VAL_##SFX(VAL, VALS), idx, &count), fn); \
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
    if (!is_static(sig_addr, sizeof *sig_addr, fn)) {
        shm_check(duet_signal_wait_until(W, sig_addr, cmp, cmp_value, &v), fn);
        return v;
    }
    shm_poll_t p = {0, fn};
    while (!cmp_uint64(v = __atomic_load_n(sig_addr, __ATOMIC_ACQUIRE), cmp, cmp_value)) shm_poll_turn(&p);
    return v;
}

/* ---- deprecated: shmem_<T>_wait(ivar, value) waits while *ivar == value */
void shmem_short_wait_until(short *ivar, int cmp, short v)
{
    const char *fn = "shmem_short_wait_until";
    check_cmp(cmp, fn);
    shm_require_init(fn);
    shm_poll_t p = {0, fn};
    for (;;) {
        short x = __atomic_load_n(ivar, __ATOMIC_ACQUIRE);
        int ok = cmp == SHMEM_CMP_EQ ? x == v : cmp == SHMEM_CMP_NE ? x != v : cmp == SHMEM_CMP_GT ? x > v
               : cmp == SHMEM_CMP_GE ? x >= v : cmp == SHMEM_CMP_LT ? x < v : x <= v;
        if (ok) return;
        shm_poll_turn(&p);
    }
}
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
