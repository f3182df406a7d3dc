/*
 * test_boot_framing.c — deadline-bounded I/O and message framing of the bootstrap
 * (src/boot/duet_boot_tcp.c) and the hex helpers (src/boot/duet_boot_rdv.c).
 *
 * Over a non-blocking socketpair(AF_UNIX): round trips (empty, small, several in a row),
 * a receiver expecting another kind / sequence number / length -> DUET_ERR_INVALID_ARG,
 * garbage instead of a header -> DUET_ERR_INTERNAL, the peer closing before, inside the
 * header or inside the payload -> DUET_ERR_PEER_FAILED, sending to a closed peer ->
 * DUET_ERR_PEER_FAILED (and no SIGPIPE), nothing arriving -> DUET_ERR_TIMEOUT close to the
 * deadline (also for a sender whose peer never reads), payloads of several MiB in both
 * directions at once (the partial send/recv loops; readers and writers in threads).
 * Over TCP on 127.0.0.1: accept with nobody connecting -> DUET_ERR_TIMEOUT, connect to a
 * closed port -> DUET_ERR_TIMEOUT (or DUET_ERR_PEER_FAILED at once when the root is known to
 * have listened), connect + accept + a framed large message; duet_tcp_listen binds the
 * address asked for and refuses INADDR_ANY. duet_boot_derive_secret: RFC 2104 HMAC over the
 * label and both numbers, each input changing the result.
 * duet_hex_encode / duet_hex_decode: known values, upper case, wrong length, bad digits.
 */
#include "duet_test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "boot/duet_boot.h"
#include "boot/duet_boot_tcp.h"
#include "util/duet_util.h"

static void nonblock(int fd) { CHECK(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0, "fcntl"); }

static void make_pair(int fds[2])
{
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0, "socketpair: %s", strerror(errno));
    nonblock(fds[0]);
    nonblock(fds[1]);
}
static void close_pair(int fds[2])
{
    if (fds[0] >= 0) close(fds[0]);
    if (fds[1] >= 0) close(fds[1]);
}
static uint64_t soon(void) { return duet_deadline_after(5.0); }

static void fill(unsigned char *p, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        p[i] = (unsigned char)(seed >> 24);
    }
}

static void test_roundtrips(void)
{
    int s[2];
    make_pair(s);
    char out[] = "hello, rank", in[sizeof out];
    CHECK_STATUS(duet_msg_send(s[0], DUET_MSG_GATHER, 7, out, sizeof out, soon(), "peer"), DUET_OK);
    CHECK_STATUS(duet_msg_recv(s[1], DUET_MSG_GATHER, 7, in, sizeof in, soon(), "peer"), DUET_OK);
    CHECK(!memcmp(in, out, sizeof out), "payload changed");
    CHECK_STATUS(duet_msg_send(s[1], DUET_MSG_BCAST, 0, NULL, 0, soon(), "peer"), DUET_OK);
    CHECK_STATUS(duet_msg_recv(s[0], DUET_MSG_BCAST, 0, NULL, 0, soon(), "peer"), DUET_OK);
    for (uint32_t i = 1; i <= 50; i++) /* queued back to back, read in order */
        CHECK_STATUS(duet_msg_send(s[0], DUET_MSG_GATHERED, i, &i, sizeof i, soon(), "peer"), DUET_OK);
    for (uint32_t i = 1; i <= 50; i++) {
        uint32_t v = 0;
        CHECK_STATUS(duet_msg_recv(s[1], DUET_MSG_GATHERED, i, &v, sizeof v, soon(), "peer"), DUET_OK);
        CHECK(v == i, "message %u carried %u", i, v);
    }
    close_pair(s);
}

