/*
 * duet_device_amo.cuh — the device API's atomics on symmetric integers of a pe (and the
 * fetch, set and swap of 4- and 8-byte floats).
 *
 * A part of the device API: include duet/duet_device.cuh (its conventions, memory model and
 * proxy path are described there), never this file alone.
 */
#ifndef DUET_DEVICE_AMO_CUH
#define DUET_DEVICE_AMO_CUH

#ifndef DUET_DEVICE_CUH
#error "include duet/duet_device.cuh, not duet/duet_device_amo.cuh"
#endif

/* ------------------------------------------------------------------------------------
 * Atomics on symmetric integers of pe (thread scope)
 *
 * T: int32_t, uint32_t, int64_t, uint64_t (any 4- or 8-byte integer); fetch, set and swap
 * also take float and double (by their bits). System-scope atomic
 * read-modify-writes (atom.sys / red.sys, relaxed): atomic with respect to every Duet device
 * atomic on the same object from any pe on this node, unordered with other accesses (use
 * fence / quiet, or a signal). Fetching forms return the old value; fetch returns the
 * current value (ld.relaxed.sys), set stores one (st.relaxed.sys).
 * ------------------------------------------------------------------------------------ */
namespace duet_dev_detail {
template <typename T> struct amo_word_ {
    using type = typename std::conditional<sizeof(T) == 4, unsigned int, unsigned long long>::type;
};
} /* namespace duet_dev_detail */

template <typename T>
static __device__ __forceinline__ T duet_dev_atomic_fetch_add(const duet_device_comm_t &h, T *dest,
    typename duet_dev_detail::same_<T>::type value, int pe)
{
    static_assert(duet_dev_detail::is_amo_<T>::value && std::is_integral<T>::value,
                  "4- or 8-byte integers only");
    using W = typename duet_dev_detail::amo_word_<T>::type;
    if (duet_dev_detail::remote_(h, pe))
        return (T)duet_dev_detail::px_amo_(h, dest, DUET_PROXY_AMO_ADD, true, (uint64_t)(W)value, 0, pe);
    return (T)atomicAdd_system((W *)duet_dev_detail::mapped_ptr_(h, dest, pe), (W)value);
}
template <typename T>
static __device__ __forceinline__ void duet_dev_atomic_add(const duet_device_comm_t &h, T *dest,
    typename duet_dev_detail::same_<T>::type value, int pe)
{
    using W = typename duet_dev_detail::amo_word_<T>::type;
    if (duet_dev_detail::remote_(h, pe)) { /* not waited for */
        (void)duet_dev_detail::px_amo_(h, dest, DUET_PROXY_AMO_ADD, false, (uint64_t)(W)value, 0, pe);
        return;
    }
    (void)duet_dev_atomic_fetch_add(h, dest, value, pe); /* unused result: compiles to red.sys */
}
template <typename T>
static __device__ __forceinline__ T duet_dev_atomic_fetch_inc(const duet_device_comm_t &h, T *dest, int pe)
{
    return duet_dev_atomic_fetch_add(h, dest, (T)1, pe);
}
template <typename T>
static __device__ __forceinline__ void duet_dev_atomic_inc(const duet_device_comm_t &h, T *dest, int pe)
{
    duet_dev_atomic_add(h, dest, (T)1, pe);
}
template <typename T>
static __device__ __forceinline__ T duet_dev_atomic_compare_swap(const duet_device_comm_t &h, T *dest,
    typename duet_dev_detail::same_<T>::type cond, typename duet_dev_detail::same_<T>::type value,
    int pe)
{
    static_assert(duet_dev_detail::is_amo_<T>::value && std::is_integral<T>::value,
                  "4- or 8-byte integers only");
    using W = typename duet_dev_detail::amo_word_<T>::type;
    if (duet_dev_detail::remote_(h, pe))
        return (T)duet_dev_detail::px_amo_(h, dest, DUET_PROXY_AMO_CSWAP, true, (uint64_t)(W)value, (uint64_t)(W)cond,
                                           pe);
    return (T)atomicCAS_system((W *)duet_dev_detail::mapped_ptr_(h, dest, pe), (W)cond, (W)value);
}
template <typename T>
static __device__ __forceinline__ T duet_dev_atomic_swap(const duet_device_comm_t &h, T *dest,
    typename duet_dev_detail::same_<T>::type value, int pe)
{
    static_assert(duet_dev_detail::is_amo_<T>::value, "4- or 8-byte types only (floats swap by their bits)");
    using W = typename duet_dev_detail::amo_word_<T>::type;
    if (duet_dev_detail::remote_(h, pe))
        return duet_dev_detail::from_wbits_<T>(
            duet_dev_detail::px_amo_(h, dest, DUET_PROXY_AMO_SWAP, true, duet_dev_detail::wbits_<T>(value), 0, pe));
    W old = atomicExch_system((W *)duet_dev_detail::mapped_ptr_(h, dest, pe), duet_dev_detail::bits_<W>(value));
    return duet_dev_detail::bits_<T>(old);
}

