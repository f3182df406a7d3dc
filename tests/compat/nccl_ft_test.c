/*
 * nccl_ft_test.c — NCCL's recovery calls on Duet: ncclCommRevoke reaching every member,
 * ncclCommGetAsyncError, and ncclCommShrink after a rank is SIGKILLed (the last rank kills
 * itself between two allreduces; the survivors' allreduce fails with ncclRemoteError within
 * Duet's detection time, they shrink with the dead rank excluded and go on), and
 * ncclCommAbort from a watchdog thread while the main thread is inside a call on the
 * communicator (PyTorch's pattern): ranks 1..n-1 block in an allreduce that rank 0 never
 * joins, their watchdogs poll ncclCommGetAsyncError meanwhile; rank 0's watchdog aborts after
 * 50 ms; the others' see ncclRemoteError and abort too, their main threads still returning
 * from the call. Every abort must return ncclSuccess, every blocked call ncclRemoteError.
 *
 * usage: nccl_ft_test NRANKS [seed=N]   (NRANKS >= 2)
 */
#include "nccl_test_util.h"
#include <pthread.h>
#include <time.h>

typedef struct {
    ncclComm_t comm;
    int me;
    ncclResult_t abort_result;
    char msg[256];
} watch_t;

/* The watchdog: rank 0 aborts after 50 ms; the others once ncclCommGetAsyncError reports the
 * communicator revoked (polled while the main thread is inside its allreduce). */
static void *watchdog(void *arg)
{
    watch_t *w = arg;
    if (w->me == 0) {
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    } else {
        for (int polls = 0; polls < 20000; polls++) { /* at most about 20 s */
            ncclResult_t async = ncclSuccess;
            if (ncclCommGetAsyncError(w->comm, &async) != ncclSuccess || async != ncclSuccess) break;
            struct timespec ts = {0, 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    w->abort_result = ncclCommAbort(w->comm);
    snprintf(w->msg, sizeof w->msg, "%s", ncclGetLastError(NULL));
    return NULL;
}

static int rank_main(int me, int n, ncclUniqueId id, void *arg)
{
    (void)arg;
    ncclComm_t comm = NULL, side = NULL;
    NCCL_OK(ncclCommInitRank(&comm, n, id, me));
    NCCL_OK(ncclCommSplit(comm, 0, me, &side, NULL));
    /* revoke: rank 0 revokes `side` while the others wait in an allreduce on it (after an
     * allreduce on comm: every rank is done making `side`) */
    nt_context = "revoke";
    int v = 1, s = 0;
    NCCL_OK(ncclAllReduce(&v, &s, 1, ncclInt32, ncclSum, comm, nt_stream));
    if (me == 0) {
        NCCL_OK(ncclCommRevoke(side, NCCL_REVOKE_DEFAULT));
    } else {
        ncclResult_t r = ncclAllReduce(&v, &s, 1, ncclInt32, ncclSum, side, nt_stream);
        EXPECT(r == ncclRemoteError, "allreduce on a communicator rank 0 revoked: %d (%s)", (int)r,
               ncclGetLastError(NULL));
    }
    ncclResult_t async = ncclInternalError;
    NCCL_OK(ncclCommGetAsyncError(side, &async));
    EXPECT(async == (me == 0 ? ncclSuccess : ncclRemoteError), "async error after the revoke: %d", (int)async);
    NCCL_OK(ncclCommDestroy(side));
    /* an abort from a watchdog thread while the main thread is inside a call */
    nt_context = "watchdog abort";
    ncclComm_t guarded = NULL;
    NCCL_OK(ncclCommSplit(comm, 0, me, &guarded, NULL));
    NCCL_OK(ncclAllReduce(&v, &s, 1, ncclInt32, ncclSum, comm, nt_stream)); /* every rank has it */
    watch_t w = {guarded, me, ncclInternalError, ""};
    pthread_t tid;
    EXPECT(pthread_create(&tid, NULL, watchdog, &w) == 0, "pthread_create");
    if (me != 0) {
        int64_t big[1024] = {0}, out[1024];
        ncclResult_t r = ncclAllReduce(big, out, 1024, ncclInt64, ncclSum, guarded, nt_stream);
        EXPECT(r == ncclRemoteError, "the allreduce the watchdog aborted returned %d (%s)", (int)r,
               ncclGetLastError(NULL));
    }
    pthread_join(tid, NULL);
    EXPECT(w.abort_result == ncclSuccess, "ncclCommAbort from the watchdog returned %d (%s)", (int)w.abort_result,
           w.msg);
    /* a kill */
    nt_context = "kill";
    NCCL_OK(ncclAllReduce(&v, &s, 1, ncclInt32, ncclSum, comm, nt_stream));
    EXPECT(s == n, "allreduce before the kill: %d", s);
    int victim = n - 1;
    if (me == victim) kill(getpid(), SIGKILL);
    ncclResult_t r = ncclAllReduce(&v, &s, 1, ncclInt32, ncclSum, comm, nt_stream);
    EXPECT(r == ncclRemoteError, "allreduce with a dead rank: %d (%s)", (int)r, ncclGetLastError(NULL));
    NCCL_OK(ncclCommGetAsyncError(comm, &async));
    EXPECT(async == ncclRemoteError, "async error with a dead rank: %d", (int)async);
    nt_context = "shrink";
    ncclComm_t small = NULL;
    int excl[1] = {victim};
    NCCL_OK(ncclCommShrink(comm, excl, 1, &small, NULL, NCCL_SHRINK_DEFAULT));
    int cnt = -1, rk = -1;
    NCCL_OK(ncclCommCount(small, &cnt));
    NCCL_OK(ncclCommUserRank(small, &rk));
    EXPECT(cnt == n - 1 && rk == me, "shrunk: count %d rank %d", cnt, rk);
    int64_t x = me + 1, sum = 0;
    NCCL_OK(ncclAllReduce(&x, &sum, 1, ncclInt64, ncclSum, small, nt_stream));
    EXPECT(sum == (int64_t)(n - 1) * n / 2, "allreduce after the shrink: %lld", (long long)sum);
    /* the parent first (Duet frees it after the shrunk one, which shares its memory) */
    NCCL_OK(ncclCommDestroy(comm));
    NCCL_OK(ncclAllReduce(&x, &sum, 1, ncclInt64, ncclMax, small, nt_stream));
    EXPECT(sum == n - 1, "allreduce after the parent's destroy: %lld", (long long)sum);
    NCCL_OK(ncclCommDestroy(small));
    return 0;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 0;
    if (n < 2) return fprintf(stderr, "usage: %s NRANKS(>=2) [seed=N]\n", argv[0]), 2;
    nt_pick_seed(argc, argv);
    return nt_run_ranks(n, 120, n - 1, rank_main, NULL);
}
