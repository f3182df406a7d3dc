/*
 * duet_tport_net_ops.c — the net transport's one-sided operations over UCP (duet_tport_net_ops:
 * put, get, strided, atomics, fence, quiet; the atomic agent's entry for mapped peers) and the
 * waits they end with (design: duet_tport_net.c).
 */
#include <stdlib.h>
#include <string.h>
#include "tport/duet_tport_net_state.h"

#ifdef DUET_HAVE_UCX

static inline net_peer_t *peer_of(duet_tport_ep_t *ep) { return ep->priv; }

/* The injected fault of a test, if any. */
static duet_status_t injected(duet_tport_ep_t *ep, const char *op)
{
    int f = atomic_load_explicit(&ep->fault, memory_order_relaxed);
    return DUET_UNLIKELY(f != 0) ? DUET_FAIL((duet_status_t)f, RMA, "net link to rank %d is broken (injected fault: %s, "
                                             "%s)", ep->pe, duet_status_str((duet_status_t)f), op)
                                 : DUET_OK;
}

/* An operation's entry check: an injected fault, or the endpoint's own failure. */
static duet_status_t check_ep(duet_tport_ep_t *ep, const char *op)
{
    duet_status_t st = injected(ep, op);
    if (DUET_UNLIKELY(st)) return st;
    net_peer_t *p = peer_of(ep);
    int e = atomic_load_explicit(&p->failed, memory_order_relaxed);
    if (DUET_UNLIKELY(e != 0))
        return DUET_FAIL(DUET_ERR_PEER_FAILED, RMA, "net: %s to rank %d: its endpoint failed (%s)", op, ep->pe,
                         duet_tport_net_failure_text(e));
    return DUET_OK;
}

static duet_status_t ucs_fail(ucs_status_t s, int pe, const char *op)
{
    duet_status_t st = s == UCS_ERR_NO_MEMORY ? DUET_ERR_NO_MEMORY : DUET_ERR_PEER_FAILED;
    return DUET_FAIL(st, RMA, "net: %s to rank %d failed: %s", op, pe, ucs_status_string(s));
}

/* Waits for `req` (NULL: done at once) progressing the worker: bounded by the wait context
 * (deadline, abort word) and by the peer's failure (p NULL: a worker-wide request). */
duet_status_t duet_tport_net_wait_req(duet_net_t *n, net_peer_t *p, ucs_status_ptr_t req, const char *op, int pe)
{
    if (req == NULL) return DUET_OK;
    if (UCS_PTR_IS_ERR(req)) return ucs_fail(UCS_PTR_STATUS(req), pe, op);
    duet_waiter_t w;
    duet_waiter_init(&w, &n->wait, "net %s (UCP request)", op, 0, 0, pe);
    ucs_status_t s;
    duet_status_t st = DUET_OK;
    for (;;) {
        net_lock(n);
        s = ucp_request_check_status(req);
        unsigned events = s == UCS_INPROGRESS ? ucp_worker_progress(n->worker) : 0;
        net_unlock(n);
        if (s != UCS_INPROGRESS) break;
        if (events) continue;
        (void)duet_tport_net_progress_all(); /* the others' heaps: they may wait on me there */
        if (p && atomic_load_explicit(&p->failed, memory_order_relaxed)) {
            st = DUET_FAIL(DUET_ERR_PEER_FAILED, RMA, "net: %s to rank %d: its endpoint failed (%s)", op, pe,
                           duet_tport_net_failure_text(atomic_load(&p->failed)));
            break;
        }
        if ((st = duet_waiter_turn(&w))) break;
    }
    net_lock(n);
    if (st) ucp_request_cancel(n->worker, req);
    ucp_request_free(req); /* after a cancel: released by UCX once it completes */
    net_unlock(n);
    if (st) return st;
    return s == UCS_OK ? DUET_OK : ucs_fail(s, pe, op);
}

/* A request not waited for: an error now is reported, else UCX frees it when it completes. */
static duet_status_t leave_req(duet_net_t *n, ucs_status_ptr_t req, const char *op, int pe)
{
    n->dirty = 1;
    n->peers[pe].dirty = 1;
    if (req == NULL) return DUET_OK;
    if (UCS_PTR_IS_ERR(req)) return ucs_fail(UCS_PTR_STATUS(req), pe, op);
    net_lock(n);
    ucp_request_free(req);
    net_unlock(n);
    return DUET_OK;
}

static const ucp_request_param_t no_param = {.op_attr_mask = 0};

