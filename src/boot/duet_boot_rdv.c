/*
 * Unique ids and joining the rendezvous (see duet_boot.h for the handshake).
 *
 * The root keeps every connection that has not finished its handshake in one poll set:
 *
 *   listener --accept--> pending[] --HELLO: answer PROOF--> --JOIN: check proof--> rank_fds[r]
 *                           |  each has its own deadline (DUET_BOOTSTRAP_HANDSHAKE_TIMEOUT);
 *                           +-- garbage, a wrong proof, an idle or closed link: dropped
 *
 * so a silent or hostile connection costs the others nothing. Input is read as it comes into
 * a fixed buffer per connection; a header with the wrong magic, kind or length is dropped
 * before its payload is read.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>
#include "boot/duet_boot.h"
#include "boot/duet_boot_tcp.h"

#define DUET_BOOT_ID_MAGIC 0x3130444954455544ull /* "DUETID01" */
#define HANDSHAKE_VERSION 2u
#define NONCE_BYTES 16
#define MAX_PENDING 4096 /* connections in their handshake at once; past it the oldest is dropped */
#define LOUD_DROPS 3     /* dropped connections logged at WARN per join; the rest at INFO */

_Static_assert(sizeof(duet_boot_id_t) <= sizeof(duet_unique_id_t), "unique id too small");

typedef struct {
    uint32_t version, pad;
    uint8_t nonce[NONCE_BYTES];
} hello_t;

typedef struct {
    uint8_t nonce[NONCE_BYTES];
    uint8_t mac[DUET_SHA256_BYTES];
} proof_t;

typedef struct {
    int32_t rank, nranks;
    uint8_t mac[DUET_SHA256_BYTES];
} join_t;

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
        if (registry[i].fd > 0 && duet_bytes_equal_ct(registry[i].secret, secret, DUET_SECRET_BYTES)) {
            fd = registry[i].fd - 1;
            registry[i].fd = 0;
            break;
        }
    pthread_mutex_unlock(&registry_lock);
    return fd;
}

