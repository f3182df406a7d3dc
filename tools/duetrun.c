/*
 * duetrun — starts N ranks of a program on this host and watches over them.
 *
 *   duetrun -n N [-x VAR[=VAL]]... [--tag-output] [--timeout S] [--ft] [--] prog [args...]
 *
 * Setup. Before any rank starts, duetrun listens on 127.0.0.1:<port the kernel picks> and
 * draws a 128-bit job secret. Every rank is born knowing where the rendezvous is
 * (DUET_BOOT_ADDR) and how to prove it belongs to this job (DUET_JOB_SECRET). Rank 0
 * inherits the listening socket itself (DUET_BOOT_LISTEN_FD): no other process can take the
 * port in between, and other ranks may connect before rank 0 runs (the backlog holds them).
 * duetrun closes its own copy once every rank has started, so the listener dies with rank 0:
 * the others then see a reset or a refusal at once instead of waiting out their timeout.
 *
 * Processes. The ranks share one new process group, led by rank 0 and separate from
 * duetrun's. A Ctrl-C from the terminal therefore reaches duetrun alone, which forwards it
 * once; and what duetrun sends to the group also reaches whatever the ranks started (a
 * shell's children), so ending a job leaves nothing behind. The price: the ranks are a
 * background group and cannot read from a terminal. Each rank asks to be SIGKILLed when
 * duetrun dies (PR_SET_PDEATHSIG), so even a killed launcher leaves no orphans.
 *
 * One event loop. SIGCHLD and the forwarded signals are blocked and read from a signalfd;
 * with --tag-output the ranks' stdout/stderr pipes join it in one poll(2), whose timeout is
 * the nearest deadline: the --timeout, the end of the SIGTERM grace, the end of patience
 * after SIGKILL. Signals that duetrun was started with ignored (nohup, `&`) stay ignored.
 *
 * Failure. The first rank to fail (non-zero exit or a signal) or the timeout is the cause,
 * reported in one line; the other ranks are then ended (SIGTERM to the group, SIGKILL after
 * 2 s), and their deaths are consequences, not reported. Exit code: 0, 1 (a rank exited
 * non-zero), 128+sig (a rank was killed), 124 (timeout), 2 (command line). With --ft a
 * failing rank is reported and the others go on (the library's failure detector tells them);
 * the exit code is then 1 if a rank exited non-zero, else 0, unless every rank was killed.
 *
 * Cleanup. When every rank is gone, /dev/shm/duet-<job part>-* is unlinked: ranks name their
 * shared memory that way (the job part a keyed hash of the secret, which the names never
 * show), and a rank killed during its set-up cannot unlink its own. If duetrun itself is
 * killed, the next job of the user removes them (the library's duet_heap_reclaim.c).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include "boot/duet_boot.h" /* duet_hex_decode */
#include "util/duet_util.h"

#define MAX_RANKS 4096
#define GRACE_NS  2000000000ull /* SIGTERM -> SIGKILL                      */
#define REAP_NS   5000000000ull /* SIGKILL -> stop waiting for the dead     */
#define LINE_CAP  4096          /* --tag-output splits longer lines         */

static const int forwarded_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGQUIT};

typedef enum { BIND_AUTO, BIND_CORE, BIND_NONE } bind_t;

typedef struct {
    int nranks, tag_output;
    int ft; /* --ft: a rank's death is reported, the others go on */
    bind_t bind;
    double timeout_s; /* 0: no timeout */
    char **argv;      /* the program and its arguments */
} options_t;

typedef struct {
    int fd;       /* read end of a rank's stdout or stderr pipe; -1 once closed */
    int rank, out; /* out: duetrun's fd the prefixed lines go to (1 or 2) */
    size_t len;
    char buf[LINE_CAP];
} stream_t;

typedef enum { RUNNING, TERMINATING, KILLING } phase_t;

typedef struct {
    options_t opt;
    pid_t launcher, pgid; /* duetrun's pid; the ranks' process group (0: none yet) */
    pid_t *pids;          /* per rank; 0 when not running */
    int live;
    int sigfd;
    sigset_t saved_mask; /* restored in each rank before exec */
    struct rlimit saved_nofile;
    stream_t *streams; /* 2 per rank with --tag-output */
    int nstreams;
    phase_t phase;
    uint64_t deadline_ns; /* the timeout while RUNNING, else the next escalation; 0: none */
    int gave_up, exit_code;
    int deaths, first_death_sig; /* --ft: ranks killed by a signal, and the first one's signal */
    char secret[33];
    int ncpus;  /* CPUs duetrun may run on; rank r is bound to cpus[r] when binding */
    int *cpus;
} job_t;

