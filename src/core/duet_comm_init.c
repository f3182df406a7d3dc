/*
 * Creating and destroying communicators: duet_init / duet_finalize (the world), and the
 * NCCL-style duet_get_unique_id + duet_comm_init_rank.
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/duet_comm.h"
#include "core/duet_cpus.h"
#include "core/duet_ft.h"
#include "core/duet_host.h"
#include "tport/duet_tport_net.h"
#include "core/duet_comm_mod.h"
#include "heap/duet_heap_dev.h"

static pthread_mutex_t world_lock = PTHREAD_MUTEX_INITIALIZER;
/* The tree of communicators and the teams split from them: children counts, zombies. */
static pthread_mutex_t family_lock = PTHREAD_MUTEX_INITIALIZER;
static duet_comm_t world;
static int world_refs;

/* Every rank's view of the job, compared at creation so mistakes fail early. */
typedef struct {
    duet_host_key_t key; /* which peers share my memory, pids, sockets (duet_host.h) */
    uint64_t heap_size;
    int32_t pid;
    int32_t net_mode;    /* DUET_NET, parsed: must match */
    cpu_set_t cpus;      /* where this rank may run */
} rank_info_t;

/* More ranks on this machine than CPUs they can run on: waiting ranks must yield at once,
 * since spinning only delays the peer that would end the wait. The machine, not the shm
 * domain: containers with their own /dev/shm still share the CPUs. */
static int host_oversubscribed(const rank_info_t *all, int n, const duet_host_key_t *me, cpu_set_t *spare)
{
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    int local = 0;
    for (int r = 0; r < n; r++) {
        if (!(duet_host_reach(me, &all[r].key) & DUET_HOST_MACHINE)) continue;
        local++;
        CPU_OR(&cpus, &cpus, &all[r].cpus);
    }
    duet_cpus_spare(&cpus, (int)sysconf(_SC_NPROCESSORS_CONF), spare); /* for helper threads */
    return local > CPU_COUNT(&cpus);
}

/* Ranks whose /dev/shm is not mine need the net transport (docs/NETWORK.md, issue 8): in a
 * build without UCX, or with DUET_NET=off, they are refused, naming up to four of them, with
 * their host names and why. */
static duet_status_t refuse_remote(const rank_info_t *all, int n, int me, duet_net_mode_t mode)
{
    char list[768] = "", why[200];
    int used = 0, count = 0;
    for (int r = 0; r < n; r++) {
        if (duet_host_reach(&all[me].key, &all[r].key) & DUET_HOST_SHM) continue;
        if (count++ >= 4 || used >= (int)sizeof list) continue;
        duet_host_why_apart(&all[me].key, &all[r].key, why, sizeof why);
        used += snprintf(list + used, sizeof list - (size_t)used, "%srank %d (host %.64s: %s)",
                         count > 1 ? "; " : "", r, all[r].key.host, why);
    }
    if (!count) return DUET_OK;
    return DUET_FAIL(DUET_ERR_UNSUPPORTED, INIT,
                     "rank %d (host %.64s) cannot share memory with %d rank(s): %s%s. Ranks on several "
                     "hosts need the net transport of issue 8 (docs/NETWORK.md), which %s", me, all[me].key.host,
                     count, list, count > 4 ? "; ..." : "",
                     !duet_tport_net_built() ? (mode == DUET_NET_OFF ? "this build does not have (built without "
                                                "UCX; and DUET_NET=off refuses them)"
                                                                      : "this build does not have (built without UCX)")
                                             : "DUET_NET=off refuses (unset it to use the net transport)");
}

/* Compares every rank's view of the job (one allgather); *pids gets each rank's process id
 * for the failure detector (duet_ft.c; the caller frees it), *shm 1 for each rank whose
 * segment I map (the others go over the net transport; the caller frees it too), *spare the
 * CPUs of this host no rank is bound to (duet_cpus.h). */
