/*
 * duet_host.c — host identity (docs/NETWORK.md 2.2).
 *
 * "Same host" used to mean equal gethostname(). That is wrong both ways: two containers (or
 * the net tests' namespace "hosts" run with one UTS name) may share a name but not /dev/shm,
 * and two namespaces with their own names may share it. What matters is what can be shared:
 *
 *   boot id equal                 -> the same kernel, the same CPUs        (MACHINE)
 *     and /dev/shm (dev, ino)     -> a peer's segment opens here           (SHM)
 *       and pid namespace         -> a peer's pid is that process here     (PID)
 *       and network namespace     -> a peer's abstract Unix socket reaches (FD)
 *
 * A boot id is random per boot, so equal ids across machines do not happen; a bind mount
 * over /dev/shm changes the inode (the net tests' private /dev/shm), a separate tmpfs the
 * device. Namespace inodes are compared within one boot only (under MACHINE).
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <sys/stat.h>
#include "core/duet_host.h"

static uint64_t ns_inode(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_ino : 0;
}

void duet_host_key_get(duet_host_key_t *key)
{
    memset(key, 0, sizeof *key);
    gethostname(key->host, sizeof key->host - 1);
    int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, key->boot_id, sizeof key->boot_id - 1) : -1;
    if (fd >= 0) close(fd);
    while (n > 0 && (key->boot_id[n - 1] == '\n' || key->boot_id[n - 1] == ' ')) key->boot_id[--n] = '\0';
    if (n <= 0) { /* no /proc: the host name is the best key left (the old rule) */
        memset(key->boot_id, 0, sizeof key->boot_id);
        snprintf(key->boot_id, sizeof key->boot_id, "host:%.60s", key->host);
        DUET_LOG(INFO, INIT, "no boot id (/proc/sys/kernel/random/boot_id): ranks are on one host when "
                 "their host names match");
    }
    struct stat st;
    if (stat("/dev/shm", &st) == 0) {
        key->shm_dev = (uint64_t)st.st_dev;
        key->shm_ino = (uint64_t)st.st_ino;
    }
    key->pid_ns = ns_inode("/proc/self/ns/pid");
    key->net_ns = ns_inode("/proc/self/ns/net");
}

/* Keys travel as bytes: a peer's strings are bounded here before use. */
static int same_text(const char *a, const char *b, size_t len) { return strncmp(a, b, len) == 0; }

unsigned duet_host_reach(const duet_host_key_t *a, const duet_host_key_t *b)
{
    unsigned r = 0;
    if (!same_text(a->boot_id, b->boot_id, sizeof a->boot_id)) return 0;
    r |= DUET_HOST_MACHINE;
    if (a->shm_dev != b->shm_dev || a->shm_ino != b->shm_ino) return r;
    r |= DUET_HOST_SHM;
    if (a->pid_ns == b->pid_ns) r |= DUET_HOST_PID;
    if (a->net_ns == b->net_ns) r |= DUET_HOST_FD;
    return r;
}

void duet_host_why_apart(const duet_host_key_t *me, const duet_host_key_t *peer, char *out, size_t len)
{
    unsigned r = duet_host_reach(me, peer);
    if (r & DUET_HOST_SHM)
        snprintf(out, len, "%s", "");
    else if (!(r & DUET_HOST_MACHINE))
        snprintf(out, len, "a different boot id (%.40s there, %.40s here): another machine", peer->boot_id,
                 me->boot_id);
    else
        snprintf(out, len, "a separate /dev/shm (device %llu inode %llu there, %llu/%llu here): another "
                 "container or namespace on this machine", (unsigned long long)peer->shm_dev,
                 (unsigned long long)peer->shm_ino, (unsigned long long)me->shm_dev,
                 (unsigned long long)me->shm_ino);
}

duet_net_mode_t duet_host_net_mode(void)
{
    const char *v = duet_cfg()->net;
    if (strcasecmp(v, "auto") == 0 || v[0] == '\0') return DUET_NET_AUTO;
    if (strcasecmp(v, "off") == 0 || strcmp(v, "0") == 0) return DUET_NET_OFF;
    if (strcasecmp(v, "force") == 0) return DUET_NET_FORCE;
    DUET_LOG(WARN, INIT, "DUET_NET=%s is not auto, off or force: taken as auto", v);
    return DUET_NET_AUTO;
}

const char *duet_host_net_name(duet_net_mode_t mode)
{
    return mode == DUET_NET_FORCE ? "force" : mode == DUET_NET_OFF ? "off" : "auto";
}
