/*
 * Rendezvous and the out-of-band collectives over the bootstrap star (see duet_boot.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>
#include "boot/duet_boot.h"
#include "boot/duet_boot_tcp.h"

#define DUET_BOOT_ID_MAGIC 0x3130444954455544ull /* "DUETID01" */

_Static_assert(sizeof(duet_boot_id_t) <= sizeof(duet_unique_id_t), "unique id too small");

typedef struct {
    uint8_t secret[DUET_SECRET_BYTES];
    int32_t rank, nranks;
} hello_t;

typedef struct {
    int32_t status;
    char msg[236];
} welcome_t;

/* ---- process-local registry: listening sockets of ids this process made, by secret */
#define REGISTRY_SLOTS 64
static struct {
    uint8_t secret[DUET_SECRET_BYTES];
    int fd;
} registry[REGISTRY_SLOTS];
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;

static int secret_equal(const uint8_t *a, const uint8_t *b)
{
    uint8_t diff = 0; /* constant time: no early exit */
    for (int i = 0; i < DUET_SECRET_BYTES; i++) diff |= (uint8_t)(a[i] ^ b[i]);
    return diff == 0;
}

static duet_status_t registry_put(const uint8_t *secret, int fd)
{
    pthread_mutex_lock(&registry_lock);
    int slot = -1;
    for (int i = 0; i < REGISTRY_SLOTS; i++)
        if (registry[i].fd <= 0) { slot = i; break; }
    if (slot >= 0) {
        memcpy(registry[slot].secret, secret, DUET_SECRET_BYTES);
        registry[slot].fd = fd + 1; /* stored +1 so a zeroed slot is free */
    }
    pthread_mutex_unlock(&registry_lock);
    if (slot < 0)
        return DUET_FAIL(DUET_ERR_NO_MEMORY, BOOT, "bootstrap: more than %d unique ids pending",
                         REGISTRY_SLOTS);
    return DUET_OK;
}

static int registry_take(const uint8_t *secret)
{
    int fd = -1;
    pthread_mutex_lock(&registry_lock);
    for (int i = 0; i < REGISTRY_SLOTS; i++)
        if (registry[i].fd > 0 && secret_equal(registry[i].secret, secret)) {
            fd = registry[i].fd - 1;
            registry[i].fd = 0;
            break;
        }
    pthread_mutex_unlock(&registry_lock);
    return fd;
}

void duet_hex_encode(const uint8_t *in, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * n] = '\0';
}

int duet_hex_decode(const char *in, uint8_t *out, size_t n)
{
    if (strlen(in) != 2 * n) return -1;
    for (size_t i = 0; i < 2 * n; i++) {
        char c = in[i];
        int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (v < 0) return -1;
        if (i % 2 == 0) out[i / 2] = (uint8_t)(v << 4);
        else out[i / 2] |= (uint8_t)v;
    }
    return 0;
}

/* The address other ranks should use to reach this host. */
static uint32_t advertised_addr(void)
{
    const char *ifaddr = duet_cfg()->bootstrap_ifaddr;
    struct in_addr ia;
    if (ifaddr[0] && inet_aton(ifaddr, &ia)) return ia.s_addr;
    char host[256];
    uint32_t addr = htonl(INADDR_LOOPBACK);
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res = NULL;
    if (gethostname(host, sizeof host) == 0 && getaddrinfo(host, NULL, &hints, &res) == 0) {
        for (struct addrinfo *r = res; r; r = r->ai_next) {
            uint32_t a = ((struct sockaddr_in *)r->ai_addr)->sin_addr.s_addr;
            if ((ntohl(a) >> 24) != 127) { addr = a; break; }
        }
        freeaddrinfo(res);
    }
    return addr;
}

duet_status_t duet_boot_id_create(duet_unique_id_t *uid) { return duet_boot_id_create_secret(uid, NULL); }

