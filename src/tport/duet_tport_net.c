/*
 * The net transport: one-sided operations over UCP (docs/NETWORK.md 2.3-2.6), for peers whose
 * segment is not mapped here (another host, or every peer under DUET_NET=force).
 *
 *   heap creation (collective):  ucp_init -> worker -> ucp_mem_map(my segment: heap and zone)
 *                                -> allgather {address, rkey, base} -> ucp_ep_create (PEER
 *                                error mode) + ucp_ep_rkey_unpack per net peer
 *   put       ucp_put_nbx, waited for local completion (nbi: not waited, done at quiet)
 *   get       ucp_get_nbx, waited for the data (nbi: at quiet)
 *   amo       ucp_atomic_op_nbx (fetching forms and SET/SWAP/CSWAP wait for the reply)
 *
 * One atomic agent per heap (docs/NETWORK.md 4.8): once a heap has a net peer, every atomic
 * on its memory goes through UCP, also those on my own segment and on mapped (shm) peers'
 * segments: creation makes a UCP endpoint to every pe, myself included (an endpoint to my
 * own worker's address: UCX's self transport, or TCP/IB loopback), and binds mapped peers to
 * duet_tport_shm_netamo_ops (data by load/store, atomics here, always completed in the call).
 * A word is then never updated by CPU atomics on one side and UCX (emulated or NIC) atomics on
 * the other, and a rank spinning on an atomic on its own word progresses its worker, which
 * is what serves the other ranks' emulated atomics on that word.
 *   fence     ucp_worker_fence;  quiet: ucp_worker_flush_nbx, waited
 *
 * Requests not waited for are freed at once (UCX releases them when they complete); the
 * worker flush of quiet completes them all. Every wait progresses the worker and goes
 * through duet_waiter_t (deadline, abort word) and stops when the peer's endpoint failed
 * (its error callback). Over TCP, UCX emulates RMA with active messages handled by the
 * target's progress: the wait loop's progress hook (duet_wait_ctx_t.progress) is what serves
 * them while the target waits.
 *
 * Every heap with net peers has its own worker, and a rank may wait on one heap while a peer
 * needs it to serve another (two communicators used in turn: test_comm): so every wait, in
 * any heap and in the bootstrap's socket waits (duet_background_progress), progresses *all*
 * the process's workers (duet_tport_net_progress_all). A worker is serialized by its own
 * ticket lock (fair: a thread spinning in a wait cannot starve the failure detector's, whose
 * heartbeats would then stop), held only across non-blocking UCP calls; another thread's
 * progress that finds it held passes it by.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tport/duet_tport_net.h"
#include "util/duet_util.h"

#ifndef DUET_HAVE_UCX

int duet_tport_net_built(void) { return 0; }
duet_status_t duet_tport_net_create(duet_net_t **net, duet_boot_t *b, char *seg, size_t reg_len,
                                    duet_tport_ep_t *eps, const unsigned char *net_pe)
{
    (void)b, (void)seg, (void)reg_len, (void)eps, (void)net_pe;
    *net = NULL;
    return DUET_FAIL(DUET_ERR_UNSUPPORTED, HEAP, "the net transport is not built (no UCX: libucx-dev)");
}
void duet_tport_net_progress(void *net) { (void)net; }
unsigned duet_tport_net_progress_all(void) { return 0; }
int duet_tport_net_describe(char *buf, size_t len)
{
    snprintf(buf, len, "built without UCX (libucx-dev, -DDUET_UCX=ON): one host only");
    return -1;
}
void duet_tport_net_watch(duet_net_t *n, uint64_t every_ns, uint64_t silence_ns, duet_net_dead_fn dead, void *arg)
{
    (void)n, (void)every_ns, (void)silence_ns, (void)dead, (void)arg;
}
int duet_tport_net_peer_failed(duet_net_t *n, int pe, char *why, size_t len)
{
    (void)n, (void)pe, (void)why, (void)len;
    return 0;
}
void duet_tport_net_set_wait(duet_net_t *net, const duet_wait_ctx_t *ctx) { (void)net, (void)ctx; }
void duet_tport_net_peer_dead(duet_net_t *net, int pe) { (void)net, (void)pe; }
void duet_tport_net_destroy(duet_net_t *net, duet_tport_ep_t *eps, int npes) { (void)net, (void)eps, (void)npes; }
duet_status_t duet_tport_net_agent_amo(duet_tport_ep_t *ep, duet_amo_op_t op, size_t off, size_t width,
                                       uint64_t operand, uint64_t cond, uint64_t *fetched)
{
    (void)op, (void)off, (void)width, (void)operand, (void)cond, (void)fetched;
    return duet_tport_unsupported_(ep->ops->name, "atomics (no UCX in this build)"); /* never bound */
}

#else

#include <ucp/api/ucp.h>

