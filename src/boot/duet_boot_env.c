/*
 * Launcher environments: who am I, how many are we, and where is the rendezvous.
 *
 *   launcher   rank / size / local                         rendezvous address and secret
 *   duetrun    DUET_RANK, DUET_NRANKS, DUET_LOCAL_*        DUET_BOOT_ADDR, DUET_JOB_SECRET, rank 0
 *                                                          inherits the listener (DUET_BOOT_LISTEN_FD)
 *   mpirun     OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK,      DUET_BOOT_ADDR or MASTER_ADDR:MASTER_PORT+1
 *              LOCAL_SIZE}                                 if set, else a rendezvous file (one host) in
 *   srun       SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID   a private directory, named by the job id;
 *   torchrun   RANK, WORLD_SIZE, LOCAL_RANK,               secret: DUET_JOB_SECRET if set, else
 *              LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT  derived from the job id (weaker)
 *   none       a single rank
 *
 * MASTER_PORT itself belongs to torch's own store, hence MASTER_PORT + 1.
 *
 * The rendezvous file ("host:port pid") lives in a directory only this user can write
 * (duet_boot_env_private_dir) and is read only when it is a regular file of this user with
 * mode 0600, opened without following links: a file planted by anyone else is refused, and
 * even a root it pointed at would have to prove the job secret (duet_boot.h) before a rank
 * tells it anything. Its pid tells a rank that rank 0 died after publishing it (the file is
 * newer than the rank itself: an older one is a dead job's, and rank 0 will replace it).
 *
 * duetrun's inherited listener is kept for the life of the process (each duet_init serves a
 * copy of it), so a later duet_init after duet_finalize rendezvous at the same address.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include "boot/duet_boot.h"
#include "boot/duet_boot_tcp.h"

/* A launcher's number (duet_foreign(NAME)), or fallback when unset or not a number. */
#define env_long(NAME, fallback) env_long_(duet_foreign(NAME), fallback)
static long env_long_(const char *v, long fallback)
{
    if (!v || !*v) return fallback;
    char *end;
    long x = strtol(v, &end, 10);
    return *end ? fallback : x;
}

/* FNV-1a over the job id, stretched to the secret's size: only as secret as the job id. */
static void secret_from_text(const char *text, uint8_t *secret)
{
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < DUET_SECRET_BYTES; i++) {
        for (const char *p = text; *p; p++) h = (h ^ (uint8_t)*p) * 1099511628211ull;
        h = (h ^ (uint64_t)i) * 1099511628211ull;
        secret[i] = (uint8_t)(h >> 56);
    }
}

static const char *job_id_text(void)
{
    static const duet_foreign_t vars[] = {DUET_FOREIGN_TORCHELASTIC_RUN_ID, DUET_FOREIGN_PMIX_NAMESPACE,
                                          DUET_FOREIGN_OMPI_MCA_ess_base_jobid, DUET_FOREIGN_SLURM_JOB_ID};
    for (size_t i = 0; i < DUET_ARRAY_LEN(vars); i++) {
        const char *v = duet_foreign_env_(vars[i]);
        if (v && *v) return v;
    }
    return NULL;
}

static duet_status_t job_secret(uint8_t *secret)
{
    const char *hex = duet_cfg()->job_secret;
    if (hex[0]) {
        if (duet_hex_decode(hex, secret, DUET_SECRET_BYTES))
            return DUET_FAIL(DUET_ERR_INVALID_ARG, BOOT, "DUET_JOB_SECRET must be %d hex digits",
                             2 * DUET_SECRET_BYTES);
        return DUET_OK;
    }
    const char *job = job_id_text();
    if (!job)
        return DUET_FAIL(DUET_ERR_INVALID_ARG, BOOT,
                         "bootstrap: no job secret: set DUET_JOB_SECRET (32 hex digits) on every rank");
    DUET_LOG(INFO, BOOT, "bootstrap: no DUET_JOB_SECRET; deriving the secret from the job id \"%s\"", job);
    char salted[512];
    snprintf(salted, sizeof salted, "duet:%s:%s", job, duet_foreign(SLURM_STEP_ID) ?: "");
    secret_from_text(salted, secret);
    return DUET_OK;
}