duet_status_t duet_boot_id_create_secret(duet_unique_id_t *uid, const uint8_t secret[DUET_SECRET_BYTES])
{
    if (!uid) return DUET_FAIL(DUET_ERR_INVALID_ARG, BOOT, "duet_get_unique_id: id is NULL");
    memset(uid, 0, sizeof *uid);
    duet_boot_id_t *id = (duet_boot_id_t *)uid;
    id->magic = DUET_BOOT_ID_MAGIC;
    if (secret)
        memcpy(id->secret, secret, sizeof id->secret);
    else if (getrandom(id->secret, sizeof id->secret, 0) != (ssize_t)sizeof id->secret)
        return DUET_FAIL(DUET_ERR_SYSTEM, BOOT, "bootstrap: getrandom: %s", strerror(errno));
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return DUET_FAIL(DUET_ERR_SYSTEM, BOOT, "bootstrap: socket(): %s", strerror(errno));
    uint32_t adv = advertised_addr();
    const char *ifaddr = duet_cfg()->bootstrap_ifaddr;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0,
                             .sin_addr = {ifaddr[0] ? adv : htonl(INADDR_ANY)}};
    socklen_t sl = sizeof sa;
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) || listen(fd, 1024) ||
        getsockname(fd, (struct sockaddr *)&sa, &sl)) {
        int e = errno;
        close(fd);
        return DUET_FAIL(DUET_ERR_SYSTEM, BOOT, "bootstrap: cannot listen: %s", strerror(e));
    }
    id->addr_be = adv;
    id->port_be = sa.sin_port;
    id->creator_pid = (int32_t)getpid();
    duet_status_t st = registry_put(id->secret, fd);
    if (st) close(fd);
    return st;
}

duet_status_t duet_boot_id_from(duet_unique_id_t *uid, const char *host_port,
                                const uint8_t secret[DUET_SECRET_BYTES], int listen_fd)
{
    memset(uid, 0, sizeof *uid);
    duet_boot_id_t *id = (duet_boot_id_t *)uid;
    char host[256];
    const char *colon = strrchr(host_port, ':');
    long port = colon ? strtol(colon + 1, NULL, 10) : 0;
    if (!colon || (size_t)(colon - host_port) >= sizeof host || port <= 0 || port > 65535)
        return DUET_FAIL(DUET_ERR_INVALID_ARG, BOOT, "bootstrap: bad address \"%s\" (want host:port)",
                         host_port);
    memcpy(host, host_port, (size_t)(colon - host_port));
    host[colon - host_port] = '\0';
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res = NULL;
    int rc = getaddrinfo(host, NULL, &hints, &res);
    if (rc != 0 || !res)
        return DUET_FAIL(DUET_ERR_INVALID_ARG, BOOT, "bootstrap: cannot resolve \"%s\": %s", host,
                         gai_strerror(rc));
    id->addr_be = ((struct sockaddr_in *)res->ai_addr)->sin_addr.s_addr;
    freeaddrinfo(res);
    id->magic = DUET_BOOT_ID_MAGIC;
    id->port_be = htons((uint16_t)port);
    memcpy(id->secret, secret, DUET_SECRET_BYTES);
    id->creator_pid = (int32_t)getpid();
    if (listen_fd >= 0) return registry_put(id->secret, listen_fd);
    return DUET_OK;
}

/* ---- joining */

static duet_status_t send_welcome(int fd, duet_status_t status, const char *msg, uint64_t deadline)
{
    welcome_t w = {.status = status};
    snprintf(w.msg, sizeof w.msg, "%.235s", msg);
    return duet_msg_send(fd, DUET_MSG_WELCOME, 0, &w, sizeof w, deadline, "a joining rank");
}

/* With `gone`: waits for the next connection in 20 ms slices, and returns the first rank
 * not joined yet that gone() says is dead (-1: a connection is there, or the deadline came). */
static int wait_or_gone(const duet_boot_t *b, int listen_fd, uint64_t deadline, int (*gone)(void *, int), void *arg)
{
    for (;;) {
        struct pollfd p = {listen_fd, POLLIN, 0};
        if (poll(&p, 1, 20) > 0 || duet_time_ns() >= deadline) return -1;
        for (int r = 1; r < b->nranks; r++)
            if (b->rank_fds[r] < 0 && gone(arg, r)) return r;
    }
}