typedef struct {
    duet_net_t *net;
    int pe;
    ucp_ep_h ep;
    ucp_rkey_h rkey;
    uint64_t rbase;        /* the peer's segment base, in its address space */
    _Atomic int failed;    /* the endpoint's error (a ucs_status_t), 0 while healthy */
    /* the failure detector's view (duet_tport_net_watch; its thread only) */
    int is_net;            /* reached over the net (not myself, not mapped)             */
    int dirty;             /* operations to it may not be remotely complete yet          */
    int reported;          /* found dead and said so                                    */
    ucp_ep_h hb_ep;        /* the detector's endpoint to it (on the detector's worker)  */
    ucs_status_ptr_t hb_req; /* my heartbeat's put to it, in flight                      */
    _Atomic int hb_state;  /* its completion: 0 in flight, 1 done, -1 failed (callback)   */
    uint64_t hb_out;       /* the value being put (stays until the put completes)        */
    uint64_t hb_last, hb_seen_ns, hb_sent_ns;
} net_peer_t;

/* A ticket lock: fair, so the detector's thread gets its turn while another thread waits in a
 * tight loop. */
typedef struct {
    _Atomic unsigned next, serving;
} ticket_lock_t;

struct duet_net {
    struct duet_net *next; /* the process's nets (registry) */
    char *seg;             /* my segment (registered)      */
    int me;
    ticket_lock_t lock;    /* held across every UCP call on the application's worker */
    ucp_context_h ctx;
    ucp_worker_h worker;
    ucp_worker_h hb_worker; /* the failure detector's own (its thread only, no lock): a heartbeat
                             * never queues behind the application's operations */
    _Atomic int hb_shared;  /* while its connections are made (wire_up): any thread's progress
                             * may progress hb_worker too, holding hb_lock */
    ticket_lock_t hb_lock;
    uint32_t me32;          /* my pe, the header of my heartbeats                              */
    _Atomic uint64_t *heard; /* per pe: the last heartbeat it sent me (its clock), 0: none yet  */

    ucp_mem_h memh;
    net_peer_t *peers;     /* one per pe; ep NULL where not a net peer */
    int npes;
    int dirty;             /* an operation not yet remotely complete may be outstanding */
    duet_wait_ctx_t wait;  /* bounds every wait (duet_tport_net_set_wait) */
};

int duet_tport_net_built(void) { return 1; }

int duet_tport_net_describe(char *buf, size_t len)
{
    const char *tls = getenv("UCX_TLS");
    snprintf(buf, len, "UCX %s: ranks on other hosts (DUET_NET=%s); transports: %s", ucp_get_version_string(),
             duet_cfg()->net, tls && *tls ? tls : "UCX's choice, less self");
    return 1;
}

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static duet_net_t *registry;

static void ticket_lock(ticket_lock_t *l)
{
    unsigned ticket = atomic_fetch_add_explicit(&l->next, 1, memory_order_relaxed);
    while (atomic_load_explicit(&l->serving, memory_order_acquire) != ticket) duet_cpu_relax();
}
static int ticket_trylock(ticket_lock_t *l)
{
    unsigned serving = atomic_load_explicit(&l->serving, memory_order_relaxed), next = serving;
    return atomic_compare_exchange_strong_explicit(&l->next, &next, serving + 1, memory_order_acquire,
                                                   memory_order_relaxed);
}
static void ticket_unlock(ticket_lock_t *l)
{
    atomic_store_explicit(&l->serving, atomic_load_explicit(&l->serving, memory_order_relaxed) + 1,
                          memory_order_release);
}

/* The application's worker, and the detector's while it is shared (wire_up). */
static void net_lock(duet_net_t *n) { ticket_lock(&n->lock); }
static int net_trylock(duet_net_t *n) { return ticket_trylock(&n->lock); }
static void net_unlock(duet_net_t *n) { ticket_unlock(&n->lock); }
static void hb_hold(duet_net_t *n) { ticket_lock(&n->hb_lock); }
static void hb_release(duet_net_t *n) { ticket_unlock(&n->hb_lock); }

/* The detector's worker while it is shared (wire_up), if no other thread holds it. */
static unsigned hb_progress_shared(duet_net_t *n)
{
    unsigned events = 0;
    if (!atomic_load_explicit(&n->hb_shared, memory_order_acquire)) return 0;
    if (!ticket_trylock(&n->hb_lock)) return 0;
    if (atomic_load_explicit(&n->hb_shared, memory_order_acquire)) /* again: wire_up may have ended */
        events = ucp_worker_progress(n->hb_worker);
    hb_release(n);
    return events;
}

/* Progresses every worker of the process that no other thread holds; returns events seen. */
unsigned duet_tport_net_progress_all(void)
{
    unsigned events = 0;
    if (pthread_mutex_trylock(&registry_lock) != 0) return 0; /* a net coming or going: next turn */
    for (duet_net_t *n = registry; n; n = n->next) {
        if (net_trylock(n)) {
            events += ucp_worker_progress(n->worker);
            net_unlock(n);
        }
        events += hb_progress_shared(n);
    }
    pthread_mutex_unlock(&registry_lock);
    return events;
}

static void background_progress(void) { (void)duet_tport_net_progress_all(); }

