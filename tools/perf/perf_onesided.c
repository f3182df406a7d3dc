/*
 * duet-perf's one-sided modes: pingpong, put, get, atomic (between ranks 0 and 1; the other
 * ranks only join the barriers) and barrier (every rank). bench/shmem_perf.c is the same
 * program against OpenSHMEM; keep the two in step.
 *
 * The time of a row is rank 0's: it issues the operations (--average does not apply).
 */
#include <string.h>

#include "perf.h"

/* The verification byte at offset j of a transfer of `bytes`: differs per size, never
 * periodic at small powers of two. */
static inline uint8_t pattern(size_t j, size_t bytes)
{
    uint32_t x = (uint32_t)j * 2654435761u + (uint32_t)bytes * 40503u + 1u;
    x ^= x >> 15;
    return (uint8_t)(x ^ (x >> 8));
}

static uint64_t check_pattern(const uint8_t *buf, size_t bytes)
{
    uint64_t bad = 0;
    for (size_t j = 0; j < bytes; j++) bad += buf[j] != pattern(j, bytes);
    return bad;
}

/* ---------------------------------------------------------------- pingpong */
static void pingpong_body(perf_t *p, size_t bytes, long n)
{
    for (long i = 0; i < n; i++) {
        uint64_t v = ++p->seq;
        if (p->me == 0) {
            PERF_CHECK(duet_p_uint64(p->comm, p->flag, v, 1));
            PERF_CHECK(duet_wait_until_uint64(p->comm, p->flag, DUET_CMP_EQ, v));
        } else if (p->me == 1) {
            PERF_CHECK(duet_wait_until_uint64(p->comm, p->flag, DUET_CMP_EQ, v));
            PERF_CHECK(duet_p_uint64(p->comm, p->flag, v, 0));
        }
    }
}

/* Each of ranks 0 and 1 checks the last value it received. */
static uint64_t pingpong_verify(perf_t *p, size_t bytes)
{
    return p->me <= 1 && *p->flag != p->seq;
}

/* ---------------------------------------------------------------- put / get */
static void put_body(perf_t *p, size_t bytes, long n)
{
    if (p->me != 0) return;
    for (long i = 0; i < n; i++) {
        for (long w = 0; w < p->window; w++)
            PERF_CHECK(duet_put_nbi(p->comm, p->target, p->origin, bytes, 1));
        PERF_CHECK(duet_quiet(p->comm));
    }
}

static void get_body(perf_t *p, size_t bytes, long n)
{
    if (p->me != 0) return;
    for (long i = 0; i < n; i++) {
        for (long w = 0; w < p->window; w++)
            PERF_CHECK(duet_get_nbi(p->comm, p->origin, p->target, bytes, 1));
        PERF_CHECK(duet_quiet(p->comm));
    }
}

/* One verified transfer: the destination is poisoned with the pattern's complement, so
 * every byte that was not written counts as wrong (on the destination rank). */
static uint64_t transfer_verify(perf_t *p, size_t bytes, int is_put)
{
    uint8_t *src = is_put ? p->origin : p->target, *dst = is_put ? p->target : p->origin;
    int src_pe = is_put ? 0 : 1, dst_pe = is_put ? 1 : 0;
    if (p->me == src_pe)
        for (size_t j = 0; j < bytes; j++) src[j] = pattern(j, bytes);
    if (p->me == dst_pe)
        for (size_t j = 0; j < bytes; j++) dst[j] = (uint8_t)~pattern(j, bytes);
    PERF_CHECK(duet_barrier_all());
    if (p->me == 0) {
        if (is_put) PERF_CHECK(duet_put_nbi(p->comm, p->target, p->origin, bytes, 1));
        else PERF_CHECK(duet_get_nbi(p->comm, p->origin, p->target, bytes, 1));
        PERF_CHECK(duet_quiet(p->comm));
    }
    PERF_CHECK(duet_barrier_all());
    return p->me == dst_pe ? check_pattern(dst, bytes) : 0;
}

static uint64_t put_verify(perf_t *p, size_t bytes) { return transfer_verify(p, bytes, 1); }
static uint64_t get_verify(perf_t *p, size_t bytes) { return transfer_verify(p, bytes, 0); }

/* ---------------------------------------------------------------- atomic */
static int atomic_setup(perf_t *p, size_t bytes, const char **why)
{
    *p->counter = 0; /* the driver's barrier follows before anyone adds */
    p->adds = p->bad_fetches = 0;
    return 0;
}

static void atomic_body(perf_t *p, size_t bytes, long n)
{
    if (p->me != 0) return;
    for (long i = 0; i < n; i++) {
        uint64_t old;
        PERF_CHECK(duet_atomic_fetch_add_uint64(p->comm, p->counter, 1, 1, &old));
        p->bad_fetches += old != p->adds++; /* only rank 0 adds: it sees 0, 1, 2, ... */
    }
}

static uint64_t atomic_verify(perf_t *p, size_t bytes)
{
    if (p->me != 0) return 0;
    uint64_t final;
    PERF_CHECK(duet_atomic_fetch_uint64(p->comm, p->counter, 1, &final));
    return p->bad_fetches + (final != p->adds);
}

/* ---------------------------------------------------------------- barrier */
static void barrier_body(perf_t *p, size_t bytes, long n)
{
    for (long i = 0; i < n; i++) PERF_CHECK(duet_barrier_all());
}

/* Each rank puts round i into its right neighbour's slot, then barriers: a barrier
 * completes earlier puts, so every slot must hold i after it. */
static uint64_t barrier_verify(perf_t *p, size_t bytes)
{
    uint64_t bad = 0;
    for (uint64_t i = 1; i <= 100; i++) {
        PERF_CHECK(duet_p_uint64(p->comm, p->slot, i, (p->me + 1) % p->nranks));
        PERF_CHECK(duet_barrier_all());
        bad += *(volatile uint64_t *)p->slot != i;
        PERF_CHECK(duet_barrier_all());
    }
    return bad;
}

/* ---------------------------------------------------------------- the modes */
#define ONESIDED(mode, type, elem, fixed, sweep, two, win, n, su, run, check, text)                  \
    {.name = mode, .dtype = type, .redop = "none", .algo = "shm", .elem_size = elem,               \
     .fixed_bytes = fixed, .sized = sweep, .pair = two, .windowed = win, .default_iters = n,        \
     .setup = su, .body = run, .verify = check, .help = text}
const perf_mode_t perf_onesided_modes[] = {
    /*        name        dtype     elem fixed sized pair window iters */
    ONESIDED("pingpong", "uint64", 8, 8, 0, 1, 0, 10000, NULL, pingpong_body, pingpong_verify,
             "p + wait_until round trip between ranks 0 and 1"),
    ONESIDED("put", "uint8", 1, 0, 1, 1, 1, 100, NULL, put_body, put_verify,
             "window of put_nbi from rank 0 to rank 1, then quiet"),
    ONESIDED("get", "uint8", 1, 0, 1, 1, 1, 100, NULL, get_body, get_verify,
             "window of get_nbi by rank 0 from rank 1, then quiet"),
    ONESIDED("atomic", "uint64", 8, 8, 0, 1, 0, 10000, atomic_setup, atomic_body, atomic_verify,
             "atomic_fetch_add by rank 0 on rank 1's counter"),
    ONESIDED("barrier", "none", 0, 0, 0, 0, 0, 10000, NULL, barrier_body, barrier_verify,
             "barrier_all on every rank"),
#undef ONESIDED
};
const size_t perf_onesided_nmodes = DUET_ARRAY_LEN(perf_onesided_modes);
