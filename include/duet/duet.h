/*
 * duet.h — the Duet host API.
 *
 * Duet gives a program two communication models in one runtime:
 *   - collectives (every rank calls the same function; a later part of this header), and
 *   - PGAS one-sided communication over a symmetric heap (this part).
 *
 * Everything acts on a communicator (duet_comm_t). A communicator is at once a group of
 * ranks for collectives and an OpenSHMEM/NVSHMEM "team" for one-sided calls. `duet_init()`
 * builds the default world communicator from the launcher's environment (duetrun, mpirun,
 * srun, torchrun); `duet_get_unique_id()` + `duet_comm_init_rank()` build independent ones
 * the NCCL way. Several communicators may live in one process.
 *
 * Conventions for every call:
 *   - Calls return duet_status_t (DUET_OK == 0, errors < 0) unless stated otherwise; a
 *     call that returns a pointer returns NULL on error. On error, duet_last_error() gives a
 *     one-line message saying what went wrong and where. Nothing aborts the process.
 *   - "pe" arguments are ranks in the communicator passed.
 *   - A "symmetric address" is an address inside the symmetric heap returned by
 *     duet_malloc() and friends; the same address names the same object on every rank.
 *     Remote (target) addresses must be symmetric; local source/destination buffers may be
 *     any memory of the caller.
 *   - Zero-length transfers are no-ops whatever the addresses.
 *   - Every wait is bounded: it returns DUET_ERR_TIMEOUT after DUET_WAIT_TIMEOUT seconds
 *     (0 = wait forever) and names what it was waiting for.
 *
 * Thread safety: a communicator may be used by several threads at once for one-sided
 * calls; creation, destruction, split, malloc and free must not race with other calls on
 * the same communicator.
 */
#ifndef DUET_H
#define DUET_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DUET_VERSION_MAJOR 0
#define DUET_VERSION_MINOR 1
#define DUET_VERSION_PATCH 0

/* ------------------------------------------------------------------------------------
 * Status codes
 * ------------------------------------------------------------------------------------ */
typedef enum {
    DUET_OK              = 0,
    DUET_ERR_INVALID_ARG = -1, /* bad pointer, PE, size, non-symmetric address, ...      */
    DUET_ERR_NO_MEMORY   = -2, /* symmetric heap or host memory exhausted                 */
    DUET_ERR_TIMEOUT     = -3, /* a bounded wait ran out                                  */
    DUET_ERR_PEER_FAILED = -4, /* a peer rank died or became unreachable                  */
    DUET_ERR_REVOKED     = -5, /* the communicator was revoked                            */
    DUET_ERR_UNSUPPORTED = -6, /* not available with this backend / build                 */
    DUET_ERR_SYSTEM      = -7, /* an operating-system call failed (errno in the message)  */
    DUET_ERR_CUDA        = -8, /* a CUDA call failed                                      */
    DUET_ERR_INTERNAL    = -9  /* a bug in Duet: please report the message                */
} duet_status_t;

/* Short name of a status ("DUET_ERR_TIMEOUT: ..."). Never NULL. */
const char *duet_status_str(duet_status_t status);

/* The message of the calling thread's last failed Duet call ("" when none, or when its last
 * call succeeded: a call that returns DUET_OK, or a valid pointer, leaves no error behind). The
 * string stays valid until the thread's next Duet call. */
const char *duet_last_error(void);

/* The status of the calling thread's last failed call (DUET_OK when none, or after a call that
 * succeeded): the code behind a NULL from duet_malloc() and the other calls that return
 * pointers. duet_malloc(comm, 0) returns NULL with DUET_OK. */
duet_status_t duet_last_status(void);

/* The bound, in seconds, on every wait of the library (DUET_WAIT_TIMEOUT; default 300; 0: no
 * bound): layers that wait on memory themselves (compat/shmem) use the same one. */
double duet_wait_timeout(void);

/* "0.1.0" */
const char *duet_version_string(void);

/* ------------------------------------------------------------------------------------
 * Communicators
 * ------------------------------------------------------------------------------------ */
typedef struct duet_comm *duet_comm_t;

/* Opaque identifier made by one rank with duet_get_unique_id() and handed to all others
 * (by any means: MPI_Bcast, a file, ...). It holds the rendezvous address and a random
 * 128-bit job secret that every bootstrap connection must present. */
typedef union {
    char internal[128];
    uint64_t align_; /* 8-byte aligned wherever it is stored */
} duet_unique_id_t;

/* Options for duet_comm_init_rank(). Start from DUET_CONFIG_INIT; a zero field means
 * "take the setting from the environment" (DUET_SYMMETRIC_SIZE, DUET_BOOTSTRAP_TIMEOUT,
 * DUET_CUDA_DEVICE). */
