/*
 * test_proxy_inbox.c — the GPU proxy's message boxes (src/proxy/duet_proxy_inbox.[ch]) on the
 * CPU: every rank sends NMSG messages to every other rank, through the heap's endpoints (shm;
 * net.force.test_proxy_inbox: the net transport), while serving its own inbox in the same
 * loop, as the proxy thread does. Checked:
 *   - a creation where no rank wants an inbox gives NULL on every rank; one where only rank 0
 *     wants it gives one on every rank;
 *   - every message arrives once, in order (its number, kind, operands), payload lengths 0 ..
 *     chunk (odd chunk, 3 slots, so slots wrap many times and flow control blocks); the target
 *     looks at every arrived message through peek_at before answering them in order (the
 *     proxy's batches), and peek_at beyond the slots gives nothing;
 *   - every payload byte (a stream keyed by origin, target, message number and the seed);
 *   - every reply: status, result (the payload's byte sum), its payload (the first half of the
 *     message's, each byte xor 0x5a), read after the ack;
 *   - acked counts end at NMSG to every peer.
 * Usage: test_proxy_inbox [seed]
 */
#include "duet_test.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "core/duet_comm.h"
#include "proxy/duet_proxy_inbox.h"
#include "tport/duet_tport_net.h"

#define NMSG  200
#define CHUNK 1001
#define SLOTS 3

static uint64_t seed;

static size_t msg_len(int from, int to, uint64_t m)
{
    uint64_t z = key3(seed ^ (uint64_t)from, (uint64_t)to, m);
    switch (m % 5) {
    case 0: return 0;
    case 1: return CHUNK;
    default: return (size_t)(mix(z) % (CHUNK + 1));
    }
}

static uint64_t msg_key(int from, int to, uint64_t m) { return key3(seed + 7, (uint64_t)(from * 4096 + to), m); }

/* Message m from `from`, as it lies in my inbox: its header and payload as sent. */
static void check_msg(const duet_proxy_msg_t *msg, int from, int me, uint64_t m)
{
    size_t len = msg_len(from, me, m);
    EXPECT(msg->kind == (uint32_t)(m % 3 + 1) && msg->arg == (uint32_t)from && msg->off == m * 3 && msg->len == len &&
               msg->value == (m ^ 0xabc) && msg->cond == ~m && msg->aux == (uint64_t)me,
           "message %llu from %d: header differs (kind %u arg %u off %llu len %llu, expected len %zu)",
           (unsigned long long)m, from, msg->kind, msg->arg, (unsigned long long)msg->off,
           (unsigned long long)msg->len, len);
    const unsigned char *pl = (const unsigned char *)msg + DUET_PROXY_HDR;
    size_t n = msg->len <= CHUNK ? msg->len : 0;
    EXPECT(stream_diff(pl, n, msg_key(from, me, m)) == (size_t)-1 || n == 0, "message %llu from %d: payload differs",
           (unsigned long long)m, from);
}

