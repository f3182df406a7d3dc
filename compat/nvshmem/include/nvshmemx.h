/*
 * nvshmemx.h — NVSHMEM's extensions (nvshmemx_*: unique-id init, warp / block forms,
 * _on_stream forms, collective launch) over Duet. nvshmem.h already declares all of them, so
 * either header gives the whole API, as with NVSHMEM.
 */
#ifndef NVSHMEMX_H
#define NVSHMEMX_H

#include "nvshmem.h"

#endif /* NVSHMEMX_H */
