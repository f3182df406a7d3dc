/*
 * duet_device.cuh — the Duet device API: one-sided communication from inside a CUDA kernel.
 *
 * Header-only: a kernel compiled with plain nvcc (no -rdc, no device library to link)
 * includes this file and calls the functions below on a duet_device_comm_t `h` that the host
 * got from duet_device_comm_get() and passed to the kernel by value. Needs sm_70 or newer
 * (scoped PTX memory operations) and C++17 (nvcc's default); Duet builds for sm_90.
 *
 *     #include <duet/duet_device.cuh>
 *     __global__ void ping(duet_device_comm_t h, uint64_t *flag) {
 *         int peer = (duet_dev_my_pe(h) + 1) % duet_dev_n_pes(h);
 *         duet_dev_signal_op(h, flag, 1, DUET_SIGNAL_ADD, peer);
 *         int st = duet_dev_signal_wait_until(h, flag, DUET_CMP_GE, 1);  // DUET_OK or abort
 *     }
 *
 * Conventions for every call:
 *   - `h` is the communicator's kernel handle; "pe" arguments are ranks in that communicator
 *     (a team's handle numbers its own members). Nothing is checked on the device: a bad pe
 *     or a non-symmetric remote address is undefined behaviour (check on the host).
 *   - A "symmetric address" is an address in my part of the GPU heap (duet_malloc_device):
 *     h.heap <= addr < h.heap + h.heap_bytes. Remote arguments (the put's dest, the get's
 *     src, signals and atomics' targets) must be symmetric addresses; the local arguments
 *     may be any global memory of this GPU. duet_dev_ptr() turns one into the peer's
 *     address; every call goes through it.
 *   - Scope: a plain name is called by one thread and acts for that thread alone. `_warp`
 *     forms are called by all 32 lanes of a converged warp with the same arguments; `_block`
 *     forms by every thread of the block with the same arguments (they contain
 *     __syncthreads(), so they must not sit in divergent code). The threads share the work.
 *   - Completion: a put returns when its source may be reused (for the _warp / _block forms:
 *     by any thread of the group); the data is visible at the target after a quiet, a
 *     barrier, or before a later signal of the same put_signal call (and before later puts
 *     to the same pe after a fence). A get returns with the data in dest (visible to the
 *     whole group for the _warp / _block forms). _nbi forms need not wait even for that:
 *     their buffers must not be touched until a quiet of the same scope (for _warp / _block
 *     nbi forms: duet_dev_quiet_warp / duet_dev_quiet_block). With peers reached by
 *     load/store (same GPU, or P2P over NVLink) the blocking and _nbi puts do the same work;
 *     the difference is only the trailing group sync.
 *   - Waiting: every call that waits (signal_wait_until, wait_until, barriers) polls the
 *     communicator's abort word *h.abort and returns DUET_OK (0) when satisfied, or the
 *     nonzero status the host stored there (duet_cuda_set_abort on the host side), so a
 *     kernel waiting for a signal that never comes can be stopped. They return int (a
 *     duet_status_t value).
 *
 * Remote pes (another host, or every other pe with DUET_CUDA_PEERS=proxy): their GPU memory is
 * not mapped here, so every call toward one goes through the host proxy (docs/NETWORK.md 2.9):
 * the calling thread (one thread of a _warp / _block group, after a group sync) writes a
 * 64-byte command into a ring in mapped host memory and the process's proxy thread carries it
 * through the host heap's endpoints to the target's proxy, which applies it to its GPU part.
 * The semantics above hold (fence by construction: per pe, commands are applied in issue
 * order; a put_signal's signal after its data), but the costs differ: a blocking put waits
 * until the proxy staged the source, a blocking get / g / fetching atomic waits for the round
 * trip (tens of microseconds: not yet measured), nbi forms, p, signal_op and non-fetching
 * atomics only post. duet_dev_quiet (and the barriers, which start with one) waits until every
 * command posted before it is applied at its target, and returns DUET_OK or the first failure
 * since the last quiet (a dead target: DUET_ERR_PEER_FAILED; abort; timeout); the host's
 * duet_quiet and barriers also complete them. Fetching calls that fail return 0. duet_dev_ptr
 * returns NULL for a remote pe. A pe whose memory is mapped costs one test of h.remote more.
 *
 * Memory model. Remote memory is plain global memory mapped into this process (the peer's
 * CUDA VMM allocation, or its cudaIpc mapping), so every operation is a load, store or atomic of this GPU at
 * system scope (.sys: the peer may be another process under MPS, or another GPU over P2P).
 * Data moves with ordinary (weak) loads and stores, vectorized; everything that orders or
 * synchronizes is inline PTX with an explicit scope and semantics:
 *     signal set / add in put_signal   st.release.sys / red.release.sys.add
 *     signal_wait_until, wait_until    ld.acquire.sys, polled
 *     p / g, signal_op, atomic fetch/set   ld/st.relaxed.sys (single-copy atomic, unordered)
 *     atomics                          atom.sys (relaxed), through the *_system intrinsics
 *     fence                            fence.acq_rel.sys
 *     quiet                            fence.sc.sys (__threadfence_system)
 * Why PTX and not cuda::atomic_ref: the same instructions, but the scope and the ordering of
 * each step are visible in these headers, nothing depends on where libcu++ lives in the toolkit,
 * and polling loads are exactly one ld.acquire.sys (no extra fences). A _warp / _block call
 * that signals does its stores on every thread, syncs the group (__syncwarp /
 * __syncthreads, which order the group's memory at CTA scope) and then releases from one
 * thread: release is cumulative, so the peer that acquires the signal sees every thread's
 * data (the pattern of cooperative_groups' grid sync).
 */
