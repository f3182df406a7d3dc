/*
 * test_boot_sec.c — the bootstrap lets no one in and never waits long (issue 18 items 1, 4).
 *
 * A plain process (no duetrun) that forks its ranks, like test_boot.c: the parent makes no
 * Duet call but for hashes and status names (so each child reads its own settings), plays
 * the attacker, and judges what the children report through pipes.
 *
 *   fake root   a listener of the test that records every byte a rank sends and answers its
 *               HELLO with a proof it cannot make (or never answers); reached through
 *               DUET_BOOT_ADDR and through a rendezvous file. The rank refuses it within a
 *               bounded time with a clear error, and neither the secret's bytes nor its hex
 *               are among the recorded bytes.
 *   planted     rendezvous files and directories that are not the user's own private ones:
 *               owned by `nobody` (uid 65534), a symbolic link, mode 0644; the directory
 *               owned by nobody, a symlink, or writable by others. Each is refused with a
 *               message saying what is wrong, and the fake root they name is never contacted.
 *   fake ranks  connections to a real root sending garbage, an over-long length field, a
 *               handshake with a wrong secret, and idle ones: each is dropped, gets nothing
 *               but (for the handshake) the root's nonce and proof, which hold no secret, and
 *               the real job still starts.
 *   relay       a legitimate 2-rank job through a recording relay between rank 1 and the
 *               root: it works, and no secret crosses the wire either way.
 *   iface       duet_get_unique_id's listener is bound where its id says, never 0.0.0.0: loopback
 *               when the launcher's environment says one host (mpirun, srun, torchrun styles),
 *               DUET_SOCKET_IFNAME=lo / ^lo / =<first other>, DUET_BOOTSTRAP_IFADDR; otherwise
 *               the first up non-loopback IPv4 interface; an interface that does not exist is
 *               DUET_ERR_INVALID_ARG (issue 18 item 2)
 *   idle        7, then 1,000 (or as many as RLIMIT_NOFILE allows) idle connections opened
 *               before rank 1 joins: it joins in < 3 s, under the 5 s handshake bound (a hang
 *               bound: the old root served them one at a time, 5 s each, past the 20 s
 *               bootstrap timeout).
 *
 *   test_boot_sec [fake_root|planted|fake_ranks|relay|iface|idle]...   (default: every case)
 */
#include "duet_test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "boot/duet_boot.h"     /* duet_boot_id_t: the layout behind duet_unique_id_t */
#include "boot/duet_boot_tcp.h" /* duet_msg_hdr_t, the message kinds */

#define WAIT_MS 20000   /* the parent's own bound on any child or socket */
#define NOBODY 65534

static const char *g_dir;
static const char *g_secret_hex = "5ec2e7005ec2e7005ec2e7005ec2e700";
static uint8_t g_secret[DUET_SECRET_BYTES];

/* The handshake as duet_boot.h describes it (the attacker knows the protocol). */
typedef struct {
    uint32_t version, pad;
    uint8_t nonce[16];
} hello_t;
typedef struct {
    uint8_t nonce[16];
    uint8_t mac[DUET_SHA256_BYTES];
} proof_t;
typedef struct {
    int32_t rank, nranks;
    uint8_t mac[DUET_SHA256_BYTES];
} join_t;

typedef struct {
    int st, st_after;
    double secs;
    char msg[900];
} report_t;

typedef struct {
    pid_t pid;
    int fd;
    report_t r;
} child_t;

/* ---------------------------------------------------------------- children */

static void report(int fd, const report_t *r)
{
    ssize_t w = write(fd, r, sizeof *r);
    _exit(w == (ssize_t)sizeof *r ? 0 : 1);
}

/* A world rank: sets `env` ("NAME=value" pairs, NULL-terminated), duet_init, reports. */
static child_t spawn_world(const char *const *env)
{
    int p[2];
    CHECK(pipe(p) == 0, "pipe: %s", strerror(errno));
    child_t c = {fork(), p[0], {0}};
    CHECK(c.pid >= 0, "fork: %s", strerror(errno));
    if (c.pid == 0) {
        close(p[0]);
        for (int i = 0; env[i]; i++) putenv((char *)env[i]);
        report_t r = {0};
        double t0 = now_s();
        r.st = duet_init();
        r.secs = now_s() - t0;
        if (r.st) snprintf(r.msg, sizeof r.msg, "%s", duet_last_error());
        else r.st_after = duet_finalize();
        report(p[1], &r);
    }
    close(p[1]);
    return c;
}

