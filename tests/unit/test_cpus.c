/*
 * test_cpus.c — where helper threads run (src/core/duet_cpus.c).
 *
 * Covers: the spare CPUs are those below ncpus in no rank's mask (some bound, all bound, none
 * bound, ncpus past CPU_SETSIZE); placing a thread: no spare CPU leaves it where it was (0),
 * a spare set it may use moves it there exactly (1), a set of CPUs that do not exist leaves it
 * where it was (0), never a failure; and a one-rank duet_init() in a child bound to one CPU
 * offers the helpers every other CPU it may use, and not its own (skipped with a note where
 * this process may use a single CPU).
 */
#include "duet_test.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/wait.h>
#include "core/duet_comm.h"
#include "core/duet_cpus.h"

static cpu_set_t allowed; /* this process's CPUs at the start */

static void test_spare(void)
{
    dt_set_context("spare");
    cpu_set_t bound, spare;
    CPU_ZERO(&bound);
    CPU_SET(0, &bound);
    CPU_SET(2, &bound);
    duet_cpus_spare(&bound, 4, &spare);
    EXPECT(CPU_COUNT(&spare) == 2 && CPU_ISSET(1, &spare) && CPU_ISSET(3, &spare), "bound {0,2} of 4: %d spare",
           CPU_COUNT(&spare));
    for (int c = 0; c < 4; c++) CPU_SET(c, &bound);
    duet_cpus_spare(&bound, 4, &spare);
    EXPECT(CPU_COUNT(&spare) == 0, "every CPU bound, yet %d spare", CPU_COUNT(&spare));
    CPU_ZERO(&bound);
    duet_cpus_spare(&bound, 6, &spare);
    EXPECT(CPU_COUNT(&spare) == 6, "nothing bound of 6: %d spare", CPU_COUNT(&spare));
    CPU_SET(5, &bound);
    duet_cpus_spare(&bound, CPU_SETSIZE + 100, &spare);
    EXPECT(CPU_COUNT(&spare) == CPU_SETSIZE - 1, "CPU 5 bound of more than CPU_SETSIZE: %d spare",
           CPU_COUNT(&spare));
    dt_set_context(NULL);
}

typedef struct {
    cpu_set_t spare, after;
    int moved;
} place_t;

static void *place_thread(void *arg)
{
    place_t *p = arg;
    p->moved = duet_cpus_place_helper(&p->spare, 0, "the test's helper");
    CPU_ZERO(&p->after);
    pthread_getaffinity_np(pthread_self(), sizeof p->after, &p->after);
    return NULL;
}

static place_t place(const cpu_set_t *spare)
{
    place_t p = {.spare = *spare};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, place_thread, &p) == 0, "pthread_create");
    pthread_join(t, NULL);
    return p;
}

static int last_allowed(void)
{
    for (int c = CPU_SETSIZE - 1; c >= 0; c--)
        if (CPU_ISSET(c, &allowed)) return c;
    return -1;
}

static void test_place(void)
{
    dt_set_context("place");
    cpu_set_t s;
    CPU_ZERO(&s);
    place_t p = place(&s);
    EXPECT(p.moved == 0 && CPU_EQUAL(&p.after, &allowed), "no spare CPU: moved %d, now on %d CPUs", p.moved,
           CPU_COUNT(&p.after));
    CPU_SET(last_allowed(), &s);
    p = place(&s);
    EXPECT(p.moved == 1 && CPU_EQUAL(&p.after, &s), "spare {%d}: moved %d, now on %d CPUs", last_allowed(), p.moved,
           CPU_COUNT(&p.after));
    CPU_ZERO(&s);
    CPU_SET(CPU_SETSIZE - 1, &s); /* no machine here has it */
    if (!CPU_ISSET(CPU_SETSIZE - 1, &allowed)) {
        p = place(&s);
        EXPECT(p.moved == 0 && CPU_EQUAL(&p.after, &allowed), "a CPU that does not exist: moved %d, now on %d CPUs",
               p.moved, CPU_COUNT(&p.after));
    }
    dt_set_context(NULL);
}

/* In a child bound to the first CPU it may use: a one-rank world's helper CPUs. */
static int init_bound_child(void)
{
    int first = -1;
    for (int c = 0; c < CPU_SETSIZE && first < 0; c++)
        if (CPU_ISSET(c, &allowed)) first = c;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0) return 10;
    setenv("DUET_DEBUG", "NONE", 1);
    if (duet_init() != DUET_OK) return 11;
    duet_comm_t w = duet_comm_world();
    int bad = CPU_ISSET(first, &w->helper_cpus) ? 12 : 0;
    for (int c = 0; c < CPU_SETSIZE && !bad; c++)
        if (c != first && CPU_ISSET(c, &allowed) && !CPU_ISSET(c, &w->helper_cpus)) bad = 13;
    duet_finalize();
    return bad;
}

static void test_world(void)
{
    dt_set_context("one-rank world bound to one CPU");
    if (CPU_COUNT(&allowed) < 2) {
        printf("test_cpus: skipped the world case: this process may use one CPU only\n");
        return;
    }
    pid_t pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) _exit(init_bound_child());
    int ws;
    CHECK(waitpid(pid, &ws, 0) == pid, "waitpid");
    int rc = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
    EXPECT(rc == 0, "child: %s (%d)",
           rc == 10 ? "cannot bind itself" : rc == 11 ? "duet_init failed" :
           rc == 12 ? "its own CPU is offered to the helpers" :
           rc == 13 ? "a CPU it may use and no rank is bound to is not offered to the helpers" : "died", rc);
    dt_set_context(NULL);
}

int main(void)
{
    CHECK(sched_getaffinity(0, sizeof allowed, &allowed) == 0, "sched_getaffinity");
    test_spare();
    test_place();
    test_world();
    if (dt_finish()) return 1;
    printf("test_cpus: passed (%d CPUs here)\n", CPU_COUNT(&allowed));
    return 0;
}
