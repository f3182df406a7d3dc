/*
 * duet_device_util.cuh — the device API's building blocks, for layers built on it (an
 * NVSHMEM-style API, a kernel's own wait loop): thread indices of any block shape, the copy
 * the _warp / _block calls use, an acquire load and the DUET_CMP_* comparison of the waits,
 * and the abort word the waits poll. Each is what the calls of duet_device.cuh use
 * themselves; nothing here touches remote memory (pass it addresses from duet_dev_ptr).
 *
 * A part of the device API: include duet/duet_device.cuh, never this file alone.
 */
#ifndef DUET_DEVICE_UTIL_CUH
#define DUET_DEVICE_UTIL_CUH

#ifndef DUET_DEVICE_CUH
#error "include duet/duet_device.cuh, not duet/duet_device_util.cuh"
#endif

/* This thread's index in its block (x fastest, then y, then z), the block's number of
 * threads, and the thread's lane in its warp (0..31). Any thread. */
static __device__ __forceinline__ unsigned duet_dev_block_thread() { return duet_dev_detail::block_tid(); }
static __device__ __forceinline__ unsigned duet_dev_block_threads() { return duet_dev_detail::block_size(); }
static __device__ __forceinline__ unsigned duet_dev_lane() { return duet_dev_detail::lane_id(); }

/* Copies `bytes` from src to dst (global memory of this GPU, or a peer's mapped through
 * duet_dev_ptr), shared by the threads tid = 0 .. nthreads - 1 of a group that all call it
 * with the same arguments: the widest vectors both addresses allow, four loads in flight per
 * thread. No synchronization: the caller syncs the group before it uses dst. */
static __device__ __forceinline__ void duet_dev_copy(void *dst, const void *src, size_t bytes, unsigned tid,
                                                     unsigned nthreads)
{
    duet_dev_detail::copy(dst, src, bytes, tid, nthreads);
}

/* An acquire load at system scope (ld.acquire.sys) of a 4- or 8-byte word: what the waits
 * poll. Later loads of this thread see what the writer stored before its release. */
template <typename T> static __device__ __forceinline__ T duet_dev_load_acquire(const T *p)
{
    return duet_dev_detail::ld_acquire(p);
}

/* a cmp b for a DUET_CMP_* value cmp (any other is taken as DUET_CMP_LE: check it first). */
template <typename T> static __device__ __forceinline__ bool duet_dev_compare(T a, int cmp, T b)
{
    return duet_dev_detail::cmp_(a, cmp, b);
}

/* The communicator's abort word: 0, or the status (a duet_status_t) the host stored to stop
 * the kernels that wait (duet_cuda_set_abort). It may live in host memory (a PCIe read of
 * about a microsecond): a poll loop reads it every DUET_DEV_ABORT_EVERY turns, as Duet's
 * waits do. */
#define DUET_DEV_ABORT_EVERY 256
static __device__ __forceinline__ int duet_dev_abort_status(const duet_device_comm_t &h)
{
    return duet_dev_detail::abort_status(h);
}

#endif