/* A rank of duet_comm_init_rank with `id` (a real root's, or one that names the relay). */
static child_t spawn_rank(duet_unique_id_t id, int rank, int nranks, double timeout_s, const char *log)
{
    int idp[2], p[2];
    CHECK(pipe(idp) == 0 && pipe(p) == 0, "pipe: %s", strerror(errno));
    child_t c = {fork(), p[0], {0}};
    CHECK(c.pid >= 0, "fork: %s", strerror(errno));
    if (c.pid == 0) {
        close(p[0]);
        close(idp[0]);
        char path[300];
        snprintf(path, sizeof path, "%s/%s", g_dir, log);
        setenv("DUET_DEBUG_FILE", path, 1);
        if (rank == 0 && (duet_get_unique_id(&id) != DUET_OK || write(idp[1], &id, sizeof id) != (ssize_t)sizeof id))
            _exit(3);
        close(idp[1]);
        report_t r = {0};
        duet_config_t cfg = DUET_CONFIG_INIT;
        cfg.symmetric_size = 1 << 20;
        cfg.bootstrap_timeout_s = timeout_s;
        duet_comm_t comm = NULL;
        double t0 = now_s();
        r.st = duet_comm_init_rank(&comm, nranks, id, rank, &cfg);
        r.secs = now_s() - t0;
        if (r.st == DUET_OK) r.st_after = duet_barrier(comm);
        if (r.st == DUET_OK && r.st_after == DUET_OK) r.st_after = duet_comm_destroy(comm);
        if (r.st || r.st_after) snprintf(r.msg, sizeof r.msg, "%s", duet_last_error());
        report(p[1], &r);
    }
    close(p[1]);
    close(idp[1]);
    return c;
}

/* The root: makes the id (returned), joins as rank 0 of nranks. */
static child_t spawn_root(int nranks, double timeout_s, const char *log, duet_unique_id_t *id)
{
    int idp[2], p[2];
    CHECK(pipe(idp) == 0 && pipe(p) == 0, "pipe: %s", strerror(errno));
    child_t c = {fork(), p[0], {0}};
    CHECK(c.pid >= 0, "fork: %s", strerror(errno));
    if (c.pid == 0) {
        close(idp[0]);
        close(p[0]);
        char path[300];
        snprintf(path, sizeof path, "%s/%s", g_dir, log);
        setenv("DUET_DEBUG_FILE", path, 1);
        setenv("DUET_DEBUG", "INFO", 1);
        setenv("DUET_DEBUG_SUBSYS", "BOOT", 1);
        duet_unique_id_t mine;
        if (duet_get_unique_id(&mine) != DUET_OK || write(idp[1], &mine, sizeof mine) != (ssize_t)sizeof mine) _exit(3);
        close(idp[1]);
        report_t r = {0};
        duet_config_t cfg = DUET_CONFIG_INIT;
        cfg.symmetric_size = 1 << 20;
        cfg.bootstrap_timeout_s = timeout_s;
        duet_comm_t comm = NULL;
        double t0 = now_s();
        r.st = duet_comm_init_rank(&comm, nranks, mine, 0, &cfg);
        r.secs = now_s() - t0;
        if (r.st == DUET_OK) r.st_after = duet_barrier(comm);
        if (r.st == DUET_OK && r.st_after == DUET_OK) r.st_after = duet_comm_destroy(comm);
        if (r.st || r.st_after) snprintf(r.msg, sizeof r.msg, "%s", duet_last_error());
        report(p[1], &r);
    }
    close(idp[1]);
    close(p[1]);
    struct pollfd pf = {idp[0], POLLIN, 0};
    CHECK(poll(&pf, 1, WAIT_MS) == 1 && read(idp[0], id, sizeof *id) == (ssize_t)sizeof *id, "the root sent no id");
    close(idp[0]);
    return c;
}

static void finish(child_t *c, const char *who)
{
    struct pollfd pf = {c->fd, POLLIN, 0};
    int n;
    while ((n = poll(&pf, 1, WAIT_MS)) < 0 && errno == EINTR) {}
    if (n != 1 || read(c->fd, &c->r, sizeof c->r) != (ssize_t)sizeof c->r) {
        kill(c->pid, SIGKILL);
        waitpid(c->pid, NULL, 0);
        FATAL("%s gave no report within %d ms", who, WAIT_MS);
    }
    close(c->fd);
    int status;
    CHECK(waitpid(c->pid, &status, 0) == c->pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "%s did not exit cleanly", who);
}

