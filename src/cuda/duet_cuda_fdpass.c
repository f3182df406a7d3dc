/*
 * File descriptors between the processes of one host, over Unix-domain sockets with
 * SCM_RIGHTS.
 *
 * Every rank listens on an abstract-namespace socket "\0duet-cuda-<name>-<rank>" (nothing
 * in the file system to clean up after a crash). Once all listen (an allgather of the
 * listeners' status), each rank connects to every local peer and sends one message: its
 * rank, with its descriptor attached. A Unix stream connection is complete as soon as it
 * sits in the listener's backlog (room for every peer), and the message waits in the
 * socket buffer, so no rank waits for another to accept first: sending never blocks and the
 * exchange cannot deadlock. Then each rank accepts its peers' connections, checks with
 * SO_PEERCRED that the process is the rank it claims to be, and takes the descriptor.
 *
 *      rank 0                rank 1                rank 2
 *      listen                listen                listen       -- allgather(status)
 *      connect 1,2; send     connect 0,2; send     connect 0,1; send
 *      accept x2, recv       accept x2, recv       accept x2, recv   -- allgather(status)
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include "cuda/duet_cuda_fdpass.h"

static socklen_t sock_addr(struct sockaddr_un *a, const char *name, int rank)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    /* sun_path[0] = 0: the abstract namespace */
    int n = snprintf(a->sun_path + 1, sizeof a->sun_path - 1, "duet-cuda-%s-%d", name, rank);
    if (n < 0 || (size_t)n >= sizeof a->sun_path - 1) n = (int)sizeof a->sun_path - 2;
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

/* Waits until fd is readable or the deadline passes. */
static duet_status_t wait_readable(int fd, double deadline, int me, const char *what)
{
    for (;;) {
        double left = deadline - duet_time_s();
        if (left <= 0)
            return DUET_FAIL(DUET_ERR_TIMEOUT, CUDA, "GPU heap: rank %d timed out waiting for %s "
                             "(DUET_BOOTSTRAP_TIMEOUT)", me, what);
        struct pollfd p = {fd, POLLIN, 0};
        int rc = poll(&p, 1, (int)(left * 1000) + 1);
        if (rc > 0) return DUET_OK;
        if (rc < 0 && errno != EINTR)
            return DUET_FAIL(DUET_ERR_SYSTEM, CUDA, "GPU heap: rank %d: poll: %s", me, strerror(errno));
    }
}

static duet_status_t send_fd(const char *name, int me, int peer, int fd)
{
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0) return DUET_FAIL(DUET_ERR_SYSTEM, CUDA, "GPU heap: socket: %s", strerror(errno));
    struct sockaddr_un a;
    socklen_t len = sock_addr(&a, name, peer);
    int rc;
    do rc = connect(s, (struct sockaddr *)&a, len);
    while (rc != 0 && errno == EINTR);
    if (rc != 0) {
        int e = errno;
        close(s);
        return DUET_FAIL(DUET_ERR_SYSTEM, CUDA, "GPU heap: rank %d cannot connect to rank %d's socket: %s",
                         me, peer, strerror(e));
    }
    int32_t who = me;
    struct iovec iov = {&who, sizeof who};
    char ctl[CMSG_SPACE(sizeof(int))];
    memset(ctl, 0, sizeof ctl);
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
    struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &fd, sizeof fd);
    ssize_t n;
    do n = sendmsg(s, &m, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    int e = errno;
    close(s); /* the message and its descriptor stay queued for the peer */
    if (n != (ssize_t)sizeof who)
        return DUET_FAIL(DUET_ERR_SYSTEM, CUDA, "GPU heap: rank %d cannot send its handle to rank %d: %s",
                         me, peer, n < 0 ? strerror(e) : "short write");
    return DUET_OK;
}

