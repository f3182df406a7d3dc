/*
 * test_ft_hang.c — hang diagnosis (label ft): a rank that waits long says what it waits for,
 * on demand (DUET_HANG_SIGNAL, SIGUSR2) and by age (DUET_HANG_REPORT_S), without stopping the
 * wait.
 *
 *   test_ft_hang signal|age
 *
 * The last rank arrives 1.2 s late at a barrier (signal: after sending SIGUSR2 to rank 0 while
 * rank 0 waits; age: DUET_HANG_REPORT_S=0.3 is set before duet_init). Rank 0's stderr goes to
 * a file meanwhile; afterwards it must hold a "hang report:" line naming the barrier and the
 * late rank (rank 0's first wait is on it, in the barrier and in the ring), and the barrier
 * must have succeeded. Then an allreduce in which rank 1 is
 * late is reported the same way, naming the collective's call number, algorithm and step
 * ("duet_allreduce #5 (ring), step 2 of 8 from rank 1: waiting 0.5 s").
 */
#include "duet_test.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int me, npes;
static duet_comm_t W;

/* Runs `call` on every rank, the last one 1.2 s late (for `signal` it sends SIGUSR2 to rank 0
 * first); rank 0's stderr is captured meanwhile and returned (malloc'd). */
static char *captured(int by_signal, int pid0, duet_status_t (*call)(void))
{
    char path[] = "/tmp/duet-hang-XXXXXX";
    int fd = -1, saved = -1;
    if (me == 0) {
        fd = mkstemp(path);
        CHECK(fd >= 0, "mkstemp");
        fflush(stderr);
        saved = dup(2);
        CHECK(saved >= 0 && dup2(fd, 2) == 2, "dup2");
    }
    if (me == npes - 1) {
        usleep(500000);
        if (by_signal) CHECK(kill(pid0, SIGUSR2) == 0, "SIGUSR2 to rank 0");
        usleep(700000);
    }
    CHECK_OK(call());
    if (me != 0) return NULL;
    usleep(50000); /* the report is written by the detector's thread */
    fflush(stderr);
    CHECK(dup2(saved, 2) == 2, "dup2 back");
    close(saved);
    off_t len = lseek(fd, 0, SEEK_END);
    char *text = calloc(1, (size_t)len + 1);
    CHECK(text != NULL && pread(fd, text, (size_t)len, 0) == len, "read back");
    close(fd);
    unlink(path);
    return text;
}

static duet_status_t a_barrier(void) { return duet_barrier(W); }
/* large enough for the schedule executor (not the one-shot lane): its report names the
 * call's number, algorithm and step */
static duet_status_t an_allreduce(void)
{
    enum { COUNT = 1 << 16 };
    int64_t *v = malloc(sizeof *v * COUNT);
    CHECK(v != NULL, "malloc");
    for (int i = 0; i < COUNT; i++) v[i] = me + i;
    duet_status_t st = duet_allreduce(v, v, COUNT, DUET_INT64, DUET_SUM, W, NULL);
    for (int i = 0; st == DUET_OK && i < COUNT; i++)
        CHECK(v[i] == (int64_t)npes * (npes - 1) / 2 + (int64_t)npes * i, "allreduce element %d: %lld", i,
              (long long)v[i]);
    free(v);
    return st;
}

static void expect(const char *text, const char *what, const char *needle)
{
    if (!text) return;
    const char *line = strstr(text, "hang report:");
    CHECK(line != NULL, "%s: no hang report in rank 0's stderr: [%s]", what, text);
    CHECK(strstr(line, needle) != NULL, "%s: the report does not say \"%s\": [%s]", what, needle, line);
    char late[32];
    snprintf(late, sizeof late, "from rank %d", npes - 1);
    CHECK(strstr(line, late) != NULL, "%s: the report does not say \"%s\": [%s]", what, late, line);
    printf("test_ft_hang: %s: %.*s\n", what, (int)strcspn(line, "\n"), line);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "signal";
    int by_signal = strcmp(mode, "age") != 0;
    if (!by_signal) setenv("DUET_HANG_REPORT_S", "0.3", 1);
    setenv("DUET_ALGO", "allreduce:ring", 1); /* rank 0's first wait is then on the last rank */
    CHECK_OK(duet_init());
    W = dt_world(&me, &npes);
    CHECK(npes >= 2, "2 ranks or more");
    int *pids = duet_malloc(W, sizeof(int) * (size_t)npes), mine = (int)getpid();
    CHECK(pids != NULL, "duet_malloc");
    CHECK_OK(dt_allgather(W, pids, &mine, sizeof mine));
    int pid0 = pids[0];
    CHECK_OK(duet_barrier(W));
    char *text = captured(by_signal, pid0, a_barrier);
    expect(text, "barrier", "barrier");
    free(text);
    CHECK_OK(duet_barrier(W));
    text = captured(by_signal, pid0, an_allreduce);
    expect(text, "allreduce", "duet_allreduce #");
    if (text) CHECK(strstr(text, ", step ") != NULL, "the allreduce's report names no step");
    free(text);
    CHECK_OK(duet_free(W, pids));
    CHECK_OK(duet_finalize());
    int rc = dt_finish();
    if (rc == 0 && me == 0) printf("test_ft_hang: %s: passed\n", mode);
    return rc;
}
