/*
 * test_split_fail.c — a group whose set-up fails after its first member opened a listener
 * leaves no socket behind: run under duetrun with DUET_TEST_SPLIT_FAIL=1 (registered by
 * runtime.cmake), which makes duet_comm_split and duet_ext_group_unique_id fail on every rank
 * right after the exchange of the first members' addresses, as a rank dying there would.
 *
 * Covers: 20 splits (two groups: odd and even ranks) and 20 group ids each fail on every rank
 * with DUET_ERR_PEER_FAILED and a message, and every rank's count of open file descriptors
 * is the same afterwards as before (a first member leaked one listening socket per call
 * before the fix); the world still works (an allreduce after them).
 */
#include "duet_test.h"
#include "duet/duet_ext.h"

#include <dirent.h>
#include <string.h>

#define CALLS 20

static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d) return -1;
    int n = 0;
    while (readdir(d)) n++;
    closedir(d);
    return n;
}

int main(void)
{
    int me, np;
    CHECK_OK(duet_init());
    duet_comm_t W = dt_world(&me, &np);
    int before = open_fds();
    CHECK(before > 0, "cannot count this process's open files");

    dt_set_context("split");
    for (int i = 0; i < CALLS; i++) {
        duet_comm_t sub = NULL;
        duet_status_t st = duet_comm_split(W, me % 2, me, &sub);
        EXPECT(st == DUET_ERR_PEER_FAILED && sub == NULL && strstr(duet_last_error(), "DUET_TEST_SPLIT_FAIL"),
               "split %d: %s (%s), sub %p", i, duet_status_str(st), duet_last_error(), (void *)sub);
    }

    dt_set_context("group unique id");
    int members[64], n = 0;
    for (int r = 0; r < np && n < 64; r++)
        if (r % 2 == me % 2) members[n++] = r;
    for (int i = 0; i < CALLS; i++) {
        duet_unique_id_t id;
        duet_status_t st = duet_ext_group_unique_id(W, me % 2, members, n, &id);
        EXPECT(st == DUET_ERR_PEER_FAILED && strstr(duet_last_error(), "DUET_TEST_SPLIT_FAIL"),
               "group id %d: %s (%s)", i, duet_status_str(st), duet_last_error());
    }

    dt_set_context("after");
    int after = open_fds();
    EXPECT(after == before, "%d files open before the failed calls, %d after: a listener leaked", before, after);
    int64_t x = 1, sum = 0;
    EXPECT_OK(duet_allreduce(&x, &sum, 1, DUET_INT64, DUET_SUM, W, NULL));
    EXPECT(sum == np, "the world's allreduce gave %lld, not %d", (long long)sum, np);
    if (me == 0 && dt_failures() == 0) printf("test_split_fail: passed\n");
    CHECK_OK(duet_finalize());
    return dt_finish();
}
