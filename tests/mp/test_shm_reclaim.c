/*
 * test_shm_reclaim.c — segments left by a job whose launcher was SIGKILLed during set-up
 * are removed by the next job of the user; a live job's and another user's are not (issue
 * 18 item 13).
 *
 *   test_shm_reclaim --duetrun PATH     (the driver; a plain ctest test)
 *     1. plants /dev/shm/duet-<random>-<random>-0 owned by nobody, unlocked (as root only)
 *     2. live: duetrun -n 3 ... stall DIR. Rank 2 stops itself inside its segment's
 *        creation (this program's ftruncate, which the library calls to size a segment,
 *        raises SIGSTOP first), so ranks 0 and 1 have named theirs and wait for rank 2 in
 *        set-up (inotify shows their two names): two names of a live job in set-up.
 *     3. killed: the same job, but once its two names are there duetrun is SIGKILLed; its
 *        ranks die with it (PR_SET_PDEATHSIG), their names stay: the state of the issue.
 *     4. next: duetrun -n 2 ... normal, which must exit 0.
 *     5. The killed job's names are gone; the live job's and nobody's are still there.
 *   With DUET_TEST_SHM_NAMED=1 (segments made by shm_open, as without O_TMPFILE) the stalled
 *   ranks' names exist too, empty: the killed job's are aged a minute before step 4.
 *     Then the live job is killed and every name of the test removed.
 *   Every wait is bounded (60 s in all, then a failure); duetrun runs with --timeout 100.
 */
#include "duet_test.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

/* ---- the ranks */

static volatile int stall_in_ftruncate;

/* Interposes the C library's: the library's call resolves here (it is linked statically
 * into this program). The stalled rank stops before sizing a file of /dev/shm. */
int ftruncate(int fd, off_t length)
{
    if (stall_in_ftruncate) {
        char proc[64], path[256] = "";
        snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(proc, path, sizeof path - 1);
        if (n > 0 && !strncmp(path, "/dev/shm/", 9)) {
            stall_in_ftruncate = 0;
            raise(SIGSTOP); /* until the driver's SIGKILL of duetrun kills me (PDEATHSIG) */
        }
    }
    return (int)syscall(SYS_ftruncate, fd, length);
}

static int rank_main(const char *mode, const char *dir)
{
    const char *secret = getenv("DUET_JOB_SECRET");
    CHECK(secret && strlen(secret) == 32, "no DUET_JOB_SECRET: run me under duetrun");
    int me = atoi(getenv("DUET_RANK") ? getenv("DUET_RANK") : "-1");
    dt_set_rank(me, 0);
    char text[64];
    snprintf(text, sizeof text, "%s %d\n", secret, (int)getpid());
    dt_write_rank_file(dir, "rank", me, text);
    setenv("DUET_SYMMETRIC_SIZE", "4M", 1);
    setenv("DUET_BOOTSTRAP_TIMEOUT", "100", 1); /* a stalled job waits until it is killed */
    if (!strcmp(mode, "stall") && me == 2) stall_in_ftruncate = 1;
    CHECK_OK(duet_init());
    CHECK(strcmp(mode, "stall") != 0, "duet_init returned in a stalled job");
    CHECK_OK(duet_barrier_all());
    CHECK_OK(duet_finalize());
    return 0;
}

/* ---- the driver */

typedef struct {
    pid_t duetrun;
    char secret[33], prefix[80];
    int pids[3];
    char dir[512];
} job_t;

static double deadline;

static int left_ms(void)
{
    double l = deadline - now_s();
    return l <= 0 ? 0 : (int)(l * 1000) + 1;
}

static pid_t start(const char *duetrun, const char *self, const char *n, const char *mode, const char *dir)
{
    pid_t pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) {
        execl(duetrun, duetrun, "-n", n, "--timeout", "100", self, mode, dir, (char *)NULL);
        _exit(127);
    }
    return pid;
}

static int count_prefix(const char *prefix, char names[][256], int max)
{
    DIR *d = opendir("/dev/shm");
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        if (!strncmp(e->d_name, prefix, strlen(prefix))) {
            if (n < max && names) snprintf(names[n], 256, "%s", e->d_name);
            n++;
        }
    if (d) closedir(d);
    return n;
}

