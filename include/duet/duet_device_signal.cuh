/*
 * duet_device_signal.cuh — the device API's signals (put_signal, signal_op,
 * signal_fetch) and the point-to-point waits on my own symmetric words (wait_until, test,
 * signal_wait_until).
 *
 * A part of the device API: include duet/duet_device.cuh (its conventions, memory model and
 * proxy path are described there), never this file alone.
 */
#ifndef DUET_DEVICE_SIGNAL_CUH
#define DUET_DEVICE_SIGNAL_CUH

#ifndef DUET_DEVICE_CUH
#error "include duet/duet_device.cuh, not duet/duet_device_signal.cuh"
#endif

/* ------------------------------------------------------------------------------------
 * Signals: a signal is a symmetric uint64_t.
 *
 * put_signal: the put, then the signal on pe is set to value (DUET_SIGNAL_SET) or has value
 * added (DUET_SIGNAL_ADD) with release semantics, so a pe that sees the new signal value
 * through signal_wait_until (acquire) also sees all of the data. The _warp / _block forms
 * copy on every thread, sync the group, and one thread signals. The _nbi forms are the same
 * calls (the signal already waits for nothing); they exist for NVSHMEM-style code.
 * signal_op: the signal update alone, relaxed: ordered after earlier puts only with
 * duet_dev_fence() (as the host's duet_signal_op).
 * signal_fetch: my own signal's value (ld.acquire.sys).
 * signal_wait_until: polls my signal until it compares true (DUET_CMP_*) against value; the
 * value that satisfied it goes to *value_out (may be NULL). Acquire: the data of the
 * put_signal that set it is visible afterwards. Returns DUET_OK, DUET_ERR_INVALID_ARG for a
 * bad cmp, or the abort status.
 * ------------------------------------------------------------------------------------ */
static __device__ __forceinline__ void duet_dev_put_signal(const duet_device_comm_t &h, void *dest,
                                                           const void *src, size_t bytes,
                                                           uint64_t *sig_addr, uint64_t value,
                                                           int sig_op, int pe)
{
    if (duet_dev_detail::remote_(h, pe)) { /* data, then the signal, in the target's order */
        (void)duet_dev_detail::px_put_(h, dest, src, bytes, pe, true, sig_addr, value, sig_op);
        return;
    }
    duet_dev_put_nbi(h, dest, src, bytes, pe);
    duet_dev_detail::signal_release(duet_dev_detail::mapped_ptr_(h, sig_addr, pe), value, sig_op);
}
static __device__ __forceinline__ void duet_dev_put_signal_nbi(const duet_device_comm_t &h, void *dest,
                                                               const void *src, size_t bytes,
                                                               uint64_t *sig_addr, uint64_t value,
                                                               int sig_op, int pe)
{
    if (duet_dev_detail::remote_(h, pe)) {
        (void)duet_dev_detail::px_put_(h, dest, src, bytes, pe, false, sig_addr, value, sig_op);
        return;
    }
    duet_dev_put_signal(h, dest, src, bytes, sig_addr, value, sig_op, pe);
}
static __device__ __forceinline__ void duet_dev_put_signal_warp(const duet_device_comm_t &h, void *dest,
                                                                const void *src, size_t bytes,
                                                                uint64_t *sig_addr, uint64_t value,
                                                                int sig_op, int pe)
{
    if (duet_dev_detail::remote_(h, pe)) {
        duet_dev_detail::px_warp_(
            [&] { (void)duet_dev_detail::px_put_(h, dest, src, bytes, pe, true, sig_addr, value, sig_op); }, true);
        return;
    }
    duet_dev_put_warp_nbi(h, dest, src, bytes, pe);
    __syncwarp();
    if (duet_dev_detail::lane_id() == 0)
        duet_dev_detail::signal_release(duet_dev_detail::mapped_ptr_(h, sig_addr, pe), value, sig_op);
    __syncwarp();
}
static __device__ __forceinline__ void duet_dev_put_signal_warp_nbi(
    const duet_device_comm_t &h, void *dest, const void *src, size_t bytes, uint64_t *sig_addr,
    uint64_t value, int sig_op, int pe)
{
    if (duet_dev_detail::remote_(h, pe)) {
        duet_dev_detail::px_warp_(
            [&] { (void)duet_dev_detail::px_put_(h, dest, src, bytes, pe, false, sig_addr, value, sig_op); }, true);
        return;
    }
    duet_dev_put_signal_warp(h, dest, src, bytes, sig_addr, value, sig_op, pe);
}
static __device__ __forceinline__ void duet_dev_put_signal_block(const duet_device_comm_t &h, void *dest,
                                                                 const void *src, size_t bytes,
                                                                 uint64_t *sig_addr, uint64_t value,
                                                                 int sig_op, int pe)
{
    if (duet_dev_detail::remote_(h, pe)) {
        duet_dev_detail::px_block_(
            [&] { (void)duet_dev_detail::px_put_(h, dest, src, bytes, pe, true, sig_addr, value, sig_op); }, true);
        return;
    }
    duet_dev_put_block_nbi(h, dest, src, bytes, pe);
    __syncthreads();
    if (duet_dev_detail::block_tid() == 0)
        duet_dev_detail::signal_release(duet_dev_detail::mapped_ptr_(h, sig_addr, pe), value, sig_op);
}
static __device__ __forceinline__ void duet_dev_put_signal_block_nbi(
    const duet_device_comm_t &h, void *dest, const void *src, size_t bytes, uint64_t *sig_addr,
    uint64_t value, int sig_op, int pe)
{
    if (duet_dev_detail::remote_(h, pe)) {
        duet_dev_detail::px_block_(
            [&] { (void)duet_dev_detail::px_put_(h, dest, src, bytes, pe, false, sig_addr, value, sig_op); }, false);
        return;
    }
    duet_dev_put_signal_block(h, dest, src, bytes, sig_addr, value, sig_op, pe);
}

