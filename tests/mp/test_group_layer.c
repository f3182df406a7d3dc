/*
 * test_group_layer.c — a layer's calls in Duet's one group queue (duet_ext_group_add,
 * include/duet/duet_ext.h; its NCCL API's groups are built on it), run by every rank under
 * duetrun.
 *
 * Covers:
 *   - refused: a layer's call with no group open, a table of the wrong size, a NULL payload
 *     of some bytes (DUET_ERR_INVALID_ARG, nothing queued);
 *   - one queue: payloads queued at two nesting depths, with a host allreduce of Duet's own
 *     between them, reach the layer once, at the outermost end, in call order and unchanged
 *     (the inner end runs nothing); the allreduce, queued in the same group, is right after
 *     the end;
 *   - the layer's run may open groups of its own: inside it, a ring exchange of sends and
 *     receives larger than the channels' inboxes in a nested group (it would deadlock if its
 *     calls did not wait for that group's end) completes with the right data; the run sees no
 *     group open;
 *   - a layer's failure is the group's result, and Duet's own calls of the group still run;
 *   - duet_ext_group_drop: the layer's calls and Duet's are dropped, not run (the allreduce's
 *     output is left as it was);
 *   - duet_ext_group_suspend / _resume (a split inside an NCCL group): while the group is set
 *     aside an allreduce runs at once and a group of its own opens and ends; resumed, the
 *     group's earlier calls (the layer's and an allreduce) run at its end, as queued.
 */
#include "duet_test.h"
#include "duet/duet_ext.h"

#include <stdlib.h>
#include <string.h>

#define RING_BYTES (4u << 20) /* far more than a channel's inboxes hold */

static int me, np;
static duet_comm_t W;
static int runs, seen, order_ok, depth_in_run;
static duet_status_t fail_with;
static int exchange_ok;

typedef struct {
    int tag;
    char text[24];
} item_t;

/* A ring exchange in a group of its own: rank r sends to r+1, receives from r-1. */
static int ring_exchange(void)
{
    unsigned char *out = malloc(RING_BYTES), *in = malloc(RING_BYTES);
    if (!out || !in) return 0;
    int to = (me + 1) % np, from = (me + np - 1) % np;
    for (size_t i = 0; i < RING_BYTES; i++) out[i] = (unsigned char)(i * 7 + (size_t)me);
    memset(in, 0, RING_BYTES);
    duet_status_t st = duet_group_start();
    if (!st) st = duet_send(out, RING_BYTES, DUET_UINT8, to, W, NULL);
    if (!st) st = duet_recv(in, RING_BYTES, DUET_UINT8, from, W, NULL);
    duet_status_t end = duet_group_end();
    int ok = st == DUET_OK && end == DUET_OK;
    for (size_t i = 0; ok && i < RING_BYTES; i++) ok = in[i] == (unsigned char)(i * 7 + (size_t)from);
    free(out);
    free(in);
    return ok;
}

static duet_status_t run(void *const *payloads, int n)
{
    runs++;
    seen = n;
    order_ok = 1;
    for (int i = 0; i < n; i++) {
        const item_t *it = payloads[i];
        char want[24];
        snprintf(want, sizeof want, "item %d", i);
        order_ok &= it->tag == i && strcmp(it->text, want) == 0;
    }
    depth_in_run = duet_ext_group_depth();
    exchange_ok = np < 2 || ring_exchange();
    if (fail_with) return duet_ext_error_set(fail_with, "test layer: failing as asked");
    return DUET_OK;
}

static const duet_ext_group_layer_t layer = {sizeof layer, "test layer", run};

static void add_item(int tag)
{
    item_t it = {tag, ""};
    snprintf(it.text, sizeof it.text, "item %d", tag);
    EXPECT_OK(duet_ext_group_add(&layer, &it, sizeof it));
}

