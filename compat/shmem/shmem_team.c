/*
 * shmem_team.c — teams and contexts.
 *
 * A team is a Duet communicator: SHMEM_TEAM_WORLD is the world, SHMEM_TEAM_SHARED the PEs
 * whose memory this PE maps (shmem_ptr reaches them: its host's; the world when every PE is
 * on one host, a split of it else), splits are duet_comm_split_strided /
 * duet_comm_split, which share the world's symmetric heap, so a symmetric address is the same
 * in every team. A team remembers its PEs' world numbers, for static-data accesses. A context
 * is a handle on a team: Duet's one-sided calls are thread safe and complete at quiet, so a
 * context needs no resources of its own; its quiet / fence act on its team's communicator.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "shmem_internal.h"

/* The teams made here and not yet destroyed, newest first (a split's parent is older). */
static pthread_mutex_t teams_lock_ = PTHREAD_MUTEX_INITIALIZER;
static struct duet_shmem_team *teams_;

static void link_team(struct duet_shmem_team *t)
{
    pthread_mutex_lock(&teams_lock_);
    t->next = teams_;
    teams_ = t;
    pthread_mutex_unlock(&teams_lock_);
}

static void unlink_team(struct duet_shmem_team *t)
{
    pthread_mutex_lock(&teams_lock_);
    for (struct duet_shmem_team **at = &teams_; *at; at = &(*at)->next)
        if (*at == t) {
            *at = t->next;
            break;
        }
    pthread_mutex_unlock(&teams_lock_);
}

void shm_team_destroy_all(void)
{
    while (teams_) shmem_team_destroy(teams_);
}

int shm_team_valid(shmem_team_t team)
{
    return team != SHMEM_TEAM_INVALID && team->comm != NULL;
}

int shmem_team_my_pe(shmem_team_t team)
{
    return shm_team_valid(team) ? team->my_pe : -1;
}

int shmem_team_n_pes(shmem_team_t team)
{
    return shm_team_valid(team) ? team->n_pes : -1;
}

int shmem_team_get_config(shmem_team_t team, long config_mask, shmem_team_config_t *config)
{
    if (!shm_team_valid(team) || !config) return 1;
    if (config_mask & SHMEM_TEAM_NUM_CONTEXTS) config->num_contexts = team->config.num_contexts;
    return 0;
}

int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team)
{
    if (!shm_team_valid(src_team) || !shm_team_valid(dest_team)) return -1;
    if (src_pe < 0 || src_pe >= src_team->n_pes) return -1;
    return duet_comm_translate_rank(src_team->comm, src_pe, dest_team->comm);
}

/* Wraps a new communicator (NULL: this PE is not a member) into a team. */
static int make_team(duet_comm_t comm, const shmem_team_config_t *config, long mask, shmem_team_t *out)
{
    *out = SHMEM_TEAM_INVALID;
    if (!comm) return 0;
    struct duet_shmem_team *t = calloc(1, sizeof *t);
    if (!t) return 1;
    t->comm = comm;
    t->my_pe = duet_comm_rank(comm);
    t->n_pes = duet_comm_size(comm);
    t->world_pe = malloc((size_t)t->n_pes * sizeof(int));
    if (!t->world_pe) {
        free(t);
        return 1;
    }
    for (int pe = 0; pe < t->n_pes; pe++) t->world_pe[pe] = duet_comm_translate_rank(comm, pe, shm_g.world);
    if (config && (mask & SHMEM_TEAM_NUM_CONTEXTS)) t->config.num_contexts = config->num_contexts;
    t->config_mask = mask;
    link_team(t);
    *out = t;
    return 0;
}

/* The parent PE at position i of the triplet (start, stride, size), or -1 past it. */
static int triplet_pe(const int32_t *t, int i) { return i < t[2] ? t[0] + t[1] * i : -1; }

/* 1 if the triplet names `size` distinct PEs of a parent of n, without wrapping (the rule of
 * 1.5; stride 0 only with size 1). */
static int triplet_valid(const int32_t *t, int n)
{
    long last = (long)t[0] + (long)t[1] * (long)(t[2] - 1);
    return t[2] >= 1 && t[0] >= 0 && t[0] < n && last >= 0 && last < n && (t[1] != 0 || t[2] == 1);
}

/* 1.5 asks every parent PE for the same triplet. Programs written for SOS (its own
 * self_collectives test, one single-PE team per PE) pass each PE its own: the triplets are
 * allgathered first, and when they differ, the PEs that passed one same triplet form its team
 * (color: the lowest parent PE that passed it) if every PE it names passed it too; otherwise
 * they get SHMEM_TEAM_INVALID and a non-zero return. Duet's strided split alone would have
 * put every named PE in one team, whatever triplet it passed. */
