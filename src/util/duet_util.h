/*
 * duet_util.h — services every layer uses: errors, logging, settings, clocks, waiting.
 */
#ifndef DUET_UTIL_H
#define DUET_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdatomic.h>
#include <string.h>
#include "duet/duet.h"

#define DUET_LIKELY(x)   __builtin_expect(!!(x), 1)
#define DUET_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define DUET_INLINE static inline __attribute__((always_inline)) /* a hot path's helper */
#define DUET_HIDDEN __attribute__((visibility("hidden"))) /* internal: not exported, reached directly */
#define DUET_CACHELINE   64
#define DUET_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ---------------------------------------------------------------- errors (duet_util_status.c) */
/* Records `fmt` as the calling thread's last error and returns `status`. */
duet_status_t duet_error_set(duet_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
duet_status_t duet_error_vset(duet_status_t status, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* Prepends a breadcrumb ("duet_malloc: ") to the last error and returns `status`; a message
 * that already begins with that breadcrumb is left as it is (no "fn: fn: ..."). */
duet_status_t duet_error_wrap(duet_status_t status, const char *where);
/* A call that succeeds leaves no error behind (duet.h, duet_last_status): the public entry
 * points call this when they succeed, or when their first check (duet_comm_check) passes, so
 * neither an earlier call's error nor one an internal probe raised and recovered from stays
 * visible. Costs one load of a process-wide count when no thread has an error to clear (a
 * thread-local read only when one has: a thread's own increments are seen by itself). */
extern _Thread_local duet_status_t duet_error_status_;
extern DUET_HIDDEN _Atomic int duet_error_pending_; /* threads whose last status is an error */
void duet_error_clear_(void);
static inline void duet_error_clear(void)
{
    if (DUET_UNLIKELY(atomic_load_explicit(&duet_error_pending_, memory_order_relaxed) != 0) &&
        duet_error_status_ != DUET_OK)
        duet_error_clear_();
}
/* duet_error_clear() when st is DUET_OK; returns st (for `return duet_error_ok(st);`). */
static inline duet_status_t duet_error_ok(duet_status_t st)
{
    if (st == DUET_OK) duet_error_clear();
    return st;
}

/* ---------------------------------------------------------------- logging (duet_util_log.c) */
typedef enum { DUET_LOG_NONE = 0, DUET_LOG_WARN, DUET_LOG_INFO, DUET_LOG_TRACE } duet_log_level_t;

#define DUET_SUBSYS_TABLE(X) \
    X(INIT) X(BOOT) X(HEAP) X(RMA) X(COLL) X(TUNE) X(FT) X(CUDA)
typedef enum {
#define DUET_SUBSYS_ENUM_(s) DUET_SUBSYS_##s,
    DUET_SUBSYS_TABLE(DUET_SUBSYS_ENUM_)
#undef DUET_SUBSYS_ENUM_
    DUET_SUBSYS_COUNT
} duet_subsys_t;

extern int duet_log_level_;     /* current level, -1 until read from the settings */
extern unsigned duet_log_mask_; /* bit per subsystem */
void duet_log_init_(void);

static inline int duet_log_enabled(duet_log_level_t level, duet_subsys_t subsys)
{
    if (DUET_UNLIKELY(duet_log_level_ < 0)) duet_log_init_(); /* a log before any setting was read */
    return (int)level <= duet_log_level_ && (duet_log_mask_ & (1u << subsys));
}
void duet_log_write(duet_log_level_t level, duet_subsys_t subsys, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void duet_log_vwrite(duet_log_level_t level, duet_subsys_t subsys, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
/* The subsystem of a DUET_DEBUG_SUBSYS name ("COLL", any case), or -1. */
int duet_log_subsys_of(const char *name);
/* The rank printed in each log line's prefix (-1 until a communicator exists). */
void duet_log_set_rank(int rank);

#define DUET_LOG(level, subsys, ...)                                        \
    do {                                                                    \
        if (duet_log_enabled(DUET_LOG_##level, DUET_SUBSYS_##subsys))       \
            duet_log_write(DUET_LOG_##level, DUET_SUBSYS_##subsys, __VA_ARGS__); \
    } while (0)

/* Raise an error where it is first detected: log it once at WARN and record it. */
#define DUET_FAIL(status, subsys, ...)                                                  \
    ((duet_log_enabled(DUET_LOG_WARN, DUET_SUBSYS_##subsys)                             \
          ? duet_log_write(DUET_LOG_WARN, DUET_SUBSYS_##subsys, __VA_ARGS__)            \
          : (void)0),                                                                   \
     duet_error_set((status), __VA_ARGS__))

/* ---------------------------------------------------------------- settings (duet_util_config.c)
 * Every environment variable Duet reads is one row here:
 *   X(NAME, field, type, default, help)   -> variable DUET_NAME, duet_cfg()->field
 * Types: STR (const char *), INT (long), SIZE (size_t, K/M/G suffixes), SECS and NUM (double). */
#define DUET_CONFIG_TABLE(X)                                                                     \
    X(DEBUG, debug, STR, "WARN", "Log level: NONE, WARN, INFO or TRACE")                        \
    X(DEBUG_SUBSYS, debug_subsys, STR, "ALL",                                                    \
      "Subsystems to log, comma separated: INIT,BOOT,HEAP,RMA,COLL,TUNE,FT,CUDA or ALL; "        \
      "a leading ^ excludes the listed ones")                                                    \
    X(DEBUG_FILE, debug_file, STR, "", "Log to this file instead of stderr; %h = host, %p = pid")\
    X(SYMMETRIC_SIZE, symmetric_size, SIZE, "256M", "Symmetric heap bytes per rank")            \
    X(CHECK_BOUNDS, check_bounds, INT, "0",                                                      \
      "1: every host one-sided call checks that its symmetric range lies inside one live "       \
      "allocation (a lookup among the heap's blocks per call: for debugging); 0: only that it "  \
      "lies inside the symmetric heap")                                                         \
    X(COLL_ZONE_SIZE, coll_zone_size, SIZE, "4G",                                              \
      "Address space per rank for collective channels, apart from the symmetric heap (memory "  \
      "is used only as channels touch it)")                                                     \
    X(COLL_CHUNK, coll_chunk, SIZE, "128K",                                                      \
      "Largest message of a collective channel: the pipelining unit")                           \
    X(COLL_SLOTS, coll_slots, INT, "8", "Messages in flight per channel (each of COLL_CHUNK)")   \
    X(COLL_BYREF, coll_byref, INT, "1",                                                          \
      "1: a collective whose buffers lie in the symmetric heap moves data with one copy (the "  \
      "receiver reads the sender's heap); 0: always through the channels (two copies)")         \
    X(TUNE_FILE, tune_file, STR, "",                                                             \
      "Where the measured alpha and beta of this host are kept, one line per CPU model, cores, "\
      "Duet version and rank layout (default: $XDG_CACHE_HOME/duet/tune-<host>.txt, else "      \
      "~/.cache/duet/..., else /tmp/duet-tune-<uid>-<host>.txt)")                               \
    X(TUNE_LEARN, tune_learn, INT, "1",                                                          \
      "1: the tuner times its best predicted candidates (up to 3, within 2x of the best) for "  \
      "a few calls each of a call shape and keeps the fastest measured (every rank alike); "    \
      "0: predictions only")                                                                    \
    X(TUNE_ALPHA_US, tune_alpha_us, NUM, "0", "Force the model's alpha (us per message); 0: measured")         \
    X(TUNE_BETA_GBPS, tune_beta_gbps, NUM, "0", "Force the model's bandwidth (GB/s); 0: measured")            \
    X(TUNE_NET_ALPHA_US, tune_net_alpha_us, NUM, "0",                                            \
      "Force the model's alpha between hosts (us per message, the net transport); 0: measured "  \
      "where the communicator spans hosts, else the tune file's or 20")                          \
    X(TUNE_NET_BETA_GBPS, tune_net_beta_gbps, NUM, "0",                                          \
      "Force the model's bandwidth between hosts (GB/s); 0: measured, the tune file's or 0.5")   \
    X(COLL_RANKS_PER_HOST, coll_ranks_per_host, INT, "0",                                        \
      "For tests: the collectives take ranks r*N .. r*N+N-1 as one host (their host map and "    \
      "cost model only; the transports are unchanged); 0: the real hosts")                      \
    X(ALGO, algo, STR, "",                                                                       \
      "Force collective algorithms: one name for all (ring), or per collective "                \
      "(allreduce:tree,broadcast:ring); names: ring tree dbtree rd rhd oneshot twoshot ... and " \
      "the hierarchical hring hdbtree (allreduce) htree (broadcast, reduce) over hosts")        \
    X(BOOTSTRAP_TIMEOUT, bootstrap_timeout, SECS, "30",                                          \
      "Bound in seconds on every bootstrap wait (connect, rendezvous, out-of-band exchange)")   \
    X(BOOTSTRAP_IFADDR, bootstrap_ifaddr, STR, "",                                               \
      "IPv4 address every bootstrap listener binds and advertises (default: as DUET_SOCKET_IFNAME)") \
    X(SOCKET_IFNAME, socket_ifname, STR, "",                                                     \
      "Interface bootstrap listeners bind (like NCCL_SOCKET_IFNAME): name prefixes, comma "      \
      "separated; =eth0 exact names; ^docker excludes; default: loopback when the job is on one " \
      "host, else the first up non-loopback IPv4 interface; never all interfaces")              \
    X(BOOTSTRAP_HANDSHAKE_TIMEOUT, bootstrap_handshake_timeout, SECS, "5",                       \
      "Seconds a connection to a bootstrap root has to prove the job secret before it is dropped" \
      " (others are served meanwhile; a real rank descheduled on a loaded host must not be)")   \
    X(BOOT_LISTENING, boot_listening, INT, "0",                                                  \
      "1: the root listened at DUET_BOOT_ADDR before any rank started, so a refused connection " \
      "means it is gone (set by duetrun)")                                                      \
    X(TEST_BOOT_ROOT_DIE, test_boot_root_die, INT, "0",                                          \
      "For tests: 1 makes a bootstrap root SIGKILL itself once it listens, before any rank joins") \
    X(TEST_SPLIT_FAIL, test_split_fail, INT, "0",                                                \
      "For tests: 1 makes duet_comm_split and duet_ext_group_unique_id fail on every rank right " \
      "after their exchange of the first members' addresses, as if a rank had died there")       \
    X(TEST_SHM_NAMED, test_shm_named, INT, "0",                                                  \
      "For tests: 1 makes every heap segment by shm_open, named from the start, as where "     \
      "/dev/shm has no O_TMPFILE (an old kernel, not tmpfs)")                                   \
    X(TEST_SIG_POST, test_sig_post, INT, "1",                                                    \
      "For tests: 0 skips comparing the neighbours' published GPU calls when a GPU collective " \
      "is queued, so that only its kernels can find a mismatch")                                \
    X(NET, net, STR, "auto",                                                                     \
      "Transport between ranks on different hosts (docs/NETWORK.md): auto: net (UCX) to other "  \
      "hosts, shared memory inside one (a build without UCX refuses jobs on several hosts); "    \
      "off: refuse jobs on several hosts; force: for tests, treat local peers as remote too")    \
    X(WAIT_TIMEOUT, wait_timeout, SECS, "300",                                                   \
      "Bound in seconds on every wait of a one-sided or collective call; 0 waits forever")      \
    X(FT_PERIOD_MS, ft_period_ms, NUM, "10",                                                     \
      "Milliseconds between two checks of the peers' liveness where a peer has no pidfd (the "  \
      "failure detector); 0: no failure detector")                                              \
    X(FT_HEARTBEAT_MS, ft_heartbeat_ms, NUM, "100",                                              \
      "Milliseconds between two reads of the heartbeat of each peer on another host (the failure "\
      "detector over the net transport)")                                                       \
    X(FT_NET_TIMEOUT, ft_net_timeout, SECS, "10",                                                \
      "A peer on another host whose heartbeat has not moved for this long is declared dead "    \
      "(its host or link down, or its process stopped); an endpoint error declares it at once") \
    X(FT_PIDFD, ft_pidfd, INT, "1",                                                              \
      "1: the failure detector sleeps on the peers' pidfds (instant, no polling); 0: it polls " \
      "kill(pid, 0) and /proc every DUET_FT_PERIOD_MS")                                         \
    X(HANG_SIGNAL, hang_signal, STR, "USR2",                                                     \
      "Signal that makes every rank report what it waits for (USR1, USR2, a number; none: no "  \
      "handler); installed only where the program left the signal at its default")             \
    X(HANG_REPORT_S, hang_report_s, SECS, "0",                                                   \
      "Report (once) every wait that has lasted this many seconds; 0: only on the signal")      \
    X(WAIT_SPIN_US, wait_spin_us, NUM, "20",                                                    \
      "Microseconds a wait spins before it starts yielding the core")                           \
    X(CUDA, cuda, STR, "auto",                                                                   \
      "auto: a communicator gets a GPU heap when every rank has a GPU; off: never (CPU only); "  \
      "ipc: as auto, with cudaMalloc + cudaIpc handles instead of VMM (the fallback, for tests)") \
    X(CUDA_DEVICE, cuda_device, INT, "-1",                                                       \
      "CUDA device of this rank; -1: (rank among the ranks of this host) mod (devices visible)") \
    X(CUDA_HEAP_SIZE, cuda_heap_size, SIZE, "1G", "GPU symmetric heap bytes per rank")           \
    X(CUDA_PEERS, cuda_peers, STR, "auto",                                                       \
      "How kernels reach other pes' GPU memory: auto: load/store where it is mapped (this host), " \
      "the host proxy thread for the others (other hosts, docs/NETWORK.md 2.9); proxy: for tests, "\
      "every other pe through the proxy, so the whole proxy path runs on one host")             \
    X(RANK, rank, INT, "-1", "This process's rank (set by duetrun)")                            \
    X(NRANKS, nranks, INT, "0", "Number of ranks in the job (set by duetrun)")                  \
    X(LOCAL_RANK, local_rank, INT, "-1", "Rank among the ranks of this host (set by duetrun)")  \
    X(LOCAL_SIZE, local_size, INT, "0", "Ranks on this host (set by duetrun)")                  \
    X(BOOT_ADDR, boot_addr, STR, "", "host:port of the rendezvous root (set by duetrun)")       \
    X(BOOT_LISTEN_FD, boot_listen_fd, INT, "-1",                                                 \
      "Listening socket rank 0 inherits from duetrun (set by duetrun)")                         \
    X(JOB_SECRET, job_secret, STR, "",                                                           \
      "32 hex digits every bootstrap connection must present (set by duetrun; set it yourself " \
      "under other launchers)")

#define DUET_CFG_CTYPE_STR  const char *
#define DUET_CFG_CTYPE_INT  long
#define DUET_CFG_CTYPE_SIZE size_t
#define DUET_CFG_CTYPE_SECS double
#define DUET_CFG_CTYPE_NUM  double

typedef struct {
#define DUET_CFG_FIELD_(name, field, type, def, help) DUET_CFG_CTYPE_##type field;
    DUET_CONFIG_TABLE(DUET_CFG_FIELD_)
#undef DUET_CFG_FIELD_
} duet_cfg_t;

/* The settings, read once from the environment on first use (thread-safe). Invalid
 * values are reported at WARN and replaced by the default. */
const duet_cfg_t *duet_cfg(void);

/* Row-wise access for duet-info: name, current value as text, default, help. */
typedef struct {
    const char *name, *type, *defval, *help;
    char value[256];
    int is_set; /* 1 if the environment sets it */
} duet_cfg_row_t;
size_t duet_cfg_rows(void);
/* 1 if the environment sets the variable `name` (a row of the table), else 0. */
int duet_cfg_is_set(const char *name);
void duet_cfg_row(size_t i, duet_cfg_row_t *row);

/* Parsers shared with the tools (return 0 on success). */
int duet_parse_size(const char *text, size_t *out);
int duet_parse_secs(const char *text, double *out);

/* Other software's variables that Duet reads (launchers, UCX, NCCL, the XDG directories):
 * every one is a row here, read once with the settings table (duet-info lists them):
 *   F(NAME, help)   -> duet_foreign(NAME): its value, or NULL when unset */
#define DUET_FOREIGN_TABLE(F)                                                                    \
    F(OMPI_COMM_WORLD_RANK, "Open MPI's launcher: this process's rank")                         \
    F(OMPI_COMM_WORLD_SIZE, "Open MPI's launcher: the job's ranks")                             \
    F(OMPI_COMM_WORLD_LOCAL_RANK, "Open MPI's launcher: the rank on this host")                 \
    F(OMPI_COMM_WORLD_LOCAL_SIZE, "Open MPI's launcher: the ranks on this host")                \
    F(OMPI_MCA_ess_base_jobid, "Open MPI's launcher: the job id (the fallback job secret)")     \
    F(PMIX_NAMESPACE, "PMIx: the job's namespace (the fallback job secret)")                    \
    F(SLURM_PROCID, "Slurm: this task's rank")                                                   \
    F(SLURM_NTASKS, "Slurm: the job step's tasks")                                               \
    F(SLURM_LOCALID, "Slurm: the task's rank on this node")                                      \
    F(SLURM_NNODES, "Slurm: the step's nodes")                                                   \
    F(SLURM_JOB_NUM_NODES, "Slurm: the job's nodes")                                             \
    F(SLURM_JOB_ID, "Slurm: the job id (the fallback job secret)")                               \
    F(SLURM_STEP_ID, "Slurm: the step id (salts the fallback job secret)")                       \
    F(RANK, "torchrun: this process's rank")                                                     \
    F(WORLD_SIZE, "torchrun: the job's ranks")                                                   \
    F(LOCAL_RANK, "torchrun: the rank on this host")                                             \
    F(LOCAL_WORLD_SIZE, "torchrun: the ranks on this host")                                      \
    F(TORCHELASTIC_RUN_ID, "torchrun: the run id (the fallback job secret)")                     \
    F(MASTER_ADDR, "torchrun: rank 0's host")                                                    \
    F(MASTER_PORT, "torchrun: rank 0's port")                                                    \
    F(XDG_RUNTIME_DIR, "where the rendezvous file goes (else /tmp)")                             \
    F(XDG_CACHE_HOME, "where measured models are cached (else $HOME/.cache)")                    \
    F(HOME, "where measured models are cached, without XDG_CACHE_HOME")                          \
    F(UCX_TLS, "UCX's transports: the net transport leaves out self unless it is named")         \
    F(NCCL_DEBUG, "NCCL's log level: DUET_DEBUG when that is unset (VERSION: WARN, and the "     \
      "version at the first init)")                                                              \
    F(NCCL_DEBUG_SUBSYS, "NCCL's subsystems: DUET_DEBUG_SUBSYS when that is unset (INIT, COLL, " \
      "P2P -> COLL, BOOTSTRAP -> BOOT, TUNING -> TUNE, ALLOC -> HEAP, ENV -> INIT, ALL)")         \
    F(NCCL_DEBUG_FILE, "NCCL's log file: DUET_DEBUG_FILE when that is unset")                    \
    F(NCCL_ALGO, "NCCL's algorithms: DUET_ALGO when that is unset (Ring: ring, or chain for "     \
      "broadcast and reduce; Tree: dbtree for allreduce)")                                       \
    F(NCCL_PROTO, "NCCL's protocols: ignored (Duet has one per transport)")

typedef enum {
#define DUET_FOREIGN_ENUM_(name, help) DUET_FOREIGN_##name,
    DUET_FOREIGN_TABLE(DUET_FOREIGN_ENUM_)
#undef DUET_FOREIGN_ENUM_
    DUET_FOREIGN_COUNT
} duet_foreign_t;
/* The variable's value as the process started with it (read once), or NULL. */
const char *duet_foreign_env_(duet_foreign_t which);
#define duet_foreign(NAME) duet_foreign_env_(DUET_FOREIGN_##NAME)
/* Row-wise, for duet-info: name, help, value (NULL: unset). */
void duet_foreign_row(size_t i, const char **name, const char **help, const char **value);

/* Aliases: where a DUET_* setting is unset, another's variable that means the same gives its
 * value, translated (read with the table; nothing is written to the environment):
 *   A(DUET ROW, FOREIGN ROW, translate)   translate(value, out, len, note, nlen) -> 1: out is
 *   the setting's text; 0: no counterpart (note says why, logged by whoever uses the alias) */
#define DUET_CONFIG_ALIASES(A)                                                                   \
    A(DEBUG, NCCL_DEBUG, duet_alias_nccl_debug)                                                  \
    A(DEBUG_SUBSYS, NCCL_DEBUG_SUBSYS, duet_alias_nccl_subsys)                                   \
    A(DEBUG_FILE, NCCL_DEBUG_FILE, duet_alias_same)                                              \
    A(ALGO, NCCL_ALGO, duet_alias_nccl_algo)
int duet_alias_same(const char *v, char *out, size_t len, char *note, size_t nlen);
int duet_alias_nccl_debug(const char *v, char *out, size_t len, char *note, size_t nlen);
int duet_alias_nccl_subsys(const char *v, char *out, size_t len, char *note, size_t nlen);
int duet_alias_nccl_algo(const char *v, char *out, size_t len, char *note, size_t nlen);
/* What the aliases could not carry over ("NCCL_ALGO=^NVLS: ..."), one per line, or "". */
const char *duet_cfg_alias_notes(void);

/* ---------------------------------------------------------------- hashes (duet_util_hash.c)
 * SHA-256 and HMAC-SHA-256: the bootstrap proves knowledge of the job secret with them, and
 * names that others can list (/dev/shm, abstract sockets) are derived with them, so neither
 * reveals the secret (docs/SECURITY.md). */
#define DUET_SHA256_BYTES 32
typedef struct {
    uint32_t state[8];
    uint64_t bytes; /* hashed so far */
    uint8_t block[64];
    size_t held;    /* bytes of block in use */
} duet_sha256_t;
void duet_sha256_init(duet_sha256_t *s);
void duet_sha256_update(duet_sha256_t *s, const void *data, size_t len);
void duet_sha256_final(duet_sha256_t *s, uint8_t out[DUET_SHA256_BYTES]); /* wipes *s */

/* One piece of an HMAC's message: the message is the pieces one after the other. */
typedef struct {
    const void *data;
    size_t len;
} duet_hash_part_t;
void duet_hmac_sha256(const void *key, size_t key_len, const duet_hash_part_t *parts, int nparts,
                      uint8_t out[DUET_SHA256_BYTES]);
/* 1 when the two are equal; takes the same time wherever they differ. */
int duet_bytes_equal_ct(const void *a, const void *b, size_t len);

/* Names that other users can list (/dev/shm, abstract Unix sockets) are made of these parts,
 * lower-case hex of HMAC-SHA-256(secret, label) cut to the given number of digits: the job
 * part is keyed by the job's secret (so duetrun, which knows it, finds all of a job's names
 * by prefix), the communicator part by the communicator's own secret. Knowing a name lets
 * no one recover the secret, nor test a guess of it faster than a brute force on its bits. */
#define DUET_NAME_JOB_HEX  24
#define DUET_NAME_COMM_HEX 12
void duet_name_job_part(const uint8_t *secret, size_t len, char out[DUET_NAME_JOB_HEX + 1]);
void duet_name_comm_part(const uint8_t *secret, size_t len, char out[DUET_NAME_COMM_HEX + 1]);

/* ---------------------------------------------------------------- repeats (duet_util_median.c) */
/* The median of v[0..n) (n >= 1; v is sorted in place) and, when spread is not NULL, how far
 * the values spread: (max - min) / median (0 when the median is 0). */
double duet_median(double *v, int n, double *spread);

/* ---------------------------------------------------------- calls in flight (duet_util_inflight.c) */
/* So that one thread may take an object down (a communicator, a layer's handle) while another
 * is inside a call on it: a call enters the object first and leaves it last; the closer
 * stores the object's own closing word, then drains (waits until no other thread is inside a
 * call on it). A call checks the closing word after it enters and leaves at once when it is
 * set, touching nothing more; the closer frees only after its last drain. Entering costs two
 * stores to the calling thread's own record. Calls nest (DUET_INFLIGHT_DEPTH deep are
 * counted; deeper ones are inside a counted call anyway); enter and leave pair in LIFO order
 * on one thread. */
#define DUET_INFLIGHT_DEPTH 8
typedef struct duet_inflight_rec { /* a thread's calls (duet_util_inflight.c) */
    _Atomic(const void *) obj[DUET_INFLIGHT_DEPTH];
    _Atomic int n;                  /* entries of obj[] in use (written by the owner only) */
    int over;                       /* entries past DUET_INFLIGHT_DEPTH (not recorded) */
    _Atomic int taken;              /* 1 while a thread owns the record */
    struct duet_inflight_rec *next; /* the list of every record (push only) */
} duet_inflight_rec_t;
extern DUET_HIDDEN _Thread_local duet_inflight_rec_t *duet_inflight_mine_;
extern DUET_HIDDEN int duet_inflight_fence_;
duet_inflight_rec_t *duet_inflight_rec_(void);
/* Enters obj; returns this thread's record, to leave with (NULL: out of memory, uncounted). */
static inline duet_inflight_rec_t *duet_inflight_enter_rec(const void *obj)
{
    duet_inflight_rec_t *r = duet_inflight_mine_;
    if (DUET_UNLIKELY(!r) && !(r = duet_inflight_rec_())) return NULL;
    int n = atomic_load_explicit(&r->n, memory_order_relaxed);
    if (DUET_UNLIKELY(n >= DUET_INFLIGHT_DEPTH)) {
        r->over++;
        return r;
    }
    atomic_store_explicit(&r->obj[n], obj, memory_order_relaxed);
    atomic_store_explicit(&r->n, n + 1, memory_order_release);
    if (DUET_UNLIKELY(duet_inflight_fence_)) atomic_thread_fence(memory_order_seq_cst);
    else atomic_signal_fence(memory_order_seq_cst);
    return r;
}
/* Leaves the last object entered, r being the record duet_inflight_enter_rec returned (a
 * thread-local read the fewer on a hot path). */
static inline void duet_inflight_leave_rec(duet_inflight_rec_t *r)
{
    if (DUET_UNLIKELY(!r)) return;
    if (DUET_UNLIKELY(r->over > 0)) {
        r->over--;
        return;
    }
    int n = atomic_load_explicit(&r->n, memory_order_relaxed);
    if (n > 0) atomic_store_explicit(&r->n, n - 1, memory_order_release); /* every access before it is done */
}
static inline void duet_inflight_enter(const void *obj) { (void)duet_inflight_enter_rec(obj); }
static inline void duet_inflight_leave(void) { duet_inflight_leave_rec(duet_inflight_mine_); }
/* Other threads inside a call on obj now (after a fence on every thread: entries made before
 * it are seen, and those made after it see the closing word stored before it). */
int duet_inflight_count(const void *obj);
/* Waits, at most timeout_s seconds (0: one look), until no other thread is inside a call on
 * obj: DUET_OK, or DUET_ERR_TIMEOUT with those still inside in *left (NULL: not wanted). No
 * message is set. */
duet_status_t duet_inflight_drain(const void *obj, double timeout_s, int *left);

/* ---------------------------------------------------------------- clocks (duet_util_clock.c) */
uint64_t duet_time_ns(void); /* CLOCK_MONOTONIC */
static inline double duet_time_s(void) { return (double)duet_time_ns() * 1e-9; }

static inline void duet_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

/* ---------------------------------------------------------------- copies (duet_util_copy.c)
 * memcpy, with streaming stores for copies larger than the cache. The copy is complete
 * and ordered before later stores when it returns. */
DUET_HIDDEN void duet_copy_large_(void *dst, const void *src, size_t n);
#define DUET_COPY_STREAM_MIN (8u << 20) /* duet_copy streams from this size on */
/* A copy with streaming stores whatever its size (memcpy where there are none): for the
 * pieces of a transfer that as a whole is larger than the cache. */
void duet_copy_stream(void *dst, const void *src, size_t n);
static inline void duet_copy(void *dst, const void *src, size_t n)
{
    switch (n) { /* single moves for the sizes of p, g and signals */
    case 4: memcpy(dst, src, 4); return;
    case 8: memcpy(dst, src, 8); return;
    default: duet_copy_large_(dst, src, n);
    }
}

/* ---------------------------------------------------------------- the one wait loop (duet_util_wait.c)
 * Usage:
 *     duet_waiter_t w;
 *     duet_waiter_init(&w, &ctx, "%s at 0x%llx", "wait_until", (uintptr_t)addr, 0, peer);
 *     while (!condition) if ((st = duet_waiter_turn(&w)) != DUET_OK) return st;
 * Each turn spins (a pause) for ctx->spin_us, then yields the core, then sleeps on
 * the rank's doorbell futex with a short timeout (so a missed wake-up costs latency, never
 * a hang). Every turn checks the abort word and the deadline. The description of what is
 * awaited (a printf format receiving label, a and b) is formatted only if the wait fails:
 * formatting it up front would cost more than a whole round trip. */
typedef struct {
    _Atomic uint32_t doorbell; /* bumped by peers that update this rank's memory  */
    _Atomic uint32_t sleepers; /* how many of this rank's threads sleep on it     */
    _Atomic uint32_t armed;    /* 1: a sleeper went to sleep since the last wake: the next
                                * ring wakes (and disarms); later rings leave the futex alone */
} duet_doorbell_t;

typedef struct {
    duet_doorbell_t *doorbell;    /* this rank's doorbell (may be NULL: no sleeping) */
    const _Atomic int *abort_flag; /* non-zero: stop waiting (may be NULL); a negative
                                   * value is the status to return                   */
    duet_status_t abort_status;   /* status returned when abort_flag is positive     */
    const char *abort_why;        /* what set it ("rank 3 died"), or NULL; written
                                   * before the flag                                 */
    const _Atomic int *revoked_by; /* for DUET_ERR_REVOKED: the revoking rank + 1     */
    double timeout_s;             /* 0: no deadline                                  */
    double spin_us;               /* how long to spin before yielding                */
    void (*progress)(void *);     /* called at every turn (the net transport's worker
                                   * progress: a waiter on local memory must serve remote
                                   * peers' emulated RMA), or NULL                    */
    void *progress_arg;
} duet_wait_ctx_t;

typedef struct {
    const duet_wait_ctx_t *ctx;
    const char *what, *label; /* what: format taking (label, a, b) */
    unsigned long long a, b;
    int peer;
    uint32_t turns;
    uint64_t start_ns, spin_until_ns, sleep_after_ns, deadline_ns;
    void (*write_label)(void *arg); /* writes label when first needed (duet_waiter_label_later) */
    void *write_label_arg;
} duet_waiter_t;

void duet_waiter_init(duet_waiter_t *w, const duet_wait_ctx_t *ctx, const char *what, const char *label,
                      unsigned long long a, unsigned long long b, int peer);
/* After duet_waiter_init: the label's text is written by write(arg) into the buffer the label
 * points at, the first time the waiter reads it (a failure's message, or the note of a wait
 * past its first spins) — never for a short wait. For a label that costs a snprintf to make
 * (a wait that most calls make, briefly). */
void duet_waiter_label_later(duet_waiter_t *w, void (*write)(void *arg), void *arg);
duet_status_t duet_waiter_turn(duet_waiter_t *w);

/* Hang diagnosis: what this process's threads wait for right now. A wait that lasts past its
 * first spins is noted (a copy of its description, per thread) and stamped at every later
 * turn; a note stamped within the last 50 ms is a wait in progress. Writes one line per such
 * wait ("<what> from rank P: waiting 12.3 s") into buf, "not waiting" when there are none;
 * with older_s > 0 only waits older than that, each once (returns 0 when none). Returns the
 * number of waits written. */
int duet_wait_report(char *buf, size_t len, double older_s);

/* Work a thread should do while it is blocked outside duet_waiter_turn (the bootstrap's socket
 * waits): the net transport sets it to the progress of every UCP worker of the process, so a
 * rank blocked in an exchange still serves its peers' one-sided operations (NULL: nothing).
 * duet_background_progress() runs it and says whether there is any (then poll briefly). */
void duet_background_progress_set(void (*fn)(void));
int duet_background_progress(void);

/* Wakes the sleepers of a doorbell after its owner's memory was changed. No fence: on
 * the hot path a fence would stall every put until its stores drain (measured: +0.1 us per
 * pingpong round trip). Without it the sleeper count may be read before the data store is
 * visible, so a waiter that just went to sleep can miss this ring; it then wakes by its
 * futex timeout (duet_util_wait.c), which bounds the cost of that rare race. */
static inline void duet_doorbell_ring(duet_doorbell_t *d)
{
    if (DUET_UNLIKELY(atomic_load_explicit(&d->sleepers, memory_order_relaxed) != 0 &&
                      atomic_load_explicit(&d->armed, memory_order_relaxed) != 0)) {
        void duet_doorbell_wake_(duet_doorbell_t * d);
        duet_doorbell_wake_(d);
    }
}

#endif /* DUET_UTIL_H */