static __device__ __forceinline__ void duet_dev_signal_op(const duet_device_comm_t &h, uint64_t *sig_addr,
                                                          uint64_t value, int sig_op, int pe)
{
    if (duet_dev_detail::remote_(h, pe)) {
        (void)duet_dev_detail::px_signal_(h, sig_addr, value, sig_op, pe);
        return;
    }
    uint64_t *remote = duet_dev_detail::mapped_ptr_(h, sig_addr, pe);
    if (sig_op == DUET_SIGNAL_ADD) duet_dev_detail::red_relaxed_add_u64(remote, value);
    else duet_dev_detail::st_relaxed_u64(remote, value);
}
static __device__ __forceinline__ uint64_t duet_dev_signal_fetch(const uint64_t *sig_addr)
{
    return duet_dev_detail::ld_acquire_u64(sig_addr);
}

/* ------------------------------------------------------------------------------------
 * Point-to-point synchronization on my own symmetric words (thread scope)
 *
 * wait_until: polls *ivar (ld.acquire.sys) until `*ivar cmp value` holds (DUET_CMP_EQ, NE,
 * GT, GE, LT, LE, as duet.h); T is a 4- or 8-byte integer (int32_t, uint32_t, int64_t,
 * uint64_t). The satisfying value goes to *value_out (may be NULL). Returns DUET_OK,
 * DUET_ERR_INVALID_ARG for a bad cmp, or the abort status (checked every 256 polls).
 * test: one acquire read; 1 when the comparison holds, else 0.
 * ------------------------------------------------------------------------------------ */
template <typename T>
static __device__ __forceinline__ int duet_dev_wait_until(const duet_device_comm_t &h, const T *ivar,
                                                          int cmp, typename duet_dev_detail::same_<T>::type value,
                                                          T *value_out = nullptr)
{
    if (cmp < DUET_CMP_EQ || cmp > DUET_CMP_LE) return DUET_ERR_INVALID_ARG;
    for (unsigned spin = 1;; spin++) {
        T v = duet_dev_detail::ld_acquire(ivar);
        if (duet_dev_detail::cmp_(v, cmp, value)) {
            if (value_out) *value_out = v;
            return DUET_OK;
        }
        if (spin % duet_dev_detail::ABORT_EVERY == 0) {
            int st = duet_dev_detail::abort_status(h);
            if (st) return st;
        }
    }
}
template <typename T>
static __device__ __forceinline__ int duet_dev_test(const T *ivar, int cmp,
                                                   typename duet_dev_detail::same_<T>::type value)
{
    return duet_dev_detail::cmp_(duet_dev_detail::ld_acquire(ivar), cmp, value);
}
static __device__ __forceinline__ int duet_dev_signal_wait_until(const duet_device_comm_t &h,
                                                                 const uint64_t *sig_addr, int cmp,
                                                                 uint64_t value,
                                                                 uint64_t *value_out = nullptr)
{
    return duet_dev_wait_until<uint64_t>(h, sig_addr, cmp, value, value_out);
}

#endif /* DUET_DEVICE_SIGNAL_CUH */
