/*
 * test_config.c — the settings table (src/util/duet_util_config.c).
 *
 * Covers: duet_parse_size (plain numbers, K/M/G/T suffixes in either case, an optional B,
 * fractions, invalid text: empty, letters, negative, unknown or repeated suffixes, inf,
 * nan, values past 2^64) and duet_parse_secs; every row of the table (a unique name that
 * starts with DUET_, a type (STR, INT, SIZE, SECS, NUM), a help text, a default that parses as its type); the values
 * reflect the environment as it was at the first duet_cfg() call (variables set before
 * it, e.g. DUET_SYMMETRIC_SIZE=3M -> 3145728), invalid values fall back to the default
 * with one warning naming the variable, later changes to the environment are not seen;
 * the first call made from several threads at once reads the table once; the foreign rows
 * (unique, documented, read once); NCCL's variables as aliases (used where the DUET_* one is
 * unset, which otherwise wins; never written into the environment; what has no counterpart is
 * a note) and every translator case by case.
 */
#include "duet_test.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "util/duet_util.h"

/* Every name in the table, straight from the X-macro. */
static const char *const table_names[] = {
#define NAME_(name, field, type, def, help) "DUET_" #name,
    DUET_CONFIG_TABLE(NAME_)
#undef NAME_
};
#define NROWS (sizeof table_names / sizeof table_names[0])

static void test_parse_size(void)
{
    static const struct {
        const char *text;
        size_t want;
    } good[] = {
        {"0", 0}, {"1", 1}, {"4096", 4096}, {"1K", 1024}, {"1k", 1024}, {"2M", 2u << 20},
        {"2m", 2u << 20}, {"3G", (size_t)3 << 30}, {"1T", (size_t)1 << 40}, {"1.5K", 1536},
        {"0.5M", 512u << 10}, {"4KB", 4096}, {"4kb", 4096}, {"7B", 7}, {"256M", 256u << 20},
        {"16G", (size_t)16 << 30}, {"1e3", 1000},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        size_t v = 12345;
        CHECK(duet_parse_size(good[i].text, &v) == 0, "\"%s\" refused", good[i].text);
        CHECK(v == good[i].want, "\"%s\" -> %zu, want %zu", good[i].text, v, good[i].want);
    }
    static const char *const bad[] = {"", "abc", "K", "-1", "-0.5K", "1X", "1 K", "1KK", "1KBB", "1BK",
                                      "1e30", "20000000000G", "18446744073709551616", "inf", "nan",
                                      "NaN", "-nan", "1M extra"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t v = 12345;
        EXPECT(duet_parse_size(bad[i], &v) != 0, "\"%s\" accepted as %zu", bad[i], v);
    }
}

static void test_parse_secs(void)
{
    static const struct {
        const char *text;
        double want;
    } good[] = {{"0", 0}, {"30", 30}, {"2.5", 2.5}, {"1e-3", 1e-3}, {"300", 300}, {"0.25", 0.25}};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        double v = -1;
        CHECK(duet_parse_secs(good[i].text, &v) == 0, "\"%s\" refused", good[i].text);
        CHECK(v == good[i].want, "\"%s\" -> %g, want %g", good[i].text, v, good[i].want);
    }
    static const char *const bad[] = {"", "abc", "-1", "-0.5", "5s", "1 ", "inf", "-inf", "nan", "1e999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        double v = -1;
        EXPECT(duet_parse_secs(bad[i], &v) != 0, "\"%s\" accepted as %g", bad[i], v);
    }
}

/* ---- the first duet_cfg() call, from several threads, with stderr captured */
static pthread_barrier_t start;
static void *first_call(void *arg)
{
    pthread_barrier_wait(&start);
    *(const duet_cfg_t **)arg = duet_cfg();
    return NULL;
}

static char *captured_first_calls(const duet_cfg_t **cfg)
{
    char path[] = "/tmp/duet-test-config.XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp");
    fflush(stderr);
    int saved = dup(2);
    CHECK(saved >= 0 && dup2(fd, 2) == 2, "dup2");
    enum { T = 4 };
    pthread_t th[T];
    const duet_cfg_t *got[T];
    pthread_barrier_init(&start, NULL, T);
    for (int i = 0; i < T; i++) pthread_create(&th[i], NULL, first_call, &got[i]);
    for (int i = 0; i < T; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&start);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    for (int i = 1; i < T; i++) CHECK(got[i] == got[0], "threads got different settings");
    *cfg = got[0];
    static char text[8192];
    ssize_t n = pread(fd, text, sizeof text - 1, 0);
    text[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(path);
    return text;
}

