/*
 * duet_device_sync.cuh — the device API's ordering and synchronization: fence, quiet
 * (thread, warp, block) and the barriers over all pes of a communicator.
 *
 * A part of the device API: include duet/duet_device.cuh (its conventions, memory model and
 * proxy path are described there), never this file alone.
 */
#ifndef DUET_DEVICE_SYNC_CUH
#define DUET_DEVICE_SYNC_CUH

#ifndef DUET_DEVICE_CUH
#error "include duet/duet_device.cuh, not duet/duet_device_sync.cuh"
#endif

/* ------------------------------------------------------------------------------------
 * Ordering
 *
 * fence: this thread's earlier puts, p's, signals and atomics to each pe are ordered before
 * its later ones (fence.acq_rel.sys). No completion.
 * quiet: completes this thread's earlier puts, p's, signals and atomics: visible at their
 * targets, and to anyone who synchronizes with this thread afterwards (__threadfence_system,
 * i.e. fence.sc.sys). _warp / _block: every thread of the group fences, then the group syncs,
 * so the group's earlier operations (nbi ones included) are complete on return, for every
 * thread of the group. With remote pes in the handle, quiet also waits for the proxy (every
 * command posted before it, by any thread of the process, applied at its target) and returns
 * its status on every thread of the group: DUET_OK, the first failure of a proxied operation
 * since the last quiet, or the abort status. Without remote pes it returns DUET_OK.
 * ------------------------------------------------------------------------------------ */
static __device__ __forceinline__ void duet_dev_fence(const duet_device_comm_t &h)
{
    (void)h;
    duet_dev_detail::fence_acq_rel_sys();
}
static __device__ __forceinline__ int duet_dev_quiet(const duet_device_comm_t &h)
{
    __threadfence_system();
    return duet_dev_detail::px_quiet_(h);
}
static __device__ __forceinline__ int duet_dev_quiet_warp(const duet_device_comm_t &h)
{
    __threadfence_system();
    __syncwarp();
    if (h.remote == nullptr) return DUET_OK;
    int st = duet_dev_detail::lane_id() == 0 ? duet_dev_detail::px_quiet_(h) : DUET_OK;
    return __shfl_sync(0xffffffffu, st, 0);
}
static __device__ __forceinline__ int duet_dev_quiet_block(const duet_device_comm_t &h)
{
    __threadfence_system();
    __syncthreads();
    if (h.remote == nullptr) return DUET_OK;
    __shared__ int quiet_status;
    if (duet_dev_detail::block_tid() == 0) quiet_status = duet_dev_detail::px_quiet_(h);
    __syncthreads();
    return quiet_status;
}

/* ------------------------------------------------------------------------------------
 * Barriers over all pes of the communicator: quiet, then wait until every pe has entered.
 *
 * duet_dev_barrier (one thread per pe), duet_dev_barrier_warp (one warp per pe),
 * duet_dev_barrier_block (one block per pe). A communicator's barrier may run in one group
 * per pe at a time (the barrier is a collective of pes, not of blocks); successive
 * barriers, in one kernel or in kernels launched one after another, continue from each
 * other. A team's handle synchronizes only the team. Returns DUET_OK on every thread of the
 * group, or (on every thread) the abort status; after an abort the communicator's device
 * barrier state is undefined.
 *
 * The algorithm (h.sync, see DUET_DEVICE_SYNC_WORDS): the words are monotonic counters. To
 * enter barrier number c (c = my own count + 1), pe p adds 1 to word [p] of every pe q
 * (red.release.sys.add: my earlier stores are visible to whoever sees the count), then waits
 * until each of its own words [q] >= c (ld.acquire.sys), then stores c as its own count. A
 * peer can be at most one barrier ahead, hence >= rather than ==. Nothing depends on the
 * handle's copy of the count, so relaunched kernels continue correctly.
 *
 *     pe0 sync: [0]=c [1]=c [own]=c        pe1 sync: [0]=c [1]=c [own]=c
 *         ^ +1 from pe0  ^ +1 from pe1          (each pe adds to its word in every peer)
 * ------------------------------------------------------------------------------------ */
namespace duet_dev_detail {
/* The barrier over threads tid = 0..nthr-1 of a group that has just synced. Each thread
 * signals and waits for the pes q = tid, tid + nthr, ...; returns this thread's status. */
static __device__ __forceinline__ int barrier_(const duet_device_comm_t &h, unsigned tid,
                                               unsigned nthr, uint64_t c)
{
    int n = h.n_pes;
    for (int q = (int)tid; q < n; q += (int)nthr) {
        if (remote_(h, q)) { /* after the barrier's quiet: everything earlier is applied there */
            int st = px_signal_(h, h.sync + h.my_pe, 1, DUET_SIGNAL_ADD, q);
            if (st) return st;
        } else {
            red_release_add_u64(mapped_ptr_(h, h.sync + h.my_pe, q), 1);
        }
    }
    for (int q = (int)tid; q < n; q += (int)nthr) {
        int st = duet_dev_wait_until<uint64_t>(h, h.sync + q, DUET_CMP_GE, c);
        if (st) return st;
    }
    return DUET_OK;
}
} /* namespace duet_dev_detail */

static __device__ __forceinline__ int duet_dev_barrier(const duet_device_comm_t &h)
{
    int qst = duet_dev_quiet(h);
    if (qst) return qst;
    uint64_t c = duet_dev_detail::ld_relaxed_u64(h.sync + h.n_pes) + 1;
    int st = duet_dev_detail::barrier_(h, 0, 1, c);
    if (st == DUET_OK) duet_dev_detail::st_relaxed_u64(h.sync + h.n_pes, c);
    return st;
}
static __device__ __forceinline__ int duet_dev_barrier_warp(const duet_device_comm_t &h)
{
    int qst = duet_dev_quiet_warp(h);
    if (qst) return qst;
    unsigned lane = duet_dev_detail::lane_id();
    uint64_t c = duet_dev_detail::ld_relaxed_u64(h.sync + h.n_pes) + 1;
    int st = duet_dev_detail::barrier_(h, lane, 32, c);
    if (__any_sync(0xffffffffu, st != DUET_OK)) {
        if (st == DUET_OK) st = duet_dev_detail::abort_status(h);
        return st ? st : DUET_ERR_INTERNAL;
    }
    if (lane == 0) duet_dev_detail::st_relaxed_u64(h.sync + h.n_pes, c);
    __syncwarp();
    return DUET_OK;
}
static __device__ __forceinline__ int duet_dev_barrier_block(const duet_device_comm_t &h)
{
    int qst = duet_dev_quiet_block(h);
    if (qst) return qst;
    unsigned tid = duet_dev_detail::block_tid();
    uint64_t c = duet_dev_detail::ld_relaxed_u64(h.sync + h.n_pes) + 1;
    int st = duet_dev_detail::barrier_(h, tid, duet_dev_detail::block_size(), c);
    if (__syncthreads_or(st != DUET_OK)) {
        if (st == DUET_OK) st = duet_dev_detail::abort_status(h);
        return st ? st : DUET_ERR_INTERNAL;
    }
    if (tid == 0) duet_dev_detail::st_relaxed_u64(h.sync + h.n_pes, c);
    __syncthreads();
    return DUET_OK;
}

#endif /* DUET_DEVICE_SYNC_CUH */