static duet_status_t check_peers(duet_boot_t *b, size_t heap_size, int *oversubscribed, cpu_set_t *spare,
                                 int32_t **pids, unsigned char **shm, int **host_of)
{
    duet_net_mode_t mode = duet_host_net_mode();
    rank_info_t mine = {.heap_size = heap_size, .pid = (int32_t)getpid(), .net_mode = (int32_t)mode};
    duet_host_key_get(&mine.key);
    if (sched_getaffinity(0, sizeof mine.cpus, &mine.cpus) != 0) CPU_ZERO(&mine.cpus);
    int n = b->nranks, me = b->rank;
    rank_info_t *all = malloc(sizeof *all * (size_t)n);
    if (!all) return DUET_FAIL(DUET_ERR_NO_MEMORY, INIT, "out of host memory");
    duet_status_t st = duet_boot_allgather(b, &mine, all, sizeof mine);
    for (int r = 0; st == DUET_OK && r < n; r++) {
        if (all[r].heap_size != heap_size)
            st = DUET_FAIL(DUET_ERR_INVALID_ARG, INIT,
                           "rank %d asks for a %llu-byte symmetric heap, rank %d for %zu "
                           "(DUET_SYMMETRIC_SIZE must match on every rank)",
                           r, (unsigned long long)all[r].heap_size, me, heap_size);
        else if (all[r].net_mode != (int32_t)mode)
            st = DUET_FAIL(DUET_ERR_INVALID_ARG, INIT, "rank %d runs with DUET_NET=%s, rank %d with %s "
                           "(DUET_NET must match on every rank)", r,
                           duet_host_net_name((duet_net_mode_t)all[r].net_mode), me, duet_host_net_name(mode));
    }
    /* every rank decides from the same table, so all of them refuse together (no one waits) */
    if (st == DUET_OK && mode == DUET_NET_FORCE && !duet_tport_net_built())
        st = DUET_FAIL(DUET_ERR_UNSUPPORTED, INIT,
                       "DUET_NET=force (for tests: treat local peers as remote) needs the net transport "
                       "of issue 8 (docs/NETWORK.md), which this build does not have (built without UCX); "
                       "unset DUET_NET or set it to auto");
    /* with the net transport, peers that cannot share memory are reached through it (unless
     * DUET_NET=off, the guarantee of one host) */
    if (st == DUET_OK && (!duet_tport_net_built() || mode == DUET_NET_OFF)) st = refuse_remote(all, n, me, mode);
    if (st == DUET_OK && !(*shm = malloc((size_t)n)))
        st = DUET_FAIL(DUET_ERR_NO_MEMORY, INIT, "out of host memory");
    for (int r = 0; st == DUET_OK && r < n; r++)
        (*shm)[r] = r == me || (mode != DUET_NET_FORCE && (duet_host_reach(&mine.key, &all[r].key) & DUET_HOST_SHM));
    if (st == DUET_OK) *oversubscribed = host_oversubscribed(all, n, &mine.key, spare);
    /* each rank's host for the collectives (duet_coll_hosts.c): the sets of shm-reachable
     * ranks, numbered by their first rank, whatever DUET_NET says */
    if (st == DUET_OK && !(*host_of = malloc(sizeof **host_of * (size_t)n)))
        st = DUET_FAIL(DUET_ERR_NO_MEMORY, INIT, "out of host memory");
    for (int r = 0, hosts = 0; st == DUET_OK && r < n; r++) {
        (*host_of)[r] = -1;
        for (int q = 0; q < r && (*host_of)[r] < 0; q++)
            if (duet_host_reach(&all[q].key, &all[r].key) & DUET_HOST_SHM) (*host_of)[r] = (*host_of)[q];
        if ((*host_of)[r] < 0) (*host_of)[r] = hosts++;
    }
    if (st == DUET_OK && !(*pids = malloc(sizeof **pids * (size_t)n)))
        st = DUET_FAIL(DUET_ERR_NO_MEMORY, INIT, "out of host memory");
    for (int r = 0; st == DUET_OK && r < n; r++) {
        (*pids)[r] = all[r].pid;
        /* a pid from another pid namespace names some other process here (or none: a
         * "death" at once): such a peer is watched as myself, i.e. not by pid, until the
         * detector learns other ways (docs/NETWORK.md 2.10) */
        if (!(duet_host_reach(&mine.key, &all[r].key) & DUET_HOST_PID)) {
            (*pids)[r] = mine.pid;
            DUET_LOG(INFO, INIT, "rank %d (host %.64s) is in another pid namespace: its death is "
                     "seen through the net transport (an endpoint error, or its heartbeat's silence)", r,
                     all[r].key.host);
        }
    }
    free(all);
    return st;
}