typedef struct {
    size_t struct_size;          /* sizeof(duet_config_t), for forward compatibility */
    size_t symmetric_size;       /* bytes of symmetric heap per rank                  */
    double bootstrap_timeout_s;  /* bound on every bootstrap wait                     */
    int cuda_device_current;     /* 1: this rank's GPU heap lives on the calling thread's
                                  * current CUDA device (cudaSetDevice before the call, as
                                  * with NCCL); 0: DUET_CUDA_DEVICE, else local rank mod GPUs */
} duet_config_t;
#define DUET_CONFIG_INIT { sizeof(duet_config_t), 0, 0.0, 0 }

/* Color for duet_comm_split() meaning "I join no new communicator". */
#define DUET_COLOR_UNDEFINED (-1)

/* Builds the default world communicator from the launcher's environment: duetrun's
 * DUET_* variables, Open MPI's OMPI_COMM_WORLD_*, Slurm's SLURM_*, or torchrun's RANK /
 * WORLD_SIZE / MASTER_ADDR / MASTER_PORT (see docs/LAUNCHING.md). With no launcher at all
 * the program runs as a single rank. Collective over all ranks. Calling it again after
 * success only counts a reference; each call needs a matching duet_finalize(). */
duet_status_t duet_init(void);

/* Drops one reference taken by duet_init(); the last one destroys the world
 * communicator (collective). */
duet_status_t duet_finalize(void);

/* The world communicator, or NULL before duet_init(). */
duet_comm_t duet_comm_world(void);

/* Rank and size in the world communicator (-1 / 0 before duet_init()). */
int duet_my_pe(void);
int duet_n_pes(void);

/* Creates a unique id; the calling process becomes the rendezvous root and must then
 * call duet_comm_init_rank() with rank 0. Binds to DUET_BOOTSTRAP_IFADDR (default: all
 * interfaces, advertising the host name's address; 127.0.0.1 when the host is local). */
duet_status_t duet_get_unique_id(duet_unique_id_t *id);

/* Creates a communicator of nranks ranks; every rank calls it with the same id and its
 * own distinct rank in [0, nranks). config may be NULL. Collective: it returns when all
 * ranks have joined, or an error after the bootstrap timeout (wrong nranks, duplicate
 * rank, unreachable root, wrong secret). The communicator gets its own symmetric heap. */
duet_status_t duet_comm_init_rank(duet_comm_t *comm, int nranks, duet_unique_id_t id, int rank,
                                  const duet_config_t *config);

/* Destroys a communicator (collective over its ranks). A communicator made by
 * duet_init() is destroyed by duet_finalize() instead. A team may be destroyed while teams
 * split from it are alive: they stay usable (as OpenSHMEM's teams do), and what is left of
 * it goes with the last of them. A root communicator (duet_comm_init_rank's), which owns
 * their symmetric heap, is refused (DUET_ERR_INVALID_ARG) until its teams are gone. Safe while other threads of the process are inside calls on
 * comm (a watchdog thread aborting: duet_comm_revoke, then this): those calls return first
 * (revoked, they return at once), calls that begin meanwhile fail with DUET_ERR_REVOKED
 * ("being destroyed"), and comm is freed only when no call is left on it; one that has not
 * returned within DUET_WAIT_TIMEOUT makes this fail with DUET_ERR_TIMEOUT, comm still usable.
 * (Counted: the collectives, send / recv, barrier, sync, the one-sided calls — put, get,
 * their strided, signal and atomic forms, fence, quiet — the heap calls, split, shrink, agree,
 * duet_comm_get_failed, duet_comm_status, duet_comm_revoke, and the work of duet_group_end on
 * each communicator it names (calls queued on one freed meanwhile are dropped, with an error);
 * not yet the stream-ordered *_on_stream forms of duet_cuda.h.) */
duet_status_t duet_comm_destroy(duet_comm_t comm);

/* Splits `parent` (collective over parent): ranks with the same color form one new
 * communicator, ordered by key then by parent rank. DUET_COLOR_UNDEFINED yields
 * *newcomm = NULL. The new communicator shares the parent's symmetric heap (it is a
 * team: the same symmetric address is valid in both). */
duet_status_t duet_comm_split(duet_comm_t parent, int color, int key, duet_comm_t *newcomm);

/* OpenSHMEM-style strided split (collective over parent): the new communicator holds
 * parent ranks start, start+stride, ..., `size` of them, in that order; ranks of the
 * parent outside it get *newcomm = NULL. stride may be negative but not 0 (unless
 * size == 1). */
duet_status_t duet_comm_split_strided(duet_comm_t parent, int start, int stride, int size,
                                      duet_comm_t *newcomm);

/* This rank's index in comm and the number of ranks (-1 for a NULL comm). */
int duet_comm_rank(duet_comm_t comm);
int duet_comm_size(duet_comm_t comm);

/* The rank in `dest` of rank `rank` of `src`, or -1 if it is not a member (or either
 * communicator does not share a heap with the other). */
