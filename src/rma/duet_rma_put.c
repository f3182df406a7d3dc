/* put / get, blocking and nbi, contiguous and strided, bytes and typed. */
#include "rma/duet_rma.h"

/* Blocking and nbi forms take the endpoint's put / put_nbi (shm: the same memcpy; net: nbi
 * left pending until quiet, a blocking put waits for local completion; the device heap's:
 * stream-ordered copies), a p its put_value (nbi 2: src is a host value). A blocking write
 * rings the peer's doorbell; a put_nbi leaves that to the transport's next fence or quiet. */
DUET_INLINE duet_status_t put_bytes_(duet_comm_t c, void *dest, const void *src, size_t n, int pe, int nbi,
                                const char *fn)
{
    duet_tport_ep_t *ep = NULL;
    size_t off = 0;
    duet_status_t st;
    if (n == 0) { /* a no-op, whatever the addresses */
        duet_error_clear();
        return DUET_OK;
    }
    if ((st = duet_rma_target_in(c, dest, n, pe, fn, &ep, &off)) || (st = duet_rma_local(src, n, fn, "the source")))
        return st;
    if (nbi == 1) return ep->ops->put_nbi(ep, off, src, n);
    st = nbi ? ep->ops->put_value(ep, off, src, n) : ep->ops->put(ep, off, src, n);
    ep->ops->notify(ep);
    return st;
}

/* put_bytes_ as a call in flight on c (duet_comm_enter). */
static duet_status_t put_bytes(duet_comm_t c, void *dest, const void *src, size_t n, int pe, int nbi, const char *fn)
{
    DUET_RMA_CALL(c, fn, put_bytes_(c, dest, src, n, pe, nbi, fn));
}

DUET_INLINE duet_status_t get_bytes_(duet_comm_t c, void *dest, const void *src, size_t n, int pe, int nbi,
                                const char *fn)
{
    duet_tport_ep_t *ep = NULL;
    size_t off = 0;
    duet_status_t st;
    if (n == 0) { /* a no-op, whatever the addresses */
        duet_error_clear();
        return DUET_OK;
    }
    if ((st = duet_rma_target_in(c, src, n, pe, fn, &ep, &off)) ||
        (st = duet_rma_local(dest, n, fn, "the destination")))
        return st;
    return nbi ? ep->ops->get_nbi(ep, dest, off, n) : ep->ops->get(ep, dest, off, n);
}

/* get_bytes_ as a call in flight on c (duet_comm_enter). */
static duet_status_t get_bytes(duet_comm_t c, void *dest, const void *src, size_t n, int pe, int nbi, const char *fn)
{
    DUET_RMA_CALL(c, fn, get_bytes_(c, dest, src, n, pe, nbi, fn));
}

/* The mem forms, the ones the OpenSHMEM and NVSHMEM layers call per message, with the body
 * inlined (the typed forms below share put_bytes / get_bytes). */
duet_status_t duet_put(duet_comm_t c, void *dest, const void *src, size_t n, int pe)
{
    DUET_RMA_CALL(c, "duet_put", put_bytes_(c, dest, src, n, pe, 0, "duet_put"));
}
duet_status_t duet_put_nbi(duet_comm_t c, void *dest, const void *src, size_t n, int pe)
{
    DUET_RMA_CALL(c, "duet_put_nbi", put_bytes_(c, dest, src, n, pe, 1, "duet_put_nbi"));
}
duet_status_t duet_get(duet_comm_t c, void *dest, const void *src, size_t n, int pe)
{
    DUET_RMA_CALL(c, "duet_get", get_bytes_(c, dest, src, n, pe, 0, "duet_get"));
}
duet_status_t duet_get_nbi(duet_comm_t c, void *dest, const void *src, size_t n, int pe)
{
    DUET_RMA_CALL(c, "duet_get_nbi", get_bytes_(c, dest, src, n, pe, 1, "duet_get_nbi"));
}

/* The span of a strided access: from the lowest to the highest element touched. */
static duet_status_t strided_span(const void *base, ptrdiff_t stride, size_t nelems, size_t es,
                                  const char *fn, const void **lo, size_t *bytes)
{
    if (stride == 0 && nelems > 1)
        return duet_error_set(DUET_ERR_INVALID_ARG, "%s: a stride of 0 is not allowed", fn);
    size_t steps, reach;
    size_t abs_stride = stride < 0 ? (size_t)0 - (size_t)stride : (size_t)stride;
    if (__builtin_mul_overflow(nelems - 1, abs_stride, &steps) || __builtin_mul_overflow(steps, es, &reach) ||
        __builtin_add_overflow(reach, es, bytes))
        return duet_error_set(DUET_ERR_INVALID_ARG, "%s: strided extent overflows", fn);
    *lo = stride < 0 ? (const char *)base - reach : base;
    return DUET_OK;
}

