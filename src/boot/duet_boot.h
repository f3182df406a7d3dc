/*
 * duet_boot.h — bootstrap: how ranks find each other and exchange small data out of band.
 *
 * Topology: a star around the rendezvous root (rank 0 of the communicator).
 *
 *        rank1   rank2
 *           \     /
 *   rank3 -- root -- rank4        every link is one TCP connection; every message is framed
 *                                 (magic, kind, sequence number, length) and checked.
 *
 * Joining (duet_boot_rdv.c): nobody sends the job secret K; both sides prove they know it.
 *
 *   rank -> root  HELLO  {version, nonce_r}                      nonces: 16 bytes of getrandom
 *   root -> rank  PROOF  {nonce_s, HMAC(K, "duet-root" | nonce_r | nonce_s)}
 *                 the rank checks it (a fake root cannot make it) and only then says who it is:
 *   rank -> root  JOIN   {rank, nranks, HMAC(K, "duet-rank" | nonce_r | nonce_s | rank | nranks)}
 *   root -> rank  WELCOME {status, message}                      once every rank has joined
 *
 * The labels keep one side's proof from serving as the other's; the root's fresh nonce keeps
 * a recorded JOIN from being replayed. A stranger learns nothing of K (a MAC over nonces it
 * chose), a fake root gets no more than a nonce and a refusal. The root serves every pending
 * connection at once in one poll set; each must finish its handshake within
 * DUET_BOOTSTRAP_HANDSHAKE_TIMEOUT or is dropped, without delaying the others; the whole join
 * keeps the bootstrap timeout. A wrong world size or a duplicate rank (from a rank that
 * proved the secret) is answered with an error the rank reports. A rank that has connected
 * sees the root's death as its link closing; one whose id says that the root already listens
 * (DUET_BOOT_ID_LISTENING) takes a refused connection as the root's death too, and fails at
 * once, naming rank 0.
 *
 * Listeners bind one address, never all of them (duet_boot_iface.c): the interface the
 * settings name, else loopback for a job on one host, else the first up non-loopback IPv4
 * interface. The address advertised in the id is the address bound.
 */
#ifndef DUET_BOOT_H
#define DUET_BOOT_H

#include <stdatomic.h>
#include <stdint.h>
#include "util/duet_util.h"

#define DUET_SECRET_BYTES 16

/* The layout behind duet_unique_id_t (which is 128 opaque bytes). */
typedef struct {
    uint64_t magic;                    /* DUET_BOOT_ID_MAGIC                */
    uint8_t secret[DUET_SECRET_BYTES]; /* job secret                        */
    uint32_t addr_be;                  /* IPv4 address of the root, network order */
    uint16_t port_be;                  /* its port, network order          */
    uint16_t flags;                    /* DUET_BOOT_ID_*                   */
    int32_t creator_pid;               /* process that holds the listener  */
} duet_boot_id_t;

/* The root listened before any rank could connect (duetrun's inherited listener, which
 * DUET_BOOT_LISTENING says; a published rendezvous file; a split's or shrink's root): a
 * refused connection means that the root is gone. */
#define DUET_BOOT_ID_LISTENING 1

typedef struct {
    int rank, nranks;
    int root_fd;   /* non-root: link to the root               */
    int *rank_fds; /* root: link to each rank (entry 0 unused) */
    uint8_t secret[DUET_SECRET_BYTES]; /* the one secrets of split/shrink children derive from */
    double timeout_s;
    uint32_t seq; /* counts exchanges, to catch mismatched calls */
    /* NULL, or a word that stops the exchanges when it turns negative (they return its
     * status): a communicator's abort word, so a revoke or a death ends a wait on a peer
     * that will never send (duet_comm_init.c sets it; the closing barrier clears it) */
    const _Atomic int *abort;
    /* NULL, or what says that rank r is dead (the communicator's failure detector): an
     * exchange stops waiting for a dead rank (a peer on a cut link is silent; its socket never
     * closes), and the root still answers the live ranks; the call then returns
     * DUET_ERR_PEER_FAILED. Also watched by the closing barrier. */
    int (*gone)(void *arg, int rank);
    void *gone_arg;
} duet_boot_t;

/* Where a listener goes: DUET_BOOT_ONE_HOST binds loopback (every rank is on this host),
 * DUET_BOOT_HOSTS one chosen interface, DUET_BOOT_ASK_LAUNCHER the first when the launcher's
 * environment says the job is on one host (duet_boot_env_one_host), else the second. */
typedef enum { DUET_BOOT_ASK_LAUNCHER = -1, DUET_BOOT_HOSTS = 0, DUET_BOOT_ONE_HOST = 1 } duet_boot_scope_t;

/* Makes a unique id: a listening socket (kept in a process-local registry until the
 * root joins) and a fresh random secret. */
duet_status_t duet_boot_id_create(duet_unique_id_t *id);
/* The same with a given secret (a launcher's job secret, or a derived one) instead of a
 * random one, bound as `scope` says. */
