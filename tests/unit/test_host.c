/*
 * test_host.c — host identity (src/core/duet_host.c, docs/NETWORK.md 2.2).
 *
 * Covers: this process's key (a boot id in the kernel's UUID form, /dev/shm's device and
 * inode, the pid and network namespace inodes, all read); a process and its fork child are
 * "all local" (machine, shm, pid, fd); the comparison on made-up keys, one field changed at
 * a time (boot id: nothing shared; /dev/shm device or inode: the machine only; pid
 * namespace: no PID bit; network namespace: no FD bit), symmetric, and the reasons given in
 * words; as root, a child in its own network namespace (FD bit gone) and one with its own
 * /dev/shm (a bind mount, as tests/net/netns.sh makes: the machine only) — skipped with a
 * note where unshare(2) is refused; DUET_NET parsed (auto, off, force, case-insensitive,
 * anything else: auto with a warning); a one-rank duet_init() with DUET_NET=force fails with
 * DUET_ERR_UNSUPPORTED and a message naming the setting in a build without UCX (with UCX it
 * works), with DUET_NET=off it works. Each
 * setting is read in a fork child, before the parent reads the settings.
 */
#include "duet_test.h"

#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "core/duet_host.h"
#include "tport/duet_tport_net.h"

/* Runs fn in a fork child; returns its exit status (or 128 + signal). */
static int in_child(int (*fn)(void *), void *arg)
{
    fflush(stdout);
    fflush(stderr);
    pid_t p = fork();
    CHECK(p >= 0, "fork");
    if (p == 0) _exit(fn(arg));
    int ws;
    CHECK(waitpid(p, &ws, 0) == p, "waitpid");
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
}

static int net_mode_of(void *text)
{
    if (text) setenv("DUET_NET", text, 1);
    else unsetenv("DUET_NET");
    setenv("DUET_DEBUG", "NONE", 1); /* the warning of a bad value is not this test's output */
    return (int)duet_host_net_mode();
}

static int init_with(void *text)
{
    setenv("DUET_NET", text, 1);
    setenv("DUET_DEBUG", "NONE", 1);
    setenv("DUET_SYMMETRIC_SIZE", "4M", 1);
    setenv("DUET_COLL_ZONE_SIZE", "64M", 1);
    setenv("DUET_CUDA", "off", 1);
    duet_status_t st = duet_init();
    if (strcmp(text, "force") == 0 && !duet_tport_net_built()) { /* with UCX: force runs (one rank: no peer) */
        if (st != DUET_ERR_UNSUPPORTED) return 10;
        if (!strstr(duet_last_error(), "DUET_NET=force") || !strstr(duet_last_error(), "issue 8")) {
            fprintf(stderr, "test_host: the force message: %s\n", duet_last_error());
            return 11;
        }
        return 0;
    }
    if (st != DUET_OK) {
        fprintf(stderr, "test_host: duet_init with DUET_NET=%s: %s\n", (char *)text, duet_last_error());
        return 12;
    }
    return duet_finalize() == DUET_OK ? 0 : 13;
}

static void test_settings(void)
{
    dt_set_context("DUET_NET");
    static const struct {
        const char *text;
        int want;
    } cases[] = {{NULL, DUET_NET_AUTO},   {"auto", DUET_NET_AUTO}, {"AUTO", DUET_NET_AUTO},
                 {"off", DUET_NET_OFF},   {"Off", DUET_NET_OFF},   {"0", DUET_NET_OFF},
                 {"force", DUET_NET_FORCE}, {"FORCE", DUET_NET_FORCE}, {"sometimes", DUET_NET_AUTO}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int got = in_child(net_mode_of, (void *)cases[i].text);
        EXPECT(got == cases[i].want, "DUET_NET=%s -> mode %d, want %d", cases[i].text ? cases[i].text : "(unset)",
               got, cases[i].want);
    }
    EXPECT(!strcmp(duet_host_net_name(DUET_NET_FORCE), "force") && !strcmp(duet_host_net_name(DUET_NET_OFF), "off") &&
               !strcmp(duet_host_net_name(DUET_NET_AUTO), "auto"), "names of the modes");
    EXPECT(in_child(init_with, "force") == 0, duet_tport_net_built() ? "one rank, DUET_NET=force: duet_init must work"
                                                                     : "one rank, DUET_NET=force (no UCX): want "
                                                                       "DUET_ERR_UNSUPPORTED naming it");
    EXPECT(in_child(init_with, "off") == 0, "one rank, DUET_NET=off: duet_init must work");
    dt_set_context(NULL);
}

