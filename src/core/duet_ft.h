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

#endif
