/*
 * NCCL's environment variables. Duet's settings table reads them once, with its own
 * (its aliases: duet-info lists them, docs/MIGRATING_NCCL.md): where DUET_DEBUG, DUET_DEBUG_SUBSYS,
 * DUET_DEBUG_FILE or DUET_ALGO is unset, NCCL_DEBUG, NCCL_DEBUG_SUBSYS, NCCL_DEBUG_FILE or
 * NCCL_ALGO gives its value, translated; nothing is written to the environment. What this
 * layer adds: the log of what could not be carried over (and of NCCL_PROTO, which Duet has no
 * use for: one protocol per transport), once, at the first NCCL call; and NCCL_DEBUG=VERSION's
 * version line at the first init.
 */
#include <pthread.h>
#include <strings.h>
#include "nccl_compat.h"
#include "duet/duet_ext.h"

static pthread_once_t env_once = PTHREAD_ONCE_INIT;

static void apply(void)
{
    const char *notes = duet_ext_settings_notes();
    if (notes[0]) duet_ext_log(DUET_EXT_LOG_INFO, "INIT", "%s", notes);
    const char *proto = duet_ext_env("NCCL_PROTO");
    if (proto && proto[0])
        duet_ext_log(DUET_EXT_LOG_INFO, "INIT", "NCCL_PROTO=%s: Duet has one protocol per transport (small messages travel inside "
                 "the channel's header); ignored", proto);
}

void nccl_env_apply(void) { pthread_once(&env_once, apply); }

/* NCCL_DEBUG=VERSION (or INFO, TRACE) prints the version once, at the first init. */
int nccl_env_wants_version(void)
{
    const char *v = duet_ext_env("NCCL_DEBUG");
    return v && (!strcasecmp(v, "VERSION") || !strcasecmp(v, "INFO") || !strcasecmp(v, "TRACE"));
}