int duet_comm_translate_rank(duet_comm_t src, int rank, duet_comm_t dest);

/* ------------------------------------------------------------------------------------
 * Failures
 *
 * Every process watches its peers (a thread checks that their processes live, every
 * DUET_FT_PERIOD_MS, 10 ms by default; a stopped or slow process is alive, never declared
 * dead). When a rank dies, every wait on a communicator that has it as a member — in a
 * collective, a barrier, wait_until, a signal wait, a group end, a GPU kernel — returns
 * DUET_ERR_PEER_FAILED at its next turn, with a message naming the dead rank, and so do the
 * later collectives and barriers on that communicator. Communicators without the dead rank
 * go on unaffected. docs/FAULT_TOLERANCE.md is the guide (with a program that survives a
 * kill). Hang diagnosis: on SIGUSR2 (DUET_HANG_SIGNAL), or for waits older than
 * DUET_HANG_REPORT_S, each rank logs what it waits for ("duet_allreduce #1042 (ring), step 5
 * of 12 from rank 3: waiting 12.3 s").
 * ------------------------------------------------------------------------------------ */

/* The failed ranks of comm, ascending (ranks of comm): after a duet_comm_agree on comm, the
 * set it decided (the same on every survivor); before any, those this process has seen die.
 * Up to `max` of them go into `ranks` (may be NULL when max is 0); *nfailed gets how many
 * there are. */
duet_status_t duet_comm_get_failed(duet_comm_t comm, int *ranks, int max, int *nfailed);

/* DUET_OK while comm is sound; once a member died (DUET_ERR_PEER_FAILED) or comm was revoked
 * (DUET_ERR_REVOKED; DUET_ERR_INVALID_ARG when a rank revoked it after mismatched collective
 * calls, see Collectives), that status, sticky, with duet_last_error() saying which rank. The way
 * to learn of a failure met by calls that report nothing themselves (device-side puts of a
 * kernel, say). One-sided calls to a rank seen dead return DUET_ERR_PEER_FAILED; to live
 * ranks they go on working on a communicator that lost another member. */
duet_status_t duet_comm_status(duet_comm_t comm);

/* Revokes comm on every member, not only here: their pending and later waits on it return
 * DUET_ERR_REVOKED, naming the revoking rank. Not collective: any member may call it, as
 * often as it likes. A revoked communicator is good for duet_comm_shrink, duet_comm_agree,
 * duet_comm_get_failed and duet_comm_destroy. GPU kernels of the other members see it
 * within DUET_FT_PERIOD_MS (their process's failure detector carries it over). */
duet_status_t duet_comm_revoke(duet_comm_t comm);

/* Collective over the survivors of comm (the dead take no part; comm may have failed or
 * been revoked): they agree on which ranks failed, and each gets *newcomm holding exactly
 * the others, ranked 0..n-1 in their order in comm. newcomm shares comm's symmetric heap:
 * every allocation made before keeps its address and its contents on every survivor, and
 * one-sided calls and collectives on newcomm reach the same objects (no re-allocation, no
 * copy). What is not carried over: the dead ranks' memory (still mapped but no longer
 * anyone's), GPU collective state (re-made on first use), tuner decisions. Destroy newcomm
 * with duet_comm_destroy before duet_finalize. A rank that dies during the shrink makes it
 * fail on the others (DUET_ERR_PEER_FAILED, at once); shrinking again then works. */
duet_status_t duet_comm_shrink(duet_comm_t comm, duet_comm_t *newcomm);

/* Collective over the survivors of comm, fault tolerant: *flag becomes the bitwise AND of
 * every survivor's *flag (the same value on all), and the survivors agree on the failed set
 * (duet_comm_get_failed gives it afterwards). Works on failed and revoked communicators. */
duet_status_t duet_comm_agree(duet_comm_t comm, int *flag);

/* ------------------------------------------------------------------------------------
 * Symmetric heap
 *
 * Each rank owns DUET_SYMMETRIC_SIZE bytes (default 256 MiB) in host shared memory. The
 * allocation calls are collective over a communicator made by duet_init() or
 * duet_comm_init_rank(), or over a team holding all its live ranks (a shrunk one; not a
 * split that leaves live ranks out), and must be called by every rank in the same
 * order with the same arguments; they end with a barrier, so the memory is usable by
 * peers on return. Mismatched arguments across ranks are detected and refused.
 *
 * Each heap call is a consensus: every live rank returns the same status. If any rank's
 * arguments are bad, its allocation fails, a rank has died, or any rank has seen the
 * communicator revoked (DUET_ERR_REVOKED) when it enters, the call fails on every rank with the
 * first such rank's status (duet_last_error() names it), and no rank allocates or frees.
 *
 * Bounds: one-sided calls check that a symmetric range lies inside the symmetric heap, not
 * inside one allocation: by default a put that runs past the end of its block into the next
 * one is accepted (the fast path compares two addresses). For debugging, DUET_CHECK_BOUNDS=1
 * makes every host one-sided call (put, get, nbi, strided, p / g, atomics, signals, waits) and
 * duet_ptr / duet_addr_accessible check that the range lies inside the bytes of one live
 * allocation, at the cost of a lookup among the heap's blocks per call; a range that overruns
 * its block or lies in a freed one is refused with DUET_ERR_INVALID_ARG, the message giving the
 * address, the length, the block and the overrun. (Ranges in the GPU heap are not looked up.)
 * ------------------------------------------------------------------------------------ */

