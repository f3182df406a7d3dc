/*
 * duet_cuda.h — the GPU side of a communicator, as host code sees it (C, no CUDA headers
 * needed). Kernels use include/duet/duet_device.cuh, which includes this file.
 *
 * The GPU symmetric heap. With the CUDA backend built and a GPU present, every communicator
 * created from the world has, besides the host heap of duet_malloc(), a heap in GPU memory:
 * each rank's part is one physical allocation (cuMemCreate), and every rank of the host maps
 * every local peer's part into one reserved virtual range at a fixed stride, so
 *
 *     address of `obj` on world pe p  =  obj + (p - my_heap_pe) * stride
 *
 * for any obj in my part (duet_malloc_device); a team's pe t is world pe heap_pe[t]. Where
 * the driver cannot share memory that way (no VMM with POSIX-fd handles on some rank, or
 * DUET_CUDA=ipc), the parts are cudaMalloc'd and opened with cudaIpc: stride is then 0 and
 * peer_heap[] says where each part is. Several ranks may share one GPU (processes under CUDA
 * MPS). A rank uses GPU (local rank) mod (GPUs visible), or DUET_CUDA_DEVICE; the GPU heap has
 * DUET_CUDA_HEAP_SIZE bytes per rank (default 1G). A communicator has a GPU heap only when
 * every rank has a GPU (and DUET_CUDA is not off); otherwise everything runs on the CPU.
 *
 * Builds without the CUDA backend have the same calls: they report that there is no GPU.
 *
 * Kernels reach the heap through a duet_device_comm_t: plain data, passed to a kernel by
 * value (see duet_device.cuh). Teams (duet_comm_split...) share the world's GPU heap and get
 * their own handle, whose pe numbers are the team's.
 */
#ifndef DUET_CUDA_H
#define DUET_CUDA_H

#include <stddef.h>
#include <stdint.h>
#include "duet/duet.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Everything a kernel needs of a communicator. Trivially copyable; valid while the
 * communicator lives. All pointers are device-accessible. Each part begins with 64 KiB of
 * synchronization words (one 1 KiB slot per communicator, `sync`); duet_malloc_device hands
 * out addresses after it. [heap, heap + heap_bytes) is my whole part. */
typedef struct duet_device_comm {
    char *heap;            /* my part of the GPU heap (the world's pe numbering, see heap_pe) */
    size_t stride;         /* distance between consecutive world pes' parts                   */
    size_t heap_bytes;     /* bytes of each part (sync area included)                        */
    int my_pe, n_pes;      /* in this communicator                                           */
    int my_heap_pe;        /* my pe in the world that owns the heap                           */
    const int *heap_pe;    /* n_pes entries: communicator pe -> world pe (device memory)      */
    const volatile int32_t *abort; /* 0, or the duet_status_t every device wait then returns  */
    uint64_t *sync;        /* my part's synchronization words (in the heap: peers write them) */
    uint64_t sync_epoch;   /* barriers this communicator's device side has completed: the
                            * kernel-side barrier counts from it (see duet_device.cuh)        */
    char *const *peer_heap; /* every world pe's part as mapped here (device memory, indexed by
                            * world pe; NULL where not mapped: another host). With stride != 0,
                            * peer_heap[p] == heap + (p - my_heap_pe) * stride; with stride == 0
                            * (the cudaIpc fallback, no VMM) it is the only way to a peer      */
} duet_device_comm_t;

/* 1 when this build has the CUDA backend and this process has a GPU to use (and
 * DUET_CUDA is not off). Any thread, any time. */
int duet_cuda_available(void);

/* The CUDA device ordinal this rank uses for comm's GPU heap (made current on the thread
 * that created the communicator), or -1 (no GPU heap / CPU-only build / bad comm). */
int duet_cuda_device(duet_comm_t comm);

/* Collective: `size` bytes from the GPU symmetric heap, the same offset on every rank;
 * 256-byte aligned. Every rank must ask for the same size (else NULL and DUET_ERR_INVALID_ARG
 * on every rank); only the communicator that owns the heap allocates (not a team).
 * NULL with DUET_ERR_UNSUPPORTED when there is no GPU heap, DUET_ERR_NO_MEMORY when full
 * (DUET_CUDA_HEAP_SIZE sets its size). Freed with duet_free(). duet_ptr() of a GPU heap
 * address is the peer's address in my mapping (a device pointer), or NULL when the peer's
 * GPU memory is not mapped here (another host). */
void *duet_malloc_device(duet_comm_t comm, size_t size);

/* The kernel handle of a communicator (a team's has the team's pe numbers). Not collective;
 * the first call per communicator allocates its device tables (DUET_ERR_CUDA if that fails).
 * DUET_ERR_UNSUPPORTED without a GPU heap, DUET_ERR_INVALID_ARG for a bad comm or NULL out. */
duet_status_t duet_device_comm_get(duet_comm_t comm, duet_device_comm_t *out);

#ifdef __cplusplus
}
#endif

#endif /* DUET_CUDA_H */
