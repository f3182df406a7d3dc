/*
 * duet_cuda_state.h — the GPU heap's and a communicator's device state (inside src/cuda only).
 */
#ifndef DUET_CUDA_STATE_H
#define DUET_CUDA_STATE_H

#include "cuda/duet_cuda_heap.h"
#include "cuda/duet_cuda_driver.h"
#include "duet/duet_cuda.h"

/* The VMM heap starts with this much of each part backed (sync area included) and grows by
 * segments, each at least doubling what is mapped: at most DUET_CUDA_HEAP_SEGS of them. */
#define DUET_CUDA_HEAP_FIRST ((size_t)4 << 20)
#define DUET_CUDA_HEAP_SEGS  48

struct duet_cuda_heap {
    int device;              /* the CUDA ordinal this rank uses */
    int my_pe, npes;         /* world pes (the root communicator's ranks) */
    int vmm;                 /* 1: parts at a fixed stride in one range; 0: cudaIpc fallback */
    size_t part_bytes;       /* bytes of each pe's part, sync area included (VMM: reserved) */
    size_t mapped;           /* bytes of each live pe's part backed by memory, from its start
                              * (duet_cuda_heap_mapped; VMM: grows, duet_cuda_heap_grow.c;
                              * the fallback: part_bytes) */
    size_t gran;             /* VMM: the allocation granularity (segments are multiples) */
    int nseg;                /* VMM: segments mapped so far: segment k is [seg_end[k-1], seg_end[k]) */
    size_t seg_end[DUET_CUDA_HEAP_SEGS];
    uint8_t *pe_segs;        /* VMM, by pe: how many of the segments are mapped here (a pe that
                              * died before a growth keeps fewer; another host's none) */
    uint8_t *local;          /* by pe: its memory maps here (the fd exchange's peers) */
    int32_t *pids;           /* by pe: its process id (the fd exchange checks it) */
    unsigned grows;          /* growth exchanges so far (each names its own sockets) */
    char tag[80];            /* the root communicator's tag (socket names; no secret) */
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

/* Bytes of my part backed by memory (read without the lock: it only grows, and is stored
 * after the new segment is mapped everywhere). */
static inline size_t duet_cuda_heap_mapped(const duet_cuda_heap_t *g)
{
    return __atomic_load_n(&g->mapped, __ATOMIC_ACQUIRE);
}

/* x rounded up to a multiple of a (a granularity). */
static inline size_t duet_cuda_round_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

/* What every segment of a VMM part is made as: pinned memory of `device` with a POSIX-fd
 * handle (the other ranks of the host import it). */
static inline CUmemAllocationProp duet_cuda_heap_prop(int device)
{
    CUmemAllocationProp prop = {0};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    return prop;
}

/* Maps `len` bytes of allocation hd at offset off of pe's part (VMM), readable and writable
 * by my device. */
duet_status_t duet_cuda_heap_map(duet_cuda_heap_t *g, CUmemGenericAllocationHandle hd, int pe, size_t off,
                                 size_t len);
/* Collective over b (an allocating communicator: every live pe of the heap; heap_pe[r] is
 * rank r's pe, NULL for the identity): backs every member's part up to the largest `need`
 * any member asks for (0: nothing), by a new segment at least as large as what is mapped.
 * Every member returns the same status. */
duet_status_t duet_cuda_heap_grow(duet_cuda_heap_t *g, duet_boot_t *b, const int *heap_pe, size_t need,
                                  const char *fn);

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