static void registry_add(duet_net_t *n)
{
    pthread_mutex_lock(&registry_lock);
    n->next = registry;
    registry = n;
    duet_background_progress_set(background_progress);
    pthread_mutex_unlock(&registry_lock);
}

static void registry_remove(duet_net_t *n)
{
    pthread_mutex_lock(&registry_lock);
    for (duet_net_t **pp = &registry; *pp; pp = &(*pp)->next)
        if (*pp == n) {
            *pp = n->next;
            break;
        }
    if (!registry) duet_background_progress_set(NULL);
    pthread_mutex_unlock(&registry_lock);
}

void duet_tport_net_progress(void *arg)
{
    (void)arg; /* every worker: a peer may need another heap's served (see the top) */
    (void)duet_tport_net_progress_all();
}

void duet_tport_net_set_wait(duet_net_t *n, const duet_wait_ctx_t *ctx)
{
    if (!n) return;
    n->wait = *ctx;
    n->wait.abort_why = NULL;
    /* not the root communicator's abort word: an operation to a live peer must complete for a
     * team of survivors after a death (the heap is shared); a dead peer's waits end by its
     * endpoint's failure (UCX's, or the detector's on silence), the others by the deadline */
    n->wait.abort_flag = NULL;
    n->wait.progress = NULL; /* the net waits progress by themselves */
}

/* An endpoint failed (UCX's callback, inside a progress of its worker): it is closed at once,
 * as UCP asks; a put that the dead peer sent before dying then finds no endpoint here and is
 * dropped. (It does not stop UCX 1.13's abort when such a put is handled before this callback
 * runs: docs/NETWORK.md 4.12.) Whoever progresses a worker holds it (the application's lock;
 * the detector's worker is its thread's, or held while shared), so no call on the endpoint is
 * under way; later ones find it NULL (EP_GONE; heartbeat_send skips it). */
static void ep_error(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    net_peer_t *p = arg;
    atomic_store(&p->failed, (int)status);
    DUET_LOG(WARN, RMA, "net: the endpoint to rank %d failed: %s", p->pe, ucs_status_string(status));
    if (ep != p->ep && ep != p->hb_ep) return;
    if (ep == p->ep && p->rkey) ucp_rkey_destroy(p->rkey);
    if (ep == p->ep) p->rkey = NULL;
    ucp_request_param_t cp = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS, .flags = UCP_EP_CLOSE_FLAG_FORCE};
    ucs_status_ptr_t r = ucp_ep_close_nbx(ep, &cp);
    if (r && !UCS_PTR_IS_ERR(r)) ucp_request_free(r); /* completes inside UCX */
    if (ep == p->ep) p->ep = NULL;
    else p->hb_ep = NULL; /* its heartbeat in flight, if any, is freed by hb_close */
}

/* What an operation on a closed endpoint (ep_error) gets instead of a request. */
#define EP_GONE UCS_STATUS_PTR(UCS_ERR_CONNECTION_RESET)

static inline net_peer_t *peer_of(duet_tport_ep_t *ep) { return ep->priv; }

/* The injected fault of a test, if any. */
static duet_status_t injected(duet_tport_ep_t *ep, const char *op)
{
    int f = atomic_load_explicit(&ep->fault, memory_order_relaxed);
    return DUET_UNLIKELY(f != 0) ? DUET_FAIL((duet_status_t)f, RMA, "net link to rank %d is broken (injected fault: %s, "
                                             "%s)", ep->pe, duet_status_str((duet_status_t)f), op)
                                 : DUET_OK;
}

/* p->failed when the failure detector declared the peer dead before UCX saw its endpoint fail
 * (duet_tport_net_peer_dead): not a ucs_status_t. */
#define NET_DECLARED_DEAD (-100000)

/* What p->failed says, for a message. */
static const char *failure_text(int e)
{
    return e == NET_DECLARED_DEAD ? "declared dead by the failure detector" : ucs_status_string((ucs_status_t)e);
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
                         failure_text(e));
    return DUET_OK;
}

static duet_status_t ucs_fail(ucs_status_t s, int pe, const char *op)
{
    duet_status_t st = s == UCS_ERR_NO_MEMORY ? DUET_ERR_NO_MEMORY : DUET_ERR_PEER_FAILED;
    return DUET_FAIL(st, RMA, "net: %s to rank %d failed: %s", op, pe, ucs_status_string(s));
}

/* Waits for `req` (NULL: done at once) progressing the worker: bounded by the wait context
 * (deadline, abort word) and by the peer's failure (p NULL: a worker-wide request). */