int shmem_team_split_strided(shmem_team_t parent, int start, int stride, int size,
                             const shmem_team_config_t *config, long config_mask, shmem_team_t *new_team)
{
    const char *fn = "shmem_team_split_strided";
    shm_require_init(fn);
    if (!new_team) return 1;
    *new_team = SHMEM_TEAM_INVALID;
    if (!shm_team_valid(parent)) return 1;
    int n = parent->n_pes, me = parent->my_pe, same = 1;
    int32_t mine[3] = {start, stride, size}, *all = malloc(sizeof(int32_t) * 3 * (size_t)n);
    if (!all) shm_die(fn, "out of host memory");
    shm_check(duet_allgather(mine, all, 3, DUET_INT32, parent->comm, NULL), fn);
    for (int pe = 0; pe < n && same; pe++) same = memcmp(&all[3 * pe], mine, sizeof mine) == 0;
    duet_comm_t comm = NULL;
    int rc = 0;
    if (same) {
        free(all);
        if (duet_comm_split_strided(parent->comm, start, stride, size, &comm) != DUET_OK) return 1;
        return make_team(comm, config, config_mask, new_team);
    }
    int color = DUET_COLOR_UNDEFINED, key = 0;
    if (triplet_valid(mine, n)) {
        int agree = 1, first = -1;
        for (int i = 0, pe; (pe = triplet_pe(mine, i)) >= 0; i++) {
            agree &= memcmp(&all[3 * pe], mine, sizeof mine) == 0;
            if (pe == me) key = i;
        }
        for (int pe = 0; pe < n && first < 0; pe++)
            if (memcmp(&all[3 * pe], mine, sizeof mine) == 0) first = pe;
        int member = 0;
        for (int i = 0, pe; (pe = triplet_pe(mine, i)) >= 0; i++) member |= pe == me;
        if (agree && member) color = first;
        rc = !agree;
    } else {
        rc = 1;
    }
    free(all);
    if (duet_comm_split(parent->comm, color, key, &comm) != DUET_OK) return 1;
    if (make_team(comm, config, config_mask, new_team)) return 1;
    return rc;
}

/* Parent PE i sits at x = i % xrange, y = i / xrange; the x-axis team is my row (same y,
 * ordered by x), the y-axis team my column (same x, ordered by y). */
int shmem_team_split_2d(shmem_team_t parent, int xrange, const shmem_team_config_t *xaxis_config,
                        long xaxis_mask, shmem_team_t *xaxis_team, const shmem_team_config_t *yaxis_config,
                        long yaxis_mask, shmem_team_t *yaxis_team)
{
    shm_require_init("shmem_team_split_2d");
    if (!xaxis_team || !yaxis_team) return 1;
    *xaxis_team = *yaxis_team = SHMEM_TEAM_INVALID;
    if (!shm_team_valid(parent) || xrange <= 0) return 1;
    if (xrange > parent->n_pes) xrange = parent->n_pes;
    int me = parent->my_pe, x = me % xrange, y = me / xrange;
    duet_comm_t row = NULL, col = NULL;
    if (duet_comm_split(parent->comm, y, x, &row) != DUET_OK) return 1;
    if (duet_comm_split(parent->comm, x, y, &col) != DUET_OK) return 1;
    if (make_team(row, xaxis_config, xaxis_mask, xaxis_team)) return 1;
    return make_team(col, yaxis_config, yaxis_mask, yaxis_team);
}

void shm_team_setup_shared(const void *probe)
{
    struct duet_shmem_team *t = &shm_team_shared;
    int32_t mine = 1, every = 0, color = -1;
    for (int pe = 0; pe < shm_g.npes; pe++) {
        int mapped = pe == shm_g.me || duet_ptr(shm_g.world, probe, pe) != NULL;
        if (mapped && color < 0) color = pe; /* the lowest PE this one maps names the group */
        if (!mapped) mine = 0;
    }
    shm_check(duet_allreduce(&mine, &every, 1, DUET_INT32, DUET_MIN, shm_g.world, NULL), "shmem_init");
    t->comm = shm_g.world;
    t->world_pe = NULL;
    if (!every) { /* some PE does not map every other: each host its own team */
        duet_comm_t comm = NULL;
        shm_check(duet_comm_split(shm_g.world, color, shm_g.me, &comm), "shmem_init");
        t->comm = comm;
        t->world_pe = malloc((size_t)duet_comm_size(comm) * sizeof(int));
        if (!t->world_pe) shm_die("shmem_init", "out of host memory");
        for (int pe = 0; pe < duet_comm_size(comm); pe++)
            t->world_pe[pe] = duet_comm_translate_rank(comm, pe, shm_g.world);
    }
    t->my_pe = duet_comm_rank(t->comm);
    t->n_pes = duet_comm_size(t->comm);
}

void shm_team_release_shared(void)
{
    struct duet_shmem_team *t = &shm_team_shared;
    if (t->comm && t->comm != shm_g.world) shm_check(duet_comm_destroy(t->comm), "shmem_finalize");
    free(t->world_pe);
    t->world_pe = NULL;
    t->comm = NULL;
}

void shmem_team_destroy(shmem_team_t team)
{
    if (team == SHMEM_TEAM_INVALID) return;
    if (team->predefined) shm_die("shmem_team_destroy", "SHMEM_TEAM_WORLD and SHMEM_TEAM_SHARED cannot be destroyed");
    shm_check(duet_comm_destroy(team->comm), "shmem_team_destroy");
    unlink_team(team);
    free(team->world_pe);
    free(team);
}

int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t *ctx)
{
    if (!ctx) return 1;
    *ctx = SHMEM_CTX_INVALID;
    if (!shm_team_valid(team)) return 1;
    struct duet_shmem_ctx *c = calloc(1, sizeof *c);
    if (!c) return 1;
    c->team = team;
    c->options = options;
    *ctx = c;
    return 0;
}

int shmem_ctx_create(long options, shmem_ctx_t *ctx)
{
    shm_require_init("shmem_ctx_create");
    return shmem_team_create_ctx(SHMEM_TEAM_WORLD, options, ctx);
}

void shmem_ctx_destroy(shmem_ctx_t ctx)
{
    if (ctx == SHMEM_CTX_INVALID) return;
    if (ctx == SHMEM_CTX_DEFAULT) shm_die("shmem_ctx_destroy", "SHMEM_CTX_DEFAULT cannot be destroyed");
    shmem_ctx_quiet(ctx); /* destroying a context completes its operations */
    free(ctx);
}

int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t *team)
{
    if (!team) return 1;
    if (ctx == SHMEM_CTX_INVALID) {
        *team = SHMEM_TEAM_INVALID;
        return 1;
    }
    *team = ctx->team;
    return 0;
}