static void test_own_key(const duet_host_key_t *k)
{
    dt_set_context("own key");
    EXPECT(strlen(k->boot_id) == 36 && k->boot_id[8] == '-' && k->boot_id[13] == '-', "boot id \"%s\"",
           k->boot_id);
    EXPECT(k->shm_dev != 0 || k->shm_ino != 0, "/dev/shm not read");
    EXPECT(k->pid_ns != 0 && k->net_ns != 0, "namespaces: pid %llu net %llu", (unsigned long long)k->pid_ns,
           (unsigned long long)k->net_ns);
    char host[64] = "";
    gethostname(host, sizeof host - 1);
    EXPECT(!strcmp(k->host, host), "host \"%s\", want \"%s\"", k->host, host);
    unsigned all = DUET_HOST_MACHINE | DUET_HOST_SHM | DUET_HOST_PID | DUET_HOST_FD;
    EXPECT(duet_host_reach(k, k) == all, "a key with itself: %#x", duet_host_reach(k, k));
    char why[256] = "x";
    duet_host_why_apart(k, k, why, sizeof why);
    EXPECT(why[0] == '\0', "a reason to be apart from myself: %s", why);
    dt_set_context(NULL);
}

/* A child's key, by a pipe; setup (or NULL) runs in the child first, and 77 from it means
 * "cannot here". Returns 0, or 77. */
typedef int (*setup_fn)(void);
static int child_key(setup_fn setup, duet_host_key_t *out)
{
    int fds[2];
    CHECK(pipe(fds) == 0, "pipe");
    fflush(stdout);
    fflush(stderr);
    pid_t p = fork();
    CHECK(p >= 0, "fork");
    if (p == 0) {
        close(fds[0]);
        int rc = setup ? setup() : 0;
        if (rc) _exit(rc);
        duet_host_key_t k;
        duet_host_key_get(&k);
        _exit(write(fds[1], &k, sizeof k) == (ssize_t)sizeof k ? 0 : 1);
    }
    close(fds[1]);
    ssize_t n = read(fds[0], out, sizeof *out);
    close(fds[0]);
    int ws;
    CHECK(waitpid(p, &ws, 0) == p, "waitpid");
    int rc = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
    if (rc == 77) return 77;
    CHECK(rc == 0 && n == (ssize_t)sizeof *out, "the child's key: status %d, %zd bytes", rc, n);
    return 0;
}

static int own_net(void) { return unshare(CLONE_NEWNET) == 0 ? 0 : 77; }

static char shm_dir[64];
static int own_shm(void) /* as netns.sh: a private directory bind-mounted over /dev/shm */
{
    if (unshare(CLONE_NEWNS) != 0) return 77;
    if (mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) return 77;
    if (mount(shm_dir, "/dev/shm", NULL, MS_BIND, NULL) != 0) return 77;
    return 0;
}

