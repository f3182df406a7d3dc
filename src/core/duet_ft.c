/*
 * duet_ft.c — the failure detector.
 *
 * One thread per process, running while at least one communicator is watched. It watches
 * the peers of each root communicator (all on this host; their process ids came with the
 * bootstrap, check_peers in duet_comm_init.c): it sleeps in poll(2) on a pidfd per peer,
 * which turns readable when that process exits (a zombie included), so a death is seen at
 * once and an idle job costs nothing. Where there is no pidfd (a kernel before 5.3, a
 * sandbox, DUET_FT_PIDFD=0) it polls every DUET_FT_PERIOD_MS instead: a peer is dead when
 * kill(pid, 0) finds no such process, or (every ZOMBIE_EVERY periods) /proc/<pid>/stat shows
 * a zombie (exited, not yet reaped). A stopped (SIGSTOP) or merely slow process is alive:
 * nothing is inferred from silence, so no live rank is ever declared dead.
 *
 * Where a communicator has a device handle (GPU kernels poll their own abort word, in this
 * process's host-mapped memory), the thread also wakes every period to carry a peer's revoke
 * from the shared abort word over to the kernels'.
 *
 * The same thread writes the hang reports (duet_hang.c) when they are asked for.
 *
 * On the first sight of a dead rank the thread marks it (root->dead) and, for every watched
 * communicator that has it as a member (the root and its teams), writes the reason ("rank 3
 * died", c->abort_why) and then DUET_ERR_PEER_FAILED into the communicator's abort word (in
 * shared memory; a revoke already there stays): every wait on that communicator returns at
 * its next turn (duet_util_wait.c), and the GPU kernels' abort word is set too.
 * Communicators without the dead rank are left alone.
 *
 * Peers on other hosts (reached by the net transport; their process ids mean nothing here)
 * are watched through the transport (docs/NETWORK.md 2.10): while a watched heap has net
 * peers, the thread wakes every period, progresses every UCP worker (which also serves the
 * peers' operations while the program computes) and has duet_tport_net_watch look at each
 * net peer: a failed endpoint (a closed or reset connection: a process killed on another host
 * is seen within a period or so) or heartbeats silent for DUET_FT_NET_TIMEOUT (a host or link
 * down, a stopped process; the net transport's own thread sends and judges them, so that a
 * long progress here never stops them) marks the rank dead as above. Across hosts silence
 * must count as death; on this host it never does.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include "core/duet_ft.h"
#include "core/duet_hang.h"
#include "core/duet_comm_mod.h"
#include "tport/duet_tport_net.h"

#define ZOMBIE_EVERY 10 /* without pidfds: read /proc for zombies every 10th period */

typedef struct {
    pthread_t thread;
    int stop;
} watcher_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static duet_comm_t *watched;
static int nwatched, capacity;
static uint64_t generation; /* bumped whenever `watched` changes */
static watcher_t *current;  /* the running thread, or NULL */
static int wake_fd = -1;    /* an eventfd: makes the thread look at `watched` again */

static duet_comm_t root_of(duet_comm_t c)
{
    while (c->parent) c = c->parent;
    return c;
}

void duet_ft_wake(void)
{
    uint64_t one = 1;
    if (wake_fd >= 0 && write(wake_fd, &one, sizeof one) < 0) { /* the counter is full: it is awake anyway */ }
}

/* 0 when pid is gone (or, with zombies, exited and not yet reaped); 1 otherwise, also when
 * it cannot be told. */
static int process_alive(pid_t pid, int zombies)
{
    if (kill(pid, 0) != 0 && errno == ESRCH) return 0;
    if (!zombies) return 1;
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT ? 0 : 1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 1;
    buf[n] = '\0';
    const char *paren = strrchr(buf, ')'); /* "pid (name) S ...": the name may hold spaces */
    if (!paren || paren[1] != ' ') return 1;
    return paren[2] != 'Z' && paren[2] != 'X';
}

/* Raises c's abort flag if one of its members is dead (lock held).
 * A member that died after the communicator was revoked (as a revoke's waits end, the program
 * may well exit): the revoke came first, and is what every wait reports. Its revoker wrote the
 * dead member's word before mine (one rank after another); the death, seen here, came after
 * it, so its word is visible now even where mine is not yet. */
