/*
 * test_names.c — names that others can list, and the removal of stale ones (issue 18).
 *
 *   1. duet_name_job_part / duet_name_comm_part against references computed apart from
 *      Duet (`printf %s LABEL | openssl dgst -sha256 -mac HMAC -macopt hexkey:KEY`, cut to
 *      24 and 12 hex digits), for two keys.
 *   2. duet_heap_is_segment_name: the exact form duet-<24 hex>-<12 hex>-<pe>, nothing else.
 *   3. duet_heap_reclaim on a private directory in /dev/shm, planted with
 *        dead     segment names whose creator held the lock and was SIGKILLed   -> removed
 *        live     a name whose lock a live process holds                        -> kept
 *        empty    an unlocked name of 0 bytes, just made (being made without O_TMPFILE,
 *                 locked just after)                                             -> kept
 *        stale    an unlocked name of 0 bytes a minute old (its maker died between
 *                 shm_open and flock)                                            -> removed
 *        nobody   an unlocked name owned by another user (only as root)         -> kept
 *        foreign  files not of the form, a symlink of the form to a dead file    -> kept
 *      and it must report exactly the dead ones as removed.
 */
#include "duet_test.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "heap/duet_heap.h"

static void check_parts(const char *key_hex, const char *job_want, const char *comm_want)
{
    uint8_t key[16];
    for (int i = 0; i < 16; i++) {
        unsigned v;
        CHECK(sscanf(key_hex + 2 * i, "%2x", &v) == 1, "bad key");
        key[i] = (uint8_t)v;
    }
    char job[DUET_NAME_JOB_HEX + 1], comm[DUET_NAME_COMM_HEX + 1];
    duet_name_job_part(key, sizeof key, job);
    duet_name_comm_part(key, sizeof key, comm);
    EXPECT(!strcmp(job, job_want), "key %s: job part %s, want %s", key_hex, job, job_want);
    EXPECT(!strcmp(comm, comm_want), "key %s: communicator part %s, want %s", key_hex, comm, comm_want);
}

static void check_forms(void)
{
    static const char *yes[] = {"duet-5898d1b619d7729015f05152-023f32e373a7-0",
                                "duet-5898d1b619d7729015f05152-023f32e373a7-4095"};
    static const char *no[] = {"duet-5898d1b619d7729015f05152-023f32e373a7-",
                               "duet-5898d1b619d7729015f05152-023f32e373a7-1x",
                               "duet-5898d1b619d7729015f05152-023f32e373a7-1-2",
                               "duet-5898D1B619D7729015F05152-023f32e373a7-1",
                               "duet-5898d1b619d7729015f0515-023f32e373a7-1",
                               "duet-5898d1b619d7729015f05152-023f32e373a-1",
                               "duet-000102030405060708090a0b0c0d0e0f-1",
                               "duet-5898d1b619d7729015f05152-023f32e373a7-heap-1",
                               "ucx-5898d1b619d7729015f05152-023f32e373a7-1",
                               "duet-5898d1b619d7729015f05152-023f32e373a7-1234567890"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        EXPECT(duet_heap_is_segment_name(yes[i]), "%s is a segment name", yes[i]);
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        EXPECT(!duet_heap_is_segment_name(no[i]), "%s is not a segment name", no[i]);
}

static void plant(const char *dir, const char *name, off_t size)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    CHECK(fd >= 0 && ftruncate(fd, size) == 0, "cannot make %s: %s", path, strerror(errno));
    close(fd);
}

static int exists(const char *dir, const char *name)
{
    char path[512];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return lstat(path, &st) == 0;
}

/* A child that creates `name` the way a creator does (locked, then sized) and waits; the
 * caller SIGKILLs it (dead) or lets it live (live). Returns its pid once the lock is held. */
static pid_t locked_by_child(const char *dir, const char *name, int *release)
{
    int ready[2], hold[2];
    CHECK(pipe(ready) == 0 && pipe(hold) == 0, "pipe");
    pid_t pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) {
        char path[512], c = 1;
        close(hold[1]);
        close(ready[0]);
        snprintf(path, sizeof path, "%s/%s", dir, name);
        int fd = open(path, O_CREAT | O_EXCL | O_RDWR, 0600);
        if (fd < 0 || flock(fd, LOCK_SH) != 0 || ftruncate(fd, 1 << 20) != 0) _exit(1);
        if (write(ready[1], &c, 1) != 1) _exit(1);
        while (read(hold[0], &c, 1) < 0 && errno == EINTR) {} /* until released or killed */
        _exit(0);
    }
    close(ready[1]);
    close(hold[0]);
    char c;
    CHECK(read(ready[0], &c, 1) == 1, "the child could not lock %s", name);
    close(ready[0]);
    *release = hold[1];
    return pid;
}

