/*
 * test_shm_names.c — the names Duet makes where other users can list them (/dev/shm, the
 * abstract Unix sockets of /proc/net/unix) reveal no secret (issue 18 item 3).
 *
 *   test_shm_names --duetrun PATH       (the driver; a plain ctest test)
 *       watches /dev/shm with inotify (every name created there, however briefly it lives)
 *       and samples /proc/net/unix while it runs
 *         job         duetrun -n 3 test_shm_names rank DIR: the world, a communicator made
 *                     with duet_get_unique_id + duet_comm_init_rank, and a team
 *         standalone  no launcher, no DUET_JOB_SECRET: this process and a child make a
 *                     2-rank communicator from duet_get_unique_id
 *       and checks that (a) every segment name the ranks map (from /proc/self/maps: their
 *       peers' segments; a rank maps its own before it has a name) was created in /dev/shm,
 *       so the check is not vacuous, and
 *       (b) no name created in /dev/shm or listed in /proc/net/unix during the runs holds
 *       the job secret's hex, or any 8 hex digits of it, or of any 4 bytes of a unique id.
 *
 *   duetrun -n N test_shm_names rank DIR  (a rank of the job)
 *       builds the three communicators, then, all parked at a barrier, lists /dev/shm and
 *       /proc/net/unix itself and applies (b); writes DIR/secret.<rank> (the job secret, the
 *       id's 128 bytes in hex) and DIR/maps.<rank> (the /dev/shm names it maps).
 */
#include "duet_test.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#define MAX_NAMES 4096

typedef struct {
    char *name[MAX_NAMES];
    int n;
} names_t;

static void names_add(names_t *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->name[i], name)) return;
    if (s->n < MAX_NAMES) s->name[s->n++] = strdup(name);
}

static void hex_of(const uint8_t *p, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++) sprintf(out + 2 * i, "%02x", p[i]);
}

/* Does `text` hold `secret_hex` or any 8 of its consecutive hex digits, starting on a byte
 * (4 bytes of the secret)? Upper-case forms too. */
static int reveals(const char *text, const char *secret_hex)
{
    size_t n = strlen(secret_hex);
    char low[1024], win[9];
    size_t t = strlen(text);
    if (t >= sizeof low) t = sizeof low - 1;
    for (size_t i = 0; i < t; i++) low[i] = (char)(text[i] >= 'A' && text[i] <= 'F' ? text[i] - 'A' + 'a' : text[i]);
    low[t] = '\0';
    for (size_t i = 0; i + 8 <= n; i += 2) {
        memcpy(win, secret_hex + i, 8);
        win[8] = '\0';
        if (strstr(low, win)) return 1;
    }
    return 0;
}

/* The names of the abstract sockets in /proc/net/unix ("@..."), added to s. */
static void list_sockets(names_t *s)
{
    FILE *f = fopen("/proc/net/unix", "r");
    char line[512];
    if (!f) return;
    while (fgets(line, sizeof line, f)) {
        char *at = strchr(line, '@');
        if (!at) continue;
        at[strcspn(at, "\n")] = '\0';
        names_add(s, at);
    }
    fclose(f);
}

static void list_shm(names_t *s)
{
    DIR *d = opendir("/dev/shm");
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.') names_add(s, e->d_name);
    closedir(d);
}

/* The /dev/shm names of the segments this process maps, one a line, into f (or counted). */
static int my_segment_names(FILE *out)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[1024];
    names_t seen = {{0}, 0};
    CHECK(f, "cannot read /proc/self/maps");
    while (fgets(line, sizeof line, f)) {
        char *p = strstr(line, " /dev/shm/duet-");
        if (!p) continue;
        p += strlen(" /dev/shm/");
        p[strcspn(p, " \n")] = '\0';
        names_add(&seen, p);
    }
    fclose(f);
    for (int i = 0; i < seen.n; i++) {
        if (out) fprintf(out, "%s\n", seen.name[i]);
        free(seen.name[i]);
    }
    return seen.n;
}