static void expect_ok(child_t *c, const char *who)
{
    finish(c, who);
    CHECK(c->r.st == DUET_OK && c->r.st_after == DUET_OK, "%s: %s, then %s: %s", who, duet_status_str(c->r.st),
          duet_status_str(c->r.st_after), c->r.msg);
}

static void expect_fail(child_t *c, const char *who, int want, const char *text, double max_s)
{
    finish(c, who);
    CHECK(c->r.st == want, "%s: got %s, want %s (%s)", who, duet_status_str(c->r.st), duet_status_str(want), c->r.msg);
    CHECK(strstr(c->r.msg, text), "%s: the message lacks \"%s\": %s", who, text, c->r.msg);
    CHECK(c->r.secs < max_s, "%s: took %.2f s to refuse (bound %.1f s)", who, c->r.secs, max_s);
}

/* ---------------------------------------------------------------- the attacker's tools */

/* Does buf hold the secret, as bytes or as hex of either case? */
static int holds_secret(const uint8_t *buf, size_t n, const uint8_t *secret)
{
    char hex[2 * DUET_SECRET_BYTES + 1], upper[sizeof hex];
    for (int i = 0; i < DUET_SECRET_BYTES; i++) {
        snprintf(hex + 2 * i, 3, "%02x", secret[i]);
        snprintf(upper + 2 * i, 3, "%02X", secret[i]);
    }
    return memmem(buf, n, secret, DUET_SECRET_BYTES) || memmem(buf, n, hex, 2 * DUET_SECRET_BYTES) ||
           memmem(buf, n, upper, 2 * DUET_SECRET_BYTES);
}

static int listener(uint16_t *port_be)
{
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr = {htonl(INADDR_LOOPBACK)}};
    socklen_t sl = sizeof sa;
    CHECK(l >= 0 && bind(l, (struct sockaddr *)&sa, sizeof sa) == 0 && listen(l, 16) == 0 &&
          getsockname(l, (struct sockaddr *)&sa, &sl) == 0, "listen: %s", strerror(errno));
    *port_be = sa.sin_port;
    return l;
}

static int connect_to(uint32_t addr_be, uint16_t port_be)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = port_be, .sin_addr = {addr_be}};
    CHECK(fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0, "connect: %s", strerror(errno));
    return fd;
}

static int accept_within(int l, int ms)
{
    struct pollfd pf = {l, POLLIN, 0};
    if (poll(&pf, 1, ms) != 1) return -1;
    return accept(l, NULL, NULL);
}

/* Appends what fd sends until it closes (bounded); returns the bytes read. */
static size_t read_to_eof(int fd, uint8_t *buf, size_t cap, size_t have)
{
    for (;;) {
        struct pollfd pf = {fd, POLLIN, 0};
        CHECK(poll(&pf, 1, WAIT_MS) == 1, "the peer neither sent nor closed within %d ms", WAIT_MS);
        ssize_t n = recv(fd, buf + have, cap - have, 0);
        if (n <= 0) return have;
        have += (size_t)n;
        CHECK(have < cap, "the peer sent more than %zu bytes", cap);
    }
}

static size_t read_exactly(int fd, uint8_t *buf, size_t len)
{
    size_t have = 0;
    while (have < len) {
        struct pollfd pf = {fd, POLLIN, 0};
        CHECK(poll(&pf, 1, WAIT_MS) == 1, "nothing within %d ms", WAIT_MS);
        ssize_t n = recv(fd, buf + have, len - have, 0);
        if (n <= 0) break;
        have += (size_t)n;
    }
    return have;
}

static void send_msg(int fd, uint32_t kind, const void *body, size_t len)
{
    duet_msg_hdr_t h = {DUET_BOOT_MSG_MAGIC, kind, 0, 0, len};
    CHECK(send(fd, &h, sizeof h, MSG_NOSIGNAL) == (ssize_t)sizeof h &&
          send(fd, body, len, MSG_NOSIGNAL) == (ssize_t)len, "send: %s", strerror(errno));
}

/* The fake root: accepts one rank, answers its HELLO with a made-up proof (answer = 1) or
 * nothing, records everything the rank sends until it closes. */