void duet_boot_id_forget(const duet_unique_id_t *uid)
{
    int fd = registry_take(((const duet_boot_id_t *)(const void *)uid)->secret);
    if (fd >= 0) close(fd);
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

static duet_status_t random_bytes(void *buf, size_t len)
{
    ssize_t n;
    while ((n = getrandom(buf, len, 0)) < 0 && errno == EINTR) {}
    if (n != (ssize_t)len) return DUET_FAIL(DUET_ERR_SYSTEM, BOOT, "bootstrap: getrandom: %s", strerror(errno));
    return DUET_OK;
}

void duet_boot_derive_secret(const uint8_t parent[DUET_SECRET_BYTES], const char *label, uint64_t a, uint64_t b,
                             uint8_t out[DUET_SECRET_BYTES])
{
    uint8_t mac[DUET_SHA256_BYTES];
    duet_hash_part_t parts[] = {{label, strlen(label)}, {&a, sizeof a}, {&b, sizeof b}};
    duet_hmac_sha256(parent, DUET_SECRET_BYTES, parts, 3, mac);
    memcpy(out, mac, DUET_SECRET_BYTES);
    memset(mac, 0, sizeof mac);
}

duet_status_t duet_boot_id_create(duet_unique_id_t *uid)
{
    return duet_boot_id_create_secret(uid, NULL, DUET_BOOT_ASK_LAUNCHER);
}

duet_status_t duet_boot_id_create_secret(duet_unique_id_t *uid, const uint8_t secret[DUET_SECRET_BYTES],
                                         duet_boot_scope_t scope)
{
    if (!uid) return DUET_FAIL(DUET_ERR_INVALID_ARG, BOOT, "duet_get_unique_id: id is NULL");
    memset(uid, 0, sizeof *uid);
    duet_boot_id_t *id = (duet_boot_id_t *)uid;
    id->magic = DUET_BOOT_ID_MAGIC;
    duet_status_t st = DUET_OK;
    if (secret) memcpy(id->secret, secret, sizeof id->secret);
    else st = random_bytes(id->secret, sizeof id->secret);
    uint32_t addr;
    char why[256];
    int fd = -1;
    if (st == DUET_OK) st = duet_boot_bind_addr(scope, &addr, why, sizeof why);
    if (st == DUET_OK) st = duet_tcp_listen(addr, 0, 0, &fd);
    struct sockaddr_in sa;
    socklen_t sl = sizeof sa;
    if (st == DUET_OK && getsockname(fd, (struct sockaddr *)&sa, &sl) != 0)
        st = DUET_FAIL(DUET_ERR_SYSTEM, BOOT, "bootstrap: getsockname: %s", strerror(errno));
    if (st == DUET_OK) {
        id->addr_be = sa.sin_addr.s_addr; /* what is bound is what is advertised */
        id->port_be = sa.sin_port;
        id->creator_pid = (int32_t)getpid();
        st = registry_put(id->secret, fd);
        DUET_LOG(INFO, BOOT, "bootstrap: listening on %s:%u (%s)", inet_ntoa(sa.sin_addr), ntohs(sa.sin_port), why);
    }
    if (st && fd >= 0) close(fd);
    if (st) memset(uid, 0, sizeof *uid);
    return st;
}
void duet_boot_id_addr(const duet_unique_id_t *uid, duet_boot_addr_t *out)
{
    const duet_boot_id_t *id = (const duet_boot_id_t *)uid;
    /* the root listens before anyone learns its address: a refusal then means that it is gone */
    *out = (duet_boot_addr_t){id->addr_be, id->port_be, (uint16_t)(id->flags | DUET_BOOT_ID_LISTENING),
                              id->creator_pid};
}

void duet_boot_id_rebuild(duet_unique_id_t *uid, const duet_boot_addr_t *a, const uint8_t secret[DUET_SECRET_BYTES])
{
    memset(uid, 0, sizeof *uid);
    duet_boot_id_t *id = (duet_boot_id_t *)uid;
    id->magic = DUET_BOOT_ID_MAGIC;
    memcpy(id->secret, secret, DUET_SECRET_BYTES);
    id->addr_be = a->addr_be;
    id->port_be = a->port_be;
    id->flags = a->flags;
    id->creator_pid = a->creator_pid;
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
    if (listen_fd < 0) return DUET_OK;
    duet_tcp_note_bound(listen_fd);
    return registry_put(id->secret, listen_fd);
}


/* ---- the handshake's proofs */

static void mac_root(const uint8_t *k, const uint8_t *nonce_r, const uint8_t *nonce_s, uint8_t out[DUET_SHA256_BYTES])
{
    duet_hash_part_t parts[] = {{"duet-root", 9}, {nonce_r, NONCE_BYTES}, {nonce_s, NONCE_BYTES}};
    duet_hmac_sha256(k, DUET_SECRET_BYTES, parts, 3, out);
}

static void mac_rank(const uint8_t *k, const uint8_t *nonce_r, const uint8_t *nonce_s, int32_t rank, int32_t nranks,
                     uint8_t out[DUET_SHA256_BYTES])
{
    duet_hash_part_t parts[] = {{"duet-rank", 9}, {nonce_r, NONCE_BYTES}, {nonce_s, NONCE_BYTES},
                                {&rank, sizeof rank}, {&nranks, sizeof nranks}};
    duet_hmac_sha256(k, DUET_SECRET_BYTES, parts, 5, out);
}

/* ---- the root: every pending connection in one poll set */

typedef struct {
    int fd;
    int state; /* 0: awaits HELLO; 1: PROOF sent, awaits JOIN */
    uint64_t deadline;
    size_t have; /* bytes of buf received */
    uint8_t buf[sizeof(duet_msg_hdr_t) + sizeof(join_t)];
    uint8_t nonce_r[NONCE_BYTES], nonce_s[NONCE_BYTES];
    char peer[64];
} pending_t;

typedef struct {
    duet_boot_t *b;
    pending_t *p;
    int n;
    int joined;
    int drops;         /* connections dropped so far */
    char refused[512]; /* why authenticated ranks were refused */
} root_t;

static duet_status_t send_welcome(int fd, duet_status_t status, const char *msg, uint64_t deadline)
{
    welcome_t w = {.status = status};
    snprintf(w.msg, sizeof w.msg, "%.235s", msg);
    return duet_msg_send(fd, DUET_MSG_WELCOME, 0, &w, sizeof w, deadline, "a joining rank");
}

/* Closes pending connection i (a stranger learns nothing: no answer). */
static void drop(root_t *R, int i, const char *why)
{
    pending_t *c = &R->p[i];
    if (R->drops++ < LOUD_DROPS)
        DUET_LOG(WARN, BOOT, "bootstrap: refused a connection from %s: it did not prove the job secret (%s)",
                 c->peer, why);
    else
        DUET_LOG(INFO, BOOT, "bootstrap: refused a connection from %s: it did not prove the job secret (%s)",
                 c->peer, why);
    if (c->fd >= 0) close(c->fd);
    R->p[i] = R->p[--R->n];
}

/* The connection leaves the pending set, its fd kept (a joined rank) or closed. */
static void retire(root_t *R, int i, int keep_fd)
{
    if (!keep_fd) close(R->p[i].fd);
    R->p[i] = R->p[--R->n];
}

/* A complete message is in c->buf: answer a HELLO, judge a JOIN. Returns 1 when the
 * connection left the pending set. */
static int serve_message(root_t *R, int i)
{
    pending_t *c = &R->p[i];
    duet_boot_t *b = R->b;
    const uint8_t *body = c->buf + sizeof(duet_msg_hdr_t);
    if (c->state == 0) {
        hello_t h;
        memcpy(&h, body, sizeof h);
        if (h.version != HANDSHAKE_VERSION) {
            char why[64]; /* an older rank's HELLO starts with its secret: never print that */
            if (h.version < 256) snprintf(why, sizeof why, "it speaks bootstrap version %u, not %u", h.version, HANDSHAKE_VERSION);
            else snprintf(why, sizeof why, "not a bootstrap HELLO of version %u", HANDSHAKE_VERSION);
            drop(R, i, why);
            return 1;
        }
        proof_t p;
        memcpy(c->nonce_r, h.nonce, NONCE_BYTES);
        if (random_bytes(c->nonce_s, NONCE_BYTES)) {
            drop(R, i, "no nonce (getrandom failed)");
            return 1;
        }
        memcpy(p.nonce, c->nonce_s, NONCE_BYTES);
        mac_root(b->secret, c->nonce_r, c->nonce_s, p.mac);
        /* a fresh socket's send buffer is empty: this never waits in practice */
        if (duet_msg_send(c->fd, DUET_MSG_PROOF, 0, &p, sizeof p, c->deadline, c->peer)) {
            drop(R, i, "the link failed");
            return 1;
        }
        c->state = 1;
        c->have = 0;
        return 0;
    }
    join_t j;
    memcpy(&j, body, sizeof j);
    uint8_t want[DUET_SHA256_BYTES];
    mac_rank(b->secret, c->nonce_r, c->nonce_s, j.rank, j.nranks, want);
    if (!duet_bytes_equal_ct(want, j.mac, sizeof want)) {
        drop(R, i, "a wrong proof: wrong job secret");
        return 1;
    }
    char why[200] = "";
    if (j.nranks != b->nranks)
        snprintf(why, sizeof why, "rank %d said the world has %d ranks, the root says %d", j.rank, j.nranks,
                 b->nranks);
    else if (j.rank <= 0 || j.rank >= b->nranks)
        snprintf(why, sizeof why, "rank %d is out of range [1, %d)", j.rank, b->nranks);
    else if (b->rank_fds[j.rank] >= 0)
        snprintf(why, sizeof why, "rank %d joined twice (duplicate rank)", j.rank);
    if (why[0]) {
        DUET_LOG(WARN, BOOT, "bootstrap: refused %s: %s", c->peer, why);
        send_welcome(c->fd, DUET_ERR_INVALID_ARG, why, c->deadline);
        if (strlen(R->refused) + strlen(why) + 3 < sizeof R->refused) {
            strcat(R->refused, "; ");
            strcat(R->refused, why);
        }
        retire(R, i, 0);
        return 1;
    }
    b->rank_fds[j.rank] = c->fd;
    R->joined++;
    retire(R, i, 1);
    return 1;
}

/* Reads what pending connection i has sent; serves each complete message. */
static void serve_input(root_t *R, int i)
{
    pending_t *c = &R->p[i];
    uint32_t kind = c->state == 0 ? DUET_MSG_HELLO : DUET_MSG_JOIN;
    size_t body = c->state == 0 ? sizeof(hello_t) : sizeof(join_t), hdr = sizeof(duet_msg_hdr_t);
    for (;;) {
        size_t need = c->have < hdr ? hdr : hdr + body;
        ssize_t n = recv(c->fd, c->buf + c->have, need - c->have, 0);
        if (n == 0) {
            drop(R, i, c->state ? "it closed the link after the root's proof" : "it closed the link");
            return;
        }
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK) drop(R, i, strerror(errno));
            return;
        }
        c->have += (size_t)n;
        if (c->have == hdr) {
            duet_msg_hdr_t h;
            memcpy(&h, c->buf, hdr);
            const char *bad = h.magic != DUET_BOOT_MSG_MAGIC                       ? "garbage"
                              : h.kind != kind || h.seq != 0 || h.len != body ? "an unexpected message or length"
                                                                               : NULL;
            if (bad) {
                drop(R, i, bad);
                return;
            }
        }
        if (c->have == hdr + body) {
            if (serve_message(R, i)) return;
            kind = DUET_MSG_JOIN;
            body = sizeof(join_t);
        }
    }
}