static duet_status_t net_put(duet_tport_ep_t *ep, size_t off, const void *src, size_t n)
{
    duet_status_t st = check_ep(ep, "put");
    if (DUET_UNLIKELY(st)) return st;
    net_peer_t *p = peer_of(ep);
    p->net->dirty = p->dirty = 1;
    net_lock(p->net);
    ucs_status_ptr_t req = !p->ep ? EP_GONE : ucp_put_nbx(p->ep, src, n, p->rbase + off, p->rkey, &no_param);
    net_unlock(p->net);
    return duet_tport_net_wait_req(p->net, p, req, "put", ep->pe); /* local completion: src reusable */
}

static duet_status_t net_put_nbi(duet_tport_ep_t *ep, size_t off, const void *src, size_t n)
{
    duet_status_t st = check_ep(ep, "put_nbi");
    if (DUET_UNLIKELY(st)) return st;
    net_peer_t *p = peer_of(ep);
    net_lock(p->net);
    ucs_status_ptr_t req = !p->ep ? EP_GONE : ucp_put_nbx(p->ep, src, n, p->rbase + off, p->rkey, &no_param);
    net_unlock(p->net);
    return leave_req(p->net, req, "put_nbi", ep->pe);
}

static duet_status_t net_get(duet_tport_ep_t *ep, void *dst, size_t off, size_t n)
{
    duet_status_t st = check_ep(ep, "get");
    if (DUET_UNLIKELY(st)) return st;
    net_peer_t *p = peer_of(ep);
    net_lock(p->net);
    ucs_status_ptr_t req = !p->ep ? EP_GONE : ucp_get_nbx(p->ep, dst, n, p->rbase + off, p->rkey, &no_param);
    net_unlock(p->net);
    return duet_tport_net_wait_req(p->net, p, req, "get", ep->pe);
}

static duet_status_t net_get_nbi(duet_tport_ep_t *ep, void *dst, size_t off, size_t n)
{
    duet_status_t st = check_ep(ep, "get_nbi");
    if (DUET_UNLIKELY(st)) return st;
    net_peer_t *p = peer_of(ep);
    net_lock(p->net);
    ucs_status_ptr_t req = !p->ep ? EP_GONE : ucp_get_nbx(p->ep, dst, n, p->rbase + off, p->rkey, &no_param);
    net_unlock(p->net);
    return leave_req(p->net, req, "get_nbi", ep->pe);
}

static duet_status_t net_get(duet_tport_ep_t *ep, void *dst, size_t off, size_t n);

#define SPAN_FACTOR 8 /* a strided get whose remote span is at most this many times its data
                       * is one get of the span (then copied out here) */

/* A strided get as one get of the remote span into a scratch buffer; 1 when done that way
 * (*st its result), 0 when the span is too sparse or no memory (then element by element). */
static int strided_get_by_span(duet_tport_ep_t *ep, char *local, size_t off, ptrdiff_t lstride, ptrdiff_t rstride,
                               size_t nelems, size_t es, duet_status_t *st)
{
    ptrdiff_t last = (ptrdiff_t)(nelems - 1) * rstride, lo = last < 0 ? last : 0, hi = last < 0 ? 0 : last;
    size_t span = (size_t)(hi - lo + 1) * es;
    if (nelems < 2 || span / SPAN_FACTOR > nelems * es) return 0;
    char *tmp = malloc(span);
    if (!tmp) return 0;
    *st = net_get(ep, tmp, (size_t)((ptrdiff_t)off + lo * (ptrdiff_t)es), span);
    for (size_t i = 0; *st == DUET_OK && i < nelems; i++)
        memcpy(local + (ptrdiff_t)i * lstride * (ptrdiff_t)es, tmp + ((ptrdiff_t)i * rstride - lo) * (ptrdiff_t)es, es);
    free(tmp);
    return 1;
}

/* Strided: a get of a dense enough span is one get; otherwise one operation per element (UCP
 * RMA has no strided form), then an endpoint flush: a blocking iput/iget returns with every
 * element done. */