/* The bootstrap's question (duet_boot_t.gone): is rank r of the communicator dead? */
static int boot_rank_gone(void *arg, int r) { return duet_ft_is_dead((duet_comm_t)arg, r); }

duet_status_t duet_comm_build_(duet_comm_t *out, duet_boot_t *boot, duet_comm_t parent, int *heap_pe,
                               int slot, size_t heap_size, const char *tag, int device)
{
    duet_comm_t c = calloc(1, sizeof *c);
    duet_status_t st = c ? duet_comm_live_add(c) /* its magic says when it is usable */
                         : DUET_FAIL(DUET_ERR_NO_MEMORY, INIT, "out of host memory");
    if (st) {
        free(c);
        duet_boot_close(boot);
        free(heap_pe);
        return st;
    }
    c->boot = *boot;
    c->rank = boot->rank;
    c->size = boot->nranks;
    c->parent = parent;
    c->slot = slot;
    snprintf(c->tag, sizeof c->tag, "%s", tag);
    int oversubscribed = 0;
    if (parent) {
        oversubscribed = parent->wait_ctx.spin_us == 0;
        c->heap = parent->heap;
        c->heap->refcount++;
        c->heap_pe = heap_pe;
        pthread_mutex_lock(&family_lock);
        parent->children++;
        pthread_mutex_unlock(&family_lock);
    } else {
        c->heap_pe = malloc(sizeof(int) * (size_t)c->size);
        if (!c->heap_pe) st = DUET_FAIL(DUET_ERR_NO_MEMORY, INIT, "out of host memory");
        for (int r = 0; st == DUET_OK && r < c->size; r++) c->heap_pe[r] = r;
        unsigned char *shm = NULL;
        if (st == DUET_OK) st = check_peers(&c->boot, heap_size, &oversubscribed, &c->helper_cpus, &c->pids, &shm,
                                               &c->host_of);
        if (st == DUET_OK) st = duet_heap_create(&c->heap, &c->boot, heap_size, tag, shm);
        free(shm);
        if (st == DUET_OK) st = duet_heap_dev_create(c->heap, &c->boot, tag, device);
    }
    if (st == DUET_OK) st = duet_comm_mods_open(c);
    if (st != DUET_OK && c->heap) {
        if (parent) {
            pthread_mutex_lock(&family_lock);
            parent->children--; /* a live parent (it is splitting): no zombie to free */
            pthread_mutex_unlock(&family_lock);
        } else {
            duet_heap_dev_destroy(c->heap);
        }
        duet_heap_release(c->heap);
    }
    if (st != DUET_OK) {
        duet_boot_close(&c->boot);
        free(c->heap_pe);
        free(c->pids);
        free(c->host_of);
        duet_comm_live_remove(c);
        free(c);
        return st;
    }
    c->wait_ctx.doorbell = &duet_heap_ctrl(c->heap->local_base)->doorbell;
    c->wait_ctx.abort_flag = (const _Atomic int *)&duet_comm_ft(c)->abort;
    c->boot.abort = c->wait_ctx.abort_flag; /* a revoke or a death also ends its out-of-band waits */
    c->boot.gone = boot_rank_gone; /* ... and its closing barrier does not wait for the dead */
    c->boot.gone_arg = c;
    c->wait_ctx.revoked_by = (const _Atomic int *)&duet_comm_ft(c)->revoked_by;
    c->wait_ctx.abort_why = c->abort_why; /* "" until the detector writes a reason */
    c->wait_ctx.abort_status = DUET_ERR_REVOKED;
    c->wait_ctx.timeout_s = duet_cfg()->wait_timeout;
    c->check_bounds = duet_cfg()->check_bounds != 0;
    c->wait_ctx.spin_us = duet_cfg()->wait_spin_us;
    if (oversubscribed && !duet_cfg_is_set("DUET_WAIT_SPIN_US")) {
        c->wait_ctx.spin_us = 0;
        DUET_LOG(INFO, INIT, "more ranks than CPUs on this host: waits yield without spinning");
    }
    for (int r = 0; r < c->size; r++) c->net_peers += c->heap->peer_base[c->heap_pe[r]] == NULL;
    if (c->heap->net) { /* waits on my memory serve the net peers' emulated RMA (NETWORK.md 2.6) */
        c->wait_ctx.progress = duet_tport_net_progress;
        c->wait_ctx.progress_arg = c->heap->net;
        if (!parent) duet_tport_net_set_wait(c->heap->net, &c->wait_ctx);
    }
    c->magic = DUET_COMM_MAGIC;
    if (duet_ft_watch(c) != DUET_OK) /* a communicator without its detector still works */
        DUET_LOG(WARN, INIT, "this communicator's failures will only be seen as timeouts");
    duet_comm_mods_started(c); /* after the detector: a backend's proxy asks it who is dead */
    *out = c;
    return DUET_OK;
}

