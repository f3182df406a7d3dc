/* duet_ext.h's error, log, environment and in-flight calls, over the library's own (duet_util.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "duet/duet_ext.h"
#include "duet_util.h"

duet_status_t duet_ext_error_set(duet_status_t status, const char *fmt, ...)
{
    if (status == DUET_OK) return duet_error_ok(DUET_OK);
    va_list ap;
    va_start(ap, fmt);
    duet_error_vset(status, fmt, ap);
    va_end(ap);
    return status;
}

static duet_subsys_t subsys_of(const char *name)
{
    int s = duet_log_subsys_of(name);
    return s < 0 ? DUET_SUBSYS_INIT : (duet_subsys_t)s;
}

static duet_log_level_t level_of(duet_ext_log_level_t level)
{
    return level <= DUET_EXT_LOG_WARN ? DUET_LOG_WARN : level == DUET_EXT_LOG_INFO ? DUET_LOG_INFO : DUET_LOG_TRACE;
}

int duet_ext_log_enabled(duet_ext_log_level_t level, const char *subsys)
{
    return level == DUET_EXT_LOG_ALWAYS || duet_log_enabled(level_of(level), subsys_of(subsys));
}

void duet_ext_log(duet_ext_log_level_t level, const char *subsys, const char *fmt, ...)
{
    if (!duet_ext_log_enabled(level, subsys)) return;
    va_list ap;
    va_start(ap, fmt);
    duet_log_vwrite(level_of(level), subsys_of(subsys), fmt, ap);
    va_end(ap);
}

const char *duet_ext_env(const char *name)
{
    for (size_t i = 0; name && i < DUET_FOREIGN_COUNT; i++) {
        const char *n, *help, *value;
        duet_foreign_row(i, &n, &help, &value);
        if (!strcmp(n, name)) return value;
    }
    return NULL;
}

const char *duet_ext_settings_notes(void) { return duet_cfg_alias_notes(); }

void duet_ext_inflight_enter(const void *handle) { duet_inflight_enter(handle); }
void duet_ext_inflight_leave(void) { duet_inflight_leave(); }
duet_status_t duet_ext_inflight_drain(const void *handle, double timeout_s, int *left)
{
    return duet_inflight_drain(handle, timeout_s, left);
}
