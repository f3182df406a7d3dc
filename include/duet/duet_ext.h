/*
 * duet_ext.h — what a layer built on Duet may use beyond duet.h: the calling thread's last
 * error, Duet's log, the other software's variables Duet read at start, group unique ids,
 * the one wait loop, and a place for a layer's own calls in Duet's group queue (the 16-bit
 * floating-point formats are duet_reduce_ops.h's). Duet's own API layers (its NCCL API, its
 * OpenSHMEM and NVSHMEM names, compat/) use this and the public headers, nothing else; a
 * program may use it too. C, any thread.
 */
#ifndef DUET_EXT_H
#define DUET_EXT_H

#include <stdint.h>
#include "duet/duet.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define DUET_EXT_PRINTF_(f, a) __attribute__((format(printf, f, a)))
#else
#define DUET_EXT_PRINTF_(f, a)
#endif

/* Records `status` and the formatted message as the calling thread's last error (what
 * duet_last_status / duet_last_error then return) and returns `status`. DUET_OK clears it. */
duet_status_t duet_ext_error_set(duet_status_t status, const char *fmt, ...) DUET_EXT_PRINTF_(2, 3);

/* Log levels, as DUET_DEBUG names them; ALWAYS: written whatever DUET_DEBUG and
 * DUET_DEBUG_SUBSYS say (a line the user asked for another way, e.g. NCCL_DEBUG=VERSION). */
typedef enum {
    DUET_EXT_LOG_ALWAYS = 0, DUET_EXT_LOG_WARN = 1, DUET_EXT_LOG_INFO = 2, DUET_EXT_LOG_TRACE = 3
} duet_ext_log_level_t;

/* 1 when a message of `level` for subsystem `subsys` (a DUET_DEBUG_SUBSYS name: "INIT",
 * "BOOT", "HEAP", "RMA", "COLL", "TUNE", "FT", "CUDA"; another name counts as INIT) would be
 * written (DUET_DEBUG, DUET_DEBUG_SUBSYS). */
int duet_ext_log_enabled(duet_ext_log_level_t level, const char *subsys);
/* Writes one line to Duet's log (stderr or DUET_DEBUG_FILE, with its rank and subsystem
 * prefix) when duet_ext_log_enabled says so. */
void duet_ext_log(duet_ext_log_level_t level, const char *subsys, const char *fmt, ...) DUET_EXT_PRINTF_(3, 4);

/* Another software's variable among those Duet reads (duet-info lists them: launchers',
 * UCX_TLS, NCCL_DEBUG, NCCL_ALGO, ...), as the process started with it; NULL when unset or
 * not one Duet reads. */
const char *duet_ext_env(const char *name);
/* What Duet could not carry over from those variables into its settings (e.g. "NCCL_ALGO:
 * \"NVLS\" has no Duet counterpart here; ignored"), one per line; "" when nothing. */
const char *duet_ext_settings_notes(void);

/* A unique id for a new communicator of some of parent's ranks (duet_comm_init_rank), made so
 * that no secret travels: collective over parent (every rank calls it once per use, those in
 * no group with members == NULL, nmembers 0); members: the group's parent ranks, in the new
 * communicator's rank order (members[0] opens the listener), the same list on each of them.
 * Every member derives the group's secret from parent's (a keyed hash over the parent's
 * bootstrap exchange count and `color`, which must differ between groups made by one call);
 * only the first member's address is exchanged, over parent's bootstrap. On return a member
 * has in *id what duet_get_unique_id would have given it from the first member (the first
 * member itself, its listener). DUET_ERR_INVALID_ARG for a bad list, on the ranks it names. */
duet_status_t duet_ext_group_unique_id(duet_comm_t parent, int color, const int *members, int nmembers,
                                       duet_unique_id_t *id);

