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
 * DUET_CUDA_HEAP_SIZE bytes per rank (default 1G), of which only the first 4 MiB are backed by
 * memory until blocks need more (VMM; duet_malloc_device then backs more on every rank, in
 * the same collective call; the cudaIpc fallback allocates it whole). A communicator has a GPU heap only when
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
 * out addresses after it. [heap, heap + heap_bytes) is my whole part as reserved: only the
 * blocks handed out (and the sync area) are sure to be backed by memory. */
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
    const uint8_t *remote;  /* NULL when every pe is reached by load/store; else by world pe:
                            * 1 for a pe reached through the host proxy (docs/NETWORK.md 2.9:
                            * another host, or any other pe with DUET_CUDA_PEERS=proxy)       */
    struct duet_proxy_ring *proxy_ring; /* the proxy's command ring (mapped host memory)     */
    unsigned long long *proxy_head;     /* its ticket counter (device memory)               */
} duet_device_comm_t;

/* 1 when this build has the CUDA backend and this process has a GPU to use (and
 * DUET_CUDA is not off). Any thread, any time. */
int duet_cuda_available(void);

/* The CUDA device ordinal this rank uses for comm's GPU heap (made current on the thread
 * that created the communicator), or -1 (no GPU heap / CPU-only build / bad comm). */
int duet_cuda_device(duet_comm_t comm);

/* Collective: `size` bytes from the GPU symmetric heap, the same offset on every rank;
 * 256-byte aligned. Every rank must ask for the same size (else NULL and DUET_ERR_INVALID_ARG
 * on every rank); only the communicator that owns the heap allocates, or a team holding all
 * its live ranks (a shrunk one).
 * NULL with DUET_ERR_UNSUPPORTED when there is no GPU heap, DUET_ERR_NO_MEMORY when full
 * (DUET_CUDA_HEAP_SIZE sets its size). Freed with duet_free(). duet_ptr() of a GPU heap
 * address is the peer's address in my mapping (a device pointer), or NULL when the peer's
 * GPU memory is not mapped here (another host). */
void *duet_malloc_device(duet_comm_t comm, size_t size);

/* The kernel handle of a communicator (a team's has the team's pe numbers). Not collective;
 * the first call per communicator allocates its device tables (DUET_ERR_CUDA if that fails).
 * DUET_ERR_UNSUPPORTED without a GPU heap, DUET_ERR_INVALID_ARG for a bad comm or NULL out. */
duet_status_t duet_device_comm_get(duet_comm_t comm, duet_device_comm_t *out);

/* ------------------------------------------------------------------------------------
 * Host one-sided calls on GPU memory, and their stream-ordered forms
 *
 * Every host one-sided call of duet.h (put / get / p / g and their typed, nbi and strided
 * forms, put_signal, signal_op / fetch / wait_until, atomics, wait_until / test, fence,
 * quiet, barrier) also takes addresses of the GPU heap (duet_malloc_device). The local
 * buffer of a put / get may be host or device memory. They run on an internal stream of
 * this process (one per device, shared by its communicators): blocking forms return when
 * the local buffer may be reused (a put of at most 64 bytes travels in a kernel's
 * arguments, so it returns at once and completes at quiet), nbi forms complete at
 * duet_quiet, which every barrier runs first. Host waits on GPU words poll them with a copy
 * (a few microseconds per look), bounded like every wait (DUET_WAIT_TIMEOUT, abort).
 * Strided forms on GPU memory need strides >= 1. They do not order against the caller's
 * own streams, the legacy default stream included: synchronize the work that writes a
 * device source before putting it from the host (a cudaMemcpy of more than 64 KiB from
 * pageable memory may return before its copy is done: cudaDeviceSynchronize after it), or
 * use the _on_stream forms below. Costs on one H200 under MPS: host p + quiet 10.9 us (a
 * kernel launch + a stream synchronize), barrier_all with the GPU heap in use 0.19 us at 2
 * ranks (nothing pending: the host barrier), barrier_on_stream + synchronize 14 us.
 *
 * The _on_stream forms are ordered on the caller's stream (a cudaStream_t passed as void *;
 * NULL is the legacy default stream): they start after the stream's earlier work and later
 * work waits for them. They return when enqueued; errors of the arguments come back at once
 * (DUET_ERR_INVALID_ARG: not a live comm, pe out of range, an address outside the GPU heap);
 * a stream-ordered wait or barrier that fails on the GPU (abort, DUET_ERR_REVOKED...) records
 * its status, which the next duet_quiet(comm) returns. DUET_ERR_UNSUPPORTED without a GPU
 * heap (or in a build without CUDA), DUET_ERR_CUDA when CUDA refuses the launch. Any rank,
 * any thread (with comm's device current: duet_cuda_device). Put, get, signal, signal wait
 * and barrier may be captured into a CUDA graph and replayed (their arguments are fixed at
 * capture: a wait for a value must find that value again in every replay, e.g. a signal SET
 * and cleared in the graph); duet_quiet_on_stream is refused while captured
 * (DUET_ERR_UNSUPPORTED: it waits for host operations pending at the call, not at a replay).
 * ------------------------------------------------------------------------------------ */

