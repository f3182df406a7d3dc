/*
 * duet_comm_mod.h — the layers above core that keep state per communicator (coll: its
 * channels, tuner and executor memory; a backend: its proxy thread, its device handle) plug
 * into a communicator's life here, each through a table. Core calls the tables and includes
 * none of those layers. Which modules there are, and their order, is fixed at link time:
 * duet_comm_mods (src/duet_backends.c).
 *
 * A communicator's life, as core runs it (duet_comm_init.c):
 *   build:   heap (and its device part: heap/duet_heap_dev.h) -> open, in list order -> the
 *            failure detector watches it -> started, in list order
 *   destroy: closing barrier -> stopping, in list order -> the detector lets go -> close, in
 *            reverse order -> the device part (root) -> the heap
 *   revoke, or a member died: abort (its status is then in the abort word)
 *   duet_quiet, duet_fence and every barrier, on a heap with a device part: quiet, after the
 *            transport endpoints
 * Every slot is set (a module without work there points at a no-op).
 */
#ifndef DUET_COMM_MOD_H
#define DUET_COMM_MOD_H

#include "core/duet_comm.h"

typedef struct duet_comm_mod {
    size_t size; /* sizeof(duet_comm_mod_t) of the table's author */
    const char *name;
    /* Collective over c's bootstrap (every rank opens the same modules in the same order). A
     * failure is returned as the communicator's; the modules opened before it are closed. */
    duet_status_t (*open)(duet_comm_t c);
    /* Once the failure detector watches c; cannot fail (a module that could not start says so
     * in the log and works without it). */
    void (*started)(duet_comm_t c);
    /* After the closing barrier, while the detector still knows who is dead. */
    void (*stopping)(duet_comm_t c);
    /* Frees what open made. */
    void (*close)(duet_comm_t c);
    /* c was revoked or lost a member, with `status` (a store: may run on the detector's
     * thread, with its lock held, again and again). */
    void (*abort)(duet_comm_t c, duet_status_t status);
    /* Completes the one-sided work c owes that no transport endpoint holds (the CUDA
     * backend: the operations its GPU proxy took from kernels); the first error. */
    duet_status_t (*quiet)(duet_comm_t c);
} duet_comm_mod_t;

/* The modules, in order, NULL-terminated (src/duet_backends.c). */
extern const duet_comm_mod_t *const duet_comm_mods[];

/* What core runs (duet_comm_mod.c): each slot of every module, in the order above. */
duet_status_t duet_comm_mods_open(duet_comm_t c);
void duet_comm_mods_started(duet_comm_t c);
void duet_comm_mods_stopping(duet_comm_t c);
void duet_comm_mods_close(duet_comm_t c);
void duet_comm_mods_abort(duet_comm_t c, duet_status_t status);
duet_status_t duet_comm_mods_quiet(duet_comm_t c);

/* For a slot with nothing to do. */
void duet_comm_mod_nothing(duet_comm_t c);
void duet_comm_mod_no_abort(duet_comm_t c, duet_status_t status);
duet_status_t duet_comm_mod_no_quiet(duet_comm_t c);

#endif