/* Duet's wait loop, for a wait Duet cannot make itself (a layer polling memory of its own,
 * e.g. OpenSHMEM ivars in static data, or a value it fetches from a peer):
 *
 *     duet_ext_waiter_t w;
 *     duet_ext_waiter_init(&w, comm, describe, arg);
 *     while (!condition) if ((st = duet_ext_waiter_turn(&w)) != DUET_OK) ... fail with st ...
 *
 * Each turn spins, then yields the core, then sleeps on this rank's doorbell (a put into its
 * memory rings it; else at most 200 us) — the ladder of every Duet wait. A turn returns
 * DUET_ERR_TIMEOUT past DUET_WAIT_TIMEOUT, comm's revoke or a member's death as Duet's waits
 * do (the message set, naming what was awaited), else DUET_OK. A wait past its first spins
 * shows in the hang report (DUET_HANG_REPORT) as the text describe(arg, buf, len) writes,
 * asked only then or on failure. The waiter points into itself: do not copy it. */
typedef struct {
    uint64_t opaque_[40];
} duet_ext_waiter_t;
void duet_ext_waiter_init(duet_ext_waiter_t *w, duet_comm_t comm, void (*describe)(void *arg, char *buf, size_t len),
                          void *arg);
duet_status_t duet_ext_waiter_turn(duet_ext_waiter_t *w);

/* Calls in flight on a layer's own handle (its NCCL communicator), so that one thread may
 * take the handle down while another is inside a call on it — what Duet does for its own
 * communicators. A call enters the handle first thing, before it reads the handle, then
 * checks the handle's closing word of its own and leaves at once when it is set; it leaves
 * when it returns. The thread taking the handle down stores the closing word, then drains
 * (waits until no other thread is inside a call on it), tears down, drains again (a call that
 * entered meanwhile is still reading the closing word), then frees. Entering costs two stores
 * to the calling thread's own record; enter and leave pair, last in first out, on one thread.
 * duet_ext_inflight_drain waits at most timeout_s seconds (0: one look): DUET_OK, or
 * DUET_ERR_TIMEOUT with the calls still inside in *left (NULL: not wanted); no message set. */
void duet_ext_inflight_enter(const void *handle);
void duet_ext_inflight_leave(void);
duet_status_t duet_ext_inflight_drain(const void *handle, double timeout_s, int *left);

/* A layer's calls in Duet's one group queue (src/coll/duet_coll_group.c). A layer with group
 * semantics of its own (its NCCL API) opens and closes Duet's groups (duet_group_start /
 * duet_group_end) and queues its calls there with duet_ext_group_add; the outermost
 * duet_group_end hands each layer its entries, in call order, and then runs Duet's own calls
 * of the group (device, then host). The queue is taken off the thread before anything runs,
 * so a layer's run may open groups of its own. */
typedef struct duet_ext_group_layer {
    size_t size;      /* sizeof(duet_ext_group_layer_t), first */
    const char *name;
    /* Runs the layer's entries of the group: the payloads as queued, in call order (n > 0);
     * returns the first error (its message the thread's last error). The payloads are freed
     * when it returns. */
    duet_status_t (*run)(void *const *payloads, int n);
} duet_ext_group_layer_t;

/* The calling thread's group nesting depth (0: no group is open). */
int duet_ext_group_depth(void);
/* Queues a copy of `bytes` of payload for `layer` in the calling thread's open group:
 * DUET_ERR_INVALID_ARG when none is open (or bad arguments), DUET_ERR_NO_MEMORY. */
duet_status_t duet_ext_group_add(const duet_ext_group_layer_t *layer, const void *payload, size_t bytes);
/* A layer's own collective in the middle of a user's open group (the exchange of its
 * ncclCommSplit): duet_ext_group_suspend sets the thread's groups aside — calls run at once,
 * and a group opened meanwhile is a new one — until duet_ext_group_resume(saved) puts them
 * back as they were. Pairs nest; resume with what the matching suspend gave. */
typedef struct {
    void *opaque[2];
    int64_t opaque_n[4];
} duet_ext_group_saved_t;
void duet_ext_group_suspend(duet_ext_group_saved_t *saved);
void duet_ext_group_resume(const duet_ext_group_saved_t *saved);
/* Closes a group as duet_group_end does, but the outermost one drops every queued call (its
 * layer's and Duet's own) instead of running it; every rank must drop alike (a collective on
 * GPU buffers was numbered when queued). DUET_ERR_INVALID_ARG when none is open. */
duet_status_t duet_ext_group_drop(void);

#ifdef __cplusplus
}
#endif

#endif
