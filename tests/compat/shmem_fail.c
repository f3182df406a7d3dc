/*
 * shmem_fail.c — calls that cannot be honoured fail loudly: one line naming the call and the
 * reason, and a non-zero exit (duetrun then ends the job). argv[1] picks the mistake.
 */
#include "shmem_test.h"

int main(int argc, char **argv)
{
    shmem_init();
    const char *mode = argc > 1 ? argv[1] : "stack";
    long local = 1, *heap = shmem_malloc(sizeof(long));
    if (strcmp(mode, "stack") == 0) shmem_long_put(&local, &local, 1, 0);       /* not symmetric */
    if (strcmp(mode, "pe") == 0) shmem_long_p(heap, 1, shmem_n_pes());           /* PE out of range */
    if (strcmp(mode, "exit") == 0 && shmem_my_pe() == 0) shmem_global_exit(3);   /* others wait */
    shmem_barrier_all();
    shmem_finalize();
    return 0;
}
