// shmem_cxx.cc — shmem.h compiles as C++: the typed names, and the overloads that stand in
// for the C11 generic names. Compile-only (tests/compat/shmem.cmake).
#include <shmem.h>
#include <shmemx.h>

int main()
{
    shmem_init();
    long *x = static_cast<long *>(shmem_malloc(4 * sizeof(long)));
    long v[4] = {1, 2, 3, 4};
    shmem_long_put(x, v, 4, 0);
    shmem_put(x, v, 4, 0);
    shmem_put(SHMEM_CTX_DEFAULT, x, v, 4, 0);
    long g = shmem_g(x, 0) + shmem_atomic_fetch_add(x, 1L, 0);
    shmem_wait_until(x, SHMEM_CMP_GE, g);
    shmem_int_sum_reduce(SHMEM_TEAM_WORLD, nullptr, nullptr, 0);
    shmem_free(x);
    shmem_finalize();
    return 0;
}
