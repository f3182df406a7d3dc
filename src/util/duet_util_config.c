/* The settings table: every DUET_* environment variable, read once; the other software's
 * variables Duet reads (DUET_FOREIGN_TABLE), read once; and the aliases between them. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "duet_util.h"

typedef enum { CFG_STR, CFG_INT, CFG_SIZE, CFG_SECS, CFG_NUM } cfg_type_t;

typedef struct {
    const char *name, *type_name, *defval, *help;
    cfg_type_t type;
    size_t offset;
} cfg_desc_t;

static const cfg_desc_t cfg_table[] = {
#define DUET_CFG_ROW_(name, field, type, def, help) \
    {"DUET_" #name, #type, def, help, CFG_##type, offsetof(duet_cfg_t, field)},
    DUET_CONFIG_TABLE(DUET_CFG_ROW_)
#undef DUET_CFG_ROW_
};

static duet_cfg_t cfg_values;
static pthread_once_t cfg_once = PTHREAD_ONCE_INIT;

static const struct {
    const char *name, *help;
} foreign_table[] = {
#define DUET_FOREIGN_ROW_(name, help) {#name, help},
    DUET_FOREIGN_TABLE(DUET_FOREIGN_ROW_)
#undef DUET_FOREIGN_ROW_
};
static const char *foreign_values[DUET_FOREIGN_COUNT];
static pthread_once_t foreign_once = PTHREAD_ONCE_INIT;

static void foreign_load(void)
{
    for (size_t i = 0; i < DUET_FOREIGN_COUNT; i++) foreign_values[i] = getenv(foreign_table[i].name);
}

const char *duet_foreign_env_(duet_foreign_t which)
{
    pthread_once(&foreign_once, foreign_load);
    return (unsigned)which < DUET_FOREIGN_COUNT ? foreign_values[which] : NULL;
}

void duet_foreign_row(size_t i, const char **name, const char **help, const char **value)
{
    *name = foreign_table[i].name;
    *help = foreign_table[i].help;
    *value = duet_foreign_env_((duet_foreign_t)i);
}

const duet_cfg_t *duet_cfg_raw_(void);

/* The aliases (DUET_CONFIG_ALIASES): which row, which variable, how. */
typedef int (*alias_fn)(const char *v, char *out, size_t len, char *note, size_t nlen);
static const struct {
    const char *row;
    duet_foreign_t from;
    alias_fn translate;
} alias_table[] = {
#define DUET_ALIAS_ROW_(row, from, fn) {"DUET_" #row, DUET_FOREIGN_##from, fn},
    DUET_CONFIG_ALIASES(DUET_ALIAS_ROW_)
#undef DUET_ALIAS_ROW_
};
static char alias_text[DUET_ARRAY_LEN(alias_table)][256]; /* the translated values (STR rows point here) */
static int alias_used[DUET_ARRAY_LEN(alias_table)];
static char alias_notes[1024];

/* Row `name`'s text from its alias, or NULL (unaliased, or the alias unset or untranslatable). */
static const char *alias_value(const char *name)
{
    for (size_t i = 0; i < DUET_ARRAY_LEN(alias_table); i++) {
        if (strcmp(alias_table[i].row, name) != 0) continue;
        const char *v = duet_foreign_env_(alias_table[i].from);
        if (!v || !v[0]) return NULL;
        char note[512] = "";
        int ok = alias_table[i].translate(v, alias_text[i], sizeof alias_text[i], note, sizeof note);
        size_t n = strlen(alias_notes);
        if (note[0]) snprintf(alias_notes + n, sizeof alias_notes - n, "%s%s", n ? "\n" : "", note);
        alias_used[i] = ok;
        return ok ? alias_text[i] : NULL;
    }
    return NULL;
}

const char *duet_cfg_alias_notes(void)
{
    (void)duet_cfg_raw_();
    return alias_notes;
}