static void test_mismatches(void)
{
    static const struct {
        uint32_t kind, seq;
        size_t len;
        const char *what;
    } expect[] = {{DUET_MSG_WELCOME, 3, 8, "kind"}, {DUET_MSG_HELLO, 4, 8, "seq"},
                  {DUET_MSG_HELLO, 3, 7, "shorter length"}, {DUET_MSG_HELLO, 3, 9, "longer length"},
                  {DUET_MSG_HELLO, 3, 0, "no payload"}};
    for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++) {
        int s[2];
        make_pair(s);
        char buf[16] = "12345678";
        CHECK_STATUS(duet_msg_send(s[0], DUET_MSG_HELLO, 3, buf, 8, soon(), "peer"), DUET_OK);
        duet_status_t st = duet_msg_recv(s[1], expect[i].kind, expect[i].seq, buf, expect[i].len, soon(), "rank 9");
        CHECK(st == DUET_ERR_INVALID_ARG, "wrong %s -> %s", expect[i].what, duet_status_str(st));
        CHECK(strstr(duet_last_error(), "rank 9") && strstr(duet_last_error(), "mismatched"),
              "wrong %s: message \"%s\"", expect[i].what, duet_last_error());
        close_pair(s);
    }
    /* garbage where a header should be */
    int s[2];
    make_pair(s);
    unsigned char junk[sizeof(duet_msg_hdr_t)];
    memset(junk, 0xAB, sizeof junk);
    CHECK(write(s[0], junk, sizeof junk) == (ssize_t)sizeof junk, "write");
    char buf[8];
    CHECK_STATUS(duet_msg_recv(s[1], DUET_MSG_HELLO, 0, buf, 8, soon(), "peer"), DUET_ERR_INTERNAL);
    CHECK(strstr(duet_last_error(), "garbage"), "message \"%s\"", duet_last_error());
    close_pair(s);
}

static void test_peer_closed(void)
{
    char buf[256] = {0};
    int s[2];
    make_pair(s); /* before anything */
    close(s[0]);
    s[0] = -1;
    CHECK_STATUS(duet_msg_recv(s[1], DUET_MSG_HELLO, 0, buf, 8, soon(), "rank 4"), DUET_ERR_PEER_FAILED);
    CHECK(strstr(duet_last_error(), "rank 4"), "message \"%s\"", duet_last_error());
    close_pair(s);

    make_pair(s); /* inside the header */
    CHECK(write(s[0], buf, 10) == 10, "write");
    close(s[0]);
    s[0] = -1;
    CHECK_STATUS(duet_msg_recv(s[1], DUET_MSG_HELLO, 0, buf, 8, soon(), "peer"), DUET_ERR_PEER_FAILED);
    close_pair(s);

    make_pair(s); /* inside the payload */
    duet_msg_hdr_t h = {DUET_BOOT_MSG_MAGIC, DUET_MSG_HELLO, 0, 0, 200};
    CHECK(write(s[0], &h, sizeof h) == (ssize_t)sizeof h && write(s[0], buf, 100) == 100, "write");
    close(s[0]);
    s[0] = -1;
    CHECK_STATUS(duet_msg_recv(s[1], DUET_MSG_HELLO, 0, buf, 200, soon(), "peer"), DUET_ERR_PEER_FAILED);
    close_pair(s);

    make_pair(s); /* sending to a closed peer: an error, not SIGPIPE (left at its default here) */
    close(s[1]);
    s[1] = -1;
    CHECK_STATUS(duet_msg_send(s[0], DUET_MSG_HELLO, 0, buf, sizeof buf, soon(), "rank 2"), DUET_ERR_PEER_FAILED);
    CHECK(strstr(duet_last_error(), "rank 2"), "message \"%s\"", duet_last_error());
    close_pair(s);
}