/* size bytes aligned to 64; NULL with DUET_ERR_NO_MEMORY when the heap is full.
 * duet_malloc(comm, 0) returns NULL without error (OpenSHMEM semantics). */
void *duet_malloc(duet_comm_t comm, size_t size);
/* count * size zeroed bytes (overflow is an error). */
void *duet_calloc(duet_comm_t comm, size_t count, size_t size);
/* size bytes aligned to `alignment` (a power of two). */
void *duet_align(duet_comm_t comm, size_t alignment, size_t size);
/* Frees a block (collective); NULL is a no-op. */
duet_status_t duet_free(duet_comm_t comm, void *ptr);

/* Address at which this process can load/store the object that `addr` names on `pe`,
 * or NULL if that peer's memory cannot be mapped here (a peer on another host, or any other
 * rank under DUET_NET=force: reach it with put / get) or addr is not symmetric. */
void *duet_ptr(duet_comm_t comm, const void *addr, int pe);

/* 1 if `addr` is a symmetric address reachable on `pe`, else 0. */
int duet_addr_accessible(duet_comm_t comm, const void *addr, int pe);

/* ------------------------------------------------------------------------------------
 * One-sided RMA (OpenSHMEM 1.5 semantics)
 *
 * put: copies nbytes from the local `src` to the symmetric `dest` on `pe`. Returns when
 *      `src` may be reused; the data is delivered (visible at pe) after duet_quiet(),
 *      duet_barrier*(), or in order before a later signal/put of the same call sequence
 *      separated by duet_fence().
 * get: copies nbytes from the symmetric `src` on `pe` into the local `dest`; returns when
 *      the data has arrived.
 * _nbi: non-blocking; the buffers must not be touched until duet_quiet().
 * ------------------------------------------------------------------------------------ */
duet_status_t duet_put(duet_comm_t comm, void *dest, const void *src, size_t nbytes, int pe);
duet_status_t duet_get(duet_comm_t comm, void *dest, const void *src, size_t nbytes, int pe);
duet_status_t duet_put_nbi(duet_comm_t comm, void *dest, const void *src, size_t nbytes, int pe);
duet_status_t duet_get_nbi(duet_comm_t comm, void *dest, const void *src, size_t nbytes, int pe);

/* Strided: element i (of elem_size bytes) moves between dest[i*dst_stride] and
 * src[i*src_stride] (strides in elements, non-zero). */
duet_status_t duet_iput(duet_comm_t comm, void *dest, const void *src, ptrdiff_t dst_stride,
                        ptrdiff_t src_stride, size_t nelems, size_t elem_size, int pe);
duet_status_t duet_iget(duet_comm_t comm, void *dest, const void *src, ptrdiff_t dst_stride,
                        ptrdiff_t src_stride, size_t nelems, size_t elem_size, int pe);

/* The standard RMA types of OpenSHMEM 1.5, as X(TYPE, NAME). */
#define DUET_RMA_TYPES(X)                                                                  \
    X(float, float) X(double, double) X(long double, longdouble) X(char, char)               \
    X(signed char, schar) X(short, short) X(int, int) X(long, long) X(long long, longlong)  \
    X(unsigned char, uchar) X(unsigned short, ushort) X(unsigned int, uint)                  \
    X(unsigned long, ulong) X(unsigned long long, ulonglong) X(int8_t, int8)                 \
    X(int16_t, int16) X(int32_t, int32) X(int64_t, int64) X(uint8_t, uint8)                  \
    X(uint16_t, uint16) X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size)              \
    X(ptrdiff_t, ptrdiff)

/* For each RMA type T named NAME (nelems counts elements, strides count elements):
 *   duet_put_NAME(comm, T *dest, const T *src, size_t nelems, int pe)      and _nbi
 *   duet_get_NAME(comm, T *dest, const T *src, size_t nelems, int pe)      and _nbi
 *   duet_iput_NAME(comm, T *dest, const T *src, ptrdiff_t dst_stride, ptrdiff_t src_stride,
 *                  size_t nelems, int pe)                                  and duet_iget_NAME
 *   duet_p_NAME(comm, T *dest, T value, int pe)            one element, put
 *   duet_g_NAME(comm, const T *src, int pe, T *value)      one element, get, into *value */