static duet_status_t net_strided(duet_tport_ep_t *ep, int is_put, char *local, size_t off, ptrdiff_t lstride,
                                 ptrdiff_t rstride, size_t nelems, size_t es)
{
    const char *op = is_put ? "iput" : "iget";
    duet_status_t st = check_ep(ep, op);
    if (DUET_UNLIKELY(st)) return st;
    if (!is_put && strided_get_by_span(ep, local, off, lstride, rstride, nelems, es, &st)) return st;
    net_peer_t *p = peer_of(ep);
    for (size_t i = 0; i < nelems && !st; i++) {
        char *l = local + (ptrdiff_t)i * lstride * (ptrdiff_t)es;
        uint64_t r = p->rbase + off + (uint64_t)((ptrdiff_t)i * rstride * (ptrdiff_t)es);
        net_lock(p->net);
        ucs_status_ptr_t req = !p->ep   ? EP_GONE
                                : is_put ? ucp_put_nbx(p->ep, l, es, r, p->rkey, &no_param)
                                         : ucp_get_nbx(p->ep, l, es, r, p->rkey, &no_param);
        net_unlock(p->net);
        st = leave_req(p->net, req, op, ep->pe);
    }
    ucp_request_param_t fp = {.op_attr_mask = 0};
    net_lock(p->net);
    ucs_status_ptr_t flush = !p->ep ? EP_GONE : ucp_ep_flush_nbx(p->ep, &fp);
    net_unlock(p->net);
    duet_status_t st2 = duet_tport_net_wait_req(p->net, p, flush, op, ep->pe);
    return st ? st : st2;
}

static duet_status_t net_iput(duet_tport_ep_t *ep, size_t off, const void *src, ptrdiff_t dst_stride,
                              ptrdiff_t src_stride, size_t nelems, size_t es)
{
    return net_strided(ep, 1, (char *)(uintptr_t)src, off, src_stride, dst_stride, nelems, es);
}

static duet_status_t net_iget(duet_tport_ep_t *ep, void *dst, size_t off, ptrdiff_t dst_stride,
                              ptrdiff_t src_stride, size_t nelems, size_t es)
{
    return net_strided(ep, 0, dst, off, dst_stride, src_stride, nelems, es);
}

/* Duet's atomics on UCP's (docs/NETWORK.md 2.4): FETCH is ADD 0; SET is a SWAP whose old
 * value is dropped (UCX wants a reply buffer for SWAP); CSWAP takes the compare value as its
 * operand and the new value in the reply buffer, which returns the old one. A non-fetching
 * ADD/AND/OR/XOR is left to complete at quiet; the others wait for the reply. */
static duet_status_t amo_via_ucp(duet_tport_ep_t *ep, duet_amo_op_t op, size_t off, size_t width, uint64_t operand,
                                 uint64_t cond, uint64_t *fetched, int complete)
{
    duet_status_t st = check_ep(ep, "atomic");
    if (DUET_UNLIKELY(st)) return st;
    net_peer_t *p = peer_of(ep);
    ucp_atomic_op_t uop;
    uint64_t arg = operand, reply = 0;
    /* complete: the op is done at the target when the call returns (a reply proves it) */
    int wants_reply = fetched != NULL || complete;
    switch (op) {
    case DUET_AMO_FETCH: uop = UCP_ATOMIC_OP_ADD, arg = 0, wants_reply = 1; break;
    case DUET_AMO_SET: uop = UCP_ATOMIC_OP_SWAP, wants_reply = 1; break;
    case DUET_AMO_SWAP: uop = UCP_ATOMIC_OP_SWAP, wants_reply = 1; break;
    case DUET_AMO_CSWAP: uop = UCP_ATOMIC_OP_CSWAP, arg = cond, reply = operand, wants_reply = 1; break;
    case DUET_AMO_ADD: uop = UCP_ATOMIC_OP_ADD; break;
    case DUET_AMO_AND: uop = UCP_ATOMIC_OP_AND; break;
    case DUET_AMO_OR: uop = UCP_ATOMIC_OP_OR; break;
    case DUET_AMO_XOR: uop = UCP_ATOMIC_OP_XOR; break;
    default: return DUET_FAIL(DUET_ERR_INTERNAL, RMA, "net: unknown atomic op %d", op);
    }
    /* 4-byte operands travel in their own width (the buffers' first 4 bytes on a little-endian
     * host are the low half, but UCX reads exactly `width` bytes: copy to be exact) */
    uint32_t arg32 = (uint32_t)arg, reply32 = (uint32_t)reply;
    void *argp = width == 4 ? (void *)&arg32 : (void *)&arg;
    void *replyp = width == 4 ? (void *)&reply32 : (void *)&reply;
    ucp_request_param_t prm = {.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE, .datatype = ucp_dt_make_contig(width)};
    if (wants_reply) {
        prm.op_attr_mask |= UCP_OP_ATTR_FIELD_REPLY_BUFFER;
        prm.reply_buffer = replyp;
    }
    p->net->dirty = p->dirty = 1;
    net_lock(p->net);
    ucs_status_ptr_t req = !p->ep ? EP_GONE : ucp_atomic_op_nbx(p->ep, uop, argp, 1, p->rbase + off, p->rkey, &prm);
    /* done at once (e.g. UCX's self transport): progress anyway, so a caller spinning on
     * this atomic still serves the others' emulated operations on my memory */
    if (req == NULL && wants_reply) ucp_worker_progress(p->net->worker);
    net_unlock(p->net);
    if (!wants_reply) return leave_req(p->net, req, "atomic", ep->pe);
    if ((st = duet_tport_net_wait_req(p->net, p, req, "atomic", ep->pe))) return st;
    if (fetched) *fetched = width == 4 ? (uint64_t)reply32 : reply;
    return DUET_OK;
}

