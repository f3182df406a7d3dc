/*
 * duet_ext.h — what a layer built on Duet may use beyond duet.h: the calling thread's last
 * error, Duet's log, the other software's variables Duet read at start, and the 16-bit
 * floating-point formats of duet_datatype_t. Duet's own API layers (its NCCL API, its
 * OpenSHMEM and NVSHMEM names, compat/) use this and the public headers, nothing else;
 * a program may use it too. C, any thread.
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

/* IEEE binary16 (DUET_FLOAT16) and bfloat16 (DUET_BFLOAT16) to and from float, rounding to
 * nearest even, as Duet's reductions do. */
float duet_ext_f16_to_f32(uint16_t h);
uint16_t duet_ext_f32_to_f16(float f);
float duet_ext_bf16_to_f32(uint16_t h);
uint16_t duet_ext_f32_to_bf16(float f);

#ifdef __cplusplus
}
#endif

#endif