/* ---- the single-host rendezvous file */

/* Refuses a directory that anyone but this user could change. */
static duet_status_t check_private(const char *dir, const struct stat *st)
{
    const char *what = S_ISLNK(st->st_mode)              ? "is a symbolic link"
                       : !S_ISDIR(st->st_mode)           ? "is not a directory"
                       : st->st_uid != geteuid()         ? "belongs to another user"
                       : (st->st_mode & (S_IWGRP | S_IWOTH)) ? "is writable by group or others"
                                                         : NULL;
    if (!what) return DUET_OK;
    return DUET_FAIL(DUET_ERR_SYSTEM, BOOT, "bootstrap: refusing the rendezvous directory %s: it %s (owner uid %d, "
                     "mode %03o; it must be this user's (uid %d), mode 0700: remove it)", dir, what, (int)st->st_uid,
                     (unsigned)(st->st_mode & 0777), (int)geteuid());
}

duet_status_t duet_boot_env_private_dir(char *dir, size_t len)
{
    const char *xdg = duet_foreign(XDG_RUNTIME_DIR);
    struct stat st;
    if (xdg && xdg[0] == '/' && lstat(xdg, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
        !(st.st_mode & (S_IWGRP | S_IWOTH)))
        snprintf(dir, len, "%s/duet", xdg);
    else
        snprintf(dir, len, "/tmp/duet-%d", (int)geteuid());
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return DUET_FAIL(DUET_ERR_SYSTEM, BOOT, "bootstrap: cannot create %s: %s", dir, strerror(errno));
    if (lstat(dir, &st) != 0)
        return DUET_FAIL(DUET_ERR_SYSTEM, BOOT, "bootstrap: %s: %s", dir, strerror(errno));
    return check_private(dir, &st);
}

static duet_status_t rdv_file_path(char *path, size_t len)
{
    char dir[256], safe[200];
    duet_status_t st = duet_boot_env_private_dir(dir, sizeof dir);
    if (st) return st;
    const char *job = job_id_text(), *step = duet_foreign(SLURM_STEP_ID);
    size_t i = 0;
    for (; job && job[i] && i < sizeof safe - 1; i++)
        safe[i] = (job[i] == '/' || job[i] == ' ') ? '_' : job[i];
    safe[i] = '\0';
    snprintf(path, len, "%s/rdv-%s%s%s", dir, safe, step ? "." : "", step ? step : "");
    return DUET_OK;
}

static duet_status_t rdv_file_publish(const duet_unique_id_t *uid)
{
    const duet_boot_id_t *id = (const duet_boot_id_t *)uid;
    char path[512], tmp[600], text[96];
    duet_status_t st = rdv_file_path(path, sizeof path);
    if (st) return st;
    snprintf(tmp, sizeof tmp, "%s.%d", path, (int)getpid());
    struct in_addr ia = {id->addr_be};
    int n = snprintf(text, sizeof text, "%s:%u %d\n", inet_ntoa(ia), ntohs(id->port_be), (int)getpid());
    unlink(tmp); /* our own leftover, if any (the directory is ours alone) */
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 || write(fd, text, (size_t)n) != n || close(fd) || rename(tmp, path)) {
        int e = errno;
        if (fd >= 0) unlink(tmp);
        return DUET_FAIL(DUET_ERR_SYSTEM, BOOT, "bootstrap: cannot publish %s: %s", path, strerror(e));
    }
    return DUET_OK;
}

/* 1 when process `pid` has ended (or never was); a zombie has ended too. */
static int pid_ended(int pid)
{
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (fd < 0) return errno == ESRCH;
    struct pollfd p = {fd, POLLIN, 0};
    int ended = poll(&p, 1, 0) == 1;
    close(fd);
    return ended;
}

/* When this process started, on the realtime clock (from its start in ticks since boot). */
static double my_start_realtime(void)
{
    char buf[1024];
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0) close(fd);
    if (n <= 0) return 0;
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    unsigned long long start = 0;
    for (int field = 2; p && field < 22; field++) p = strchr(p + 1, ' ');
    if (!p || sscanf(p + 1, "%llu", &start) != 1) return 0;
    struct timespec rt, bt;
    clock_gettime(CLOCK_REALTIME, &rt);
    clock_gettime(CLOCK_BOOTTIME, &bt);
    double boot_at = (double)rt.tv_sec + rt.tv_nsec * 1e-9 - ((double)bt.tv_sec + bt.tv_nsec * 1e-9);
    return boot_at + (double)start / (double)sysconf(_SC_CLK_TCK);
}

