/*
 * shmem_generic.h — the type-generic names of OpenSHMEM 1.5 (included by shmem.h).
 *
 * C11: each generic name is a macro that picks the context form or the plain form by its
 * number of arguments (shmem_put(dest, src, n, pe) vs shmem_put(ctx, dest, src, n, pe)), then
 * the typed function by _Generic on the element type. Selection is over the distinct
 * standard C types (int64_t is long here, so it selects shmem_long_*); any other type is a
 * compile-time error.
 * C++: no _Generic; the same names (every generic name of 1.5: RMA, AMO with their nbi forms,
 * the point-to-point waits and tests, the team collectives and reductions) are overloaded
 * inline functions over the same types, the complex reductions over std::complex.
 */
#ifndef DUET_SHMEM_GENERIC_H
#define DUET_SHMEM_GENERIC_H

#if !defined(__cplusplus) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L

#define SHMEM_NARGS_(...) SHMEM_NARGS_I_(__VA_ARGS__, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define SHMEM_NARGS_I_(_1, _2, _3, _4, _5, _6, _7, _8, _9, N, ...) N
#define SHMEM_CAT_(a, b) SHMEM_CAT_I_(a, b)
#define SHMEM_CAT_I_(a, b) a##b
/* name##<number of arguments>(arguments) */
#define SHMEM_BY_NARGS_(name, ...) SHMEM_CAT_(name, SHMEM_NARGS_(__VA_ARGS__))(__VA_ARGS__)

/* a type no argument has: ends every association list (whose entries end with commas) */
struct duet_shmem_no_such_type_ { int unused_; };
#define SHMEM_GEN_END_ struct duet_shmem_no_such_type_ : 0

/* association lists: T: shmem_<N>_<OP> (plain) or shmem_ctx_<N>_<OP> (context) */
#define SHMEM_GEN_ENTRY_(T, N, OP) T : shmem_##N##_##OP,
#define SHMEM_GEN_CTX_ENTRY_(T, N, OP) T : shmem_ctx_##N##_##OP,

#define SHMEM_G_RMA_(E, OP)                                                                    \
    E(float, float, OP) E(double, double, OP) E(long double, longdouble, OP) E(char, char, OP) \
    E(signed char, schar, OP) E(short, short, OP) E(int, int, OP) E(long, long, OP)            \
    E(long long, longlong, OP) E(unsigned char, uchar, OP) E(unsigned short, ushort, OP)       \
    E(unsigned int, uint, OP) E(unsigned long, ulong, OP) E(unsigned long long, ulonglong, OP)
#define SHMEM_G_AMO_(E, OP)                                                                    \
    E(int, int, OP) E(long, long, OP) E(long long, longlong, OP) E(unsigned int, uint, OP)     \
    E(unsigned long, ulong, OP) E(unsigned long long, ulonglong, OP)
/* point-to-point: the AMO types and the deprecated short and unsigned short */
#define SHMEM_G_SYNC_(E, OP) E(short, short, OP) E(unsigned short, ushort, OP) SHMEM_G_AMO_(E, OP)
#define SHMEM_G_AMO_EXT_(E, OP) SHMEM_G_AMO_(E, OP) E(float, float, OP) E(double, double, OP)
/* the unsigned rows of the bitwise tables (uint32_t, uint64_t, size_t are among them) */
#define SHMEM_G_UNSIGNED_BIT_(E, OP)                                                           \
    E(unsigned int, uint, OP) E(unsigned long, ulong, OP) E(unsigned long long, ulonglong, OP)
/* bitwise AMOs: also int32_t and int64_t, rows of the 1.4 / 1.5 tables (each a standard type
 * no other row is: int and long here) */
#define SHMEM_G_AMO_BIT_(E, OP) SHMEM_G_UNSIGNED_BIT_(E, OP) E(int32_t, int32, OP) E(int64_t, int64, OP)
/* bitwise reductions: the unsigned rows, and int8_t .. int64_t (1.5 rows) */
#define SHMEM_G_BIT_RED_(E, OP)                                                                \
    E(unsigned char, uchar, OP) E(unsigned short, ushort, OP) SHMEM_G_UNSIGNED_BIT_(E, OP)     \
    E(int8_t, int8, OP) E(int16_t, int16, OP) E(int32_t, int32, OP) E(int64_t, int64, OP)
#define SHMEM_G_MINMAX_RED_(E, OP)                                                             \
    E(char, char, OP) E(signed char, schar, OP) E(short, short, OP) E(int, int, OP)            \
    E(long, long, OP) E(long long, longlong, OP) E(unsigned char, uchar, OP)                   \
    E(unsigned short, ushort, OP) SHMEM_G_UNSIGNED_BIT_(E, OP) E(float, float, OP)             \
    E(double, double, OP) E(long double, longdouble, OP)
#define SHMEM_G_ARITH_RED_(E, OP)                                                              \
    SHMEM_G_MINMAX_RED_(E, OP) E(double _Complex, complexd, OP) E(float _Complex, complexf, OP)

/* _Generic over the type of lvalue `ref` (qualifiers dropped) */
#define SHMEM_GEN_(TABLE, ref, OP)                                                             \
    _Generic((ref), TABLE(SHMEM_GEN_ENTRY_, OP) SHMEM_GEN_END_)
#define SHMEM_GEN_CTX_(TABLE, ref, OP)                                                         \
    _Generic((ref), TABLE(SHMEM_GEN_CTX_ENTRY_, OP) SHMEM_GEN_END_)