static void check_reclaim(void)
{
    const char *dir = dt_temp_dir("/dev/shm/duet-test-names.XXXXXX");
    CHECK(dir, "mkdtemp in /dev/shm: %s", strerror(errno));
    static const char *dead[] = {"duet-5898d1b619d7729015f05152-023f32e373a7-0",
                                 "duet-5898d1b619d7729015f05152-023f32e373a7-1"};
    const char *live = "duet-0d3e7b52cf11aee9b8807782-753e5dc9573a-0";
    const char *empty = "duet-0d3e7b52cf11aee9b8807782-753e5dc9573a-1";
    const char *nobody = "duet-0d3e7b52cf11aee9b8807782-753e5dc9573a-2";
    const char *link = "duet-0d3e7b52cf11aee9b8807782-753e5dc9573a-3";
    const char *stale = "duet-0d3e7b52cf11aee9b8807782-753e5dc9573a-4";
    static const char *foreign[] = {"duet-5898d1b619d7729015f05152-023f32e373a7-heap-1", "duet-other", "x"};

    int rel[2], rel_live;
    for (int i = 0; i < 2; i++) { /* held by a process that then dies: the kernel drops its lock */
        pid_t pid = locked_by_child(dir, dead[i], &rel[i]);
        CHECK(kill(pid, SIGKILL) == 0 && waitpid(pid, NULL, 0) == pid, "cannot kill the creator");
        close(rel[i]);
    }
    pid_t live_pid = locked_by_child(dir, live, &rel_live);
    plant(dir, empty, 0);
    plant(dir, stale, 0);
    char stale_path[512];
    snprintf(stale_path, sizeof stale_path, "%s/%s", dir, stale);
    struct timespec old[2] = {{time(NULL) - 60, 0}, {time(NULL) - 60, 0}};
    CHECK(utimensat(AT_FDCWD, stale_path, old, 0) == 0, "utimensat: %s", strerror(errno));
    plant(dir, nobody, 1 << 20);
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, nobody);
    int have_nobody = chown(path, 65534, 65534) == 0;
    if (!have_nobody) printf("test_names: not root: no file of another user planted (%s)\n", strerror(errno));
    for (size_t i = 0; i < sizeof foreign / sizeof foreign[0]; i++) plant(dir, foreign[i], 1 << 20);
    char target[600];
    snprintf(target, sizeof target, "%s/%s", dir, foreign[0]);
    snprintf(path, sizeof path, "%s/%s", dir, link);
    CHECK(symlink(target, path) == 0, "symlink: %s", strerror(errno));

    int removed = duet_heap_reclaim(dir);
    EXPECT(removed == 3, "reclaim removed %d names, want 3 (the dead creators', the stale empty one)", removed);
    for (int i = 0; i < 2; i++) EXPECT(!exists(dir, dead[i]), "%s (creator dead) is still there", dead[i]);
    EXPECT(!exists(dir, stale), "%s (empty, unlocked, a minute old) is still there", stale);
    EXPECT(exists(dir, live), "%s (creator alive) was removed", live);
    EXPECT(exists(dir, empty), "%s (empty: maybe being made) was removed", empty);
    if (have_nobody) EXPECT(exists(dir, nobody), "%s (another user's) was removed", nobody);
    EXPECT(exists(dir, link), "the symlink %s was removed", link);
    for (size_t i = 0; i < sizeof foreign / sizeof foreign[0]; i++)
        EXPECT(exists(dir, foreign[i]), "%s (not a segment name) was removed", foreign[i]);

    /* the live creator ends: now its name goes too */
    close(rel_live);
    CHECK(waitpid(live_pid, NULL, 0) == live_pid, "waitpid");
    removed = duet_heap_reclaim(dir);
    EXPECT(removed == 1 && !exists(dir, live), "after its creator ended: removed %d, %s %s", removed, live,
           exists(dir, live) ? "still there" : "gone");
}

int main(void)
{
    check_parts("000102030405060708090a0b0c0d0e0f", "5898d1b619d7729015f05152", "023f32e373a7");
    check_parts("f0e1d2c3b4a5968778695a4b3c2d1e0f", "0d3e7b52cf11aee9b8807782", "753e5dc9573a");
    check_forms();
    check_reclaim();
    return dt_finish();
}