duet_status_t duet_boot_id_create_secret(duet_unique_id_t *id, const uint8_t secret[DUET_SECRET_BYTES],
                                         duet_boot_scope_t scope);

/* Closes the listener of an id this process made and will not join (a group whose set-up
 * failed before its root joined); an id without one here is left alone. */
void duet_boot_id_forget(const duet_unique_id_t *id);

/* Builds an id around an existing listener and secret (duetrun hands rank 0 both), or,
 * with listen_fd < 0, only names the root (other ranks). */
duet_status_t duet_boot_id_from(duet_unique_id_t *id, const char *host_port,
                                const uint8_t secret[DUET_SECRET_BYTES], int listen_fd);

/* What of an id may travel where others can read it (a parent's bootstrap, an FT area): the
 * root's address, port, flags and pid, never the secret. */
typedef struct {
    uint32_t addr_be;
    uint16_t port_be, flags;
    int32_t creator_pid;
} duet_boot_addr_t;
void duet_boot_id_addr(const duet_unique_id_t *id, duet_boot_addr_t *out);
/* An id from an address (duet_boot_id_addr) and a secret the joiner derived itself. */
void duet_boot_id_rebuild(duet_unique_id_t *id, const duet_boot_addr_t *addr, const uint8_t secret[DUET_SECRET_BYTES]);

/* A secret for a child bootstrap (split, shrink) that every member derives alike from its
 * parent's: HMAC(parent, label | a | b). Only the child root's address and port then travel. */
void duet_boot_derive_secret(const uint8_t parent[DUET_SECRET_BYTES], const char *label, uint64_t a,
                             uint64_t b, uint8_t out[DUET_SECRET_BYTES]);

/* The address a listener of this scope binds and advertises, and why (for logs and
 * duet-info): the interface's name, its address, the reason. */
duet_status_t duet_boot_bind_addr(duet_boot_scope_t scope, uint32_t *addr_be, char *why, size_t len);

/* Joins the rendezvous as `rank` of `nranks`. Rank 0 must be the process that made
 * (or registered) the id. */
duet_status_t duet_boot_join(duet_boot_t *b, const duet_unique_id_t *id, int rank, int nranks,
                             double timeout_s);
/* The same, but the root gives up at once (DUET_ERR_PEER_FAILED, told to the ranks that did
 * join) when gone(arg, r) says that a rank r which has not joined yet is dead; it asks every
 * 20 ms while it waits (a shrink's new communicator, src/core/duet_comm_ft.c). */
duet_status_t duet_boot_join_watched(duet_boot_t *b, const duet_unique_id_t *id, int rank, int nranks,
                                     double timeout_s, int (*gone)(void *arg, int rank), void *arg);

/* Out-of-band collectives over the star; `bytes` must be equal on every rank. */
duet_status_t duet_boot_allgather(duet_boot_t *b, const void *mine, void *all, size_t bytes);
duet_status_t duet_boot_bcast(duet_boot_t *b, void *buf, size_t bytes); /* from rank 0 */
duet_status_t duet_boot_barrier(duet_boot_t *b);

void duet_boot_close(duet_boot_t *b);

/* For tests: the address and port (network order) that the last listener this process opened
 * or was handed is bound to, as getsockname says (0, 0: none yet). */
void duet_boot_last_bound(uint32_t *addr_be, uint16_t *port_be);

/* Hex helpers for the secret. */
void duet_hex_encode(const uint8_t *in, size_t n, char *out /* 2n+1 */);
int duet_hex_decode(const char *in, uint8_t *out, size_t n);

/* ---- launcher environments (duet_boot_env.c) */
typedef struct {
    const char *launcher; /* "duetrun", "mpirun", "srun", "torchrun", "none" */
    int rank, nranks, local_rank, local_size;
    int published_file; /* rank 0 published the rendezvous file (removed by cleanup) */
    duet_unique_id_t id;
} duet_boot_env_t;

/* Reads the launcher's environment and prepares the id of the world rendezvous. */
duet_status_t duet_boot_env_detect(duet_boot_env_t *env);
/* Removes the rendezvous file rank 0 published, once every rank has joined. */
void duet_boot_env_cleanup(duet_boot_env_t *env);
/* 1 when the launcher's environment says every rank of the job is on this host:
 * mpirun's local size = size; srun's SLURM_NNODES (or SLURM_JOB_NUM_NODES) = 1; torchrun's
 * LOCAL_WORLD_SIZE = WORLD_SIZE; DUET_LOCAL_SIZE = DUET_NRANKS (duetrun). *why: which of them. */
int duet_boot_env_one_host(const char **why);
/* The per-user directory of rendezvous files: $XDG_RUNTIME_DIR/duet if that is private,
 * else /tmp/duet-<uid>; created 0700, refused (DUET_ERR_SYSTEM, saying why) when it is a
 * symlink, not owned by this user, or writable by group or others. */
duet_status_t duet_boot_env_private_dir(char *dir, size_t len);

#endif
