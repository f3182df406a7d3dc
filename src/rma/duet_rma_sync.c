/*
 * Point-to-point synchronization: wait_until / test on local symmetric integers, single
 * and vector forms (_all, _any, _some, and _vector with a value per element).
 *
 * One scanner per type does all forms: it walks the included elements once and reports
 * how many compare true, the first that does, and (for _some) all that do. The wait forms
 * rescan through the one wait loop until their condition holds.
 */
#include <stdio.h>
#include <stdlib.h>
#include "rma/duet_rma.h"

enum { MODE_ALL, MODE_ANY, MODE_SOME };

typedef struct {
    size_t included, satisfied, first;
} scan_t;

/* Checks the arguments; *dev is the device heap's endpoint to me when ivars lie there (each
 * look is then a copy, at *off), else NULL. */
static duet_status_t check_ivars(duet_comm_t c, const void *ivars, size_t n, size_t es, int cmp, const char *fn,
                                 duet_tport_ep_t **dev, size_t *off)
{
    size_t bytes;
    duet_tport_ep_t *ep = NULL;
    duet_status_t st = duet_comm_check(c, fn);
    *dev = NULL;
    if (st) return st;
    if (cmp < DUET_CMP_EQ || cmp > DUET_CMP_LE)
        return duet_error_set(DUET_ERR_INVALID_ARG, "%s: comparison %d is not a DUET_CMP_* value", fn, cmp);
    if (n == 0) return DUET_OK;
    if ((st = duet_rma_bytes(n, es, fn, &bytes)) ||
        (st = duet_rma_where(c, ivars, bytes, c->heap->my_pe, fn, "ivars", &ep, off)))
        return st;
    if ((uintptr_t)ivars % es)
        return duet_error_set(DUET_ERR_INVALID_ARG, "%s: ivars %p is not aligned to %zu bytes", fn, ivars, es);
    if (duet_rma_on_device(c->heap, ep)) *dev = ep;
    return DUET_OK;
}

static int waits_satisfied(int mode, const scan_t *s)
{
    if (s->included == 0) return 1; /* nothing to wait for */
    return mode == MODE_ALL ? s->satisfied == s->included : s->satisfied > 0;
}

