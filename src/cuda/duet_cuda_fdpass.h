/*
 * duet_cuda_fdpass.h — passing file descriptors among the ranks of one host (the POSIX-fd
 * handles of the GPU heap's allocations).
 */
#ifndef DUET_CUDA_FDPASS_H
#define DUET_CUDA_FDPASS_H

#include <stdint.h>
#include "boot/duet_boot.h"

/* Collective over `b` (every rank calls it, local or not): gives `my_fd` to every rank r
 * with local[r] set and fills fds[r] with r's descriptor (-1 for the others and for me).
 * pids[r] is rank r's process id: a connection from any other process is refused. `name`
 * (secret-derived) names the abstract Unix sockets. Every wait is bounded by `timeout_s`.
 * On failure the received descriptors are closed and fds[] is all -1. */
duet_status_t duet_cuda_fd_exchange(duet_boot_t *b, const char *name, const uint8_t *local,
                                    const int32_t *pids, int my_fd, int *fds, double timeout_s);

#endif
