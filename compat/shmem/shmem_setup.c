/*
 * shmem_setup.c — library setup, exit and query: shmem_init / init_thread / finalize,
 * my_pe / n_pes, pe_accessible, info_get_*, global_exit, and the loud-failure path that every
 * other file uses.
 *
 * Order of shmem_init: share the executable's data segment first (shmem_static.c; no thread
 * of Duet exists yet, so nothing writes it while it moves), then duet_init() builds the world,
 * then the peers' segments are mapped, then a small internal symmetric block (the global-exit
 * word, scratch for active-set collectives) is allocated. Calls are counted: every
 * shmem_init needs a shmem_finalize, the last one tears down (teams the program left alive
 * included).
 *
 * Exit without shmem_finalize. OpenSHMEM 1.5 requires it after shmem_init, but 1.3-era
 * programs (start_pes, which had no finalize: "an implicit shmem_finalize at the end of
 * main") and careless ones simply return from main. An on_exit handler, registered by the
 * first shmem_init, finalizes what is left: on exit status 0, with the world still sound, it
 * is the collective shmem_finalize (every PE returning from main meets the others there, so
 * none leaves while a peer still reads its memory); on a non-zero status, or a world with a
 * dead PE or revoked, it does nothing collective, so a PE that exits on an error never waits
 * for peers that are not coming (duetrun / the failure detector then tell the others).
 * Nothing can leak either way: the heap's /dev/shm names are unlinked as soon as every PE has
 * mapped them (shmem_init), and static data lives in a memfd, so the kernel frees both with
 * the last process that maps them. _exit (shmem_global_exit, loud failures) skips the handler.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shmem_internal.h"

shm_state_t shm_g;
struct duet_shmem_team shm_team_world = {.predefined = 1, .config = {0}};
struct duet_shmem_team shm_team_shared = {.predefined = 1, .config = {0}};
struct duet_shmem_ctx shm_ctx_default = {.team = &shm_team_world};
shmem_team_t SHMEM_TEAM_WORLD = &shm_team_world;
shmem_team_t SHMEM_TEAM_SHARED = &shm_team_shared;
shmem_ctx_t SHMEM_CTX_DEFAULT = &shm_ctx_default;

/* A peer's shmem_global_exit left its status here: leave with it, quietly. */
void shm_exit_if_asked(void)
{
    if (!shm_g.exit_word) return;
    uint64_t w = atomic_load_explicit(shm_g.exit_word, memory_order_acquire);
    if (w) _exit((int)(w - 1));
}

void shm_die(const char *fn, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    shm_exit_if_asked();
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "duet shmem: PE %d: %s: %s\n", shm_g.initialized ? shm_g.me : -1, fn, msg);
    fflush(NULL);
    _exit(1);
}

void shm_fail(const char *fn, duet_status_t st)
{
    shm_die(fn, "%s (%s)", duet_last_error(), duet_status_str(st));
}

void shm_require_init(const char *fn)
{
    if (!shm_g.initialized) shm_die(fn, "called before shmem_init");
}

static void setup_team(struct duet_shmem_team *t, duet_comm_t comm)
{
    t->comm = comm;
    t->my_pe = duet_comm_rank(comm);
    t->n_pes = duet_comm_size(comm);
    t->world_pe = NULL;
}

static void finalize_at_exit(int status, void *arg)
{
    (void)arg;
    if (shm_g.initialized == 0) return;
    if (status != 0 || duet_comm_status(shm_g.world) != DUET_OK) return; /* no collective: just leave */
    shm_g.initialized = 1; /* every unmatched shmem_init at once */
    shmem_finalize();
}

void shmem_init(void)
{
    static int handler;
    if (shm_g.initialized++) return;
    if (!handler++) on_exit(finalize_at_exit, NULL);
    shm_static_prepare();
    shm_check(duet_init(), "shmem_init");
    shm_g.world = duet_comm_world();
    shm_g.me = duet_my_pe();
    shm_g.npes = duet_n_pes();
    if (!shm_g.thread_asked) shm_g.thread_level = SHMEM_THREAD_MULTIPLE; /* plain shmem_init: every call is safe */
    setup_team(&shm_team_world, shm_g.world);
    size_t scratch = sizeof(uint64_t) + (size_t)shm_g.npes * sizeof(long);
    char *block = duet_calloc(shm_g.world, 1, scratch);
    if (!block) shm_fail("shmem_init", duet_last_status());
    shm_static_exchange(block); /* the PEs whose heap is mapped here: whose data segment can be */
    shm_g.exit_word = (_Atomic uint64_t *)(void *)block;
    shm_g.scratch = (long *)(void *)(block + sizeof(uint64_t));
    shm_team_setup_shared(block); /* the PEs of this host (the world when all are on one) */
}

/* Every call is thread safe, so every level can be given: the one asked for, as other
 * implementations answer (a program may check provided == requested). */
int shmem_init_thread(int requested, int *provided)
{
    if (requested < SHMEM_THREAD_SINGLE || requested > SHMEM_THREAD_MULTIPLE) return 1;
    if (!shm_g.initialized) {
        shm_g.thread_level = requested;
        shm_g.thread_asked = 1;
    }
    shmem_init();
    if (provided) *provided = shm_g.thread_level;
    return 0;
}

void shmem_query_thread(int *provided)
{
    shm_require_init("shmem_query_thread");
    if (provided) *provided = shm_g.thread_level;
}

void shmem_finalize(void)
{
    if (shm_g.initialized == 0) return;
    if (--shm_g.initialized > 0) return;
    shm_check(duet_barrier_all(), "shmem_finalize");
    shm_team_destroy_all(); /* "releases all resources": the teams the program did not destroy */
    shm_team_release_shared();
    duet_free(shm_g.world, (void *)shm_g.exit_word);
    shm_g.exit_word = NULL;
    shm_g.scratch = NULL;
    shm_mem_forget_all();
    shm_static_release();
    shm_scratch_release();
    shm_team_world.comm = NULL;
    shm_check(duet_finalize(), "shmem_finalize");
}

/* Leaves the status in every PE's exit word, revokes the world (so every PE waiting in Duet
 * wakes with DUET_ERR_REVOKED, finds the word and exits with it), then exits. A PE busy
 * outside the library exits at its next call that waits or fails. */
void shmem_global_exit(int status)
{
    fflush(NULL);
    if (shm_g.initialized && shm_g.exit_word) {
        uint64_t w = (uint64_t)(unsigned)status + 1;
        for (int pe = 0; pe < shm_g.npes; pe++) {
            uint64_t *remote = duet_ptr(shm_g.world, (void *)shm_g.exit_word, pe);
            if (remote) __atomic_store_n(remote, w, __ATOMIC_RELEASE);
        }
        duet_comm_revoke(shm_g.world);
    }
    _exit(status);
}

int shmem_my_pe(void)
{
    return shm_g.initialized ? shm_g.me : -1;
}

int shmem_n_pes(void)
{
    return shm_g.initialized ? shm_g.npes : -1;
}

int shmem_pe_accessible(int pe)
{
    return shm_g.initialized && pe >= 0 && pe < shm_g.npes;
}

void shmem_info_get_version(int *major, int *minor)
{
    if (major) *major = SHMEM_MAJOR_VERSION;
    if (minor) *minor = SHMEM_MINOR_VERSION;
}

void shmem_info_get_name(char *name)
{
    if (!name) return;
    strncpy(name, SHMEM_VENDOR_STRING, SHMEM_MAX_NAME_LEN - 1);
    name[SHMEM_MAX_NAME_LEN - 1] = '\0';
}
