/* Logging: "host:pid:rank [SUBSYS] message", filtered by DUET_DEBUG and DUET_DEBUG_SUBSYS. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include "duet_util.h"

int duet_log_level_ = -1;
unsigned duet_log_mask_ = ~0u;

static const char *subsys_names[] = {
#define DUET_SUBSYS_NAME_(s) #s,
    DUET_SUBSYS_TABLE(DUET_SUBSYS_NAME_)
#undef DUET_SUBSYS_NAME_
};

static FILE *log_file;
static char log_host[64];
static int log_rank = -1;
static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static unsigned parse_mask(const char *text)
{
    int exclude = text[0] == '^';
    unsigned mask = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", text + exclude);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (!strcasecmp(tok, "ALL")) mask = ~0u;
        for (int i = 0; i < DUET_SUBSYS_COUNT; i++)
            if (!strcasecmp(tok, subsys_names[i])) mask |= 1u << i;
    }
    return exclude ? ~mask : mask;
}

/* Expands %h (host) and %p (pid) in the DUET_DEBUG_FILE pattern. */
static void expand_path(const char *pattern, char *out, size_t len)
{
    size_t o = 0;
    for (const char *p = pattern; *p && o + 1 < len; p++) {
        if (p[0] == '%' && (p[1] == 'h' || p[1] == 'p')) {
            int n = p[1] == 'h' ? snprintf(out + o, len - o, "%s", log_host)
                                : snprintf(out + o, len - o, "%d", (int)getpid());
            o += n > 0 ? (size_t)n : 0;
            p++;
        } else {
            out[o++] = *p;
        }
    }
    out[o < len ? o : len - 1] = '\0';
}

const duet_cfg_t *duet_cfg_raw_(void);

static void log_setup(void)
{
    const duet_cfg_t *cfg = duet_cfg_raw_();
    const char *lvl = cfg->debug;
    if (!strcasecmp(lvl, "NONE")) duet_log_level_ = DUET_LOG_NONE;
    else if (!strcasecmp(lvl, "INFO")) duet_log_level_ = DUET_LOG_INFO;
    else if (!strcasecmp(lvl, "TRACE")) duet_log_level_ = DUET_LOG_TRACE;
    else duet_log_level_ = DUET_LOG_WARN;
    duet_log_mask_ = parse_mask(cfg->debug_subsys);
    gethostname(log_host, sizeof log_host - 1);
    log_file = stderr;
    if (cfg->debug_file[0]) {
        char path[512];
        expand_path(cfg->debug_file, path, sizeof path);
        FILE *f = fopen(path, "a");
        if (f) log_file = f;
    }
}

/* Called from duet_cfg() and from the first log check, so levels hold before any log. */
void duet_log_init_(void) { pthread_once(&log_once, log_setup); }

void duet_log_set_rank(int rank) { log_rank = rank; }

int duet_log_subsys_of(const char *name)
{
    for (int i = 0; name && i < DUET_SUBSYS_COUNT; i++)
        if (!strcasecmp(name, subsys_names[i])) return i;
    return -1;
}

void duet_log_write(duet_log_level_t level, duet_subsys_t subsys, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    duet_log_vwrite(level, subsys, fmt, ap);
    va_end(ap);
}

void duet_log_vwrite(duet_log_level_t level, duet_subsys_t subsys, const char *fmt, va_list ap)
{
    (void)level;
    char line[2048];
    int n = snprintf(line, sizeof line, "%s:%d:%d [%s] ", log_host, (int)getpid(), log_rank,
                     subsys_names[subsys]);
    if (n > 0 && (size_t)n < sizeof line) vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    pthread_mutex_lock(&log_lock);
    fprintf(log_file ? log_file : stderr, "%s\n", line);
    fflush(log_file ? log_file : stderr);
    pthread_mutex_unlock(&log_lock);
}
