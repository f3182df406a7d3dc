/*
 * duet_tport_net_state.h — the net transport's state inside src/tport (with UCX only), shared by
 * its files:
 *   duet_tport_net.c        the process's nets (registry, progress), creation and teardown
 *   duet_tport_net_ops.c    the one-sided operations (duet_tport_net_ops) and their waits
 *   duet_tport_net_watch.c  a net peer's failure: its endpoint's error, heartbeats, the detector
 * What the rest of the library sees: duet_tport_net.h.
 */
#ifndef DUET_TPORT_NET_STATE_H
#define DUET_TPORT_NET_STATE_H

#ifdef DUET_HAVE_UCX

#include <pthread.h>
#include <ucp/api/ucp.h>
#include "tport/duet_tport_net.h"
#include "util/duet_util.h"

typedef struct {
    duet_net_t *net;
    int pe;
    ucp_ep_h ep;
    ucp_rkey_h rkey;
    uint64_t rbase;        /* the peer's segment base, in its address space */
    _Atomic int failed;    /* the endpoint's error (a ucs_status_t), 0 while healthy */
    int is_net;            /* reached over the net (not myself, not mapped)             */
    int dirty;             /* operations to it may not be remotely complete yet          */
    int reported;          /* found dead and said so (the failure detector's thread)    */
    /* the heartbeats (the heartbeat thread only, after wire_up) */
    ucp_ep_h hb_ep;        /* my endpoint to it on hb_worker                             */
    ucs_status_ptr_t hb_req; /* my heartbeat to it, in flight                             */
    _Atomic int hb_state;  /* its completion: 0 in flight, 1 done, -1 failed (callback)   */
    uint64_t hb_out;       /* the value being sent (stays until the send completes)      */
    uint64_t hb_last, hb_seen_ns, hb_sent_ns;
    _Atomic uint64_t silent_ns; /* how long it had been silent when found so (NET_SILENT) */
} net_peer_t;

/* A ticket lock: fair, so the failure detector's thread gets its turn while another thread
 * waits in a tight loop. */
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
    ucp_worker_h hb_worker; /* the heartbeat thread's own (no lock): a heartbeat never queues
                             * behind the application's operations, nor waits while another
                             * thread's progress of `worker` serves a peer's long transfer */
    _Atomic int hb_shared;  /* while its connections are made (wire_up): any thread's progress
                             * may progress hb_worker too, holding hb_lock */
    ticket_lock_t hb_lock;
    pthread_t hb_thread;    /* the heartbeat thread (duet_tport_net_heartbeats_start)       */
    int hb_running;
    pthread_mutex_t hb_mu;  /* hb_stop, and the thread's sleep                             */
    pthread_cond_t hb_cv;
    int hb_stop;
    uint32_t me32;          /* my pe, the header of my heartbeats                              */
    _Atomic uint64_t *heard; /* per pe: the last heartbeat it sent me (its clock), 0: none yet  */

    ucp_mem_h memh;
    net_peer_t *peers;     /* one per pe; ep NULL where not a net peer */
    int npes;
    int dirty;             /* an operation not yet remotely complete may be outstanding */
    duet_wait_ctx_t wait;  /* bounds every wait (duet_tport_net_set_wait) */
};

static inline void ticket_lock(ticket_lock_t *l)
{
    unsigned ticket = atomic_fetch_add_explicit(&l->next, 1, memory_order_relaxed);
    while (atomic_load_explicit(&l->serving, memory_order_acquire) != ticket) duet_cpu_relax();
}
static inline int ticket_trylock(ticket_lock_t *l)
{
    unsigned serving = atomic_load_explicit(&l->serving, memory_order_relaxed), next = serving;
    return atomic_compare_exchange_strong_explicit(&l->next, &next, serving + 1, memory_order_acquire,
                                                   memory_order_relaxed);
}
static inline void ticket_unlock(ticket_lock_t *l)
{
    atomic_store_explicit(&l->serving, atomic_load_explicit(&l->serving, memory_order_relaxed) + 1,
                          memory_order_release);
}

/* The application's worker, and the detector's while it is shared (wire_up). */
static inline void net_lock(duet_net_t *n) { ticket_lock(&n->lock); }
static inline int net_trylock(duet_net_t *n) { return ticket_trylock(&n->lock); }
static inline void net_unlock(duet_net_t *n) { ticket_unlock(&n->lock); }
static inline void hb_hold(duet_net_t *n) { ticket_lock(&n->hb_lock); }
static inline void hb_release(duet_net_t *n) { ticket_unlock(&n->hb_lock); }

/* What an operation on a closed endpoint (ep_error) gets instead of a request. */
#define EP_GONE UCS_STATUS_PTR(UCS_ERR_CONNECTION_RESET)

/* p->failed when the failure detector declared the peer dead before UCX saw its endpoint fail
 * (duet_tport_net_peer_dead): not a ucs_status_t. */
#define NET_DECLARED_DEAD (-100000)
/* p->failed when its heartbeats stopped for DUET_FT_NET_TIMEOUT (p->silent_ns says how long). */
#define NET_SILENT (-100001)

/* The active message of a heartbeat: header = the sender's pe (uint32), data = its clock. Not
 * a put: over TCP, UCX 1.13 acknowledges every put, and aborts the process ("unexpected error:
 * Endpoint timeout", ucp_put_handler) when it must acknowledge one from a peer whose endpoint
 * it has seen fail but not yet reported (its error callback comes later); a heartbeat from a
 * rank killed a moment before did so to its survivors (test_ft_ulfm during / agree-during with
 * DUET_NET=force and UCX_TLS=tcp: 4 and 6 runs in 14). An active message is not acknowledged.
 * (Sent without UCP_AM_SEND_FLAG_EAGER: with it, heartbeats stalled for over 10 s under load.) */
#define HEARTBEAT_AM_ID 1

/* ---- across the files */
/* duet_tport_net_ops.c: waits for `req` (NULL: done at once) progressing the worker: bounded by
 * the wait context (deadline, abort word) and by the peer's failure (p NULL: a worker-wide
 * request). */
duet_status_t duet_tport_net_wait_req(duet_net_t *n, net_peer_t *p, ucs_status_ptr_t req, const char *op, int pe);

/* duet_tport_net_watch.c */
/* UCX's error callback of every endpoint (arg: its net_peer_t) */
void duet_tport_net_ep_error(void *arg, ucp_ep_h ep, ucs_status_t status);
/* what p->failed says, for a message */
const char *duet_tport_net_failure_text(int e);
/* the heartbeats' active-message handler (arg: the net) */
ucs_status_t duet_tport_net_heartbeat_recv(void *arg, const void *header, size_t header_length, void *data,
                                           size_t length, const ucp_am_recv_param_t *param);
/* sends my heartbeat to p, unless the last one is still in flight */
void duet_tport_net_heartbeat_send(duet_net_t *n, net_peer_t *p, uint64_t now);
/* closes my heartbeat endpoint to p (the heartbeat thread, or hb_worker's owner after it) */
void duet_tport_net_hb_close(duet_net_t *n, net_peer_t *p);
/* the heartbeat thread (after wire_up): starts it where the failure detector runs
 * (DUET_FT_PERIOD_MS > 0); stop joins it (a no-op when none runs) */
void duet_tport_net_heartbeats_start(duet_net_t *n);
void duet_tport_net_heartbeats_stop(duet_net_t *n);
/* the detector's endpoint to a net peer at address addr */
duet_status_t duet_tport_net_hb_connect(duet_net_t *n, net_peer_t *p, const void *addr);

#endif /* DUET_HAVE_UCX */
#endif
