/*
 * boot_root_death MAX_SECS: run with DUET_TEST_BOOT_ROOT_DIE=1, so that rank 0 SIGKILLs
 * itself inside duet_init once it listens (issue 18 item 10). Every other rank must see
 * duet_init fail with DUET_ERR_PEER_FAILED within MAX_SECS, its message naming rank 0.
 * Exit 0 on success (rank 0 never returns).
 */
#include "duet_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    double bound = argc > 1 ? atof(argv[1]) : 2.0;
    double t0 = now_s();
    duet_status_t st = duet_init();
    double dt = now_s() - t0;
    CHECK(st != DUET_OK, "duet_init worked although rank 0 died");
    CHECK(st == DUET_ERR_PEER_FAILED, "duet_init returned %s, expected DUET_ERR_PEER_FAILED: %s", duet_status_str(st),
          duet_last_error());
    CHECK(strstr(duet_last_error(), "rank 0"), "the error does not name rank 0: %s", duet_last_error());
    CHECK(dt < bound, "duet_init took %.2f s to see rank 0's death (bound %.1f s): %s", dt, bound, duet_last_error());
    printf("saw rank 0's death in %.2f s: %s\n", dt, duet_last_error());
    return 0;
}
