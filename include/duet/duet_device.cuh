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
 * each step are visible in this file, nothing depends on where libcu++ lives in the toolkit,
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

/* ------------------------------------------------------------------------------------
 * Internals (not API): PTX wrappers and the copy engine
 * ------------------------------------------------------------------------------------ */
namespace duet_dev_detail {

/* Keeps a parameter out of template deduction: duet_dev_p(h, int64_ptr, 1, pe) takes T from
 * the pointer alone. */
template <typename T> struct same_ {
    using type = T;
};

template <typename T> struct is_amo_ {
    static constexpr bool value = sizeof(T) == 4 || sizeof(T) == 8;
};

template <typename To, typename From>
static __device__ __forceinline__ To bits_(From v)
{
    static_assert(sizeof(To) == sizeof(From), "bit cast between different sizes");
    To t;
    memcpy(&t, &v, sizeof t);
    return t;
}

static __device__ __forceinline__ uint32_t ld_acquire_u32(const void *p)
{
    uint32_t v;
    asm volatile("ld.acquire.sys.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
static __device__ __forceinline__ uint64_t ld_acquire_u64(const void *p)
{
    uint64_t v;
    asm volatile("ld.acquire.sys.global.b64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
static __device__ __forceinline__ uint32_t ld_relaxed_u32(const void *p)
{
    uint32_t v;
    asm volatile("ld.relaxed.sys.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
static __device__ __forceinline__ uint64_t ld_relaxed_u64(const void *p)
{
    uint64_t v;
    asm volatile("ld.relaxed.sys.global.b64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
static __device__ __forceinline__ void st_relaxed_u32(void *p, uint32_t v)
{
    asm volatile("st.relaxed.sys.global.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
static __device__ __forceinline__ void st_relaxed_u64(void *p, uint64_t v)
{
    asm volatile("st.relaxed.sys.global.b64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
static __device__ __forceinline__ void st_release_u64(void *p, uint64_t v)
{
    asm volatile("st.release.sys.global.b64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
static __device__ __forceinline__ void red_release_add_u64(void *p, uint64_t v)
{
    asm volatile("red.release.sys.global.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
static __device__ __forceinline__ void red_relaxed_add_u64(void *p, uint64_t v)
{
    asm volatile("red.relaxed.sys.global.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
static __device__ __forceinline__ void fence_acq_rel_sys()
{
    asm volatile("fence.acq_rel.sys;" ::: "memory");
}

/* Typed acquire / relaxed accesses for 4- and 8-byte types. */
template <typename T> static __device__ __forceinline__ T ld_acquire(const T *p)
{
    static_assert(is_amo_<T>::value, "4- or 8-byte types only");
    if constexpr (sizeof(T) == 4) return bits_<T>(ld_acquire_u32(p));
    else return bits_<T>(ld_acquire_u64(p));
}
template <typename T> static __device__ __forceinline__ T ld_relaxed(const T *p)
{
    static_assert(is_amo_<T>::value, "4- or 8-byte types only");
    if constexpr (sizeof(T) == 4) return bits_<T>(ld_relaxed_u32(p));
    else return bits_<T>(ld_relaxed_u64(p));
}
template <typename T> static __device__ __forceinline__ void st_relaxed(T *p, T v)
{
    static_assert(is_amo_<T>::value, "4- or 8-byte types only");
    if constexpr (sizeof(T) == 4) st_relaxed_u32(p, bits_<uint32_t>(v));
    else st_relaxed_u64(p, bits_<uint64_t>(v));
}

template <typename T> static __device__ __forceinline__ bool cmp_(T a, int cmp, T b)
{
    switch (cmp) {
    case DUET_CMP_EQ: return a == b;
    case DUET_CMP_NE: return a != b;
    case DUET_CMP_GT: return a > b;
    case DUET_CMP_GE: return a >= b;
    case DUET_CMP_LT: return a < b;
    default: return a <= b; /* DUET_CMP_LE; callers reject other values first */
    }
}

/* The abort word: read once every ABORT_EVERY polls. It may live in host memory (a PCIe
 * read of about a microsecond), so it stays off the fast path of a poll loop. */
enum { ABORT_EVERY = 256 };
static __device__ __forceinline__ int abort_status(const duet_device_comm_t &h)
{
    return h.abort ? (int)*h.abort : 0;
}

/* This thread's index in the block and the block's size, for any block shape. */
static __device__ __forceinline__ unsigned block_tid()
{
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
static __device__ __forceinline__ unsigned block_size()
{
    return blockDim.x * blockDim.y * blockDim.z;
}
static __device__ __forceinline__ unsigned lane_id()
{
    unsigned l;
    asm("mov.u32 %0, %%laneid;" : "=r"(l));
    return l;
}

/* Body of a copy: n elements of V, element i by thread (i mod nthr). Four loads in flight
 * per thread before the four stores (16-byte V: 64 bytes per thread per round). */
template <typename V>
static __device__ __forceinline__ void copy_body_(V *d, const V *s, size_t n, unsigned tid,
                                                  unsigned nthr)
{
    enum { U = 4 };
    size_t i = tid;
    for (; i + (size_t)(U - 1) * nthr < n; i += (size_t)U * nthr) {
        V r[U];
#pragma unroll
        for (int u = 0; u < U; u++) r[u] = s[i + (size_t)u * nthr];
#pragma unroll
        for (int u = 0; u < U; u++) d[i + (size_t)u * nthr] = r[u];
    }
    for (; i < n; i += nthr) d[i] = s[i];
}

/* Copies bytes from src to dst, shared by threads tid = 0..nthr-1: a scalar head up to the
 * alignment of dst, a body in the widest vector that dst and src can both be aligned to
 * (16 bytes when dst - src is a multiple of 16), a scalar tail. */
static __device__ __forceinline__ void copy(void *dst, const void *src, size_t bytes,
                                            unsigned tid, unsigned nthr)
{
    char *d = (char *)dst;
    const char *s = (const char *)src;
    uintptr_t mis = (uintptr_t)d ^ (uintptr_t)s;
    size_t w = (mis & 15) == 0 ? 16 : (mis & 7) == 0 ? 8 : (mis & 3) == 0 ? 4 : (mis & 1) == 0 ? 2 : 1;
    size_t head = (w - ((uintptr_t)d & (w - 1))) & (w - 1);
    if (head > bytes) head = bytes;
    for (size_t i = tid; i < head; i += nthr) d[i] = s[i];
    d += head;
    s += head;
    bytes -= head;
    size_t n = bytes / w;
    switch (w) {
    case 16: copy_body_((uint4 *)d, (const uint4 *)s, n, tid, nthr); break;
    case 8: copy_body_((uint2 *)d, (const uint2 *)s, n, tid, nthr); break;
    case 4: copy_body_((uint32_t *)d, (const uint32_t *)s, n, tid, nthr); break;
    case 2: copy_body_((uint16_t *)d, (const uint16_t *)s, n, tid, nthr); break;
    default: copy_body_((uint8_t *)d, (const uint8_t *)s, n, tid, nthr); break;
    }
    size_t done = n * w, tail = bytes - done;
    /* the tail goes to the threads that had the least of the body */
    for (size_t i = (tid + nthr - (unsigned)(n % nthr)) % nthr; i < tail; i += nthr)
        d[done + i] = s[done + i];
}

/* The signal update of put_signal / signal_op; release orders it after the caller's (and,
 * through the group sync, the group's) earlier stores. */
static __device__ __forceinline__ void signal_release(uint64_t *remote, uint64_t value, int op)
{
    if (op == DUET_SIGNAL_ADD) red_release_add_u64(remote, value);
    else st_release_u64(remote, value);
}

/* ---- the proxy path (remote pes: docs/NETWORK.md 2.9, the ring: duet_proxy_ring.h) */

/* pe's world (heap) pe number. */
static __device__ __forceinline__ int world_pe_(const duet_device_comm_t &h, int pe) { return __ldg(h.heap_pe + pe); }

/* 1 when pe is reached through the host proxy. One test of a kernel parameter when no pe is
 * remote (h.remote == NULL), so the load/store paths keep their cost. */
static __device__ __forceinline__ bool remote_(const duet_device_comm_t &h, int pe)
{
    return h.remote != nullptr && __ldg(h.remote + world_pe_(h, pe)) != 0;
}

/* pe's copy of my symmetric obj, for a pe whose part is mapped here (no remote check). */
template <typename T> static __device__ __forceinline__ T *mapped_ptr_(const duet_device_comm_t &h, T *obj, int pe)
{
    int w = world_pe_(h, pe);
    ptrdiff_t dist = h.stride ? (ptrdiff_t)(w - h.my_heap_pe) * (ptrdiff_t)h.stride : h.peer_heap[w] - h.heap;
    return (T *)((char *)obj + dist);
}

static __device__ __forceinline__ uint64_t heap_off_(const duet_device_comm_t &h, const void *sym)
{
    return (uint64_t)((const char *)sym - h.heap);
}

/* Posts one command: a ticket from the counter, a wait for the slot (its previous user done,
 * abort checked), the command as seven 8-byte stores into mapped host memory, then ready with
 * st.release.sys (the caller's earlier stores, and its group's after a group sync, are
 * visible to the proxy before it sees the command). Returns DUET_OK and the ticket, or the
 * abort status (the ticket is then lost: the ring's later commands stall, which is why an
 * aborted communicator's device state is undefined and the proxy's deadline ends it). */
static __device__ __noinline__ int px_post_(const duet_device_comm_t &h, unsigned op, int pe, uint64_t roff,
                                            const void *laddr, uint64_t bytes, uint64_t value, uint64_t cond,
                                            uint64_t sig_off, unsigned sig_op, unsigned amo_op, unsigned width,
                                            uint64_t *ticket)
{
    unsigned long long t = atomicAdd(h.proxy_head, 1ull);
    unsigned s = (unsigned)(t % DUET_PROXY_SLOTS);
    duet_proxy_done_t *d = &h.proxy_ring->done[s];
    for (unsigned spin = 1; ld_acquire_u64(&d->free) != t; spin++)
        if (spin % ABORT_EVERY == 0) {
            int st = abort_status(h);
            if (st) return st;
        }
    uint64_t *c = (uint64_t *)&h.proxy_ring->cmd[s];
    uint64_t w1 = (uint64_t)(op & 0xff) | (uint64_t)(sig_op & 0xff) << 8 | (uint64_t)(amo_op & 0xff) << 16 |
                  (uint64_t)(width & 0xff) << 24 | (uint64_t)(uint32_t)world_pe_(h, pe) << 32;
    st_relaxed_u64(c + 1, w1);
    st_relaxed_u64(c + 2, roff);
    st_relaxed_u64(c + 3, (uint64_t)(uintptr_t)laddr);
    st_relaxed_u64(c + 4, bytes);
    st_relaxed_u64(c + 5, value);
    st_relaxed_u64(c + 6, cond);
    st_relaxed_u64(c + 7, sig_off);
    st_release_u64(c, t + 1);
    *ticket = t;
    return DUET_OK;
}

/* Waits (abort checked) until the proxy completes blocking command t; its status, and its
 * result to *result; then frees the slot for ticket t + SLOTS. */
static __device__ __noinline__ int px_wait_(const duet_device_comm_t &h, uint64_t t, uint64_t *result)
{
    duet_proxy_done_t *d = &h.proxy_ring->done[t % DUET_PROXY_SLOTS];
    for (unsigned spin = 1; ld_acquire_u64(&d->done) != t + 1; spin++)
        if (spin % ABORT_EVERY == 0) {
            int st = abort_status(h);
            if (st) return st; /* the slot stays taken: see px_post_ */
        }
    int st = (int)ld_relaxed_u32(&d->status);
    if (result) *result = ld_relaxed_u64(&d->result);
    st_release_u64(&d->free, t + DUET_PROXY_SLOTS);
    return st;
}

/* A command, waited for when blocking. */
static __device__ __forceinline__ int px_call_(const duet_device_comm_t &h, unsigned op, bool blocking, int pe,
                                               uint64_t roff, const void *laddr, uint64_t bytes, uint64_t value,
                                               uint64_t cond, uint64_t sig_off, unsigned sig_op, unsigned amo_op,
                                               unsigned width, uint64_t *result = nullptr)
{
    uint64_t t;
    int st = px_post_(h, op | (blocking ? DUET_PROXY_BLOCKING : 0u), pe, roff, laddr, bytes, value, cond, sig_off,
                      sig_op, amo_op, width, &t);
    if (st || !blocking) return st;
    return px_wait_(h, t, result);
}

static __device__ __forceinline__ int px_put_(const duet_device_comm_t &h, void *dest, const void *src, size_t bytes,
                                              int pe, bool blocking, const uint64_t *sig = nullptr,
                                              uint64_t value = 0, int sig_op = 0)
{
    if (bytes == 0 && !sig) return DUET_OK;
    uint64_t sig_off = sig ? heap_off_(h, sig) : DUET_PROXY_NO_SIGNAL;
    if (bytes > 0 && bytes <= DUET_PROXY_INLINE_MAX) { /* the bytes ride in the command: no staging copy */
        uint64_t w = 0;
        for (size_t i = 0; i < bytes; i++) w |= (uint64_t)((const unsigned char *)src)[i] << (8 * i);
        return px_call_(h, DUET_PROXY_PUT | DUET_PROXY_INLINE, blocking, pe, heap_off_(h, dest), nullptr, bytes, value,
                        w, sig_off, (unsigned)sig_op, 0, 0);
    }
    return px_call_(h, DUET_PROXY_PUT, blocking, pe, heap_off_(h, dest), src, bytes, value, 0, sig_off,
                    (unsigned)sig_op, 0, 0);
}
static __device__ __forceinline__ int px_get_(const duet_device_comm_t &h, void *dest, const void *src, size_t bytes,
                                              int pe, bool blocking)
{
    if (bytes == 0) return DUET_OK;
    return px_call_(h, DUET_PROXY_GET, blocking, pe, heap_off_(h, src), dest, bytes, 0, 0, DUET_PROXY_NO_SIGNAL, 0, 0,
                    0);
}
static __device__ __forceinline__ int px_signal_(const duet_device_comm_t &h, const uint64_t *sig, uint64_t value,
                                                 int sig_op, int pe)
{
    return px_call_(h, DUET_PROXY_SIGNAL, false, pe, 0, nullptr, 0, value, 0, heap_off_(h, sig), (unsigned)sig_op, 0, 0);
}
/* An atomic of T's width on pe; fetching forms block and return the old value's bits. */
template <typename T>
static __device__ __forceinline__ uint64_t px_amo_(const duet_device_comm_t &h, const T *dest, unsigned amo_op,
                                                   bool fetch, uint64_t operand, uint64_t cond, int pe)
{
    uint64_t old = 0;
    (void)px_call_(h, DUET_PROXY_AMO, fetch, pe, heap_off_(h, dest), nullptr, 0, operand, cond, DUET_PROXY_NO_SIGNAL,
                   0, amo_op, (unsigned)sizeof(T), &old);
    return old;
}
/* The bits of a 4- or 8-byte value, widened. */
template <typename T> static __device__ __forceinline__ uint64_t wbits_(T v)
{
    if constexpr (sizeof(T) == 4) return (uint64_t)bits_<uint32_t>(v);
    else return bits_<uint64_t>(v);
}
template <typename T> static __device__ __forceinline__ T from_wbits_(uint64_t v)
{
    if constexpr (sizeof(T) == 4) return bits_<T>((uint32_t)v);
    else return bits_<T>(v);
}
/* A _warp / _block form's call to a remote pe: the group syncs (so one thread's release
 * covers every thread's stores), one thread posts the one command for the whole transfer
 * (post; the blocking forms' post waits for it), and, with `again`, the group syncs once more
 * so that every thread returns after it. */
template <typename Post> static __device__ __forceinline__ void px_warp_(Post post, bool again)
{
    __syncwarp();
    if (lane_id() == 0) post();
    if (again) __syncwarp();
}
template <typename Post> static __device__ __forceinline__ void px_block_(Post post, bool again)
{
    __syncthreads();
    if (block_tid() == 0) post();
    if (again) __syncthreads();
}

/* QUIET through the proxy: every command posted before it is complete at its target. */
static __device__ __forceinline__ int px_quiet_(const duet_device_comm_t &h)
{
    if (h.remote == nullptr) return DUET_OK;
    return px_call_(h, DUET_PROXY_QUIET, true, h.my_pe, 0, nullptr, 0, 0, 0, DUET_PROXY_NO_SIGNAL, 0, 0, 0);
}

} /* namespace duet_dev_detail */

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

/* ------------------------------------------------------------------------------------
 * Single elements: p / g (thread scope)
 *
 * duet_dev_p: stores value into *dest on pe with one single-copy-atomic store (st.relaxed.sys;
 * T of 4 or 8 bytes, e.g. int32_t, uint32_t, int64_t, uint64_t, float, double). Unordered
 * with the caller's other accesses until a fence / quiet; a peer polling dest
 * (wait_until) sees it without them. duet_dev_g: loads *src on pe (ld.relaxed.sys).
 * ------------------------------------------------------------------------------------ */
template <typename T>
static __device__ __forceinline__ void duet_dev_p(const duet_device_comm_t &h, T *dest,
                                                  typename duet_dev_detail::same_<T>::type value, int pe)
{
    if (duet_dev_detail::remote_(h, pe)) { /* an atomic set through the proxy, not waited for */
        (void)duet_dev_detail::px_amo_(h, dest, DUET_PROXY_AMO_SET, false, duet_dev_detail::wbits_<T>(value), 0, pe);
        return;
    }
    duet_dev_detail::st_relaxed(duet_dev_detail::mapped_ptr_(h, dest, pe), value);
}
template <typename T>
static __device__ __forceinline__ T duet_dev_g(const duet_device_comm_t &h, const T *src, int pe)
{
    if (duet_dev_detail::remote_(h, pe)) /* an atomic fetch through the proxy, waited for */
        return duet_dev_detail::from_wbits_<T>(duet_dev_detail::px_amo_(h, src, DUET_PROXY_AMO_FETCH, true, 0, 0, pe));
    return duet_dev_detail::ld_relaxed(duet_dev_detail::mapped_ptr_(h, src, pe));
}

/* ------------------------------------------------------------------------------------
 * Bulk transfers
 *
 * put: bytes from the local src to the symmetric dest on pe.  get: bytes from the symmetric
 * src on pe to the local dest. Any sizes and alignments (16-byte vector loads / stores when
 * dest and src are equally aligned mod 16, narrower otherwise); bytes == 0 does nothing
 * (the _warp / _block forms still sync the group). Buffers must not overlap. Completion:
 * see the header comment (put: data visible after quiet / barrier; blocking forms end with
 * a group sync, _nbi forms do not).
 * ------------------------------------------------------------------------------------ */
static __device__ __forceinline__ void duet_dev_put_nbi(const duet_device_comm_t &h, void *dest,
                                                        const void *src, size_t bytes, int pe)
{
    if (duet_dev_detail::remote_(h, pe)) {
        (void)duet_dev_detail::px_put_(h, dest, src, bytes, pe, false);
        return;
    }
    duet_dev_detail::copy(duet_dev_detail::mapped_ptr_(h, dest, pe), src, bytes, 0, 1);
}
static __device__ __forceinline__ void duet_dev_put(const duet_device_comm_t &h, void *dest,
                                                    const void *src, size_t bytes, int pe)
{
    if (duet_dev_detail::remote_(h, pe)) {
        (void)duet_dev_detail::px_put_(h, dest, src, bytes, pe, true);
        return;
    }
    duet_dev_put_nbi(h, dest, src, bytes, pe);
}
static __device__ __forceinline__ void duet_dev_get_nbi(const duet_device_comm_t &h, void *dest,
                                                        const void *src, size_t bytes, int pe)
{
    if (duet_dev_detail::remote_(h, pe)) {
        (void)duet_dev_detail::px_get_(h, dest, src, bytes, pe, false);
        return;
    }
    duet_dev_detail::copy(dest, duet_dev_detail::mapped_ptr_(h, src, pe), bytes, 0, 1);
}
static __device__ __forceinline__ void duet_dev_get(const duet_device_comm_t &h, void *dest,
                                                    const void *src, size_t bytes, int pe)
{
    if (duet_dev_detail::remote_(h, pe)) {
        (void)duet_dev_detail::px_get_(h, dest, src, bytes, pe, true);
        return;
    }
    duet_dev_get_nbi(h, dest, src, bytes, pe);
}

/* Remote pes (the proxy) in the _warp / _block forms: one command for the whole transfer,
 * posted by one thread of the group (px_warp_ / px_block_). */
static __device__ __forceinline__ void duet_dev_put_warp_nbi(const duet_device_comm_t &h, void *dest,
                                                             const void *src, size_t bytes, int pe)
{
    if (duet_dev_detail::remote_(h, pe)) {
        duet_dev_detail::px_warp_([&] { (void)duet_dev_detail::px_put_(h, dest, src, bytes, pe, false); }, false);
        return;
    }
    duet_dev_detail::copy(duet_dev_detail::mapped_ptr_(h, dest, pe), src, bytes, duet_dev_detail::lane_id(), 32);
}
static __device__ __forceinline__ void duet_dev_put_warp(const duet_device_comm_t &h, void *dest,
                                                         const void *src, size_t bytes, int pe)
{
    if (duet_dev_detail::remote_(h, pe)) {
        duet_dev_detail::px_warp_([&] { (void)duet_dev_detail::px_put_(h, dest, src, bytes, pe, true); }, true);
        return;
    }
    duet_dev_put_warp_nbi(h, dest, src, bytes, pe);
    __syncwarp();
}
static __device__ __forceinline__ void duet_dev_get_warp_nbi(const duet_device_comm_t &h, void *dest,
                                                             const void *src, size_t bytes, int pe)
{
    if (duet_dev_detail::remote_(h, pe)) {
        duet_dev_detail::px_warp_([&] { (void)duet_dev_detail::px_get_(h, dest, src, bytes, pe, false); }, false);
        return;
    }
    duet_dev_detail::copy(dest, duet_dev_detail::mapped_ptr_(h, src, pe), bytes, duet_dev_detail::lane_id(), 32);
}
static __device__ __forceinline__ void duet_dev_get_warp(const duet_device_comm_t &h, void *dest,
                                                         const void *src, size_t bytes, int pe)
{
    if (duet_dev_detail::remote_(h, pe)) {
        duet_dev_detail::px_warp_([&] { (void)duet_dev_detail::px_get_(h, dest, src, bytes, pe, true); }, true);
        return;
    }
    duet_dev_get_warp_nbi(h, dest, src, bytes, pe);
    __syncwarp();
}

static __device__ __forceinline__ void duet_dev_put_block_nbi(const duet_device_comm_t &h, void *dest,
                                                              const void *src, size_t bytes, int pe)
{
    if (duet_dev_detail::remote_(h, pe)) {
        duet_dev_detail::px_block_([&] { (void)duet_dev_detail::px_put_(h, dest, src, bytes, pe, false); }, false);
        return;
    }
    duet_dev_detail::copy(duet_dev_detail::mapped_ptr_(h, dest, pe), src, bytes, duet_dev_detail::block_tid(),
                          duet_dev_detail::block_size());
}
static __device__ __forceinline__ void duet_dev_put_block(const duet_device_comm_t &h, void *dest,
                                                          const void *src, size_t bytes, int pe)
{
    if (duet_dev_detail::remote_(h, pe)) {
        duet_dev_detail::px_block_([&] { (void)duet_dev_detail::px_put_(h, dest, src, bytes, pe, true); }, true);
        return;
    }
    duet_dev_put_block_nbi(h, dest, src, bytes, pe);
    __syncthreads();
}
static __device__ __forceinline__ void duet_dev_get_block_nbi(const duet_device_comm_t &h, void *dest,
                                                              const void *src, size_t bytes, int pe)
{
    if (duet_dev_detail::remote_(h, pe)) {
        duet_dev_detail::px_block_([&] { (void)duet_dev_detail::px_get_(h, dest, src, bytes, pe, false); }, false);
        return;
    }
    duet_dev_detail::copy(dest, duet_dev_detail::mapped_ptr_(h, src, pe), bytes, duet_dev_detail::block_tid(),
                          duet_dev_detail::block_size());
}
static __device__ __forceinline__ void duet_dev_get_block(const duet_device_comm_t &h, void *dest,
                                                          const void *src, size_t bytes, int pe)
{
    if (duet_dev_detail::remote_(h, pe)) {
        duet_dev_detail::px_block_([&] { (void)duet_dev_detail::px_get_(h, dest, src, bytes, pe, true); }, true);
        return;
    }
    duet_dev_get_block_nbi(h, dest, src, bytes, pe);
    __syncthreads();
}

/* ------------------------------------------------------------------------------------
 * Signals: a signal is a symmetric uint64_t.
 *
 * put_signal: the put, then the signal on pe is set to value (DUET_SIGNAL_SET) or has value
 * added (DUET_SIGNAL_ADD) with release semantics, so a pe that sees the new signal value
 * through signal_wait_until (acquire) also sees all of the data. The _warp / _block forms
 * copy on every thread, sync the group, and one thread signals. The _nbi forms are the same
 * calls (the signal already waits for nothing); they exist for NVSHMEM-style code.
 * signal_op: the signal update alone, relaxed: ordered after earlier puts only with
 * duet_dev_fence() (as the host's duet_signal_op).
 * signal_fetch: my own signal's value (ld.acquire.sys).
 * signal_wait_until: polls my signal until it compares true (DUET_CMP_*) against value; the
 * value that satisfied it goes to *value_out (may be NULL). Acquire: the data of the
 * put_signal that set it is visible afterwards. Returns DUET_OK, DUET_ERR_INVALID_ARG for a
 * bad cmp, or the abort status.
 * ------------------------------------------------------------------------------------ */
static __device__ __forceinline__ void duet_dev_put_signal(const duet_device_comm_t &h, void *dest,
                                                           const void *src, size_t bytes,
                                                           uint64_t *sig_addr, uint64_t value,
                                                           int sig_op, int pe)
{
    if (duet_dev_detail::remote_(h, pe)) { /* data, then the signal, in the target's order */
        (void)duet_dev_detail::px_put_(h, dest, src, bytes, pe, true, sig_addr, value, sig_op);
        return;
    }
    duet_dev_put_nbi(h, dest, src, bytes, pe);
    duet_dev_detail::signal_release(duet_dev_detail::mapped_ptr_(h, sig_addr, pe), value, sig_op);
}
static __device__ __forceinline__ void duet_dev_put_signal_nbi(const duet_device_comm_t &h, void *dest,
                                                               const void *src, size_t bytes,
                                                               uint64_t *sig_addr, uint64_t value,
                                                               int sig_op, int pe)
{
    if (duet_dev_detail::remote_(h, pe)) {
        (void)duet_dev_detail::px_put_(h, dest, src, bytes, pe, false, sig_addr, value, sig_op);
        return;
    }
    duet_dev_put_signal(h, dest, src, bytes, sig_addr, value, sig_op, pe);
}
static __device__ __forceinline__ void duet_dev_put_signal_warp(const duet_device_comm_t &h, void *dest,
                                                                const void *src, size_t bytes,
                                                                uint64_t *sig_addr, uint64_t value,
                                                                int sig_op, int pe)
{
    if (duet_dev_detail::remote_(h, pe)) {
        duet_dev_detail::px_warp_(
            [&] { (void)duet_dev_detail::px_put_(h, dest, src, bytes, pe, true, sig_addr, value, sig_op); }, true);
        return;
    }
    duet_dev_put_warp_nbi(h, dest, src, bytes, pe);
    __syncwarp();
    if (duet_dev_detail::lane_id() == 0)
        duet_dev_detail::signal_release(duet_dev_detail::mapped_ptr_(h, sig_addr, pe), value, sig_op);
    __syncwarp();
}
static __device__ __forceinline__ void duet_dev_put_signal_warp_nbi(
    const duet_device_comm_t &h, void *dest, const void *src, size_t bytes, uint64_t *sig_addr,
    uint64_t value, int sig_op, int pe)
{
    if (duet_dev_detail::remote_(h, pe)) {
        duet_dev_detail::px_warp_(
            [&] { (void)duet_dev_detail::px_put_(h, dest, src, bytes, pe, false, sig_addr, value, sig_op); }, true);
        return;
    }
    duet_dev_put_signal_warp(h, dest, src, bytes, sig_addr, value, sig_op, pe);
}
static __device__ __forceinline__ void duet_dev_put_signal_block(const duet_device_comm_t &h, void *dest,
                                                                 const void *src, size_t bytes,
                                                                 uint64_t *sig_addr, uint64_t value,
                                                                 int sig_op, int pe)
{
    if (duet_dev_detail::remote_(h, pe)) {
        duet_dev_detail::px_block_(
            [&] { (void)duet_dev_detail::px_put_(h, dest, src, bytes, pe, true, sig_addr, value, sig_op); }, true);
        return;
    }
    duet_dev_put_block_nbi(h, dest, src, bytes, pe);
    __syncthreads();
    if (duet_dev_detail::block_tid() == 0)
        duet_dev_detail::signal_release(duet_dev_detail::mapped_ptr_(h, sig_addr, pe), value, sig_op);
}
static __device__ __forceinline__ void duet_dev_put_signal_block_nbi(
    const duet_device_comm_t &h, void *dest, const void *src, size_t bytes, uint64_t *sig_addr,
    uint64_t value, int sig_op, int pe)
{
    if (duet_dev_detail::remote_(h, pe)) {
        duet_dev_detail::px_block_(
            [&] { (void)duet_dev_detail::px_put_(h, dest, src, bytes, pe, false, sig_addr, value, sig_op); }, false);
        return;
    }
    duet_dev_put_signal_block(h, dest, src, bytes, sig_addr, value, sig_op, pe);
}

static __device__ __forceinline__ void duet_dev_signal_op(const duet_device_comm_t &h, uint64_t *sig_addr,
                                                          uint64_t value, int sig_op, int pe)
{
    if (duet_dev_detail::remote_(h, pe)) {
        (void)duet_dev_detail::px_signal_(h, sig_addr, value, sig_op, pe);
        return;
    }
    uint64_t *remote = duet_dev_detail::mapped_ptr_(h, sig_addr, pe);
    if (sig_op == DUET_SIGNAL_ADD) duet_dev_detail::red_relaxed_add_u64(remote, value);
    else duet_dev_detail::st_relaxed_u64(remote, value);
}
static __device__ __forceinline__ uint64_t duet_dev_signal_fetch(const uint64_t *sig_addr)
{
    return duet_dev_detail::ld_acquire_u64(sig_addr);
}

/* ------------------------------------------------------------------------------------
 * Point-to-point synchronization on my own symmetric words (thread scope)
 *
 * wait_until: polls *ivar (ld.acquire.sys) until `*ivar cmp value` holds (DUET_CMP_EQ, NE,
 * GT, GE, LT, LE, as duet.h); T is a 4- or 8-byte integer (int32_t, uint32_t, int64_t,
 * uint64_t). The satisfying value goes to *value_out (may be NULL). Returns DUET_OK,
 * DUET_ERR_INVALID_ARG for a bad cmp, or the abort status (checked every 256 polls).
 * test: one acquire read; 1 when the comparison holds, else 0.
 * ------------------------------------------------------------------------------------ */
template <typename T>
static __device__ __forceinline__ int duet_dev_wait_until(const duet_device_comm_t &h, const T *ivar,
                                                          int cmp, typename duet_dev_detail::same_<T>::type value,
                                                          T *value_out = nullptr)
{
    if (cmp < DUET_CMP_EQ || cmp > DUET_CMP_LE) return DUET_ERR_INVALID_ARG;
    for (unsigned spin = 1;; spin++) {
        T v = duet_dev_detail::ld_acquire(ivar);
        if (duet_dev_detail::cmp_(v, cmp, value)) {
            if (value_out) *value_out = v;
            return DUET_OK;
        }
        if (spin % duet_dev_detail::ABORT_EVERY == 0) {
            int st = duet_dev_detail::abort_status(h);
            if (st) return st;
        }
    }
}
template <typename T>
static __device__ __forceinline__ int duet_dev_test(const T *ivar, int cmp,
                                                   typename duet_dev_detail::same_<T>::type value)
{
    return duet_dev_detail::cmp_(duet_dev_detail::ld_acquire(ivar), cmp, value);
}
static __device__ __forceinline__ int duet_dev_signal_wait_until(const duet_device_comm_t &h,
                                                                 const uint64_t *sig_addr, int cmp,
                                                                 uint64_t value,
                                                                 uint64_t *value_out = nullptr)
{
    return duet_dev_wait_until<uint64_t>(h, sig_addr, cmp, value, value_out);
}

/* ------------------------------------------------------------------------------------
 * Atomics on symmetric integers of pe (thread scope)
 *
 * T: int32_t, uint32_t, int64_t, uint64_t (any 4- or 8-byte integer). System-scope atomic
 * read-modify-writes (atom.sys / red.sys, relaxed): atomic with respect to every Duet device
 * atomic on the same object from any pe on this node, unordered with other accesses (use
 * fence / quiet, or a signal). Fetching forms return the old value; fetch returns the
 * current value (ld.relaxed.sys), set stores one (st.relaxed.sys).
 * ------------------------------------------------------------------------------------ */
namespace duet_dev_detail {
template <typename T> struct amo_word_ {
    using type = typename std::conditional<sizeof(T) == 4, unsigned int, unsigned long long>::type;
};
} /* namespace duet_dev_detail */

template <typename T>
static __device__ __forceinline__ T duet_dev_atomic_fetch_add(const duet_device_comm_t &h, T *dest,
    typename duet_dev_detail::same_<T>::type value, int pe)
{
    static_assert(duet_dev_detail::is_amo_<T>::value && std::is_integral<T>::value,
                  "4- or 8-byte integers only");
    using W = typename duet_dev_detail::amo_word_<T>::type;
    if (duet_dev_detail::remote_(h, pe))
        return (T)duet_dev_detail::px_amo_(h, dest, DUET_PROXY_AMO_ADD, true, (uint64_t)(W)value, 0, pe);
    return (T)atomicAdd_system((W *)duet_dev_detail::mapped_ptr_(h, dest, pe), (W)value);
}
template <typename T>
static __device__ __forceinline__ void duet_dev_atomic_add(const duet_device_comm_t &h, T *dest,
    typename duet_dev_detail::same_<T>::type value, int pe)
{
    using W = typename duet_dev_detail::amo_word_<T>::type;
    if (duet_dev_detail::remote_(h, pe)) { /* not waited for */
        (void)duet_dev_detail::px_amo_(h, dest, DUET_PROXY_AMO_ADD, false, (uint64_t)(W)value, 0, pe);
        return;
    }
    (void)duet_dev_atomic_fetch_add(h, dest, value, pe); /* unused result: compiles to red.sys */
}
template <typename T>
static __device__ __forceinline__ T duet_dev_atomic_fetch_inc(const duet_device_comm_t &h, T *dest, int pe)
{
    return duet_dev_atomic_fetch_add(h, dest, (T)1, pe);
}
template <typename T>
static __device__ __forceinline__ void duet_dev_atomic_inc(const duet_device_comm_t &h, T *dest, int pe)
{
    duet_dev_atomic_add(h, dest, (T)1, pe);
}
template <typename T>
static __device__ __forceinline__ T duet_dev_atomic_compare_swap(const duet_device_comm_t &h, T *dest,
    typename duet_dev_detail::same_<T>::type cond, typename duet_dev_detail::same_<T>::type value,
    int pe)
{
    static_assert(duet_dev_detail::is_amo_<T>::value && std::is_integral<T>::value,
                  "4- or 8-byte integers only");
    using W = typename duet_dev_detail::amo_word_<T>::type;
    if (duet_dev_detail::remote_(h, pe))
        return (T)duet_dev_detail::px_amo_(h, dest, DUET_PROXY_AMO_CSWAP, true, (uint64_t)(W)value, (uint64_t)(W)cond,
                                           pe);
    return (T)atomicCAS_system((W *)duet_dev_detail::mapped_ptr_(h, dest, pe), (W)cond, (W)value);
}
template <typename T>
static __device__ __forceinline__ T duet_dev_atomic_swap(const duet_device_comm_t &h, T *dest,
    typename duet_dev_detail::same_<T>::type value, int pe)
{
    static_assert(duet_dev_detail::is_amo_<T>::value && std::is_integral<T>::value,
                  "4- or 8-byte integers only");
    using W = typename duet_dev_detail::amo_word_<T>::type;
    if (duet_dev_detail::remote_(h, pe))
        return (T)duet_dev_detail::px_amo_(h, dest, DUET_PROXY_AMO_SWAP, true, (uint64_t)(W)value, 0, pe);
    return (T)atomicExch_system((W *)duet_dev_detail::mapped_ptr_(h, dest, pe), (W)value);
}
template <typename T>
static __device__ __forceinline__ T duet_dev_atomic_fetch(const duet_device_comm_t &h, const T *src,
                                                          int pe)
{
    if (duet_dev_detail::remote_(h, pe))
        return duet_dev_detail::from_wbits_<T>(duet_dev_detail::px_amo_(h, src, DUET_PROXY_AMO_FETCH, true, 0, 0, pe));
    return duet_dev_detail::ld_relaxed(duet_dev_detail::mapped_ptr_(h, src, pe));
}
template <typename T>
static __device__ __forceinline__ void duet_dev_atomic_set(const duet_device_comm_t &h, T *dest,
    typename duet_dev_detail::same_<T>::type value, int pe)
{
    if (duet_dev_detail::remote_(h, pe)) {
        (void)duet_dev_detail::px_amo_(h, dest, DUET_PROXY_AMO_SET, false, duet_dev_detail::wbits_<T>(value), 0, pe);
        return;
    }
    duet_dev_detail::st_relaxed(duet_dev_detail::mapped_ptr_(h, dest, pe), value);
}

/* ------------------------------------------------------------------------------------
 * Ordering
 *
 * fence: this thread's earlier puts, p's, signals and atomics to each pe are ordered before
 * its later ones (fence.acq_rel.sys). No completion.
 * quiet: completes this thread's earlier puts, p's, signals and atomics: visible at their
 * targets, and to anyone who synchronizes with this thread afterwards (__threadfence_system,
 * i.e. fence.sc.sys). _warp / _block: every thread of the group fences, then the group syncs,
 * so the group's earlier operations (nbi ones included) are complete on return, for every
 * thread of the group. With remote pes in the handle, quiet also waits for the proxy (every
 * command posted before it, by any thread of the process, applied at its target) and returns
 * its status on every thread of the group: DUET_OK, the first failure of a proxied operation
 * since the last quiet, or the abort status. Without remote pes it returns DUET_OK.
 * ------------------------------------------------------------------------------------ */
static __device__ __forceinline__ void duet_dev_fence(const duet_device_comm_t &h)
{
    (void)h;
    duet_dev_detail::fence_acq_rel_sys();
}
static __device__ __forceinline__ int duet_dev_quiet(const duet_device_comm_t &h)
{
    __threadfence_system();
    return duet_dev_detail::px_quiet_(h);
}
static __device__ __forceinline__ int duet_dev_quiet_warp(const duet_device_comm_t &h)
{
    __threadfence_system();
    __syncwarp();
    if (h.remote == nullptr) return DUET_OK;
    int st = duet_dev_detail::lane_id() == 0 ? duet_dev_detail::px_quiet_(h) : DUET_OK;
    return __shfl_sync(0xffffffffu, st, 0);
}
static __device__ __forceinline__ int duet_dev_quiet_block(const duet_device_comm_t &h)
{
    __threadfence_system();
    __syncthreads();
    if (h.remote == nullptr) return DUET_OK;
    __shared__ int quiet_status;
    if (duet_dev_detail::block_tid() == 0) quiet_status = duet_dev_detail::px_quiet_(h);
    __syncthreads();
    return quiet_status;
}

/* ------------------------------------------------------------------------------------
 * Barriers over all pes of the communicator: quiet, then wait until every pe has entered.
 *
 * duet_dev_barrier (one thread per pe), duet_dev_barrier_warp (one warp per pe),
 * duet_dev_barrier_block (one block per pe). A communicator's barrier may run in one group
 * per pe at a time (the barrier is a collective of pes, not of blocks); successive
 * barriers, in one kernel or in kernels launched one after another, continue from each
 * other. A team's handle synchronizes only the team. Returns DUET_OK on every thread of the
 * group, or (on every thread) the abort status; after an abort the communicator's device
 * barrier state is undefined.
 *
 * The algorithm (h.sync, see DUET_DEVICE_SYNC_WORDS): the words are monotonic counters. To
 * enter barrier number c (c = my own count + 1), pe p adds 1 to word [p] of every pe q
 * (red.release.sys.add: my earlier stores are visible to whoever sees the count), then waits
 * until each of its own words [q] >= c (ld.acquire.sys), then stores c as its own count. A
 * peer can be at most one barrier ahead, hence >= rather than ==. Nothing depends on the
 * handle's copy of the count, so relaunched kernels continue correctly.
 *
 *     pe0 sync: [0]=c [1]=c [own]=c        pe1 sync: [0]=c [1]=c [own]=c
 *         ^ +1 from pe0  ^ +1 from pe1          (each pe adds to its word in every peer)
 * ------------------------------------------------------------------------------------ */
namespace duet_dev_detail {
/* The barrier over threads tid = 0..nthr-1 of a group that has just synced. Each thread
 * signals and waits for the pes q = tid, tid + nthr, ...; returns this thread's status. */
static __device__ __forceinline__ int barrier_(const duet_device_comm_t &h, unsigned tid,
                                               unsigned nthr, uint64_t c)
{
    int n = h.n_pes;
    for (int q = (int)tid; q < n; q += (int)nthr) {
        if (remote_(h, q)) { /* after the barrier's quiet: everything earlier is applied there */
            int st = px_signal_(h, h.sync + h.my_pe, 1, DUET_SIGNAL_ADD, q);
            if (st) return st;
        } else {
            red_release_add_u64(mapped_ptr_(h, h.sync + h.my_pe, q), 1);
        }
    }
    for (int q = (int)tid; q < n; q += (int)nthr) {
        int st = duet_dev_wait_until<uint64_t>(h, h.sync + q, DUET_CMP_GE, c);
        if (st) return st;
    }
    return DUET_OK;
}
} /* namespace duet_dev_detail */

static __device__ __forceinline__ int duet_dev_barrier(const duet_device_comm_t &h)
{
    int qst = duet_dev_quiet(h);
    if (qst) return qst;
    uint64_t c = duet_dev_detail::ld_relaxed_u64(h.sync + h.n_pes) + 1;
    int st = duet_dev_detail::barrier_(h, 0, 1, c);
    if (st == DUET_OK) duet_dev_detail::st_relaxed_u64(h.sync + h.n_pes, c);
    return st;
}
static __device__ __forceinline__ int duet_dev_barrier_warp(const duet_device_comm_t &h)
{
    int qst = duet_dev_quiet_warp(h);
    if (qst) return qst;
    unsigned lane = duet_dev_detail::lane_id();
    uint64_t c = duet_dev_detail::ld_relaxed_u64(h.sync + h.n_pes) + 1;
    int st = duet_dev_detail::barrier_(h, lane, 32, c);
    if (__any_sync(0xffffffffu, st != DUET_OK)) {
        if (st == DUET_OK) st = duet_dev_detail::abort_status(h);
        return st ? st : DUET_ERR_INTERNAL;
    }
    if (lane == 0) duet_dev_detail::st_relaxed_u64(h.sync + h.n_pes, c);
    __syncwarp();
    return DUET_OK;
}
static __device__ __forceinline__ int duet_dev_barrier_block(const duet_device_comm_t &h)
{
    int qst = duet_dev_quiet_block(h);
    if (qst) return qst;
    unsigned tid = duet_dev_detail::block_tid();
    uint64_t c = duet_dev_detail::ld_relaxed_u64(h.sync + h.n_pes) + 1;
    int st = duet_dev_detail::barrier_(h, tid, duet_dev_detail::block_size(), c);
    if (__syncthreads_or(st != DUET_OK)) {
        if (st == DUET_OK) st = duet_dev_detail::abort_status(h);
        return st ? st : DUET_ERR_INTERNAL;
    }
    if (tid == 0) duet_dev_detail::st_relaxed_u64(h.sync + h.n_pes, c);
    __syncthreads();
    return DUET_OK;
}

#endif /* DUET_DEVICE_CUH */