/* ---- RMA */
#define shmem_put(...) SHMEM_BY_NARGS_(shmem_put_g, __VA_ARGS__)
#define shmem_put_g4(d, s, n, pe) SHMEM_GEN_(SHMEM_G_RMA_, *(d), put)(d, s, n, pe)
#define shmem_put_g5(c, d, s, n, pe) SHMEM_GEN_CTX_(SHMEM_G_RMA_, *(d), put)(c, d, s, n, pe)
#define shmem_put_nbi(...) SHMEM_BY_NARGS_(shmem_put_nbi_g, __VA_ARGS__)
#define shmem_put_nbi_g4(d, s, n, pe) SHMEM_GEN_(SHMEM_G_RMA_, *(d), put_nbi)(d, s, n, pe)
#define shmem_put_nbi_g5(c, d, s, n, pe) SHMEM_GEN_CTX_(SHMEM_G_RMA_, *(d), put_nbi)(c, d, s, n, pe)
#define shmem_get(...) SHMEM_BY_NARGS_(shmem_get_g, __VA_ARGS__)
#define shmem_get_g4(d, s, n, pe) SHMEM_GEN_(SHMEM_G_RMA_, *(d), get)(d, s, n, pe)
#define shmem_get_g5(c, d, s, n, pe) SHMEM_GEN_CTX_(SHMEM_G_RMA_, *(d), get)(c, d, s, n, pe)
#define shmem_get_nbi(...) SHMEM_BY_NARGS_(shmem_get_nbi_g, __VA_ARGS__)
#define shmem_get_nbi_g4(d, s, n, pe) SHMEM_GEN_(SHMEM_G_RMA_, *(d), get_nbi)(d, s, n, pe)
#define shmem_get_nbi_g5(c, d, s, n, pe) SHMEM_GEN_CTX_(SHMEM_G_RMA_, *(d), get_nbi)(c, d, s, n, pe)
#define shmem_p(...) SHMEM_BY_NARGS_(shmem_p_g, __VA_ARGS__)
#define shmem_p_g3(d, v, pe) SHMEM_GEN_(SHMEM_G_RMA_, *(d), p)(d, v, pe)
#define shmem_p_g4(c, d, v, pe) SHMEM_GEN_CTX_(SHMEM_G_RMA_, *(d), p)(c, d, v, pe)
#define shmem_g(...) SHMEM_BY_NARGS_(shmem_g_g, __VA_ARGS__)
#define shmem_g_g2(s, pe) SHMEM_GEN_(SHMEM_G_RMA_, *(s), g)(s, pe)
#define shmem_g_g3(c, s, pe) SHMEM_GEN_CTX_(SHMEM_G_RMA_, *(s), g)(c, s, pe)
#define shmem_iput(...) SHMEM_BY_NARGS_(shmem_iput_g, __VA_ARGS__)
#define shmem_iput_g6(d, s, ds, ss, n, pe) SHMEM_GEN_(SHMEM_G_RMA_, *(d), iput)(d, s, ds, ss, n, pe)
#define shmem_iput_g7(c, d, s, ds, ss, n, pe)                                                  \
    SHMEM_GEN_CTX_(SHMEM_G_RMA_, *(d), iput)(c, d, s, ds, ss, n, pe)
#define shmem_iget(...) SHMEM_BY_NARGS_(shmem_iget_g, __VA_ARGS__)
#define shmem_iget_g6(d, s, ds, ss, n, pe) SHMEM_GEN_(SHMEM_G_RMA_, *(d), iget)(d, s, ds, ss, n, pe)
#define shmem_iget_g7(c, d, s, ds, ss, n, pe)                                                  \
    SHMEM_GEN_CTX_(SHMEM_G_RMA_, *(d), iget)(c, d, s, ds, ss, n, pe)
#define shmem_put_signal(...) SHMEM_BY_NARGS_(shmem_put_signal_g, __VA_ARGS__)
#define shmem_put_signal_g7(d, s, n, sa, sv, so, pe)                                           \
    SHMEM_GEN_(SHMEM_G_RMA_, *(d), put_signal)(d, s, n, sa, sv, so, pe)
#define shmem_put_signal_g8(c, d, s, n, sa, sv, so, pe)                                        \
    SHMEM_GEN_CTX_(SHMEM_G_RMA_, *(d), put_signal)(c, d, s, n, sa, sv, so, pe)
#define shmem_put_signal_nbi(...) SHMEM_BY_NARGS_(shmem_put_signal_nbi_g, __VA_ARGS__)
#define shmem_put_signal_nbi_g7(d, s, n, sa, sv, so, pe)                                       \
    SHMEM_GEN_(SHMEM_G_RMA_, *(d), put_signal_nbi)(d, s, n, sa, sv, so, pe)
#define shmem_put_signal_nbi_g8(c, d, s, n, sa, sv, so, pe)                                    \
    SHMEM_GEN_CTX_(SHMEM_G_RMA_, *(d), put_signal_nbi)(c, d, s, n, sa, sv, so, pe)

/* ---- AMO */
#define shmem_atomic_fetch(...) SHMEM_BY_NARGS_(shmem_atomic_fetch_g, __VA_ARGS__)
#define shmem_atomic_fetch_g2(s, pe) SHMEM_GEN_(SHMEM_G_AMO_EXT_, *(s), atomic_fetch)(s, pe)
#define shmem_atomic_fetch_g3(c, s, pe) SHMEM_GEN_CTX_(SHMEM_G_AMO_EXT_, *(s), atomic_fetch)(c, s, pe)
#define shmem_atomic_set(...) SHMEM_BY_NARGS_(shmem_atomic_set_g, __VA_ARGS__)
#define shmem_atomic_set_g3(d, v, pe) SHMEM_GEN_(SHMEM_G_AMO_EXT_, *(d), atomic_set)(d, v, pe)
#define shmem_atomic_set_g4(c, d, v, pe) SHMEM_GEN_CTX_(SHMEM_G_AMO_EXT_, *(d), atomic_set)(c, d, v, pe)
#define shmem_atomic_swap(...) SHMEM_BY_NARGS_(shmem_atomic_swap_g, __VA_ARGS__)
#define shmem_atomic_swap_g3(d, v, pe) SHMEM_GEN_(SHMEM_G_AMO_EXT_, *(d), atomic_swap)(d, v, pe)
#define shmem_atomic_swap_g4(c, d, v, pe) SHMEM_GEN_CTX_(SHMEM_G_AMO_EXT_, *(d), atomic_swap)(c, d, v, pe)
#define shmem_atomic_compare_swap(...) SHMEM_BY_NARGS_(shmem_atomic_compare_swap_g, __VA_ARGS__)
#define shmem_atomic_compare_swap_g4(d, k, v, pe)                                              \
    SHMEM_GEN_(SHMEM_G_AMO_, *(d), atomic_compare_swap)(d, k, v, pe)
#define shmem_atomic_compare_swap_g5(c, d, k, v, pe)                                           \
    SHMEM_GEN_CTX_(SHMEM_G_AMO_, *(d), atomic_compare_swap)(c, d, k, v, pe)
