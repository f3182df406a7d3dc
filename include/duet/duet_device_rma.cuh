/*
 * duet_device_rma.cuh — the device API's data movement: single elements (p / g) and
 * bulk put / get, blocking and _nbi, at thread, warp and block scope.
 *
 * A part of the device API: include duet/duet_device.cuh (its conventions, memory model and
 * proxy path are described there), never this file alone.
 */
#ifndef DUET_DEVICE_RMA_CUH
#define DUET_DEVICE_RMA_CUH

#ifndef DUET_DEVICE_CUH
#error "include duet/duet_device.cuh, not duet/duet_device_rma.cuh"
#endif

/* ------------------------------------------------------------------------------------
 * Single elements: p / g (thread scope)
 *
 * duet_dev_p: stores value into *dest on pe with one single-copy-atomic store (st.relaxed.sys;
 * T of 4 or 8 bytes, e.g. int32_t, uint32_t, int64_t, uint64_t, float, double). Unordered
 * with the caller's other accesses until a fence / quiet; a peer polling dest
 * (wait_until) sees it without them. duet_dev_g: loads *src on pe (ld.relaxed.sys).
 * ------------------------------------------------------------------------------------ */
template <typename T>
static __device__ __forceinline__ void duet_dev_p(const duet_device_comm_t &h, T *dest,
                                                  typename duet_dev_detail::same_<T>::type value, int pe)
{
    if (duet_dev_detail::remote_(h, pe)) { /* an atomic set through the proxy, not waited for */
        (void)duet_dev_detail::px_amo_(h, dest, DUET_PROXY_AMO_SET, false, duet_dev_detail::wbits_<T>(value), 0, pe);
        return;
    }
    duet_dev_detail::st_relaxed(duet_dev_detail::mapped_ptr_(h, dest, pe), value);
}
template <typename T>
static __device__ __forceinline__ T duet_dev_g(const duet_device_comm_t &h, const T *src, int pe)
{
    if (duet_dev_detail::remote_(h, pe)) /* an atomic fetch through the proxy, waited for */
        return duet_dev_detail::from_wbits_<T>(duet_dev_detail::px_amo_(h, src, DUET_PROXY_AMO_FETCH, true, 0, 0, pe));
    return duet_dev_detail::ld_relaxed(duet_dev_detail::mapped_ptr_(h, src, pe));
}

/* ------------------------------------------------------------------------------------
 * Bulk transfers
 *
 * put: bytes from the local src to the symmetric dest on pe.  get: bytes from the symmetric
 * src on pe to the local dest. Any sizes and alignments (16-byte vector loads / stores when
 * dest and src are equally aligned mod 16, narrower otherwise); bytes == 0 does nothing
 * (the _warp / _block forms still sync the group). Buffers must not overlap. Completion:
 * see the header comment (put: data visible after quiet / barrier; blocking forms end with
 * a group sync, _nbi forms do not).
 * ------------------------------------------------------------------------------------ */
static __device__ __forceinline__ void duet_dev_put_nbi(const duet_device_comm_t &h, void *dest,
                                                        const void *src, size_t bytes, int pe)
{
    if (duet_dev_detail::remote_(h, pe)) {
        (void)duet_dev_detail::px_put_(h, dest, src, bytes, pe, false);
        return;
    }
    duet_dev_detail::copy(duet_dev_detail::mapped_ptr_(h, dest, pe), src, bytes, 0, 1);
}
static __device__ __forceinline__ void duet_dev_put(const duet_device_comm_t &h, void *dest,
                                                    const void *src, size_t bytes, int pe)
{
    if (duet_dev_detail::remote_(h, pe)) {
        (void)duet_dev_detail::px_put_(h, dest, src, bytes, pe, true);
        return;
    }
    duet_dev_put_nbi(h, dest, src, bytes, pe);
}
static __device__ __forceinline__ void duet_dev_get_nbi(const duet_device_comm_t &h, void *dest,
                                                        const void *src, size_t bytes, int pe)
{
    if (duet_dev_detail::remote_(h, pe)) {
        (void)duet_dev_detail::px_get_(h, dest, src, bytes, pe, false);
        return;
    }
    duet_dev_detail::copy(dest, duet_dev_detail::mapped_ptr_(h, src, pe), bytes, 0, 1);
}
static __device__ __forceinline__ void duet_dev_get(const duet_device_comm_t &h, void *dest,
                                                    const void *src, size_t bytes, int pe)
{
    if (duet_dev_detail::remote_(h, pe)) {
        (void)duet_dev_detail::px_get_(h, dest, src, bytes, pe, true);
        return;
    }
    duet_dev_get_nbi(h, dest, src, bytes, pe);
}

