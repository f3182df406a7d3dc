/*
 * Launcher environments: who am I, how many are we, and where is the rendezvous.
 *
 *   launcher   rank / size / local                         rendezvous address and secret
 *   duetrun    DUET_RANK, DUET_NRANKS, DUET_LOCAL_*        DUET_BOOT_ADDR, DUET_JOB_SECRET, rank 0
 *                                                          inherits the listener (DUET_BOOT_LISTEN_FD)
 *   mpirun     OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK,      DUET_BOOT_ADDR or MASTER_ADDR:MASTER_PORT+1
 *              LOCAL_SIZE}                                 if set, else a rendezvous file in /tmp
 *   srun       SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID   (one host) named by the launcher's job id;
 *   torchrun   RANK, WORLD_SIZE, LOCAL_RANK,               secret: DUET_JOB_SECRET if set, else
 *              LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT  derived from the job id (weaker)
 *   none       a single rank
 *
 * MASTER_PORT itself belongs to torch's own store, hence MASTER_PORT + 1.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <arpa/inet.h>
#include "boot/duet_boot.h"

static long env_long(const char *name, long fallback)
{
    const char *v = duet_foreign_env(name);
    if (!v || !*v) return fallback;
    char *end;
    long x = strtol(v, &end, 10);
    return *end ? fallback : x;
}

/* FNV-1a over the job id, stretched to the secret's size: only as secret as the job id. */
static void secret_from_text(const char *text, uint8_t *secret)
{
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < DUET_SECRET_BYTES; i++) {
        for (const char *p = text; *p; p++) h = (h ^ (uint8_t)*p) * 1099511628211ull;
        h = (h ^ (uint64_t)i) * 1099511628211ull;
        secret[i] = (uint8_t)(h >> 56);
    }
}

static const char *job_id_text(void)
{
    static const char *vars[] = {"TORCHELASTIC_RUN_ID", "PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid",
                                 "SLURM_JOB_ID", NULL};
    for (int i = 0; vars[i]; i++) {
        const char *v = duet_foreign_env(vars[i]);
        if (v && *v) return v;
    }
    return NULL;
}

static duet_status_t job_secret(uint8_t *secret)
{
    const char *hex = duet_cfg()->job_secret;
    if (hex[0]) {
        if (duet_hex_decode(hex, secret, DUET_SECRET_BYTES))
            return DUET_FAIL(DUET_ERR_INVALID_ARG, BOOT, "DUET_JOB_SECRET must be %d hex digits",
                             2 * DUET_SECRET_BYTES);
        return DUET_OK;
    }
    const char *job = job_id_text();
    if (!job)
        return DUET_FAIL(DUET_ERR_INVALID_ARG, BOOT,
                         "bootstrap: no job secret: set DUET_JOB_SECRET (32 hex digits) on every rank");
    DUET_LOG(INFO, BOOT, "bootstrap: no DUET_JOB_SECRET; deriving the secret from the job id \"%s\"", job);
    char salted[512];
    snprintf(salted, sizeof salted, "duet:%s:%s", job, duet_foreign_env("SLURM_STEP_ID") ?: "");
    secret_from_text(salted, secret);
    return DUET_OK;
}

/* The single-host rendezvous file: rank 0 publishes "host:port", others read it. */
static void rdv_file_path(char *path, size_t len)
{
    char safe[200];
    const char *job = job_id_text();
    size_t i = 0;
    for (; job && job[i] && i < sizeof safe - 1; i++)
        safe[i] = (job[i] == '/' || job[i] == ' ') ? '_' : job[i];
    safe[i] = '\0';
    snprintf(path, len, "/tmp/duet-rdv-%d-%s", (int)getuid(), safe);
}

static duet_status_t rdv_file_publish(const duet_unique_id_t *uid)
{
    const duet_boot_id_t *id = (const duet_boot_id_t *)uid;
    char path[256], tmp[300], text[64];
    rdv_file_path(path, sizeof path);
    snprintf(tmp, sizeof tmp, "%s.%d", path, (int)getpid());
    struct in_addr ia = {id->addr_be};
    int n = snprintf(text, sizeof text, "%s:%u\n", inet_ntoa(ia), ntohs(id->port_be));
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || write(fd, text, (size_t)n) != n || close(fd) || rename(tmp, path)) {
        if (fd >= 0) unlink(tmp);
        return DUET_FAIL(DUET_ERR_SYSTEM, BOOT, "bootstrap: cannot publish %s: %s", path, strerror(errno));
    }
    return DUET_OK;
}

static duet_status_t rdv_file_read(char *host_port, size_t len, double timeout_s)
{
    char path[256];
    rdv_file_path(path, sizeof path);
    uint64_t deadline = duet_time_ns() + (uint64_t)(timeout_s * 1e9);
    for (;;) {
        FILE *f = fopen(path, "r");
        if (f) {
            char *ok = fgets(host_port, (int)len, f);
            fclose(f);
            if (ok) {
                host_port[strcspn(host_port, "\n")] = '\0';
                return DUET_OK;
            }
        }
        if (duet_time_ns() > deadline)
            return DUET_FAIL(DUET_ERR_TIMEOUT, BOOT,
                             "bootstrap: rank 0 did not publish %s in time; across hosts, set "
                             "DUET_BOOT_ADDR=host:port (or MASTER_ADDR/MASTER_PORT)", path);
        poll(NULL, 0, 5); /* rank 0 is starting: the file appears once */
    }
}