#define shmem_atomic_fetch_inc(...) SHMEM_BY_NARGS_(shmem_atomic_fetch_inc_g, __VA_ARGS__)
#define shmem_atomic_fetch_inc_g2(d, pe) SHMEM_GEN_(SHMEM_G_AMO_, *(d), atomic_fetch_inc)(d, pe)
#define shmem_atomic_fetch_inc_g3(c, d, pe) SHMEM_GEN_CTX_(SHMEM_G_AMO_, *(d), atomic_fetch_inc)(c, d, pe)
#define shmem_atomic_inc(...) SHMEM_BY_NARGS_(shmem_atomic_inc_g, __VA_ARGS__)
#define shmem_atomic_inc_g2(d, pe) SHMEM_GEN_(SHMEM_G_AMO_, *(d), atomic_inc)(d, pe)
#define shmem_atomic_inc_g3(c, d, pe) SHMEM_GEN_CTX_(SHMEM_G_AMO_, *(d), atomic_inc)(c, d, pe)
/* the operand forms: fetch_OP(dest, value, pe) and OP(dest, value, pe) */
#define SHMEM_GEN_AMO_OP3_(TABLE, OP, d, v, pe) SHMEM_GEN_(TABLE, *(d), OP)(d, v, pe)
#define SHMEM_GEN_AMO_OP4_(TABLE, OP, c, d, v, pe) SHMEM_GEN_CTX_(TABLE, *(d), OP)(c, d, v, pe)
#define shmem_atomic_fetch_add(...) SHMEM_BY_NARGS_(shmem_atomic_fetch_add_g, __VA_ARGS__)
#define shmem_atomic_fetch_add_g3(...) SHMEM_GEN_AMO_OP3_(SHMEM_G_AMO_, atomic_fetch_add, __VA_ARGS__)
#define shmem_atomic_fetch_add_g4(...) SHMEM_GEN_AMO_OP4_(SHMEM_G_AMO_, atomic_fetch_add, __VA_ARGS__)
#define shmem_atomic_add(...) SHMEM_BY_NARGS_(shmem_atomic_add_g, __VA_ARGS__)
#define shmem_atomic_add_g3(...) SHMEM_GEN_AMO_OP3_(SHMEM_G_AMO_, atomic_add, __VA_ARGS__)
#define shmem_atomic_add_g4(...) SHMEM_GEN_AMO_OP4_(SHMEM_G_AMO_, atomic_add, __VA_ARGS__)
#define shmem_atomic_fetch_and(...) SHMEM_BY_NARGS_(shmem_atomic_fetch_and_g, __VA_ARGS__)
#define shmem_atomic_fetch_and_g3(...) SHMEM_GEN_AMO_OP3_(SHMEM_G_AMO_BIT_, atomic_fetch_and, __VA_ARGS__)
#define shmem_atomic_fetch_and_g4(...) SHMEM_GEN_AMO_OP4_(SHMEM_G_AMO_BIT_, atomic_fetch_and, __VA_ARGS__)
#define shmem_atomic_and(...) SHMEM_BY_NARGS_(shmem_atomic_and_g, __VA_ARGS__)
#define shmem_atomic_and_g3(...) SHMEM_GEN_AMO_OP3_(SHMEM_G_AMO_BIT_, atomic_and, __VA_ARGS__)
#define shmem_atomic_and_g4(...) SHMEM_GEN_AMO_OP4_(SHMEM_G_AMO_BIT_, atomic_and, __VA_ARGS__)
#define shmem_atomic_fetch_or(...) SHMEM_BY_NARGS_(shmem_atomic_fetch_or_g, __VA_ARGS__)
#define shmem_atomic_fetch_or_g3(...) SHMEM_GEN_AMO_OP3_(SHMEM_G_AMO_BIT_, atomic_fetch_or, __VA_ARGS__)
#define shmem_atomic_fetch_or_g4(...) SHMEM_GEN_AMO_OP4_(SHMEM_G_AMO_BIT_, atomic_fetch_or, __VA_ARGS__)
#define shmem_atomic_or(...) SHMEM_BY_NARGS_(shmem_atomic_or_g, __VA_ARGS__)
#define shmem_atomic_or_g3(...) SHMEM_GEN_AMO_OP3_(SHMEM_G_AMO_BIT_, atomic_or, __VA_ARGS__)
#define shmem_atomic_or_g4(...) SHMEM_GEN_AMO_OP4_(SHMEM_G_AMO_BIT_, atomic_or, __VA_ARGS__)
#define shmem_atomic_fetch_xor(...) SHMEM_BY_NARGS_(shmem_atomic_fetch_xor_g, __VA_ARGS__)
#define shmem_atomic_fetch_xor_g3(...) SHMEM_GEN_AMO_OP3_(SHMEM_G_AMO_BIT_, atomic_fetch_xor, __VA_ARGS__)
#define shmem_atomic_fetch_xor_g4(...) SHMEM_GEN_AMO_OP4_(SHMEM_G_AMO_BIT_, atomic_fetch_xor, __VA_ARGS__)
#define shmem_atomic_xor(...) SHMEM_BY_NARGS_(shmem_atomic_xor_g, __VA_ARGS__)
#define shmem_atomic_xor_g3(...) SHMEM_GEN_AMO_OP3_(SHMEM_G_AMO_BIT_, atomic_xor, __VA_ARGS__)
#define shmem_atomic_xor_g4(...) SHMEM_GEN_AMO_OP4_(SHMEM_G_AMO_BIT_, atomic_xor, __VA_ARGS__)
/* non-blocking fetching forms: the result goes to *fetch */
#define shmem_atomic_fetch_nbi(...) SHMEM_BY_NARGS_(shmem_atomic_fetch_nbi_g, __VA_ARGS__)
#define shmem_atomic_fetch_nbi_g3(f, s, pe) SHMEM_GEN_(SHMEM_G_AMO_EXT_, *(f), atomic_fetch_nbi)(f, s, pe)
#define shmem_atomic_fetch_nbi_g4(c, f, s, pe)                                                 \
    SHMEM_GEN_CTX_(SHMEM_G_AMO_EXT_, *(f), atomic_fetch_nbi)(c, f, s, pe)