/* ------------------------------------------------------------------ command line */

static void usage(FILE *f)
{
    fprintf(f, "usage: duetrun -n N [-x VAR[=VAL]]... [--tag-output] [--timeout S] [--ft] [--] prog [args...]\n"
               "  -n, -np N      number of ranks, 1..%d\n"
               "  -x VAR=VAL     set VAR in every rank; -x VAR passes duetrun's own value of VAR\n"
               "  --tag-output   prefix every line the ranks print with \"[rank] \"\n"
               "  --timeout S    end the job after S seconds (fractional; 0: never), exit 124\n"
               "  --ft           fault tolerant: a rank killed by a signal is reported and the\n"
               "                 others go on (the library tells them: DUET_ERR_PEER_FAILED);\n"
               "                 the exit code is then the survivors' (1 if one exits non-zero)\n"
               "  --bind-to core|none\n"
               "                 pin rank r to the r-th allowed CPU (default: core when the\n"
               "                 ranks fit on the CPUs, none when they do not)\n"
               "  --help         show this text\n",
            MAX_RANKS);
}

/* "duetrun: <message>[: <strerror(err)>]" on stderr. */
static void say(int err, const char *fmt, va_list ap)
{
    fputs("duetrun: ", stderr);
    vfprintf(stderr, fmt, ap);
    if (err) fprintf(stderr, ": %s", strerror(err));
    fputc('\n', stderr);
}

static _Noreturn __attribute__((format(printf, 1, 2))) void usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    say(0, fmt, ap);
    va_end(ap);
    usage(stderr);
    exit(2);
}

/* A setup step failed (errno says why); no rank runs yet. */
static _Noreturn __attribute__((format(printf, 1, 2))) void die(const char *fmt, ...)
{
    int err = errno;
    va_list ap;
    va_start(ap, fmt);
    say(err, fmt, ap);
    va_end(ap);
    exit(1);
}

static int parse_nranks(const char *text)
{
    char *end;
    errno = 0;
    long n = strtol(text, &end, 10);
    if (end == text || *end || errno || n < 1 || n > MAX_RANKS)
        usage_error("-n wants a number of ranks from 1 to %d, not \"%s\"", MAX_RANKS, text);
    return (int)n;
}

/* -x: the ranks inherit duetrun's environment, so setting it here is enough. */
static void export_var(const char *spec)
{
    const char *eq = strchr(spec, '=');
    if (eq == spec || !*spec) usage_error("-x wants VAR or VAR=VAL, not \"%s\"", spec);
    if (!eq) {
        if (!getenv(spec)) usage_error("-x %s: %s is not set", spec, spec);
        return;
    }
    char *name = strndup(spec, (size_t)(eq - spec));
    if (!name || setenv(name, eq + 1, 1) != 0) usage_error("-x %s: %s", spec, strerror(errno));
    free(name);
}

static void parse_args(int argc, char **argv, options_t *o)
{
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) {
            i++;
            break;
        }
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            exit(0);
        }
        if (!strcmp(a, "--tag-output")) {
            o->tag_output = 1;
            continue;
        }
        if (!strcmp(a, "--ft")) {
            o->ft = 1;
            continue;
        }
        int known = !strcmp(a, "-n") || !strcmp(a, "-np") || !strcmp(a, "-x") || !strcmp(a, "--timeout") ||
                    !strcmp(a, "--bind-to");
        if (!known) usage_error("unknown option %s", a);
        if (i + 1 >= argc) usage_error("%s needs a value", a);
        const char *v = argv[++i];
        if (!strcmp(a, "--bind-to")) {
            if (!strcmp(v, "core")) o->bind = BIND_CORE;
            else if (!strcmp(v, "none")) o->bind = BIND_NONE;
            else usage_error("--bind-to wants core or none, not \"%s\"", v);
        } else if (a[1] == 'n') o->nranks = parse_nranks(v);
        else if (a[1] == 'x') export_var(v);
        else if (duet_parse_secs(v, &o->timeout_s) != 0)
            usage_error("--timeout wants seconds >= 0, not \"%s\"", v);
    }
    if (o->nranks == 0) usage_error("-n is required");
    if (i >= argc) usage_error("no program to run");
    o->argv = argv + i;
}