static duet_status_t wait_req(duet_net_t *n, net_peer_t *p, ucs_status_ptr_t req, const char *op, int pe)
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
                           failure_text(atomic_load(&p->failed)));
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
    return wait_req(p->net, p, req, "put", ep->pe); /* local completion: src reusable */
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
    return wait_req(p->net, p, req, "get", ep->pe);
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
    duet_status_t st2 = wait_req(p->net, p, flush, op, ep->pe);
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
    if ((st = wait_req(p->net, p, req, "atomic", ep->pe))) return st;
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
    if ((st = wait_req(n, p, flush, "quiet (endpoint flush)", ep->pe))) {
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
    .iput = net_iput,
    .iget = net_iget,
    .amo = net_amo,
    .fence = net_fence,
    .quiet = net_quiet,
    .notify = net_notify,
    .ptr = net_ptr,
    .inject_fault = net_inject_fault,
};

/* ---- creation and teardown */

/* ---- the failure detector's look at the net peers (docs/NETWORK.md 2.10) ---- */

int duet_tport_net_peer_failed(duet_net_t *n, int pe, char *why, size_t len)
{
    net_peer_t *p = &n->peers[pe];
    int e = p->is_net ? atomic_load_explicit(&p->failed, memory_order_acquire) : 0;
    if (e) snprintf(why, len, "its endpoint failed: %s", failure_text(e));
    return e != 0;
}

void duet_tport_net_peer_dead(duet_net_t *n, int pe)
{
    int none = 0;
    if (n->peers[pe].is_net)
        atomic_compare_exchange_strong(&n->peers[pe].failed, &none, NET_DECLARED_DEAD);
}

/* My heartbeat's put has completed (in the detector's thread, which alone progresses the
 * detector's worker). */
static void heartbeat_done(void *request, ucs_status_t status, void *user_data)
{
    (void)request;
    net_peer_t *p = user_data;
    atomic_store_explicit(&p->hb_state, status == UCS_OK ? 1 : -1, memory_order_release);
}

/* The active message of a heartbeat: header = the sender's pe (uint32), data = its clock. Not
 * a put: over TCP, UCX 1.13 acknowledges every put, and aborts the process ("unexpected error:
 * Endpoint timeout", ucp_put_handler) when it must acknowledge one from a peer whose endpoint
 * it has seen fail but not yet reported (its error callback comes later); a heartbeat from a
 * rank killed a moment before did so to its survivors (test_ft_ulfm during / agree-during with
 * DUET_NET=force and UCX_TLS=tcp: 4 and 6 runs in 14). An active message is not acknowledged.
 * (Sent without UCP_AM_SEND_FLAG_EAGER: with it, heartbeats stalled for over 10 s under load.) */
#define HEARTBEAT_AM_ID 1

static ucs_status_t heartbeat_recv(void *arg, const void *header, size_t header_length, void *data, size_t length,
                                   const ucp_am_recv_param_t *param)
{
    duet_net_t *n = arg;
    uint32_t pe;
    uint64_t t;
    if (header_length != sizeof pe || length != sizeof t || (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV))
        return UCS_OK; /* not one of mine: dropped */
    memcpy(&pe, header, sizeof pe);
    memcpy(&t, data, sizeof t);
    if (pe < (uint32_t)n->npes) atomic_store_explicit(&n->heard[pe], t, memory_order_release);
    return UCS_OK;
}

/* Sends my heartbeat (the time now: it differs every time) to p, unless the last one is still
 * in flight. */
static void heartbeat_send(duet_net_t *n, net_peer_t *p, uint64_t now)
{
    if (!p->hb_ep) return;
    if (p->hb_req) {
        if (atomic_load_explicit(&p->hb_state, memory_order_acquire) == 0) return;
        ucp_request_free(p->hb_req);
        p->hb_req = NULL;
    }
    p->hb_sent_ns = p->hb_out = now;
    atomic_store_explicit(&p->hb_state, 0, memory_order_relaxed);
    ucp_request_param_t prm = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
                               .cb.send = heartbeat_done, .user_data = p};
    ucs_status_ptr_t r = ucp_am_send_nbx(p->hb_ep, HEARTBEAT_AM_ID, &n->me32, sizeof n->me32, &p->hb_out,
                                         sizeof p->hb_out, &prm);
    if (r == NULL) atomic_store_explicit(&p->hb_state, 1, memory_order_release); /* sent at once */
    else if (UCS_PTR_IS_ERR(r)) atomic_store_explicit(&p->hb_state, -1, memory_order_release);
    else p->hb_req = r;
}

/* Closes the detector's endpoint to a peer found dead (its thread only): UCP wants a failed
 * endpoint closed, and a dead peer gets no more heartbeats. A forced close completes at once,
 * the heartbeat in flight too. */
static void hb_close(duet_net_t *n, net_peer_t *p)
{
    ucp_ep_h ep = p->hb_ep; /* NULL when closed at its failure (ep_error) */
    p->hb_ep = NULL;
    ucp_request_param_t cp = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS, .flags = UCP_EP_CLOSE_FLAG_FORCE};
    ucs_status_ptr_t r = ep ? ucp_ep_close_nbx(ep, &cp) : NULL;
    uint64_t until = duet_time_ns() + 1000000000ull;
    while (r && !UCS_PTR_IS_ERR(r) && ucp_request_check_status(r) == UCS_INPROGRESS && duet_time_ns() < until)
        ucp_worker_progress(n->hb_worker);
    if (r && !UCS_PTR_IS_ERR(r)) ucp_request_free(r);
    if (p->hb_req) { /* completed (canceled) by the close, or given up with it */
        if (atomic_load_explicit(&p->hb_state, memory_order_acquire) == 0) ucp_request_cancel(n->hb_worker, p->hb_req);
        ucp_request_free(p->hb_req);
        p->hb_req = NULL;
    }
}