#ifndef DUET_DEVICE_CUH
#define DUET_DEVICE_CUH

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <type_traits>
#include "duet/duet_cuda.h"
#include "duet/duet_proxy_ring.h"

#ifndef __CUDACC__
#error "duet_device.cuh is CUDA C++: compile it with nvcc"
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 700
#error "duet_device.cuh needs sm_70 or newer"
#endif

/* Words of a communicator's synchronization area (h.sync) that the device barriers use: the
 * host gives every communicator (a team too) its own zeroed area in the GPU heap, at the same
 * offset on every member (a 1 KiB slot of the part's sync words: up to 127 pes). Layout:
 *   sync[q], q < n_pes   barriers that pe q has entered and signalled to me (q writes it)
 *   sync[n_pes]          barriers that I have completed (only I write it; it survives the
 *                        kernel, so consecutive launches continue the count) */
#ifndef DUET_DEVICE_SYNC_WORDS
#define DUET_DEVICE_SYNC_WORDS(n_pes) ((size_t)(n_pes) + 1)
#endif

/* The API comes in parts, included here in this order (each uses the ones before it):
 *   duet_device_detail.cuh   internals: PTX wrappers, the copy engine
 *   duet_device_proxy.cuh    internals: the proxy path (remote pes)
 *   (this file)              the communicator: my_pe, n_pes, duet_dev_ptr
 *   duet_device_rma.cuh      p / g, put / get
 *   duet_device_signal.cuh   signals, wait_until / test
 *   duet_device_amo.cuh      atomics
 *   duet_device_sync.cuh     fence, quiet, barriers
 *   duet_device_util.cuh     building blocks for layers on this API: thread indices, the
 *                            group copy, the acquire load and comparison of the waits, the
 *                            abort word */
#include "duet/duet_device_detail.cuh"
#include "duet/duet_device_proxy.cuh"

/* ------------------------------------------------------------------------------------
 * The communicator
 * ------------------------------------------------------------------------------------ */

/* My pe and the number of pes of the communicator the handle was made from. Any thread. */
static __device__ __forceinline__ int duet_dev_my_pe(const duet_device_comm_t &h) { return h.my_pe; }
static __device__ __forceinline__ int duet_dev_n_pes(const duet_device_comm_t &h) { return h.n_pes; }

/* The address at which this kernel reaches the object that the symmetric address `obj`
 * names on `pe` (obj itself for pe == my pe). With the VMM layout (h.stride != 0) every
 * local part is mapped at a fixed stride, in the world's pe order:
 *     obj + (heap_pe[pe] - my_heap_pe) * stride;
 * without it (stride 0: the cudaIpc fallback) the parts lie anywhere and the table says where:
 *     peer_heap[heap_pe[pe]] + (obj - heap).
 * NULL for a remote pe (reached through the host proxy: another host, or any other pe with
 * DUET_CUDA_PEERS=proxy): its memory cannot be loaded or stored; use the calls below.
 * Any thread; no memory access but cached reads of h.heap_pe[pe] (and h.remote, peer_heap). */
template <typename T>
static __device__ __forceinline__ T *duet_dev_ptr(const duet_device_comm_t &h, T *obj, int pe)
{
    if (duet_dev_detail::remote_(h, pe)) return nullptr;
    return duet_dev_detail::mapped_ptr_(h, obj, pe);
}
template <typename T>
static __device__ __forceinline__ const T *duet_dev_ptr(const duet_device_comm_t &h, const T *obj,
                                                        int pe)
{
    return duet_dev_ptr(h, (T *)obj, pe);
}

#include "duet/duet_device_rma.cuh"
#include "duet/duet_device_signal.cuh"
#include "duet/duet_device_amo.cuh"
#include "duet/duet_device_sync.cuh"
#include "duet/duet_device_util.cuh"

#endif /* DUET_DEVICE_CUH */