static duet_status_t rendezvous_id(duet_boot_env_t *env)
{
    uint8_t secret[DUET_SECRET_BYTES];
    duet_status_t st = job_secret(secret);
    if (st) return st;
    const char *boot_addr = duet_cfg()->boot_addr;
    const char *maddr = duet_foreign_env("MASTER_ADDR"), *mport = duet_foreign_env("MASTER_PORT");
    char host_port[300];
    if (boot_addr[0]) {
        snprintf(host_port, sizeof host_port, "%s", boot_addr);
    } else if (maddr && mport) {
        snprintf(host_port, sizeof host_port, "%s:%ld", maddr, strtol(mport, NULL, 10) + 1);
    } else {
        /* one host: rank 0 makes a listener and publishes it in a file */
        if (env->rank == 0) {
            if ((st = duet_boot_id_create_secret(&env->id, secret))) return st;
            if ((st = rdv_file_publish(&env->id))) return st;
            env->published_file = 1;
            return DUET_OK;
        }
        if ((st = rdv_file_read(host_port, sizeof host_port, duet_cfg()->bootstrap_timeout)))
            return st;
        return duet_boot_id_from(&env->id, host_port, secret, -1);
    }
    int listen_fd = -1;
    if (env->rank == 0) {
        listen_fd = (int)duet_cfg()->boot_listen_fd;
        if (listen_fd < 0) {
            /* the root listens on the named port itself */
            const char *colon = strrchr(host_port, ':');
            listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
            int one = 1;
            setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
            struct sockaddr_in sa = {.sin_family = AF_INET,
                                     .sin_port = htons((uint16_t)strtol(colon ? colon + 1 : "0", NULL, 10)),
                                     .sin_addr = {htonl(INADDR_ANY)}};
            if (listen_fd < 0 || bind(listen_fd, (struct sockaddr *)&sa, sizeof sa) || listen(listen_fd, 1024)) {
                int e = errno;
                if (listen_fd >= 0) close(listen_fd);
                return DUET_FAIL(DUET_ERR_SYSTEM, BOOT, "bootstrap: rank 0 cannot listen on %s: %s",
                                 host_port, strerror(e));
            }
        } else {
            fcntl(listen_fd, F_SETFD, FD_CLOEXEC); /* not inherited by the program's children */
            fcntl(listen_fd, F_SETFL, fcntl(listen_fd, F_GETFL) | O_NONBLOCK);
        }
    }
    return duet_boot_id_from(&env->id, host_port, secret, listen_fd);
}

duet_status_t duet_boot_env_detect(duet_boot_env_t *env)
{
    const duet_cfg_t *cfg = duet_cfg();
    memset(env, 0, sizeof *env);
    if (cfg->rank >= 0 && cfg->nranks > 0) {
        env->launcher = "duetrun";
        env->rank = (int)cfg->rank;
        env->nranks = (int)cfg->nranks;
        env->local_rank = (int)cfg->local_rank;
        env->local_size = (int)cfg->local_size;
    } else if (env_long("OMPI_COMM_WORLD_SIZE", 0) > 0) {
        env->launcher = "mpirun";
        env->rank = (int)env_long("OMPI_COMM_WORLD_RANK", -1);
        env->nranks = (int)env_long("OMPI_COMM_WORLD_SIZE", 0);
        env->local_rank = (int)env_long("OMPI_COMM_WORLD_LOCAL_RANK", -1);
        env->local_size = (int)env_long("OMPI_COMM_WORLD_LOCAL_SIZE", 0);
    } else if (env_long("SLURM_NTASKS", 0) > 0 && env_long("SLURM_PROCID", -1) >= 0) {
        env->launcher = "srun";
        env->rank = (int)env_long("SLURM_PROCID", -1);
        env->nranks = (int)env_long("SLURM_NTASKS", 0);
        env->local_rank = (int)env_long("SLURM_LOCALID", -1);
        env->local_size = -1; /* learned at rendezvous */
    } else if (env_long("WORLD_SIZE", 0) > 0 && env_long("RANK", -1) >= 0) {
        env->launcher = "torchrun";
        env->rank = (int)env_long("RANK", -1);
        env->nranks = (int)env_long("WORLD_SIZE", 0);
        env->local_rank = (int)env_long("LOCAL_RANK", -1);
        env->local_size = (int)env_long("LOCAL_WORLD_SIZE", -1);
    } else {
        env->launcher = "none";
        env->rank = 0;
        env->nranks = 1;
        env->local_rank = 0;
        env->local_size = 1;
        return duet_boot_id_create(&env->id);
    }
    if (env->rank < 0 || env->rank >= env->nranks)
        return DUET_FAIL(DUET_ERR_INVALID_ARG, BOOT, "%s gave rank %d outside [0, %d)", env->launcher,
                         env->rank, env->nranks);
    DUET_LOG(INFO, BOOT, "launched by %s: rank %d of %d", env->launcher, env->rank, env->nranks);
    return rendezvous_id(env);
}

void duet_boot_env_cleanup(duet_boot_env_t *env)
{
    if (!env->published_file) return;
    char path[256];
    rdv_file_path(path, sizeof path);
    unlink(path);
    env->published_file = 0;
}
