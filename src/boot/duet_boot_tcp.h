/* duet_boot_tcp.h — deadline-bounded TCP I/O and message framing (bootstrap internals). */
#ifndef DUET_BOOT_TCP_H
#define DUET_BOOT_TCP_H

#include <stdatomic.h>
#include <stdint.h>
#include "util/duet_util.h"

#define DUET_BOOT_MSG_MAGIC 0x44554554u /* "DUET" */

/* Kinds of bootstrap messages; a receiver names the kind it expects. */
enum {
    DUET_MSG_HELLO = 1, /* rank -> root: version, the rank's nonce        */
    DUET_MSG_WELCOME,   /* root -> rank: status + message                */
    DUET_MSG_GATHER,    /* rank -> root: this rank's piece               */
    DUET_MSG_GATHERED,  /* root -> rank: everyone's pieces               */
    DUET_MSG_BCAST,     /* root -> rank                                  */
    DUET_MSG_PROOF,     /* root -> rank: the root's nonce and proof      */
    DUET_MSG_JOIN,      /* rank -> root: rank, nranks and the rank's proof */
};

typedef struct {
    uint32_t magic, kind, seq, pad;
    uint64_t len;
} duet_msg_hdr_t;

/* All return DUET_OK, DUET_ERR_TIMEOUT (deadline passed), or DUET_ERR_PEER_FAILED (the peer
 * closed or reset the link); `who` names the other side in messages ("rank 3"). */
duet_status_t duet_tcp_send_all(int fd, const void *buf, size_t len, uint64_t deadline_ns,
                                const char *who);
duet_status_t duet_tcp_recv_all(int fd, void *buf, size_t len, uint64_t deadline_ns,
                                const char *who);
/* One framed message. recv checks magic, kind, sequence and exact length. */
duet_status_t duet_msg_send(int fd, uint32_t kind, uint32_t seq, const void *buf, size_t len,
                            uint64_t deadline_ns, const char *who);
duet_status_t duet_msg_recv(int fd, uint32_t kind, uint32_t seq, void *buf, size_t len,
                            uint64_t deadline_ns, const char *who);

/* The calling thread's waits in the calls above also stop (with the word's status) as soon
 * as *abort turns negative, looked at every 20 ms; NULL: no such word. Returns the previous
 * word, for the caller to put back. */
const _Atomic int *duet_tcp_watch(const _Atomic int *abort);

/* The calling thread's waits also stop (DUET_ERR_PEER_FAILED) once gone(arg, rank) says the
 * peer they wait for is dead, looked at every 20 ms; gone NULL: no such check. */
void duet_tcp_watch_peer(int (*gone)(void *arg, int rank), void *arg, int rank);

/* A non-blocking, close-on-exec TCP connection to addr:port, retried until the deadline
 * while the root is not yet listening; with refused_is_final a refused connection fails at
 * once (DUET_ERR_PEER_FAILED): the root is known to have listened, so it is gone. */
duet_status_t duet_tcp_connect(uint32_t addr_be, uint16_t port_be, uint64_t deadline_ns, int refused_is_final,
                               int *fd);

/* Accepts one connection, waiting at most until the deadline. */
duet_status_t duet_tcp_accept(int listen_fd, uint64_t deadline_ns, int *fd, char *peer, size_t peerlen);

/* A non-blocking, close-on-exec listener bound to addr:port (port 0: the kernel picks;
 * reuse: SO_REUSEADDR, for a fixed port used again). Never INADDR_ANY. */
duet_status_t duet_tcp_listen(uint32_t addr_be, uint16_t port_be, int reuse, int *fd);
/* Notes a listener this process will serve (its getsockname), for duet_boot_last_bound. */
void duet_tcp_note_bound(int listen_fd);

static inline uint64_t duet_deadline_after(double secs)
{
    return secs > 0 ? duet_time_ns() + (uint64_t)(secs * 1e9) : UINT64_MAX;
}

#endif
