/* ft_survive.c — a computation that survives the death of a rank.
 *
 *   duetrun -n 4 --ft ft_survive [KILL_RANK KILL_STEP]      (default: rank 2 dies at step 50)
 *
 * Each step allreduces every rank's contribution (world rank + 1, times the step) and keeps
 * the result in a symmetric array. KILL_RANK kills itself (SIGKILL) at the start of KILL_STEP.
 * The survivors see DUET_ERR_PEER_FAILED from the allreduce that waits for it, agree on who
 * failed, shrink the communicator, and redo the step on the new one: the symmetric array with
 * every earlier result is still there, nothing is re-allocated. At the end each survivor
 * checks the total against what the deaths imply. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <duet/duet.h>

#define STEPS 100

int main(int argc, char **argv)
{
    int kill_rank = argc > 2 ? atoi(argv[1]) : 2, kill_step = argc > 2 ? atoi(argv[2]) : 50;
    if (duet_init() != DUET_OK) { fprintf(stderr, "%s\n", duet_last_error()); return 1; }
    duet_comm_t comm = duet_comm_world();
    int world_rank = duet_my_pe(), n = duet_n_pes();
    long *history = duet_calloc(comm, STEPS, sizeof(long)); /* symmetric: survives the shrink */
    if (!history) { fprintf(stderr, "%s\n", duet_last_error()); return 1; }

    for (int step = 0; step < STEPS;) {
        if (world_rank == kill_rank && step == kill_step) kill(getpid(), SIGKILL);
        long x = (long)(world_rank + 1) * step;
        duet_status_t st = duet_allreduce(&x, &history[step], 1, DUET_INT64, DUET_SUM, comm, NULL);
        if (st == DUET_OK) { step++; continue; }
        if (st != DUET_ERR_PEER_FAILED && st != DUET_ERR_REVOKED) {
            fprintf(stderr, "rank %d: %s\n", world_rank, duet_last_error());
            return 1;
        }
        /* recovery: make sure every survivor stops using comm, agree on who failed, shrink */
        printf("rank %d: step %d: %s\n", world_rank, step, duet_last_error());
        duet_comm_revoke(comm);
        int flag = 1, failed[16], nfailed = 0;
        if (duet_comm_agree(comm, &flag) != DUET_OK ||
            duet_comm_get_failed(comm, failed, 16, &nfailed) != DUET_OK) {
            fprintf(stderr, "rank %d: %s\n", world_rank, duet_last_error());
            return 1;
        }
        duet_comm_t smaller;
        if (duet_comm_shrink(comm, &smaller) != DUET_OK) {
            fprintf(stderr, "rank %d: %s\n", world_rank, duet_last_error());
            return 1;
        }
        printf("rank %d: %d rank(s) failed (the first: %d); now rank %d of %d\n", world_rank, nfailed,
               nfailed ? failed[0] : -1, duet_comm_rank(smaller), duet_comm_size(smaller));
        if (comm != duet_comm_world()) duet_comm_destroy(comm);
        comm = smaller; /* and redo this step on it */
    }

    /* every step's sum: all ranks before the death, the survivors from it on */
    long total = 0, want = 0, all = (long)n * (n + 1) / 2;
    int died = kill_rank >= 0 && kill_rank < n && kill_step < STEPS;
    for (int s = 0; s < STEPS; s++) {
        total += history[s];
        want += (long)s * (died && s >= kill_step ? all - (kill_rank + 1) : all);
    }
    printf("rank %d: total %ld, expected %ld: %s\n", world_rank, total, want, total == want ? "ok" : "WRONG");
    if (comm != duet_comm_world()) duet_comm_destroy(comm);
    duet_finalize(); /* the world lost a rank: its last barrier cannot complete everywhere */
    return total == want ? 0 : 1;
}
