/*
 * test_gpu_ft.cu — the kernels of test_gpu_ft.c: one thread waits, in a kernel, for a signal
 * that a rank which then dies would have sent.
 */
#include "duet/duet_device.cuh"

__global__ void k_wait_signal(duet_device_comm_t h, uint64_t *sig, volatile int *started, int *status)
{
    *started = 1;
    __threadfence_system();
    *status = duet_dev_signal_wait_until(h, sig, DUET_CMP_GE, 1);
}

extern "C" int ft_wait_signal_launch(duet_device_comm_t h, uint64_t *sig, volatile int *started_dev, int *status,
                                     void *stream)
{
    k_wait_signal<<<1, 1, 0, (cudaStream_t)stream>>>(h, sig, started_dev, status);
    return (int)cudaGetLastError();
}
