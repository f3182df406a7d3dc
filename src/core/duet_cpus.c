/*
 * Helper threads off the ranks' cores (duet_cpus.h).
 */
#include <pthread.h>
#include <string.h>
#include "core/duet_cpus.h"
#include "util/duet_util.h"

void duet_cpus_spare(const cpu_set_t *bound, int ncpus, cpu_set_t *spare)
{
    CPU_ZERO(spare);
    if (ncpus > CPU_SETSIZE) ncpus = CPU_SETSIZE;
    for (int cpu = 0; cpu < ncpus; cpu++)
        if (!CPU_ISSET(cpu, bound)) CPU_SET(cpu, spare);
}

int duet_cpus_place_helper(const cpu_set_t *spare, int rank, const char *who)
{
    cpu_set_t mine;
    int ncpus = pthread_getaffinity_np(pthread_self(), sizeof mine, &mine) == 0 ? CPU_COUNT(&mine) : 0;
    if (CPU_COUNT(spare) == 0) {
        if (ncpus == 1)
            DUET_LOG(WARN, INIT, "%s of rank %d shares the rank's one CPU (every CPU of this host has a rank bound "
                     "to it): its operations wait for scheduler slices of milliseconds; leave a CPU free per "
                     "host, or do not bind ranks to single cores", who, rank);
        return 0;
    }
    int err = pthread_setaffinity_np(pthread_self(), sizeof *spare, spare);
    if (err) {
        DUET_LOG(INFO, INIT, "%s of rank %d stays on the rank's CPUs: the %d CPU(s) no rank is bound to are not "
                 "allowed here (%s)", who, rank, CPU_COUNT(spare), strerror(err));
        return 0;
    }
    DUET_LOG(INFO, INIT, "%s of rank %d runs on the %d CPU(s) of this host that no rank is bound to", who, rank,
             CPU_COUNT(spare));
    return 1;
}
