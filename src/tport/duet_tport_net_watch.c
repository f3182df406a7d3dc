/*
 * duet_tport_net_watch.c — a net peer's failure (docs/NETWORK.md 2.10): UCX's error callback of
 * its endpoints, the heartbeats (an active message on a worker of their own, sent and judged by
 * a thread of their own), and the failure detector's look at the net peers.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "tport/duet_tport_net_state.h"

#ifdef DUET_HAVE_UCX

/* An endpoint failed (UCX's callback, inside a progress of its worker): it is closed at once,
 * as UCP asks; a put that the dead peer sent before dying then finds no endpoint here and is
 * dropped. (It does not stop UCX 1.13's abort when such a put is handled before this callback
 * runs: docs/NETWORK.md 4.12.) Whoever progresses a worker holds it (the application's lock;
 * hb_worker is the heartbeat thread's, or held while shared), so no call on the endpoint is
 * under way; later ones find it NULL (EP_GONE; duet_tport_net_heartbeat_send skips it). */
void duet_tport_net_ep_error(void *arg, ucp_ep_h ep, ucs_status_t status)
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
    else p->hb_ep = NULL; /* its heartbeat in flight, if any, is freed by duet_tport_net_hb_close */
}

/* What p->failed says, for a message. */
const char *duet_tport_net_failure_text(int e)
{
    return e == NET_DECLARED_DEAD ? "declared dead by the failure detector"
           : e == NET_SILENT      ? "no heartbeat for DUET_FT_NET_TIMEOUT"
                                  : ucs_status_string((ucs_status_t)e);
}

/* ---- a net peer's state, for the failure detector (docs/NETWORK.md 2.10) ---- */

int duet_tport_net_peer_failed(duet_net_t *n, int pe, char *why, size_t len)
{
    net_peer_t *p = &n->peers[pe];
    int e = p->is_net ? atomic_load_explicit(&p->failed, memory_order_acquire) : 0;
    if (e) snprintf(why, len, "its endpoint failed: %s", duet_tport_net_failure_text(e));
    return e != 0;
}

void duet_tport_net_peer_dead(duet_net_t *n, int pe)
{
    int none = 0;
    if (n->peers[pe].is_net)
        atomic_compare_exchange_strong(&n->peers[pe].failed, &none, NET_DECLARED_DEAD);
}

/* My heartbeat's send has completed (in the heartbeat thread, which alone progresses
 * hb_worker after wire_up). */
static void heartbeat_done(void *request, ucs_status_t status, void *user_data)
{
    (void)request;
    net_peer_t *p = user_data;
    atomic_store_explicit(&p->hb_state, status == UCS_OK ? 1 : -1, memory_order_release);
}

/* A heartbeat arrived (the active message HEARTBEAT_AM_ID: duet_tport_net_state.h). */
ucs_status_t duet_tport_net_heartbeat_recv(void *arg, const void *header, size_t header_length, void *data,
                                           size_t length, const ucp_am_recv_param_t *param)
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
void duet_tport_net_heartbeat_send(duet_net_t *n, net_peer_t *p, uint64_t now)
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

/* Closes my heartbeat endpoint to a peer found failed (the heartbeat thread, or hb_worker's
 * owner once the thread is gone): UCP wants a failed endpoint closed, and a dead peer gets no
 * more heartbeats. A forced close completes at once, the heartbeat in flight too. */
