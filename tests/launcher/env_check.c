/*
 * env_check — run as every rank by the launcher.env tests:
 *
 *     duetrun -n N [-x ...] env_check N [VAR=VAL]...
 *
 * Checks what duetrun promises each rank, and exits non-zero (saying why) on a mismatch:
 *   - DUET_RANK in [0, N), DUET_NRANKS = N, DUET_LOCAL_RANK = DUET_RANK, DUET_LOCAL_SIZE = N;
 *   - DUET_BOOT_ADDR = 127.0.0.1:<port>, DUET_JOB_SECRET = 32 lowercase hex digits;
 *   - each VAR=VAL argument holds in the environment (what -x set);
 *   - rank 0 holds exactly one listening socket, DUET_BOOT_LISTEN_FD, bound to DUET_BOOT_ADDR;
 *     the other ranks hold none and have no DUET_BOOT_LISTEN_FD;
 *   - the rendezvous works: every other rank connects to DUET_BOOT_ADDR and sends its rank
 *     and secret; rank 0 accepts them on the inherited socket and checks that each rank
 *     comes once with rank 0's own secret. Every wait is bounded by TIMEOUT_MS.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "duet_test.h"

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#define TIMEOUT_MS 20000
#define MSG_LEN    (4 + 32) /* rank (host order) + secret */

static int my_rank = -1;

static const char *need(const char *name)
{
    const char *v = getenv(name);
    if (!v) FATAL("%s is not set", name);
    return v;
}

static long need_int(const char *name)
{
    const char *v = need(name);
    char *end;
    long n = strtol(v, &end, 10);
    if (end == v || *end) FATAL("%s=\"%s\" is not a number", name, v);
    return n;
}

static void check_ranks(long nranks)
{
    my_rank = (int)need_int("DUET_RANK");
    dt_set_rank(my_rank, (int)nranks);
    if (my_rank < 0 || my_rank >= nranks) FATAL("DUET_RANK=%d out of range", my_rank);
    if (need_int("DUET_NRANKS") != nranks) FATAL("DUET_NRANKS != %ld", nranks);
    if (need_int("DUET_LOCAL_RANK") != my_rank) FATAL("DUET_LOCAL_RANK != DUET_RANK");
    if (need_int("DUET_LOCAL_SIZE") != nranks) FATAL("DUET_LOCAL_SIZE != %ld", nranks);
}

static struct sockaddr_in check_addr(void)
{
    const char *addr = need("DUET_BOOT_ADDR");
    unsigned port;
    char tail;
    if (strncmp(addr, "127.0.0.1:", 10) != 0 || sscanf(addr + 10, "%u%c", &port, &tail) != 1 || port == 0 ||
        port > 65535)
        FATAL("DUET_BOOT_ADDR=\"%s\" is not 127.0.0.1:<port>", addr);
    return (struct sockaddr_in){.sin_family = AF_INET,
                                .sin_port = htons((uint16_t)port),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
}

static const char *check_secret(void)
{
    const char *s = need("DUET_JOB_SECRET");
    if (strlen(s) != 32 || strspn(s, "0123456789abcdef") != 32)
        FATAL("DUET_JOB_SECRET=\"%s\" is not 32 lowercase hex digits", s);
    return s;
}

static void check_exports(int argc, char **argv)
{
    for (int i = 2; i < argc; i++) {
        const char *eq = strchr(argv[i], '=');
        if (!eq) FATAL("bad expectation \"%s\"", argv[i]);
        char *name = strndup(argv[i], (size_t)(eq - argv[i]));
        const char *v = getenv(name);
        if (!v || strcmp(v, eq + 1) != 0) FATAL("%s=\"%s\", want \"%s\"", name, v ? v : "(unset)", eq + 1);
        free(name);
    }
}

/* The one listening socket among the open fds, -1 if none; fails if there are several. */
static int find_listener(void)
{
    DIR *dir = opendir("/proc/self/fd");
    if (!dir) FATAL("opendir /proc/self/fd: %s", strerror(errno));
    int found = -1;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        int fd = atoi(e->d_name), on = 0;
        socklen_t len = sizeof on;
        struct stat st;
        if (e->d_name[0] == '.' || fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
        if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) != 0 || !on) continue;
        if (found >= 0) FATAL("two listening sockets: fds %d and %d", found, fd);
        found = fd;
    }
    closedir(dir);
    return found;
}

