/*
 * test_boot.c — bootstrap failure modes of duet_get_unique_id + duet_comm_init_rank.
 *
 * A plain single-process test (no duetrun). The parent makes no Duet call (but for
 * duet_status_str and duet_last_error in failure reports); every rank is
 * a child made by fork(), which runs duet_comm_init_rank with a 2 s bootstrap timeout
 * (duet_config_t.bootstrap_timeout_s), writes a report (statuses, time taken,
 * duet_last_error()) into a pipe and exits. The root child makes the unique id and hands
 * it to the parent through a pipe; the parent then starts the other ranks in the order a
 * scenario needs and judges the reports.
 *
 *   a  a correct 3-rank rendezvous; the ranks then use the communicator and destroy it,
 *      and nothing of it is left in /dev/shm
 *   b  a rank claiming a wrong world size is refused (DUET_ERR_INVALID_ARG, the message
 *      names both sizes); the root goes on and the right rank completes the job
 *   c  two ranks claiming the same rank: one is refused as a duplicate, the job completes
 *   d  a connection with a wrong secret (the id with one secret byte flipped) is refused,
 *      the root logs it and keeps waiting; the legitimate rank completes the job
 *   e  an unreachable root (a loopback port nobody listens on) -> DUET_ERR_TIMEOUT after
 *      about the timeout
 *   f  the root waiting for a rank that never comes -> DUET_ERR_TIMEOUT naming the
 *      missing rank; the rank that did come (given a longer timeout than the root's)
 *      gets the root's verdict, naming the missing rank too
 *   g  rank 0 claimed by a process that did not make the id -> DUET_ERR_INVALID_ARG
 */
#include "duet_test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "boot/duet_boot.h" /* duet_boot_id_t: the layout behind duet_unique_id_t */

#define TIMEOUT_S 2.0
#define REPORT_WAIT_MS 15000 /* the parent's own bound on any child */

static const char *g_dir; /* dt_temp_dir(): the root children's logs */

typedef struct {
    int st_init, st_after; /* duet_comm_init_rank; barrier + put + destroy when it worked */
    double secs;           /* time spent in duet_comm_init_rank */
    char msg[900];         /* duet_last_error() after a failure */
} report_t;

typedef struct {
    pid_t pid;
    int fd; /* read end of the report pipe */
    report_t r;
} child_t;

/* Runs in a child: join, use the communicator, report. */
static void child_join(int report_fd, duet_unique_id_t id, int rank, int nranks, double timeout_s)
{
    report_t r;
    memset(&r, 0, sizeof r);
    duet_config_t cfg = DUET_CONFIG_INIT;
    cfg.symmetric_size = 1 << 20;
    cfg.bootstrap_timeout_s = timeout_s;
    duet_comm_t c = NULL;
    double t0 = now_s();
    r.st_init = duet_comm_init_rank(&c, nranks, id, rank, &cfg);
    r.secs = now_s() - t0;
    if (r.st_init != DUET_OK) {
        snprintf(r.msg, sizeof r.msg, "%s", duet_last_error());
    } else {
        /* the communicator works: everyone writes its rank into rank 0's block */
        int *p = duet_malloc(c, 64 * sizeof(int));
        r.st_after = p ? DUET_OK : DUET_ERR_NO_MEMORY;
        if (!r.st_after) r.st_after = duet_put(c, &p[rank], &rank, sizeof rank, 0);
        if (!r.st_after) r.st_after = duet_barrier(c);
        for (int i = 0; rank == 0 && !r.st_after && i < nranks; i++)
            if (p[i] != i) r.st_after = DUET_ERR_INTERNAL;
        if (!r.st_after) r.st_after = duet_free(c, p);
        if (!r.st_after) r.st_after = duet_comm_destroy(c);
        if (r.st_after) snprintf(r.msg, sizeof r.msg, "%s", duet_last_error());
    }
    ssize_t w = write(report_fd, &r, sizeof r);
    _exit(w == (ssize_t)sizeof r ? 0 : 1);
}

static child_t spawn_t(duet_unique_id_t id, int rank, int nranks, double timeout_s)
{
    int p[2];
    CHECK(pipe(p) == 0, "pipe: %s", strerror(errno));
    child_t c = {fork(), p[0], {0}};
    CHECK(c.pid >= 0, "fork: %s", strerror(errno));
    if (c.pid == 0) {
        close(p[0]);
        child_join(p[1], id, rank, nranks, timeout_s);
    }
    close(p[1]);
    return c;
}
static child_t spawn(duet_unique_id_t id, int rank, int nranks) { return spawn_t(id, rank, nranks, TIMEOUT_S); }

/* The root: makes the id (sent to the parent), then joins as rank 0. Its log goes to
 * g_dir/<log>. */
