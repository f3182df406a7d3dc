/*
 * duet_device_detail.cuh — internals of the device API (not API): the PTX wrappers
 * (scoped loads, stores, reductions, fences), the abort poll, thread indices and the copy engine.
 *
 * A part of the device API: include duet/duet_device.cuh (its conventions, memory model and
 * proxy path are described there), never this file alone.
 */
#ifndef DUET_DEVICE_DETAIL_CUH
#define DUET_DEVICE_DETAIL_CUH

#ifndef DUET_DEVICE_CUH
#error "include duet/duet_device.cuh, not duet/duet_device_detail.cuh"
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
} /* namespace duet_dev_detail */

#endif /* DUET_DEVICE_DETAIL_CUH */