static size_t fake_root(int l, int answer, uint8_t *rec, size_t cap)
{
    int fd = accept_within(l, WAIT_MS);
    CHECK(fd >= 0, "the rank never connected to the fake root");
    size_t have = read_exactly(fd, rec, sizeof(duet_msg_hdr_t) + sizeof(hello_t));
    if (answer) {
        proof_t p;
        CHECK(getrandom(&p, sizeof p, 0) == (ssize_t)sizeof p, "getrandom");
        send_msg(fd, DUET_MSG_PROOF, &p, sizeof p);
    }
    have = read_to_eof(fd, rec, cap, have);
    close(fd);
    return have;
}

static int nothing_pending(int l)
{
    struct pollfd pf = {l, POLLIN, 0};
    return poll(&pf, 1, 0) == 0;
}

/* ---------------------------------------------------------------- cases */

static void case_fake_root_addr(void)
{
    dt_set_context("fake root via DUET_BOOT_ADDR");
    uint16_t port;
    int l = listener(&port);
    char addr[64];
    snprintf(addr, sizeof addr, "DUET_BOOT_ADDR=127.0.0.1:%u", ntohs(port));
    char secret[64];
    snprintf(secret, sizeof secret, "DUET_JOB_SECRET=%s", g_secret_hex);
    uint8_t rec[4096];
    for (int answer = 1; answer >= 0; answer--) {
        const char *env[] = {"DUET_RANK=1", "DUET_NRANKS=2", "DUET_LOCAL_RANK=1", "DUET_LOCAL_SIZE=2", addr, secret,
                             "DUET_BOOTSTRAP_TIMEOUT=2", "DUET_DEBUG=NONE", NULL};
        child_t c = spawn_world(env);
        size_t n = fake_root(l, answer, rec, sizeof rec);
        if (answer) expect_fail(&c, "rank 1 answered by a fake root", DUET_ERR_INVALID_ARG, "could not prove", 2.0);
        else expect_fail(&c, "rank 1 of a silent fake root", DUET_ERR_TIMEOUT, "rank 0", 5.0);
        CHECK(n == sizeof(duet_msg_hdr_t) + sizeof(hello_t), "the rank sent %zu bytes to a root that did not prove "
              "the secret; only its %zu-byte HELLO may go", n, sizeof(duet_msg_hdr_t) + sizeof(hello_t));
        CHECK(!holds_secret(rec, n, g_secret), "the job secret went to the fake root");
    }
    close(l);
}

/* A rank of an mpirun-style job on this host whose rendezvous directory is under xdg. */
static child_t spawn_file_rank(const char *xdg, const char *job)
{
    static char xdg_env[300], job_env[100], secret[64];
    snprintf(xdg_env, sizeof xdg_env, "XDG_RUNTIME_DIR=%s", xdg);
    snprintf(job_env, sizeof job_env, "PMIX_NAMESPACE=%s", job);
    snprintf(secret, sizeof secret, "DUET_JOB_SECRET=%s", g_secret_hex);
    const char *env[] = {"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=2", "OMPI_COMM_WORLD_LOCAL_RANK=1",
                         "OMPI_COMM_WORLD_LOCAL_SIZE=2", xdg_env, job_env, secret, "DUET_BOOTSTRAP_TIMEOUT=2",
                         "DUET_DEBUG=NONE", NULL};
    return spawn_world(env);
}

static void write_file(const char *path, const char *text, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
    CHECK(fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text) && close(fd) == 0 &&
          chmod(path, mode) == 0, "%s: %s", path, strerror(errno));
}