/* Accepts every connection waiting on the listener into the pending set. */
static duet_status_t accept_all(root_t *R, int listen_fd, uint64_t deadline)
{
    double bound = duet_cfg()->bootstrap_handshake_timeout;
    for (;;) {
        struct sockaddr_in sa;
        socklen_t sl = sizeof sa;
        int fd = accept4(listen_fd, (struct sockaddr *)&sa, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) return DUET_OK;
            if (errno == EINTR || errno == ECONNABORTED) continue;
            if ((errno == EMFILE || errno == ENFILE) && R->n > 0) { /* make room: the oldest goes */
                int oldest = 0;
                for (int i = 1; i < R->n; i++)
                    if (R->p[i].deadline < R->p[oldest].deadline) oldest = i;
                drop(R, oldest, "out of file descriptors: the oldest handshake goes");
                continue;
            }
            return DUET_FAIL(DUET_ERR_SYSTEM, BOOT, "bootstrap: accept(): %s", strerror(errno));
        }
        if (R->n == MAX_PENDING) {
            int oldest = 0;
            for (int i = 1; i < R->n; i++)
                if (R->p[i].deadline < R->p[oldest].deadline) oldest = i;
            drop(R, oldest, "too many handshakes at once: the oldest goes");
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        pending_t *c = &R->p[R->n++];
        memset(c, 0, sizeof *c);
        c->fd = fd;
        uint64_t d = duet_deadline_after(bound);
        c->deadline = d < deadline ? d : deadline;
        snprintf(c->peer, sizeof c->peer, "%s:%u", inet_ntoa(sa.sin_addr), ntohs(sa.sin_port));
    }
}