/* Starts a stalled 3-rank job and returns once ranks 0 and 1 have named their segments
 * (inotify on /dev/shm, for names with the job's prefix, which the ranks' files give). */
static int start_stalled(job_t *j, const char *duetrun, const char *self, const char *top, const char *what)
{
    memset(j, 0, sizeof *j);
    snprintf(j->dir, sizeof j->dir, "%s/%s", top, what);
    CHECK(mkdir(j->dir, 0700) == 0, "mkdir %s: %s", j->dir, strerror(errno));
    const char *dir = j->dir;
    int in = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    CHECK(in >= 0 && inotify_add_watch(in, "/dev/shm", IN_CREATE | IN_MOVED_TO) >= 0 &&
          inotify_add_watch(in, dir, IN_MOVED_TO) >= 0, "inotify: %s", strerror(errno));
    j->duetrun = start(duetrun, self, "3", "stall", dir);
    int ok = 0;
    for (;;) {
        int have = 0;
        for (int r = 0; r < 3; r++) {
            char path[600], buf[128] = "";
            path[0] = '\0';
            snprintf(path, sizeof path, "%s/rank.%d", dir, r);
            FILE *f = j->pids[r] ? NULL : fopen(path, "r");
            if (f && fgets(buf, sizeof buf, f) && sscanf(buf, "%32s %d", j->secret, &j->pids[r]) == 2)
                dt_job_shm_prefix(j->secret, j->prefix, sizeof j->prefix);
            if (f) fclose(f);
            have += j->pids[r] != 0;
        }
        if (have == 3 && count_prefix(j->prefix, NULL, 0) >= 2) {
            ok = 1;
            break;
        }
        char buf[8192];
        struct pollfd p = {in, POLLIN, 0};
        if (poll(&p, 1, left_ms()) == 0) break; /* the deadline */
        while (read(in, buf, sizeof buf) > 0) {}
    }
    close(in);
    EXPECT(ok, "a stalled job did not name two segments in time");
    return ok;
}

/* SIGKILLs the job's duetrun and waits until it and its ranks are gone (pidfds). */
static void kill_job(job_t *j)
{
    kill(j->duetrun, SIGKILL);
    while (waitpid(j->duetrun, NULL, 0) < 0 && errno == EINTR) {}
    for (int r = 0; r < 3; r++) {
        int fd = j->pids[r] ? (int)syscall(SYS_pidfd_open, j->pids[r], 0) : -1;
        if (fd < 0) continue; /* gone already */
        struct pollfd p = {fd, POLLIN, 0};
        EXPECT(poll(&p, 1, left_ms()) == 1, "rank %d (pid %d) outlived its killed duetrun", r, j->pids[r]);
        close(fd);
    }
}

