/*
 * Stale segment names: what a job killed inside its set-up window left in /dev/shm (its
 * launcher killed with it, nobody removed them), removed by the next job of the same user.
 *
 * A name may only go when its creator is provably dead. The proof is the creator's lock: it
 * takes a shared flock on the segment before the name exists (duet_heap_shm.c) and drops it
 * only after the name is gone; the kernel drops it when the process dies, whatever kills
 * it. So an exclusive flock that succeeds (without waiting) on a name means nobody alive
 * holds it: no live job, in this or any other pid namespace or container sharing this
 * /dev/shm, can lose a name that way. On top of that only names of Duet's exact form, owned
 * by this user are touched: other users' files are never opened. An empty name is touched
 * only once it is EMPTY_STALE_S old: without O_TMPFILE a name is made by shm_open and locked
 * just after, and in those microseconds it is empty and unlocked; one still so seconds later
 * lost its maker in between (a maker descheduled that long would find its name gone, and its
 * job would fail to start, with a message: nothing is lost).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "heap/duet_heap.h"

#define EMPTY_STALE_S 5 /* seconds an empty name must be old before it counts as left behind */

static int hex_run(const char *s, int n)
{
    for (int i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
    return 1;
}

int duet_heap_is_segment_name(const char *name)
{
    const int job = DUET_NAME_JOB_HEX, comm = DUET_NAME_COMM_HEX;
    if (strncmp(name, "duet-", 5) != 0 || strlen(name) < (size_t)(5 + job + 1 + comm + 2)) return 0;
    const char *p = name + 5;
    if (!hex_run(p, job) || p[job] != '-' || !hex_run(p + job + 1, comm) || p[job + 1 + comm] != '-') return 0;
    p += job + 1 + comm + 1;
    size_t digits = strspn(p, "0123456789");
    return digits >= 1 && digits <= 9 && p[digits] == '\0';
}

int duet_heap_reclaim(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    uid_t me = geteuid();
    int removed = 0;
    time_t now = time(NULL);
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (!duet_heap_is_segment_name(e->d_name)) continue;
        struct stat st, fst;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
            st.st_uid != me || (st.st_size == 0 && now - st.st_mtime < EMPTY_STALE_S))
            continue;
        int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0) continue;
        if (fstat(fd, &fst) == 0 && fst.st_ino == st.st_ino && fst.st_uid == me &&
            (fst.st_size > 0 || now - fst.st_mtime >= EMPTY_STALE_S) && flock(fd, LOCK_EX | LOCK_NB) == 0 &&
            unlinkat(dirfd(d), e->d_name, 0) == 0) {
            removed++;
            DUET_LOG(INFO, HEAP, "heap: removed %s/%s (%lld bytes), left by a dead job", dir, e->d_name,
                     (long long)st.st_size);
        }
        close(fd);
    }
    closedir(d);
    return removed;
}

void duet_heap_reclaim_once(void)
{
    static atomic_int done;
    if (atomic_exchange(&done, 1)) return;
    int n = duet_heap_reclaim("/dev/shm");
    if (n) DUET_LOG(INFO, HEAP, "heap: removed %d stale segment name(s) of dead jobs from /dev/shm", n);
}