static duet_status_t root_join(duet_boot_t *b, int listen_fd, uint64_t deadline, int (*gone)(void *, int),
                               void *arg)
{
    int joined = 1; /* the root itself */
    char refused[512] = "";
    duet_status_t st = DUET_OK;
    int dead = -1;
    while (joined < b->nranks) {
        int fd;
        char peer[64];
        if (gone && (dead = wait_or_gone(b, listen_fd, deadline, gone, arg)) >= 0) {
            st = DUET_ERR_PEER_FAILED;
            break;
        }
        if ((st = duet_tcp_accept(listen_fd, deadline, &fd, peer, sizeof peer)) != DUET_OK) break;
        /* a silent connection may hold the root up for at most 5 s */
        uint64_t hello_deadline = duet_time_ns() + 5000000000ull;
        hello_t h;
        if (duet_msg_recv(fd, DUET_MSG_HELLO, 0, &h, sizeof h,
                          hello_deadline < deadline ? hello_deadline : deadline, peer) != DUET_OK) {
            DUET_LOG(WARN, BOOT, "bootstrap: dropped a connection from %s that sent no valid hello", peer);
            close(fd);
            continue;
        }
        char why[200] = "";
        if (!secret_equal(h.secret, b->secret)) {
            DUET_LOG(WARN, BOOT, "bootstrap: refused a connection from %s: wrong job secret", peer);
            close(fd); /* says nothing to a stranger */
            continue;
        }
        if (h.nranks != b->nranks)
            snprintf(why, sizeof why, "rank %d said the world has %d ranks, the root says %d",
                     h.rank, h.nranks, b->nranks);
        else if (h.rank <= 0 || h.rank >= b->nranks)
            snprintf(why, sizeof why, "rank %d is out of range [1, %d)", h.rank, b->nranks);
        else if (b->rank_fds[h.rank] >= 0)
            snprintf(why, sizeof why, "rank %d joined twice (duplicate rank)", h.rank);
        if (why[0]) {
            DUET_LOG(WARN, BOOT, "bootstrap: refused %s: %s", peer, why);
            send_welcome(fd, DUET_ERR_INVALID_ARG, why, hello_deadline);
            close(fd);
            if (strlen(refused) + strlen(why) + 3 < sizeof refused) {
                strcat(refused, "; ");
                strcat(refused, why);
            }
            continue;
        }
        b->rank_fds[h.rank] = fd;
        joined++;
    }
    if (st == DUET_OK) {
        for (int r = 1; r < b->nranks && st == DUET_OK; r++)
            st = send_welcome(b->rank_fds[r], DUET_OK, "", deadline);
        return st;
    }
    /* say who never came, to the log, the caller, and the ranks that did */
    char missing[256] = "";
    for (int r = 1; r < b->nranks; r++)
        if (b->rank_fds[r] < 0 && strlen(missing) < sizeof missing - 12)
            snprintf(missing + strlen(missing), sizeof missing - strlen(missing), " %d", r);
    char msg[900];
    if (dead >= 0)
        snprintf(msg, sizeof msg, "bootstrap: rank %d died before joining (%d of %d ranks had joined; missing:%s)",
                 dead, joined, b->nranks, missing);
    else
        snprintf(msg, sizeof msg, "bootstrap: %d of %d ranks joined before the timeout; missing:%s%s",
                 joined, b->nranks, missing, refused);
    for (int r = 1; r < b->nranks; r++)
        if (b->rank_fds[r] >= 0) send_welcome(b->rank_fds[r], st, msg, duet_time_ns() + 1000000000ull);
    return DUET_FAIL(st, BOOT, "%s", msg);
}