static void case_planted(void)
{
    uint16_t port;
    int l = listener(&port);
    char text[100], path[700], dir[400], xdg[300], other[400];
    snprintf(text, sizeof text, "127.0.0.1:%u %d\n", ntohs(port), (int)getpid()); /* a live pid: the test's */
    int root = geteuid() == 0;
    struct {
        const char *name, *want;
        int needs_root;
    } cases[] = {
        {"file owned by nobody", "belongs to another user", 1},
        {"file is a symlink", "symbolic link", 0},
        {"file mode 0644", "mode is not 0600", 0},
        {"directory owned by nobody", "belongs to another user", 1},
        {"directory is a symlink", "symbolic link", 0},
        {"directory mode 0777", "writable by group or others", 0},
    };
    for (size_t i = 0; i < DUET_ARRAY_LEN(cases); i++) {
        dt_set_context(cases[i].name);
        if (cases[i].needs_root && !root) {
            printf("test_boot_sec: %s: skipped (needs root to chown)\n", cases[i].name);
            continue;
        }
        snprintf(xdg, sizeof xdg, "%s/xdg%zu", g_dir, i);
        CHECK(mkdir(xdg, 0700) == 0, "mkdir %s: %s", xdg, strerror(errno));
        snprintf(dir, sizeof dir, "%s/duet", xdg);
        snprintf(path, sizeof path, "%s/rdv-planted", dir);
        snprintf(other, sizeof other, "%s/elsewhere", xdg);
        if (i == 4) { /* the directory a link to a directory of mine */
            CHECK(mkdir(other, 0700) == 0 && symlink(other, dir) == 0, "symlink: %s", strerror(errno));
        } else {
            CHECK(mkdir(dir, 0700) == 0, "mkdir %s: %s", dir, strerror(errno));
        }
        if (i == 1) {
            write_file(other, text, 0600);
            CHECK(symlink(other, path) == 0, "symlink: %s", strerror(errno));
        } else {
            write_file(path, text, i == 2 ? 0644 : 0600);
        }
        if (i == 0) CHECK(chown(path, NOBODY, NOBODY) == 0, "chown: %s", strerror(errno));
        if (i == 3) CHECK(chown(dir, NOBODY, NOBODY) == 0, "chown: %s", strerror(errno));
        if (i == 5) CHECK(chmod(dir, 0777) == 0, "chmod: %s", strerror(errno));
        child_t c = spawn_file_rank(xdg, "planted");
        expect_fail(&c, cases[i].name, DUET_ERR_SYSTEM, cases[i].want, 2.0);
        CHECK(strstr(c.r.msg, "refusing the rendezvous"), "%s: %s", cases[i].name, c.r.msg);
        CHECK(nothing_pending(l), "%s: the rank connected to the address of a planted file", cases[i].name);
    }
    /* the user's own file, naming a fake root: the rank goes there, but says nothing secret */
    dt_set_context("own rendezvous file naming a fake root");
    snprintf(xdg, sizeof xdg, "%s/xdg-own", g_dir);
    snprintf(dir, sizeof dir, "%s/duet", xdg);
    snprintf(path, sizeof path, "%s/rdv-own", dir);
    CHECK(mkdir(xdg, 0700) == 0 && mkdir(dir, 0700) == 0, "mkdir: %s", strerror(errno));
    write_file(path, text, 0600);
    child_t c = spawn_file_rank(xdg, "own");
    uint8_t rec[4096];
    size_t n = fake_root(l, 1, rec, sizeof rec);
    expect_fail(&c, "rank 1 of a fake root's file", DUET_ERR_INVALID_ARG, "could not prove", 2.0);
    CHECK(!holds_secret(rec, n, g_secret), "the job secret went to the fake root");
    close(l);
}

static int log_has(const char *log, const char *text)
{
    char path[300], line[2048];
    snprintf(path, sizeof path, "%s/%s", g_dir, log);
    FILE *f = fopen(path, "r");
    int found = 0;
    while (f && !found && fgets(line, sizeof line, f)) found = strstr(line, text) != NULL;
    if (f) fclose(f);
    return found;
}

