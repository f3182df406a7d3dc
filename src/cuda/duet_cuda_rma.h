/*
 * duet_cuda_rma.h — the host one-sided calls on the GPU heap, as src/rma sees them (no CUDA
 * headers here: src/rma includes this file in every build).
 *
 * src/rma checks the host heap first, exactly as before (one range compare); only an address
 * outside it asks duet_cuda_rma_owns(), and a range in my part of the GPU heap then takes
 * these calls instead of the transports. They move data with cudaMemcpyAsync and do atomics
 * and signals with one-thread kernels, all on one internal non-blocking stream per device
 * and process (see duet_cuda_rma.c for why not per communicator); blocking forms synchronize
 * it, nbi forms leave it pending until quiet (duet_cuda_rma_quiet, called by duet_quiet,
 * duet_fence and every barrier). Small blocking puts (p) go into the kernel's arguments, so
 * they return at once (the value is copied) and complete at quiet, as OpenSHMEM allows.
 *
 * Without the CUDA backend the functions below are inline stubs that are never reached (a
 * heap's `gpu` is NULL there).
 */
#ifndef DUET_CUDA_RMA_H
#define DUET_CUDA_RMA_H

#include "core/duet_comm.h"
#include "cuda/duet_cuda_heap.h"

#ifdef DUET_HAVE_CUDA
/* 1 when [p, p + bytes) lies in my part's user heap (g may be NULL). */
int duet_cuda_rma_owns(const duet_cuda_heap_t *g, const void *p, size_t bytes);
/* put / get of n bytes between a local buffer (host or device) and the symmetric `sym` of pe. */
duet_status_t duet_cuda_rma_put(duet_comm_t c, void *sym, const void *src, size_t n, int pe, int nbi,
                                const char *fn);
duet_status_t duet_cuda_rma_get(duet_comm_t c, void *dst, const void *sym, size_t n, int pe, int nbi,
                                const char *fn);
/* strided put (is_put) or get; strides in elements, both >= 1 */
duet_status_t duet_cuda_rma_strided(duet_comm_t c, int is_put, void *dst, const void *src, ptrdiff_t dst_stride,
                                    ptrdiff_t src_stride, size_t nelems, size_t es, int pe, const char *fn);
/* An atomic (duet_amo_op_t) of width 4 or 8 on the symmetric `sym` of pe; blocking. */
duet_status_t duet_cuda_rma_amo(duet_comm_t c, int op, void *sym, size_t width, uint64_t operand, uint64_t cond,
                                int pe, uint64_t *fetched, const char *fn);
/* Signal update (DUET_SIGNAL_SET / _ADD) of the symmetric `sig` on pe, after every earlier
 * operation of the internal stream; nbi: left pending until quiet. */
duet_status_t duet_cuda_rma_signal(duet_comm_t c, uint64_t *sig, uint64_t value, int sig_op, int pe, int nbi,
                                   const char *fn);
/* Reads n bytes of my own GPU heap into host memory (waits and fetches on GPU words). */
duet_status_t duet_cuda_rma_read(duet_comm_t c, void *host, const void *local, size_t n, const char *fn);
/* Completes this process's pending GPU-side host operations on c's device; returns the
 * first error a stream-ordered wait or barrier recorded since the last call. */
duet_status_t duet_cuda_rma_quiet(duet_comm_t c);
#else
static inline int duet_cuda_rma_owns(const duet_cuda_heap_t *g, const void *p, size_t bytes)
{
    (void)g;
    (void)p;
    (void)bytes;
    return 0;
}
#define DUET_CUDA_RMA_NONE_(fn) DUET_FAIL(DUET_ERR_UNSUPPORTED, RMA, "%s: this Duet is built without CUDA", fn)
static inline duet_status_t duet_cuda_rma_put(duet_comm_t c, void *sym, const void *src, size_t n, int pe,
                                              int nbi, const char *fn)
{
    (void)c, (void)sym, (void)src, (void)n, (void)pe, (void)nbi;
    return DUET_CUDA_RMA_NONE_(fn);
}
static inline duet_status_t duet_cuda_rma_get(duet_comm_t c, void *dst, const void *sym, size_t n, int pe,
                                              int nbi, const char *fn)
{
    (void)c, (void)sym, (void)dst, (void)n, (void)pe, (void)nbi;
    return DUET_CUDA_RMA_NONE_(fn);
}
static inline duet_status_t duet_cuda_rma_strided(duet_comm_t c, int is_put, void *dst, const void *src,
                                                  ptrdiff_t dst_stride, ptrdiff_t src_stride, size_t nelems,
                                                  size_t es, int pe, const char *fn)
{
    (void)c, (void)is_put, (void)dst, (void)src, (void)dst_stride, (void)src_stride, (void)nelems, (void)es,
        (void)pe;
    return DUET_CUDA_RMA_NONE_(fn);
}
static inline duet_status_t duet_cuda_rma_amo(duet_comm_t c, int op, void *sym, size_t width, uint64_t operand,
                                              uint64_t cond, int pe, uint64_t *fetched, const char *fn)
{
    (void)c, (void)op, (void)sym, (void)width, (void)operand, (void)cond, (void)pe, (void)fetched;
    return DUET_CUDA_RMA_NONE_(fn);
}
static inline duet_status_t duet_cuda_rma_signal(duet_comm_t c, uint64_t *sig, uint64_t value, int sig_op, int pe,
                                                 int nbi, const char *fn)
{
    (void)c, (void)sig, (void)value, (void)sig_op, (void)pe, (void)nbi;
    return DUET_CUDA_RMA_NONE_(fn);
}
static inline duet_status_t duet_cuda_rma_read(duet_comm_t c, void *host, const void *local, size_t n,
                                               const char *fn)
{
    (void)c, (void)host, (void)local, (void)n;
    return DUET_CUDA_RMA_NONE_(fn);
}
static inline duet_status_t duet_cuda_rma_quiet(duet_comm_t c)
{
    (void)c;
    return DUET_OK;
}
#endif

#endif