int main(void)
{
    CHECK_OK(duet_init());
    W = dt_world(&me, &np);
    item_t it = {0, "x"};

    dt_set_context("refused");
    EXPECT_INVALID(duet_ext_group_add(&layer, &it, sizeof it), "no group open");
    duet_ext_group_layer_t small = layer;
    small.size = sizeof small - 1;
    EXPECT_OK(duet_group_start());
    EXPECT_INVALID(duet_ext_group_add(&small, &it, sizeof it), "a table of the wrong size");
    EXPECT_INVALID(duet_ext_group_add(&layer, NULL, sizeof it), "a NULL payload");
    EXPECT_OK(duet_group_end());
    EXPECT(runs == 0, "a refused call reached the layer (%d runs)", runs);

    dt_set_context("one queue, nested, with Duet's own call");
    int64_t x = me + 1, sum = -1;
    EXPECT_OK(duet_group_start());
    add_item(0);
    EXPECT_OK(duet_group_start());
    add_item(1);
    EXPECT_OK(duet_allreduce(&x, &sum, 1, DUET_INT64, DUET_SUM, W, NULL));
    add_item(2);
    EXPECT_OK(duet_group_end());
    EXPECT(runs == 0 && sum == -1, "the inner end ran something (%d runs, sum %lld)", runs, (long long)sum);
    add_item(3);
    EXPECT(duet_ext_group_depth() == 1, "depth %d inside the group", duet_ext_group_depth());
    EXPECT_OK(duet_group_end());
    EXPECT(runs == 1 && seen == 4 && order_ok, "the layer ran %d times, saw %d entries (order %s)", runs, seen,
           order_ok ? "right" : "wrong");
    EXPECT(depth_in_run == 0, "the layer's run saw a group open (depth %d)", depth_in_run);
    EXPECT(exchange_ok, "the ring exchange in the layer's own group failed");
    EXPECT(sum == (int64_t)np * (np + 1) / 2, "the group's allreduce gave %lld, not %lld", (long long)sum,
           (long long)np * (np + 1) / 2);

    dt_set_context("a layer's failure");
    fail_with = DUET_ERR_INTERNAL;
    sum = -1;
    EXPECT_OK(duet_group_start());
    add_item(0);
    EXPECT_OK(duet_allreduce(&x, &sum, 1, DUET_INT64, DUET_SUM, W, NULL));
    duet_status_t st = duet_group_end();
    EXPECT(st == DUET_ERR_INTERNAL && strstr(duet_last_error(), "failing as asked"),
           "the group ended with %s (%s), not the layer's failure", duet_status_str(st), duet_last_error());
    EXPECT(runs == 2 && sum == (int64_t)np * (np + 1) / 2, "%d runs; Duet's own allreduce gave %lld", runs,
           (long long)sum);
    fail_with = DUET_OK;

    dt_set_context("drop");
    sum = -1;
    EXPECT_OK(duet_group_start());
    add_item(0);
    EXPECT_OK(duet_allreduce(&x, &sum, 1, DUET_INT64, DUET_SUM, W, NULL));
    EXPECT_OK(duet_ext_group_drop());
    EXPECT(runs == 2 && sum == -1, "a dropped group ran (%d runs, sum %lld)", runs, (long long)sum);
    EXPECT(duet_ext_group_depth() == 0, "depth %d after the drop", duet_ext_group_depth());
    EXPECT_INVALID(duet_ext_group_drop(), "drop with no group open");

    dt_set_context("suspend and resume");
    int64_t now = -1, later = -1, inner = -1;
    EXPECT_OK(duet_group_start());
    add_item(0);
    EXPECT_OK(duet_allreduce(&x, &later, 1, DUET_INT64, DUET_SUM, W, NULL));
    duet_ext_group_saved_t saved;
    duet_ext_group_suspend(&saved);
    EXPECT(duet_ext_group_depth() == 0, "depth %d while suspended", duet_ext_group_depth());
    EXPECT_OK(duet_allreduce(&x, &now, 1, DUET_INT64, DUET_SUM, W, NULL));
    EXPECT(now == (int64_t)np * (np + 1) / 2, "an allreduce while suspended gave %lld", (long long)now);
    EXPECT_OK(duet_group_start());
    EXPECT_OK(duet_allreduce(&x, &inner, 1, DUET_INT64, DUET_MAX, W, NULL));
    EXPECT_OK(duet_group_end());
    EXPECT(inner == np && runs == 2, "a group while suspended: max %lld, %d runs", (long long)inner, runs);
    duet_ext_group_resume(&saved);
    EXPECT(duet_ext_group_depth() == 1 && later == -1, "resumed: depth %d, the queued allreduce %lld",
           duet_ext_group_depth(), (long long)later);
    EXPECT_OK(duet_group_end());
    EXPECT(runs == 3 && seen == 1 && later == (int64_t)np * (np + 1) / 2,
           "after the resumed group's end: %d runs, %d entries, allreduce %lld", runs, seen, (long long)later);

    EXPECT_BARRIER_ALL("the end");
    if (me == 0 && dt_failures() == 0) printf("test_group_layer: passed\n");
    CHECK_OK(duet_finalize());
    return dt_finish();
}