static int rank_main(const char *dir)
{
    const char *secret = getenv("DUET_JOB_SECRET");
    CHECK(secret && strlen(secret) == 32, "no DUET_JOB_SECRET: run me under duetrun");
    setenv("DUET_SYMMETRIC_SIZE", "4M", 1);
    int me, n;
    CHECK_OK(duet_init());
    duet_comm_t w = dt_world(&me, &n);
    duet_unique_id_t *sym = duet_malloc(w, sizeof *sym), id;
    CHECK(sym, "malloc");
    if (me == 0) CHECK_OK(duet_get_unique_id(&id));
    CHECK_OK(dt_bcast(w, sym, &id, sizeof id, 0));
    duet_comm_t c, t;
    duet_config_t cfg = DUET_CONFIG_INIT;
    cfg.symmetric_size = 1 << 20;
    CHECK_OK(duet_comm_init_rank(&c, n, id, me, &cfg));
    CHECK_OK(duet_comm_split(w, me % 2, 0, &t));
    CHECK_OK(duet_barrier(c));
    CHECK_OK(duet_barrier(w));

    /* parked: everything is set up; list what anyone could list */
    char id_hex[2 * sizeof id + 1], text[2 * sizeof id + 64];
    hex_of((const uint8_t *)&id, sizeof id, id_hex);
    names_t now = {{0}, 0};
    list_shm(&now);
    list_sockets(&now);
    for (int i = 0; i < now.n; i++) {
        EXPECT(!reveals(now.name[i], secret), "\"%s\" (listed while parked) shows part of the job secret %s",
               now.name[i], secret);
        EXPECT(!reveals(now.name[i], id_hex), "\"%s\" (listed while parked) shows part of the unique id",
               now.name[i]);
        free(now.name[i]);
    }
    snprintf(text, sizeof text, "%s %s\n", secret, id_hex);
    dt_write_rank_file(dir, "secret", me, text);
    char maps[8192] = "";
    FILE *m = fmemopen(maps, sizeof maps - 1, "w");
    CHECK(m, "fmemopen");
    int named = my_segment_names(m);
    fclose(m);
    /* its own segment it mapped before naming it (/dev/shm/#<inode>): its peers' are named */
    EXPECT(named >= 2 * (n - 1), "this rank maps %d named segments, want %d (its peers' in the world and in the "
           "unique-id communicator)", named, 2 * (n - 1));
    dt_write_rank_file(dir, "maps", me, maps);
    CHECK_OK(duet_barrier(w));
    CHECK_OK(duet_comm_destroy(t));
    CHECK_OK(duet_comm_destroy(c));
    CHECK_OK(duet_free(w, sym));
    CHECK_OK(duet_finalize());
    return dt_finish();
}

/* ---- the driver */

typedef struct {
    int in;         /* inotify on /dev/shm */
    names_t shm;    /* every name created there */
    names_t socks;  /* every abstract socket seen */
} watch_t;

static void drain(watch_t *wt)
{
    char buf[65536] __attribute__((aligned(8)));
    ssize_t got;
    while ((got = read(wt->in, buf, sizeof buf)) > 0)
        for (char *p = buf; p < buf + got;) {
            struct inotify_event *e = (struct inotify_event *)(void *)p;
            if (e->len && (e->mask & IN_Q_OVERFLOW) == 0) names_add(&wt->shm, e->name);
            EXPECT(!(e->mask & IN_Q_OVERFLOW), "inotify queue overflowed: names may have been missed");
            p += sizeof *e + e->len;
        }
}

/* Until `pid` ends (its pidfd), draining inotify; at each wake-up (a name was made: the
 * ranks are setting up) /proc/net/unix is sampled too. Bounded by duetrun's --timeout. */
static int watch_until_exit(watch_t *wt, pid_t pid)
{
    int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
    CHECK(pfd >= 0, "pidfd_open: %s", strerror(errno));
    for (;;) {
        struct pollfd p[2] = {{wt->in, POLLIN, 0}, {pfd, POLLIN, 0}};
        CHECK(poll(p, 2, -1) >= 0 || errno == EINTR, "poll: %s", strerror(errno));
        list_sockets(&wt->socks);
        drain(wt);
        if (p[1].revents) break;
    }
    close(pfd);
    int status;
    while (waitpid(pid, &status, 0) < 0) CHECK(errno == EINTR, "waitpid: %s", strerror(errno));
    drain(wt);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void check_names(const watch_t *wt, const char *what, const char *const *secrets, int nsecrets)
{
    for (int i = 0; i < wt->shm.n; i++)
        for (int k = 0; k < nsecrets; k++)
            EXPECT(!reveals(wt->shm.name[i], secrets[k]), "%s: /dev/shm/%s shows part of secret %.32s", what,
                   wt->shm.name[i], secrets[k]);
    for (int i = 0; i < wt->socks.n; i++)
        for (int k = 0; k < nsecrets; k++)
            EXPECT(!reveals(wt->socks.name[i], secrets[k]), "%s: socket %s shows part of secret %.32s", what,
                   wt->socks.name[i], secrets[k]);
}

/* Every name in `list` (one a line) must have been created in /dev/shm. */
static int check_seen(const watch_t *wt, const char *what, const char *list)
{
    int found = 0;
    char name[256];
    for (const char *p = list; sscanf(p, "%255s", name) == 1; p = strchr(p, '\n') + 1) {
        int seen = 0;
        for (int i = 0; i < wt->shm.n && !seen; i++) seen = !strcmp(wt->shm.name[i], name);
        EXPECT(seen, "%s: segment %s was mapped but never seen created in /dev/shm", what, name);
        found += seen;
        if (!strchr(p, '\n')) break;
    }
    return found;
}

static void read_file(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    size_t got = f ? fread(buf, 1, len - 1, f) : 0;
    buf[got] = '\0';
    if (f) fclose(f);
    unlink(path);
}

static void job(watch_t *wt, const char *duetrun, const char *self)
{
    const int n = 3;
    const char *dir = dt_temp_dir("/tmp/duet-shm-names.XXXXXX");
    CHECK(dir, "mkdtemp: %s", strerror(errno));
    pid_t pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) {
        execl(duetrun, duetrun, "-n", "3", "--timeout", "60", self, "rank", dir, (char *)NULL);
        _exit(127);
    }
    int rc = watch_until_exit(wt, pid);
    EXPECT(rc == 0, "job: duetrun exited %d", rc);
    char secret[33] = "", id_hex[257] = "", buf[8192];
    int found = 0;
    for (int r = 0; r < n; r++) {
        char path[600];
        snprintf(path, sizeof path, "%s/secret.%d", dir, r);
        read_file(path, buf, sizeof buf);
        if (!secret[0]) CHECK(sscanf(buf, "%32s %256s", secret, id_hex) == 2, "job: rank %d wrote no secret", r);
        snprintf(path, sizeof path, "%s/maps.%d", dir, r);
        read_file(path, buf, sizeof buf);
        found += check_seen(wt, "job", buf);
    }
    EXPECT(found >= 2 * n * (n - 1), "job: %d names of its segments seen in /dev/shm, want >= %d", found,
           2 * n * (n - 1));
    const char *secrets[] = {secret, id_hex};
    check_names(wt, "job", secrets, 2);
    printf("test_shm_names: job: %d names created in /dev/shm (%d of its segments), %d abstract sockets seen\n",
           wt->shm.n, found, wt->socks.n);
}

