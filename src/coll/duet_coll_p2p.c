/* Point to point: a send is a run of chunk-sized messages to the peer, a receive the
 * matching run from it. Inside a group they join the group's one schedule, so pairs that
 * would deadlock one by one (everyone sends first) make progress together. */
#include "coll/duet_coll.h"

duet_status_t duet_coll_p2p(const duet_coll_args_t *a, duet_sched_t *s)
{
    DUET_SCHED_BEGIN(a, s);
    size_t bytes = a->count * a->elem, chunk = duet_coll_chunk(a);
    for (size_t off = 0; off < bytes && !s->error; off += chunk) {
        size_t len = bytes - off < chunk ? bytes - off : chunk;
        if (a->kind == DUET_COLL_SEND) duet_sched_send(s, a->root, DUET_BUF_SEND, off, len, -1);
        else duet_sched_recv(s, a->root, DUET_BUF_RECV, off, len, -1);
    }
    return s->error;
}
