/* Status names and the thread-local last-error message. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "duet_util.h"

static _Thread_local char last_error[1024];
_Thread_local duet_status_t duet_error_status_; /* the last status (duet_util.h reads it inline) */
_Atomic int duet_error_pending_;                /* threads whose last status is an error */

static pthread_key_t exit_key;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;

/* A thread that ends with an error no longer counts. */
static void thread_exit(void *unused)
{
    (void)unused;
    if (duet_error_status_ != DUET_OK) atomic_fetch_sub_explicit(&duet_error_pending_, 1, memory_order_relaxed);
    duet_error_status_ = DUET_OK;
}
static void make_exit_key(void) { (void)pthread_key_create(&exit_key, thread_exit); }

/* The thread's last status becomes `status`: the count of threads with an error follows. */
static void set_status(duet_status_t status)
{
    int was = duet_error_status_ != DUET_OK, is = status != DUET_OK;
    if (is && !was) {
        (void)pthread_once(&exit_once, make_exit_key);
        (void)pthread_setspecific(exit_key, (void *)1); /* its destructor runs at the thread's end */
    }
    if (is != was) atomic_fetch_add_explicit(&duet_error_pending_, is ? 1 : -1, memory_order_relaxed);
    duet_error_status_ = status;
}

const char *duet_status_str(duet_status_t status)
{
    switch (status) {
    case DUET_OK:              return "DUET_OK";
    case DUET_ERR_INVALID_ARG: return "DUET_ERR_INVALID_ARG";
    case DUET_ERR_NO_MEMORY:   return "DUET_ERR_NO_MEMORY";
    case DUET_ERR_TIMEOUT:     return "DUET_ERR_TIMEOUT";
    case DUET_ERR_PEER_FAILED: return "DUET_ERR_PEER_FAILED";
    case DUET_ERR_REVOKED:     return "DUET_ERR_REVOKED";
    case DUET_ERR_UNSUPPORTED: return "DUET_ERR_UNSUPPORTED";
    case DUET_ERR_SYSTEM:      return "DUET_ERR_SYSTEM";
    case DUET_ERR_CUDA:        return "DUET_ERR_CUDA";
    case DUET_ERR_INTERNAL:    return "DUET_ERR_INTERNAL";
    }
    return "DUET_ERR_UNKNOWN";
}

const char *duet_last_error(void) { return last_error; }
duet_status_t duet_last_status(void) { return duet_error_status_; }

const char *duet_version_string(void)
{
#define DUET_STR2_(x) #x
#define DUET_STR_(x) DUET_STR2_(x)
    return DUET_STR_(DUET_VERSION_MAJOR) "." DUET_STR_(DUET_VERSION_MINOR) "." DUET_STR_(
        DUET_VERSION_PATCH);
}

duet_status_t duet_error_vset(duet_status_t status, const char *fmt, va_list ap)
{
    set_status(status);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    return status;
}

duet_status_t duet_error_set(duet_status_t status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    duet_error_vset(status, fmt, ap);
    va_end(ap);
    return status;
}

void duet_error_clear_(void)
{
    set_status(DUET_OK);
    last_error[0] = '\0';
}

duet_status_t duet_error_wrap(duet_status_t status, const char *where)
{
    char tmp[sizeof last_error];
    size_t w = strlen(where);
    if (w + 2 >= sizeof tmp) return status;
    /* the message already says where (the check that raised it named the call): one prefix */
    if (strncmp(last_error, where, w) == 0 && last_error[w] == ':' && last_error[w + 1] == ' ') return status;
    memcpy(tmp, where, w);
    memcpy(tmp + w, ": ", 2);
    size_t rest = strnlen(last_error, sizeof tmp - w - 3);
    memcpy(tmp + w + 2, last_error, rest);
    tmp[w + 2 + rest] = '\0';
    memcpy(last_error, tmp, sizeof last_error);
    return status;
}