#define DUET_DECLARE_RMA_(T, N)                                                                   \
    duet_status_t duet_put_##N(duet_comm_t c, T *dest, const T *src, size_t nelems, int pe);      \
    duet_status_t duet_put_##N##_nbi(duet_comm_t c, T *dest, const T *src, size_t nelems, int pe);\
    duet_status_t duet_get_##N(duet_comm_t c, T *dest, const T *src, size_t nelems, int pe);      \
    duet_status_t duet_get_##N##_nbi(duet_comm_t c, T *dest, const T *src, size_t nelems, int pe);\
    duet_status_t duet_iput_##N(duet_comm_t c, T *dest, const T *src, ptrdiff_t dst_stride,       \
                                ptrdiff_t src_stride, size_t nelems, int pe);                     \
    duet_status_t duet_iget_##N(duet_comm_t c, T *dest, const T *src, ptrdiff_t dst_stride,       \
                                ptrdiff_t src_stride, size_t nelems, int pe);                     \
    duet_status_t duet_p_##N(duet_comm_t c, T *dest, T value, int pe);                            \
    duet_status_t duet_g_##N(duet_comm_t c, const T *src, int pe, T *value);
DUET_RMA_TYPES(DUET_DECLARE_RMA_)

/* ------------------------------------------------------------------------------------
 * Signals: a signal is a symmetric uint64_t. put_signal delivers the data and then
 * updates the signal on pe (set or add), so a peer that sees the signal change also
 * sees the data.
 * ------------------------------------------------------------------------------------ */
enum { DUET_SIGNAL_SET = 0, DUET_SIGNAL_ADD = 1 };

duet_status_t duet_put_signal(duet_comm_t comm, void *dest, const void *src, size_t nbytes,
                              uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
duet_status_t duet_put_signal_nbi(duet_comm_t comm, void *dest, const void *src, size_t nbytes,
                                  uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
/* Updates a signal on pe without data (ordered after earlier puts only with a fence). */
duet_status_t duet_signal_op(duet_comm_t comm, uint64_t *sig_addr, uint64_t signal, int sig_op,
                             int pe);
/* Reads the local signal atomically. */
duet_status_t duet_signal_fetch(duet_comm_t comm, const uint64_t *sig_addr, uint64_t *value);
/* Waits until the local signal compares true against value; *value_out (may be NULL)
 * receives the signal's value that satisfied it. */
duet_status_t duet_signal_wait_until(duet_comm_t comm, uint64_t *sig_addr, int cmp, uint64_t value,
                                     uint64_t *value_out);

/* ------------------------------------------------------------------------------------
 * Atomics on symmetric integers (and fetch/set/swap on float/double). Atomic with
 * respect to every other Duet atomic on the same object from any rank.
 * ------------------------------------------------------------------------------------ */
#define DUET_AMO_TYPES(X)                                                                  \
    X(int, int) X(long, long) X(long long, longlong) X(unsigned int, uint)                  \
    X(unsigned long, ulong) X(unsigned long long, ulonglong) X(int32_t, int32)              \
    X(int64_t, int64) X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size)               \
    X(ptrdiff_t, ptrdiff)
#define DUET_AMO_BITWISE_TYPES(X)                                                          \
    X(unsigned int, uint) X(unsigned long, ulong) X(unsigned long long, ulonglong)          \
    X(int32_t, int32) X(int64_t, int64) X(uint32_t, uint32) X(uint64_t, uint64)
#define DUET_AMO_EXTENDED_TYPES(X) X(float, float) X(double, double)

/* Fetching forms return the old value in *fetched (last argument). */
#define DUET_DECLARE_AMO_EXT_(T, N)                                                               \
    duet_status_t duet_atomic_fetch_##N(duet_comm_t c, const T *src, int pe, T *fetched);         \
    duet_status_t duet_atomic_set_##N(duet_comm_t c, T *dest, T value, int pe);                   \
    duet_status_t duet_atomic_swap_##N(duet_comm_t c, T *dest, T value, int pe, T *fetched);
#define DUET_DECLARE_AMO_(T, N)                                                                   \
    DUET_DECLARE_AMO_EXT_(T, N)                                                                   \
    duet_status_t duet_atomic_compare_swap_##N(duet_comm_t c, T *dest, T cond, T value, int pe,   \
                                               T *fetched);                                       \
    duet_status_t duet_atomic_fetch_add_##N(duet_comm_t c, T *dest, T value, int pe, T *fetched); \
    duet_status_t duet_atomic_add_##N(duet_comm_t c, T *dest, T value, int pe);                   \
    duet_status_t duet_atomic_fetch_inc_##N(duet_comm_t c, T *dest, int pe, T *fetched);          \
    duet_status_t duet_atomic_inc_##N(duet_comm_t c, T *dest, int pe);
