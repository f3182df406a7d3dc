/*
 * duet_ft.h — the failure detector (duet_ft.c): a thread that watches the peers' processes
 * and stops every wait on a communicator that lost a member.
 */
#ifndef DUET_FT_H
#define DUET_FT_H

#include "core/duet_comm.h"

/* Starts watching c's members (after c is built; its root's pids are set). Starts the
 * detector thread with the first communicator, unless DUET_FT_PERIOD_MS is 0. */
duet_status_t duet_ft_watch(duet_comm_t c);
/* Stops watching c (before it is freed); the thread ends with the last communicator. */
void duet_ft_unwatch(duet_comm_t c);
/* Frees what the detector kept for c (its dead marks: duet_ft_is_dead says 0 from then on);
 * after duet_ft_unwatch and the closing barrier, which still asks who is dead. */
void duet_ft_release(duet_comm_t c);
/* Looks at every member of c now (kill(pid, 0) and /proc, not waiting for the thread), and
 * marks the dead as the thread would. */
void duet_ft_refresh(duet_comm_t c);
/* Only c's members whose net endpoint has failed (cheap: no look at processes). */
void duet_ft_net_refresh(duet_comm_t c);
/* Sets c's device state (duet_device_comm_get) where the thread sees it: from then on the
 * thread carries a peer's revoke over to c's kernels every DUET_FT_PERIOD_MS. */
void duet_ft_attach_device(duet_comm_t c, struct duet_cuda_comm *cc);
/* Wakes the detector's thread (async-signal-safe: one write(2) to an eventfd). */
void duet_ft_wake(void);
/* 1 when rank r of c has been seen dead here. */
int duet_ft_is_dead(duet_comm_t c, int r);
/* The root communicator c was split (or shrunk) from: the heap's owner. */
duet_comm_t duet_ft_root(duet_comm_t c);

#endif
