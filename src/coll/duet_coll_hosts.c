/*
 * The collectives' host map: which host each rank of a communicator is on, for the
 * hierarchical algorithms (duet_coll_hier.c) and the cost model's link classes
 * (duet_coll_predict.h).
 *
 * "One host" here means shm-reachable (docs/NETWORK.md 2.2: same boot id and the same
 * /dev/shm), the question the transports ask too, so a host is exactly a set of ranks whose
 * channels are shared memory (unless DUET_NET=force, which sends everything over the net on
 * one host: the map still says one host there). The root communicator learns it at creation
 * from the host keys it exchanges anyway (check_peers: duet_comm.h's host_of, by heap pe); a
 * team takes its members' entries. No exchange happens here: a collective must not wait
 * out of band for its peers (a dead or hung peer is then reported by the collective's own
 * wait, naming it). Hosts are renumbered in the order of their first rank.
 *
 * DUET_COLL_RANKS_PER_HOST=N (tests) replaces the map by blocks of N ranks of the
 * communicator: hierarchical schedules can then run on one machine, over shm channels or,
 * with DUET_NET=force, over the net transport.
 */
#include <stdlib.h>
#include <string.h>
#include "coll/duet_coll_tune.h"

duet_status_t duet_coll_hosts_get(duet_comm_t c, const int **host, int *nhosts)
{
    if (c->coll_nhosts > 0) {
        *host = c->coll_host;
        *nhosts = c->coll_nhosts;
        return DUET_OK;
    }
    duet_comm_t root = c; /* its ranks are the heap pes */
    while (root->parent) root = root->parent;
    int n = c->size, ids = root->size > n ? root->size : n; /* host ids here are below this */
    int *map = malloc(sizeof(int) * (size_t)n), *first = malloc(sizeof(int) * (size_t)ids);
    if (!map || !first) {
        free(map);
        free(first);
        return DUET_FAIL(DUET_ERR_NO_MEMORY, TUNE, "host map: out of host memory");
    }
    long per = duet_cfg()->coll_ranks_per_host;
    int count = 0;
    for (int i = 0; i < ids; i++) first[i] = -1;
    for (int r = 0; r < n; r++) {
        int id = per > 0 ? (int)(r / per) : root->host_of ? root->host_of[c->heap_pe[r]] : 0;
        if (first[id] < 0) first[id] = count++; /* renumbered in the order of their first rank */
        map[r] = first[id];
    }
    free(first);
    c->coll_host = map;
    c->coll_nhosts = count;
    DUET_LOG(INFO, TUNE, "host map: %d rank(s) on %d host(s)%s", n, count,
             per > 0 ? " (DUET_COLL_RANKS_PER_HOST)" : "");
    *host = map;
    *nhosts = count;
    return DUET_OK;
}