static duet_status_t rank_join(duet_boot_t *b, const duet_boot_id_t *id, uint64_t deadline)
{
    duet_status_t st = duet_tcp_connect(id->addr_be, id->port_be, deadline, &b->root_fd);
    if (st) return st;
    hello_t h = {.rank = b->rank, .nranks = b->nranks};
    memcpy(h.secret, b->secret, sizeof h.secret);
    if ((st = duet_msg_send(b->root_fd, DUET_MSG_HELLO, 0, &h, sizeof h, deadline, "the root")))
        return st;
    /* the root's verdict may come right at its own deadline (naming who never came):
     * listen a little longer than the root waits */
    welcome_t w;
    uint64_t verdict_deadline = deadline == UINT64_MAX ? deadline : deadline + 2000000000ull;
    if ((st = duet_msg_recv(b->root_fd, DUET_MSG_WELCOME, 0, &w, sizeof w, verdict_deadline, "the root")))
        return st;
    w.msg[sizeof w.msg - 1] = '\0';
    if (w.status != DUET_OK)
        return DUET_FAIL((duet_status_t)w.status, BOOT, "bootstrap: the root refused rank %d: %s",
                         b->rank, w.msg);
    return DUET_OK;
}

duet_status_t duet_boot_join(duet_boot_t *b, const duet_unique_id_t *uid, int rank, int nranks,
                             double timeout_s)
{
    return duet_boot_join_watched(b, uid, rank, nranks, timeout_s, NULL, NULL);
}

duet_status_t duet_boot_join_watched(duet_boot_t *b, const duet_unique_id_t *uid, int rank, int nranks,
                                     double timeout_s, int (*gone)(void *arg, int rank), void *arg)
{
    const duet_boot_id_t *id = (const duet_boot_id_t *)uid;
    memset(b, 0, sizeof *b);
    b->root_fd = -1;
    b->rank = rank;
    b->nranks = nranks;
    b->timeout_s = timeout_s;
    if (id->magic != DUET_BOOT_ID_MAGIC)
        return DUET_FAIL(DUET_ERR_INVALID_ARG, BOOT, "bootstrap: the unique id is not valid "
                         "(not made by duet_get_unique_id, or corrupted)");
    if (nranks < 1 || rank < 0 || rank >= nranks)
        return DUET_FAIL(DUET_ERR_INVALID_ARG, BOOT, "bootstrap: rank %d is not in [0, %d)", rank, nranks);
    memcpy(b->secret, id->secret, sizeof b->secret);
    uint64_t deadline = duet_deadline_after(timeout_s);
    duet_status_t st;
    if (rank == 0) {
        int listen_fd = registry_take(id->secret);
        if (listen_fd < 0)
            return DUET_FAIL(DUET_ERR_INVALID_ARG, BOOT,
                             "bootstrap: rank 0 must be the process that created the unique id "
                             "(pid %d); this is pid %d", id->creator_pid, (int)getpid());
        b->rank_fds = malloc(sizeof(int) * (size_t)nranks);
        if (!b->rank_fds) {
            close(listen_fd);
            return DUET_FAIL(DUET_ERR_NO_MEMORY, BOOT, "bootstrap: out of memory");
        }
        for (int r = 0; r < nranks; r++) b->rank_fds[r] = -1;
        st = root_join(b, listen_fd, deadline, gone, arg);
        close(listen_fd);
    } else {
        st = rank_join(b, id, deadline);
    }
    if (st) duet_boot_close(b);
    else DUET_LOG(INFO, BOOT, "bootstrap: rank %d of %d joined", rank, nranks);
    return st;
}

/* ---- out-of-band collectives */

static uint64_t op_deadline(void) { return duet_deadline_after(duet_cfg()->wait_timeout); }

static const char *rank_name(int r, char *buf, size_t len)
{
    snprintf(buf, len, "rank %d", r);
    return buf;
}

/* Waits of the exchanges below watch rank r's death (b->gone). */
static void watch(duet_boot_t *b, int r) { duet_tcp_watch_peer(b->gone, b->gone_arg, r); }