/* ------------------------------------------------------------------ setup */

/* A closed fd 0..2 would be handed out by the next open and then clobbered by dup2. */
static void ensure_std_fds(void)
{
    for (int fd = 0; fd < 3; fd++)
        if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", O_RDWR) < 0) die("open /dev/null");
}

/* --tag-output holds two pipes per rank at once. */
static void raise_fd_limit(job_t *job, rlim_t need)
{
    getrlimit(RLIMIT_NOFILE, &job->saved_nofile);
    struct rlimit rl = job->saved_nofile;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
        rl.rlim_cur = need;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
            die("%d ranks need %lu open files", job->opt.nranks, (unsigned long)need);
    }
}

static int open_listener(char *addr, size_t addr_len)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof sa;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) die("socket");
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0) die("bind 127.0.0.1:0");
    if (listen(fd, 4096) != 0) die("listen");
    if (getsockname(fd, (struct sockaddr *)&sa, &len) != 0) die("getsockname");
    snprintf(addr, addr_len, "127.0.0.1:%u", (unsigned)ntohs(sa.sin_port));
    return fd;
}

static void make_secret(char hex[33])
{
    unsigned char raw[16];
    ssize_t n;
    while ((n = getrandom(raw, sizeof raw, 0)) < 0 && errno == EINTR) {}
    if (n != (ssize_t)sizeof raw) die("getrandom");
    for (size_t i = 0; i < sizeof raw; i++) snprintf(hex + 2 * i, 3, "%02x", raw[i]);
}

/* What every rank shares; the per-rank variables are set in the child. */
static void export_job_env(const job_t *job, const char *addr)
{
    char n[16];
    snprintf(n, sizeof n, "%d", job->opt.nranks);
    if (setenv("DUET_NRANKS", n, 1) || setenv("DUET_LOCAL_SIZE", n, 1) || setenv("DUET_BOOT_ADDR", addr, 1) ||
        setenv("DUET_JOB_SECRET", job->secret, 1) || setenv("DUET_BOOT_LISTENING", "1", 1) ||
        unsetenv("DUET_BOOT_LISTEN_FD"))
        die("setenv");
}

static void block_signals(job_t *job)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    signal(SIGCHLD, SIG_DFL); /* an inherited SIG_IGN would reap the ranks behind our back */
    for (size_t i = 0; i < DUET_ARRAY_LEN(forwarded_signals); i++) {
        struct sigaction old;
        sigaction(forwarded_signals[i], NULL, &old);
        if (old.sa_handler != SIG_IGN) sigaddset(&set, forwarded_signals[i]);
    }
    if (sigprocmask(SIG_BLOCK, &set, &job->saved_mask) != 0) die("sigprocmask");
    job->sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (job->sigfd < 0) die("signalfd");
}

/* ------------------------------------------------------------------ starting ranks */

static _Noreturn void rank_fail(int rank, const char *what)
{
    fprintf(stderr, "duetrun: rank %d: %s: %s\n", rank, what, strerror(errno));
    _exit(127);
}

/* Which CPUs the ranks get: the ones duetrun may use, in order, one per rank. */
static void plan_binding(job_t *job)
{
    cpu_set_t set;
    if (job->opt.bind == BIND_NONE || sched_getaffinity(0, sizeof set, &set) != 0) return;
    job->ncpus = CPU_COUNT(&set);
    if (job->opt.bind == BIND_AUTO && job->opt.nranks > job->ncpus) return; /* oversubscribed */
    job->cpus = calloc((size_t)job->ncpus, sizeof *job->cpus);
    if (!job->cpus) die("calloc");
    for (int cpu = 0, k = 0; cpu < CPU_SETSIZE && k < job->ncpus; cpu++)
        if (CPU_ISSET(cpu, &set)) job->cpus[k++] = cpu;
}

