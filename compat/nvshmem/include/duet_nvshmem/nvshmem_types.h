/*
 * duet_nvshmem/nvshmem_types.h — NVSHMEM's types, constants and status codes, as Duet's
 * NVSHMEM compatibility headers define them (include <nvshmem.h>, not this file).
 *
 * Names and the values a program may store, compare or pass on (comparison and signal
 * operators, init flags, team handles, status codes, the 128-byte unique id) are NVSHMEM 3.x's;
 * the definitions are Duet's own. The init attribute keeps NVSHMEM's field names for what a
 * program touches (mpi_comm, args.uid_args) but not its exact layout: programs are recompiled
 * against these headers, never linked against NVSHMEM's library.
 */
#ifndef DUET_NVSHMEM_TYPES_H
#define DUET_NVSHMEM_TYPES_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

/* The NVSHMEM release whose API this layer follows, and the OpenSHMEM version it builds on. */
#define NVSHMEM_VENDOR_MAJOR_VERSION 3
#define NVSHMEM_VENDOR_MINOR_VERSION 4
#define NVSHMEM_VENDOR_PATCH_VERSION 5
#define NVSHMEM_MAJOR_VERSION 1
#define NVSHMEM_MINOR_VERSION 3
#define NVSHMEM_VENDOR_STRING "NVSHMEM API over Duet"
#define NVSHMEM_MAX_NAME_LEN 256

/* Marks this implementation: `#ifdef NVSHMEM_DUET` selects Duet-specific code. */
#define NVSHMEM_DUET 1

/* Comparison operators of wait_until / signal_wait_until (NVSHMEM's values, not Duet's). */
typedef enum nvshmemx_cmp_type {
    NVSHMEM_CMP_EQ = 0,
    NVSHMEM_CMP_NE = 1,
    NVSHMEM_CMP_GT = 2,
    NVSHMEM_CMP_LE = 3,
    NVSHMEM_CMP_LT = 4,
    NVSHMEM_CMP_GE = 5,
    NVSHMEM_CMP_SENTINEL = INT_MAX
} nvshmemx_cmp_type_t;

/* Signal operators of put_signal / signal_op. */
enum { NVSHMEM_SIGNAL_SET = 9, NVSHMEM_SIGNAL_ADD = 10 };

/* Thread levels (Duet's calls are thread safe: every level is provided). */
enum { NVSHMEM_THREAD_SINGLE = 0, NVSHMEM_THREAD_FUNNELED, NVSHMEM_THREAD_SERIALIZED, NVSHMEM_THREAD_MULTIPLE };

/* nvshmemx_init_status() */
enum {
    NVSHMEM_STATUS_NOT_INITIALIZED = 0,
    NVSHMEM_STATUS_IS_BOOTSTRAPPED,
    NVSHMEM_STATUS_IS_INITIALIZED,
    NVSHMEM_STATUS_LIMITED_MPG,
    NVSHMEM_STATUS_FULL_MPG
};

/* Status codes of the calls that return int. */
typedef enum {
    NVSHMEMX_SUCCESS = 0,
    NVSHMEMX_ERROR_INVALID_VALUE,
    NVSHMEMX_ERROR_OUT_OF_MEMORY,
    NVSHMEMX_ERROR_NOT_SUPPORTED,
    NVSHMEMX_ERROR_SYMMETRY,
    NVSHMEMX_ERROR_GPU_NOT_SELECTED,
    NVSHMEMX_ERROR_COLLECTIVE_LAUNCH_FAILED,
    NVSHMEMX_ERROR_INTERNAL,
    NVSHMEMX_ERROR_SENTINEL = INT_MAX
} nvshmemx_status;

/* nvshmemx_init_attr flags: only NVSHMEMX_INIT_WITH_UNIQUEID (and 0) are supported. */
enum {
    NVSHMEMX_INIT_THREAD_PES = 1,
    NVSHMEMX_INIT_WITH_MPI_COMM = 1 << 1,
    NVSHMEMX_INIT_WITH_SHMEM = 1 << 2,
    NVSHMEMX_INIT_WITH_UNIQUEID = 1 << 3
};

/* Teams. WORLD, SHARED and NODE are predefined (SHARED and NODE: the pes of this host, those
 * whose memory this pe maps; the world on one host); splits get handles from
 * NVSHMEM_DUET_FIRST_TEAM up. */
typedef int32_t nvshmem_team_t;
#define NVSHMEM_TEAM_INVALID (-1)
#define NVSHMEM_TEAM_WORLD 0
#define NVSHMEM_TEAM_WORLD_INDEX 0
#define NVSHMEM_TEAM_SHARED 1
#define NVSHMEM_TEAM_SHARED_INDEX 1
#define NVSHMEMX_TEAM_NODE 2
#define NVSHMEM_TEAM_NODE_INDEX 2
#ifndef NVSHMEM_DUET_MAX_TEAMS
#define NVSHMEM_DUET_MAX_TEAMS 32 /* team handles per process, predefined ones included */
#endif
#define NVSHMEM_DUET_FIRST_TEAM 6 /* NVSHMEM keeps 3..5 for internal teams */

/* Team configuration: accepted and ignored (Duet has no per-team contexts). */
typedef struct {
    int num_contexts;
} nvshmem_team_config_t;
#define NVSHMEM_TEAM_NUM_CONTEXTS (1L << 0)

/* The unique id: 128 bytes, as NVSHMEM's; Duet's rendezvous id lives in `internal`. */
#define NVSHMEM_DUET_UNIQUEID_BYTES 124
typedef struct {
    int version;
    char internal[NVSHMEM_DUET_UNIQUEID_BYTES];
} nvshmemx_uniqueid_v1;
typedef nvshmemx_uniqueid_v1 nvshmemx_uniqueid_t;
#define NVSHMEMX_UNIQUEID_VERSION ((1 << 16) + (int)sizeof(nvshmemx_uniqueid_t))
#define NVSHMEMX_UNIQUEID_INITIALIZER {NVSHMEMX_UNIQUEID_VERSION, {0}}

typedef struct {
    int version;
    nvshmemx_uniqueid_v1 *id;
    int myrank;
    int nranks;
} nvshmemx_uniqueid_args_v1;
typedef nvshmemx_uniqueid_args_v1 nvshmemx_uniqueid_args_t;
#define NVSHMEMX_UNIQUEID_ARGS_INITIALIZER {(1 << 16) + (int)sizeof(nvshmemx_uniqueid_args_t), NULL, -1, -1}

typedef struct {
    int version;
    nvshmemx_uniqueid_args_t uid_args;
    char content[96];
} nvshmemx_init_args_t;

typedef struct {
    int version;
    void *mpi_comm; /* NVSHMEMX_INIT_WITH_MPI_COMM is not supported: see MIGRATING_NVSHMEM.md */
    nvshmemx_init_args_t args;
} nvshmemx_init_attr_t;
#define NVSHMEMX_INIT_ATTR_INITIALIZER                                                          \
    {(1 << 16) + (int)sizeof(nvshmemx_init_attr_t), NULL,                                      \
     {(1 << 16) + (int)sizeof(nvshmemx_init_args_t), NVSHMEMX_UNIQUEID_ARGS_INITIALIZER, {0}}}

#endif /* DUET_NVSHMEM_TYPES_H */
