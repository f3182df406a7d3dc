/*
 * gpu_check.h — the GPU tests' checks of CUDA calls (after duet_test.h, which gives FATAL):
 *   CU(cudaMemcpy(...))   a runtime call that must succeed
 *   KU(launch_wrapper())  a .cu wrapper returning a cudaError_t as int (launch + sync)
 */
#ifndef DUET_TEST_GPU_CHECK_H
#define DUET_TEST_GPU_CHECK_H

#include <cuda_runtime_api.h>

#define CU(call)                                                                         \
    do {                                                                                 \
        cudaError_t e_ = (call);                                                         \
        if (e_ != cudaSuccess) FATAL("%s: %s", #call, cudaGetErrorString(e_));           \
    } while (0)
#define KU(call)                                                                         \
    do {                                                                                 \
        int e_ = (call);                                                                 \
        if (e_) FATAL("%s: %s", #call, cudaGetErrorString((cudaError_t)e_));             \
    } while (0)

#endif