static void check_listener(const struct sockaddr_in *addr)
{
    int fd = find_listener();
    const char *env = getenv("DUET_BOOT_LISTEN_FD");
    if (my_rank != 0) {
        if (env) FATAL("DUET_BOOT_LISTEN_FD=%s is set on a rank other than 0", env);
        if (fd >= 0) FATAL("inherited a listening socket (fd %d)", fd);
        return;
    }
    if (need_int("DUET_BOOT_LISTEN_FD") != fd)
        FATAL("DUET_BOOT_LISTEN_FD=%s but the listening fd is %d", env, fd);
    struct sockaddr_in bound;
    socklen_t len = sizeof bound;
    if (getsockname(fd, (struct sockaddr *)&bound, &len) != 0 || bound.sin_port != addr->sin_port ||
        bound.sin_addr.s_addr != addr->sin_addr.s_addr)
        FATAL("the listening socket is not bound to DUET_BOOT_ADDR");
}

static void wait_fd(int fd, short events, const char *what)
{
    struct pollfd p = {.fd = fd, .events = events};
    if (poll(&p, 1, TIMEOUT_MS) != 1) FATAL("timed out waiting to %s", what);
}

static void recv_all(int fd, char *buf, size_t n)
{
    while (n > 0) {
        wait_fd(fd, POLLIN, "receive a peer's hello");
        ssize_t r = read(fd, buf, n);
        if (r <= 0) FATAL("short hello from a peer");
        buf += r, n -= (size_t)r;
    }
}

static void rendezvous_root(long nranks, const char *secret)
{
    int lfd = atoi(getenv("DUET_BOOT_LISTEN_FD"));
    char *seen = calloc((size_t)nranks, 1);
    for (long i = 1; i < nranks; i++) {
        wait_fd(lfd, POLLIN, "accept a peer");
        int c = accept(lfd, NULL, NULL);
        if (c < 0) FATAL("accept: %s", strerror(errno));
        char msg[MSG_LEN];
        int peer;
        recv_all(c, msg, sizeof msg);
        memcpy(&peer, msg, 4);
        if (peer < 1 || peer >= nranks || seen[peer]) FATAL("unexpected hello from rank %d", peer);
        if (memcmp(msg + 4, secret, 32) != 0) FATAL("rank %d has another secret", peer);
        seen[peer] = 1;
        close(c);
    }
    free(seen);
}

static void rendezvous_peer(const struct sockaddr_in *addr, const char *secret)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (const struct sockaddr *)addr, sizeof *addr) != 0)
        FATAL("connect to DUET_BOOT_ADDR: %s", strerror(errno));
    char msg[MSG_LEN];
    memcpy(msg, &my_rank, 4);
    memcpy(msg + 4, secret, 32);
    if (write(fd, msg, sizeof msg) != (ssize_t)sizeof msg) FATAL("send hello: %s", strerror(errno));
    close(fd);
}

int main(int argc, char **argv)
{
    if (argc < 2) FATAL("usage: env_check NRANKS [VAR=VAL]...");
    long nranks = atol(argv[1]);
    check_ranks(nranks);
    struct sockaddr_in addr = check_addr();
    const char *secret = check_secret();
    check_exports(argc, argv);
    check_listener(&addr);
    if (my_rank == 0) rendezvous_root(nranks, secret);
    else rendezvous_peer(&addr, secret);
    return 0;
}