static void case_fake_ranks(void)
{
    dt_set_context("fake ranks against a real root");
    duet_unique_id_t id;
    child_t root = spawn_root(2, 20.0, "fake_ranks.log", &id);
    const duet_boot_id_t *bid = (const duet_boot_id_t *)&id;
    uint8_t buf[4096];
    /* garbage */
    int fd = connect_to(bid->addr_be, bid->port_be);
    CHECK(getrandom(buf, 64, 0) == 64, "getrandom");
    CHECK(send(fd, buf, 64, MSG_NOSIGNAL) == 64, "send");
    CHECK(read_to_eof(fd, buf, sizeof buf, 0) == 0, "garbage got an answer");
    close(fd);
    /* an over-long length field */
    fd = connect_to(bid->addr_be, bid->port_be);
    duet_msg_hdr_t h = {DUET_BOOT_MSG_MAGIC, DUET_MSG_HELLO, 0, 0, 1ull << 40};
    CHECK(send(fd, &h, sizeof h, MSG_NOSIGNAL) == (ssize_t)sizeof h, "send");
    CHECK(read_to_eof(fd, buf, sizeof buf, 0) == 0, "a 1 TiB length got an answer");
    close(fd);
    /* idle ones, open all along */
    int idle[3];
    for (int i = 0; i < 3; i++) idle[i] = connect_to(bid->addr_be, bid->port_be);
    /* a handshake with a wrong secret */
    fd = connect_to(bid->addr_be, bid->port_be);
    hello_t hello = {.version = 2};
    CHECK(getrandom(hello.nonce, sizeof hello.nonce, 0) == (ssize_t)sizeof hello.nonce, "getrandom");
    send_msg(fd, DUET_MSG_HELLO, &hello, sizeof hello);
    size_t n = read_exactly(fd, buf, sizeof(duet_msg_hdr_t) + sizeof(proof_t));
    CHECK(n == sizeof(duet_msg_hdr_t) + sizeof(proof_t), "no proof from the root (%zu bytes)", n);
    CHECK(!holds_secret(buf, n, bid->secret), "the root's proof holds the secret");
    proof_t proof;
    memcpy(&proof, buf + sizeof(duet_msg_hdr_t), sizeof proof);
    uint8_t wrong[DUET_SECRET_BYTES];
    memcpy(wrong, ((const duet_boot_id_t *)&id)->secret, sizeof wrong);
    wrong[0] ^= 0x80;
    join_t j = {.rank = 1, .nranks = 2};
    duet_hash_part_t parts[] = {{"duet-rank", 9}, {hello.nonce, 16}, {proof.nonce, 16}, {&j.rank, 4}, {&j.nranks, 4}};
    duet_hmac_sha256(wrong, sizeof wrong, parts, 5, j.mac);
    send_msg(fd, DUET_MSG_JOIN, &j, sizeof j);
    CHECK(read_to_eof(fd, buf, sizeof buf, 0) == 0, "a rank with a wrong secret got an answer");
    close(fd);
    /* the real rank still joins, with the idle ones still open */
    child_t r1 = spawn_rank(id, 1, 2, 20.0, "fake_ranks.1.log");
    expect_ok(&r1, "rank 1");
    expect_ok(&root, "the root");
    for (int i = 0; i < 3; i++) close(idle[i]);
    CHECK(r1.r.secs < 3, "rank 1 took %.2f s to join past 3 idle connections", r1.r.secs);
    CHECK(log_has("fake_ranks.log", "did not prove the job secret"), "the root did not log the refusals");
}

/* Forwards between a and b, recording both directions, until both have closed. */
static size_t relay(int a, int b, uint8_t *rec, size_t cap)
{
    size_t have = 0;
    int open_a = 1, open_b = 1;
    while (open_a || open_b) {
        struct pollfd pf[2] = {{open_a ? a : -1, POLLIN, 0}, {open_b ? b : -1, POLLIN, 0}};
        CHECK(poll(pf, 2, WAIT_MS) > 0, "the relay saw nothing for %d ms", WAIT_MS);
        for (int s = 0; s < 2; s++) {
            if (!pf[s].revents) continue;
            int from = s ? b : a, to = s ? a : b;
            uint8_t chunk[65536];
            ssize_t n = recv(from, chunk, sizeof chunk, 0);
            if (n <= 0) {
                shutdown(to, SHUT_WR);
                if (s) open_b = 0;
                else open_a = 0;
                continue;
            }
            send(to, chunk, (size_t)n, MSG_NOSIGNAL);
            size_t keep = have + (size_t)n <= cap ? (size_t)n : cap - have;
            memcpy(rec + have, chunk, keep);
            have += keep;
        }
    }
    return have;
}

static void case_relay(void)
{
    dt_set_context("a real job through a recording relay");
    duet_unique_id_t id, via;
    child_t root = spawn_root(2, 20.0, "relay.log", &id);
    uint16_t port;
    int l = listener(&port);
    via = id;
    ((duet_boot_id_t *)&via)->addr_be = htonl(INADDR_LOOPBACK);
    ((duet_boot_id_t *)&via)->port_be = port;
    child_t r1 = spawn_rank(via, 1, 2, 20.0, "relay.1.log");
    int a = accept_within(l, WAIT_MS);
    CHECK(a >= 0, "rank 1 never reached the relay");
    int b = connect_to(((duet_boot_id_t *)&id)->addr_be, ((duet_boot_id_t *)&id)->port_be);
    static uint8_t rec[1 << 20];
    size_t n = relay(a, b, rec, sizeof rec);
    close(a);
    close(b);
    close(l);
    expect_ok(&r1, "rank 1 through the relay");
    expect_ok(&root, "the root");
    CHECK(n > sizeof(duet_msg_hdr_t) * 4, "the relay saw only %zu bytes", n);
    CHECK(!holds_secret(rec, n, ((duet_boot_id_t *)&id)->secret), "the job secret crossed the wire (%zu bytes recorded)", n);
}

