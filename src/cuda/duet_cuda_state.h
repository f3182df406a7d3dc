/*
 * duet_cuda_state.h — the GPU heap's and a communicator's device state (inside src/cuda only).
 */
#ifndef DUET_CUDA_STATE_H
#define DUET_CUDA_STATE_H

#include "cuda/duet_cuda_heap.h"
#include "duet/duet_cuda.h"

struct duet_cuda_heap {
    int device;              /* the CUDA ordinal this rank uses */
    int my_pe, npes;         /* world pes (the root communicator's ranks) */
    int vmm;                 /* 1: parts at a fixed stride in one range; 0: cudaIpc fallback */
    size_t part_bytes;       /* bytes of each pe's part, sync area included */
    size_t stride;           /* VMM: distance between parts; 0 in the fallback */
    uintptr_t va;            /* VMM: the reserved range, stride * npes bytes */
    size_t va_bytes;
    char **peer;             /* every pe's part as mapped here (NULL: not mapped) */
    char **peer_dev;         /* the same table in device memory (duet_device_comm_t.peer_heap) */
    char *own;               /* fallback: my cudaMalloc'd part */
    duet_alloc_t *alloc;     /* offsets in a part; [0, DUET_CUDA_SYNC_BYTES) is taken for good */
    pthread_mutex_t *lock;   /* the host heap's (malloc / free serialise on it) */
    uint8_t *remote;         /* by pe: 1 = device calls reach it through the proxy (host copy) */
    uint8_t *remote_dev;     /* the same in device memory, or NULL when no pe is remote */
    struct duet_cuda_proxy *proxy; /* the proxy thread's state (duet_cuda_proxy.c), or NULL */
};

typedef struct duet_cuda_proxy duet_cuda_proxy_t;
/* Fills the proxy fields of a kernel handle (remote, proxy_ring, proxy_head); leaves them NULL
 * when the heap has no proxy. */
void duet_cuda_proxy_handle(const duet_cuda_heap_t *g, duet_device_comm_t *out);

struct duet_cuda_comm {
    int *heap_pe_dev;        /* the communicator's heap_pe[] in device memory */
    volatile int32_t *abort_host; /* mapped pinned word: the host writes, kernels poll */
    int32_t *abort_dev;      /* its device address */
    uint64_t sync_epoch;     /* the device side's barriers so far (duet_device_comm_t) */
    struct duet_cuda_coll *coll; /* the GPU collectives' state (duet_cuda_coll.c), or NULL */
};

#endif