#define shmem_atomic_swap_nbi(...) SHMEM_BY_NARGS_(shmem_atomic_swap_nbi_g, __VA_ARGS__)
#define shmem_atomic_swap_nbi_g4(f, d, v, pe)                                                  \
    SHMEM_GEN_(SHMEM_G_AMO_EXT_, *(d), atomic_swap_nbi)(f, d, v, pe)
#define shmem_atomic_swap_nbi_g5(c, f, d, v, pe)                                               \
    SHMEM_GEN_CTX_(SHMEM_G_AMO_EXT_, *(d), atomic_swap_nbi)(c, f, d, v, pe)
#define shmem_atomic_compare_swap_nbi(...) SHMEM_BY_NARGS_(shmem_atomic_compare_swap_nbi_g, __VA_ARGS__)
#define shmem_atomic_compare_swap_nbi_g5(f, d, k, v, pe)                                       \
    SHMEM_GEN_(SHMEM_G_AMO_, *(d), atomic_compare_swap_nbi)(f, d, k, v, pe)
#define shmem_atomic_compare_swap_nbi_g6(c, f, d, k, v, pe)                                    \
    SHMEM_GEN_CTX_(SHMEM_G_AMO_, *(d), atomic_compare_swap_nbi)(c, f, d, k, v, pe)
#define shmem_atomic_fetch_inc_nbi(...) SHMEM_BY_NARGS_(shmem_atomic_fetch_inc_nbi_g, __VA_ARGS__)
#define shmem_atomic_fetch_inc_nbi_g3(f, d, pe)                                                \
    SHMEM_GEN_(SHMEM_G_AMO_, *(d), atomic_fetch_inc_nbi)(f, d, pe)
#define shmem_atomic_fetch_inc_nbi_g4(c, f, d, pe)                                             \
    SHMEM_GEN_CTX_(SHMEM_G_AMO_, *(d), atomic_fetch_inc_nbi)(c, f, d, pe)
#define SHMEM_GEN_AMO_NBI4_(TABLE, OP, f, d, v, pe) SHMEM_GEN_(TABLE, *(d), OP)(f, d, v, pe)
#define SHMEM_GEN_AMO_NBI5_(TABLE, OP, c, f, d, v, pe) SHMEM_GEN_CTX_(TABLE, *(d), OP)(c, f, d, v, pe)
#define shmem_atomic_fetch_add_nbi(...) SHMEM_BY_NARGS_(shmem_atomic_fetch_add_nbi_g, __VA_ARGS__)
#define shmem_atomic_fetch_add_nbi_g4(...) SHMEM_GEN_AMO_NBI4_(SHMEM_G_AMO_, atomic_fetch_add_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_add_nbi_g5(...) SHMEM_GEN_AMO_NBI5_(SHMEM_G_AMO_, atomic_fetch_add_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_and_nbi(...) SHMEM_BY_NARGS_(shmem_atomic_fetch_and_nbi_g, __VA_ARGS__)
#define shmem_atomic_fetch_and_nbi_g4(...) SHMEM_GEN_AMO_NBI4_(SHMEM_G_AMO_BIT_, atomic_fetch_and_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_and_nbi_g5(...) SHMEM_GEN_AMO_NBI5_(SHMEM_G_AMO_BIT_, atomic_fetch_and_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_or_nbi(...) SHMEM_BY_NARGS_(shmem_atomic_fetch_or_nbi_g, __VA_ARGS__)
#define shmem_atomic_fetch_or_nbi_g4(...) SHMEM_GEN_AMO_NBI4_(SHMEM_G_AMO_BIT_, atomic_fetch_or_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_or_nbi_g5(...) SHMEM_GEN_AMO_NBI5_(SHMEM_G_AMO_BIT_, atomic_fetch_or_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_xor_nbi(...) SHMEM_BY_NARGS_(shmem_atomic_fetch_xor_nbi_g, __VA_ARGS__)
#define shmem_atomic_fetch_xor_nbi_g4(...) SHMEM_GEN_AMO_NBI4_(SHMEM_G_AMO_BIT_, atomic_fetch_xor_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_xor_nbi_g5(...) SHMEM_GEN_AMO_NBI5_(SHMEM_G_AMO_BIT_, atomic_fetch_xor_nbi, __VA_ARGS__)

/* ---- point-to-point synchronization (no context forms) */
#define shmem_wait_until(ivar, cmp, v) SHMEM_GEN_(SHMEM_G_SYNC_, *(ivar), wait_until)(ivar, cmp, v)
#define shmem_test(ivar, cmp, v) SHMEM_GEN_(SHMEM_G_SYNC_, *(ivar), test)(ivar, cmp, v)
#define SHMEM_GEN_SYNC_(OP, ivars, ...) SHMEM_GEN_(SHMEM_G_SYNC_, *(ivars), OP)(ivars, __VA_ARGS__)
#define shmem_wait_until_all(...) SHMEM_GEN_SYNC_(wait_until_all, __VA_ARGS__)
#define shmem_wait_until_any(...) SHMEM_GEN_SYNC_(wait_until_any, __VA_ARGS__)
#define shmem_wait_until_some(...) SHMEM_GEN_SYNC_(wait_until_some, __VA_ARGS__)
#define shmem_wait_until_all_vector(...) SHMEM_GEN_SYNC_(wait_until_all_vector, __VA_ARGS__)
#define shmem_wait_until_any_vector(...) SHMEM_GEN_SYNC_(wait_until_any_vector, __VA_ARGS__)
#define shmem_wait_until_some_vector(...) SHMEM_GEN_SYNC_(wait_until_some_vector, __VA_ARGS__)
#define shmem_test_all(...) SHMEM_GEN_SYNC_(test_all, __VA_ARGS__)
#define shmem_test_any(...) SHMEM_GEN_SYNC_(test_any, __VA_ARGS__)
#define shmem_test_some(...) SHMEM_GEN_SYNC_(test_some, __VA_ARGS__)
#define shmem_test_all_vector(...) SHMEM_GEN_SYNC_(test_all_vector, __VA_ARGS__)
#define shmem_test_any_vector(...) SHMEM_GEN_SYNC_(test_any_vector, __VA_ARGS__)
#define shmem_test_some_vector(...) SHMEM_GEN_SYNC_(test_some_vector, __VA_ARGS__)