int main(int argc, char **argv)
{
    int me, npes;
    CHECK_OK(duet_init());
    duet_comm_t W = dt_world(&me, &npes);
    seed = dt_pick_seed(dt_seed_text(argc, argv), (uint64_t)time(NULL));
    uint64_t *seed_word = duet_malloc(W, sizeof(uint64_t));
    CHECK(seed_word, "duet_malloc");
    CHECK_OK(dt_share_seed(W, seed_word, &seed));

    dt_set_context("nobody wants one");
    duet_proxy_inbox_t *ib = (duet_proxy_inbox_t *)1;
    CHECK_OK(duet_proxy_inbox_create(W->heap, &W->boot, 0, CHUNK, SLOTS, &ib));
    CHECK(ib == NULL, "an inbox was made though no rank asked for one");

    dt_set_context("create");
    CHECK_OK(duet_proxy_inbox_create(W->heap, &W->boot, me == 0, CHUNK, SLOTS, &ib));
    CHECK(ib != NULL, "rank 0 asked for an inbox, rank %d has none", me);

    dt_set_context("traffic");
    unsigned char *frame = malloc(DUET_PROXY_HDR + CHUNK), *rframe = malloc(DUET_PROXY_HDR + CHUNK);
    uint64_t *checked = calloc((size_t)npes, sizeof *checked); /* replies checked, per target */
    CHECK(frame && rframe && checked, "malloc");
    int todo = 3 * (npes - 1); /* per peer: all sent, all received, all replies checked */
    int *done = calloc((size_t)npes * 3, sizeof *done);
    CHECK(done, "malloc");
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (todo > 0) {
        int moved = 0;
        for (int p = 0; p < npes; p++) {
            if (p == me) continue;
            /* replies first: the one for m must be read before m + SLOTS is sent */
            uint64_t acked = duet_proxy_inbox_acked(ib, p);
            CHECK(acked <= ib->sent[p], "rank %d acked %llu of the %llu messages sent to it", p,
                  (unsigned long long)acked, (unsigned long long)ib->sent[p]);
            while (checked[p] < acked) {
                uint64_t m = ++checked[p];
                const duet_proxy_reply_t *r = duet_proxy_inbox_reply(ib, p, m);
                size_t len = msg_len(me, p, m), half = len / 2;
                uint64_t K = msg_key(me, p, m), sum = 0;
                for (size_t j = 0; j < len; j++) sum += stream_byte(K, j);
                EXPECT(r->status == (int32_t)(m % 7 == 0 ? DUET_ERR_INVALID_ARG : DUET_OK),
                       "reply %llu from %d: status %d", (unsigned long long)m, p, r->status);
                EXPECT(r->result == sum, "reply %llu from %d: result %llu, expected %llu", (unsigned long long)m, p,
                       (unsigned long long)r->result, (unsigned long long)sum);
                EXPECT(r->len == half, "reply %llu from %d: %llu payload bytes, expected %zu",
                       (unsigned long long)m, p, (unsigned long long)r->len, half);
                const unsigned char *pl = (const unsigned char *)r + DUET_PROXY_HDR;
                size_t bad = 0;
                for (size_t j = 0; j < half && j < r->len; j++) bad += pl[j] != (stream_byte(K, j) ^ 0x5a);
                EXPECT(bad == 0, "reply %llu from %d: %zu of %zu payload bytes wrong", (unsigned long long)m, p, bad,
                       half);
                moved = 1;
            }
            if (checked[p] == NMSG && !done[p * 3 + 2]) done[p * 3 + 2] = 1, todo--;
            /* send while there is room */
            while (ib->sent[p] < NMSG && duet_proxy_inbox_room(ib, p, acked)) {
                uint64_t m = ib->sent[p] + 1;
                size_t len = msg_len(me, p, m);
                stream_fill(frame + DUET_PROXY_HDR, len, msg_key(me, p, m));
                duet_proxy_msg_t msg = {.kind = (uint32_t)(m % 3 + 1), .arg = (uint32_t)me, .off = m * 3,
                                        .len = len, .value = m ^ 0xabc, .cond = ~m, .aux = (uint64_t)p};
                uint64_t got;
                CHECK_OK(duet_proxy_inbox_send(ib, p, &msg, frame, &got));
                CHECK(got == m, "send said message %llu, expected %llu", (unsigned long long)got,
                      (unsigned long long)m);
                moved = 1;
            }
            if (ib->sent[p] == NMSG && !done[p * 3]) done[p * 3] = 1, todo--;
            /* serve what p sent me, in batches as the proxy does: every arrived message is
             * checked through peek_at first, then all are answered in order */
            int n = 0;
            while (n < SLOTS && duet_proxy_inbox_peek_at(ib, p, n) != NULL) {
                check_msg(duet_proxy_inbox_peek_at(ib, p, n), p, me, ib->recvd[p] + 1 + (uint64_t)n);
                n++;
            }
            EXPECT(duet_proxy_inbox_peek_at(ib, p, SLOTS) == NULL && duet_proxy_inbox_peek_at(ib, p, -1) == NULL,
                   "peek_at beyond the slots gave a message");
            EXPECT(n == 0 || duet_proxy_inbox_peek(ib, p) == duet_proxy_inbox_peek_at(ib, p, 0),
                   "peek and peek_at(0) differ");
            for (int k = 0; k < n; k++) {
                const duet_proxy_msg_t *msg = duet_proxy_inbox_peek(ib, p);
                uint64_t m = ib->recvd[p] + 1;
                CHECK(msg, "message %llu from %d, seen by peek_at, is gone before its answer", (unsigned long long)m, p);
                const unsigned char *pl = (const unsigned char *)msg + DUET_PROXY_HDR;
                size_t len = msg->len <= CHUNK ? msg->len : 0;
                uint64_t sum = 0;
                for (size_t j = 0; j < len; j++) sum += pl[j];
                for (size_t j = 0; j < len / 2; j++) rframe[DUET_PROXY_HDR + j] = pl[j] ^ 0x5a;
                CHECK_OK(duet_proxy_inbox_answer(ib, p, m % 7 == 0 ? DUET_ERR_INVALID_ARG : DUET_OK, sum,
                                                 len / 2 ? rframe : NULL, len / 2));
                moved = 1;
            }
            if (ib->recvd[p] == NMSG && !done[p * 3 + 1]) done[p * 3 + 1] = 1, todo--;
        }
        if (!moved) {
            duet_tport_net_progress(W->heap->net); /* net peers' puts land as this rank serves them */
            sched_yield();
            struct timespec t;
            clock_gettime(CLOCK_MONOTONIC, &t);
            CHECK(t.tv_sec - t0.tv_sec < 60, "no progress in 60 s: %d parts of the exchange unfinished", todo);
        }
    }
    for (int p = 0; p < npes; p++)
        if (p != me)
            EXPECT(duet_proxy_inbox_acked(ib, p) == NMSG, "rank %d acked %llu messages, expected %d", p,
                   (unsigned long long)duet_proxy_inbox_acked(ib, p), NMSG);
    dt_set_context("teardown");
    EXPECT_BARRIER_ALL("after the traffic");
    duet_proxy_inbox_destroy(ib);
    free(frame);
    free(rframe);
    free(checked);
    free(done);
    EXPECT_OK(duet_free(W, seed_word));
    EXPECT_OK(duet_finalize());
    if (dt_finish()) return 1;
    if (me == 0) printf("test_proxy_inbox: %d messages each way between %d ranks\n", NMSG, npes);
    return 0;
}
