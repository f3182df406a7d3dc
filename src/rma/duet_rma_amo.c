/* Atomics on symmetric integers: one generic path by width, typed entry points by X-macro. */
#include <string.h>
#include "rma/duet_rma.h"

DUET_INLINE duet_status_t amo_(duet_comm_t c, duet_amo_op_t op, void *dest, size_t width, uint64_t operand,
                               uint64_t cond, int pe, uint64_t *fetched, const char *fn)
{
    duet_tport_ep_t *ep = NULL;
    size_t off = 0;
    duet_status_t st = duet_rma_target_in(c, dest, width, pe, fn, &ep, &off);
    if (DUET_UNLIKELY(st)) return st;
    if (DUET_UNLIKELY((uintptr_t)dest % width))
        return duet_error_set(DUET_ERR_INVALID_ARG, "%s: %p is not aligned to %zu bytes", fn, dest, width);
    if (DUET_LIKELY(ep->ops->cpu_amo && !atomic_load_explicit(&ep->fault, memory_order_relaxed))) {
        st = duet_tport_cpu_amo(ep->base + off, op, width, operand, cond, fetched);
        if (op != DUET_AMO_FETCH) duet_doorbell_ring(ep->doorbell);
        return st;
    }
    st = ep->ops->amo(ep, op, off, width, operand, cond, fetched);
    if (op != DUET_AMO_FETCH) ep->ops->notify(ep);
    return st;
}

/* amo_ as a call in flight on c (duet_comm_enter); inlined into each typed entry point, so
 * that the op and the width are constants there (the heap atomics' rate, docs/PERF.md). */
DUET_INLINE duet_status_t amo(duet_comm_t c, duet_amo_op_t op, void *dest, size_t width, uint64_t operand, uint64_t cond,
                         int pe, uint64_t *fetched, const char *fn)
{
    DUET_RMA_CALL(c, fn, amo_(c, op, dest, width, operand, cond, pe, fetched, fn));
}

/* Moves a T's bits in and out of the uint64_t the transport works on. */
#define TO_BITS(T, v) ({ uint64_t b_ = 0; T v_ = (v); memcpy(&b_, &v_, sizeof(T)); b_; })
#define FROM_BITS(T, bits, out) do { if (out) { uint64_t b_ = (bits); memcpy((out), &b_, sizeof(T)); } } while (0)

#define DUET_DEFINE_AMO_EXT_(T, N)                                                                \
    duet_status_t duet_atomic_fetch_##N(duet_comm_t c, const T *src, int pe, T *fetched)          \
    {                                                                                             \
        uint64_t old;                                                                             \
        if (!fetched) return duet_error_set(DUET_ERR_INVALID_ARG, "duet_atomic_fetch_" #N ": fetched is NULL"); \
        duet_status_t st = amo(c, DUET_AMO_FETCH, (void *)src, sizeof(T), 0, 0, pe, &old,        \
                               "duet_atomic_fetch_" #N);                                          \
        if (!st) FROM_BITS(T, old, fetched);                                                      \
        return st;                                                                                \
    }                                                                                             \
    duet_status_t duet_atomic_set_##N(duet_comm_t c, T *dest, T value, int pe)                    \
    {                                                                                             \
        return amo(c, DUET_AMO_SET, dest, sizeof(T), TO_BITS(T, value), 0, pe, NULL,              \
                   "duet_atomic_set_" #N);                                                        \
    }                                                                                             \
    duet_status_t duet_atomic_swap_##N(duet_comm_t c, T *dest, T value, int pe, T *fetched)       \
    {                                                                                             \
        uint64_t old;                                                                             \
        duet_status_t st = amo(c, DUET_AMO_SWAP, dest, sizeof(T), TO_BITS(T, value), 0, pe, &old, \
                               "duet_atomic_swap_" #N);                                           \
        if (!st) FROM_BITS(T, old, fetched);                                                      \
        return st;                                                                                \
    }

/* An integer op with an operand and an optional fetched result. */
#define DUET_AMO_OP_(T, N, name, OP, operand)                                                      \
    duet_status_t duet_atomic_fetch_##name##_##N(duet_comm_t c, T *dest, T value, int pe, T *fetched) \
    {                                                                                             \
        uint64_t old;                                                                             \
        duet_status_t st = amo(c, OP, dest, sizeof(T), TO_BITS(T, operand), 0, pe, &old,         \
                               "duet_atomic_fetch_" #name "_" #N);                                \
        if (!st) FROM_BITS(T, old, fetched);                                                      \
        return st;                                                                                \
    }                                                                                             \
    duet_status_t duet_atomic_##name##_##N(duet_comm_t c, T *dest, T value, int pe)               \
    {                                                                                             \
        return amo(c, OP, dest, sizeof(T), TO_BITS(T, operand), 0, pe, NULL,                      \
                   "duet_atomic_" #name "_" #N);                                                  \
    }

#define DUET_DEFINE_AMO_(T, N)                                                                    \
    DUET_DEFINE_AMO_EXT_(T, N)                                                                    \
    duet_status_t duet_atomic_compare_swap_##N(duet_comm_t c, T *dest, T cond, T value, int pe,   \
                                               T *fetched)                                        \
    {                                                                                             \
        uint64_t old;                                                                             \
        duet_status_t st = amo(c, DUET_AMO_CSWAP, dest, sizeof(T), TO_BITS(T, value),             \
                               TO_BITS(T, cond), pe, &old, "duet_atomic_compare_swap_" #N);       \
        if (!st) FROM_BITS(T, old, fetched);                                                      \
        return st;                                                                                \
    }                                                                                             \
    DUET_AMO_OP_(T, N, add, DUET_AMO_ADD, value)                                                  \
    duet_status_t duet_atomic_fetch_inc_##N(duet_comm_t c, T *dest, int pe, T *fetched)           \
    { /* an add of 1, but its errors name the call that was made */                               \
        uint64_t old;                                                                             \
        duet_status_t st = amo(c, DUET_AMO_ADD, dest, sizeof(T), TO_BITS(T, (T)1), 0, pe, &old,   \
                               "duet_atomic_fetch_inc_" #N);                                      \
        if (!st) FROM_BITS(T, old, fetched);                                                      \
        return st;                                                                                \
    }                                                                                             \
    duet_status_t duet_atomic_inc_##N(duet_comm_t c, T *dest, int pe)                             \
    {                                                                                             \
        return amo(c, DUET_AMO_ADD, dest, sizeof(T), TO_BITS(T, (T)1), 0, pe, NULL,               \
                   "duet_atomic_inc_" #N);                                                        \
    }

#define DUET_DEFINE_AMO_BITWISE_(T, N)                                                            \
    DUET_AMO_OP_(T, N, and, DUET_AMO_AND, value)                                                  \
    DUET_AMO_OP_(T, N, or, DUET_AMO_OR, value)                                                    \
    DUET_AMO_OP_(T, N, xor, DUET_AMO_XOR, value)

DUET_AMO_TYPES(DUET_DEFINE_AMO_)
DUET_AMO_BITWISE_TYPES(DUET_DEFINE_AMO_BITWISE_)
DUET_AMO_EXTENDED_TYPES(DUET_DEFINE_AMO_EXT_)