/* ---- collectives: (team, dest, source, ...) */
#define SHMEM_GEN_COLL_(TABLE, OP, team, d, ...) SHMEM_GEN_(TABLE, *(d), OP)(team, d, __VA_ARGS__)
#define shmem_broadcast(...) SHMEM_GEN_COLL_(SHMEM_G_RMA_, broadcast, __VA_ARGS__)
#define shmem_collect(...) SHMEM_GEN_COLL_(SHMEM_G_RMA_, collect, __VA_ARGS__)
#define shmem_fcollect(...) SHMEM_GEN_COLL_(SHMEM_G_RMA_, fcollect, __VA_ARGS__)
#define shmem_alltoall(...) SHMEM_GEN_COLL_(SHMEM_G_RMA_, alltoall, __VA_ARGS__)
#define shmem_alltoalls(...) SHMEM_GEN_COLL_(SHMEM_G_RMA_, alltoalls, __VA_ARGS__)
#define shmem_and_reduce(...) SHMEM_GEN_COLL_(SHMEM_G_BIT_RED_, and_reduce, __VA_ARGS__)
#define shmem_or_reduce(...) SHMEM_GEN_COLL_(SHMEM_G_BIT_RED_, or_reduce, __VA_ARGS__)
#define shmem_xor_reduce(...) SHMEM_GEN_COLL_(SHMEM_G_BIT_RED_, xor_reduce, __VA_ARGS__)
#define shmem_max_reduce(...) SHMEM_GEN_COLL_(SHMEM_G_MINMAX_RED_, max_reduce, __VA_ARGS__)
#define shmem_min_reduce(...) SHMEM_GEN_COLL_(SHMEM_G_MINMAX_RED_, min_reduce, __VA_ARGS__)
#define shmem_sum_reduce(...) SHMEM_GEN_COLL_(SHMEM_G_ARITH_RED_, sum_reduce, __VA_ARGS__)
#define shmem_prod_reduce(...) SHMEM_GEN_COLL_(SHMEM_G_ARITH_RED_, prod_reduce, __VA_ARGS__)

/* ---- the 1.3 generic atomics (deprecated since 1.4): on int, long, long long, and for swap,
 * fetch and set also float and double. shmem_swap is also the 1.0 function on long (its symbol
 * stays); as a generic name it picks by the target's type, so a 32-bit int gets a 32-bit
 * exchange */
#define SHMEM_G_DEP_AMO_(E, OP) E(int, int, OP) E(long, long, OP) E(long long, longlong, OP)
#define SHMEM_G_DEP_AMO_EXT_(E, OP) SHMEM_G_DEP_AMO_(E, OP) E(float, float, OP) E(double, double, OP)
#define shmem_swap(dest, value, pe) SHMEM_GEN_(SHMEM_G_DEP_AMO_EXT_, *(dest), swap)(dest, value, pe)
#define shmem_fetch(source, pe) SHMEM_GEN_(SHMEM_G_DEP_AMO_EXT_, *(source), fetch)(source, pe)
#define shmem_set(dest, value, pe) SHMEM_GEN_(SHMEM_G_DEP_AMO_EXT_, *(dest), set)(dest, value, pe)
#define shmem_cswap(dest, cond, value, pe) SHMEM_GEN_(SHMEM_G_DEP_AMO_, *(dest), cswap)(dest, cond, value, pe)
#define shmem_finc(dest, pe) SHMEM_GEN_(SHMEM_G_DEP_AMO_, *(dest), finc)(dest, pe)
#define shmem_inc(dest, pe) SHMEM_GEN_(SHMEM_G_DEP_AMO_, *(dest), inc)(dest, pe)
#define shmem_fadd(dest, value, pe) SHMEM_GEN_(SHMEM_G_DEP_AMO_, *(dest), fadd)(dest, value, pe)
#define shmem_add(dest, value, pe) SHMEM_GEN_(SHMEM_G_DEP_AMO_, *(dest), add)(dest, value, pe)

#elif defined(__cplusplus)

/* C++: every generic name of 1.5 as overloaded inline functions over the same standard C
 * types as the C11 forms (the complex reductions over std::complex<float/double>), with and
 * without a context where C11 has both. */
#define SHMEM_CXX_TYPES_(X)                                                                    \
    X(float, float) X(double, double) X(long double, longdouble) X(char, char)                 \
    X(signed char, schar) X(short, short) X(int, int) X(long, long) X(long long, longlong)     \
    X(unsigned char, uchar) X(unsigned short, ushort) X(unsigned int, uint)                    \
    X(unsigned long, ulong) X(unsigned long long, ulonglong)
#define SHMEM_CXX_AMO_TYPES_(X)                                                                \
    X(int, int) X(long, long) X(long long, longlong) X(unsigned int, uint)                     \
    X(unsigned long, ulong) X(unsigned long long, ulonglong)
#define SHMEM_CXX_AMO_EXT_TYPES_(X) SHMEM_CXX_AMO_TYPES_(X) X(float, float) X(double, double)
#define SHMEM_CXX_UNSIGNED_BIT_TYPES_(X)                                                       \
    X(unsigned int, uint) X(unsigned long, ulong) X(unsigned long long, ulonglong)
#define SHMEM_CXX_AMO_BIT_TYPES_(X) SHMEM_CXX_UNSIGNED_BIT_TYPES_(X) X(int32_t, int32) X(int64_t, int64)
#define SHMEM_CXX_BIT_RED_TYPES_(X)                                                            \
    X(unsigned char, uchar) X(unsigned short, ushort) SHMEM_CXX_UNSIGNED_BIT_TYPES_(X)         \
    X(int8_t, int8) X(int16_t, int16) X(int32_t, int32) X(int64_t, int64)
#define SHMEM_CXX_MINMAX_RED_TYPES_(X)                                                         \
    X(char, char) X(signed char, schar) X(short, short) X(int, int) X(long, long)              \
    X(long long, longlong) X(unsigned char, uchar) X(unsigned short, ushort)                   \
    SHMEM_CXX_UNSIGNED_BIT_TYPES_(X) X(float, float) X(double, double) X(long double, longdouble)
#define SHMEM_CXX_ARITH_RED_TYPES_(X) SHMEM_CXX_MINMAX_RED_TYPES_(X) SHMEM_X_COMPLEX_TYPES(X)