/* A process that makes a unique id under `env` and reports the status, the id's address and
 * the address its listener is bound to. */
typedef struct {
    int st;
    uint32_t id_addr, bound_addr;
    uint16_t id_port, bound_port;
} bound_t;

static bound_t bound_under(const char *const *env)
{
    int p[2];
    CHECK(pipe(p) == 0, "pipe");
    pid_t pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) {
        for (int i = 0; env[i]; i++) putenv((char *)env[i]);
        bound_t b = {0};
        duet_unique_id_t id;
        b.st = duet_get_unique_id(&id);
        if (b.st == DUET_OK) {
            b.id_addr = ((duet_boot_id_t *)&id)->addr_be;
            b.id_port = ((duet_boot_id_t *)&id)->port_be;
            duet_boot_last_bound(&b.bound_addr, &b.bound_port);
        }
        _exit(write(p[1], &b, sizeof b) == (ssize_t)sizeof b ? 0 : 1);
    }
    close(p[1]);
    bound_t b;
    struct pollfd pf = {p[0], POLLIN, 0};
    CHECK(poll(&pf, 1, WAIT_MS) == 1 && read(p[0], &b, sizeof b) == (ssize_t)sizeof b, "no report");
    close(p[0]);
    int status;
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child failed");
    return b;
}

static void case_iface(void)
{
    /* the reference: the first up non-loopback IPv4 interface, as the system lists them */
    char first[IF_NAMESIZE + 8] = "";
    uint32_t first_addr = htonl(INADDR_LOOPBACK);
    struct ifaddrs *ifs = NULL, *i;
    CHECK(getifaddrs(&ifs) == 0, "getifaddrs");
    for (i = ifs; i && !first[0]; i = i->ifa_next)
        if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && (i->ifa_flags & IFF_UP) &&
            !(i->ifa_flags & IFF_LOOPBACK) && strncmp(i->ifa_name, "docker", 6) && strncmp(i->ifa_name, "virbr", 5)) {
            snprintf(first, sizeof first, "=%s", i->ifa_name);
            first_addr = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
        }
    freeifaddrs(ifs);
    char exact[64];
    snprintf(exact, sizeof exact, "DUET_SOCKET_IFNAME=%s", first[0] ? first : "=lo");
    const uint32_t lo = htonl(INADDR_LOOPBACK);
    struct {
        const char *name;
        const char *env[6];
        uint32_t want;
    } cases[] = {
        {"no launcher", {NULL}, first_addr},
        {"mpirun, all local", {"OMPI_COMM_WORLD_SIZE=4", "OMPI_COMM_WORLD_LOCAL_SIZE=4", "OMPI_COMM_WORLD_RANK=0", NULL}, lo},
        {"mpirun, 2 of 4 local", {"OMPI_COMM_WORLD_SIZE=4", "OMPI_COMM_WORLD_LOCAL_SIZE=2", "OMPI_COMM_WORLD_RANK=0", NULL},
         first_addr},
        {"srun, one node", {"SLURM_NTASKS=4", "SLURM_PROCID=0", "SLURM_NNODES=1", NULL}, lo},
        {"srun, two nodes", {"SLURM_NTASKS=4", "SLURM_PROCID=0", "SLURM_NNODES=2", NULL}, first_addr},
        {"torchrun, all local", {"WORLD_SIZE=3", "RANK=0", "LOCAL_WORLD_SIZE=3", NULL}, lo},
        {"duetrun-style, all local", {"DUET_RANK=0", "DUET_NRANKS=2", "DUET_LOCAL_SIZE=2", NULL}, lo},
        {"by hand, hosts unknown", {"DUET_RANK=0", "DUET_NRANKS=4", NULL}, first_addr},
        {"DUET_SOCKET_IFNAME=lo", {"DUET_SOCKET_IFNAME=lo", NULL}, lo},
        {"DUET_SOCKET_IFNAME=^lo", {"DUET_SOCKET_IFNAME=^lo,docker,virbr", NULL}, first_addr},
        {"DUET_SOCKET_IFNAME=exact", {exact, "OMPI_COMM_WORLD_SIZE=4", "OMPI_COMM_WORLD_LOCAL_SIZE=4",
                                      "OMPI_COMM_WORLD_RANK=0", NULL}, first_addr},
        {"DUET_BOOTSTRAP_IFADDR", {"DUET_BOOTSTRAP_IFADDR=127.0.0.1", NULL}, lo},
    };
    for (size_t c = 0; c < DUET_ARRAY_LEN(cases); c++) {
        dt_set_context(cases[c].name);
        bound_t b = bound_under(cases[c].env);
        struct in_addr got = {b.bound_addr}, want = {cases[c].want};
        char got_s[32];
        snprintf(got_s, sizeof got_s, "%s", inet_ntoa(got));
        CHECK(b.st == DUET_OK, "%s: duet_get_unique_id: %s", cases[c].name, duet_status_str(b.st));
        CHECK(b.bound_addr != 0, "%s: the listener is bound to every interface", cases[c].name);
        CHECK(b.bound_addr == b.id_addr && b.bound_port == b.id_port, "%s: bound and advertised differ", cases[c].name);
        CHECK(b.bound_addr == cases[c].want, "%s: bound to %s, expected %s", cases[c].name, got_s, inet_ntoa(want));
    }
    dt_set_context("DUET_SOCKET_IFNAME naming nothing");
    const char *none[] = {"DUET_SOCKET_IFNAME==no-such-interface", "DUET_DEBUG=NONE", NULL};
    CHECK(bound_under(none).st == DUET_ERR_INVALID_ARG, "an interface that does not exist was accepted");
}