static void test_timeouts(void)
{
    int s[2];
    make_pair(s);
    char buf[8];
    double t0 = duet_time_s();
    CHECK_STATUS(duet_msg_recv(s[1], DUET_MSG_HELLO, 0, buf, 8, duet_deadline_after(0.3), "rank 5"), DUET_ERR_TIMEOUT);
    double dt = duet_time_s() - t0;
    CHECK(dt >= 0.29 && dt < 1.0, "gave up after %.3f s, deadline 0.3 s", dt);
    CHECK(strstr(duet_last_error(), "timed out") && strstr(duet_last_error(), "rank 5"), "message \"%s\"",
          duet_last_error());
    /* a header and no payload */
    duet_msg_hdr_t h = {DUET_BOOT_MSG_MAGIC, DUET_MSG_HELLO, 0, 0, 8};
    CHECK(write(s[0], &h, sizeof h) == (ssize_t)sizeof h, "write");
    t0 = duet_time_s();
    CHECK_STATUS(duet_msg_recv(s[1], DUET_MSG_HELLO, 0, buf, 8, duet_deadline_after(0.2), "peer"), DUET_ERR_TIMEOUT);
    dt = duet_time_s() - t0;
    CHECK(dt >= 0.19 && dt < 1.0, "gave up after %.3f s, deadline 0.2 s", dt);
    /* a deadline already past */
    t0 = duet_time_s();
    CHECK_STATUS(duet_msg_recv(s[0], DUET_MSG_HELLO, 0, buf, 8, duet_time_ns() - 1, "peer"), DUET_ERR_TIMEOUT);
    CHECK(duet_time_s() - t0 < 0.1, "a past deadline waited %.3f s", duet_time_s() - t0);
    /* a sender whose peer never reads fills the socket buffer, then times out */
    size_t big = 16u << 20;
    char *p = calloc(1, big);
    t0 = duet_time_s();
    CHECK_STATUS(duet_msg_send(s[0], DUET_MSG_BCAST, 1, p, big, duet_deadline_after(0.3), "rank 6"), DUET_ERR_TIMEOUT);
    dt = duet_time_s() - t0;
    CHECK(dt >= 0.29 && dt < 1.0, "send gave up after %.3f s, deadline 0.3 s", dt);
    free(p);
    close_pair(s);
}

/* ---- large payloads: a thread sends while another receives */
typedef struct {
    int fd;
    uint32_t kind, seq;
    unsigned char *buf;
    size_t len;
    int send;
    duet_status_t st;
} xfer_t;

static void *xfer_main(void *arg)
{
    xfer_t *x = arg;
    uint64_t deadline = duet_deadline_after(20);
    x->st = x->send ? duet_msg_send(x->fd, x->kind, x->seq, x->buf, x->len, deadline, "peer")
                    : duet_msg_recv(x->fd, x->kind, x->seq, x->buf, x->len, deadline, "peer");
    return NULL;
}

/* Sends len bytes each way between a and b at the same time; checks every byte. */
static void exchange(int a, int b, size_t len)
{
    unsigned char *out_a = malloc(len), *out_b = malloc(len), *in_a = malloc(len), *in_b = malloc(len);
    CHECK(out_a && out_b && in_a && in_b, "malloc");
    fill(out_a, len, 1);
    fill(out_b, len, 2);
    memset(in_a, 0, len);
    memset(in_b, 0, len);
    xfer_t x[4] = {{a, DUET_MSG_GATHERED, 9, out_a, len, 1, 0}, {b, DUET_MSG_GATHERED, 9, in_b, len, 0, 0},
                   {b, DUET_MSG_BCAST, 10, out_b, len, 1, 0}, {a, DUET_MSG_BCAST, 10, in_a, len, 0, 0}};
    pthread_t th[4];
    for (int i = 0; i < 4; i++) CHECK(pthread_create(&th[i], NULL, xfer_main, &x[i]) == 0, "thread");
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < 4; i++) CHECK(x[i].st == DUET_OK, "transfer %d of %zu bytes -> %s", i, len, duet_status_str(x[i].st));
    CHECK(!memcmp(in_b, out_a, len) && !memcmp(in_a, out_b, len), "%zu-byte payload changed", len);
    free(out_a);
    free(out_b);
    free(in_a);
    free(in_b);
}

static void test_large(void)
{
    int s[2];
    make_pair(s);
    exchange(s[0], s[1], 6u << 20);
    exchange(s[0], s[1], (3u << 20) + 7); /* odd size */
    close_pair(s);
}