/* bytes from src (device or pinned host memory, as of this point in the stream) to the
 * symmetric GPU address dst on pe; complete when later work of the stream starts. */
duet_status_t duet_put_on_stream(duet_comm_t comm, void *dst, const void *src, size_t bytes, int pe, void *stream);
/* bytes of the symmetric GPU address src on pe into dst (device or pinned host memory). */
duet_status_t duet_get_on_stream(duet_comm_t comm, void *dst, const void *src, size_t bytes, int pe, void *stream);
/* Sets (DUET_SIGNAL_SET) or adds to (DUET_SIGNAL_ADD) the symmetric GPU uint64 sig on pe,
 * after all earlier work of the stream (its puts land before the signal). */
duet_status_t duet_signal_op_on_stream(duet_comm_t comm, uint64_t *sig, uint64_t value, int sig_op, int pe,
                                       void *stream);
/* The stream waits until my GPU signal *sig compares (DUET_CMP_*) true with value: a
 * one-thread kernel polls it (and the communicator's abort word), so later work of the stream
 * starts after the condition held. The kernel occupies one SM slot while it waits. */
duet_status_t duet_signal_wait_until_on_stream(duet_comm_t comm, uint64_t *sig, int cmp, uint64_t value,
                                               void *stream);
/* Collective: a barrier of all ranks of comm, in the stream (a one-block kernel running the
 * device API's duet_dev_barrier_block): later work of every rank's stream starts after
 * every rank's earlier work (and its puts) is done. Every rank must call it, as many times;
 * the ranks' barrier kernels must be able to run at the same time (ranks sharing a GPU:
 * CUDA MPS). It continues the count of the device barriers of comm's kernels. */
duet_status_t duet_barrier_on_stream(duet_comm_t comm, void *stream);
/* Later work of the stream starts after this process's pending host nbi operations on the
 * GPU heap (those a duet_quiet would wait for) are complete. Work enqueued by the _on_stream
 * forms on this stream is ordered already. */
duet_status_t duet_quiet_on_stream(duet_comm_t comm, void *stream);

/* A launch geometry (CUDA's dim3, without the CUDA headers). */
typedef struct {
    unsigned x, y, z;
} duet_dim3_t;

/* Collective: launches `func` (a __global__ function's address) with grid x block threads,
 * `args` (as cudaLaunchKernel takes them) and `shmem` bytes of dynamic shared memory on the
 * stream, after checking that the whole grid can be resident on comm's GPU at once
 * (cudaOccupancyMaxActiveBlocksPerMultiprocessor x SMs; DUET_ERR_INVALID_ARG with the numbers
 * when not). Grids of more than one block go through cudaLaunchCooperativeKernel where the
 * device (and MPS) accept it, so grid-wide sync is legal in the kernel there; where refused
 * the grid is launched normally (still all resident, so waits across blocks and ranks work,
 * but not cooperative groups' grid.sync()). Every rank of comm must
 * call it for its part: kernels that synchronize across ranks (device barriers, waits for
 * peers' signals) need every rank's kernel resident at the same time, so ranks that share a
 * GPU must together fit on it, which this call cannot see. DUET_ERR_UNSUPPORTED without a GPU
 * heap, DUET_ERR_CUDA when the launch fails. */
duet_status_t duet_launch_collective(duet_comm_t comm, const void *func, duet_dim3_t grid, duet_dim3_t block,
                                     void **args, size_t shmem, void *stream);

#ifdef __cplusplus
}
#endif

#endif /* DUET_CUDA_H */
