/* The collectives' part of a communicator's life (core/duet_comm_mod.h): its channels (one set
 * for the collectives, one for send / recv), and at the end the tuner's decisions and the
 * executor's bookkeeping. */
#include <stdlib.h>
#include "coll/duet_coll.h"
#include "coll/duet_coll_tune.h"
#include "core/duet_comm_mod.h"

static duet_status_t coll_open(duet_comm_t c)
{
    duet_status_t st = duet_coll_chan_create(c, &c->chan);
    if (st) return st;
    if ((st = duet_coll_chan_create(c, &c->p2p))) {
        duet_coll_chan_destroy(c, c->chan);
        c->chan = NULL;
        return st;
    }
    c->chan->byref = duet_cfg()->coll_byref != 0; /* by reference for collectives only: a send would wait for its receiver */
    return DUET_OK;
}

static void coll_close(duet_comm_t c)
{
    duet_coll_chan_destroy(c, c->chan);
    duet_coll_chan_destroy(c, c->p2p);
    c->chan = c->p2p = NULL;
    duet_coll_tune_free(c);
    free(c->exec_mem);
    c->exec_mem = NULL;
}

const duet_comm_mod_t duet_coll_comm_mod = {
    .size = sizeof(duet_comm_mod_t), .name = "coll", .open = coll_open, .started = duet_comm_mod_nothing,
    .stopping = duet_comm_mod_nothing, .close = coll_close, .abort = duet_comm_mod_no_abort,
    .quiet = duet_comm_mod_no_quiet};
