/*
 * shmem_reduce.c — the team reductions shmem_<TYPENAME>_<op>_reduce for and/or/xor,
 * max/min and sum/prod over the 1.5 tables.
 *
 * Where Duet has the datatype and the operation (8-, 32- and 64-bit integers, float and
 * double; sum, prod, min, max) it is one duet_allreduce on the team's communicator. The rest
 * (bitwise ops, 16-bit integers, long double, complex) take the fallback: allgather every
 * PE's source as bytes, then fold the blocks in PE order with the type's combine step, so
 * every PE computes the same result the same way. dest may equal source.
 */
#include <string.h>

#include "shmem_internal.h"

static int is_negative(double x) { return x < 0; }
static int is_fraction(double x) { return x != 0; }

/* Duet's datatype for a type of `size` bytes, or -1. */
static int dtype_of(size_t size, int is_signed, int is_float)
{
    if (is_float) return size == 4 ? DUET_FLOAT32 : size == 8 ? DUET_FLOAT64 : -1;
    switch (size) {
    case 1: return is_signed ? DUET_INT8 : DUET_UINT8;
    case 4: return is_signed ? DUET_INT32 : DUET_UINT32;
    case 8: return is_signed ? DUET_INT64 : DUET_UINT64;
    default: return -1;
    }
}
#define DTYPE_OF_(T) dtype_of(sizeof(T), is_negative((double)(T)-1), is_fraction((double)(T)0.5))

static int reduce(shmem_team_t team, void *dest, const void *src, size_t n, size_t es, int dtype, duet_op_t op,
                  shm_combine_fn combine, const char *fn)
{
    shm_require_init(fn);
    if (!shm_team_valid(team)) return 1;
    if (n == 0) return 0;
    size_t bytes = shm_bytes(n, es, fn);
    if (dtype >= 0) {
        shm_check(duet_allreduce(src, dest, n, (duet_datatype_t)dtype, op, team->comm, NULL), fn);
        return 0;
    }
    char *all = shm_scratch(0, shm_bytes((size_t)team->n_pes, bytes, fn), fn);
    shm_check(duet_allgather(src, all, bytes, DUET_UINT8, team->comm, NULL), fn);
    for (int pe = 1; pe < team->n_pes; pe++) combine(all, all + (size_t)pe * bytes, n);
    memcpy(dest, all, bytes);
    return 0;
}

/* DT: Duet's datatype or -1; DOP: Duet's op (ignored with -1) */
#define SHM_REDUCE_(T, N, OP, DT, DOP)                                                             \
    SHM_DEFINE_COMBINE_(T, N, OP)                                                                  \
    int shmem_##N##_##OP##_reduce(shmem_team_t team, T *dest, const T *source, size_t nreduce)     \
    {                                                                                              \
        return reduce(team, dest, source, nreduce, sizeof(T), DT, DOP, combine_##N##_##OP,         \
                      "shmem_" #N "_" #OP "_reduce");                                              \
    }
#define SHM_REDUCE_BIT_(T, N)                                                                      \
    SHM_REDUCE_(T, N, and, -1, DUET_SUM) SHM_REDUCE_(T, N, or, -1, DUET_SUM)                       \
    SHM_REDUCE_(T, N, xor, -1, DUET_SUM)
#define SHM_REDUCE_MINMAX_(T, N)                                                                   \
    SHM_REDUCE_(T, N, max, DTYPE_OF_(T), DUET_MAX) SHM_REDUCE_(T, N, min, DTYPE_OF_(T), DUET_MIN)  \
    SHM_REDUCE_(T, N, sum, DTYPE_OF_(T), DUET_SUM) SHM_REDUCE_(T, N, prod, DTYPE_OF_(T), DUET_PROD)
#define SHM_REDUCE_COMPLEX_(T, N) SHM_REDUCE_(T, N, sum, -1, DUET_SUM) SHM_REDUCE_(T, N, prod, -1, DUET_PROD)
SHMEM_X_BIT_REDUCE_TYPES(SHM_REDUCE_BIT_)
SHMEM_X_MINMAX_REDUCE_TYPES(SHM_REDUCE_MINMAX_)
SHMEM_X_COMPLEX_TYPES(SHM_REDUCE_COMPLEX_)
