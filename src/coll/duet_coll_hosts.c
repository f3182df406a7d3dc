/*
 * The collectives' host map: which host each rank of a communicator is on, for the
 * hierarchical algorithms (duet_coll_hier.c) and the cost model's link classes
 * (duet_coll_predict.h).
 *
 * "One host" here means shm-reachable (docs/NETWORK.md 2.2: same boot id and the same
 * /dev/shm), the question the transports ask too, so a host is exactly a set of ranks whose
 * channels are shared memory (unless DUET_NET=force, which sends everything over the net on
 * one host: the map still says one host there). Learned once per communicator, on its first
 * tuned collective (every rank gets there together), by one out-of-band allgather of a hash
 * of each rank's key; hosts are numbered in the order of their first rank.
 *
 * DUET_COLL_RANKS_PER_HOST=N (tests) replaces the map by blocks of N ranks, without an
 * exchange: hierarchical schedules can then run on one machine, over shm channels or, with
 * DUET_NET=force, over the net transport.
 */
#include <stdlib.h>
#include <string.h>
#include "coll/duet_coll_tune.h"
#include "core/duet_host.h"

/* FNV-1a over the fields that decide shm reachability. */
static uint64_t key_hash(const duet_host_key_t *k)
{
    uint64_t h = 0xcbf29ce484222325ull;
    const unsigned char *p = (const unsigned char *)k->boot_id;
    for (size_t i = 0; i < sizeof k->boot_id && p[i]; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    uint64_t words[2] = {k->shm_dev, k->shm_ino};
    p = (const unsigned char *)words;
    for (size_t i = 0; i < sizeof words; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

duet_status_t duet_coll_hosts_get(duet_comm_t c, const int **host, int *nhosts)
{
    if (c->coll_nhosts > 0) {
        *host = c->coll_host;
        *nhosts = c->coll_nhosts;
        return DUET_OK;
    }
    int n = c->size;
    int *map = malloc(sizeof(int) * (size_t)n);
    uint64_t *keys = malloc(sizeof(uint64_t) * (size_t)n);
    duet_status_t st = map && keys ? DUET_OK : DUET_FAIL(DUET_ERR_NO_MEMORY, TUNE, "host map: out of host memory");
    long per = duet_cfg()->coll_ranks_per_host;
    int count = 0;
    if (st == DUET_OK && per > 0) {
        for (int r = 0; r < n; r++) map[r] = (int)(r / per);
        count = (int)((n + per - 1) / per);
    } else if (st == DUET_OK) {
        duet_host_key_t key;
        duet_host_key_get(&key);
        uint64_t mine = key_hash(&key);
        st = duet_boot_allgather(&c->boot, &mine, keys, sizeof mine);
        for (int r = 0; st == DUET_OK && r < n; r++) {
            map[r] = -1;
            for (int q = 0; q < r && map[r] < 0; q++)
                if (keys[q] == keys[r]) map[r] = map[q];
            if (map[r] < 0) map[r] = count++;
        }
    }
    free(keys);
    if (st) {
        free(map);
        return st;
    }
    c->coll_host = map;
    c->coll_nhosts = count;
    DUET_LOG(INFO, TUNE, "host map: %d rank(s) on %d host(s)%s", n, count,
             per > 0 ? " (DUET_COLL_RANKS_PER_HOST)" : "");
    *host = map;
    *nhosts = count;
    return DUET_OK;
}