#define DUET_DECLARE_AMO_BITWISE_(T, N)                                                           \
    duet_status_t duet_atomic_fetch_and_##N(duet_comm_t c, T *dest, T value, int pe, T *fetched); \
    duet_status_t duet_atomic_and_##N(duet_comm_t c, T *dest, T value, int pe);                   \
    duet_status_t duet_atomic_fetch_or_##N(duet_comm_t c, T *dest, T value, int pe, T *fetched);  \
    duet_status_t duet_atomic_or_##N(duet_comm_t c, T *dest, T value, int pe);                    \
    duet_status_t duet_atomic_fetch_xor_##N(duet_comm_t c, T *dest, T value, int pe, T *fetched); \
    duet_status_t duet_atomic_xor_##N(duet_comm_t c, T *dest, T value, int pe);
DUET_AMO_TYPES(DUET_DECLARE_AMO_)
DUET_AMO_BITWISE_TYPES(DUET_DECLARE_AMO_BITWISE_)
DUET_AMO_EXTENDED_TYPES(DUET_DECLARE_AMO_EXT_)

/* ------------------------------------------------------------------------------------
 * Point-to-point synchronization on local symmetric integers
 * ------------------------------------------------------------------------------------ */
enum { DUET_CMP_EQ = 0, DUET_CMP_NE, DUET_CMP_GT, DUET_CMP_GE, DUET_CMP_LT, DUET_CMP_LE };

/* For each AMO type T named NAME (ivars are local symmetric objects updated by peers;
 * `status` may be NULL, else status[i] != 0 excludes ivars[i]):
 *   duet_wait_until_NAME(c, T *ivar, int cmp, T value)
 *   duet_test_NAME(c, T *ivar, int cmp, T value, int *satisfied)
 *   duet_wait_until_all_NAME(c, T *ivars, size_t n, const int *status, int cmp, T value)
 *   duet_wait_until_any_NAME(c, ..., T value, size_t *index)    index of one satisfied
 *        element, or SIZE_MAX when every element is excluded
 *   duet_wait_until_some_NAME(c, ..., T value, size_t *indices, size_t *count)
 *        waits for at least one, reports every satisfied index (count 0 when all excluded)
 *   duet_test_all / _any / _some_NAME: as above without waiting (*satisfied / index =
 *        SIZE_MAX / count = 0 when not satisfied)
 *   ..._vector_NAME forms compare element i against values[i]. */
#define DUET_DECLARE_SYNC_(T, N)                                                                  \
    duet_status_t duet_wait_until_##N(duet_comm_t c, T *ivar, int cmp, T value);                  \
    duet_status_t duet_test_##N(duet_comm_t c, T *ivar, int cmp, T value, int *satisfied);        \
    duet_status_t duet_wait_until_all_##N(duet_comm_t c, T *ivars, size_t n, const int *status,   \
                                          int cmp, T value);                                      \
    duet_status_t duet_wait_until_any_##N(duet_comm_t c, T *ivars, size_t n, const int *status,   \
                                          int cmp, T value, size_t *index);                       \
    duet_status_t duet_wait_until_some_##N(duet_comm_t c, T *ivars, size_t n, const int *status,  \
                                           int cmp, T value, size_t *indices, size_t *count);     \
    duet_status_t duet_wait_until_all_vector_##N(duet_comm_t c, T *ivars, size_t n,               \
                                                 const int *status, int cmp, const T *values);    \
    duet_status_t duet_wait_until_any_vector_##N(duet_comm_t c, T *ivars, size_t n,               \
                                                 const int *status, int cmp, const T *values,     \
                                                 size_t *index);                                  \
    duet_status_t duet_wait_until_some_vector_##N(duet_comm_t c, T *ivars, size_t n,              \
                                                  const int *status, int cmp, const T *values,    \
                                                  size_t *indices, size_t *count);                \
    duet_status_t duet_test_all_##N(duet_comm_t c, T *ivars, size_t n, const int *status,         \
                                    int cmp, T value, int *satisfied);                            \
    duet_status_t duet_test_any_##N(duet_comm_t c, T *ivars, size_t n, const int *status,         \
                                    int cmp, T value, size_t *index);                             \
    duet_status_t duet_test_some_##N(duet_comm_t c, T *ivars, size_t n, const int *status,        \
                                     int cmp, T value, size_t *indices, size_t *count);           \
    duet_status_t duet_test_all_vector_##N(duet_comm_t c, T *ivars, size_t n, const int *status,  \
                                           int cmp, const T *values, int *satisfied);             \
    duet_status_t duet_test_any_vector_##N(duet_comm_t c, T *ivars, size_t n, const int *status,  \
                                           int cmp, const T *values, size_t *index);              \
    duet_status_t duet_test_some_vector_##N(duet_comm_t c, T *ivars, size_t n, const int *status, \
                                            int cmp, const T *values, size_t *indices,            \
                                            size_t *count);