int duet_parse_size(const char *text, size_t *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || errno || !(v >= 0)) return -1; /* !(>=) also refuses NaN */
    double mult = 1;
    switch (*end) {
    case 'k': case 'K': mult = 1024.0; end++; break;
    case 'm': case 'M': mult = 1024.0 * 1024; end++; break;
    case 'g': case 'G': mult = 1024.0 * 1024 * 1024; end++; break;
    case 't': case 'T': mult = 1024.0 * 1024 * 1024 * 1024; end++; break;
    default: break;
    }
    if (*end == 'B' || *end == 'b') end++;
    if (*end != '\0' || !(v * mult <= 1.8e19)) return -1;
    *out = (size_t)(v * mult);
    return 0;
}

int duet_parse_secs(const char *text, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || errno || *end != '\0' || !(v >= 0) || isinf(v)) return -1;
    *out = v;
    return 0;
}

static int parse_into(const cfg_desc_t *d, const char *text, duet_cfg_t *dst)
{
    void *field = (char *)dst + d->offset;
    switch (d->type) {
    case CFG_STR: *(const char **)field = text; return 0;
    case CFG_INT: {
        char *end;
        errno = 0;
        long v = strtol(text, &end, 10);
        if (end == text || *end || errno) return -1;
        *(long *)field = v;
        return 0;
    }
    case CFG_SIZE: return duet_parse_size(text, (size_t *)field);
    case CFG_SECS:
    case CFG_NUM: return duet_parse_secs(text, (double *)field);
    }
    return -1;
}

static void cfg_load(void)
{
    for (size_t i = 0; i < DUET_ARRAY_LEN(cfg_table); i++) {
        const cfg_desc_t *d = &cfg_table[i];
        if (parse_into(d, d->defval, &cfg_values) != 0) abort(); /* a bad default is a bug */
        const char *env = getenv(d->name);
        if (!env) env = alias_value(d->name); /* a DUET_* variable that is set wins */
        if (env && parse_into(d, env, &cfg_values) != 0) {
            /* logging is not set up yet: it is configured from this very table */
            fprintf(stderr, "duet: warning: %s=\"%s\" is not a valid %s; using %s\n", d->name, env,
                    d->type_name, d->defval);
            parse_into(d, d->defval, &cfg_values);
        }
    }
}

void duet_log_init_(void);

/* 1 when row `name` took its value from an alias. */
static int aliased(const char *name)
{
    for (size_t i = 0; i < DUET_ARRAY_LEN(alias_table); i++)
        if (alias_used[i] && strcmp(alias_table[i].row, name) == 0) return 1;
    return 0;
}

/* The settings without setting up logging (logging itself reads them through this). */
const duet_cfg_t *duet_cfg_raw_(void);
const duet_cfg_t *duet_cfg_raw_(void)
{
    pthread_once(&cfg_once, cfg_load);
    return &cfg_values;
}

const duet_cfg_t *duet_cfg(void)
{
    duet_log_init_();
    return duet_cfg_raw_();
}

double duet_wait_timeout(void) { return duet_cfg()->wait_timeout; }

size_t duet_cfg_rows(void) { return DUET_ARRAY_LEN(cfg_table); }

void duet_cfg_row(size_t i, duet_cfg_row_t *row)
{
    const duet_cfg_t *cfg = duet_cfg();
    const cfg_desc_t *d = &cfg_table[i];
    const void *field = (const char *)cfg + d->offset;
    row->name = d->name;
    row->type = d->type_name;
    row->defval = d->defval;
    row->help = d->help;
    row->is_set = getenv(d->name) != NULL || aliased(d->name);
    switch (d->type) {
    case CFG_STR: snprintf(row->value, sizeof row->value, "%s", *(const char *const *)field); break;
    case CFG_INT: snprintf(row->value, sizeof row->value, "%ld", *(const long *)field); break;
    case CFG_SIZE: snprintf(row->value, sizeof row->value, "%zu", *(const size_t *)field); break;
    case CFG_SECS:
    case CFG_NUM: snprintf(row->value, sizeof row->value, "%g", *(const double *)field); break;
    }
}

int duet_cfg_is_set(const char *name)
{
    (void)duet_cfg_raw_();
    for (size_t i = 0; i < DUET_ARRAY_LEN(cfg_table); i++)
        if (strcmp(cfg_table[i].name, name) == 0) return getenv(name) != NULL || aliased(name);
    return 0;
}
