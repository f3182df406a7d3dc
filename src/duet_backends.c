/*
 * duet_backends.c — what plugs into the generic layers' tables in this build: the modules of
 * a communicator's life (core/duet_comm_mod.h) and the heap's device part
 * (heap/duet_heap_dev.h), and, in a build without the CUDA backend, the calls of duet_cuda.h
 * saying that there is no GPU (so programs link either way). The one file of the library
 * outside the layers' folders: it may name every layer and backend; nothing includes it.
 */
#include "coll/duet_coll.h"
#include "coll/duet_coll_executor.h"
#include "core/duet_comm_mod.h"
#include "duet/duet_cuda.h"
#include "heap/duet_heap_dev.h"
#ifdef DUET_HAVE_CUDA
#include "cuda/duet_cuda_coll.h"
#include "cuda/duet_cuda_heap.h"
#endif

const duet_comm_mod_t *const duet_comm_mods[] = {
    &duet_coll_comm_mod,
#ifdef DUET_HAVE_CUDA
    &duet_cuda_comm_mod,
#endif
    NULL};

#ifdef DUET_HAVE_CUDA
const duet_heap_dev_ops_t *const duet_heap_dev_builtin = &duet_cuda_heap_ops;
const duet_coll_executor_t *const duet_coll_gpu_executor = &duet_cuda_coll_executor;
#else
#include <stdio.h>

const duet_heap_dev_ops_t *const duet_heap_dev_builtin = NULL;
const duet_coll_executor_t *const duet_coll_gpu_executor = NULL;

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

int duet_cuda_describe(char *buf, size_t len)
{
    snprintf(buf, len, "configure with -DDUET_CUDA=ON where nvcc is installed");
    return -1;
}
#endif