void duet_tport_net_watch(duet_net_t *n, uint64_t every_ns, uint64_t silence_ns, duet_net_dead_fn dead, void *arg)
{
    (void)duet_tport_net_progress_all(); /* also serves the peers' operations on my memory */
    if (n->hb_worker) ucp_worker_progress(n->hb_worker); /* the heartbeats, both ways */
    uint64_t now = duet_time_ns();
    for (int pe = 0; pe < n->npes; pe++) {
        net_peer_t *p = &n->peers[pe];
        if (!p->is_net || p->reported) continue;
        char why[160];
        int e = atomic_load_explicit(&p->failed, memory_order_acquire);
        if (e) {
            snprintf(why, sizeof why, "its endpoint failed: %s", failure_text(e));
            p->reported = 1;
            hb_close(n, p);
            dead(arg, pe, why);
            continue;
        }
        if (now - p->hb_sent_ns >= every_ns) heartbeat_send(n, p, now);
        uint64_t h = atomic_load_explicit(&n->heard[pe], memory_order_acquire);
        if (h != p->hb_last || !p->hb_seen_ns) p->hb_seen_ns = now; /* silence counts from the first look */
        p->hb_last = h;
        if (now - p->hb_seen_ns > silence_ns) {
            snprintf(why, sizeof why, "no heartbeat for %.1f s: its host or link is down, or its process stopped",
                     (double)(now - p->hb_seen_ns) / 1e9);
            int none = 0; /* from now on its operations fail at once, and its waits end */
            atomic_compare_exchange_strong(&p->failed, &none, (int)UCS_ERR_ENDPOINT_TIMEOUT);
            p->reported = 1;
            hb_close(n, p);
            dead(arg, pe, why);
        }
    }
}

typedef struct {
    uint64_t addr_len, rkey_len, hb_addr_len, base;
    int32_t ok, pad;
} net_info_t;

/* The detector's endpoint to a net peer (its heartbeats). */
static duet_status_t hb_connect(duet_net_t *n, net_peer_t *p, const void *addr)
{
    ucp_ep_params_t prm = {.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                                         UCP_EP_PARAM_FIELD_ERR_HANDLER,
                           .address = (const ucp_address_t *)addr, .err_mode = UCP_ERR_HANDLING_MODE_PEER,
                           .err_handler = {.cb = ep_error, .arg = p}};
    ucs_status_t s = ucp_ep_create(n->hb_worker, &prm, &p->hb_ep);
    if (s == UCS_OK) return DUET_OK;
    p->hb_ep = NULL;
    return DUET_FAIL(DUET_ERR_SYSTEM, HEAP, "net: the failure detector's endpoint to rank %d: %s", p->pe,
                     ucs_status_string(s));
}

static duet_status_t ucs_setup_fail(ucs_status_t s, const char *what)
{
    return DUET_FAIL(DUET_ERR_SYSTEM, HEAP, "net: %s: %s", what, ucs_status_string(s));
}

/* A worker of ctx (serialized: one thread at a time) and its address; `whose` names it in a
 * failure. On failure *w and *addr are NULL or left for the caller to release. */
static duet_status_t worker_with_address(ucp_context_h ctx, ucp_worker_h *w, ucp_address_t **addr, size_t *len,
                                         const char *whose)
{
    char what[96];
    ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
                              .thread_mode = UCS_THREAD_MODE_SERIALIZED};
    ucs_status_t s = ucp_worker_create(ctx, &wp, w);
    if (s != UCS_OK) {
        *w = NULL;
        snprintf(what, sizeof what, "ucp_worker_create (%s)", whose);
        return ucs_setup_fail(s, what);
    }
    if ((s = ucp_worker_get_address(*w, addr, len)) != UCS_OK) {
        *addr = NULL;
        snprintf(what, sizeof what, "ucp_worker_get_address (%s)", whose);
        return ucs_setup_fail(s, what);
    }
    return DUET_OK;
}

/* Makes every connection of both workers before the heap is used: a get of 8 bytes from each
 * net peer on the application's worker (its reply needs the way back too) and a first
 * heartbeat each way on the detector's; then a barrier during which every rank still
 * progresses both workers (the peers' need my progress). Why: UCX 1.13 aborts the process
 * ("unexpected error: Endpoint timeout", replaying the requests that waited for a connection)
 * when the peer dies before that connection is made; the first heartbeat did so, its victim
 * killed in the first 100 ms (test_ft_ulfm shrink across two hosts: 2 runs in 4). It also
 * checks that every peer's heartbeats reach me before anything relies on them. */
