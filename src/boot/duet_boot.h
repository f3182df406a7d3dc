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
 * Joining: a rank connects to the root's address from the unique id and presents a hello
 * (job secret, its rank, the world size). The root refuses (and logs) a connection with a
 * wrong secret, and answers a wrong world size or a duplicate rank with an error the rank
 * reports; once every rank has joined, the root acknowledges all of them. Every socket
 * wait is bounded by the bootstrap timeout.
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
    uint16_t pad;
    int32_t creator_pid;               /* process that holds the listener  */
} duet_boot_id_t;

typedef struct {
    int rank, nranks;
    int root_fd;   /* non-root: link to the root               */
    int *rank_fds; /* root: link to each rank (entry 0 unused) */
    uint8_t secret[DUET_SECRET_BYTES];
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

/* Makes a unique id: a listening socket (kept in a process-local registry until the
 * root joins) and a fresh random secret. */
duet_status_t duet_boot_id_create(duet_unique_id_t *id);
/* The same with a given secret (a launcher's job secret) instead of a random one. */
duet_status_t duet_boot_id_create_secret(duet_unique_id_t *id, const uint8_t secret[DUET_SECRET_BYTES]);

/* Builds an id around an existing listener and secret (duetrun hands rank 0 both), or,
 * with listen_fd < 0, only names the root (other ranks). */
duet_status_t duet_boot_id_from(duet_unique_id_t *id, const char *host_port,
                                const uint8_t secret[DUET_SECRET_BYTES], int listen_fd);

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

#endif