static void abort_if_member_dead(duet_comm_t c)
{
    if (atomic_load_explicit(&duet_comm_ft(c)->abort, memory_order_relaxed)) return;
    duet_comm_t root = root_of(c);
    if (!root->dead) return;
    int used = 0, ndead = 0, revoked_at = -1;
    int32_t by = 0; /* a dead member's revoked_by */
    char why[sizeof c->abort_why - 32];
    for (int m = 0; m < c->size; m++) {
        int w = c->heap_pe[m];
        if (!atomic_load_explicit(&root->dead[w], memory_order_relaxed)) continue;
        duet_ft_area_t *theirs = duet_comm_ft_of(c, m);
        if (!by && theirs && (by = atomic_load_explicit(&theirs->revoked_by, memory_order_acquire)) != 0)
            revoked_at = m;
        if (ndead++ < 4 && used < (int)sizeof why) {
            if (c == root)
                used += snprintf(why + used, sizeof why - (size_t)used, "%s%d", ndead > 1 ? ", " : "", m);
            else
                used += snprintf(why + used, sizeof why - (size_t)used, "%s%d (world rank %d)", ndead > 1 ? ", " : "",
                                 m, w);
        }
    }
    if (!ndead) return;
    duet_status_t status = by ? DUET_ERR_REVOKED : DUET_ERR_PEER_FAILED;
    if (by) {
        int32_t no_one = 0;
        atomic_compare_exchange_strong_explicit(&duet_comm_ft(c)->revoked_by, &no_one, by, memory_order_relaxed,
                                                memory_order_relaxed);
    } else {
        snprintf(c->abort_why, sizeof c->abort_why, "rank%s %s%s died", ndead > 1 ? "s" : "", why,
                 ndead > 4 ? ", ..." : "");
    }
    int32_t none = 0; /* (the wait context points at abort_why from the start) */ /* a revoke already there stays */
    atomic_compare_exchange_strong_explicit(&duet_comm_ft(c)->abort, &none, status, memory_order_release,
                                            memory_order_relaxed);
    duet_comm_mods_abort(c, status);
    if (by)
        DUET_LOG(INFO, INIT, "communicator of %d ranks (rank %d here): rank %d died after rank %d revoked it; its "
                 "waits return DUET_ERR_REVOKED", c->size, c->rank, revoked_at, by - 1);
    else
        DUET_LOG(WARN, INIT, "communicator of %d ranks (rank %d here): %s; its waits now return "
                 "DUET_ERR_PEER_FAILED", c->size, c->rank, c->abort_why);
}

static void mark_dead(duet_comm_t root, int r, const char *how)
{
    atomic_store_explicit(&root->dead[r], 1, memory_order_release);
    atomic_fetch_add_explicit(&root->heap->deaths, 1, memory_order_release);
    if (root->heap->net) duet_tport_net_peer_dead(root->heap->net, r);
    if (root->heap->peer_base[r]) DUET_LOG(WARN, INIT, "rank %d (pid %d) has died (%s)", r, (int)root->pids[r], how);
    else DUET_LOG(WARN, INIT, "rank %d (on another host) has died (%s)", r, how);
}

/* duet_tport_net_watch's report of a dead net peer (lock held) */
typedef struct {
    duet_comm_t root;
    int found;
} net_watch_t;

static void net_peer_dead(void *arg, int pe, const char *why)
{
    net_watch_t *w = arg;
    if (atomic_load_explicit(&w->root->dead[pe], memory_order_relaxed)) return;
    mark_dead(w->root, pe, why);
    w->found = 1;
}

/* The watched root communicators' net peers (lock held); 1 when one was found dead. Returns
 * through *any whether some heap has net peers (then the thread wakes every period). */
static int check_net(int *any)
{
    int found = 0;
    *any = 0;
    for (int i = 0; i < nwatched; i++) {
        duet_comm_t c = watched[i];
        if (c->parent || !c->heap->net) continue;
        *any = 1;
        net_watch_t w = {c, 0};
        duet_tport_net_watch(c->heap->net, net_peer_dead, &w);
        found |= w.found;
    }
    return found;
}

/* The peers without a pidfd, by kill(pid, 0) (and /proc when `zombies`); lock held. */
static int check_by_pid(int zombies)
{
    int found = 0;
    for (int i = 0; i < nwatched; i++) {
        duet_comm_t c = watched[i];
        if (c->parent) continue;
        for (int r = 0; r < c->size; r++) {
            if (r == c->rank || c->pidfds[r] >= 0 || atomic_load_explicit(&c->dead[r], memory_order_relaxed)) continue;
            if (!process_alive((pid_t)c->pids[r], zombies)) mark_dead(c, r, "no such process"), found = 1;
        }
    }
    return found;
}

/* The poll set: the wake eventfd, then every live peer's pidfd (lock held). who[i]: its
 * communicator and rank. Returns the count; *fallback: some peer has no pidfd. */
typedef struct {
    duet_comm_t c;
    int r;
} who_t;

