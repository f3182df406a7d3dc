/*
 * duet_device_amo.cuh — the device API's atomics on symmetric integers of a pe.
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
 * T: int32_t, uint32_t, int64_t, uint64_t (any 4- or 8-byte integer). System-scope atomic
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
    static_assert(duet_dev_detail::is_amo_<T>::value && std::is_integral<T>::value,
                  "4- or 8-byte integers only");
    using W = typename duet_dev_detail::amo_word_<T>::type;
    if (duet_dev_detail::remote_(h, pe))
        return (T)duet_dev_detail::px_amo_(h, dest, DUET_PROXY_AMO_SWAP, true, (uint64_t)(W)value, 0, pe);
    return (T)atomicExch_system((W *)duet_dev_detail::mapped_ptr_(h, dest, pe), (W)value);
}
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
