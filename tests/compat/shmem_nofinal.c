/*
 * shmem_nofinal.c — programs that end without shmem_finalize (run by shmem_nofinal.sh).
 * OpenSHMEM 1.5 requires shmem_finalize after shmem_init; 1.3-era programs (start_pes) never
 * call it. libduet_shmem finalizes at exit (docs/MIGRATING_OPENSHMEM.md): this must end
 * promptly with the program's status, and leave nothing in /dev/shm.
 *
 *   shmem_nofinal init       shmem_init, a team, heap and static traffic, return 0
 *   shmem_nofinal start_pes  the same, 1.3 style: start_pes(0) twice, no finalize ever
 *   shmem_nofinal error      as init, but the last PE exits with status 3 (the others 0)
 * Each PE checks, before it returns, that /dev/shm holds no name of this job
 * (duet-$DUET_JOB_SECRET...): the library unlinks its segments once every PE mapped them.
 */
#include <dirent.h>

#include "shmem_test.h"

static long s_data[8];

/* Names in /dev/shm of this job: they begin like the names of the segments this PE maps
 * ("duet-<job part>-", a keyed hash of the job secret; none when no peer had to open one). */
static int leftovers(void)
{
    char line[1024], prefix[64] = "";
    FILE *m = fopen("/proc/self/maps", "r");
    while (m && !prefix[0] && fgets(line, sizeof line, m)) {
        char *p = strstr(line, " /dev/shm/duet-"), *dash;
        if (p && (dash = strchr(p + 15, '-')) && dash - (p + 10) < (long)sizeof prefix)
            snprintf(prefix, sizeof prefix, "%.*s", (int)(dash + 1 - (p + 10)), p + 10);
    }
    if (m) fclose(m);
    if (!prefix[0]) return 0;
    DIR *d = opendir("/dev/shm");
    if (!d) return 0;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) {
            fprintf(stderr, "shmem_nofinal: PE %d: /dev/shm/%s is left\n", shmem_my_pe(), e->d_name);
            n++;
        }
    closedir(d);
    return n;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "init";
    if (strcmp(mode, "start_pes") == 0) {
        start_pes(0);
        start_pes(0); /* 1.3: later calls are ignored */
    } else {
        shmem_init();
    }
    int me = shmem_my_pe(), npes = shmem_n_pes();
    shmem_team_t half;
    shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (npes + 1) / 2, NULL, 0, &half); /* never destroyed */
    long *h = shmem_malloc(64 * sizeof(long));                                         /* never freed */
    for (int i = 0; i < 8; i++) h[i] = me;
    shmem_barrier_all();
    shmem_long_put(s_data, h, 8, (me + 1) % npes);
    shmem_long_get(h + 8, h, 8, (me + 1) % npes);
    shmem_barrier_all();
    int bad = leftovers();
    for (int i = 0; i < 8; i++)
        if (s_data[i] != (me + npes - 1) % npes || h[8 + i] != (me + 1) % npes) bad++;
    if (bad) {
        fprintf(stderr, "shmem_nofinal: PE %d: %d failures\n", me, bad);
        return 1;
    }
    if (me == 0) printf("shmem_nofinal: %s: %d PEs leave without shmem_finalize\n", mode, npes);
    if (strcmp(mode, "error") == 0 && me == npes - 1) return 3;
    return 0;
}