/* The tag of every name this communicator puts where others can list them (its /dev/shm
 * segments, the GPU heap's abstract sockets): "<job part>-<communicator part>", each a keyed
 * hash (duet_name_job_part / duet_name_comm_part), so the names reveal no secret. The job
 * part is keyed by the launcher's job secret when there is one (duetrun, which knows it,
 * then finds every name of its job by prefix), else by the communicator's own secret. */
static void make_tag(char *tag, size_t len, const duet_unique_id_t *uid)
{
    const duet_boot_id_t *id = (const duet_boot_id_t *)uid;
    uint8_t job[DUET_SECRET_BYTES];
    const char *job_hex = duet_cfg()->job_secret;
    int have_job = job_hex[0] && duet_hex_decode(job_hex, job, sizeof job) == 0;
    char job_part[DUET_NAME_JOB_HEX + 1], own_part[DUET_NAME_COMM_HEX + 1];
    duet_name_job_part(have_job ? job : id->secret, DUET_SECRET_BYTES, job_part);
    duet_name_comm_part(id->secret, DUET_SECRET_BYTES, own_part);
    memset(job, 0, sizeof job);
    snprintf(tag, len, "%s-%s", job_part, own_part);
}

static duet_status_t init_rank(duet_comm_t *comm, int nranks, const duet_unique_id_t *id, int rank,
                               const duet_config_t *config)
{
    const duet_cfg_t *cfg = duet_cfg();
    size_t heap_size = cfg->symmetric_size;
    double timeout = cfg->bootstrap_timeout;
    int device = -1;
    if (config) {
        if (config->struct_size < sizeof(size_t) || config->struct_size > sizeof *config)
            return DUET_FAIL(DUET_ERR_INVALID_ARG, INIT, "duet_config_t: struct_size %zu is not valid "
                             "(start from DUET_CONFIG_INIT)", config->struct_size);
        if (config->symmetric_size) heap_size = config->symmetric_size;
        if (config->bootstrap_timeout_s > 0) timeout = config->bootstrap_timeout_s;
        if (config->struct_size >= offsetof(duet_config_t, cuda_device_current) + sizeof(int) &&
            config->cuda_device_current)
            device = DUET_HEAP_DEV_CURRENT;
    }
    duet_boot_t boot;
    duet_status_t st = duet_boot_join(&boot, id, rank, nranks, timeout);
    if (st) return st;
    duet_log_set_rank(rank);
    char tag[80];
    make_tag(tag, sizeof tag, id);
    return duet_comm_build_(comm, &boot, NULL, NULL, 0, heap_size, tag, device);
}

duet_status_t duet_get_unique_id(duet_unique_id_t *id) { return duet_boot_id_create(id); }