static child_t spawn_root(int nranks, const char *log, duet_unique_id_t *id)
{
    int idp[2], p[2];
    CHECK(pipe(idp) == 0 && pipe(p) == 0, "pipe: %s", strerror(errno));
    child_t c = {fork(), p[0], {0}};
    CHECK(c.pid >= 0, "fork: %s", strerror(errno));
    if (c.pid == 0) {
        close(idp[0]);
        close(p[0]);
        char path[256];
        snprintf(path, sizeof path, "%s/%s", g_dir, log);
        setenv("DUET_DEBUG_FILE", path, 1); /* read at this process's first Duet call */
        setenv("DUET_DEBUG", "WARN", 1);
        duet_unique_id_t mine;
        if (duet_get_unique_id(&mine) != DUET_OK) _exit(3);
        if (write(idp[1], &mine, sizeof mine) != (ssize_t)sizeof mine) _exit(4);
        close(idp[1]);
        child_join(p[1], mine, 0, nranks, TIMEOUT_S);
    }
    close(idp[1]);
    close(p[1]);
    struct pollfd pf = {idp[0], POLLIN, 0};
    CHECK(poll(&pf, 1, REPORT_WAIT_MS) == 1 && read(idp[0], id, sizeof *id) == (ssize_t)sizeof *id,
          "the root sent no unique id");
    close(idp[0]);
    return c;
}

/* Waits for the report of c (bounded), reaps it. */
static void finish(child_t *c, const char *who)
{
    struct pollfd pf = {c->fd, POLLIN, 0};
    int n;
    while ((n = poll(&pf, 1, REPORT_WAIT_MS)) < 0 && errno == EINTR) {}
    if (n != 1 || read(c->fd, &c->r, sizeof c->r) != (ssize_t)sizeof c->r) {
        kill(c->pid, SIGKILL);
        waitpid(c->pid, NULL, 0);
        FATAL("%s gave no report within %d ms", who, REPORT_WAIT_MS);
    }
    close(c->fd);
    int status;
    CHECK(waitpid(c->pid, &status, 0) == c->pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "%s did not exit cleanly", who);
}

/* Waits for whichever of a and b reports first; returns it. */
static child_t *first_of(child_t *a, child_t *b)
{
    struct pollfd pf[2] = {{a->fd, POLLIN, 0}, {b->fd, POLLIN, 0}};
    CHECK(poll(pf, 2, REPORT_WAIT_MS) > 0, "neither child reported");
    return pf[0].revents ? a : b;
}

static void expect_ok(child_t *c, const char *who)
{
    finish(c, who);
    CHECK(c->r.st_init == DUET_OK && c->r.st_after == DUET_OK, "%s: init %s, then %s: %s", who,
          duet_status_str(c->r.st_init), duet_status_str(c->r.st_after), c->r.msg);
}

static void expect_fail(child_t *c, const char *who, int want, const char *text1, const char *text2)
{
    finish(c, who);
    CHECK(c->r.st_init == want, "%s: got %s, want %s (%s)", who, duet_status_str(c->r.st_init),
          duet_status_str(want), c->r.msg);
    CHECK(c->r.msg[0], "%s: no message", who);
    CHECK(!text1 || strstr(c->r.msg, text1), "%s: message lacks \"%s\": %s", who, text1, c->r.msg);
    CHECK(!text2 || strstr(c->r.msg, text2), "%s: message lacks \"%s\": %s", who, text2, c->r.msg);
}

static int log_has(const char *log, const char *text)
{
    char path[256], line[2048];
    snprintf(path, sizeof path, "%s/%s", g_dir, log);
    FILE *f = fopen(path, "r");
    int found = 0;
    while (f && !found && fgets(line, sizeof line, f)) found = strstr(line, text) != NULL;
    if (f) fclose(f);
    return found;
}

