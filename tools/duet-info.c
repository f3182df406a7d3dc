/*
 * duet-info: what this Duet is and how it is set up — the version, the backends it can
 * use here, where a bootstrap listener would bind (and why), and every setting (DUET_*
 * variable) with its current value, default and help.
 *
 *   duet-info            all of it
 *   duet-info --settings only the settings table
 *   duet-info --shm-prefix  how the /dev/shm names of the job whose secret is in
 *                        DUET_JOB_SECRET begin ("duet-<job part>-": a keyed hash of the
 *                        secret), to find what a job left behind
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "util/duet_util.h"
#include "boot/duet_boot.h"
#include "cuda/duet_cuda_heap.h"
#include "tport/duet_tport_net.h"

static void print_backends(void)
{
    struct stat st;
    int shm = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && access("/dev/shm", W_OK) == 0;
    printf("Backends:\n");
    printf("  %-6s %-11s %s\n", "cpu", shm ? "available" : "UNAVAILABLE",
           shm ? "host memory; shm transport over /dev/shm" : "/dev/shm is missing or not writable");
    char cuda[2048];
    int rc = duet_cuda_describe(cuda, sizeof cuda);
    printf("  %-6s %-11s %s\n", "cuda", rc > 0 ? "available" : rc == 0 ? "UNAVAILABLE" : "not built", cuda);
    char net[512];
    printf("  %-6s %-11s %s\n", "net", duet_tport_net_describe(net, sizeof net) > 0 ? "available" : "not built", net);
}

/* The address duet_init's or duet_get_unique_id's listener would bind here, under this
 * environment's launcher, and why; and where the one-host rendezvous file would be. */
static void print_bootstrap(void)
{
    printf("Bootstrap:\n");
    uint32_t addr;
    char why[300], dir[300];
    if (duet_boot_bind_addr(DUET_BOOT_ASK_LAUNCHER, &addr, why, sizeof why) == DUET_OK)
        printf("  listens on   %s\n", why);
    else
        printf("  listens on   NOWHERE: %s\n", duet_last_error());
    const char *because;
    int one = duet_boot_env_one_host(&because);
    printf("  one host     %s (%s)\n", one ? "yes" : "not known to be", because);
    if (duet_boot_env_private_dir(dir, sizeof dir) == DUET_OK)
        printf("  rendezvous   files in %s (private to this user)\n", dir);
    else
        printf("  rendezvous   REFUSED: %s\n", duet_last_error());
}

static void print_settings(void)
{
    printf("Settings (environment variables):\n");
    for (size_t i = 0; i < duet_cfg_rows(); i++) {
        duet_cfg_row_t row;
        duet_cfg_row(i, &row);
        printf("  %-24s = %-12s %s(default %s, %s)\n      %s\n", row.name, row.value,
               row.is_set ? "[set] " : "", row.defval[0] ? row.defval : "\"\"", row.type, row.help);
    }
    printf("Other software's variables Duet reads:\n");
    for (size_t i = 0; i < DUET_FOREIGN_COUNT; i++) {
        const char *name, *help, *value;
        duet_foreign_row(i, &name, &help, &value);
        printf("  %-24s %s%s%s\n      %s\n", name, value ? "= " : "(unset)", value ? value : "", "", help);
    }
    const char *notes = duet_cfg_alias_notes();
    if (notes[0]) printf("Not carried over from them:\n  %s\n", notes);
}

static int print_shm_prefix(void)
{
    uint8_t secret[DUET_SECRET_BYTES];
    char part[DUET_NAME_JOB_HEX + 1];
    if (duet_hex_decode(duet_cfg()->job_secret, secret, sizeof secret) != 0) {
        fprintf(stderr, "duet-info: DUET_JOB_SECRET must be %d hex digits\n", 2 * DUET_SECRET_BYTES);
        return 2;
    }
    duet_name_job_part(secret, sizeof secret, part);
    printf("duet-%s-\n", part);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--settings") == 0) {
        print_settings();
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "--shm-prefix") == 0) return print_shm_prefix();
    if (argc > 1) {
        fprintf(stderr, "usage: duet-info [--settings | --shm-prefix]\n");
        return argc > 1 && strcmp(argv[1], "--help") == 0 ? 0 : 2;
    }
    printf("Duet %s — collectives and one-sided PGAS communication in one runtime\n\n",
           duet_version_string());
    print_backends();
    printf("\n");
    print_bootstrap();
    printf("\n");
    print_settings();
    return 0;
}