#define DUET_DEFINE_SYNC_(T, N)                                                                    \
    static int cmp_##N(T a, int cmp, T b)                                                         \
    {                                                                                             \
        switch (cmp) {                                                                            \
        case DUET_CMP_EQ: return a == b;                                                          \
        case DUET_CMP_NE: return a != b;                                                          \
        case DUET_CMP_GT: return a > b;                                                           \
        case DUET_CMP_GE: return a >= b;                                                          \
        case DUET_CMP_LT: return a < b;                                                           \
        default: return a <= b;                                                                   \
        }                                                                                         \
    }                                                                                             \
    static scan_t scan_##N(T *ivars, size_t n, const int *status, int cmp, T value,              \
                           const T *values, size_t *indices)                                      \
    {                                                                                             \
        scan_t s = {0, 0, SIZE_MAX};                                                              \
        for (size_t i = 0; i < n; i++) {                                                          \
            if (status && status[i]) continue;                                                    \
            s.included++;                                                                         \
            T v = __atomic_load_n(&ivars[i], __ATOMIC_ACQUIRE);                                   \
            if (!cmp_##N(v, cmp, values ? values[i] : value)) continue;                           \
            if (s.first == SIZE_MAX) s.first = i;                                                 \
            if (indices) indices[s.satisfied] = i;                                                \
            s.satisfied++;                                                                        \
        }                                                                                         \
        return s;                                                                                 \
    }                                                                                             \
    /* the one body of every form: wait or test, mode, scalar or vector */                        \
    static duet_status_t sync_##N(duet_comm_t c, T *ivars, size_t n, const int *status, int cmp,  \
                                  T value, const T *values, int mode, int wait, int *satisfied,   \
                                  size_t *index, size_t *indices, size_t *count, const char *fn)  \
    {                                                                                             \
        duet_tport_ep_t *dev;                                                                     \
        size_t off = 0;                                                                           \
        duet_status_t st = check_ivars(c, ivars, n, sizeof(T), cmp, fn, &dev, &off);              \
        if (st) return st;                                                                        \
        T *look = ivars; /* GPU ivars: scanned in a host copy, fetched on every look */          \
        if (dev && !(look = malloc(n * sizeof(T))))                                               \
            return duet_error_set(DUET_ERR_NO_MEMORY, "%s: out of host memory", fn);              \
        duet_waiter_t w;                                                                          \
        int started = 0;                                                                          \
        for (;;) {                                                                                \
            if (dev && (st = dev->ops->get(dev, look, off, n * sizeof(T))))                       \
                break;                                                                            \
            scan_t s = scan_##N(look, n, status, cmp, value, values,                              \
                                mode == MODE_SOME ? indices : NULL);                              \
            if (!wait || waits_satisfied(mode, &s)) {                                             \
                int ok = waits_satisfied(mode, &s) && (s.included > 0 || mode == MODE_ALL);       \
                if (satisfied) *satisfied = ok;                                                   \
                if (index) *index = ok ? s.first : SIZE_MAX;                                      \
                if (count) *count = s.satisfied;                                                  \
                st = DUET_OK;                                                                     \
                break;                                                                            \
            }                                                                                     \
            if (!started) {                                                                       \
                duet_waiter_init(&w, &c->wait_ctx, "%s on %llu value(s) at 0x%llx", fn, n,       \
                                 (uintptr_t)ivars, -1);                                           \
                started = 1;                                                                      \
            }                                                                                     \
            if ((st = duet_waiter_turn(&w))) break;                                               \
        }                                                                                         \
        if (look != ivars) free(look);                                                            \
        return st;                                                                                \
    }                                                                                             \
    duet_status_t duet_wait_until_##N(duet_comm_t c, T *ivar, int cmp, T value)                   \
    {                                                                                             \
        return sync_##N(c, ivar, 1, NULL, cmp, value, NULL, MODE_ALL, 1, NULL, NULL, NULL, NULL,  \
                        "duet_wait_until_" #N);                                                   \
    }                                                                                             \
    duet_status_t duet_test_##N(duet_comm_t c, T *ivar, int cmp, T value, int *satisfied)         \
    {                                                                                             \
        if (!satisfied) return duet_error_set(DUET_ERR_INVALID_ARG, "duet_test_" #N ": satisfied is NULL"); \
        return sync_##N(c, ivar, 1, NULL, cmp, value, NULL, MODE_ALL, 0, satisfied, NULL, NULL,   \
                        NULL, "duet_test_" #N);                                                   \
    }                                                                                             \
    duet_status_t duet_wait_until_all_##N(duet_comm_t c, T *ivars, size_t n, const int *status,   \
                                          int cmp, T value)                                       \
    {                                                                                             \
        return sync_##N(c, ivars, n, status, cmp, value, NULL, MODE_ALL, 1, NULL, NULL, NULL,     \
                        NULL, "duet_wait_until_all_" #N);                                         \
    }                                                                                             \
    duet_status_t duet_wait_until_any_##N(duet_comm_t c, T *ivars, size_t n, const int *status,   \
                                          int cmp, T value, size_t *index)                        \
    {                                                                                             \
        return sync_##N(c, ivars, n, status, cmp, value, NULL, MODE_ANY, 1, NULL, index, NULL,    \
                        NULL, "duet_wait_until_any_" #N);                                         \
    }                                                                                             \
    duet_status_t duet_wait_until_some_##N(duet_comm_t c, T *ivars, size_t n, const int *status,  \
                                           int cmp, T value, size_t *indices, size_t *count)      \
    {                                                                                             \
        return sync_##N(c, ivars, n, status, cmp, value, NULL, MODE_SOME, 1, NULL, NULL, indices, \
                        count, "duet_wait_until_some_" #N);                                       \
    }                                                                                             \
    duet_status_t duet_wait_until_all_vector_##N(duet_comm_t c, T *ivars, size_t n,               \
                                                 const int *status, int cmp, const T *values)     \
    {                                                                                             \
        return sync_##N(c, ivars, n, status, cmp, 0, values, MODE_ALL, 1, NULL, NULL, NULL, NULL, \
                        "duet_wait_until_all_vector_" #N);                                        \
    }                                                                                             \
    duet_status_t duet_wait_until_any_vector_##N(duet_comm_t c, T *ivars, size_t n,               \
                                                 const int *status, int cmp, const T *values,     \
                                                 size_t *index)                                   \
    {                                                                                             \
        return sync_##N(c, ivars, n, status, cmp, 0, values, MODE_ANY, 1, NULL, index, NULL,      \
                        NULL, "duet_wait_until_any_vector_" #N);                                  \
    }                                                                                             \
    duet_status_t duet_wait_until_some_vector_##N(duet_comm_t c, T *ivars, size_t n,              \
                                                  const int *status, int cmp, const T *values,    \
                                                  size_t *indices, size_t *count)                 \
    {                                                                                             \
        return sync_##N(c, ivars, n, status, cmp, 0, values, MODE_SOME, 1, NULL, NULL, indices,   \
                        count, "duet_wait_until_some_vector_" #N);                                \
    }                                                                                             \
    duet_status_t duet_test_all_##N(duet_comm_t c, T *ivars, size_t n, const int *status,         \
                                    int cmp, T value, int *satisfied)                             \
    {                                                                                             \
        return sync_##N(c, ivars, n, status, cmp, value, NULL, MODE_ALL, 0, satisfied, NULL,      \
                        NULL, NULL, "duet_test_all_" #N);                                         \
    }                                                                                             \
    duet_status_t duet_test_any_##N(duet_comm_t c, T *ivars, size_t n, const int *status,         \
                                    int cmp, T value, size_t *index)                              \
    {                                                                                             \
        return sync_##N(c, ivars, n, status, cmp, value, NULL, MODE_ANY, 0, NULL, index, NULL,    \
                        NULL, "duet_test_any_" #N);                                               \
    }                                                                                             \
    duet_status_t duet_test_some_##N(duet_comm_t c, T *ivars, size_t n, const int *status,        \
                                     int cmp, T value, size_t *indices, size_t *count)            \
    {                                                                                             \
        return sync_##N(c, ivars, n, status, cmp, value, NULL, MODE_SOME, 0, NULL, NULL, indices, \
                        count, "duet_test_some_" #N);                                             \
    }                                                                                             \
    duet_status_t duet_test_all_vector_##N(duet_comm_t c, T *ivars, size_t n, const int *status,  \
                                           int cmp, const T *values, int *satisfied)              \
    {                                                                                             \
        return sync_##N(c, ivars, n, status, cmp, 0, values, MODE_ALL, 0, satisfied, NULL, NULL,  \
                        NULL, "duet_test_all_vector_" #N);                                        \
    }                                                                                             \
    duet_status_t duet_test_any_vector_##N(duet_comm_t c, T *ivars, size_t n, const int *status,  \
                                           int cmp, const T *values, size_t *index)               \
    {                                                                                             \
        return sync_##N(c, ivars, n, status, cmp, 0, values, MODE_ANY, 0, NULL, index, NULL,      \
                        NULL, "duet_test_any_vector_" #N);                                        \
    }                                                                                             \
    duet_status_t duet_test_some_vector_##N(duet_comm_t c, T *ivars, size_t n, const int *status, \
                                            int cmp, const T *values, size_t *indices,            \
                                            size_t *count)                                        \
    {                                                                                             \
        return sync_##N(c, ivars, n, status, cmp, 0, values, MODE_SOME, 0, NULL, NULL, indices,   \
                        count, "duet_test_some_vector_" #N);                                      \
    }
DUET_AMO_TYPES(DUET_DEFINE_SYNC_)
