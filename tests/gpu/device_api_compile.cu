/*
 * device_api_compile.cu — compile check of include/duet/duet_device.cuh: instantiates every
 * call of the device API for every type it supports, so a broken header fails the build
 * even on a machine without a GPU. Nothing here runs.
 */
#include <duet/duet_device.cuh>

template <typename T>
__device__ int every_typed_call(const duet_device_comm_t &h, T *sym, int pe)
{
    duet_dev_p(h, sym, (T)1, pe);
    T v = duet_dev_g(h, sym, pe);
    v += duet_dev_atomic_fetch(h, sym, pe);
    duet_dev_atomic_set(h, sym, v, pe);
    return (int)v + duet_dev_wait_until(h, sym, DUET_CMP_GE, 1) + duet_dev_test(sym, DUET_CMP_NE, 0);
}

template <typename T>
__device__ T every_atomic(const duet_device_comm_t &h, T *sym, int pe)
{
    T v = duet_dev_atomic_fetch_add(h, sym, 1, pe);
    duet_dev_atomic_add(h, sym, 2, pe);
    v += duet_dev_atomic_fetch_inc(h, sym, pe);
    duet_dev_atomic_inc(h, sym, pe);
    v += duet_dev_atomic_compare_swap(h, sym, 0, 1, pe);
    v += duet_dev_atomic_swap(h, sym, 3, pe);
    return v;
}

__global__ void duet_device_api_compile(duet_device_comm_t h, char *sym, char *local, size_t n,
                                        uint64_t *sig, int *out)
{
    int pe = (duet_dev_my_pe(h) + 1) % duet_dev_n_pes(h);
    int r = every_typed_call(h, (int32_t *)sym, pe) + every_typed_call(h, (uint32_t *)sym, pe) +
            every_typed_call(h, (int64_t *)sym, pe) + every_typed_call(h, (uint64_t *)sym, pe) +
            every_typed_call(h, (float *)sym, pe) + every_typed_call(h, (double *)sym, pe) +
            every_typed_call(h, (long long *)sym, pe) + every_typed_call(h, (int *)sym, pe);
    r += (int)every_atomic(h, (int32_t *)sym, pe) + (int)every_atomic(h, (uint32_t *)sym, pe) +
         (int)every_atomic(h, (int64_t *)sym, pe) + (int)every_atomic(h, (uint64_t *)sym, pe) +
         (int)every_atomic(h, (unsigned long long *)sym, pe);
    duet_dev_put(h, sym, local, n, pe);
    duet_dev_put_nbi(h, sym, local, n, pe);
    duet_dev_get(h, local, sym, n, pe);
    duet_dev_get_nbi(h, local, sym, n, pe);
    duet_dev_put_warp(h, sym, local, n, pe);
    duet_dev_put_warp_nbi(h, sym, local, n, pe);
    duet_dev_get_warp(h, local, sym, n, pe);
    duet_dev_get_warp_nbi(h, local, sym, n, pe);
    duet_dev_put_block(h, sym, local, n, pe);
    duet_dev_put_block_nbi(h, sym, local, n, pe);
    duet_dev_get_block(h, local, sym, n, pe);
    duet_dev_get_block_nbi(h, local, sym, n, pe);
    duet_dev_put_signal(h, sym, local, n, sig, 1, DUET_SIGNAL_SET, pe);
    duet_dev_put_signal_nbi(h, sym, local, n, sig, 1, DUET_SIGNAL_ADD, pe);
    duet_dev_put_signal_warp(h, sym, local, n, sig, 1, DUET_SIGNAL_SET, pe);
    duet_dev_put_signal_warp_nbi(h, sym, local, n, sig, 1, DUET_SIGNAL_ADD, pe);
    duet_dev_put_signal_block(h, sym, local, n, sig, 1, DUET_SIGNAL_SET, pe);
    duet_dev_put_signal_block_nbi(h, sym, local, n, sig, 1, DUET_SIGNAL_ADD, pe);
    duet_dev_signal_op(h, sig, 1, DUET_SIGNAL_ADD, pe);
    uint64_t got = duet_dev_signal_fetch(sig);
    r += duet_dev_signal_wait_until(h, sig, DUET_CMP_EQ, 1, &got);
    duet_dev_fence(h);
    duet_dev_quiet(h);
    duet_dev_quiet_warp(h);
    duet_dev_quiet_block(h);
    r += duet_dev_barrier(h) + duet_dev_barrier_warp(h) + duet_dev_barrier_block(h);
    out[0] = r + (int)got + (duet_dev_ptr(h, sym, pe) != nullptr);
}
