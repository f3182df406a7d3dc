/*
 * The CUDA calls of duet_cuda.h in a build without the CUDA backend: they exist, so programs
 * link either way, and say that there is no GPU. (duet_malloc_device is in duet_comm_heap.c
 * for both builds.)
 */
#include "cuda/duet_cuda_heap.h"
#include "duet/duet_cuda.h"

#ifndef DUET_HAVE_CUDA
#include <stdio.h>

int duet_cuda_available(void) { return 0; }

int duet_cuda_device(duet_comm_t c)
{
    (void)c;
    return -1;
}

duet_status_t duet_device_comm_get(duet_comm_t c, duet_device_comm_t *out)
{
    duet_status_t st = duet_comm_check(c, "duet_device_comm_get");
    if (st) return st;
    (void)out;
    return DUET_FAIL(DUET_ERR_UNSUPPORTED, CUDA, "duet_device_comm_get: this Duet is built without the "
                     "CUDA backend");
}

void duet_cuda_set_abort(duet_comm_t c, duet_status_t status)
{
    (void)c;
    (void)status;
}

int duet_cuda_describe(char *buf, size_t len)
{
    snprintf(buf, len, "configure with -DDUET_CUDA=ON where nvcc is installed");
    return -1;
}
#else
typedef int duet_comm_nocuda_unused_t; /* the CUDA build has src/cuda/ instead */
#endif
