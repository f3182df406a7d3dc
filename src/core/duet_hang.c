/*
 * duet_hang.c — hang diagnosis: every rank says what it waits for, on demand.
 *
 * DUET_HANG_SIGNAL (SIGUSR2 by default; duetrun forwards it to every rank) sets a flag and wakes
 * the failure detector's thread (duet_ft.c), which writes one log line per wait in progress:
 * "hang report: duet_allreduce #1042 (ring), step 5 of 12 from rank 3: waiting 12.3 s", or "not
 * waiting". With DUET_HANG_REPORT_S set, the thread also reports, once, every wait older than
 * that. The lines come from the notes the wait loop keeps of long waits (duet_wait_report in
 * duet_util_wait.c), so the waiting thread is not disturbed. The handler is installed only
 * where the program left the signal at its default, while the detector runs.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "core/duet_ft.h"
#include "core/duet_hang.h"

static _Atomic int report_asked; /* set by the signal's handler */

static void on_hang_signal(int sig)
{
    (void)sig;
    atomic_store_explicit(&report_asked, 1, memory_order_relaxed);
    duet_ft_wake(); /* write(2): async-signal-safe */
}

static int hang_signal_number(void)
{
    const char *v = duet_cfg()->hang_signal;
    if (!v[0] || !strcasecmp(v, "none") || !strcmp(v, "0")) return 0;
    if (!strcasecmp(v, "USR1") || !strcasecmp(v, "SIGUSR1")) return SIGUSR1;
    if (!strcasecmp(v, "USR2") || !strcasecmp(v, "SIGUSR2")) return SIGUSR2;
    char *end;
    long n = strtol(v, &end, 10);
    if (*end || n <= 0 || n >= NSIG) {
        DUET_LOG(WARN, INIT, "DUET_HANG_SIGNAL=%s is not USR1, USR2, a signal number or none: no handler", v);
        return 0;
    }
    return (int)n;
}

static int hang_sig; /* the signal whose handler we installed, 0: none */

/* Installs the hang signal's handler, where the program left that signal at its default
 * (while the detector runs: the last communicator's end puts the default back). */
void duet_hang_install(void)
{
    int sig = hang_signal_number();
    struct sigaction old;
    if (!sig || sigaction(sig, NULL, &old) != 0 || old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO)) return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_hang_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(sig, &sa, NULL) == 0) hang_sig = sig;
}

void duet_hang_remove(void)
{
    struct sigaction now;
    if (hang_sig && sigaction(hang_sig, NULL, &now) == 0 && now.sa_handler == on_hang_signal)
        signal(hang_sig, SIG_DFL);
    hang_sig = 0;
}

/* What this process waits for, in the log: on the signal every wait in progress; by age
 * the waits older than DUET_HANG_REPORT_S, each once. */
void duet_hang_reports(void)
{
    char buf[2048];
    if (atomic_exchange_explicit(&report_asked, 0, memory_order_relaxed)) {
        duet_wait_report(buf, sizeof buf, 0);
        DUET_LOG(WARN, INIT, "hang report: %s", buf);
    }
    double older = duet_cfg()->hang_report_s;
    if (older > 0 && duet_wait_report(buf, sizeof buf, older) > 0) DUET_LOG(WARN, INIT, "hang report: %s", buf);
}