static duet_status_t wire_up(duet_net_t *n, duet_boot_t *b)
{
    int npes = n->npes;
    uint64_t *scratch = calloc((size_t)npes, sizeof *scratch);
    ucs_status_ptr_t *reqs = calloc((size_t)npes, sizeof *reqs);
    duet_status_t st = scratch && reqs ? DUET_OK : DUET_FAIL(DUET_ERR_NO_MEMORY, HEAP, "net: out of host memory");
    atomic_store_explicit(&n->hb_shared, 1, memory_order_release);
    ucp_request_param_t prm = {.op_attr_mask = 0};
    uint64_t now = duet_time_ns();
    for (int pe = 0; !st && pe < npes; pe++) {
        net_peer_t *p = &n->peers[pe];
        if (!p->is_net) continue;
        net_lock(n);
        reqs[pe] = !p->ep ? EP_GONE : ucp_get_nbx(p->ep, &scratch[pe], sizeof *scratch, p->rbase, p->rkey, &prm);
        net_unlock(n);
        hb_hold(n);
        heartbeat_send(n, p, now);
        hb_release(n);
    }
    uint64_t deadline = now + (uint64_t)duet_cfg()->bootstrap_timeout * 1000000000ull;
    for (int pe = 0; !st && pe < npes; pe++) {
        net_peer_t *p = &n->peers[pe];
        if (!p->is_net) continue;
        ucs_status_ptr_t r = reqs[pe];
        ucs_status_t s = UCS_PTR_IS_ERR(r) ? UCS_PTR_STATUS(r) : UCS_OK;
        const char *what = "a get";
        for (;;) { /* the get, my heartbeat's sending, its heartbeat's arrival */
            int hb = atomic_load_explicit(&p->hb_state, memory_order_acquire);
            if (r && !UCS_PTR_IS_ERR(r) && (s = ucp_request_check_status(r)) == UCS_INPROGRESS) what = "a get";
            else if (s != UCS_OK) break;
            else if (hb < 0) {
                what = "my heartbeat";
                s = UCS_ERR_UNREACHABLE;
                break;
            } else if (hb == 0) what = "my heartbeat";
            else if (!atomic_load_explicit(&n->heard[pe], memory_order_acquire)) what = "its heartbeat";
            else break;
            if (duet_time_ns() > deadline) {
                s = UCS_ERR_TIMED_OUT;
                break;
            }
            if (!duet_tport_net_progress_all()) duet_cpu_relax();
        }
        if (s != UCS_OK)
            st = DUET_FAIL(DUET_ERR_PEER_FAILED, HEAP, "net: no connection with rank %d (%s): %s", pe, what,
                           ucs_status_string(s));
    }
    for (int pe = 0; reqs && pe < npes; pe++) {
        if (!reqs[pe] || UCS_PTR_IS_ERR(reqs[pe])) continue;
        net_lock(n);
        ucp_request_free(reqs[pe]); /* one still in flight (a failure above) completes inside UCX */
        net_unlock(n);
    }
    duet_status_t bst = duet_boot_barrier(b); /* its waits progress both workers (shared) */
    if (!st) st = bst;
    atomic_store_explicit(&n->hb_shared, 0, memory_order_release);
    hb_hold(n); /* the last other thread in hb_worker is out: the detector's alone from now */
    hb_release(n);
    if (!st) free(scratch); /* else a get may still land in it, until the endpoints are closed */
    free(reqs);
    return st;
}

