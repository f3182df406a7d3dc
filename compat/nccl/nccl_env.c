/*
 * NCCL's environment variables as Duet's settings.
 *
 * Duet reads its settings (DUET_*) once per process, from one table. Where an NCCL variable
 * means something Duet also has, the first NCCL call that reaches Duet copies it into the
 * DUET_* variable — unless that one is set already, which wins:
 *   NCCL_DEBUG=VERSION|WARN|INFO|TRACE   -> DUET_DEBUG (VERSION: WARN, plus the version line
 *                                          at the first init; ABORT: WARN)
 *   NCCL_DEBUG_SUBSYS=INIT,COLL,...      -> DUET_DEBUG_SUBSYS (INIT, COLL, P2P -> COLL,
 *                                          BOOTSTRAP -> BOOT, TUNING -> TUNE, ALLOC -> HEAP,
 *                                          ALL; a leading ^ kept; the others have no match)
 *   NCCL_DEBUG_FILE                       -> DUET_DEBUG_FILE (same %h and %p)
 *   NCCL_ALGO=Ring|Tree|...               -> DUET_ALGO (see algo_alias)
 *   NCCL_PROTO                            -> nothing: Duet has one protocol per transport;
 *                                          logged at INFO as ignored
 * Variables read once per process, as Duet's are: set them before the first NCCL call.
 */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "nccl_compat.h"
#include "util/duet_util.h"

static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static char ignored[3][256]; /* what could not be mapped, logged once the logger is set up */

static void note_ignored(const char *fmt, const char *what)
{
    for (size_t i = 0; i < DUET_ARRAY_LEN(ignored); i++)
        if (!ignored[i][0]) {
            snprintf(ignored[i], sizeof ignored[i], fmt, what);
            return;
        }
}

static void set_alias(const char *duet_name, const char *value)
{
    if (value && value[0]) setenv(duet_name, value, 0); /* 0: a DUET_* the user set wins */
}

static void debug_alias(const char *v)
{
    if (!v) return;
    if (!strcasecmp(v, "VERSION") || !strcasecmp(v, "WARN") || !strcasecmp(v, "ABORT")) set_alias("DUET_DEBUG", "WARN");
    else if (!strcasecmp(v, "INFO")) set_alias("DUET_DEBUG", "INFO");
    else if (!strcasecmp(v, "TRACE")) set_alias("DUET_DEBUG", "TRACE");
    else note_ignored("NCCL_DEBUG=%s is not a level Duet knows (VERSION, WARN, INFO, TRACE): ignored", v);
}

static void subsys_alias(const char *v)
{
    static const char *map[][2] = {{"INIT", "INIT"},   {"COLL", "COLL"},      {"P2P", "COLL"},
                                   {"TUNING", "TUNE"}, {"BOOTSTRAP", "BOOT"}, {"ALLOC", "HEAP"},
                                   {"ENV", "INIT"},    {"ALL", "ALL"}};
    if (!v || !v[0]) return;
    char in[256], out[256] = "";
    snprintf(in, sizeof in, "%s", v[0] == '^' ? v + 1 : v);
    size_t used = 0;
    if (v[0] == '^') used += (size_t)snprintf(out, sizeof out, "^");
    for (char *save = NULL, *t = strtok_r(in, ",", &save); t; t = strtok_r(NULL, ",", &save))
        for (size_t i = 0; i < DUET_ARRAY_LEN(map); i++)
            if (!strcasecmp(t, map[i][0]) && used < sizeof out && !strstr(out, map[i][1]))
                used += (size_t)snprintf(out + used, sizeof out - used, "%s%s",
                                         used > (v[0] == '^' ? 1u : 0u) ? "," : "", map[i][1]);
    if (used > (v[0] == '^' ? 1u : 0u)) set_alias("DUET_DEBUG_SUBSYS", out);
}

/* One NCCL algorithm name -> Duet's per-collective names (appended to out). NCCL's Ring is
 * Duet's ring where Duet has one, its pipelined chain for broadcast and reduce; NCCL's Tree
 * (a double binary tree, for allreduce) is Duet's dbtree. NVLS, CollNet and PAT have no
 * counterpart. */
static int algo_one(const char *coll, const char *name, char *out, size_t cap)
{
    static const struct {
        const char *nccl, *coll, *duet;
    } map[] = {{"ring", "allreduce", "ring"},     {"ring", "allgather", "ring"},
               {"ring", "reducescatter", "ring"}, {"ring", "broadcast", "chain"},
               {"ring", "reduce", "chain"},       {"tree", "allreduce", "dbtree"}};
    int found = 0;
    for (size_t i = 0; i < DUET_ARRAY_LEN(map); i++) {
        if (strcasecmp(name, map[i].nccl) || (coll && strcasecmp(coll, map[i].coll))) continue;
        if (strstr(out, map[i].coll)) continue; /* the first name listed for a collective wins */
        size_t n = strlen(out);
        snprintf(out + n, cap - n, "%s%s:%s", n ? "," : "", map[i].coll, map[i].duet);
        found = 1;
    }
    return found;
}

/* NCCL_ALGO is "Ring", "Tree,Ring", "^NVLS" or per collective "allreduce:tree,ring;broadcast:ring". */
static void algo_alias(const char *v)
{
    if (!v || !v[0]) return;
    if (v[0] == '^') {
        note_ignored("NCCL_ALGO=%s: exclusions have no Duet equivalent; the tuner chooses", v);
        return;
    }
    char in[256], out[256] = "";
    snprintf(in, sizeof in, "%s", v);
    for (char *s1 = NULL, *part = strtok_r(in, ";", &s1); part; part = strtok_r(NULL, ";", &s1)) {
        char *colon = strchr(part, ':'), *coll = NULL, *names = part;
        if (colon) *colon = '\0', coll = part, names = colon + 1;
        for (char *s2 = NULL, *t = strtok_r(names, ",", &s2); t; t = strtok_r(NULL, ",", &s2)) {
            while (isspace((unsigned char)*t)) t++;
            if (!algo_one(coll, t, out, sizeof out))
                note_ignored("NCCL_ALGO: \"%s\" has no Duet counterpart here; ignored", t);
        }
    }
    set_alias("DUET_ALGO", out);
}

static void apply(void)
{
    debug_alias(duet_foreign_env("NCCL_DEBUG"));
    subsys_alias(duet_foreign_env("NCCL_DEBUG_SUBSYS"));
    set_alias("DUET_DEBUG_FILE", duet_foreign_env("NCCL_DEBUG_FILE"));
    algo_alias(duet_foreign_env("NCCL_ALGO"));
    const char *proto = duet_foreign_env("NCCL_PROTO");
    if (proto && proto[0])
        note_ignored("NCCL_PROTO=%s: Duet has one protocol per transport (small messages travel inside "
                     "the channel's header); ignored", proto);
    for (size_t i = 0; i < DUET_ARRAY_LEN(ignored); i++)
        if (ignored[i][0]) DUET_LOG(INFO, INIT, "%s", ignored[i]);
}

void nccl_env_apply(void) { pthread_once(&env_once, apply); }

/* NCCL_DEBUG=VERSION (or INFO, TRACE) prints the version once, at the first init. */
int nccl_env_wants_version(void)
{
    const char *v = duet_foreign_env("NCCL_DEBUG");
    return v && (!strcasecmp(v, "VERSION") || !strcasecmp(v, "INFO") || !strcasecmp(v, "TRACE"));
}