/* Reads the published "host:port pid". DUET_OK with *pid, 1 while there is none yet, else an
 * error (a file that is not this user's own private one is refused, never read). */
static duet_status_t rdv_file_try(const char *path, char *host_port, size_t len, int *pid, double *mtime)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0 && errno == ENOENT) return (duet_status_t)1;
    if (fd < 0)
        return DUET_FAIL(DUET_ERR_SYSTEM, BOOT, "bootstrap: refusing the rendezvous file %s: %s", path,
                         errno == ELOOP ? "it is a symbolic link" : strerror(errno));
    struct stat st;
    const char *what = fstat(fd, &st) != 0          ? strerror(errno)
                       : !S_ISREG(st.st_mode)       ? "it is not a regular file"
                       : st.st_uid != geteuid()     ? "it belongs to another user"
                       : (st.st_mode & 0777) != 0600 ? "its mode is not 0600"
                                                     : NULL;
    if (what) {
        close(fd);
        return DUET_FAIL(DUET_ERR_SYSTEM, BOOT, "bootstrap: refusing the rendezvous file %s: %s (owner uid %d, mode "
                         "%03o; this user is uid %d)", path, what, (int)st.st_uid, (unsigned)(st.st_mode & 0777),
                         (int)geteuid());
    }
    char text[128];
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    text[n > 0 ? n : 0] = '\0';
    char hp[100];
    if (n <= 0 || sscanf(text, "%99s %d", hp, pid) != 2) return (duet_status_t)1; /* being replaced */
    snprintf(host_port, len, "%s", hp);
    *mtime = (double)st.st_mtim.tv_sec + st.st_mtim.tv_nsec * 1e-9;
    return DUET_OK;
}

static duet_status_t rdv_file_read(char *host_port, size_t len, double timeout_s)
{
    char path[512];
    duet_status_t st = rdv_file_path(path, sizeof path);
    if (st) return st;
    double born = my_start_realtime();
    /* the one wait loop, on a doorbell nobody rings: it looks again after each short sleep,
     * and the hang report sees the wait */
    duet_doorbell_t bell = {0};
    duet_wait_ctx_t ctx = {.doorbell = &bell, .timeout_s = timeout_s};
    duet_waiter_t w;
    duet_waiter_init(&w, &ctx, "%s", "bootstrap: rank 0's rendezvous file", 0, 0, 0);
    for (;;) {
        int pid = 0;
        double mtime = 0;
        st = rdv_file_try(path, host_port, len, &pid, &mtime);
        if (st < 0) return st;
        if (st == DUET_OK && !pid_ended(pid)) return DUET_OK;
        /* rank 0 published and died (the file is younger than me: this job's), or a dead job's file */
        if (st == DUET_OK && mtime >= born - 0.5)
            return DUET_FAIL(DUET_ERR_PEER_FAILED, BOOT, "bootstrap: rank 0 (pid %d) published the rendezvous %s and "
                             "died before the others could join", pid, path);
        if ((st = duet_waiter_turn(&w)) == DUET_ERR_TIMEOUT)
            return DUET_FAIL(DUET_ERR_TIMEOUT, BOOT,
                             "bootstrap: rank 0 did not publish %s in time; across hosts, set "
                             "DUET_BOOT_ADDR=host:port (or MASTER_ADDR/MASTER_PORT)", path);
        if (st) return st;
    }
}

/* duetrun's listener, taken once and kept for the life of the process (-1: none yet) */
static int kept_listener = -1;

/* The listener rank 0 serves at host_port: a copy of duetrun's, or its own on that port, bound
 * to the address host_port names. Not where the settings name an interface (then theirs), nor
 * where it names loopback for a job not known to be on one host (a node's name often resolves
 * to 127.0.1.1 on that node alone: then the interface the settings choose), nor where it is not
 * this host's address (a service address: the same). */