DUET_AMO_TYPES(DUET_DECLARE_SYNC_)

/* ------------------------------------------------------------------------------------
 * Ordering and barriers
 * ------------------------------------------------------------------------------------ */
/* Orders this rank's earlier puts, AMOs and signals to each PE before its later ones. */
duet_status_t duet_fence(duet_comm_t comm);
/* Completes every earlier put, AMO and signal of this rank: they are visible at their
 * targets when it returns. */
duet_status_t duet_quiet(duet_comm_t comm);
/* Collective over comm: returns when every member has entered (no completion implied). */
duet_status_t duet_sync(duet_comm_t comm);
/* Collective over comm: duet_quiet() then duet_sync(). */
duet_status_t duet_barrier(duet_comm_t comm);
/* duet_barrier() on the world communicator. */
duet_status_t duet_barrier_all(void);

/* ------------------------------------------------------------------------------------
 * Collectives (NCCL semantics)
 *
 * Every rank of `comm` calls the same collective, in the same order, with the same count,
 * datatype, op and root. Buffers are ordinary memory of the caller (they need not be
 * symmetric).
 *
 * Mismatched calls (host buffers) are caught: every message carries its call's number on the
 * communicator and a hash of its kind, count, datatype, op and root, and a rank waiting for a
 * peer looks at the call the peer has published. The rank that finds a mismatch revokes the
 * communicator with DUET_ERR_INVALID_ARG: the call fails on every rank whose part of it meets
 * the mismatch, and duet_last_error() names both ranks and the differing field ("rank 0
 * called allreduce with count 1048576, rank 1 with 2097152 (call #7)"). No rank returns
 * DUET_OK with data of a mismatched call: a rank may still return DUET_OK when everything it
 * received came from calls like its own — a rank that only sends by its own arguments (the
 * root of a broadcast, a leaf of a reduce) or one the mismatch does not reach (a broadcast
 * receiver in another subtree) — and then its next call that waits on the communicator fails.
 * Every later call on the revoked communicator fails with DUET_ERR_INVALID_ARG at once;
 * duet_comm_shrink gives a working one (of all ranks). A peer over the net transport is
 * checked by its messages and, in waits of 50 ms or more, by its published call; one that left
 * the call without sending what this rank waits for ends the wait at DUET_WAIT_TIMEOUT.
 * Send and receive must agree on the size in bytes; the n-th send to a peer meets the n-th
 * receive from it, or the same revoke follows. On GPU buffers the same holds, asynchronously:
 * a call is compared when it is queued with what its neighbouring ranks queued under that
 * number (the later of two that differ fails there), its kernels carry the signature too (a
 * message or flag of another call is a mismatch, never data), and what a kernel finds comes
 * back as DUET_ERR_INVALID_ARG with the same message at the next call on the communicator or
 * at duet_comm_status, after cudaStreamSynchronize — on every rank, the finder's revoke
 * reaching the others; the receive buffers of the failed call hold no result. Sends and
 * receives on GPU buffers are told from collectives, but not by size. In place: pass sendbuf == recvbuf (for allgather, sendbuf at
 * recvbuf + rank * count elements; for reduce-scatter, recvbuf at sendbuf + rank * count).
 *
 * `stream`: NULL for host buffers — the call returns when this rank's part is complete (its
 * recvbuf holds the result; its sendbuf may be reused). GPU buffers take a cudaStream_t and
 * are ordered on it. Such calls may be captured into a CUDA graph (cudaStreamBeginCapture)
 * once the communicator has made one GPU collective outside a capture; the first one, which
 * sets up the communicator's GPU state with every rank, is refused with DUET_ERR_UNSUPPORTED
 * while captured. Every rank must then launch the same graphs in the same order, as it would
 * make the same calls; ordering a graph's launch against the communicator's calls on other
 * streams is the caller's.
 *
 * Reductions: fp16 and bf16 inputs are converted to fp32, reduced in fp32, and rounded to
 * the output type once, at the end (round to nearest even). Integer sums wrap modulo 2^n.
 * DUET_AVG is the sum divided by the number of ranks (integer types: truncated toward 0).
 * Floating-point results may differ from a sequential sum by reassociation: each algorithm
 * documents its order; all ranks receive bit-identical results.
 *
 * The algorithm is chosen by the tuner from an alpha-beta model (see docs) unless forced
 * with DUET_ALGO; DUET_DEBUG=INFO DUET_DEBUG_SUBSYS=TUNE logs each choice.
 *
 * Sizes: a count whose send or receive buffer would exceed DUET_MAX_BUFFER_BYTES (or whose
 * byte size overflows) is refused at once with DUET_ERR_INVALID_ARG, on every rank alike.
 * ------------------------------------------------------------------------------------ */
/* The largest buffer of a collective, in bytes: 128 TiB, the user address space of a process
 * on x86-64 with 4-level page tables (and half that of aarch64 with 48-bit addresses). */
