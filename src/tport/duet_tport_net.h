/*
 * duet_tport_net.h — the net transport's per-heap state (docs/NETWORK.md 2.3, 2.4): one UCP
 * context and worker per heap, my segment registered once, an endpoint, rkey and remote base
 * per net peer. The ops table itself is duet_tport_net_ops (duet_tport.h).
 *
 * Without DUET_HAVE_UCX the functions below exist but create nothing: duet_tport_net_create
 * fails with DUET_ERR_UNSUPPORTED, the others do nothing.
 */
#ifndef DUET_TPORT_NET_H
#define DUET_TPORT_NET_H

#include "boot/duet_boot.h"
#include "tport/duet_tport.h"

typedef struct duet_net duet_net_t;

/* 1 when the build has the net transport (UCX). */
int duet_tport_net_built(void);
/* One line for duet-info: the UCX version and settings; 1 when built, -1 when not. */
int duet_tport_net_describe(char *buf, size_t len);

/* Collective over `b` (every rank calls it, also one without net peers): creates the context
 * and worker, registers [seg, seg + reg_len), exchanges worker addresses and packed rkeys
 * (one exchange per heap), creates a UCP endpoint to every pe (myself included), binds
 * eps[pe] to the net transport for each pe with net_pe[pe] != 0 and every other endpoint to
 * duet_tport_shm_netamo_ops (mapped data, atomics through UCP: one atomic agent per heap,
 * docs/NETWORK.md 4.8). On failure nothing is left. */
duet_status_t duet_tport_net_create(duet_net_t **net, duet_boot_t *b, char *seg, size_t reg_len,
                                    duet_tport_ep_t *eps, const unsigned char *net_pe);

/* The waits' progress hook (duet_wait_ctx_t.progress): progresses every worker of the
 * process (duet_tport_net_progress_all; `net` is not needed). */
void duet_tport_net_progress(void *net);

/* Progresses every heap's worker that no other thread holds; returns the events seen. */
unsigned duet_tport_net_progress_all(void);

/* The failure detector's look at the net peers (its thread, every period, docs/NETWORK.md
 * 2.10): progresses every worker (serving the peers' operations on my memory); then, for each
 * net peer not yet reported, calls dead(arg, pe, why) once when it has failed: its endpoint's
 * error (UCX's callback: a closed or reset connection), duet_tport_net_peer_dead, or its
 * heartbeats' silence for DUET_FT_NET_TIMEOUT. The heartbeats (an active message carrying my
 * clock, every DUET_FT_HEARTBEAT_MS to each net peer) are sent, received and judged by a
 * thread of the net's own, so that a long progress here never stops them. */
typedef void (*duet_net_dead_fn)(void *arg, int pe, const char *why);
void duet_tport_net_watch(duet_net_t *net, duet_net_dead_fn dead, void *arg);

/* 1 (and why) when net peer pe's endpoint has failed (UCX's error, or the detector's verdict). */
int duet_tport_net_peer_failed(duet_net_t *net, int pe, char *why, size_t len);

/* The failure detector declared net peer pe dead (whatever told it: its pid, its silence):
 * from now on its operations fail at once and it gets no more heartbeats (nothing more is sent
 * over a connection that UCX may not yet have seen fail). */
void duet_tport_net_peer_dead(duet_net_t *net, int pe);

/* What bounds the transport's own waits (get, fetching atomics, quiet): a copy of the root
 * communicator's wait context (timeout, spin), without its abort word (a team of survivors
 * shares the heap and must go on after a death): a dead peer's waits end when its endpoint
 * fails (UCX's error, or the detector's verdict on silence). */
void duet_tport_net_set_wait(duet_net_t *net, const duet_wait_ctx_t *ctx);

/* Flushes (bounded), closes the endpoints, unregisters, destroys the worker and context. */
void duet_tport_net_destroy(duet_net_t *net, duet_tport_ep_t *eps, int npes);

#endif