static void test_children(const duet_host_key_t *me)
{
    unsigned all = DUET_HOST_MACHINE | DUET_HOST_SHM | DUET_HOST_PID | DUET_HOST_FD;
    duet_host_key_t k;
    dt_set_context("fork child");
    child_key(NULL, &k);
    EXPECT(duet_host_reach(me, &k) == all, "a fork child: %#x, want all local", duet_host_reach(me, &k));

    dt_set_context("own network namespace");
    if (child_key(own_net, &k) == 77) {
        printf("test_host: skipped: unshare(CLONE_NEWNET) refused here\n");
    } else {
        EXPECT(duet_host_reach(me, &k) == (all & ~(unsigned)DUET_HOST_FD), "%#x: the FD bit must go",
               duet_host_reach(me, &k));
    }

    dt_set_context("own /dev/shm");
    snprintf(shm_dir, sizeof shm_dir, "/dev/shm/duet-test-host-%d", (int)getpid());
    if (mkdir(shm_dir, 0700) != 0 || child_key(own_shm, &k) == 77) {
        printf("test_host: skipped: no private /dev/shm here (needs root and unshare)\n");
    } else {
        EXPECT(duet_host_reach(me, &k) == DUET_HOST_MACHINE, "%#x: the machine only", duet_host_reach(me, &k));
        char why[256];
        duet_host_why_apart(me, &k, why, sizeof why);
        EXPECT(strstr(why, "separate /dev/shm") != NULL, "reason: %s", why);
    }
    rmdir(shm_dir);
    dt_set_context(NULL);
}

static void test_compare(const duet_host_key_t *me)
{
    unsigned all = DUET_HOST_MACHINE | DUET_HOST_SHM | DUET_HOST_PID | DUET_HOST_FD;
    static const struct {
        const char *what;
        int field;
        unsigned want;
        const char *why; /* in the reason, or NULL: no reason */
    } cases[] = {
        {"boot id", 0, 0, "different boot id"},
        {"/dev/shm device", 1, DUET_HOST_MACHINE, "separate /dev/shm"},
        {"/dev/shm inode", 2, DUET_HOST_MACHINE, "separate /dev/shm"},
        {"pid namespace", 3, DUET_HOST_MACHINE | DUET_HOST_SHM | DUET_HOST_FD, NULL},
        {"network namespace", 4, DUET_HOST_MACHINE | DUET_HOST_SHM | DUET_HOST_PID, NULL},
        {"host name", 5, DUET_HOST_MACHINE | DUET_HOST_SHM | DUET_HOST_PID | DUET_HOST_FD, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        dt_set_context(cases[i].what);
        duet_host_key_t k = *me;
        switch (cases[i].field) {
        case 0: k.boot_id[0] = k.boot_id[0] == 'a' ? 'b' : 'a'; break;
        case 1: k.shm_dev++; break;
        case 2: k.shm_ino++; break;
        case 3: k.pid_ns++; break;
        case 4: k.net_ns++; break;
        case 5: snprintf(k.host, sizeof k.host, "%s", "another-name"); break;
        }
        EXPECT(duet_host_reach(me, &k) == cases[i].want, "%#x, want %#x", duet_host_reach(me, &k), cases[i].want);
        EXPECT(duet_host_reach(&k, me) == duet_host_reach(me, &k), "not symmetric");
        char why[256];
        duet_host_why_apart(me, &k, why, sizeof why);
        if (cases[i].why)
            EXPECT(strstr(why, cases[i].why) != NULL, "reason \"%s\" lacks \"%s\"", why, cases[i].why);
        else
            EXPECT(why[0] == '\0', "a reason where the memory is shared: %s", why);
    }
    /* a boot id without its terminator (bytes from a peer) is bounded, not overrun */
    duet_host_key_t a = *me, b = *me;
    memset(a.boot_id, 'x', sizeof a.boot_id);
    memset(b.boot_id, 'x', sizeof b.boot_id);
    EXPECT(duet_host_reach(&a, &b) == all, "unterminated equal boot ids");
    dt_set_context(NULL);
}

int main(void)
{
    test_settings(); /* first: each case reads the settings afresh in a child */
    duet_host_key_t me;
    duet_host_key_get(&me);
    printf("test_host: host %s, boot id %s, /dev/shm %llu/%llu, pid ns %llu, net ns %llu\n", me.host, me.boot_id,
           (unsigned long long)me.shm_dev, (unsigned long long)me.shm_ino, (unsigned long long)me.pid_ns,
           (unsigned long long)me.net_ns);
    test_own_key(&me);
    test_compare(&me);
    test_children(&me);
    return dt_finish();
}