static duet_status_t root_listener(const char *host_port, int *out)
{
    int inherited = (int)duet_cfg()->boot_listen_fd;
    if (inherited >= 0 && kept_listener < 0) {
        kept_listener = inherited;
        fcntl(kept_listener, F_SETFD, FD_CLOEXEC); /* not inherited by the program's children */
        fcntl(kept_listener, F_SETFL, fcntl(kept_listener, F_GETFL) | O_NONBLOCK);
    }
    if (kept_listener >= 0) {
        *out = fcntl(kept_listener, F_DUPFD_CLOEXEC, 0);
        if (*out < 0) return DUET_FAIL(DUET_ERR_SYSTEM, BOOT, "bootstrap: dup of the inherited listener: %s", strerror(errno));
        return DUET_OK;
    }
    duet_unique_id_t tmp;
    duet_status_t st = duet_boot_id_from(&tmp, host_port, (const uint8_t[DUET_SECRET_BYTES]){0}, -1);
    if (st) return st;
    const duet_boot_id_t *named = (const duet_boot_id_t *)&tmp;
    const duet_cfg_t *cfg = duet_cfg();
    const char *because;
    int settings = cfg->socket_ifname[0] || cfg->bootstrap_ifaddr[0];
    int lo_apart = (ntohl(named->addr_be) >> 24) == 127 && !duet_boot_env_one_host(&because);
    if (!settings && !lo_apart) {
        st = duet_tcp_listen(named->addr_be, named->port_be, 1, out);
        if (st != DUET_ERR_SYSTEM) return st;
    }
    uint32_t addr;
    char why[256];
    duet_status_t st2 = duet_boot_bind_addr(DUET_BOOT_ASK_LAUNCHER, &addr, why, sizeof why);
    if (st2) return st2;
    DUET_LOG(INFO, BOOT, "bootstrap: rank 0 listens on port %u of %s, not of the address %s names", ntohs(named->port_be),
             why, host_port);
    return duet_tcp_listen(addr, named->port_be, 1, out);
}

static duet_status_t rendezvous_id(duet_boot_env_t *env)
{
    uint8_t secret[DUET_SECRET_BYTES];
    duet_status_t st = job_secret(secret);
    if (st) return st;
    const char *boot_addr = duet_cfg()->boot_addr;
    const char *maddr = duet_foreign(MASTER_ADDR), *mport = duet_foreign(MASTER_PORT);
    char host_port[300];
    if (boot_addr[0]) {
        snprintf(host_port, sizeof host_port, "%s", boot_addr);
    } else if (maddr && mport) {
        snprintf(host_port, sizeof host_port, "%s:%ld", maddr, strtol(mport, NULL, 10) + 1);
    } else {
        /* one host: rank 0 makes a listener (loopback) and publishes it in a file */
        if (env->rank == 0) {
            if ((st = duet_boot_id_create_secret(&env->id, secret, DUET_BOOT_ONE_HOST))) return st;
            if ((st = rdv_file_publish(&env->id))) return st;
            env->published_file = 1;
            return DUET_OK;
        }
        if ((st = rdv_file_read(host_port, sizeof host_port, duet_cfg()->bootstrap_timeout)))
            return st;
        st = duet_boot_id_from(&env->id, host_port, secret, -1);
        ((duet_boot_id_t *)&env->id)->flags |= DUET_BOOT_ID_LISTENING; /* published once it listened */
        return st;
    }
    int listen_fd = -1;
    if (env->rank == 0 && (st = root_listener(host_port, &listen_fd))) return st;
    st = duet_boot_id_from(&env->id, host_port, secret, listen_fd);
    if (st && listen_fd >= 0) close(listen_fd);
    /* duetrun listens before it starts any rank (and says so); ranks started by hand may come first */
    if (duet_cfg()->boot_listening) ((duet_boot_id_t *)&env->id)->flags |= DUET_BOOT_ID_LISTENING;
    return st;
}

