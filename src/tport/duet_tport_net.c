/*
 * duet_tport_net.c — the net transport: one-sided operations over UCP (docs/NETWORK.md 2.3-2.6),
 * for peers whose segment is not mapped here (another host, or every peer under DUET_NET=force).
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
 * ticket lock (fair: a thread spinning in a wait cannot starve another's), held only across
 * non-blocking UCP calls; another thread's progress that finds it held passes it by. The
 * heartbeats have a worker and a thread of their own (duet_tport_net_watch.c).
 *
 * This file: the process's nets and their progress, creation and teardown. The operations:
 * duet_tport_net_ops.c; failures and heartbeats: duet_tport_net_watch.c (the state they share:
 * duet_tport_net_state.h).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tport/duet_tport_net.h"
#include "tport/duet_tport_net_state.h"
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
void duet_tport_net_watch(duet_net_t *n, duet_net_dead_fn dead, void *arg) { (void)n, (void)dead, (void)arg; }
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

int duet_tport_net_built(void) { return 1; }

int duet_tport_net_describe(char *buf, size_t len)
{
    const char *tls = duet_foreign(UCX_TLS);
    snprintf(buf, len, "UCX %s: ranks on other hosts (DUET_NET=%s); transports: %s", ucp_get_version_string(),
             duet_cfg()->net, tls && *tls ? tls : "UCX's choice, less self");
    return 1;
}

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static duet_net_t *registry;

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

/* ---- creation and teardown */

typedef struct {
    uint64_t addr_len, rkey_len, hb_addr_len, base;
    int32_t ok, pad;
} net_info_t;

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
/* What a wire-up wait waits for, as the wait loop shows it (written only when read). */
typedef struct {
    char text[96];
    int pe;
    const char *const *what;
} wire_label_t;

static void wire_label(void *arg)
{
    wire_label_t *l = arg;
    snprintf(l->text, sizeof l->text, "net: the connection with rank %d (%s)", l->pe, *l->what);
}

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
        duet_tport_net_heartbeat_send(n, p, now);
        hb_release(n);
    }
    uint64_t deadline = now + (uint64_t)duet_cfg()->bootstrap_timeout * 1000000000ull;
    for (int pe = 0; !st && pe < npes; pe++) {
        net_peer_t *p = &n->peers[pe];
        if (!p->is_net) continue;
        ucs_status_ptr_t r = reqs[pe];
        ucs_status_t s = UCS_PTR_IS_ERR(r) ? UCS_PTR_STATUS(r) : UCS_OK;
        const char *what = "a get";
        /* the one wait loop, bounded by what is left of the set-up's deadline (no doorbell:
         * it yields, never sleeps) */
        uint64_t t = duet_time_ns();
        duet_wait_ctx_t ctx = {.timeout_s = t < deadline ? (double)(deadline - t) * 1e-9 : 1e-9,
                               .spin_us = duet_cfg()->wait_spin_us};
        wire_label_t label = {"", pe, &what};
        duet_waiter_t w;
        duet_waiter_init(&w, &ctx, "%s", label.text, 0, 0, pe);
        duet_waiter_label_later(&w, wire_label, &label);
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
            (void)duet_tport_net_progress_all();
            if (duet_waiter_turn(&w) != DUET_OK) { /* past the deadline */
                s = UCS_ERR_TIMED_OUT;
                break;
            }
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
    hb_hold(n); /* the last other thread in hb_worker is out: the heartbeat thread's from now */
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
    if (!duet_foreign(UCX_TLS) && (s = ucp_config_modify(config, "TLS", "^self")) != UCS_OK)
        DUET_LOG(WARN, HEAP, "net: could not exclude UCX's self transport: %s", ucs_status_string(s));
    else if (duet_foreign(UCX_TLS) && strstr(duet_foreign(UCX_TLS), "self") && duet_foreign(UCX_TLS)[0] != '^')
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
                                 .id = HEARTBEAT_AM_ID, .cb = duet_tport_net_heartbeat_recv, .arg = n};
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
                                     .err_handler = {.cb = duet_tport_net_ep_error, .arg = p}};
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
        if (net_pe[pe] && (st = duet_tport_net_hb_connect(n, p, theirs + all[pe].addr_len + all[pe].rkey_len))) break;
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
    duet_tport_net_heartbeats_start(n);
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
                (void)duet_tport_net_wait_req(n, p, ucp_ep_flush_nbx(p->ep, &fp), "flush at heap release", pe);
        }
        duet_tport_net_heartbeats_stop(n); /* my heartbeats end here: hb_worker is mine now */
        for (int pe = 0; pe < n->npes; pe++) {
            net_peer_t *p = &n->peers[pe];
            duet_tport_net_hb_close(n, p);
            if (p->rkey) ucp_rkey_destroy(p->rkey);
            p->rkey = NULL;
            ucp_ep_h ep = p->ep; /* NULL when closed at its failure (duet_tport_net_ep_error) */
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
