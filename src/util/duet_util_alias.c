/*
 * duet_util_alias.c — other software's variables as Duet's settings (DUET_CONFIG_ALIASES in
 * duet_util.h): NCCL's logging and algorithm choice, translated into the DUET_* row's text.
 * The settings table applies them once, where the DUET_* variable is unset (it wins).
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include "duet_util.h"

int duet_alias_same(const char *v, char *out, size_t len, char *note, size_t nlen)
{
    (void)note;
    (void)nlen;
    snprintf(out, len, "%s", v);
    return 1;
}

/* NCCL_DEBUG: VERSION, WARN and ABORT log warnings (VERSION also prints the version at the
 * first NCCL init: the NCCL layer does that), INFO and TRACE as themselves. */
int duet_alias_nccl_debug(const char *v, char *out, size_t len, char *note, size_t nlen)
{
    const char *level = !strcasecmp(v, "VERSION") || !strcasecmp(v, "WARN") || !strcasecmp(v, "ABORT") ? "WARN"
                        : !strcasecmp(v, "INFO")                                                        ? "INFO"
                        : !strcasecmp(v, "TRACE")                                                       ? "TRACE"
                                                                                                        : NULL;
    if (!level) {
        snprintf(note, nlen, "NCCL_DEBUG=%s is not a level Duet knows (VERSION, WARN, INFO, TRACE): ignored", v);
        return 0;
    }
    snprintf(out, len, "%s", level);
    return 1;
}

/* NCCL_DEBUG_SUBSYS: a comma list, a leading ^ kept; names without a counterpart dropped. */
int duet_alias_nccl_subsys(const char *v, char *out, size_t len, char *note, size_t nlen)
{
    static const char *map[][2] = {{"INIT", "INIT"},   {"COLL", "COLL"},      {"P2P", "COLL"},
                                   {"TUNING", "TUNE"}, {"BOOTSTRAP", "BOOT"}, {"ALLOC", "HEAP"},
                                   {"ENV", "INIT"},    {"ALL", "ALL"}};
    int neg = v[0] == '^';
    char in[256];
    snprintf(in, sizeof in, "%s", neg ? v + 1 : v);
    size_t used = neg ? (size_t)snprintf(out, len, "^") : (out[0] = '\0', 0);
    const size_t start = used;
    for (char *save = NULL, *t = strtok_r(in, ",", &save); t; t = strtok_r(NULL, ",", &save))
        for (size_t i = 0; i < DUET_ARRAY_LEN(map); i++)
            if (!strcasecmp(t, map[i][0]) && used < len && !strstr(out, map[i][1]))
                used += (size_t)snprintf(out + used, len - used, "%s%s", used > start ? "," : "", map[i][1]);
    if (used > start) return 1;
    snprintf(note, nlen, "NCCL_DEBUG_SUBSYS=%s names no subsystem Duet has: ignored", v);
    return 0;
}

/* One NCCL algorithm name -> Duet's per-collective names (appended to out). NCCL's Ring is
 * Duet's ring where Duet has one, its pipelined chain for broadcast and reduce; NCCL's Tree
 * (a double binary tree, for allreduce) is Duet's dbtree. NVLS, CollNet and PAT have no
 * counterpart. */
static int names_coll(const char *out, const char *coll)
{
    size_t n = strlen(coll);
    for (const char *p = out; (p = strstr(p, coll)) != NULL; p += n)
        if ((p == out || p[-1] == ',') && p[n] == ':') return 1;
    return 0;
}

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
        found = 1;
        if (names_coll(out, map[i].coll)) continue; /* the first name listed for a collective wins */
        size_t n = strlen(out);
        snprintf(out + n, cap - n, "%s%s:%s", n ? "," : "", map[i].coll, map[i].duet);
    }
    return found;
}

/* NCCL_ALGO: "Ring", "Tree,Ring", "^NVLS", or per collective "allreduce:tree,ring;broadcast:ring". */
int duet_alias_nccl_algo(const char *v, char *out, size_t len, char *note, size_t nlen)
{
    out[0] = '\0';
    if (v[0] == '^') {
        snprintf(note, nlen, "NCCL_ALGO=%s: exclusions have no Duet equivalent; the tuner chooses", v);
        return 0;
    }
    char in[256];
    size_t nused = 0;
    snprintf(in, sizeof in, "%s", v);
    for (char *s1 = NULL, *part = strtok_r(in, ";", &s1); part; part = strtok_r(NULL, ";", &s1)) {
        char *colon = strchr(part, ':'), *coll = NULL, *names = part;
        if (colon) *colon = '\0', coll = part, names = colon + 1;
        for (char *s2 = NULL, *t = strtok_r(names, ",", &s2); t; t = strtok_r(NULL, ",", &s2)) {
            while (isspace((unsigned char)*t)) t++;
            if (!algo_one(coll, t, out, len) && nused < nlen)
                nused += (size_t)snprintf(note + nused, nlen - nused, "%sNCCL_ALGO: \"%s\" has no Duet counterpart "
                                          "here; ignored", nused ? "\n" : "", t);
        }
    }
    return out[0] != '\0';
}