/* Remote pes (the proxy) in the _warp / _block forms: one command for the whole transfer,
 * posted by one thread of the group (px_warp_ / px_block_). */
static __device__ __forceinline__ void duet_dev_put_warp_nbi(const duet_device_comm_t &h, void *dest,
                                                             const void *src, size_t bytes, int pe)
{
    if (duet_dev_detail::remote_(h, pe)) {
        duet_dev_detail::px_warp_([&] { (void)duet_dev_detail::px_put_(h, dest, src, bytes, pe, false); }, false);
        return;
    }
    duet_dev_detail::copy(duet_dev_detail::mapped_ptr_(h, dest, pe), src, bytes, duet_dev_detail::lane_id(), 32);
}
static __device__ __forceinline__ void duet_dev_put_warp(const duet_device_comm_t &h, void *dest,
                                                         const void *src, size_t bytes, int pe)
{
    if (duet_dev_detail::remote_(h, pe)) {
        duet_dev_detail::px_warp_([&] { (void)duet_dev_detail::px_put_(h, dest, src, bytes, pe, true); }, true);
        return;
    }
    duet_dev_put_warp_nbi(h, dest, src, bytes, pe);
    __syncwarp();
}
static __device__ __forceinline__ void duet_dev_get_warp_nbi(const duet_device_comm_t &h, void *dest,
                                                             const void *src, size_t bytes, int pe)
{
    if (duet_dev_detail::remote_(h, pe)) {
        duet_dev_detail::px_warp_([&] { (void)duet_dev_detail::px_get_(h, dest, src, bytes, pe, false); }, false);
        return;
    }
    duet_dev_detail::copy(dest, duet_dev_detail::mapped_ptr_(h, src, pe), bytes, duet_dev_detail::lane_id(), 32);
}
static __device__ __forceinline__ void duet_dev_get_warp(const duet_device_comm_t &h, void *dest,
                                                         const void *src, size_t bytes, int pe)
{
    if (duet_dev_detail::remote_(h, pe)) {
        duet_dev_detail::px_warp_([&] { (void)duet_dev_detail::px_get_(h, dest, src, bytes, pe, true); }, true);
        return;
    }
    duet_dev_get_warp_nbi(h, dest, src, bytes, pe);
    __syncwarp();
}

static __device__ __forceinline__ void duet_dev_put_block_nbi(const duet_device_comm_t &h, void *dest,
                                                              const void *src, size_t bytes, int pe)
{
    if (duet_dev_detail::remote_(h, pe)) {
        duet_dev_detail::px_block_([&] { (void)duet_dev_detail::px_put_(h, dest, src, bytes, pe, false); }, false);
        return;
    }
    duet_dev_detail::copy(duet_dev_detail::mapped_ptr_(h, dest, pe), src, bytes, duet_dev_detail::block_tid(),
                          duet_dev_detail::block_size());
}
static __device__ __forceinline__ void duet_dev_put_block(const duet_device_comm_t &h, void *dest,
                                                          const void *src, size_t bytes, int pe)
{
    if (duet_dev_detail::remote_(h, pe)) {
        duet_dev_detail::px_block_([&] { (void)duet_dev_detail::px_put_(h, dest, src, bytes, pe, true); }, true);
        return;
    }
    duet_dev_put_block_nbi(h, dest, src, bytes, pe);
    __syncthreads();
}
static __device__ __forceinline__ void duet_dev_get_block_nbi(const duet_device_comm_t &h, void *dest,
                                                              const void *src, size_t bytes, int pe)
{
    if (duet_dev_detail::remote_(h, pe)) {
        duet_dev_detail::px_block_([&] { (void)duet_dev_detail::px_get_(h, dest, src, bytes, pe, false); }, false);
        return;
    }
    duet_dev_detail::copy(dest, duet_dev_detail::mapped_ptr_(h, src, pe), bytes, duet_dev_detail::block_tid(),
                          duet_dev_detail::block_size());
}
static __device__ __forceinline__ void duet_dev_get_block(const duet_device_comm_t &h, void *dest,
                                                          const void *src, size_t bytes, int pe)
{
    if (duet_dev_detail::remote_(h, pe)) {
        duet_dev_detail::px_block_([&] { (void)duet_dev_detail::px_get_(h, dest, src, bytes, pe, true); }, true);
        return;
    }
    duet_dev_get_block_nbi(h, dest, src, bytes, pe);
    __syncthreads();
}

#endif /* DUET_DEVICE_RMA_CUH */
