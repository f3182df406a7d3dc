/*
 * shmem_setup.c — library setup and query, memory management, shmem_ptr, and symmetric
 * static data (initialised .data, a large .bss, static locals), checked against references.
 * Built with build/bin/duetcc (tests/compat/shmem.cmake), so it also proves the wrapper.
 */
#include "shmem_test.h"

#include <stdint.h>

int g_init = 42;                       /* .data: keeps its value through shmem_init */
long g_arr[16];                        /* .bss */
static char g_big[8 << 20];            /* a large .bss, far past the file-backed pages */
static const int g_const = 7;          /* read-only: not symmetric */

static int *static_local(void)
{
    static int counter = 5;
    return &counter;
}

int main(int argc, char **argv)
{
    int provided = -1;
    ST_CHECK(shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided) == 0, "init_thread failed");
    ST_EXPECT(provided == SHMEM_THREAD_MULTIPLE, "provided %d", provided);
    unsigned long long seed = st_seed(argc, argv), rng = seed;
    int me = shmem_my_pe(), n = shmem_n_pes(), right = (me + 1) % n, left = (me + n - 1) % n;
    shmem_query_thread(&provided);
    ST_EXPECT(provided == SHMEM_THREAD_MULTIPLE, "query_thread %d", provided);
    ST_EXPECT(me >= 0 && me < n && _my_pe() == me && _num_pes() == n, "my_pe %d n_pes %d", me, n);
    int major = 0, minor = 0;
    char name[SHMEM_MAX_NAME_LEN];
    shmem_info_get_version(&major, &minor);
    shmem_info_get_name(name);
    ST_EXPECT(major == 1 && minor == 5, "version %d.%d", major, minor);
    ST_EXPECT(strcmp(name, SHMEM_VENDOR_STRING) == 0, "name %s", name);
    for (int pe = -1; pe <= n; pe++)
        ST_EXPECT(shmem_pe_accessible(pe) == (pe >= 0 && pe < n), "pe_accessible(%d)", pe);

    /* ---- memory */
    ST_EXPECT(shmem_malloc(0) == NULL, "shmem_malloc(0) must return NULL");
    ST_EXPECT(shmem_align(3, 64) == NULL, "alignment 3 must be refused");
    shmem_free(NULL);
    long *a = shmem_malloc(100 * sizeof(long));
    ST_CHECK(a != NULL, "malloc");
    int *z = shmem_calloc(1000, sizeof(int));
    ST_CHECK(z != NULL, "calloc");
    for (int i = 0; i < 1000; i++) ST_EXPECT(z[i] == 0, "calloc[%d] = %d", i, z[i]);
    char *al = shmem_align(4096, 10);
    ST_EXPECT(al && (uintptr_t)al % 4096 == 0, "align %p", (void *)al);
    char *h = shmem_malloc_with_hints(64, SHMEM_MALLOC_ATOMICS_REMOTE | SHMEM_MALLOC_SIGNAL_REMOTE);
    ST_EXPECT(h != NULL, "malloc_with_hints");
    for (int i = 0; i < 100; i++) a[i] = me * 1000 + i;
    long *b = shmem_realloc(a, 300 * sizeof(long));
    ST_CHECK(b != NULL, "realloc up");
    for (int i = 0; i < 100; i++) ST_EXPECT(b[i] == me * 1000 + i, "realloc kept [%d] = %ld", i, b[i]);
    b = shmem_realloc(b, 50 * sizeof(long));
    for (int i = 0; i < 50; i++) ST_EXPECT(b[i] == me * 1000 + i, "realloc down kept [%d] = %ld", i, b[i]);
    ST_EXPECT(shmem_realloc(b, 0) == NULL, "realloc to 0 frees and returns NULL");
    long *c = shmem_realloc(NULL, 8 * sizeof(long));
    ST_EXPECT(c != NULL, "realloc(NULL) allocates");
    long *old_style = shmalloc(16);
    ST_EXPECT(old_style != NULL, "shmalloc");
    shfree(old_style);

    /* ---- shmem_ptr / addr_accessible: heap, static, stack, read-only */
    long stack_var = 0;
    for (int pe = 0; pe < n; pe++) {
        ST_EXPECT(shmem_ptr(c, pe) != NULL, "shmem_ptr(heap, %d)", pe);
        ST_EXPECT(shmem_ptr(&g_arr[3], pe) != NULL, "shmem_ptr(static, %d)", pe);
        ST_EXPECT(shmem_addr_accessible(c, pe) && shmem_addr_accessible(g_arr, pe), "addr_accessible %d", pe);
        ST_EXPECT(!shmem_addr_accessible(&stack_var, pe), "stack is not symmetric");
        ST_EXPECT(!shmem_addr_accessible(&g_const, pe), "read-only data is not symmetric");
    }
    ST_EXPECT(shmem_ptr(&stack_var, right) == NULL, "shmem_ptr(stack)");
    ST_EXPECT(shmem_ptr(c, n) == NULL && shmem_ptr(c, -1) == NULL, "shmem_ptr with a bad PE");
    ST_EXPECT(shmem_ptr(c, me) == c && shmem_ptr(g_arr, me) == g_arr, "shmem_ptr to myself");

    /* ---- static data */
    ST_EXPECT(g_init == 42 && *static_local() == 5 && g_const == 7, "initial values %d %d", g_init, *static_local());
    shmem_barrier_all();
    long v = (long)(st_rng(&rng) >> 1);
    shmem_long_p(&g_arr[me % 16], v + me, right);           /* into the neighbour's .bss */
    shmem_int_p(static_local(), 100 + me, right);           /* its static local */
    shmem_int_atomic_add(&g_init, 1, 0);                    /* and initialised .data */
    size_t far = sizeof g_big - 64;
    shmem_putmem(&g_big[far], &v, sizeof v, right);         /* the far end of the big .bss */
    long *via_ptr = shmem_ptr(&g_arr[15], right);
    if (n <= 15) *via_ptr = -1;                              /* a store through shmem_ptr */
    shmem_barrier_all();
    ST_EXPECT(g_arr[left % 16] == v + left, "g_arr[%d] = %ld, want %ld", left % 16, g_arr[left % 16], v + left);
    ST_EXPECT(*static_local() == 100 + left, "static local %d", *static_local());
    long got = 0;
    memcpy(&got, &g_big[far], sizeof got);
    ST_EXPECT(got == v, "far .bss %ld", got);
    if (n <= 15) ST_EXPECT(g_arr[15] == -1, "store through shmem_ptr: %ld", g_arr[15]);
    if (me == 0) ST_EXPECT(g_init == 42 + n, "g_init %d, want %d", g_init, 42 + n);
    long remote = shmem_long_g(&g_arr[me % 16], right);     /* read back what I put there */
    ST_EXPECT(remote == v + me || n > 16, "get from static %ld", remote);
    printf("PE %d: static data and memory ok\n", me);

    shmem_free(c);
    shmem_free(h);
    shmem_free(al);
    shmem_free(z);
    int rc = st_finish();
    shmem_finalize();
    return rc;
}