static int build_poll_set(struct pollfd **pfd, who_t **who, int *cap, int *fallback)
{
    int n = 1;
    *fallback = 0;
    for (int i = 0; i < nwatched; i++) {
        duet_comm_t c = watched[i];
        if (c->parent) continue;
        for (int r = 0; r < c->size; r++) {
            if (r == c->rank || atomic_load_explicit(&c->dead[r], memory_order_relaxed)) continue;
            if (c->pidfds[r] < 0) {
                *fallback = 1;
                continue;
            }
            if (n == *cap) {
                int nc = 2 * *cap;
                struct pollfd *p = realloc(*pfd, sizeof *p * (size_t)nc);
                who_t *w = p ? realloc(*who, sizeof *w * (size_t)nc) : NULL;
                if (p) *pfd = p;
                if (!w) { /* out of memory: watch the rest by pid */
                    *fallback = 1;
                    return n;
                }
                *who = w;
                *cap = nc;
            }
            (*pfd)[n] = (struct pollfd){.fd = c->pidfds[r], .events = POLLIN};
            (*who)[n] = (who_t){c, r};
            n++;
        }
    }
    (*pfd)[0] = (struct pollfd){.fd = wake_fd, .events = POLLIN};
    return n;
}

/* A communicator's abort word, set by a peer's revoke, reaches this process's kernels only
 * through the kernels' own word (host-mapped memory of this process): carry it over (lock
 * held). Returns 1 when some communicator has a device handle (then the thread looks again
 * every period). */
static int carry_to_gpu(void)
{
    int any = 0;
    for (int i = 0; i < nwatched; i++) {
        duet_comm_t c = watched[i];
        if (!c->cuda) continue;
        any = 1;
        int a = atomic_load_explicit(&duet_comm_ft(c)->abort, memory_order_acquire);
        if (a < 0) duet_comm_mods_abort(c, (duet_status_t)a); /* a store; again each time is harmless */
    }
    return any;
}

/* The thread: sleeps in poll(2) on the peers' pidfds (a pidfd turns readable when its
 * process exits), with the period as timeout only when some peer has none. */
static void *watch_loop(void *arg)
{
    watcher_t *me = arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL); /* the program's signals go to its own threads */
    int period_ms = (int)(duet_cfg()->ft_period_ms + 0.5), cap = 64;
    if (period_ms < 1) period_ms = 1;
    double hang_s = duet_cfg()->hang_report_s; /* reports by age: look again this often */
    int hang_ms = hang_s > 0 ? (int)(hang_s * 250 < 10 ? 10 : hang_s * 250 > 1000 ? 1000 : hang_s * 250) : -1;
    struct pollfd *pfd = malloc(sizeof *pfd * (size_t)cap);
    who_t *who = malloc(sizeof *who * (size_t)cap);
    unsigned ticks = 0;
    int net = 0;
    pthread_mutex_lock(&lock);
    while (!me->stop && pfd && who) {
        int fallback, n = build_poll_set(&pfd, &who, &cap, &fallback);
        uint64_t gen = generation;
        int gpu = carry_to_gpu(); /* a peer's revoke to my kernels: looked for every period */
        pthread_mutex_unlock(&lock);
        int timeout = fallback || gpu || net ? period_ms : -1;
        if (hang_ms > 0 && (timeout < 0 || hang_ms < timeout)) timeout = hang_ms;
        int ready = poll(pfd, (nfds_t)n, timeout);
        pthread_mutex_lock(&lock);
        if (me->stop) break;
        if (pfd[0].revents & POLLIN) {
            uint64_t v;
            if (read(wake_fd, &v, sizeof v) < 0) { /* nothing to drain */ }
        }
        int found = 0;
        if (ready > 0 && gen == generation) /* else the set changed under poll: look again */
            for (int i = 1; i < n; i++)
                if (pfd[i].revents & (POLLIN | POLLHUP | POLLERR) &&
                    !atomic_load_explicit(&who[i].c->dead[who[i].r], memory_order_relaxed))
                    mark_dead(who[i].c, who[i].r, "its process exited"), found = 1;
        if (fallback) found |= check_by_pid(++ticks % ZOMBIE_EVERY == 0);
        found |= check_net(&net);
        if (found)
            for (int i = 0; i < nwatched; i++) abort_if_member_dead(watched[i]);
        duet_hang_reports();
    }
    pthread_mutex_unlock(&lock);
    free(pfd);
    free(who);
    return NULL;
}

/* A root communicator's pidfds (-1 where none: self, or no pidfd_open here). */
static void open_pidfds(duet_comm_t c)
{
    for (int r = 0; r < c->size; r++) {
        c->pidfds[r] = -1;
#ifdef SYS_pidfd_open
        if (r != c->rank && duet_cfg()->ft_pidfd) c->pidfds[r] = (int)syscall(SYS_pidfd_open, (pid_t)c->pids[r], 0);
#endif
    }
}