static int shm_left(const duet_unique_id_t *uid)
{
    const duet_boot_id_t *id = (const duet_boot_id_t *)uid;
    char secret[2 * DUET_SECRET_BYTES + 1];
    for (int i = 0; i < DUET_SECRET_BYTES; i++) sprintf(secret + 2 * i, "%02x", id->secret[i]);
    return dt_count_shm(secret, NULL, 0);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    g_dir = dt_temp_dir("/tmp/duet-boot-test.XXXXXX"); /* removed at exit, also after a failed CHECK */
    CHECK(g_dir, "mkdtemp: %s", strerror(errno));
    duet_unique_id_t id, saved;
    double t0 = now_s();

    dt_set_context("case a (3 ranks)");
    child_t root = spawn_root(3, "a.log", &id), r1 = spawn(id, 1, 3), r2 = spawn(id, 2, 3);
    expect_ok(&r2, "rank 2");
    expect_ok(&r1, "rank 1");
    expect_ok(&root, "root");
    CHECK(shm_left(&id) == 0, "segments of the communicator left in /dev/shm");
    saved = id;

    dt_set_context("case b (wrong world size)");
    root = spawn_root(2, "b.log", &id);
    child_t liar = spawn(id, 1, 3);
    expect_fail(&liar, "rank claiming 3 ranks", DUET_ERR_INVALID_ARG, "3 ranks", "says 2");
    r1 = spawn(id, 1, 2);
    expect_ok(&r1, "rank 1");
    expect_ok(&root, "root");
    CHECK(log_has("b.log", "refused"), "the root did not log the refusal");

    dt_set_context("case c (duplicate rank)");
    root = spawn_root(3, "c.log", &id);
    child_t d1 = spawn(id, 1, 3), d2 = spawn(id, 1, 3);
    child_t *loser = first_of(&d1, &d2), *winner = loser == &d1 ? &d2 : &d1;
    expect_fail(loser, "the duplicate rank 1", DUET_ERR_INVALID_ARG, "twice", "duplicate");
    r2 = spawn(id, 2, 3);
    expect_ok(&r2, "rank 2");
    expect_ok(winner, "rank 1");
    expect_ok(&root, "root");

    dt_set_context("case d (wrong secret)");
    root = spawn_root(2, "d.log", &id);
    duet_unique_id_t forged = id;
    ((duet_boot_id_t *)&forged)->secret[5] ^= 0x01;
    child_t stranger = spawn(forged, 1, 2);
    finish(&stranger, "the stranger");
    CHECK(stranger.r.st_init != DUET_OK && stranger.r.msg[0], "the stranger joined: %s",
          duet_status_str(stranger.r.st_init));
    CHECK(stranger.r.secs < TIMEOUT_S + 1, "the stranger took %.2f s to learn it was refused", stranger.r.secs);
    r1 = spawn(id, 1, 2);
    expect_ok(&r1, "rank 1");
    expect_ok(&root, "root");
    CHECK(log_has("d.log", "did not prove the job secret"), "the root did not log the refused connection");

    /* e, f and g run side by side: they only wait out timeouts. (No "unroutable address"
     * case: a test never sends packets anywhere but this machine's loopback.) */
    dt_set_context("case e/f/g (timeouts)");
    int blocker = socket(AF_INET, SOCK_STREAM, 0); /* bound, never listening: connections refused */
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr = {htonl(INADDR_LOOPBACK)}};
    socklen_t sl = sizeof sa;
    CHECK(blocker >= 0 && bind(blocker, (struct sockaddr *)&sa, sizeof sa) == 0 &&
          getsockname(blocker, (struct sockaddr *)&sa, &sl) == 0, "cannot bind a port: %s", strerror(errno));
    duet_unique_id_t dead_port = saved;
    ((duet_boot_id_t *)&dead_port)->addr_be = htonl(INADDR_LOOPBACK);
    ((duet_boot_id_t *)&dead_port)->port_be = sa.sin_port;
    child_t e1 = spawn(dead_port, 1, 2);
    root = spawn_root(3, "f.log", &id);
    r1 = spawn_t(id, 1, 3, 2 * TIMEOUT_S); /* outlasts the root, so it hears the verdict */
    child_t thief = spawn(saved, 0, 3); /* a's id, whose maker is gone */

    expect_fail(&thief, "rank 0 of another process's id", DUET_ERR_INVALID_ARG, "created", NULL);
    expect_fail(&e1, "rank of an id whose port is closed", DUET_ERR_TIMEOUT, "root", NULL);
    CHECK(e1.r.secs > TIMEOUT_S * 0.9 && e1.r.secs < TIMEOUT_S + 1.5, "gave up after %.2f s", e1.r.secs);
    expect_fail(&root, "root missing rank 2", DUET_ERR_TIMEOUT, "missing: 2", NULL);
    CHECK(!strstr(root.r.msg, "missing: 1"), "root names a rank that came: %s", root.r.msg);
    CHECK(root.r.secs > TIMEOUT_S * 0.9 && root.r.secs < TIMEOUT_S + 1.5, "gave up after %.2f s", root.r.secs);
    /* the rank that came learns the root's verdict (with equal timeouts on both sides
     * its own deadline races the verdict; here it waits longer than the root) */
    expect_fail(&r1, "rank 1 of the incomplete job", DUET_ERR_TIMEOUT, "missing: 2", NULL);
    CHECK(r1.r.secs < TIMEOUT_S + 1.5, "rank 1 waited %.2f s, past the root's verdict", r1.r.secs);
    close(blocker);

    printf("test_boot: passed in %.1f s\n", now_s() - t0);
    return 0;
}
