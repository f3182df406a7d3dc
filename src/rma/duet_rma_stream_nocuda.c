/*
 * The stream-ordered one-sided calls of duet_cuda.h in a build without the CUDA backend: they
 * exist, so programs link either way, and say that there is no GPU (the CUDA build has them
 * in src/cuda/duet_cuda_rma.c).
 */
#include "core/duet_comm.h"
#include "duet/duet_cuda.h"

#ifndef DUET_HAVE_CUDA
static duet_status_t no_cuda(duet_comm_t c, const char *fn)
{
    duet_status_t st = duet_comm_check(c, fn);
    return st ? st : DUET_FAIL(DUET_ERR_UNSUPPORTED, RMA, "%s: this Duet is built without the CUDA backend", fn);
}

duet_status_t duet_put_on_stream(duet_comm_t c, void *dst, const void *src, size_t bytes, int pe, void *stream)
{
    (void)dst, (void)src, (void)bytes, (void)pe, (void)stream;
    return no_cuda(c, "duet_put_on_stream");
}

duet_status_t duet_get_on_stream(duet_comm_t c, void *dst, const void *src, size_t bytes, int pe, void *stream)
{
    (void)dst, (void)src, (void)bytes, (void)pe, (void)stream;
    return no_cuda(c, "duet_get_on_stream");
}

duet_status_t duet_signal_op_on_stream(duet_comm_t c, uint64_t *sig, uint64_t value, int sig_op, int pe,
                                       void *stream)
{
    (void)sig, (void)value, (void)sig_op, (void)pe, (void)stream;
    return no_cuda(c, "duet_signal_op_on_stream");
}

duet_status_t duet_signal_wait_until_on_stream(duet_comm_t c, uint64_t *sig, int cmp, uint64_t value, void *stream)
{
    (void)sig, (void)cmp, (void)value, (void)stream;
    return no_cuda(c, "duet_signal_wait_until_on_stream");
}

duet_status_t duet_barrier_on_stream(duet_comm_t c, void *stream)
{
    (void)stream;
    return no_cuda(c, "duet_barrier_on_stream");
}

duet_status_t duet_quiet_on_stream(duet_comm_t c, void *stream)
{
    (void)stream;
    return no_cuda(c, "duet_quiet_on_stream");
}

duet_status_t duet_launch_collective(duet_comm_t c, const void *func, duet_dim3_t grid, duet_dim3_t block,
                                     void **args, size_t shmem, void *stream)
{
    (void)func, (void)grid, (void)block, (void)args, (void)shmem, (void)stream;
    return no_cuda(c, "duet_launch_collective");
}
#else
typedef int duet_rma_stream_nocuda_unused_t; /* the CUDA build has src/cuda/duet_cuda_rma.c */
#endif