/* With `gone`: the first rank not joined yet that gone() says is dead, else -1. */
static int first_gone(const duet_boot_t *b, int (*gone)(void *, int), void *arg)
{
    for (int r = 1; gone && r < b->nranks; r++)
        if (b->rank_fds[r] < 0 && gone(arg, r)) return r;
    return -1;
}

static duet_status_t root_join(duet_boot_t *b, int listen_fd, uint64_t deadline, int (*gone)(void *, int),
                               void *arg)
{
    root_t R = {.b = b, .joined = 1}; /* the root itself */
    R.p = malloc(sizeof *R.p * MAX_PENDING);
    struct pollfd *pf = malloc(sizeof *pf * (MAX_PENDING + 1));
    duet_status_t st = R.p && pf ? DUET_OK : DUET_FAIL(DUET_ERR_NO_MEMORY, BOOT, "bootstrap: out of memory");
    int dead = -1;
    while (st == DUET_OK && R.joined < b->nranks) {
        uint64_t now = duet_time_ns();
        if (now >= deadline) {
            st = DUET_ERR_TIMEOUT;
            break;
        }
        if ((dead = first_gone(b, gone, arg)) >= 0) {
            st = DUET_ERR_PEER_FAILED;
            break;
        }
        for (int i = 0; i < R.n;) /* the idle are dropped; the others keep their own time */
            if (R.p[i].deadline <= now) drop(&R, i, "idle past DUET_BOOTSTRAP_HANDSHAKE_TIMEOUT");
            else i++;
        uint64_t next = deadline;
        pf[0] = (struct pollfd){listen_fd, POLLIN, 0};
        for (int i = 0; i < R.n; i++) {
            pf[i + 1] = (struct pollfd){R.p[i].fd, POLLIN, 0};
            if (R.p[i].deadline < next) next = R.p[i].deadline;
        }
        uint64_t ms = (next - now + 999999) / 1000000;
        if (ms > (gone ? 20 : 1000)) ms = gone ? 20 : 1000;
        if (duet_background_progress() && ms > 1) ms = 1; /* serve the net transport's peers meanwhile */
        int n = R.n, k = poll(pf, (nfds_t)n + 1, (int)ms);
        if (k < 0 && errno != EINTR) {
            st = DUET_FAIL(DUET_ERR_SYSTEM, BOOT, "bootstrap: poll: %s", strerror(errno));
            break;
        }
        if (k <= 0) continue;
        /* from the last: serving i may move the last entry into slot i, never an unserved one */
        for (int i = n - 1; i >= 0; i--)
            if (pf[i + 1].revents) serve_input(&R, i);
        if (pf[0].revents) st = accept_all(&R, listen_fd, deadline);
    }
    while (R.n > 0) retire(&R, R.n - 1, 0);
    free(R.p);
    free(pf);
    if (R.drops > LOUD_DROPS)
        DUET_LOG(WARN, BOOT, "bootstrap: refused %d connections in all that did not prove the job secret", R.drops);
    if (st == DUET_OK) {
        for (int r = 1; r < b->nranks && st == DUET_OK; r++)
            st = send_welcome(b->rank_fds[r], DUET_OK, "", deadline);
        return st;
    }
    if (st != DUET_ERR_TIMEOUT && st != DUET_ERR_PEER_FAILED) return st;
    /* say who never came, to the log, the caller, and the ranks that did */
    char missing[256] = "";
    for (int r = 1; r < b->nranks; r++)
        if (b->rank_fds[r] < 0 && strlen(missing) < sizeof missing - 12)
            snprintf(missing + strlen(missing), sizeof missing - strlen(missing), " %d", r);
    char msg[900];
    if (dead >= 0)
        snprintf(msg, sizeof msg, "bootstrap: rank %d died before joining (%d of %d ranks had joined; missing:%s)",
                 dead, R.joined, b->nranks, missing);
    else
        snprintf(msg, sizeof msg, "bootstrap: %d of %d ranks joined before the timeout; missing:%s%s", R.joined,
                 b->nranks, missing, R.refused);
    for (int r = 1; r < b->nranks; r++)
        if (b->rank_fds[r] >= 0) send_welcome(b->rank_fds[r], st, msg, duet_time_ns() + 1000000000ull);
    return DUET_FAIL(st, BOOT, "%s", msg);
}