/* Accepts one connection and takes the rank and descriptor it carries. */
static duet_status_t recv_fd(int lsn, int me, int n, const uint8_t *local, const int32_t *pids, int *fds,
                             double deadline)
{
    duet_status_t st = wait_readable(lsn, deadline, me, "a local peer's GPU heap handle");
    if (st) return st;
    int s = accept4(lsn, NULL, NULL, SOCK_CLOEXEC);
    if (s < 0) return DUET_FAIL(DUET_ERR_SYSTEM, CUDA, "GPU heap: rank %d: accept: %s", me, strerror(errno));
    struct ucred cred;
    socklen_t clen = sizeof cred;
    if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cred, &clen) != 0) {
        st = DUET_FAIL(DUET_ERR_SYSTEM, CUDA, "GPU heap: rank %d: SO_PEERCRED: %s", me, strerror(errno));
        goto out;
    }
    if ((st = wait_readable(s, deadline, me, "a local peer's GPU heap handle"))) goto out;
    int32_t who = -1;
    struct iovec iov = {&who, sizeof who};
    char ctl[CMSG_SPACE(sizeof(int))];
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
    ssize_t got;
    do got = recvmsg(s, &m, MSG_CMSG_CLOEXEC);
    while (got < 0 && errno == EINTR);
    int fd = -1;
    struct cmsghdr *cm = got == (ssize_t)sizeof who ? CMSG_FIRSTHDR(&m) : NULL;
    if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
        cm->cmsg_len == CMSG_LEN(sizeof(int)))
        memcpy(&fd, CMSG_DATA(cm), sizeof fd);
    if (fd < 0) {
        st = DUET_FAIL(DUET_ERR_SYSTEM, CUDA, "GPU heap: rank %d received no handle from process %d%s%s", me,
                       (int)cred.pid, got < 0 ? ": " : "", got < 0 ? strerror(errno) : "");
    } else if (who < 0 || who >= n || who == me || !local[who] || pids[who] != cred.pid || fds[who] >= 0) {
        st = DUET_FAIL(DUET_ERR_SYSTEM, CUDA, "GPU heap: rank %d refused a handle from process %d claiming "
                       "rank %d (not that rank's process, or a duplicate)", me, (int)cred.pid, (int)who);
        close(fd);
    } else {
        fds[who] = fd;
    }
out:
    close(s);
    return st;
}

duet_status_t duet_cuda_fd_exchange(duet_boot_t *b, const char *name, const uint8_t *local,
                                    const int32_t *pids, int my_fd, int *fds, double timeout_s)
{
    int me = b->rank, n = b->nranks, peers = 0;
    for (int r = 0; r < n; r++) {
        fds[r] = -1;
        peers += r != me && local[r];
    }
    double deadline = duet_time_s() + timeout_s;
    duet_status_t st = DUET_OK;
    int lsn = -1;
    if (peers) {
        lsn = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_un a;
        socklen_t len = sock_addr(&a, name, me);
        if (lsn < 0 || bind(lsn, (struct sockaddr *)&a, len) != 0 || listen(lsn, peers + 1) != 0)
            st = DUET_FAIL(DUET_ERR_SYSTEM, CUDA, "GPU heap: rank %d cannot listen on its Unix socket "
                           "@duet-cuda-%s-%d: %s", me, name, me, strerror(errno));
    }
    /* everyone listens (or everyone learns that someone cannot) before anyone connects */
    int32_t mine = st, *all = malloc(sizeof *all * (size_t)n);
    if (!all) st = DUET_FAIL(DUET_ERR_NO_MEMORY, CUDA, "out of host memory");
    duet_status_t xst = all ? duet_boot_allgather(b, &mine, all, sizeof mine) : DUET_OK;
    if (!st) st = xst;
    for (int r = 0; !st && r < n; r++)
        if (all[r] != DUET_OK)
            st = DUET_FAIL(DUET_ERR_SYSTEM, CUDA, "GPU heap: rank %d could not open its socket", r);
    for (int r = 0; !st && r < n; r++)
        if (r != me && local[r]) st = send_fd(name, me, r, my_fd);
    for (int k = 0; !st && k < peers; k++) st = recv_fd(lsn, me, n, local, pids, fds, deadline);
    if (lsn >= 0) close(lsn);
    /* all or nothing: a rank that failed tells the others */
    mine = st;
    xst = all ? duet_boot_allgather(b, &mine, all, sizeof mine) : DUET_OK;
    if (!st) st = xst;
    for (int r = 0; !st && r < n; r++)
        if (all[r] != DUET_OK)
            st = DUET_FAIL(DUET_ERR_CUDA, CUDA, "GPU heap: rank %d could not exchange its handles", r);
    free(all);
    if (st)
        for (int r = 0; r < n; r++)
            if (fds[r] >= 0) {
                close(fds[r]);
                fds[r] = -1;
            }
    return st;
}