static void test_tcp(void)
{
    int l = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr = {htonl(INADDR_LOOPBACK)}};
    socklen_t sl = sizeof sa;
    CHECK(l >= 0 && bind(l, (struct sockaddr *)&sa, sizeof sa) == 0 && listen(l, 8) == 0 &&
          getsockname(l, (struct sockaddr *)&sa, &sl) == 0, "listen: %s", strerror(errno));
    int fd = -1, c = -1;
    char peer[64] = "";
    double t0 = duet_time_s();
    CHECK_STATUS(duet_tcp_accept(l, duet_deadline_after(0.2), &fd, peer, sizeof peer), DUET_ERR_TIMEOUT);
    CHECK(duet_time_s() - t0 >= 0.19 && duet_time_s() - t0 < 1.0, "accept waited %.3f s", duet_time_s() - t0);

    CHECK_STATUS(duet_tcp_connect(sa.sin_addr.s_addr, sa.sin_port, soon(), 0, &c), DUET_OK);
    CHECK_STATUS(duet_tcp_accept(l, soon(), &fd, peer, sizeof peer), DUET_OK);
    CHECK(!strncmp(peer, "127.0.0.1:", 10), "peer \"%s\"", peer);
    CHECK(fcntl(c, F_GETFL) & O_NONBLOCK && fcntl(fd, F_GETFL) & O_NONBLOCK, "links must be non-blocking");
    CHECK(fcntl(c, F_GETFD) & FD_CLOEXEC && fcntl(fd, F_GETFD) & FD_CLOEXEC, "links must be close-on-exec");
    exchange(c, fd, 5u << 20);
    close(c);
    char b[4];
    CHECK_STATUS(duet_msg_recv(fd, DUET_MSG_HELLO, 0, b, 4, soon(), "peer"), DUET_ERR_PEER_FAILED);
    close(fd);

    /* a closed port: refused until the deadline */
    uint16_t port = sa.sin_port;
    close(l);
    t0 = duet_time_s();
    CHECK_STATUS(duet_tcp_connect(htonl(INADDR_LOOPBACK), port, duet_deadline_after(0.3), 0, &c), DUET_ERR_TIMEOUT);
    double dt = duet_time_s() - t0;
    CHECK(dt >= 0.29 && dt < 1.5, "connect gave up after %.3f s, deadline 0.3 s", dt);
    /* ... unless the root is known to have listened there: then it is gone, at once */
    t0 = duet_time_s();
    CHECK_STATUS(duet_tcp_connect(htonl(INADDR_LOOPBACK), port, duet_deadline_after(5), 1, &c), DUET_ERR_PEER_FAILED);
    CHECK(duet_time_s() - t0 < 0.5, "a refused connection to a root that had listened took %.3f s", duet_time_s() - t0);

    /* duet_tcp_listen binds what it is asked to, never every interface */
    CHECK_STATUS(duet_tcp_listen(htonl(INADDR_LOOPBACK), 0, 0, &l), DUET_OK);
    sl = sizeof sa;
    CHECK(getsockname(l, (struct sockaddr *)&sa, &sl) == 0 && sa.sin_addr.s_addr == htonl(INADDR_LOOPBACK) &&
          sa.sin_port != 0, "listener bound to %s", inet_ntoa(sa.sin_addr));
    uint32_t a;
    uint16_t p;
    duet_boot_last_bound(&a, &p);
    CHECK(a == sa.sin_addr.s_addr && p == sa.sin_port, "duet_boot_last_bound does not name the last listener");
    CHECK(fcntl(l, F_GETFL) & O_NONBLOCK && fcntl(l, F_GETFD) & FD_CLOEXEC, "listener flags");
    close(l);
    CHECK_STATUS(duet_tcp_listen(htonl(INADDR_ANY), 0, 0, &l), DUET_ERR_INTERNAL);
}

