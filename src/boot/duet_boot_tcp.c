/* Deadline-bounded TCP I/O and framing for the bootstrap. Sockets are non-blocking; every
 * wait is a poll() with the time left before the deadline. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "boot/duet_boot_tcp.h"

static int ms_left(uint64_t deadline_ns)
{
    if (deadline_ns == UINT64_MAX) return 1000;
    uint64_t now = duet_time_ns();
    if (now >= deadline_ns) return 0;
    uint64_t ms = (deadline_ns - now + 999999) / 1000000;
    return ms > 1000 ? 1000 : (int)ms;
}

#define WATCH_MS 20 /* how often a wait looks at the watched abort word */

static _Thread_local const _Atomic int *watched; /* duet_tcp_watch */
static _Thread_local struct {
    int (*gone)(void *arg, int rank);
    void *arg;
    int rank;
} watched_peer; /* duet_tcp_watch_peer */

void duet_tcp_watch_peer(int (*gone)(void *arg, int rank), void *arg, int rank)
{
    watched_peer.gone = gone;
    watched_peer.arg = arg;
    watched_peer.rank = rank;
}

const _Atomic int *duet_tcp_watch(const _Atomic int *abort)
{
    const _Atomic int *old = watched;
    watched = abort;
    return old;
}

/* Waits for `events` on fd; DUET_OK when ready. */
static duet_status_t wait_fd(int fd, short events, uint64_t deadline_ns, const char *who,
                             const char *doing)
{
    for (;;) {
        struct pollfd p = {fd, events, 0};
        int ms = ms_left(deadline_ns);
        if (ms == 0)
            return DUET_FAIL(DUET_ERR_TIMEOUT, BOOT, "bootstrap: timed out %s %s", doing, who);
        int a = watched ? atomic_load_explicit(watched, memory_order_acquire) : 0;
        if (a < 0)
            return DUET_FAIL((duet_status_t)a, BOOT, "bootstrap: stopped %s %s: the communicator %s", doing, who,
                             a == DUET_ERR_REVOKED ? "was revoked" : "failed");
        if (watched_peer.gone && watched_peer.gone(watched_peer.arg, watched_peer.rank))
            return DUET_FAIL(DUET_ERR_PEER_FAILED, BOOT, "bootstrap: stopped %s %s: it died", doing, who);
        if ((watched || watched_peer.gone) && ms > WATCH_MS) ms = WATCH_MS;
        if (duet_background_progress() && ms > 1) ms = 1; /* serve the net transport's peers meanwhile */
        int n = poll(&p, 1, ms);
        if (n > 0) return DUET_OK;
        if (n < 0 && errno != EINTR)
            return DUET_FAIL(DUET_ERR_SYSTEM, BOOT, "bootstrap: poll failed %s %s: %s", doing, who,
                             strerror(errno));
    }
}

duet_status_t duet_tcp_send_all(int fd, const void *buf, size_t len, uint64_t deadline_ns,
                                const char *who)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            duet_status_t st = wait_fd(fd, POLLOUT, deadline_ns, who, "sending to");
            if (st) return st;
            continue;
        }
        return DUET_FAIL(DUET_ERR_PEER_FAILED, BOOT, "bootstrap: lost link to %s while sending: %s",
                         who, strerror(errno));
    }
    return DUET_OK;
}

duet_status_t duet_tcp_recv_all(int fd, void *buf, size_t len, uint64_t deadline_ns,
                                const char *who)
{
    char *p = buf;
    while (len > 0) {
        ssize_t n = recv(fd, p, len, 0);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n == 0)
            return DUET_FAIL(DUET_ERR_PEER_FAILED, BOOT, "bootstrap: %s closed the link", who);
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
            duet_status_t st = wait_fd(fd, POLLIN, deadline_ns, who, "receiving from");
            if (st) return st;
            continue;
        }
        return DUET_FAIL(DUET_ERR_PEER_FAILED, BOOT, "bootstrap: lost link to %s: %s", who,
                         strerror(errno));
    }
    return DUET_OK;
}

duet_status_t duet_msg_send(int fd, uint32_t kind, uint32_t seq, const void *buf, size_t len,
                            uint64_t deadline_ns, const char *who)
{
    duet_msg_hdr_t h = {DUET_BOOT_MSG_MAGIC, kind, seq, 0, len};
    duet_status_t st = duet_tcp_send_all(fd, &h, sizeof h, deadline_ns, who);
    if (st == DUET_OK && len) st = duet_tcp_send_all(fd, buf, len, deadline_ns, who);
    return st;
}

duet_status_t duet_msg_recv(int fd, uint32_t kind, uint32_t seq, void *buf, size_t len,
                            uint64_t deadline_ns, const char *who)
{
    duet_msg_hdr_t h;
    duet_status_t st = duet_tcp_recv_all(fd, &h, sizeof h, deadline_ns, who);
    if (st) return st;
    if (h.magic != DUET_BOOT_MSG_MAGIC)
        return DUET_FAIL(DUET_ERR_INTERNAL, BOOT, "bootstrap: garbage on the link to %s (magic 0x%x)",
                         who, h.magic);
    if (h.kind != kind || h.seq != seq || h.len != len)
        return DUET_FAIL(DUET_ERR_INVALID_ARG, BOOT,
                         "bootstrap: mismatched calls: expected message kind %u #%u of %zu bytes "
                         "from %s, got kind %u #%u of %llu bytes (do all ranks make the same "
                         "collective calls with the same sizes?)",
                         kind, seq, len, who, h.kind, h.seq, (unsigned long long)h.len);
    return len ? duet_tcp_recv_all(fd, buf, len, deadline_ns, who) : DUET_OK;
}

