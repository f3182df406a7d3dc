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