/* HMAC-SHA-256(K, label | a | b), first 16 bytes, computed here from the hash itself */
static void test_derive(void)
{
    uint8_t k[DUET_SECRET_BYTES], out[DUET_SECRET_BYTES], again[DUET_SECRET_BYTES], ref[DUET_SHA256_BYTES];
    for (int i = 0; i < DUET_SECRET_BYTES; i++) k[i] = (uint8_t)(3 * i + 1);
    uint64_t a = 7, b = 3;
    duet_boot_derive_secret(k, "split", a, b, out);
    /* the reference: RFC 2104 with SHA-256, key padded to 64 bytes */
    uint8_t ipad[64], opad[64], inner[DUET_SHA256_BYTES];
    for (int i = 0; i < 64; i++) {
        uint8_t x = i < DUET_SECRET_BYTES ? k[i] : 0;
        ipad[i] = x ^ 0x36;
        opad[i] = x ^ 0x5c;
    }
    duet_sha256_t s;
    duet_sha256_init(&s);
    duet_sha256_update(&s, ipad, 64);
    duet_sha256_update(&s, "split", 5);
    duet_sha256_update(&s, &a, 8);
    duet_sha256_update(&s, &b, 8);
    duet_sha256_final(&s, inner);
    duet_sha256_init(&s);
    duet_sha256_update(&s, opad, 64);
    duet_sha256_update(&s, inner, sizeof inner);
    duet_sha256_final(&s, ref);
    CHECK(!memcmp(out, ref, DUET_SECRET_BYTES), "derived secret differs from HMAC-SHA-256(K, label|a|b)");
    CHECK(memcmp(out, k, DUET_SECRET_BYTES) != 0, "the derived secret is the parent's");
    duet_boot_derive_secret(k, "shrink", a, b, again);
    CHECK(memcmp(out, again, DUET_SECRET_BYTES) != 0, "the label does not change the secret");
    duet_boot_derive_secret(k, "split", a + 1, b, again);
    CHECK(memcmp(out, again, DUET_SECRET_BYTES) != 0, "the count does not change the secret");
    duet_boot_derive_secret(k, "split", a, b + 1, again);
    CHECK(memcmp(out, again, DUET_SECRET_BYTES) != 0, "the color does not change the secret");
    k[15] ^= 1;
    duet_boot_derive_secret(k, "split", a, b, again);
    CHECK(memcmp(out, again, DUET_SECRET_BYTES) != 0, "the parent's secret does not change the secret");
}

static void test_hex(void)
{
    const uint8_t bytes[] = {0x00, 0xff, 0x10, 0xab, 0x7e, 0x01};
    char text[2 * sizeof bytes + 1];
    memset(text, 'x', sizeof text);
    duet_hex_encode(bytes, sizeof bytes, text);
    CHECK(!strcmp(text, "00ff10ab7e01"), "encoded \"%s\"", text);
    uint8_t back[sizeof bytes];
    CHECK(duet_hex_decode(text, back, sizeof back) == 0 && !memcmp(back, bytes, sizeof bytes), "decode");
    CHECK(duet_hex_decode("00FF10AB7E01", back, sizeof back) == 0 && !memcmp(back, bytes, sizeof bytes), "upper case");
    CHECK(duet_hex_decode("00ff10ab7e0", back, sizeof back) != 0, "short text accepted");
    CHECK(duet_hex_decode("00ff10ab7e011", back, sizeof back) != 0, "long text accepted");
    CHECK(duet_hex_decode("00ff10ab7e0g", back, sizeof back) != 0, "bad digit accepted");
    CHECK(duet_hex_decode("00ff 0ab7e01", back, sizeof back) != 0, "space accepted");
    CHECK(duet_hex_decode("", back, 0) == 0, "empty");
    char empty[1] = {'x'};
    duet_hex_encode(bytes, 0, empty);
    CHECK(empty[0] == '\0', "encoding nothing");
    uint8_t all[256], all2[256];
    char all_text[513];
    for (int i = 0; i < 256; i++) all[i] = (uint8_t)i;
    duet_hex_encode(all, 256, all_text);
    CHECK(strlen(all_text) == 512 && duet_hex_decode(all_text, all2, 256) == 0 && !memcmp(all, all2, 256),
          "every byte value");
}

int main(void)
{
    setenv("DUET_DEBUG", "NONE", 0); /* the expected failures would log */
    (void)duet_cfg();                /* logging takes DUET_DEBUG from the settings table */
    test_hex();
    test_roundtrips();
    test_mismatches();
    test_peer_closed();
    test_timeouts();
    test_large();
    test_tcp();
    test_derive();
    printf("test_boot_framing: passed\n");
    return 0;
}