/* In the child: becomes rank `rank` and execs the program. */
static _Noreturn void run_rank(const job_t *job, int rank, int listen_fd, int out_fd, int err_fd)
{
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) rank_fail(rank, "prctl(PR_SET_PDEATHSIG)");
    if (getppid() != job->launcher) _exit(127); /* duetrun died before the prctl */
    if (setpgid(0, rank == 0 ? 0 : job->pgid) != 0) rank_fail(rank, "setpgid");
    if (out_fd >= 0 && (dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0)) rank_fail(rank, "dup2");

    char num[16];
    snprintf(num, sizeof num, "%d", listen_fd);
    if (rank == 0) {
        if (fcntl(listen_fd, F_SETFD, 0) != 0 || setenv("DUET_BOOT_LISTEN_FD", num, 1) != 0)
            rank_fail(rank, "passing the listening socket");
    } else {
        close(listen_fd);
    }
    snprintf(num, sizeof num, "%d", rank);
    if (setenv("DUET_RANK", num, 1) != 0 || setenv("DUET_LOCAL_RANK", num, 1) != 0) rank_fail(rank, "setenv");
    setrlimit(RLIMIT_NOFILE, &job->saved_nofile);
    sigprocmask(SIG_SETMASK, &job->saved_mask, NULL);
    if (job->cpus) {
        /* two ranks left to share a core spin against each other (a 0.1 us round trip
         * becomes tens of us); one rank per core, like mpirun's default */
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(job->cpus[rank % job->ncpus], &set);
        if (sched_setaffinity(0, sizeof set, &set) != 0) rank_fail(rank, "sched_setaffinity");
    }

    execvp(job->opt.argv[0], job->opt.argv);
    fprintf(stderr, "duetrun: rank %d: cannot execute %s: %s\n", rank, job->opt.argv[0], strerror(errno));
    _exit(127);
}

/* A pipe whose read end (close-on-exec, non-blocking) duetrun keeps. */
static void open_stream(job_t *job, int rank, int out, int *write_end)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) die("pipe");
    fcntl(p[0], F_SETFL, O_NONBLOCK);
    stream_t *s = &job->streams[job->nstreams++];
    *s = (stream_t){.fd = p[0], .rank = rank, .out = out};
    *write_end = p[1];
}

static void signal_ranks(job_t *job, int sig)
{
    if (job->pgid > 0) kill(-job->pgid, sig);
}

static void start_termination(job_t *job, int exit_code)
{
    job->exit_code = exit_code;
    job->phase = TERMINATING;
    job->deadline_ns = duet_time_ns() + GRACE_NS;
    signal_ranks(job, SIGTERM);
}

static void start_ranks(job_t *job, int listen_fd)
{
    for (int r = 0; r < job->opt.nranks; r++) {
        int out_fd = -1, err_fd = -1;
        if (job->opt.tag_output) {
            open_stream(job, r, 1, &out_fd);
            open_stream(job, r, 2, &err_fd);
        }
        pid_t pid = fork();
        if (pid == 0) run_rank(job, r, listen_fd, out_fd, err_fd);
        if (out_fd >= 0) close(out_fd), close(err_fd);
        if (pid < 0) {
            fprintf(stderr, "duetrun: cannot start rank %d: fork: %s\n", r, strerror(errno));
            start_termination(job, 1);
            return;
        }
        if (r == 0) job->pgid = pid;
        setpgid(pid, job->pgid); /* the child does it too: whichever runs first wins */
        job->pids[r] = pid;
        job->live++;
    }
}

/* ------------------------------------------------------------------ --tag-output */

static void write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return; /* nowhere to write: drop the output, keep running the job */
        p += w, n -= (size_t)w;
    }
}

static void emit_line(const stream_t *s, const char *line, size_t len, int add_newline)
{
    char out[LINE_CAP + 32];
    size_t n = (size_t)snprintf(out, 32, "[%d] ", s->rank);
    memcpy(out + n, line, len);
    n += len;
    if (add_newline) out[n++] = '\n';
    write_all(s->out, out, n);
}

/* Writes out every complete line; at EOF, or when one line fills the buffer, the rest too. */
static void emit_lines(stream_t *s, int at_eof)
{
    size_t start = 0;
    char *nl;
    while ((nl = memchr(s->buf + start, '\n', s->len - start)) != NULL) {
        size_t end = (size_t)(nl - s->buf) + 1;
        emit_line(s, s->buf + start, end - start, 0);
        start = end;
    }
    if (start < s->len && (at_eof || s->len == LINE_CAP)) {
        emit_line(s, s->buf + start, s->len - start, 1);
        start = s->len;
    }
    memmove(s->buf, s->buf + start, s->len - start);
    s->len -= start;
}