static int driver(const char *duetrun, const char *self)
{
    deadline = now_s() + 60;
    /* 1. another user's name of the right form, unlocked: never to be touched */
    char nobody[128] = "";
    {
        uint8_t raw[16];
        char s[33], prefix[80];
        for (int i = 0; i < 16; i++) raw[i] = (uint8_t)rand();
        for (int i = 0; i < 16; i++) sprintf(s + 2 * i, "%02x", raw[i] ^ (uint8_t)getpid() ^ (uint8_t)(i * 37));
        dt_job_shm_prefix(s, prefix, sizeof prefix);
        snprintf(nobody, sizeof nobody, "/dev/shm/%s%.12s-0", prefix, s);
        int fd = open(nobody, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
        CHECK(fd >= 0 && ftruncate(fd, 1 << 20) == 0, "cannot plant %s: %s", nobody, strerror(errno));
        close(fd);
        if (chown(nobody, 65534, 65534) != 0) {
            printf("test_shm_reclaim: not root (%s): no name of another user planted\n", strerror(errno));
            unlink(nobody);
            nobody[0] = '\0';
        }
    }
    /* 2. a live job in set-up (its names must survive the two jobs after it) */
    job_t killed, live;
    const char *top = dt_temp_dir("/tmp/duet-shm-reclaim.XXXXXX"); /* removed at exit */
    CHECK(top, "mkdtemp: %s", strerror(errno));
    int have_live = start_stalled(&live, duetrun, self, top, "live");
    char live_names[8][256];
    int nlive = have_live ? count_prefix(live.prefix, live_names, 8) : 0;
    /* 3. killed during set-up, its names left behind */
    int have_killed = start_stalled(&killed, duetrun, self, top, "killed");
    char left[8][256];
    int nleft = 0;
    if (have_killed) {
        kill_job(&killed);
        nleft = count_prefix(killed.prefix, left, 8);
        printf("test_shm_reclaim: duetrun killed during set-up: %d names of its job left in /dev/shm\n", nleft);
        /* segments made by shm_open (DUET_TEST_SHM_NAMED=1, as without O_TMPFILE): the stalled
         * rank's name is there, empty; the next job takes an empty unlocked name only once it
         * is 5 s old (it may be one being made), so the test makes them a minute old, as
         * waiting would */
        const char *named = getenv("DUET_TEST_SHM_NAMED");
        for (int i = 0; named && atoi(named) && i < nleft && i < 8; i++) {
            char path[300];
            snprintf(path, sizeof path, "/dev/shm/%.255s", left[i]);
            struct timespec old[2] = {{time(NULL) - 60, 0}, {time(NULL) - 60, 0}};
            EXPECT(utimensat(AT_FDCWD, path, old, 0) == 0, "utimensat %s: %s", path, strerror(errno));
        }
    }
    /* 4. the next job */
    char dir[600];
    snprintf(dir, sizeof dir, "%s/next", top);
    CHECK(mkdir(dir, 0700) == 0, "mkdir %s: %s", dir, strerror(errno));
    pid_t next = start(duetrun, self, "2", "normal", dir);
    int status;
    while (waitpid(next, &status, 0) < 0) CHECK(errno == EINTR, "waitpid");
    EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the next job failed (status 0x%x)", status);
    /* 5. what is left */
    if (have_killed) {
        int n = count_prefix(killed.prefix, left, 8);
        EXPECT(n == 0, "%d names of the killed job are still in /dev/shm after the next job (%s)", n, left[0]);
    }
    if (have_live) {
        for (int i = 0; i < nlive && i < 8; i++) {
            char path[300];
            struct stat st;
            snprintf(path, sizeof path, "/dev/shm/%.255s", live_names[i]);
            EXPECT(stat(path, &st) == 0, "the next job removed %s of a live job", path);
        }
        EXPECT(nlive >= 2, "the live job has %d names, want 2", nlive);
    }
    struct stat st;
    if (nobody[0]) EXPECT(stat(nobody, &st) == 0, "the next job removed %s (owner nobody)", nobody);
    printf("test_shm_reclaim: after the next job: %d of the killed job's names, %d of the live job's, "
           "nobody's %s\n", have_killed ? count_prefix(killed.prefix, NULL, 0) : -1, nlive,
           !nobody[0] ? "not planted" : stat(nobody, &st) == 0 ? "kept" : "removed");
    /* clean up */
    if (have_live) kill_job(&live);
    if (nobody[0]) unlink(nobody);
    char names[16][256];
    for (int k = 0; k < 2; k++) {
        const char *prefix = k ? live.prefix : killed.prefix;
        if (!prefix[0]) continue;
        int n = count_prefix(prefix, names, 16);
        for (int i = 0; i < n && i < 16; i++) {
            char path[300];
            snprintf(path, sizeof path, "/dev/shm/%.255s", names[i]);
            unlink(path);
        }
    }
    return dt_finish();
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--duetrun")) {
        char self[4096];
        dt_self_exe(self, sizeof self);
        return driver(argv[2], self);
    }
    if (argc == 3) return rank_main(argv[1], argv[2]);
    fprintf(stderr, "usage: %s --duetrun PATH | duetrun -n N %s stall|normal DIR\n", argv[0], argv[0]);
    return 2;
}
