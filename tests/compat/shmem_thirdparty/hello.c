/* hello.c — the classic first OpenSHMEM program (1.3 API): start_pes, _my_pe, _num_pes, a
 * put into a global array of PE 0, a barrier. Prints one line per PE; PE 0 checks. */
#include <stdio.h>
#include <shmem.h>

int pe_seen[64];

int main(void)
{
    int me, npes, i, errors = 0;
    start_pes(0);
    me = _my_pe();
    npes = _num_pes();
    printf("Hello from PE %d of %d\n", me, npes);
    shmem_int_p(&pe_seen[me], me + 1, 0);
    shmem_barrier_all();
    if (me == 0) {
        for (i = 0; i < npes; i++)
            if (pe_seen[i] != i + 1) errors++;
        printf("hello: %s\n", errors ? "FAILED" : "all PEs said hello");
    }
    shmem_barrier_all();
    return errors ? 1 : 0;
}