/* ---- a rank: connect, check the root's proof, then prove its own */

static duet_status_t rank_join(duet_boot_t *b, const duet_boot_id_t *id, uint64_t deadline)
{
    const char *who = "rank 0 (the root)";
    struct in_addr ia = {id->addr_be};
    char where[64];
    snprintf(where, sizeof where, "%s:%u", inet_ntoa(ia), ntohs(id->port_be));
    duet_status_t st = duet_tcp_connect(id->addr_be, id->port_be, deadline,
                                        (id->flags & DUET_BOOT_ID_LISTENING) != 0, &b->root_fd);
    if (st == DUET_ERR_PEER_FAILED)
        return DUET_FAIL(st, BOOT, "bootstrap: rank 0 (the root) died before rank %d could join: its listener at "
                         "%s refuses connections", b->rank, where);
    if (st) return st;
    hello_t h = {.version = HANDSHAKE_VERSION};
    proof_t p;
    if ((st = random_bytes(h.nonce, sizeof h.nonce)) ||
        (st = duet_msg_send(b->root_fd, DUET_MSG_HELLO, 0, &h, sizeof h, deadline, who)) ||
        (st = duet_msg_recv(b->root_fd, DUET_MSG_PROOF, 0, &p, sizeof p, deadline, who)))
        return st;
    uint8_t want[DUET_SHA256_BYTES];
    mac_root(b->secret, h.nonce, p.nonce, want);
    if (!duet_bytes_equal_ct(want, p.mac, sizeof want))
        return DUET_FAIL(DUET_ERR_INVALID_ARG, BOOT, "bootstrap: the root at %s could not prove that it knows the "
                         "job secret: it is not this job's root (a stale or planted address), or this rank's secret "
                         "differs from the root's (DUET_JOB_SECRET); rank %d told it nothing", where, b->rank);
    join_t j = {.rank = b->rank, .nranks = b->nranks};
    mac_rank(b->secret, h.nonce, p.nonce, j.rank, j.nranks, j.mac);
    if ((st = duet_msg_send(b->root_fd, DUET_MSG_JOIN, 0, &j, sizeof j, deadline, who))) return st;
    /* the root's verdict may come right at its own deadline (naming who never came):
     * listen a little longer than the root waits */
    welcome_t w;
    uint64_t verdict_deadline = deadline == UINT64_MAX ? deadline : deadline + 2000000000ull;
    if ((st = duet_msg_recv(b->root_fd, DUET_MSG_WELCOME, 0, &w, sizeof w, verdict_deadline, who))) return st;
    w.msg[sizeof w.msg - 1] = '\0';
    if (w.status != DUET_OK)
        return DUET_FAIL((duet_status_t)w.status, BOOT, "bootstrap: the root refused rank %d: %s", b->rank, w.msg);
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
        if (duet_cfg()->test_boot_root_die) raise(SIGKILL); /* tests: a root that dies once it listens */
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