/* ---- RMA and the team collectives over them */
#define SHMEM_CXX_RMA_(T, N)                                                                   \
    inline void shmem_put(T *d, const T *s, size_t n, int pe) { shmem_##N##_put(d, s, n, pe); } \
    inline void shmem_put(shmem_ctx_t c, T *d, const T *s, size_t n, int pe)                   \
    { shmem_ctx_##N##_put(c, d, s, n, pe); }                                                   \
    inline void shmem_put_nbi(T *d, const T *s, size_t n, int pe) { shmem_##N##_put_nbi(d, s, n, pe); } \
    inline void shmem_put_nbi(shmem_ctx_t c, T *d, const T *s, size_t n, int pe)               \
    { shmem_ctx_##N##_put_nbi(c, d, s, n, pe); }                                               \
    inline void shmem_get(T *d, const T *s, size_t n, int pe) { shmem_##N##_get(d, s, n, pe); } \
    inline void shmem_get(shmem_ctx_t c, T *d, const T *s, size_t n, int pe)                   \
    { shmem_ctx_##N##_get(c, d, s, n, pe); }                                                   \
    inline void shmem_get_nbi(T *d, const T *s, size_t n, int pe) { shmem_##N##_get_nbi(d, s, n, pe); } \
    inline void shmem_get_nbi(shmem_ctx_t c, T *d, const T *s, size_t n, int pe)               \
    { shmem_ctx_##N##_get_nbi(c, d, s, n, pe); }                                               \
    inline void shmem_p(T *d, T v, int pe) { shmem_##N##_p(d, v, pe); }                        \
    inline void shmem_p(shmem_ctx_t c, T *d, T v, int pe) { shmem_ctx_##N##_p(c, d, v, pe); }  \
    inline T shmem_g(const T *s, int pe) { return shmem_##N##_g(s, pe); }                      \
    inline T shmem_g(shmem_ctx_t c, const T *s, int pe) { return shmem_ctx_##N##_g(c, s, pe); } \
    inline void shmem_iput(T *d, const T *s, ptrdiff_t ds, ptrdiff_t ss, size_t n, int pe)     \
    { shmem_##N##_iput(d, s, ds, ss, n, pe); }                                                 \
    inline void shmem_iput(shmem_ctx_t c, T *d, const T *s, ptrdiff_t ds, ptrdiff_t ss, size_t n, \
                           int pe)                                                             \
    { shmem_ctx_##N##_iput(c, d, s, ds, ss, n, pe); }                                          \
    inline void shmem_iget(T *d, const T *s, ptrdiff_t ds, ptrdiff_t ss, size_t n, int pe)     \
    { shmem_##N##_iget(d, s, ds, ss, n, pe); }                                                 \
    inline void shmem_iget(shmem_ctx_t c, T *d, const T *s, ptrdiff_t ds, ptrdiff_t ss, size_t n, \
                           int pe)                                                             \
    { shmem_ctx_##N##_iget(c, d, s, ds, ss, n, pe); }                                          \
    inline void shmem_put_signal(T *d, const T *s, size_t n, uint64_t *sa, uint64_t sv, int so, int pe) \
    { shmem_##N##_put_signal(d, s, n, sa, sv, so, pe); }                                       \
    inline void shmem_put_signal(shmem_ctx_t c, T *d, const T *s, size_t n, uint64_t *sa,      \
                                 uint64_t sv, int so, int pe)                                  \
    { shmem_ctx_##N##_put_signal(c, d, s, n, sa, sv, so, pe); }                                \
    inline void shmem_put_signal_nbi(T *d, const T *s, size_t n, uint64_t *sa, uint64_t sv,    \
                                     int so, int pe)                                           \
    { shmem_##N##_put_signal_nbi(d, s, n, sa, sv, so, pe); }                                   \
    inline void shmem_put_signal_nbi(shmem_ctx_t c, T *d, const T *s, size_t n, uint64_t *sa,  \
                                     uint64_t sv, int so, int pe)                              \
    { shmem_ctx_##N##_put_signal_nbi(c, d, s, n, sa, sv, so, pe); }                            \
    inline int shmem_broadcast(shmem_team_t t, T *d, const T *s, size_t n, int root)           \
    { return shmem_##N##_broadcast(t, d, s, n, root); }                                        \
    inline int shmem_collect(shmem_team_t t, T *d, const T *s, size_t n)                       \
    { return shmem_##N##_collect(t, d, s, n); }                                                \
    inline int shmem_fcollect(shmem_team_t t, T *d, const T *s, size_t n)                      \
    { return shmem_##N##_fcollect(t, d, s, n); }                                               \
    inline int shmem_alltoall(shmem_team_t t, T *d, const T *s, size_t n)                      \
    { return shmem_##N##_alltoall(t, d, s, n); }                                               \
    inline int shmem_alltoalls(shmem_team_t t, T *d, const T *s, ptrdiff_t ds, ptrdiff_t ss, size_t n) \
    { return shmem_##N##_alltoalls(t, d, s, ds, ss, n); }

/* ---- AMO: fetch / set / swap (also float, double) */
#define SHMEM_CXX_AMO_EXT_(T, N)                                                               \
    inline T shmem_atomic_fetch(const T *s, int pe) { return shmem_##N##_atomic_fetch(s, pe); } \
    inline T shmem_atomic_fetch(shmem_ctx_t c, const T *s, int pe)                             \
    { return shmem_ctx_##N##_atomic_fetch(c, s, pe); }                                         \
    inline void shmem_atomic_set(T *d, T v, int pe) { shmem_##N##_atomic_set(d, v, pe); }      \
    inline void shmem_atomic_set(shmem_ctx_t c, T *d, T v, int pe)                             \
    { shmem_ctx_##N##_atomic_set(c, d, v, pe); }                                               \
    inline T shmem_atomic_swap(T *d, T v, int pe) { return shmem_##N##_atomic_swap(d, v, pe); } \
    inline T shmem_atomic_swap(shmem_ctx_t c, T *d, T v, int pe)                               \
    { return shmem_ctx_##N##_atomic_swap(c, d, v, pe); }                                       \
    inline void shmem_atomic_fetch_nbi(T *f, const T *s, int pe)                               \
    { shmem_##N##_atomic_fetch_nbi(f, s, pe); }                                                \
    inline void shmem_atomic_fetch_nbi(shmem_ctx_t c, T *f, const T *s, int pe)                \
    { shmem_ctx_##N##_atomic_fetch_nbi(c, f, s, pe); }                                         \
    inline void shmem_atomic_swap_nbi(T *f, T *d, T v, int pe)                                 \
    { shmem_##N##_atomic_swap_nbi(f, d, v, pe); }                                              \
    inline void shmem_atomic_swap_nbi(shmem_ctx_t c, T *f, T *d, T v, int pe)                  \
    { shmem_ctx_##N##_atomic_swap_nbi(c, f, d, v, pe); }
/* fetch_OP / OP / fetch_OP_nbi for an operand OP (add, and, or, xor) */
#define SHMEM_CXX_AMO_OP_(T, N, OP)                                                            \
    inline T shmem_atomic_fetch_##OP(T *d, T v, int pe) { return shmem_##N##_atomic_fetch_##OP(d, v, pe); } \
    inline T shmem_atomic_fetch_##OP(shmem_ctx_t c, T *d, T v, int pe)                         \
    { return shmem_ctx_##N##_atomic_fetch_##OP(c, d, v, pe); }                                 \
    inline void shmem_atomic_##OP(T *d, T v, int pe) { shmem_##N##_atomic_##OP(d, v, pe); }    \
    inline void shmem_atomic_##OP(shmem_ctx_t c, T *d, T v, int pe)                            \
    { shmem_ctx_##N##_atomic_##OP(c, d, v, pe); }                                              \
    inline void shmem_atomic_fetch_##OP##_nbi(T *f, T *d, T v, int pe)                         \
    { shmem_##N##_atomic_fetch_##OP##_nbi(f, d, v, pe); }                                      \
    inline void shmem_atomic_fetch_##OP##_nbi(shmem_ctx_t c, T *f, T *d, T v, int pe)          \
    { shmem_ctx_##N##_atomic_fetch_##OP##_nbi(c, f, d, v, pe); }
/* ---- AMO: the standard types */
#define SHMEM_CXX_AMO_(T, N)                                                                   \
    inline T shmem_atomic_compare_swap(T *d, T k, T v, int pe)                                 \
    { return shmem_##N##_atomic_compare_swap(d, k, v, pe); }                                   \
    inline T shmem_atomic_compare_swap(shmem_ctx_t c, T *d, T k, T v, int pe)                  \
    { return shmem_ctx_##N##_atomic_compare_swap(c, d, k, v, pe); }                            \
    inline void shmem_atomic_compare_swap_nbi(T *f, T *d, T k, T v, int pe)                    \
    { shmem_##N##_atomic_compare_swap_nbi(f, d, k, v, pe); }                                   \
    inline void shmem_atomic_compare_swap_nbi(shmem_ctx_t c, T *f, T *d, T k, T v, int pe)     \
    { shmem_ctx_##N##_atomic_compare_swap_nbi(c, f, d, k, v, pe); }                            \
    inline T shmem_atomic_fetch_inc(T *d, int pe) { return shmem_##N##_atomic_fetch_inc(d, pe); } \
    inline T shmem_atomic_fetch_inc(shmem_ctx_t c, T *d, int pe)                               \
    { return shmem_ctx_##N##_atomic_fetch_inc(c, d, pe); }                                     \
    inline void shmem_atomic_inc(T *d, int pe) { shmem_##N##_atomic_inc(d, pe); }             \
    inline void shmem_atomic_inc(shmem_ctx_t c, T *d, int pe) { shmem_ctx_##N##_atomic_inc(c, d, pe); } \
    inline void shmem_atomic_fetch_inc_nbi(T *f, T *d, int pe)                                 \
    { shmem_##N##_atomic_fetch_inc_nbi(f, d, pe); }                                            \
    inline void shmem_atomic_fetch_inc_nbi(shmem_ctx_t c, T *f, T *d, int pe)                  \
    { shmem_ctx_##N##_atomic_fetch_inc_nbi(c, f, d, pe); }                                     \
    SHMEM_CXX_AMO_OP_(T, N, add)
#define SHMEM_CXX_AMO_BIT_(T, N)                                                               \
    SHMEM_CXX_AMO_OP_(T, N, and) SHMEM_CXX_AMO_OP_(T, N, or) SHMEM_CXX_AMO_OP_(T, N, xor)

/* ---- point-to-point synchronization (no context forms, as in C) */
#define SHMEM_CXX_SYNC_(T, N)                                                                  \
    inline void shmem_wait_until(T *i, int cmp, T v) { shmem_##N##_wait_until(i, cmp, v); }    \
    inline int shmem_test(T *i, int cmp, T v) { return shmem_##N##_test(i, cmp, v); }          \
    inline void shmem_wait_until_all(T *i, size_t n, const int *st, int cmp, T v)              \
    { shmem_##N##_wait_until_all(i, n, st, cmp, v); }                                          \
    inline size_t shmem_wait_until_any(T *i, size_t n, const int *st, int cmp, T v)            \
    { return shmem_##N##_wait_until_any(i, n, st, cmp, v); }                                   \
    inline size_t shmem_wait_until_some(T *i, size_t n, size_t *idx, const int *st, int cmp, T v) \
    { return shmem_##N##_wait_until_some(i, n, idx, st, cmp, v); }                             \
    inline void shmem_wait_until_all_vector(T *i, size_t n, const int *st, int cmp, T *vs)     \
    { shmem_##N##_wait_until_all_vector(i, n, st, cmp, vs); }                                  \
    inline size_t shmem_wait_until_any_vector(T *i, size_t n, const int *st, int cmp, T *vs)   \
    { return shmem_##N##_wait_until_any_vector(i, n, st, cmp, vs); }                          \
    inline size_t shmem_wait_until_some_vector(T *i, size_t n, size_t *idx, const int *st, int cmp, \
                                               T *vs)                                          \
    { return shmem_##N##_wait_until_some_vector(i, n, idx, st, cmp, vs); }                     \
    inline int shmem_test_all(T *i, size_t n, const int *st, int cmp, T v)                     \
    { return shmem_##N##_test_all(i, n, st, cmp, v); }                                         \
    inline size_t shmem_test_any(T *i, size_t n, const int *st, int cmp, T v)                  \
    { return shmem_##N##_test_any(i, n, st, cmp, v); }                                         \
    inline size_t shmem_test_some(T *i, size_t n, size_t *idx, const int *st, int cmp, T v)    \
    { return shmem_##N##_test_some(i, n, idx, st, cmp, v); }                                   \
    inline int shmem_test_all_vector(T *i, size_t n, const int *st, int cmp, T *vs)            \
    { return shmem_##N##_test_all_vector(i, n, st, cmp, vs); }                                 \
    inline size_t shmem_test_any_vector(T *i, size_t n, const int *st, int cmp, T *vs)         \
    { return shmem_##N##_test_any_vector(i, n, st, cmp, vs); }                                 \
    inline size_t shmem_test_some_vector(T *i, size_t n, size_t *idx, const int *st, int cmp, T *vs) \
    { return shmem_##N##_test_some_vector(i, n, idx, st, cmp, vs); }

/* ---- reductions: shmem_<OP>_reduce(team, dest, source, nreduce) */
#define SHMEM_CXX_REDUCE_(T, N, OP)                                                            \
    inline int shmem_##OP##_reduce(shmem_team_t t, T *d, const T *s, size_t n)                 \
    { return shmem_##N##_##OP##_reduce(t, d, s, n); }
#define SHMEM_CXX_REDUCE_BIT_(T, N) SHMEM_X_BIT_OPS(SHMEM_CXX_REDUCE_, T, N)
#define SHMEM_CXX_REDUCE_MINMAX_(T, N) SHMEM_X_MINMAX_OPS(SHMEM_CXX_REDUCE_, T, N)
#define SHMEM_CXX_REDUCE_ARITH_(T, N) SHMEM_X_ARITH_OPS(SHMEM_CXX_REDUCE_, T, N)

/* ---- the 1.3 generic atomics (deprecated since 1.4); shmem_swap on long is the 1.0 function */
#define SHMEM_CXX_DEP_AMO_EXT_(T, N)                                                           \
    inline T shmem_fetch(const T *s, int pe) { return shmem_##N##_fetch(s, pe); }            \
    inline void shmem_set(T *d, T v, int pe) { shmem_##N##_set(d, v, pe); }
#define SHMEM_CXX_DEP_SWAP_(T, N)                                                              \
    inline T shmem_swap(T *d, T v, int pe) { return shmem_##N##_swap(d, v, pe); }
#define SHMEM_CXX_DEP_AMO_(T, N)                                                               \
    SHMEM_CXX_DEP_AMO_EXT_(T, N)                                                               \
    inline T shmem_cswap(T *d, T c, T v, int pe) { return shmem_##N##_cswap(d, c, v, pe); }   \
    inline T shmem_finc(T *d, int pe) { return shmem_##N##_finc(d, pe); }                    \
    inline void shmem_inc(T *d, int pe) { shmem_##N##_inc(d, pe); }                           \
    inline T shmem_fadd(T *d, T v, int pe) { return shmem_##N##_fadd(d, v, pe); }            \
    inline void shmem_add(T *d, T v, int pe) { shmem_##N##_add(d, v, pe); }

extern "C++" {
SHMEM_X_DEP_AMO_TYPES(SHMEM_CXX_DEP_AMO_)
SHMEM_X_DEP_AMO_EXT_TYPES(SHMEM_CXX_DEP_AMO_EXT_)
SHMEM_CXX_DEP_SWAP_(int, int) SHMEM_CXX_DEP_SWAP_(long long, longlong)
SHMEM_CXX_DEP_SWAP_(float, float) SHMEM_CXX_DEP_SWAP_(double, double)
SHMEM_CXX_TYPES_(SHMEM_CXX_RMA_)
SHMEM_CXX_AMO_EXT_TYPES_(SHMEM_CXX_AMO_EXT_)
SHMEM_CXX_AMO_TYPES_(SHMEM_CXX_AMO_)
SHMEM_CXX_AMO_BIT_TYPES_(SHMEM_CXX_AMO_BIT_)
SHMEM_CXX_AMO_TYPES_(SHMEM_CXX_SYNC_)
SHMEM_X_DEP_SYNC_TYPES(SHMEM_CXX_SYNC_) /* deprecated */
SHMEM_CXX_BIT_RED_TYPES_(SHMEM_CXX_REDUCE_BIT_)
SHMEM_CXX_MINMAX_RED_TYPES_(SHMEM_CXX_REDUCE_MINMAX_)
SHMEM_CXX_ARITH_RED_TYPES_(SHMEM_CXX_REDUCE_ARITH_)
}

/* ---- the complex reductions on the C types too: C++ code that keeps C's complex types
 * (GCC and Clang take `double _Complex` in C++), the typed 1.5 calls, the generic ones and the
 * deprecated *_to_all, over the std::complex functions (the same layout: an array of two) */
#if defined(__GNUC__)
#define SHMEM_CXX_CCOMPLEX_OP_(C, S, N, OP)                                                         inline int shmem_##N##_##OP##_reduce(shmem_team_t t, C *d, const C *s, size_t n)                { return shmem_##N##_##OP##_reduce(t, reinterpret_cast<S *>(d), reinterpret_cast<const S *>(s), n); }     inline int shmem_##OP##_reduce(shmem_team_t t, C *d, const C *s, size_t n)                      { return shmem_##N##_##OP##_reduce(t, reinterpret_cast<S *>(d), reinterpret_cast<const S *>(s), n); }     inline void shmem_##N##_##OP##_to_all(C *d, const C *s, int n, int st, int ls, int sz, C *w, long *ps)     { shmem_##N##_##OP##_to_all(reinterpret_cast<S *>(d), reinterpret_cast<const S *>(s), n, st, ls, sz,                                    reinterpret_cast<S *>(w), ps); }
#define SHMEM_CXX_CCOMPLEX_(C, S, N) SHMEM_CXX_CCOMPLEX_OP_(C, S, N, sum) SHMEM_CXX_CCOMPLEX_OP_(C, S, N, prod)
extern "C++" {
SHMEM_CXX_CCOMPLEX_(double _Complex, std::complex<double>, complexd)
SHMEM_CXX_CCOMPLEX_(float _Complex, std::complex<float>, complexf)
}
#endif

#endif
#endif /* DUET_SHMEM_GENERIC_H */