static duet_status_t net_amo(duet_tport_ep_t *ep, duet_amo_op_t op, size_t off, size_t width, uint64_t operand,
                             uint64_t cond, uint64_t *fetched)
{
    return amo_via_ucp(ep, op, off, width, operand, cond, fetched, 0);
}

/* duet_tport_shm_netamo_ops.amo: a mapped peer's (or my own) word, through the agent; waited,
 * like every shm atomic, so the shm ops' fence/quiet (memory fences) stay sufficient. */
duet_status_t duet_tport_net_agent_amo(duet_tport_ep_t *ep, duet_amo_op_t op, size_t off, size_t width,
                                       uint64_t operand, uint64_t cond, uint64_t *fetched)
{
    if (DUET_UNLIKELY(!ep->priv)) return DUET_FAIL(DUET_ERR_INTERNAL, RMA, "net: no atomic agent for rank %d", ep->pe);
    return amo_via_ucp(ep, op, off, width, operand, cond, fetched, 1);
}

/* Fence and quiet of a dead peer succeed, as on shared memory: what was sent to it is lost
 * with it, and the communicators that hold it learn of its death from the detector; the
 * others (a team of the survivors) must go on. */
static duet_status_t net_fence(duet_tport_ep_t *ep)
{
    net_peer_t *p = peer_of(ep);
    duet_status_t st = injected(ep, "fence");
    if (st || !p->net->dirty || atomic_load_explicit(&p->failed, memory_order_relaxed)) return st;
    net_lock(p->net);
    ucs_status_t s = ucp_worker_fence(p->net->worker);
    net_unlock(p->net);
    return s == UCS_OK ? DUET_OK : ucs_fail(s, ep->pe, "fence");
}

/* One endpoint's flush: only live peers' (a worker-wide flush would wait for a cut link). */
static duet_status_t net_quiet(duet_tport_ep_t *ep)
{
    net_peer_t *p = peer_of(ep);
    duet_net_t *n = p->net;
    duet_status_t st = injected(ep, "quiet");
    if (st || !p->dirty) return st;
    if (atomic_load_explicit(&p->failed, memory_order_relaxed)) {
        p->dirty = 0;
        return DUET_OK;
    }
    ucp_request_param_t fp = {.op_attr_mask = 0};
    net_lock(n);
    ucs_status_ptr_t flush = !p->ep ? EP_GONE : ucp_ep_flush_nbx(p->ep, &fp);
    net_unlock(n);
    if ((st = duet_tport_net_wait_req(n, p, flush, "quiet (endpoint flush)", ep->pe))) {
        if (atomic_load_explicit(&p->failed, memory_order_relaxed)) st = DUET_OK, p->dirty = 0; /* died meanwhile */
        return st;
    }
    p->dirty = 0;
    return DUET_OK;
}

/* A remote writer cannot ring a doorbell: waiters poll, and the wait loop's progress hook
 * and its 200 us sleep bound the latency (docs/NETWORK.md 2.6). */
static void net_notify(duet_tport_ep_t *ep) { (void)ep; }

static void *net_ptr(duet_tport_ep_t *ep, size_t off)
{
    (void)ep, (void)off;
    return NULL; /* not mappable: shmem_ptr's contract */
}

static void net_inject_fault(duet_tport_ep_t *ep, duet_status_t status) { atomic_store(&ep->fault, (int)status); }

const duet_tport_ops_t duet_tport_net_ops = {
    .size = sizeof(duet_tport_ops_t),
    .name = "net",
    .put = net_put,
    .get = net_get,
    .put_nbi = net_put_nbi,
    .get_nbi = net_get_nbi,
    .put_value = net_put,
    .iput = net_iput,
    .iget = net_iget,
    .amo = net_amo,
    .fence = net_fence,
    .quiet = net_quiet,
    .notify = net_notify,
    .ptr = net_ptr,
    .inject_fault = net_inject_fault,
};

#endif