static void case_idle(int count)
{
    char ctx[64];
    snprintf(ctx, sizeof ctx, "%d idle connections", count);
    dt_set_context(ctx);
    duet_unique_id_t id;
    child_t root = spawn_root(2, 20.0, "idle.log", &id);
    const duet_boot_id_t *bid = (const duet_boot_id_t *)&id;
    int *fds = malloc(sizeof(int) * (size_t)count);
    CHECK(fds, "malloc");
    for (int i = 0; i < count; i++) fds[i] = connect_to(bid->addr_be, bid->port_be);
    child_t r1 = spawn_rank(id, 1, 2, 20.0, "idle.1.log");
    expect_ok(&r1, "rank 1");
    expect_ok(&root, "the root");
    for (int i = 0; i < count; i++) close(fds[i]);
    free(fds);
    CHECK(r1.r.secs < 3.0, "rank 1 took %.2f s to join past %d idle connections", r1.r.secs, count);
    printf("test_boot_sec: rank 1 joined in %.3f s past %d idle connections\n", r1.r.secs, count);
}

static int wanted(int argc, char **argv, const char *name)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], name)) return 1;
    return argc < 2;
}

int main(int argc, char **argv) /* argv: the cases to run (default: all) */
{
    signal(SIGPIPE, SIG_IGN);
    g_dir = dt_temp_dir("/tmp/duet-boot-sec.XXXXXX");
    CHECK(g_dir, "mkdtemp: %s", strerror(errno));
    CHECK(chmod(g_dir, 0700) == 0, "chmod");
    for (int i = 0; i < DUET_SECRET_BYTES; i++) sscanf(g_secret_hex + 2 * i, "%2hhx", &g_secret[i]);
    /* room for 1,000 idle connections in the root (and in this process) */
    struct rlimit rl;
    CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0, "getrlimit");
    if (rl.rlim_cur < 4096) rl.rlim_cur = rl.rlim_max < 4096 ? rl.rlim_max : 4096;
    setrlimit(RLIMIT_NOFILE, &rl);
    int many = rl.rlim_cur > 1100 ? 1000 : (int)rl.rlim_cur - 100;
    double t0 = now_s();
    if (wanted(argc, argv, "fake_root")) case_fake_root_addr();
    if (wanted(argc, argv, "planted")) case_planted();
    if (wanted(argc, argv, "fake_ranks")) case_fake_ranks();
    if (wanted(argc, argv, "relay")) case_relay();
    if (wanted(argc, argv, "iface")) case_iface();
    if (wanted(argc, argv, "idle")) case_idle(7);
    if (wanted(argc, argv, "idle")) case_idle(many);
    printf("test_boot_sec: passed in %.1f s\n", now_s() - t0);
    return 0;
}