duet_status_t duet_tport_net_create(duet_net_t **out, duet_boot_t *b, char *seg, size_t reg_len,
                                    duet_tport_ep_t *eps, const unsigned char *net_pe)
{
    int npes = b->nranks, me = b->rank;
    duet_net_t *n = calloc(1, sizeof *n);
    net_info_t mine = {0}, *all = malloc(sizeof *all * (size_t)npes);
    ucp_address_t *addr = NULL, *hb_addr = NULL;
    void *rkey_buf = NULL;
    char *blob = NULL, *blobs = NULL;
    size_t addr_len = 0, rkey_len = 0, hb_addr_len = 0, blob_len = 0;
    duet_status_t st = DUET_OK;
    ucs_status_t s;
    *out = NULL;
    if (!n || !all || !(n->peers = calloc((size_t)npes, sizeof *n->peers)) ||
        !(n->heard = calloc((size_t)npes, sizeof *n->heard))) {
        st = DUET_FAIL(DUET_ERR_NO_MEMORY, HEAP, "net: out of host memory");
        goto exchange;
    }
    n->npes = npes;
    n->me = me;
    n->me32 = (uint32_t)me;
    n->seg = seg;
    n->wait.timeout_s = duet_cfg()->wait_timeout;
    n->wait.spin_us = duet_cfg()->wait_spin_us;
    ucp_config_t *config = NULL;
    if ((s = ucp_config_read(NULL, NULL, &config)) != UCS_OK) {
        st = ucs_setup_fail(s, "ucp_config_read");
        goto exchange;
    }
    /* the endpoint to myself (one atomic agent, 4.8) must not take UCX's self transport:
     * its atomics are CPU atomics (not the NIC's on IB), and in 1.13 it returned wrong
     * 32-bit fetch-and/or/xor results here (test_amo, DUET_NET=force without UCX_TLS).
     * Unless the user chose the transports, all but self: my endpoint then loops back
     * through the transport the peers use. */
    if (!getenv("UCX_TLS") && (s = ucp_config_modify(config, "TLS", "^self")) != UCS_OK)
        DUET_LOG(WARN, HEAP, "net: could not exclude UCX's self transport: %s", ucs_status_string(s));
    else if (getenv("UCX_TLS") && strstr(getenv("UCX_TLS"), "self") && getenv("UCX_TLS")[0] != '^')
        DUET_LOG(WARN, HEAP, "net: UCX_TLS names self: atomics on my own heap words may take UCX's self "
                             "transport (CPU atomics; docs/NETWORK.md 4.8)");
    ucp_params_t params = {.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED,
                           .features = UCP_FEATURE_RMA | UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64 | UCP_FEATURE_AM,
                           .mt_workers_shared = 0};
    s = ucp_init(&params, config, &n->ctx);
    ucp_config_release(config);
    if (s != UCS_OK) {
        n->ctx = NULL;
        st = ucs_setup_fail(s, "ucp_init");
        goto exchange;
    }
    if ((st = worker_with_address(n->ctx, &n->worker, &addr, &addr_len, "the application's")) ||
        (st = worker_with_address(n->ctx, &n->hb_worker, &hb_addr, &hb_addr_len, "the failure detector's")))
        goto exchange;
    ucp_am_handler_param_t hp = {.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                                               UCP_AM_HANDLER_PARAM_FIELD_ARG,
                                 .id = HEARTBEAT_AM_ID, .cb = heartbeat_recv, .arg = n};
    if ((s = ucp_worker_set_am_recv_handler(n->hb_worker, &hp)) != UCS_OK) {
        st = ucs_setup_fail(s, "the heartbeats' handler (ucp_worker_set_am_recv_handler)");
        goto exchange;
    }
    ucp_mem_map_params_t mp = {.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH,
                               .address = seg, .length = reg_len};
    if ((s = ucp_mem_map(n->ctx, &mp, &n->memh)) != UCS_OK) {
        n->memh = NULL;
        st = ucs_setup_fail(s, "ucp_mem_map of the heap segment");
        goto exchange;
    }
    if ((s = ucp_rkey_pack(n->ctx, n->memh, &rkey_buf, &rkey_len)) != UCS_OK) {
        rkey_buf = NULL;
        st = ucs_setup_fail(s, "ucp_rkey_pack");
        goto exchange;
    }
    mine = (net_info_t){.addr_len = addr_len, .rkey_len = rkey_len, .hb_addr_len = hb_addr_len,
                        .base = (uint64_t)(uintptr_t)seg, .ok = 1};
exchange:
    /* every rank takes part in both exchanges, also after a failure of its own, so no
     * one waits for a rank that gave up; lengths first (addresses and rkeys differ in
     * length), then blobs padded to the longest */
    if (!all) return st ? st : DUET_FAIL(DUET_ERR_NO_MEMORY, HEAP, "net: out of host memory");
    {
        duet_status_t st2 = duet_boot_allgather(b, &mine, all, sizeof mine);
        if (!st) st = st2;
        for (int pe = 0; !st2 && pe < npes; pe++) {
            if (!all[pe].ok && !st) st = DUET_FAIL(DUET_ERR_SYSTEM, HEAP, "net: rank %d could not set up UCX", pe);
            size_t len = all[pe].addr_len + all[pe].rkey_len + all[pe].hb_addr_len;
            if (len > blob_len) blob_len = len;
        }
        if (st2) goto out;
    }
    blob = calloc(1, blob_len ? blob_len : 1);
    blobs = malloc(blob_len * (size_t)npes + 1);
    if (mine.ok && blob) {
        memcpy(blob, addr, addr_len);
        memcpy(blob + addr_len, rkey_buf, rkey_len);
        memcpy(blob + addr_len + rkey_len, hb_addr, hb_addr_len);
    }
    {
        duet_status_t st2 = blob && blobs ? duet_boot_allgather(b, blob, blobs, blob_len) : DUET_ERR_NO_MEMORY;
        if (!st) st = st2 == DUET_ERR_NO_MEMORY ? DUET_FAIL(st2, HEAP, "net: out of host memory") : st2;
    }
    for (int pe = 0; !st && pe < npes; pe++) {
        net_peer_t *p = &n->peers[pe];
        p->net = n;
        p->pe = pe;
        /* an endpoint to every pe, myself and mapped peers included: they need it for
         * atomics (one agent, 4.8); to myself without error handling (it cannot fail, and
         * UCX's self transport may not offer PEER mode) */
        char *theirs = blobs + (size_t)pe * blob_len;
        ucp_ep_params_t ep_params = {.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                                                   UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                                                   UCP_EP_PARAM_FIELD_ERR_HANDLER,
                                     .address = (const ucp_address_t *)(void *)theirs,
                                     .err_mode = pe == me ? UCP_ERR_HANDLING_MODE_NONE : UCP_ERR_HANDLING_MODE_PEER,
                                     .err_handler = {.cb = ep_error, .arg = p}};
        if ((s = ucp_ep_create(n->worker, &ep_params, &p->ep)) != UCS_OK) {
            p->ep = NULL;
            st = DUET_FAIL(DUET_ERR_SYSTEM, HEAP, "net: ucp_ep_create to rank %d: %s", pe, ucs_status_string(s));
            break;
        }
        if ((s = ucp_ep_rkey_unpack(p->ep, theirs + all[pe].addr_len, &p->rkey)) != UCS_OK) {
            p->rkey = NULL;
            st = DUET_FAIL(DUET_ERR_SYSTEM, HEAP, "net: the rkey of rank %d: %s", pe, ucs_status_string(s));
            break;
        }
        p->rbase = all[pe].base;
        if (net_pe[pe] && (st = hb_connect(n, p, theirs + all[pe].addr_len + all[pe].rkey_len))) break;
    }
out:
    if (rkey_buf) ucp_rkey_buffer_release(rkey_buf);
    if (addr) ucp_worker_release_address(n->worker, addr);
    if (hb_addr) ucp_worker_release_address(n->hb_worker, hb_addr);
    free(blob);
    free(blobs);
    free(all);
    if (st) {
        duet_tport_net_destroy(n, NULL, 0);
        return st;
    }
    for (int pe = 0; pe < npes; pe++) {
        eps[pe].priv = &n->peers[pe];
        if (!net_pe[pe]) { /* myself or mapped: shm data, atomics through the agent */
            eps[pe].ops = &duet_tport_shm_netamo_ops;
            continue;
        }
        eps[pe].ops = &duet_tport_net_ops;
        eps[pe].base = NULL;
        eps[pe].doorbell = NULL;
        n->peers[pe].is_net = 1;
    }
    registry_add(n);
    if ((st = wire_up(n, b))) {
        duet_tport_net_destroy(n, eps, npes);
        return st;
    }
    *out = n;
    return DUET_OK;
}