duet_status_t duet_comm_init_rank(duet_comm_t *comm, int nranks, duet_unique_id_t id, int rank,
                                  const duet_config_t *config)
{
    if (!comm) return DUET_FAIL(DUET_ERR_INVALID_ARG, INIT, "duet_comm_init_rank: comm is NULL");
    *comm = NULL;
    duet_status_t st = init_rank(comm, nranks, &id, rank, config);
    return st ? duet_error_wrap(st, "duet_comm_init_rank") : duet_error_ok(DUET_OK);
}

duet_status_t duet_init(void)
{
    pthread_mutex_lock(&world_lock);
    duet_status_t st = DUET_OK;
    if (world_refs == 0) {
        duet_boot_env_t env;
        st = duet_boot_env_detect(&env);
        if (st == DUET_OK) {
            st = init_rank(&world, env.nranks, &env.id, env.rank, NULL);
            duet_boot_env_cleanup(&env);
        }
        if (st == DUET_OK)
            DUET_LOG(INFO, INIT, "duet %s: rank %d of %d (launcher %s)", duet_version_string(),
                     world->rank, world->size, env.launcher);
    }
    if (st == DUET_OK) world_refs++;
    pthread_mutex_unlock(&world_lock);
    return st ? duet_error_wrap(st, "duet_init") : duet_error_ok(DUET_OK);
}

int duet_comm_closing_(duet_comm_t c, const char *fn)
{
    if (pthread_equal(c->closer, pthread_self())) return 1; /* the closer's own calls on c */
    duet_inflight_leave();
    return duet_error_set(DUET_ERR_REVOKED, "%s: the communicator is being destroyed (by another thread)", fn);
}

/* Until no other thread is inside a call on c (duet_comm_enter), at most the wait bound. */
static duet_status_t drain_calls(duet_comm_t c, const char *fn)
{
    int left = 0;
    double bound = duet_cfg()->wait_timeout > 0 ? duet_cfg()->wait_timeout : 300;
    if (duet_inflight_drain(c, bound, &left) == DUET_OK) return DUET_OK;
    return DUET_FAIL(DUET_ERR_TIMEOUT, INIT, "%s: %d call(s) on the communicator from other threads are still "
                     "running after %.0f s; it is not freed (revoke it first: duet_comm_revoke ends them)", fn,
                     left, bound);
}

static int family_children(duet_comm_t c)
{
    pthread_mutex_lock(&family_lock);
    int n = c->children;
    pthread_mutex_unlock(&family_lock);
    return n;
}

/* A child of p is gone (family_lock held): p, a zombie whose last child that was, is freed,
 * and so on up the chain. */
static void leave_parent(duet_comm_t p)
{
    while (p) {
        p->children--;
        if (!p->zombie || p->children > 0) return;
        duet_comm_t up = p->parent;
        if (!p->lingering) free(p);
        p = up;
    }
}