static duet_status_t allgather(duet_boot_t *b, const void *mine, void *all, size_t bytes)
{
    uint32_t seq = ++b->seq;
    uint64_t deadline = op_deadline();
    duet_status_t st = DUET_OK;
    char who[32];
    if (b->rank != 0) {
        watch(b, 0);
        if ((st = duet_msg_send(b->root_fd, DUET_MSG_GATHER, seq, mine, bytes, deadline, "the root")))
            return st;
        return duet_msg_recv(b->root_fd, DUET_MSG_GATHERED, seq, all, bytes * (size_t)b->nranks,
                             deadline, "the root");
    }
    if (bytes) memcpy(all, mine, bytes);
    /* a rank that died is passed over (its part zeroed) so the live ones still get an answer;
     * the call then fails with the first such death */
    duet_status_t dead = DUET_OK;
    for (int r = 1; r < b->nranks && st == DUET_OK; r++) {
        watch(b, r);
        st = duet_msg_recv(b->rank_fds[r], DUET_MSG_GATHER, seq, (char *)all + bytes * (size_t)r,
                           bytes, deadline, rank_name(r, who, sizeof who));
        if (st == DUET_ERR_PEER_FAILED && b->gone && b->gone(b->gone_arg, r)) {
            memset((char *)all + bytes * (size_t)r, 0, bytes);
            if (!dead) dead = st;
            st = DUET_OK;
        }
    }
    for (int r = 1; r < b->nranks && st == DUET_OK; r++) {
        if (b->gone && b->gone(b->gone_arg, r)) continue;
        watch(b, r);
        st = duet_msg_send(b->rank_fds[r], DUET_MSG_GATHERED, seq, all, bytes * (size_t)b->nranks,
                           deadline, rank_name(r, who, sizeof who));
    }
    return st ? st : dead ? DUET_FAIL(dead, BOOT, "bootstrap: a rank died during an exchange") : DUET_OK;
}

static duet_status_t bcast(duet_boot_t *b, void *buf, size_t bytes)
{
    uint32_t seq = ++b->seq;
    uint64_t deadline = op_deadline();
    char who[32];
    if (b->rank != 0) {
        watch(b, 0);
        return duet_msg_recv(b->root_fd, DUET_MSG_BCAST, seq, buf, bytes, deadline, "the root");
    }
    duet_status_t st = DUET_OK;
    for (int r = 1; r < b->nranks && st == DUET_OK; r++) {
        if (b->gone && b->gone(b->gone_arg, r)) continue;
        watch(b, r);
        st = duet_msg_send(b->rank_fds[r], DUET_MSG_BCAST, seq, buf, bytes, deadline,
                           rank_name(r, who, sizeof who));
    }
    return st;
}

/* The exchanges watch b->abort (duet_tcp_watch) while they wait. */
duet_status_t duet_boot_allgather(duet_boot_t *b, const void *mine, void *all, size_t bytes)
{
    const _Atomic int *old = duet_tcp_watch(b->abort);
    duet_status_t st = allgather(b, mine, all, bytes);
    duet_tcp_watch(old);
    duet_tcp_watch_peer(NULL, NULL, -1);
    return st;
}

duet_status_t duet_boot_bcast(duet_boot_t *b, void *buf, size_t bytes)
{
    const _Atomic int *old = duet_tcp_watch(b->abort);
    duet_status_t st = bcast(b, buf, bytes);
    duet_tcp_watch(old);
    duet_tcp_watch_peer(NULL, NULL, -1);
    return st;
}

duet_status_t duet_boot_barrier(duet_boot_t *b)
{
    char one = 1, *all = malloc((size_t)b->nranks);
    if (!all) return DUET_FAIL(DUET_ERR_NO_MEMORY, BOOT, "bootstrap: out of memory");
    duet_status_t st = duet_boot_allgather(b, &one, all, 1);
    free(all);
    return st;
}

void duet_boot_close(duet_boot_t *b)
{
    if (b->root_fd >= 0) close(b->root_fd);
    b->root_fd = -1;
    if (b->rank_fds) {
        for (int r = 1; r < b->nranks; r++)
            if (b->rank_fds[r] >= 0) close(b->rank_fds[r]);
        free(b->rank_fds);
        b->rank_fds = NULL;
    }
}
