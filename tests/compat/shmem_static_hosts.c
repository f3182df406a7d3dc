/*
 * shmem_static_hosts.c — static data (globals as symmetric objects) between PEs that do not
 * share a host. Under DUET_NET=force every other PE is reached over the network, as if on
 * another host (net.force.shmem_static_hosts.2): a put to a heap object still arrives;
 * shmem_ptr of a global is NULL and shmem_addr_accessible 0 for the other PE (and not for
 * myself); then shmem_long_p on a global aimed at the other PE must end the program with a
 * message saying why (tests/compat/shmem_static_hosts.sh checks the message and the status),
 * never write into whatever the other PE's pid names on this host. On one host
 * (compat.shmem_static_hosts.2) the same global put arrives and the program passes.
 */
#include "shmem_test.h"

static long global_word;

int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes(), other = (me + 1) % n;
    long *heap = shmem_malloc(sizeof(long));
    ST_CHECK(heap != NULL, "shmem_malloc");
    *heap = -1;
    shmem_barrier_all();
    shmem_long_p(heap, 100 + me, other);
    shmem_barrier_all();
    ST_EXPECT(*heap == 100 + (me + n - 1) % n, "heap put: %ld", *heap);
    int local = shmem_ptr(heap, other) != NULL;
    ST_EXPECT(shmem_ptr(&global_word, me) == &global_word, "shmem_ptr of a global on myself");
    ST_EXPECT((shmem_ptr(&global_word, other) != NULL) == local, "shmem_ptr of a global on PE %d: %s", other,
              local ? "NULL on this host" : "not NULL across hosts");
    ST_EXPECT(shmem_addr_accessible(&global_word, other) == local, "shmem_addr_accessible of a global on PE %d",
              other);
    shmem_barrier_all();
    if (me == 0) {
        printf("shmem_static_hosts: the other PE is %s\n", local ? "on this host" : "not on this host");
        fflush(stdout);
    }
    shmem_barrier_all();
    shmem_long_p(&global_word, 7, other); /* across hosts: ends the program with a message */
    shmem_barrier_all();
    ST_EXPECT(global_word == 7, "global put on this host: %ld", global_word);
    shmem_free(heap);
    int rc = st_finish();
    shmem_finalize();
    return rc;
}