/* No launcher: the job part is keyed by the id's own secret. */
static void standalone(watch_t *wt)
{
    duet_unique_id_t id;
    CHECK(!getenv("DUET_JOB_SECRET"), "standalone: DUET_JOB_SECRET is set");
    setenv("DUET_SYMMETRIC_SIZE", "2M", 1);
    CHECK_OK(duet_get_unique_id(&id));
    int ready[2];
    CHECK(pipe(ready) == 0, "pipe");
    pid_t pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) {
        duet_comm_t c;
        char done;
        close(ready[1]);
        if (duet_comm_init_rank(&c, 2, id, 1, NULL) != DUET_OK || duet_barrier(c) != DUET_OK) _exit(1);
        if (read(ready[0], &done, 1) != 1) _exit(1); /* rank 0 has read its maps */
        _exit(duet_comm_destroy(c) == DUET_OK ? 0 : 1);
    }
    close(ready[0]);
    duet_comm_t c;
    EXPECT_OK(duet_comm_init_rank(&c, 2, id, 0, NULL));
    EXPECT_OK(duet_barrier(c));
    char maps[4096] = "";
    FILE *m = fmemopen(maps, sizeof maps - 1, "w");
    CHECK(m, "fmemopen");
    my_segment_names(m);
    fclose(m);
    CHECK(write(ready[1], "x", 1) == 1, "pipe");
    close(ready[1]);
    EXPECT_OK(duet_comm_destroy(c));
    int rc = watch_until_exit(wt, pid);
    EXPECT(rc == 0, "standalone: rank 1 exited %d", rc);
    int found = check_seen(wt, "standalone", maps);
    /* made by shm_open (DUET_TEST_SHM_NAMED=1, as without O_TMPFILE), rank 0 maps its own
     * segment under its name as well */
    const char *by_name = getenv("DUET_TEST_SHM_NAMED");
    int want = by_name && atoi(by_name) ? 2 : 1;
    EXPECT(found == want, "standalone: %d names of the mapped segments seen in /dev/shm, want %d", found, want);
    char id_hex[2 * sizeof id + 1];
    hex_of((const uint8_t *)&id, sizeof id, id_hex);
    const char *secrets[] = {id_hex};
    check_names(wt, "standalone", secrets, 1);
    printf("test_shm_names: standalone: %d names created in /dev/shm (%d of its segments)\n", wt->shm.n, found);
}

static watch_t *watch_start(void)
{
    watch_t *wt = calloc(1, sizeof *wt);
    CHECK(wt, "calloc");
    wt->in = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    CHECK(wt->in >= 0 && inotify_add_watch(wt->in, "/dev/shm", IN_CREATE | IN_MOVED_TO) >= 0,
          "inotify on /dev/shm: %s", strerror(errno));
    return wt;
}

static void watch_end(watch_t *wt)
{
    close(wt->in);
    for (int i = 0; i < wt->shm.n; i++) free(wt->shm.name[i]);
    for (int i = 0; i < wt->socks.n; i++) free(wt->socks.name[i]);
    free(wt);
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--duetrun")) {
        char self[4096];
        dt_self_exe(self, sizeof self);
        watch_t *wt = watch_start();
        job(wt, argv[2], self);
        watch_end(wt);
        wt = watch_start();
        standalone(wt);
        watch_end(wt);
        return dt_finish();
    }
    if (argc == 3 && !strcmp(argv[1], "rank")) return rank_main(argv[2]);
    fprintf(stderr, "usage: %s --duetrun PATH | duetrun -n N %s rank DIR\n", argv[0], argv[0]);
    return 2;
}
