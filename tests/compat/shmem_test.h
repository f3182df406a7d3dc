/*
 * shmem_test.h — what the OpenSHMEM conformance tests (tests/compat/shmem_*.c) share. They
 * use only shmem.h (they are OpenSHMEM programs; some are built with duetcc).
 *
 *   ST_EXPECT(cond, fmt, ...)  report one line "<test>: PE p/n seed s: FAIL file:line: cond:
 *                              message" and count it; go on
 *   ST_CHECK(cond, fmt, ...)   the same, then exit(1)
 *   st_seed(argc, argv)        argv[1], else $DUET_TEST_SEED, else the time; PE 0's value is
 *                              broadcast so every PE has the same; printed by PE 0
 *   st_finish()                the exit code (0: no failure on this PE), after a barrier
 *   st_rng(&s)                 splitmix64
 */
#ifndef SHMEM_TEST_H
#define SHMEM_TEST_H

#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long st_failures_;
static unsigned long long st_seed_;

#define ST_REPORT_(cond_text, ...)                                                                  \
    do {                                                                                            \
        char m_[512];                                                                               \
        snprintf(m_, sizeof m_, __VA_ARGS__);                                                       \
        if (st_failures_ < 20)                                                                      \
            fprintf(stderr, "%s: PE %d/%d seed %llu: FAIL %s:%d: %s: %s\n", __FILE__, shmem_my_pe(), \
                    shmem_n_pes(), st_seed_, __FILE__, __LINE__, cond_text, m_);                    \
        st_failures_++;                                                                             \
    } while (0)
#define ST_EXPECT(cond, ...)                                                                        \
    do {                                                                                            \
        if (!(cond)) ST_REPORT_(#cond, __VA_ARGS__);                                                \
    } while (0)
#define ST_CHECK(cond, ...)                                                                         \
    do {                                                                                            \
        if (!(cond)) {                                                                              \
            ST_REPORT_(#cond, __VA_ARGS__);                                                         \
            exit(1);                                                                                \
        }                                                                                           \
    } while (0)

static inline unsigned long long st_rng(unsigned long long *s)
{
    unsigned long long z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static long long st_seed_word_; /* static data: symmetric (exercises it from the start) */

static inline unsigned long long st_seed(int argc, char **argv)
{
    const char *t = argc > 1 ? argv[1] : getenv("DUET_TEST_SEED");
    unsigned long long s = t ? strtoull(t, NULL, 0) : (unsigned long long)time(NULL);
    if (shmem_my_pe() == 0) st_seed_word_ = (long long)s;
    shmem_barrier_all();
    st_seed_ = (unsigned long long)shmem_longlong_g(&st_seed_word_, 0);
    shmem_barrier_all();
    if (shmem_my_pe() == 0) printf("seed %llu, %d PEs\n", st_seed_, shmem_n_pes());
    return st_seed_;
}

static inline int st_finish(void)
{
    shmem_barrier_all();
    if (st_failures_) fprintf(stderr, "PE %d: %ld failures\n", shmem_my_pe(), st_failures_);
    return st_failures_ ? 1 : 0;
}

#endif