static duet_status_t strided_(duet_comm_t c, int is_put, void *dest, const void *src, ptrdiff_t dst_stride,
                              ptrdiff_t src_stride, size_t nelems, size_t es, int pe, const char *fn)
{
    duet_status_t st = duet_comm_check(c, fn);
    if (DUET_UNLIKELY(st) || nelems == 0 || es == 0) return st;
    const void *rlo = NULL, *llo = NULL; /* (set below; -O3 cannot tell) */
    size_t rbytes = 0, lbytes = 0, off = 0;
    duet_tport_ep_t *ep = NULL;
    const void *remote = is_put ? dest : src, *local = is_put ? src : dest;
    ptrdiff_t rstride = is_put ? dst_stride : src_stride, lstride = is_put ? src_stride : dst_stride;
    if ((st = strided_span(remote, rstride, nelems, es, fn, &rlo, &rbytes)) ||
        (st = strided_span(local, lstride, nelems, es, fn, &llo, &lbytes)) ||
        (st = duet_rma_local(local, lbytes, fn, is_put ? "the source" : "the destination")) ||
        (st = duet_rma_target(c, rlo, rbytes, pe, fn, &ep, &off)))
        return st;
    off += (size_t)((const char *)remote - (const char *)rlo);
    if (!is_put) return ep->ops->iget(ep, dest, off, dst_stride, src_stride, nelems, es);
    st = ep->ops->iput(ep, off, src, dst_stride, src_stride, nelems, es);
    ep->ops->notify(ep);
    return st;
}

/* strided_ as a call in flight on c (duet_comm_enter). */
static duet_status_t strided(duet_comm_t c, int is_put, void *dest, const void *src, ptrdiff_t dst_stride,
                             ptrdiff_t src_stride, size_t nelems, size_t es, int pe, const char *fn)
{
    DUET_COMM_CALL(c, fn, strided_(c, is_put, dest, src, dst_stride, src_stride, nelems, es, pe, fn));
}

duet_status_t duet_iput(duet_comm_t c, void *dest, const void *src, ptrdiff_t dst_stride, ptrdiff_t src_stride,
                        size_t nelems, size_t elem_size, int pe)
{
    return strided(c, 1, dest, src, dst_stride, src_stride, nelems, elem_size, pe, "duet_iput");
}

duet_status_t duet_iget(duet_comm_t c, void *dest, const void *src, ptrdiff_t dst_stride, ptrdiff_t src_stride,
                        size_t nelems, size_t elem_size, int pe)
{
    return strided(c, 0, dest, src, dst_stride, src_stride, nelems, elem_size, pe, "duet_iget");
}

/* ---- typed forms, one set per RMA type */
#define DUET_DEFINE_RMA_(T, N)                                                                    \
    duet_status_t duet_put_##N(duet_comm_t c, T *dest, const T *src, size_t nelems, int pe)       \
    {                                                                                             \
        size_t bytes;                                                                             \
        duet_status_t st = duet_rma_bytes(nelems, sizeof(T), "duet_put_" #N, &bytes);             \
        return st ? st : put_bytes(c, dest, src, bytes, pe, 0, "duet_put_" #N);                      \
    }                                                                                             \
    duet_status_t duet_put_##N##_nbi(duet_comm_t c, T *dest, const T *src, size_t nelems, int pe) \
    {                                                                                             \
        size_t bytes;                                                                             \
        duet_status_t st = duet_rma_bytes(nelems, sizeof(T), "duet_put_" #N "_nbi", &bytes);      \
        return st ? st : put_bytes(c, dest, src, bytes, pe, 1, "duet_put_" #N "_nbi");               \
    }                                                                                             \
    duet_status_t duet_get_##N(duet_comm_t c, T *dest, const T *src, size_t nelems, int pe)       \
    {                                                                                             \
        size_t bytes;                                                                             \
        duet_status_t st = duet_rma_bytes(nelems, sizeof(T), "duet_get_" #N, &bytes);             \
        return st ? st : get_bytes(c, dest, src, bytes, pe, 0, "duet_get_" #N);                      \
    }                                                                                             \
    duet_status_t duet_get_##N##_nbi(duet_comm_t c, T *dest, const T *src, size_t nelems, int pe) \
    {                                                                                             \
        size_t bytes;                                                                             \
        duet_status_t st = duet_rma_bytes(nelems, sizeof(T), "duet_get_" #N "_nbi", &bytes);      \
        return st ? st : get_bytes(c, dest, src, bytes, pe, 1, "duet_get_" #N "_nbi");               \
    }                                                                                             \
    duet_status_t duet_iput_##N(duet_comm_t c, T *dest, const T *src, ptrdiff_t dst_stride,       \
                                ptrdiff_t src_stride, size_t nelems, int pe)                      \
    {                                                                                             \
        return strided(c, 1, dest, src, dst_stride, src_stride, nelems, sizeof(T), pe,            \
                       "duet_iput_" #N);                                                          \
    }                                                                                             \
    duet_status_t duet_iget_##N(duet_comm_t c, T *dest, const T *src, ptrdiff_t dst_stride,       \
                                ptrdiff_t src_stride, size_t nelems, int pe)                      \
    {                                                                                             \
        return strided(c, 0, dest, src, dst_stride, src_stride, nelems, sizeof(T), pe,            \
                       "duet_iget_" #N);                                                          \
    }                                                                                             \
    duet_status_t duet_p_##N(duet_comm_t c, T *dest, T value, int pe)                             \
    {                                                                                             \
        return put_bytes(c, dest, &value, sizeof(T), pe, 2, "duet_p_" #N);                           \
    }                                                                                             \
    duet_status_t duet_g_##N(duet_comm_t c, const T *src, int pe, T *value)                       \
    {                                                                                             \
        duet_status_t st = duet_rma_local(value, 1, "duet_g_" #N, "the value pointer");           \
        return st ? st : get_bytes(c, value, src, sizeof(T), pe, 0, "duet_g_" #N);                   \
    }
DUET_RMA_TYPES(DUET_DEFINE_RMA_)