static duet_status_t comm_free(duet_comm_t c, const char *fn)
{
    /* calls on c from other threads: new ones fail at entry, running ones return first */
    c->closer = pthread_self();
    atomic_store(&c->closing, 1);
    duet_status_t busy = drain_calls(c, fn);
    if (!busy && !c->parent && family_children(c)) /* a split by another thread ended meanwhile */
        busy = DUET_FAIL(DUET_ERR_INVALID_ARG, INIT, "%s: a team was split from this communicator while it was "
                         "being destroyed; it owns that team's heap: destroy the team first", fn);
    if (busy) {
        atomic_store(&c->closing, 0); /* still theirs: nothing is lost, the caller may try again */
        return busy;
    }
    /* no more watching: past the barrier below peers leave, and their exits are no deaths */
    duet_ft_unwatch(c);
    /* everyone stops touching everyone's memory before any segment is unmapped; on a
     * communicator that lost a member (or was revoked) the barrier cannot complete: its
     * failure is expected then, and the rest is freed all the same */
    c->boot.abort = NULL; /* a revoked communicator's live members still meet here */
    duet_status_t st = duet_boot_barrier(&c->boot);
    int revoked = atomic_load_explicit(&duet_comm_ft(c)->abort, memory_order_acquire) != 0;
    if (st == DUET_ERR_PEER_FAILED && revoked) {
        DUET_LOG(INFO, INIT, "destroying a communicator that lost a member: no barrier with the survivors");
        st = DUET_OK;
    } else if (st && revoked) {
        /* a revoke that interrupted a bootstrap exchange (the tuner's first exchange, say) on
         * some ranks and not on others leaves their message numbers apart: their barrier
         * then fails at once; the calls on c have all ended (revoked), so the rest is freed */
        DUET_LOG(INFO, INIT, "destroying a revoked communicator: its closing barrier failed (%s); freed all the "
                 "same", duet_status_str(st));
        st = DUET_OK;
    }
    duet_comm_mods_stopping(c); /* a backend's proxy asks the detector about the dead */
    duet_ft_release(c); /* the barrier asked it who is dead (c->boot.gone) */
    if (c->parent) c->heap->slots_used &= ~(1ull << c->slot);
    duet_comm_mods_close(c);
    if (!c->parent) duet_heap_dev_destroy(c->heap); /* the root goes last: no team shares it any more */
    duet_heap_release(c->heap);
    duet_boot_close(&c->boot);
    duet_comm_live_remove(c);
    /* a call that entered before the removal may still be reading c's closing word: then c
     * itself is left allocated (a few KiB) rather than freed under a reader */
    int reading = drain_calls(c, fn) != DUET_OK;
    c->magic = 0;
    if (!reading) {
        free(c->heap_pe);
        free(c->pids);
        free(c->agreed_failed);
        free(c->coll_host);
        free(c->host_of);
        c->heap_pe = c->host_of = c->coll_host = NULL;
        c->pids = NULL;
        c->agreed_failed = NULL;
    }
    /* teams split from c that are still alive name it as their parent (the way to their root):
     * the struct stays, a zombie, until the last of them is freed */
    pthread_mutex_lock(&family_lock);
    c->lingering = (uint8_t)reading;
    if (c->children > 0) {
        c->zombie = 1;
    } else {
        duet_comm_t parent = c->parent;
        if (!reading) free(c);
        leave_parent(parent);
    }
    pthread_mutex_unlock(&family_lock);
    return st;
}

duet_status_t duet_comm_destroy(duet_comm_t c)
{
    duet_status_t st = duet_comm_check(c, "duet_comm_destroy");
    if (st) return st;
    if (c == world)
        return DUET_FAIL(DUET_ERR_INVALID_ARG, INIT,
                         "duet_comm_destroy: the world communicator is destroyed by duet_finalize()");
    int children = family_children(c);
    if (children && !c->parent) /* it owns the heap, its device part and the watch on its ranks */
        return DUET_FAIL(DUET_ERR_INVALID_ARG, INIT,
                         "duet_comm_destroy: %d team(s) split from this communicator are still alive (it owns "
                         "their symmetric heap: destroy them first)", children);
    return comm_free(c, "duet_comm_destroy");
}

duet_status_t duet_finalize(void)
{
    pthread_mutex_lock(&world_lock);
    duet_status_t st = DUET_OK;
    int kids;
    if (world_refs == 0) {
        st = DUET_FAIL(DUET_ERR_INVALID_ARG, INIT, "duet_finalize: duet_init() was not called");
    } else if (world_refs == 1 && (kids = family_children(world)) > 0) {
        st = DUET_FAIL(DUET_ERR_INVALID_ARG, INIT, "duet_finalize: %d team(s) split from the world are still alive",
                       kids);
    } else if (world_refs > 1) {
        world_refs--;
    } else {
        st = comm_free(world, "duet_finalize");
        if (!duet_comm_is_live(world)) { /* freed (busy with other threads' calls: still there) */
            world_refs = 0;
            world = NULL;
            duet_log_set_rank(-1);
        }
    }
    pthread_mutex_unlock(&world_lock);
    return duet_error_ok(st);
}

duet_comm_t duet_comm_world(void) { return world; }
int duet_my_pe(void) { return world ? world->rank : -1; }
int duet_n_pes(void) { return world ? world->size : 0; }

int duet_comm_rank(duet_comm_t c) { return duet_comm_check(c, "duet_comm_rank") ? -1 : c->rank; }
int duet_comm_size(duet_comm_t c) { return duet_comm_check(c, "duet_comm_size") ? -1 : c->size; }
