/* duet_ext.h's waiter: the one wait loop (util's duet_waiter_t) on a communicator's wait
 * context, for waits a layer above makes on memory of its own. */
#include <stdio.h>
#include "core/duet_comm.h"
#include "duet/duet_ext.h"

typedef struct {
    duet_waiter_t w;
    void (*describe)(void *arg, char *buf, size_t len);
    void *arg;
    char label[200];
} ext_waiter_t;

_Static_assert(sizeof(ext_waiter_t) <= sizeof(duet_ext_waiter_t), "duet_ext_waiter_t holds the waiter");
_Static_assert(_Alignof(ext_waiter_t) <= _Alignof(duet_ext_waiter_t), "duet_ext_waiter_t aligns the waiter");

static void write_label(void *arg)
{
    ext_waiter_t *x = arg;
    x->label[0] = '\0';
    if (x->describe) x->describe(x->arg, x->label, sizeof x->label);
    if (!x->label[0]) snprintf(x->label, sizeof x->label, "a condition");
}

void duet_ext_waiter_init(duet_ext_waiter_t *w, duet_comm_t comm, void (*describe)(void *arg, char *buf, size_t len),
                          void *arg)
{
    ext_waiter_t *x = (ext_waiter_t *)(void *)w;
    x->describe = describe;
    x->arg = arg;
    x->label[0] = '\0';
    /* not a live communicator: a wait with no abort word, doorbell or bound */
    const duet_wait_ctx_t *ctx = duet_comm_is_live(comm) && comm->magic == DUET_COMM_MAGIC ? &comm->wait_ctx : NULL;
    duet_waiter_init(&x->w, ctx, "%s", x->label, 0, 0, -1);
    duet_waiter_label_later(&x->w, write_label, x);
}

duet_status_t duet_ext_waiter_turn(duet_ext_waiter_t *w) { return duet_waiter_turn(&((ext_waiter_t *)(void *)w)->w); }
