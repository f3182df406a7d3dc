/*
 * shmemx.h — OpenSHMEM extensions of Duet. There are none beyond shmem.h today; the header
 * exists because programs written for other implementations include it.
 */
#ifndef DUET_SHMEMX_H
#define DUET_SHMEMX_H
#include "shmem.h"
#endif