static void close_stream(stream_t *s)
{
    emit_lines(s, 1);
    close(s->fd);
    s->fd = -1;
}

/* One read. Returns 1 if it got data (there may be more). */
static int read_stream(stream_t *s)
{
    ssize_t n = read(s->fd, s->buf + s->len, LINE_CAP - s->len);
    if (n > 0) {
        s->len += (size_t)n;
        emit_lines(s, 0);
        return 1;
    }
    if (n == 0 || (errno != EAGAIN && errno != EINTR)) close_stream(s);
    return 0;
}

/* After the last rank is reaped: what its pipes hold is all there is. Do not wait for EOF,
 * which a rank's background child could hold off forever. */
static void drain_streams(job_t *job)
{
    for (int i = 0; i < job->nstreams; i++) {
        stream_t *s = &job->streams[i];
        while (s->fd >= 0 && read_stream(s)) {}
        if (s->fd >= 0) close_stream(s);
    }
}

/* ------------------------------------------------------------------ the event loop */

static int rank_of(const job_t *job, pid_t pid)
{
    for (int r = 0; r < job->opt.nranks; r++)
        if (job->pids[r] == pid) return r;
    return -1;
}

static void report_failure(job_t *job, int rank, pid_t pid, int status)
{
    int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    if (sig)
        fprintf(stderr, "duetrun: rank %d (pid %d) killed by signal %d (%s)\n", rank, (int)pid, sig,
                strsignal(sig));
    else
        fprintf(stderr, "duetrun: rank %d (pid %d) exited with status %d\n", rank, (int)pid,
                WEXITSTATUS(status));
    start_termination(job, sig ? 128 + sig : 1);
}

/* --ft: a death is reported and the others go on. The job's exit code: 1 once a rank exits
 * non-zero; a rank killed by a signal does not change it, unless every rank dies so (then
 * 128 + the first one's signal). */
static void report_death(job_t *job, int rank, pid_t pid, int status)
{
    int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    if (sig) {
        fprintf(stderr, "duetrun: rank %d (pid %d) killed by signal %d (%s); --ft: the others go on\n", rank,
                (int)pid, sig, strsignal(sig));
        if (!job->first_death_sig) job->first_death_sig = sig;
        job->deaths++;
    } else {
        fprintf(stderr, "duetrun: rank %d (pid %d) exited with status %d; --ft: the others go on\n", rank,
                (int)pid, WEXITSTATUS(status));
        job->exit_code = 1;
    }
    if (job->deaths == job->opt.nranks) job->exit_code = 128 + job->first_death_sig;
}

static void reap_ranks(job_t *job)
{
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        int r = rank_of(job, pid);
        if (r < 0) continue;
        job->pids[r] = 0;
        job->live--;
        int failed = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
        if (failed && job->phase == RUNNING) {
            if (job->opt.ft) report_death(job, r, pid, status);
            else report_failure(job, r, pid, status);
        }
    }
}