int duet_boot_env_one_host(const char **why)
{
    const duet_cfg_t *cfg = duet_cfg();
    static _Thread_local char text[128];
    long n, local;
    int one;
    if (cfg->rank >= 0 && cfg->nranks > 0) { /* duetrun, or ranks started by hand */
        one = cfg->local_size == cfg->nranks;
        snprintf(text, sizeof text, "DUET_LOCAL_SIZE says %ld of %ld ranks are on this host%s", cfg->local_size,
                 cfg->nranks, cfg->boot_listening ? " (duetrun)" : "");
    } else if ((n = env_long(OMPI_COMM_WORLD_SIZE, 0)) > 0) {
        local = env_long(OMPI_COMM_WORLD_LOCAL_SIZE, 0);
        one = local == n;
        snprintf(text, sizeof text, "mpirun says %ld of %ld ranks are on this host", local, n);
    } else if (env_long(SLURM_NTASKS, 0) > 0 && env_long(SLURM_PROCID, -1) >= 0) {
        long nodes = env_long(SLURM_NNODES, env_long(SLURM_JOB_NUM_NODES, 0));
        one = nodes == 1;
        snprintf(text, sizeof text, "srun says the job has %ld node(s)", nodes);
    } else if ((n = env_long(WORLD_SIZE, 0)) > 0 && env_long(RANK, -1) >= 0) {
        local = env_long(LOCAL_WORLD_SIZE, -1);
        one = local == n;
        snprintf(text, sizeof text, "torchrun says %ld of %ld ranks are on this host", local, n);
    } else {
        one = 0;
        snprintf(text, sizeof text, "no launcher says where the ranks run");
    }
    *why = text;
    return one;
}

duet_status_t duet_boot_env_detect(duet_boot_env_t *env)
{
    const duet_cfg_t *cfg = duet_cfg();
    memset(env, 0, sizeof *env);
    if (cfg->rank >= 0 && cfg->nranks > 0) {
        env->launcher = "duetrun";
        env->rank = (int)cfg->rank;
        env->nranks = (int)cfg->nranks;
        env->local_rank = (int)cfg->local_rank;
        env->local_size = (int)cfg->local_size;
    } else if (env_long(OMPI_COMM_WORLD_SIZE, 0) > 0) {
        env->launcher = "mpirun";
        env->rank = (int)env_long(OMPI_COMM_WORLD_RANK, -1);
        env->nranks = (int)env_long(OMPI_COMM_WORLD_SIZE, 0);
        env->local_rank = (int)env_long(OMPI_COMM_WORLD_LOCAL_RANK, -1);
        env->local_size = (int)env_long(OMPI_COMM_WORLD_LOCAL_SIZE, 0);
    } else if (env_long(SLURM_NTASKS, 0) > 0 && env_long(SLURM_PROCID, -1) >= 0) {
        env->launcher = "srun";
        env->rank = (int)env_long(SLURM_PROCID, -1);
        env->nranks = (int)env_long(SLURM_NTASKS, 0);
        env->local_rank = (int)env_long(SLURM_LOCALID, -1);
        env->local_size = -1; /* learned at rendezvous */
    } else if (env_long(WORLD_SIZE, 0) > 0 && env_long(RANK, -1) >= 0) {
        env->launcher = "torchrun";
        env->rank = (int)env_long(RANK, -1);
        env->nranks = (int)env_long(WORLD_SIZE, 0);
        env->local_rank = (int)env_long(LOCAL_RANK, -1);
        env->local_size = (int)env_long(LOCAL_WORLD_SIZE, -1);
    } else {
        env->launcher = "none";
        env->rank = 0;
        env->nranks = 1;
        env->local_rank = 0;
        env->local_size = 1;
        return duet_boot_id_create_secret(&env->id, NULL, DUET_BOOT_ONE_HOST); /* a single rank */
    }
    if (env->rank < 0 || env->rank >= env->nranks)
        return DUET_FAIL(DUET_ERR_INVALID_ARG, BOOT, "%s gave rank %d outside [0, %d)", env->launcher,
                         env->rank, env->nranks);
    DUET_LOG(INFO, BOOT, "launched by %s: rank %d of %d", env->launcher, env->rank, env->nranks);
    return rendezvous_id(env);
}

void duet_boot_env_cleanup(duet_boot_env_t *env)
{
    if (!env->published_file) return;
    char path[512];
    if (rdv_file_path(path, sizeof path) == DUET_OK) unlink(path);
    env->published_file = 0;
}