/* Bitwise and / or / xor of a symmetric integer of pe (fetch_ forms return the old value). A
 * remote pe's (the host proxy has no bitwise operation) runs as a fetch and compare-and-swap
 * loop through the proxy: atomic all the same, a round trip per try. */
namespace duet_dev_detail {
enum { BIT_AND_, BIT_OR_, BIT_XOR_ };
template <typename T>
static __device__ __forceinline__ T bitwise_(const duet_device_comm_t &h, T *dest, T value, int op, int pe)
{
    static_assert(is_amo_<T>::value && std::is_integral<T>::value, "4- or 8-byte integers only");
    using W = typename amo_word_<T>::type;
    if (remote_(h, pe)) {
        W old = (W)px_amo_(h, dest, DUET_PROXY_AMO_FETCH, true, 0, 0, pe);
        for (;;) {
            W want = op == BIT_AND_ ? (W)(old & (W)value) : op == BIT_OR_ ? (W)(old | (W)value) : (W)(old ^ (W)value);
            W got = (W)px_amo_(h, dest, DUET_PROXY_AMO_CSWAP, true, (uint64_t)want, (uint64_t)old, pe);
            if (got == old) return (T)old; /* (a failed proxy call returns 0 and ends here too) */
            old = got;
        }
    }
    W *p = (W *)mapped_ptr_(h, dest, pe);
    return (T)(op == BIT_AND_ ? atomicAnd_system(p, (W)value)
                              : op == BIT_OR_ ? atomicOr_system(p, (W)value) : atomicXor_system(p, (W)value));
}
} /* namespace duet_dev_detail */
#define DUET_DEV_BITWISE_(NAME, OP)                                                                          \
    template <typename T>                                                                                    \
    static __device__ __forceinline__ T duet_dev_atomic_fetch_##NAME(const duet_device_comm_t &h, T *dest,   \
                                                                     typename duet_dev_detail::same_<T>::type \
                                                                         value,                              \
                                                                     int pe)                                 \
    {                                                                                                        \
        return duet_dev_detail::bitwise_<T>(h, dest, value, duet_dev_detail::OP, pe);                        \
    }                                                                                                        \
    template <typename T>                                                                                    \
    static __device__ __forceinline__ void duet_dev_atomic_##NAME(const duet_device_comm_t &h, T *dest,      \
                                                                  typename duet_dev_detail::same_<T>::type    \
                                                                      value,                                 \
                                                                  int pe)                                    \
    {                                                                                                        \
        (void)duet_dev_atomic_fetch_##NAME<T>(h, dest, value, pe); /* the result unused: red.sys */          \
    }
DUET_DEV_BITWISE_(and, BIT_AND_)
DUET_DEV_BITWISE_(or, BIT_OR_)
DUET_DEV_BITWISE_(xor, BIT_XOR_)
#undef DUET_DEV_BITWISE_
template <typename T>
static __device__ __forceinline__ T duet_dev_atomic_fetch(const duet_device_comm_t &h, const T *src,
                                                          int pe)
{
    if (duet_dev_detail::remote_(h, pe))
        return duet_dev_detail::from_wbits_<T>(duet_dev_detail::px_amo_(h, src, DUET_PROXY_AMO_FETCH, true, 0, 0, pe));
    return duet_dev_detail::ld_relaxed(duet_dev_detail::mapped_ptr_(h, src, pe));
}
template <typename T>
static __device__ __forceinline__ void duet_dev_atomic_set(const duet_device_comm_t &h, T *dest,
    typename duet_dev_detail::same_<T>::type value, int pe)
{
    if (duet_dev_detail::remote_(h, pe)) {
        (void)duet_dev_detail::px_amo_(h, dest, DUET_PROXY_AMO_SET, false, duet_dev_detail::wbits_<T>(value), 0, pe);
        return;
    }
    duet_dev_detail::st_relaxed(duet_dev_detail::mapped_ptr_(h, dest, pe), value);
}

#endif /* DUET_DEVICE_AMO_CUH */
