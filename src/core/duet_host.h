/*
 * duet_host.h — host identity (docs/NETWORK.md 2.2): which peers share this machine's
 * shared memory, process ids and abstract Unix sockets, decided from a key every rank
 * contributes at communicator creation (check_peers in duet_comm_init.c; the GPU heap's
 * own exchange in duet_cuda_heap.c), never from host names.
 */
#ifndef DUET_HOST_H
#define DUET_HOST_H

#include <stdint.h>
#include <stddef.h>
#include "util/duet_util.h"

/* One rank's key: plain data, exchanged as bytes by the bootstrap allgathers. A field that
 * cannot be read here stays zero (the boot id: "host:<name>" instead), so such a rank keeps
 * the old rule for it (equal host names) rather than failing. */
typedef struct {
    char host[64];     /* gethostname(): for messages only, never compared */
    char boot_id[72];  /* /proc/sys/kernel/random/boot_id: one machine, one boot */
    uint64_t shm_dev;  /* stat("/dev/shm"): st_dev and st_ino. A container's or a */
    uint64_t shm_ino;  /* namespace's private /dev/shm differs in one of them */
    uint64_t pid_ns;   /* inode of /proc/self/ns/pid: pids name the same processes */
    uint64_t net_ns;   /* inode of /proc/self/ns/net: abstract Unix sockets reach */
} duet_host_key_t;

/* What a peer shares with me: a bit set, from duet_host_reach. */
enum {
    DUET_HOST_MACHINE = 1, /* same boot id: the same CPUs (oversubscription) */
    DUET_HOST_SHM = 2,     /* MACHINE and the same /dev/shm: its segments map here */
    DUET_HOST_PID = 4,     /* SHM and the same pid namespace: its pid is a process here */
    DUET_HOST_FD = 8,      /* SHM and the same network namespace: fd passing over abstract sockets */
};

/* DUET_NET, parsed (docs/NETWORK.md 2.1). */
typedef enum { DUET_NET_AUTO = 0, DUET_NET_OFF = 1, DUET_NET_FORCE = 2 } duet_net_mode_t;

/* This process's key. Never fails: what cannot be read is left out (see above). */
void duet_host_key_get(duet_host_key_t *key);

/* What b shares with a (symmetric: reach(a, b) == reach(b, a)). */
unsigned duet_host_reach(const duet_host_key_t *a, const duet_host_key_t *b);

/* Why a peer with key `peer` is not shm-reachable from `me`, in words for a message
 * ("a different boot id", "a separate /dev/shm (...)"); "" when it is. */
void duet_host_why_apart(const duet_host_key_t *me, const duet_host_key_t *peer, char *out, size_t len);

/* DUET_NET: auto, off or force; anything else is logged at WARN and taken as auto. */
duet_net_mode_t duet_host_net_mode(void);
const char *duet_host_net_name(duet_net_mode_t mode);

#endif