static int make_socket(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd >= 0) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    return fd;
}

duet_status_t duet_tcp_connect(uint32_t addr_be, uint16_t port_be, uint64_t deadline_ns, int refused_is_final,
                               int *out)
{
    char who[64];
    struct in_addr ia = {addr_be};
    snprintf(who, sizeof who, "%s:%u", inet_ntoa(ia), ntohs(port_be));
    unsigned backoff_ms = 1;
    int last_err = 0;
    for (;;) {
        int fd = make_socket();
        if (fd < 0)
            return DUET_FAIL(DUET_ERR_SYSTEM, BOOT, "bootstrap: socket(): %s", strerror(errno));
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = port_be, .sin_addr = {addr_be}};
        int rc = connect(fd, (struct sockaddr *)&sa, sizeof sa);
        if (rc < 0 && errno == EINPROGRESS) {
            duet_status_t st = wait_fd(fd, POLLOUT, deadline_ns, who, "connecting to root at");
            if (st) {
                close(fd);
                return st;
            }
            socklen_t sl = sizeof last_err;
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &last_err, &sl);
            rc = last_err ? -1 : 0;
        } else if (rc < 0) {
            last_err = errno;
        }
        if (rc == 0) {
            *out = fd;
            return DUET_OK;
        }
        close(fd);
        if (refused_is_final && last_err == ECONNREFUSED)
            return duet_error_set(DUET_ERR_PEER_FAILED, "bootstrap: %s refused the connection: the root had "
                                  "listened there, so it is gone", who); /* the caller says more, and logs */
        /* the root may not listen yet: retry refused/unreachable until the deadline */
        int ms = ms_left(deadline_ns);
        if (ms == 0)
            return DUET_FAIL(DUET_ERR_TIMEOUT, BOOT,
                             "bootstrap: cannot reach the root at %s before the timeout "
                             "(DUET_BOOTSTRAP_TIMEOUT): %s",
                             who, strerror(last_err));
        poll(NULL, 0, (int)(backoff_ms < (unsigned)ms ? backoff_ms : (unsigned)ms));
        if (backoff_ms < 100) backoff_ms *= 2;
    }
}

duet_status_t duet_tcp_listen(uint32_t addr_be, uint16_t port_be, int reuse, int *out)
{
    struct in_addr ia = {addr_be};
    if (addr_be == htonl(INADDR_ANY))
        return DUET_FAIL(DUET_ERR_INTERNAL, BOOT, "bootstrap: asked to listen on every interface");
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return DUET_FAIL(DUET_ERR_SYSTEM, BOOT, "bootstrap: socket(): %s", strerror(errno));
    int one = 1;
    if (reuse) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = port_be, .sin_addr = {addr_be}};
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) || listen(fd, 4096)) {
        int e = errno;
        close(fd);
        return DUET_FAIL(DUET_ERR_SYSTEM, BOOT, "bootstrap: cannot listen on %s:%u: %s", inet_ntoa(ia),
                         ntohs(port_be), strerror(e));
    }
    duet_tcp_note_bound(fd);
    *out = fd;
    return DUET_OK;
}

static _Atomic uint64_t last_bound; /* addr << 16 | port, both in network order */

void duet_tcp_note_bound(int listen_fd)
{
    struct sockaddr_in sa;
    socklen_t sl = sizeof sa;
    if (getsockname(listen_fd, (struct sockaddr *)&sa, &sl) == 0 && sa.sin_family == AF_INET)
        atomic_store(&last_bound, (uint64_t)sa.sin_addr.s_addr << 16 | sa.sin_port);
}

void duet_boot_last_bound(uint32_t *addr_be, uint16_t *port_be)
{
    uint64_t v = atomic_load(&last_bound);
    *addr_be = (uint32_t)(v >> 16);
    *port_be = (uint16_t)v;
}
duet_status_t duet_tcp_accept(int listen_fd, uint64_t deadline_ns, int *out, char *peer, size_t peerlen)
{
    for (;;) {
        struct sockaddr_in sa;
        socklen_t sl = sizeof sa;
        int fd = accept4(listen_fd, (struct sockaddr *)&sa, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            snprintf(peer, peerlen, "%s:%u", inet_ntoa(sa.sin_addr), ntohs(sa.sin_port));
            *out = fd;
            return DUET_OK;
        }
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED)
            return DUET_FAIL(DUET_ERR_SYSTEM, BOOT, "bootstrap: accept(): %s", strerror(errno));
        duet_status_t st = wait_fd(listen_fd, POLLIN, deadline_ns, "joining ranks", "waiting for");
        if (st) return st;
    }
}