static void handle_signals(job_t *job)
{
    struct signalfd_siginfo si;
    while (read(job->sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
        if (si.ssi_signo == SIGCHLD) reap_ranks(job);
        else signal_ranks(job, (int)si.ssi_signo);
    }
}

static void print_running(const job_t *job, const char *what)
{
    fprintf(stderr, "duetrun: %s:", what);
    for (int r = 0; r < job->opt.nranks; r++)
        if (job->pids[r]) fprintf(stderr, " %d", r);
    fputc('\n', stderr);
}

static void handle_deadline(job_t *job)
{
    if (!job->deadline_ns || duet_time_ns() < job->deadline_ns) return;
    if (job->phase == RUNNING) {
        char what[96];
        snprintf(what, sizeof what, "timeout after %g s; ranks still running", job->opt.timeout_s);
        print_running(job, what);
        start_termination(job, 124);
    } else if (job->phase == TERMINATING) {
        signal_ranks(job, SIGKILL);
        job->phase = KILLING;
        job->deadline_ns = duet_time_ns() + REAP_NS;
    } else {
        print_running(job, "giving up on ranks that outlived SIGKILL");
        job->gave_up = 1;
    }
}

static int poll_timeout_ms(const job_t *job)
{
    if (!job->deadline_ns) return -1;
    uint64_t now = duet_time_ns();
    if (now >= job->deadline_ns) return 0;
    uint64_t ms = (job->deadline_ns - now + 999999) / 1000000;
    return ms > INT_MAX ? INT_MAX : (int)ms;
}

static void run_event_loop(job_t *job)
{
    struct pollfd *pfd = calloc((size_t)job->nstreams + 1, sizeof *pfd);
    stream_t **owner = calloc((size_t)job->nstreams + 1, sizeof *owner);
    if (!pfd || !owner) die("calloc");
    while (job->live > 0 && !job->gave_up) {
        int n = 0;
        pfd[n++] = (struct pollfd){.fd = job->sigfd, .events = POLLIN};
        for (int i = 0; i < job->nstreams; i++) {
            if (job->streams[i].fd < 0) continue;
            owner[n] = &job->streams[i];
            pfd[n++] = (struct pollfd){.fd = job->streams[i].fd, .events = POLLIN};
        }
        if (poll(pfd, (nfds_t)n, poll_timeout_ms(job)) < 0 && errno != EINTR) {
            fprintf(stderr, "duetrun: poll: %s; abandoning the ranks\n", strerror(errno));
            if (!job->exit_code) job->exit_code = 1;
            break;
        }
        if (pfd[0].revents) handle_signals(job);
        for (int i = 1; i < n; i++)
            if (pfd[i].revents) read_stream(owner[i]);
        handle_deadline(job);
    }
    free(pfd);
    free(owner);
}

/* ------------------------------------------------------------------ cleanup */

/* The job's names start with duet-<job part>, a keyed hash of the secret (the library's
 * duet_name_job_part): the ones its ranks could not unlink because they were killed. */
static void remove_job_shm(const char *secret)
{
    uint8_t raw[16];
    char part[DUET_NAME_JOB_HEX + 1], prefix[48];
    if (duet_hex_decode(secret, raw, sizeof raw) != 0) return;
    duet_name_job_part(raw, sizeof raw, part);
    memset(raw, 0, sizeof raw);
    size_t len = (size_t)snprintf(prefix, sizeof prefix, "duet-%s-", part);
    DIR *dir = opendir("/dev/shm");
    if (!dir) return;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL)
        if (!strncmp(e->d_name, prefix, len) && unlinkat(dirfd(dir), e->d_name, 0) != 0 && errno != ENOENT)
            fprintf(stderr, "duetrun: cannot remove /dev/shm/%s: %s\n", e->d_name, strerror(errno));
    closedir(dir);
}

int main(int argc, char **argv)
{
    job_t job = {.launcher = getpid()};
    char addr[32];

    setvbuf(stderr, NULL, _IOLBF, 0); /* each message leaves in one write */
    parse_args(argc, argv, &job.opt);
    ensure_std_fds();
    raise_fd_limit(&job, job.opt.tag_output ? 2 * (rlim_t)job.opt.nranks + 64 : 0);
    int listen_fd = open_listener(addr, sizeof addr);
    make_secret(job.secret);
    export_job_env(&job, addr);
    block_signals(&job);

    job.pids = calloc((size_t)job.opt.nranks, sizeof *job.pids);
    job.streams = job.opt.tag_output ? calloc(2 * (size_t)job.opt.nranks, sizeof *job.streams) : NULL;
    if (!job.pids || (job.opt.tag_output && !job.streams)) die("calloc");
    if (job.opt.timeout_s > 0) /* capped at ~30 years, which keeps the sum in range */
        job.deadline_ns = duet_time_ns() + (uint64_t)(fmin(job.opt.timeout_s, 1e9) * 1e9);

    plan_binding(&job);
    start_ranks(&job, listen_fd);
    close(listen_fd);
    run_event_loop(&job);
    drain_streams(&job);
    if (job.phase != RUNNING) signal_ranks(&job, SIGKILL); /* what the ranks left behind */
    remove_job_shm(job.secret);
    free(job.pids);
    free(job.streams);
    free(job.cpus);
    return job.exit_code;
}