void duet_tport_net_hb_close(duet_net_t *n, net_peer_t *p)
{
    ucp_ep_h ep = p->hb_ep; /* NULL when closed at its failure (duet_tport_net_ep_error) */
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

/* ---- the heartbeat thread (docs/NETWORK.md 2.10) ----
 *
 * Heartbeats have a thread of their own, apart from the failure detector's: the detector also
 * progresses the application's worker (it serves the peers' operations on my memory while the
 * application computes), and one such progress can take seconds when it serves a peer's
 * transfer of megabytes under CPU load (1.3-2.2 s measured with test_rma's 9 MiB gets across
 * namespace hosts on 2 loaded cores; over 10 s in CI). Heartbeats sent from that thread
 * stopped for as long, and live peers were declared dead. This thread touches only hb_worker
 * and never waits on anything but its own sleep. */

/* One turn: receive, send what is due, judge the silences. A turn that comes long after the
 * last one (my own process was stopped or starved) starts every silence anew: the peers'
 * heartbeats of that time may still be in my sockets, and my stall is not their death. */
static void heartbeat_turn(duet_net_t *n, uint64_t every_ns, uint64_t silence_ns, uint64_t *last_turn)
{
    ucp_worker_progress(n->hb_worker); /* the heartbeats, both ways */
    uint64_t now = duet_time_ns();
    int restart = *last_turn && now - *last_turn > silence_ns / 4;
    *last_turn = now;
    for (int pe = 0; pe < n->npes; pe++) {
        net_peer_t *p = &n->peers[pe];
        if (!p->is_net || (!p->hb_ep && !p->hb_req)) continue; /* closed: no more heartbeats */
        if (atomic_load_explicit(&p->failed, memory_order_acquire)) { /* its endpoint, or a verdict */
            duet_tport_net_hb_close(n, p);
            continue;
        }
        if (now - p->hb_sent_ns >= every_ns) duet_tport_net_heartbeat_send(n, p, now);
        uint64_t h = atomic_load_explicit(&n->heard[pe], memory_order_acquire);
        if (h != p->hb_last || !p->hb_seen_ns || restart) p->hb_seen_ns = now; /* from the first look */
        p->hb_last = h;
        if (now - p->hb_seen_ns > silence_ns) {
            /* from now on its operations fail at once, and its waits end; the failure
             * detector reports it (duet_tport_net_watch) */
            atomic_store_explicit(&p->silent_ns, now - p->hb_seen_ns, memory_order_relaxed);
            int none = 0;
            atomic_compare_exchange_strong(&p->failed, &none, NET_SILENT);
            duet_tport_net_hb_close(n, p);
        }
    }
}

static void *heartbeat_loop(void *arg)
{
    duet_net_t *n = arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL); /* the program's signals go to its own threads */
    const duet_cfg_t *cfg = duet_cfg();
    uint64_t every = (uint64_t)(cfg->ft_heartbeat_ms * 1e6), silence = (uint64_t)(cfg->ft_net_timeout * 1e9);
    if (every < 1000000) every = 1000000;
    /* a look four times a heartbeat period (at most 25 ms apart): arrivals are seen soon */
    uint64_t nap = every / 4 < 25000000 ? every / 4 : 25000000, last_turn = 0;
    pthread_mutex_lock(&n->hb_mu);
    while (!n->hb_stop) {
        pthread_mutex_unlock(&n->hb_mu);
        heartbeat_turn(n, every, silence, &last_turn);
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        uint64_t ns = (uint64_t)until.tv_nsec + nap;
        until.tv_sec += (time_t)(ns / 1000000000ull);
        until.tv_nsec = (long)(ns % 1000000000ull);
        pthread_mutex_lock(&n->hb_mu);
        if (!n->hb_stop) pthread_cond_timedwait(&n->hb_cv, &n->hb_mu, &until);
    }
    pthread_mutex_unlock(&n->hb_mu);
    return NULL;
}

void duet_tport_net_heartbeats_start(duet_net_t *n)
{
    if (duet_cfg()->ft_period_ms <= 0) return; /* no failure detector: nobody judges silences */
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&n->hb_mu, NULL);
    pthread_cond_init(&n->hb_cv, &ca);
    pthread_condattr_destroy(&ca);
    n->hb_stop = 0;
    int err = pthread_create(&n->hb_thread, NULL, heartbeat_loop, n);
    if (err) {
        DUET_LOG(WARN, INIT, "net: no heartbeats (the peers on other hosts will declare me dead within "
                             "DUET_FT_NET_TIMEOUT): cannot start their thread: %s", strerror(err));
        pthread_cond_destroy(&n->hb_cv);
        pthread_mutex_destroy(&n->hb_mu);
        return;
    }
    n->hb_running = 1;
}

void duet_tport_net_heartbeats_stop(duet_net_t *n)
{
    if (!n->hb_running) return;
    pthread_mutex_lock(&n->hb_mu);
    n->hb_stop = 1;
    pthread_cond_signal(&n->hb_cv);
    pthread_mutex_unlock(&n->hb_mu);
    pthread_join(n->hb_thread, NULL);
    pthread_cond_destroy(&n->hb_cv);
    pthread_mutex_destroy(&n->hb_mu);
    n->hb_running = 0; /* hb_worker is its owner's again */
}

/* ---- the failure detector's report ---- */

void duet_tport_net_watch(duet_net_t *n, duet_net_dead_fn dead, void *arg)
{
    (void)duet_tport_net_progress_all(); /* also serves the peers' operations on my memory */
    for (int pe = 0; pe < n->npes; pe++) {
        net_peer_t *p = &n->peers[pe];
        if (!p->is_net || p->reported) continue;
        int e = atomic_load_explicit(&p->failed, memory_order_acquire);
        if (!e) continue;
        char why[160];
        if (e == NET_SILENT)
            snprintf(why, sizeof why, "no heartbeat for %.1f s: its host or link is down, or its process stopped",
                     (double)atomic_load_explicit(&p->silent_ns, memory_order_relaxed) / 1e9);
        else snprintf(why, sizeof why, "its endpoint failed: %s", duet_tport_net_failure_text(e));
        p->reported = 1;
        dead(arg, pe, why);
    }
}

/* My heartbeat endpoint to a net peer (on hb_worker). */
duet_status_t duet_tport_net_hb_connect(duet_net_t *n, net_peer_t *p, const void *addr)
{
    ucp_ep_params_t prm = {.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                                         UCP_EP_PARAM_FIELD_ERR_HANDLER,
                           .address = (const ucp_address_t *)addr, .err_mode = UCP_ERR_HANDLING_MODE_PEER,
                           .err_handler = {.cb = duet_tport_net_ep_error, .arg = p}};
    ucs_status_t s = ucp_ep_create(n->hb_worker, &prm, &p->hb_ep);
    if (s == UCS_OK) return DUET_OK;
    p->hb_ep = NULL;
    return DUET_FAIL(DUET_ERR_SYSTEM, HEAP, "net: the heartbeat endpoint to rank %d: %s", p->pe,
                     ucs_status_string(s));
}

#endif
