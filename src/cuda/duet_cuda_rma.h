/*
 * duet_cuda_rma.h — the host one-sided calls on the GPU heap: the transport of the heap's
 * device part (src/cuda/duet_cuda_rma.c). No CUDA headers here.
 *
 * The GPU heap gets an endpoint per heap pe (h->dev_eps) when it is made, bound to this
 * backend's transport table (tport/duet_tport.h); src/rma finds which segment an address lies
 * in (the host heap first, exactly as before: one range compare) and runs that endpoint's
 * operation, and knows nothing of CUDA. The operations move data with cudaMemcpyAsync and do
 * atomics and signals with one-thread kernels, all on one internal non-blocking stream per
 * device and process (see duet_cuda_rma.c for why not per communicator); blocking forms
 * synchronize it, nbi forms leave it pending until quiet (the endpoints' quiet, called by
 * duet_quiet, duet_fence and every barrier). A p of a small value goes into a stream memory
 * operation or the kernel's arguments, so it returns at once (the value is copied) and
 * completes at quiet, as OpenSHMEM allows.
 */
#ifndef DUET_CUDA_RMA_H
#define DUET_CUDA_RMA_H

#include "cuda/duet_cuda_heap.h"
#include "heap/duet_heap.h"

/* 1 when [p, p + bytes) lies in my part's user heap (g may be NULL). */
int duet_cuda_rma_owns(const duet_cuda_heap_t *g, const void *p, size_t bytes);
/* Makes h->dev_eps for GPU heap g (an endpoint per heap pe: pe's part as mapped here), and
 * frees them (h->dev_eps NULL again). */
duet_status_t duet_cuda_rma_eps_make(duet_heap_t *h, duet_cuda_heap_t *g);
void duet_cuda_rma_eps_free(duet_heap_t *h);

#endif