static int occurrences(const char *text, const char *word)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, word)); p += strlen(word)) n++;
    return n;
}

static void test_environment(void)
{
    for (size_t i = 0; i < NROWS; i++) unsetenv(table_names[i]); /* whatever ran us set */
    setenv("DUET_SYMMETRIC_SIZE", "3M", 1);
    setenv("DUET_BOOTSTRAP_TIMEOUT", "not-a-number", 1);
    setenv("DUET_WAIT_TIMEOUT", "2.5", 1);
    setenv("DUET_WAIT_SPIN_US", "-4", 1);
    setenv("DUET_RANK", "7", 1);
    setenv("DUET_NRANKS", "12abc", 1);
    setenv("DUET_JOB_SECRET", "00112233445566778899aabbccddeeff", 1);
    /* NCCL's variables as aliases: where the DUET_* one is unset they give its value */
    static const char *const nccl[] = {"NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE", "NCCL_ALGO", "NCCL_PROTO"};
    for (size_t i = 0; i < sizeof nccl / sizeof nccl[0]; i++) unsetenv(nccl[i]);
    setenv("NCCL_ALGO", "Ring", 1);
    setenv("NCCL_DEBUG_SUBSYS", "P2P,BOOTSTRAP,NVLS", 1);
    setenv("NCCL_DEBUG", "nonsense", 1);          /* no counterpart: a note, DUET_DEBUG keeps its default */
    setenv("NCCL_DEBUG_FILE", "/tmp/nccl.%h", 1); /* DUET_DEBUG_FILE is set (empty): it wins */
    setenv("DUET_DEBUG_FILE", "", 1);

    const duet_cfg_t *cfg;
    const char *err = captured_first_calls(&cfg);
    CHECK(cfg->symmetric_size == 3145728, "DUET_SYMMETRIC_SIZE=3M -> %zu", cfg->symmetric_size);
    CHECK(cfg->bootstrap_timeout == 30, "invalid DUET_BOOTSTRAP_TIMEOUT -> %g, want the default 30",
          cfg->bootstrap_timeout);
    CHECK(cfg->wait_timeout == 2.5, "DUET_WAIT_TIMEOUT=2.5 -> %g", cfg->wait_timeout);
    CHECK(cfg->wait_spin_us == 20, "invalid DUET_WAIT_SPIN_US -> %g", cfg->wait_spin_us);
    CHECK(cfg->rank == 7 && cfg->nranks == 0, "DUET_RANK %ld, DUET_NRANKS %ld", cfg->rank, cfg->nranks);
    CHECK(!strcmp(cfg->job_secret, "00112233445566778899aabbccddeeff"), "job secret \"%s\"", cfg->job_secret);
    CHECK(!strcmp(cfg->debug, "WARN") && !strcmp(cfg->boot_addr, "") && cfg->boot_listen_fd == -1,
          "defaults of unset variables");
    /* one warning per invalid variable, naming it and its text, though 4 threads asked */
    CHECK(occurrences(err, "DUET_BOOTSTRAP_TIMEOUT") == 1 && strstr(err, "not-a-number"),
          "warnings for DUET_BOOTSTRAP_TIMEOUT: \"%s\"", err);
    CHECK(occurrences(err, "DUET_WAIT_SPIN_US") == 1 && occurrences(err, "DUET_NRANKS") == 1,
          "warnings: \"%s\"", err);
    CHECK(!strstr(err, "DUET_SYMMETRIC_SIZE") && !strstr(err, "DUET_WAIT_TIMEOUT="), "warned about a valid value: \"%s\"", err);

    CHECK(!strcmp(cfg->algo, "allreduce:ring,allgather:ring,reducescatter:ring,broadcast:chain,reduce:chain"),
          "NCCL_ALGO=Ring -> DUET_ALGO \"%s\"", cfg->algo);
    CHECK(!strcmp(cfg->debug_subsys, "COLL,BOOT"), "NCCL_DEBUG_SUBSYS=P2P,BOOTSTRAP,NVLS -> \"%s\"", cfg->debug_subsys);
    CHECK(!strcmp(cfg->debug_file, ""), "DUET_DEBUG_FILE set (empty) must win over NCCL_DEBUG_FILE: \"%s\"",
          cfg->debug_file);
    CHECK(duet_cfg_is_set("DUET_ALGO") && !duet_cfg_is_set("DUET_DEBUG"), "aliased rows count as set, others not");
    CHECK(strstr(duet_cfg_alias_notes(), "NCCL_DEBUG=nonsense"), "notes: \"%s\"", duet_cfg_alias_notes());
    CHECK(!strstr(err, "NCCL"), "an alias warned: \"%s\"", err);
    CHECK(duet_foreign(NCCL_ALGO) && !strcmp(duet_foreign(NCCL_ALGO), "Ring"), "duet_foreign(NCCL_ALGO)");
    CHECK(getenv("DUET_ALGO") == NULL, "an alias was written into the environment");

    /* read once: later changes to the environment are not seen */
    setenv("DUET_SYMMETRIC_SIZE", "5M", 1);
    setenv("NCCL_ALGO", "Tree", 1);
    CHECK(duet_cfg() == cfg && duet_cfg()->symmetric_size == 3145728, "the table was read again");
    CHECK(!strcmp(duet_foreign(NCCL_ALGO), "Ring"), "a foreign variable was read again");
}

