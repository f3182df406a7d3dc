/*
 * nvshmem.h — NVSHMEM's API (the subset MoE and collective code uses) over Duet.
 *
 * A program written for NVSHMEM 3.x builds against this header and Duet's library instead:
 * setup (nvshmem_init, unique-id init), the GPU symmetric heap (malloc / align / calloc /
 * free), pes and strided teams, put / get / p / g at thread, warp and block scope with _nbi
 * forms, strided iput / iget, put-with-signal, signal_op / fetch / wait_until, wait_until / test
 * (single, and the _all / _any / _some sets), atomics (bitwise ones too), team collectives
 * (reduce, broadcast, fcollect, alltoall at thread / warp / block scope, on the host and on a
 * stream), quiet, fence, barriers (host, kernel, stream), collective launch, nvshmem_ptr and the _on_stream
 * forms. docs/MIGRATING_NVSHMEM.md says how to build and run, what differs and what is not
 * here. Header-only: host calls are inline functions over Duet's C API (link libduet), kernel
 * calls are Duet's device API (duet_device.cuh); no -rdc and nothing to define. C++ only (.cu
 * files, or C++ files for the host calls).
 */
#ifndef NVSHMEM_H
#define NVSHMEM_H

#include "duet_nvshmem/nvshmem_types.h"
#include "duet_nvshmem/nvshmem_state.h"
#include "duet_nvshmem/nvshmem_setup.h"
#include "duet_nvshmem/nvshmem_rma.h"
#include "duet_nvshmem/nvshmem_sync.h"
#include "duet_nvshmem/nvshmem_waitset.h"
#include "duet_nvshmem/nvshmem_coll.h"
#include "duet_nvshmem/nvshmem_unsupported.h"

#endif /* NVSHMEM_H */
