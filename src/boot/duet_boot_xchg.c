/*
 * The out-of-band collectives over the bootstrap star (see duet_boot.h): the root gathers
 * from and answers each rank in turn; every wait is bounded by DUET_WAIT_TIMEOUT and watches
 * the communicator's abort word and the deaths its detector sees.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "boot/duet_boot.h"
#include "boot/duet_boot_tcp.h"

/* ---- out-of-band collectives */

static uint64_t op_deadline(void) { return duet_deadline_after(duet_cfg()->wait_timeout); }

static const char *rank_name(int r, char *buf, size_t len)
{
    snprintf(buf, len, "rank %d", r);
    return buf;
}

/* Waits of the exchanges below watch rank r's death (b->gone). */
static void watch(duet_boot_t *b, int r) { duet_tcp_watch_peer(b->gone, b->gone_arg, r); }

static duet_status_t allgather(duet_boot_t *b, const void *mine, void *all, size_t bytes)
{
    uint32_t seq = ++b->seq;
    uint64_t deadline = op_deadline();
    duet_status_t st = DUET_OK;
    char who[32];
    if (b->rank != 0) {
        watch(b, 0);
        if ((st = duet_msg_send(b->root_fd, DUET_MSG_GATHER, seq, mine, bytes, deadline, "rank 0 (the root)")))
            return st;
        return duet_msg_recv(b->root_fd, DUET_MSG_GATHERED, seq, all, bytes * (size_t)b->nranks,
                             deadline, "rank 0 (the root)");
    }
    if (bytes) memcpy(all, mine, bytes);
    /* a rank that died is passed over (its part zeroed) so the live ones still get an answer;
     * the call then fails with the first such death */
    duet_status_t dead = DUET_OK;
    for (int r = 1; r < b->nranks && st == DUET_OK; r++) {
        watch(b, r);
        st = duet_msg_recv(b->rank_fds[r], DUET_MSG_GATHER, seq, (char *)all + bytes * (size_t)r,
                           bytes, deadline, rank_name(r, who, sizeof who));
        if (st == DUET_ERR_PEER_FAILED && b->gone && b->gone(b->gone_arg, r)) {
            memset((char *)all + bytes * (size_t)r, 0, bytes);
            if (!dead) dead = st;
            st = DUET_OK;
        }
    }
    for (int r = 1; r < b->nranks && st == DUET_OK; r++) {
        if (b->gone && b->gone(b->gone_arg, r)) continue;
        watch(b, r);
        st = duet_msg_send(b->rank_fds[r], DUET_MSG_GATHERED, seq, all, bytes * (size_t)b->nranks,
                           deadline, rank_name(r, who, sizeof who));
    }
    return st ? st : dead ? DUET_FAIL(dead, BOOT, "bootstrap: a rank died during an exchange") : DUET_OK;
}

static duet_status_t bcast(duet_boot_t *b, void *buf, size_t bytes)
{
    uint32_t seq = ++b->seq;
    uint64_t deadline = op_deadline();
    char who[32];
    if (b->rank != 0) {
        watch(b, 0);
        return duet_msg_recv(b->root_fd, DUET_MSG_BCAST, seq, buf, bytes, deadline, "rank 0 (the root)");
    }
    duet_status_t st = DUET_OK;
    for (int r = 1; r < b->nranks && st == DUET_OK; r++) {
        if (b->gone && b->gone(b->gone_arg, r)) continue;
        watch(b, r);
        st = duet_msg_send(b->rank_fds[r], DUET_MSG_BCAST, seq, buf, bytes, deadline,
                           rank_name(r, who, sizeof who));
    }
    return st;
}

/* The exchanges watch b->abort (duet_tcp_watch) while they wait. */
duet_status_t duet_boot_allgather(duet_boot_t *b, const void *mine, void *all, size_t bytes)
{
    const _Atomic int *old = duet_tcp_watch(b->abort);
    duet_status_t st = allgather(b, mine, all, bytes);
    duet_tcp_watch(old);
    duet_tcp_watch_peer(NULL, NULL, -1);
    return st;
}

duet_status_t duet_boot_bcast(duet_boot_t *b, void *buf, size_t bytes)
{
    const _Atomic int *old = duet_tcp_watch(b->abort);
    duet_status_t st = bcast(b, buf, bytes);
    duet_tcp_watch(old);
    duet_tcp_watch_peer(NULL, NULL, -1);
    return st;
}

duet_status_t duet_boot_barrier(duet_boot_t *b)
{
    char one = 1, *all = malloc((size_t)b->nranks);
    if (!all) return DUET_FAIL(DUET_ERR_NO_MEMORY, BOOT, "bootstrap: out of memory");
    duet_status_t st = duet_boot_allgather(b, &one, all, 1);
    free(all);
    return st;
}

void duet_boot_close(duet_boot_t *b)
{
    if (b->root_fd >= 0) close(b->root_fd);
    b->root_fd = -1;
    if (b->rank_fds) {
        for (int r = 1; r < b->nranks; r++)
            if (b->rank_fds[r] >= 0) close(b->rank_fds[r]);
        free(b->rank_fds);
        b->rank_fds = NULL;
    }
}