/* The translators, case by case: NCCL's text -> Duet's (NULL: no counterpart, a note). */
static void test_aliases(void)
{
    static const struct {
        int (*fn)(const char *, char *, size_t, char *, size_t);
        const char *in, *want, *note;
    } cases[] = {
        {duet_alias_nccl_debug, "VERSION", "WARN", NULL},
        {duet_alias_nccl_debug, "warn", "WARN", NULL},
        {duet_alias_nccl_debug, "ABORT", "WARN", NULL},
        {duet_alias_nccl_debug, "INFO", "INFO", NULL},
        {duet_alias_nccl_debug, "trace", "TRACE", NULL},
        {duet_alias_nccl_debug, "LOUD", NULL, "NCCL_DEBUG=LOUD"},
        {duet_alias_nccl_subsys, "INIT,COLL", "INIT,COLL", NULL},
        {duet_alias_nccl_subsys, "^INIT,TUNING", "^INIT,TUNE", NULL},
        {duet_alias_nccl_subsys, "P2P,COLL,ALLOC,ENV", "COLL,HEAP,INIT", NULL},
        {duet_alias_nccl_subsys, "NET,GRAPH", NULL, "NCCL_DEBUG_SUBSYS=NET,GRAPH"},
        {duet_alias_nccl_algo, "Tree", "allreduce:dbtree", NULL},
        {duet_alias_nccl_algo, "Tree,Ring",
         "allreduce:dbtree,allgather:ring,reducescatter:ring,broadcast:chain,reduce:chain", NULL},
        {duet_alias_nccl_algo, "allreduce:tree;broadcast:ring", "allreduce:dbtree,broadcast:chain", NULL},
        {duet_alias_nccl_algo, "Ring,NVLS", "allreduce:ring,allgather:ring,reducescatter:ring,broadcast:chain,"
                                            "reduce:chain", "\"NVLS\" has no Duet counterpart"},
        {duet_alias_nccl_algo, "^NVLS", NULL, "exclusions"},
        {duet_alias_nccl_algo, "CollNet", NULL, "\"CollNet\""},
        {duet_alias_same, "/tmp/log.%p", "/tmp/log.%p", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[256] = "", note[512] = "";
        int ok = cases[i].fn(cases[i].in, out, sizeof out, note, sizeof note);
        if (cases[i].want)
            CHECK(ok && !strcmp(out, cases[i].want), "\"%s\" -> %d \"%s\", want \"%s\"", cases[i].in, ok, out,
                  cases[i].want);
        else
            CHECK(!ok, "\"%s\" -> \"%s\", want no counterpart", cases[i].in, out);
        if (cases[i].note) CHECK(strstr(note, cases[i].note), "\"%s\": note \"%s\"", cases[i].in, note);
        else CHECK(!note[0], "\"%s\": unexpected note \"%s\"", cases[i].in, note);
    }
}

static void test_rows(void)
{
    CHECK(duet_cfg_rows() == NROWS, "%zu rows, the table has %zu", duet_cfg_rows(), NROWS);
    static const char *const set_names[] = {"DUET_SYMMETRIC_SIZE", "DUET_BOOTSTRAP_TIMEOUT", "DUET_WAIT_TIMEOUT",
                                            "DUET_WAIT_SPIN_US", "DUET_RANK", "DUET_NRANKS", "DUET_JOB_SECRET",
                                            "DUET_DEBUG_FILE", "DUET_ALGO", "DUET_DEBUG_SUBSYS"}; /* the last two: aliases */
    for (size_t i = 0; i < duet_cfg_rows(); i++) {
        duet_cfg_row_t row;
        memset(&row, 0x55, sizeof row);
        duet_cfg_row(i, &row);
        CHECK(row.name && !strncmp(row.name, "DUET_", 5) && strlen(row.name) > 5, "row %zu name", i);
        CHECK(!strcmp(row.name, table_names[i]), "row %zu is %s, table says %s", i, row.name, table_names[i]);
        for (size_t j = 0; j < i; j++) CHECK(strcmp(table_names[j], row.name), "%s twice", row.name);
        CHECK(row.help && strlen(row.help) >= 10, "%s: help \"%s\"", row.name, row.help ? row.help : "");
        CHECK(row.defval && row.type, "%s: no default or type", row.name);
        CHECK(memchr(row.value, '\0', sizeof row.value), "%s: value not terminated", row.name);
        size_t sz, vsz;
        double secs, vsecs;
        char *end;
        if (!strcmp(row.type, "NUM")) { /* a plain number (double) */
            secs = strtod(row.defval, &end);
            CHECK(row.defval[0] && !*end, "%s: default \"%s\" is not a number", row.name, row.defval);
            vsecs = strtod(row.value, &end);
            CHECK(row.value[0] && !*end, "%s: value \"%s\"", row.name, row.value);
        } else if (!strcmp(row.type, "SIZE")) {
            CHECK(duet_parse_size(row.defval, &sz) == 0, "%s: default \"%s\" is not a size", row.name, row.defval);
            CHECK(duet_parse_size(row.value, &vsz) == 0, "%s: value \"%s\"", row.name, row.value);
        } else if (!strcmp(row.type, "SECS")) {
            CHECK(duet_parse_secs(row.defval, &secs) == 0, "%s: default \"%s\" is not seconds", row.name, row.defval);
            CHECK(duet_parse_secs(row.value, &vsecs) == 0, "%s: value \"%s\"", row.name, row.value);
        } else if (!strcmp(row.type, "INT")) {
            strtol(row.defval, &end, 10);
            CHECK(row.defval[0] && !*end, "%s: default \"%s\" is not an integer", row.name, row.defval);
        } else {
            CHECK(!strcmp(row.type, "STR"), "%s: type \"%s\"", row.name, row.type);
        }
        int expect_set = 0;
        for (size_t j = 0; j < sizeof set_names / sizeof set_names[0]; j++) expect_set |= !strcmp(set_names[j], row.name);
        CHECK(row.is_set == expect_set, "%s: is_set %d", row.name, row.is_set);
        /* an unset row shows its default, in the value's own format */
        if (!expect_set && !strcmp(row.type, "SIZE")) CHECK(sz == vsz, "%s: %s vs default %s", row.name, row.value, row.defval);
        if (!expect_set && (!strcmp(row.type, "SECS") || !strcmp(row.type, "NUM"))) CHECK(secs == vsecs, "%s: %s vs default %s", row.name, row.value, row.defval);
        if (!expect_set && !strcmp(row.type, "INT")) CHECK(!strcmp(row.value, row.defval), "%s: %s vs %s", row.name, row.value, row.defval);
        if (!expect_set && !strcmp(row.type, "STR")) CHECK(!strcmp(row.value, row.defval), "%s: %s vs %s", row.name, row.value, row.defval);
        if (!strcmp(row.name, "DUET_SYMMETRIC_SIZE")) CHECK(!strcmp(row.value, "3145728"), "value %s", row.value);
        if (!strcmp(row.name, "DUET_BOOTSTRAP_TIMEOUT")) CHECK(!strcmp(row.value, "30"), "value %s", row.value);
        if (!strcmp(row.name, "DUET_WAIT_TIMEOUT")) CHECK(!strcmp(row.value, "2.5"), "value %s", row.value);
        if (!strcmp(row.name, "DUET_RANK")) CHECK(!strcmp(row.value, "7"), "value %s", row.value);
        if (!strcmp(row.name, "DUET_NRANKS")) CHECK(!strcmp(row.value, "0"), "value %s", row.value);
    }
    /* the foreign rows: unique names, a help text each; unset ones read as NULL */
    for (size_t i = 0; i < DUET_FOREIGN_COUNT; i++) {
        const char *name, *help, *value;
        duet_foreign_row(i, &name, &help, &value);
        CHECK(name && name[0] && help && help[0], "foreign row %zu", i);
        for (size_t j = 0; j < i; j++) {
            const char *n2, *h2, *v2;
            duet_foreign_row(j, &n2, &h2, &v2);
            CHECK(strcmp(name, n2) != 0, "foreign row %s twice", name);
        }
        if (!strcmp(name, "NCCL_PROTO")) CHECK(value == NULL, "NCCL_PROTO reads \"%s\"", value);
    }
}

int main(void)
{
    test_parse_size();
    test_parse_secs();
    test_environment(); /* must make the first duet_cfg() call of the process */
    test_rows();
    test_aliases();
    printf("test_config: %s\n", dt_failures() ? "FAILED" : "passed");
    return dt_finish();
}
