/*
 * duet_cpus.h — where a rank's helper threads run (docs/NETWORK.md 2.9).
 *
 * Launchers bind each rank to a core (duetrun by default, mpirun --bind-to core, srun
 * --cpu-bind). A busy helper thread, the GPU proxy, inherits that one core and then shares it
 * with the rank's own thread: each gets the core in scheduler slices of milliseconds, and
 * every device call through the proxy waits that long (measured on the H200 machine: a device
 * p round trip through two proxies took 1.6 ms). So a helper moves to the CPUs of its host that
 * no rank is bound to, when there are any; otherwise it stays where the rank runs.
 */
#ifndef DUET_CPUS_H
#define DUET_CPUS_H

#include <sched.h>

/* The CPUs below ncpus that are in none of the host's ranks' masks (bound: their union).
 * Empty when the ranks may run everywhere (not bound) or are bound to every CPU. */
void duet_cpus_spare(const cpu_set_t *bound, int ncpus, cpu_set_t *spare);

/* Moves the calling thread to spare (when not empty; the kernel drops CPUs a cpuset does not
 * allow). Returns 1 when it moved, 0 when it stays on the rank's CPUs; logs which, naming who
 * ("GPU proxy") and rank. */
int duet_cpus_place_helper(const cpu_set_t *spare, int rank, const char *who);

#endif