void duet_tport_net_destroy(duet_net_t *n, duet_tport_ep_t *eps, int npes)
{
    if (!n) return;
    (void)npes;
    registry_remove(n); /* no other thread progresses it from here on */
    if (n->worker && n->peers) {
        /* what I issued lands before my endpoints go (a peer may still wait for it); bounded */
        duet_wait_ctx_t quick = n->wait;
        quick.abort_flag = NULL;
        if (quick.timeout_s <= 0 || quick.timeout_s > 10) quick.timeout_s = 10;
        duet_wait_ctx_t keep = n->wait;
        n->wait = quick;
        ucp_request_param_t fp = {.op_attr_mask = 0};
        for (int pe = 0; pe < n->npes; pe++) { /* the live peers' (a dead one's would wait the bound out) */
            net_peer_t *p = &n->peers[pe];
            if (p->ep && p->dirty && !atomic_load_explicit(&p->failed, memory_order_relaxed))
                (void)wait_req(n, p, ucp_ep_flush_nbx(p->ep, &fp), "flush at heap release", pe);
        }
        for (int pe = 0; pe < n->npes; pe++) {
            net_peer_t *p = &n->peers[pe];
            hb_close(n, p); /* the detector has let go of n: its worker is mine now */
            if (p->rkey) ucp_rkey_destroy(p->rkey);
            p->rkey = NULL;
            ucp_ep_h ep = p->ep; /* NULL when closed at its failure (ep_error) */
            p->ep = NULL;        /* so an error callback during the close does not close it again */
            ucp_request_param_t cp = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS, .flags = UCP_EP_CLOSE_FLAG_FORCE};
            ucs_status_ptr_t req = ep ? ucp_ep_close_nbx(ep, &cp) : NULL;
            if (req && !UCS_PTR_IS_ERR(req)) {
                duet_waiter_t w;
                duet_waiter_init(&w, &n->wait, "net %s", "endpoint close", 0, 0, pe);
                while (ucp_request_check_status(req) == UCS_INPROGRESS && duet_waiter_turn(&w) == DUET_OK)
                    ucp_worker_progress(n->worker);
                ucp_request_free(req);
            }
            if (eps) {
                eps[pe].priv = NULL;
                if (eps[pe].ops == &duet_tport_shm_netamo_ops) eps[pe].ops = &duet_tport_shm_ops;
            }
        }
        n->wait = keep;
    }
    if (n->memh) ucp_mem_unmap(n->ctx, n->memh);
    if (n->hb_worker) ucp_worker_destroy(n->hb_worker);
    if (n->worker) ucp_worker_destroy(n->worker);
    if (n->ctx) ucp_cleanup(n->ctx);
    free(n->peers);
    free(n->heard);
    free(n);
}

#endif