#define DUET_MAX_BUFFER_BYTES ((size_t)1 << 47)
typedef enum {
    DUET_INT8 = 0, DUET_UINT8, DUET_INT32, DUET_UINT32, DUET_INT64, DUET_UINT64,
    DUET_FLOAT16, DUET_BFLOAT16, DUET_FLOAT32, DUET_FLOAT64,
    DUET_DATATYPE_COUNT
} duet_datatype_t;

typedef enum { DUET_SUM = 0, DUET_PROD, DUET_MIN, DUET_MAX, DUET_AVG, DUET_OP_COUNT } duet_op_t;

/* A cudaStream_t for GPU buffers; NULL for host buffers. */
typedef void *duet_stream_t;

/* Bytes of one element of `datatype` (0 for an invalid one). */
size_t duet_datatype_size(duet_datatype_t datatype);

/* recvbuf[i] = op over ranks of sendbuf[i], on every rank. */
duet_status_t duet_allreduce(const void *sendbuf, void *recvbuf, size_t count, duet_datatype_t datatype,
                             duet_op_t op, duet_comm_t comm, duet_stream_t stream);
/* recvbuf = root's sendbuf, on every rank (sendbuf is read on the root only). */
duet_status_t duet_broadcast(const void *sendbuf, void *recvbuf, size_t count, duet_datatype_t datatype,
                             int root, duet_comm_t comm, duet_stream_t stream);
/* recvbuf on the root = op over ranks of sendbuf (recvbuf is written on the root only). */
duet_status_t duet_reduce(const void *sendbuf, void *recvbuf, size_t count, duet_datatype_t datatype,
                          duet_op_t op, int root, duet_comm_t comm, duet_stream_t stream);
/* recvbuf[r * sendcount ...] = rank r's sendbuf, on every rank. */
duet_status_t duet_allgather(const void *sendbuf, void *recvbuf, size_t sendcount,
                             duet_datatype_t datatype, duet_comm_t comm, duet_stream_t stream);
/* recvbuf (recvcount elements) on rank r = op over ranks of sendbuf[r * recvcount ...]. */
duet_status_t duet_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                                  duet_datatype_t datatype, duet_op_t op, duet_comm_t comm,
                                  duet_stream_t stream);
/* recvbuf[r * count ...] on rank q = sendbuf[q * count ...] of rank r. Not in place: an
 * in-place call fails with DUET_ERR_UNSUPPORTED (on every rank). */
duet_status_t duet_alltoall(const void *sendbuf, void *recvbuf, size_t count, duet_datatype_t datatype,
                            duet_comm_t comm, duet_stream_t stream);
/* Point to point: a send to `peer` matches that peer's recv from this rank; messages
 * between two ranks arrive in order. Outside a group a send may wait for its receiver. */
duet_status_t duet_send(const void *sendbuf, size_t count, duet_datatype_t datatype, int peer,
                        duet_comm_t comm, duet_stream_t stream);
duet_status_t duet_recv(void *recvbuf, size_t count, duet_datatype_t datatype, int peer,
                        duet_comm_t comm, duet_stream_t stream);

/* Groups: calls between duet_group_start() and duet_group_end() (per thread, nestable) are
 * queued and run together at the outermost duet_group_end(), so send/recv pairs that would
 * deadlock one by one (a ring exchange) complete, wherever they sit among the group's
 * collectives; collectives run in the order they were called. Sends and receives match
 * among themselves (by peer and order), apart from collectives. Bad arguments fail at the
 * call; other errors of queued calls are reported by duet_group_end(). At most 256 sends
 * and receives per communicator in one group (host buffers).
 * GPU buffers (or a stream) work the same way: at the outermost end, per communicator, all
 * GPU sends and receives of the group run as one schedule (one kernel), then the group's GPU
 * collectives one after another in call order; duet_group_end() returns once they are
 * queued. They all run on the stream of the group's first GPU call; that stream first waits
 * for every other stream the group's calls name, and those streams then wait for the group:
 * all streams of a group are ordered together, as in NCCL. A send to this rank itself pairs
 * with its receive from itself (k-th with k-th, the same size) and is a device copy. On one
 * communicator a group's calls are all host or all GPU: the call that would mix them fails
 * with DUET_ERR_UNSUPPORTED (the group's other calls still run). Sends and receives of no
 * elements are no-ops. Duet's libnccl.so.2 builds its groups on these: ncclGroupStart /
 * ncclGroupEnd are duet_group_start / duet_group_end, so NCCL calls and Duet calls of one
 * thread share its groups (the NCCL calls run first at the outermost end). The first failure
 * of the group is duet_group_end()'s status and message. */
duet_status_t duet_group_start(void);
duet_status_t duet_group_end(void);

#ifdef __cplusplus
}
#endif
#endif /* DUET_H */