duet_status_t duet_ft_watch(duet_comm_t c)
{
    duet_status_t st = DUET_OK;
    if (!c->parent) {
        c->dead = calloc((size_t)c->size, sizeof *c->dead);
        c->pidfds = malloc(sizeof *c->pidfds * (size_t)c->size);
        if (!c->dead || !c->pidfds) return DUET_FAIL(DUET_ERR_NO_MEMORY, INIT, "out of host memory");
        open_pidfds(c);
    }
    c->dead_pe = root_of(c)->dead;
    pthread_mutex_lock(&lock);
    if (wake_fd < 0) wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (nwatched == capacity) {
        int cap = capacity ? 2 * capacity : 8;
        duet_comm_t *w = realloc(watched, sizeof *w * (size_t)cap);
        if (!w) st = DUET_FAIL(DUET_ERR_NO_MEMORY, INIT, "out of host memory");
        else watched = w, capacity = cap;
    }
    if (st == DUET_OK) {
        watched[nwatched++] = c;
        generation++;
        abort_if_member_dead(c); /* a team split after a death starts aborted */
        if (!current && duet_cfg()->ft_period_ms > 0 && wake_fd >= 0) {
            watcher_t *w = calloc(1, sizeof *w);
            int err = w ? pthread_create(&w->thread, NULL, watch_loop, w) : ENOMEM;
            if (err) {
                DUET_LOG(WARN, INIT, "no failure detector: cannot start its thread: %s", strerror(err));
                free(w);
            } else {
                current = w;
                duet_hang_install();
            }
        }
        duet_ft_wake();
    }
    pthread_mutex_unlock(&lock);
    return st;
}

void duet_ft_attach_device(duet_comm_t c, struct duet_cuda_comm *cc)
{
    pthread_mutex_lock(&lock);
    c->cuda = cc;
    pthread_mutex_unlock(&lock);
    duet_ft_wake(); /* the thread may sleep without a timeout: from now on it looks every period */
}

void duet_ft_unwatch(duet_comm_t c)
{
    watcher_t *old = NULL;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < nwatched; i++)
        if (watched[i] == c) {
            watched[i] = watched[--nwatched];
            generation++;
            break;
        }
    if (current && nwatched == 0) {
        old = current;
        old->stop = 1;
        current = NULL;
        duet_hang_remove();
    }
    duet_ft_wake();
    pthread_mutex_unlock(&lock);
    if (old) {
        pthread_join(old->thread, NULL);
        free(old);
    }
}

void duet_ft_release(duet_comm_t c)
{
    if (!c->parent && c->pidfds) { /* the thread let go of them at duet_ft_unwatch */
        for (int r = 0; r < c->size; r++)
            if (c->pidfds[r] >= 0) close(c->pidfds[r]);
    }
    free(c->pidfds);
    free(c->dead);
    c->pidfds = NULL;
    c->dead = NULL;
    c->dead_pe = NULL;
}

/* Members whose net endpoint has failed (an operation may see it before the thread does);
 * lock held. */
static int net_failures(duet_comm_t root, duet_comm_t c)
{
    int found = 0;
    char why[160];
    for (int m = 0; root->heap->net && m < c->size; m++) {
        int w = c->heap_pe[m];
        if (w == root->rank || atomic_load_explicit(&root->dead[w], memory_order_relaxed)) continue;
        if (duet_tport_net_peer_failed(root->heap->net, w, why, sizeof why)) mark_dead(root, w, why), found = 1;
    }
    return found;
}

void duet_ft_net_refresh(duet_comm_t c)
{
    duet_comm_t root = root_of(c);
    if (!root->dead || !root->heap->net) return;
    pthread_mutex_lock(&lock);
    if (net_failures(root, c))
        for (int i = 0; i < nwatched; i++) abort_if_member_dead(watched[i]);
    pthread_mutex_unlock(&lock);
}

void duet_ft_refresh(duet_comm_t c)
{
    duet_comm_t root = root_of(c);
    if (!root->dead || !root->pids) return;
    int found = 0;
    pthread_mutex_lock(&lock);
    found = net_failures(root, c);
    for (int m = 0; m < c->size; m++) {
        int w = c->heap_pe[m];
        if (w == root->rank || atomic_load_explicit(&root->dead[w], memory_order_relaxed)) continue;
        if (!root->heap->peer_base[w]) continue; /* on another host: its pid means nothing here */
        if (!process_alive((pid_t)root->pids[w], 1)) mark_dead(root, w, "found by a direct look"), found = 1;
    }
    if (found)
        for (int i = 0; i < nwatched; i++) abort_if_member_dead(watched[i]);
    pthread_mutex_unlock(&lock);
}

int duet_ft_is_dead(duet_comm_t c, int r)
{
    duet_comm_t root = root_of(c);
    return root->dead && atomic_load_explicit(&root->dead[c->heap_pe[r]], memory_order_acquire);
}

duet_comm_t duet_ft_root(duet_comm_t c) { return root_of(c); }
