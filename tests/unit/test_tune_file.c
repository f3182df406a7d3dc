/*
 * test_tune_file.c — the tune files keep what was measured only for the runs it is valid for
 * (src/coll/duet_coll_tune_file.c).
 *
 * Covers:
 *   - this run's key names the CPU model, the cores, Duet's version and the layout;
 *   - a line measured on another CPU model, with another core count, by another Duet version
 *     or for another layout (ranks or hosts) is not used; neither is an older Duet's
 *     "alpha_us 0.3 beta_gbps 6" line nor one with a value that is not a positive number;
 *   - a line without key fields (written by hand) is used on any machine, and a reader
 *     without a layout (duet-sim) takes the first line of this machine and version;
 *   - writing keeps the other keys' lines and replaces this key's: two layouts written and
 *     one written again leave two lines, each read back with its own numbers;
 *   - another kind of link ("gpu") has its own file;
 *   - fitted terms are read only by a model that costs calls as they were fitted: one of a
 *     stream (stream=1, the GPU executor's) or each alone.
 * Runs in one process; its tune files live in a directory of its own (DUET_TUNE_FILE).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "duet_test.h"
#include "coll/duet_coll_tune.h"

static char file[512];

static void write_file(const char *text)
{
    FILE *f = fopen(file, "w");
    CHECK(f, "cannot write %s", file);
    fputs(text, f);
    fclose(f);
}

/* The key for layout with field `name` set to `value` instead (NULL: as it is). */
static void key_with(const duet_coll_layout_t *lay, const char *name, const char *value, char *out, size_t len)
{
    char key[320];
    duet_coll_tune_key(lay, key, sizeof key);
    if (!name) {
        snprintf(out, len, "%s", key);
        return;
    }
    out[0] = '\0';
    for (char *save = NULL, *tok = strtok_r(key, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        size_t n = strlen(name);
        int hit = strncmp(tok, name, n) == 0 && tok[n] == '=';
        snprintf(out + strlen(out), len - strlen(out), "%s%s%s%s", out[0] ? " " : "", hit ? name : tok,
                 hit ? "=" : "", hit ? value : "");
    }
}

/* Reads kind's file for layout: -1, or 0 with the pair in *m. */
static int read_back(const char *kind, const duet_coll_layout_t *lay, duet_coll_model_t *m)
{
    char path[512];
    *m = (duet_coll_model_t){.alpha_us = 0, .beta_gbps = 0};
    return duet_coll_tune_file_read(kind, lay, m, path, sizeof path);
}

static int lines_of(const char *path)
{
    FILE *f = fopen(path, "r");
    int n = 0;
    char line[600];
    while (f && fgets(line, sizeof line, f)) n += line[0] != '#';
    if (f) fclose(f);
    return n;
}

int main(void)
{
    char dir[] = "/tmp/duet-tune-file-XXXXXX";
    CHECK(mkdtemp(dir), "mkdtemp failed");
    snprintf(file, sizeof file, "%s/tune.txt", dir);
    setenv("DUET_TUNE_FILE", file, 1); /* before the settings are first read */
    dt_set_rank(0, 1);

    duet_coll_layout_t two = {2, 1}, four = {4, 1}, two_hosts = {2, 2};
    char key[320], line[800], text[4000];
    duet_coll_tune_key(&two, key, sizeof key);
    char version[32];
    snprintf(version, sizeof version, "duet=%d.%d.%d", DUET_VERSION_MAJOR, DUET_VERSION_MINOR, DUET_VERSION_PATCH);
    EXPECT(strstr(key, "cpu=") && strstr(key, "cores=") && strstr(key, version) && strstr(key, "ranks=2") &&
               strstr(key, "hosts=1") && !strchr(strstr(key, "cpu=") + 4, '\t'),
           "the key: %s", key);
    duet_coll_model_t m;

    /* lines from elsewhere: none is used */
    struct {
        const char *field, *value, *what;
    } other[] = {{"cpu", "Some_Other_CPU", "another CPU model"},
                 {"cores", "977", "another core count"},
                 {"duet", "0.0.1", "another Duet version"},
                 {"ranks", "4", "another layout (ranks)"},
                 {"hosts", "2", "another layout (hosts)"}};
    for (size_t i = 0; i < DUET_ARRAY_LEN(other); i++) {
        key_with(&two, other[i].field, other[i].value, line, sizeof line);
        snprintf(text, sizeof text, "# a comment\n%s alpha_us=0.7 beta_gbps=3\n", line);
        write_file(text);
        EXPECT(read_back("", &two, &m) == -1, "a line of %s was used: %s", other[i].what, line);
    }
    write_file("alpha_us 0.3 beta_gbps 6\n");
    EXPECT(read_back("", &two, &m) == -1, "an older Duet's line was used");
    snprintf(text, sizeof text, "%s alpha_us=-1 beta_gbps=3\n%s alpha_us=0.5 beta_gbps=x\n%s beta_gbps=3\n", key, key,
             key);
    write_file(text);
    EXPECT(read_back("", &two, &m) == -1, "a line without a positive alpha and beta was used");

    /* by hand: any machine; this machine's line after others' */
    write_file("alpha_us=0.3 beta_gbps=6\n");
    EXPECT(read_back("", &two, &m) == 0 && m.alpha_us == 0.3 && m.beta_gbps == 6, "a line without a key: %g %g",
           m.alpha_us, m.beta_gbps);
    key_with(&two, "cpu", "Some_Other_CPU", line, sizeof line);
    snprintf(text, sizeof text, "%s alpha_us=0.7 beta_gbps=3\n%s alpha_us=0.25 beta_gbps=5.5\n", line, key);
    write_file(text);
    EXPECT(read_back("", &two, &m) == 0 && m.alpha_us == 0.25 && m.beta_gbps == 5.5,
           "this machine's line after another's: %g %g", m.alpha_us, m.beta_gbps);
    EXPECT(read_back("", NULL, &m) == 0 && m.alpha_us == 0.25, "without a layout: %g", m.alpha_us);
    EXPECT(read_back("", &four, &m) == -1, "four ranks took two ranks' line");
    EXPECT(read_back("", &two_hosts, &m) == -1, "two hosts took one host's line");

    /* writing: other keys kept, this key replaced */
    unlink(file);
    duet_coll_tune_file_write("", &two, &(duet_coll_model_t){.alpha_us = 0.11, .beta_gbps = 4.5});
    duet_coll_tune_file_write("", &four, &(duet_coll_model_t){.alpha_us = 0.9, .beta_gbps = 2.5});
    duet_coll_tune_file_write("", &two, &(duet_coll_model_t){.alpha_us = 0.12, .beta_gbps = 4.25});
    EXPECT(lines_of(file) == 2, "two layouts written, one twice: %d lines", lines_of(file));
    EXPECT(read_back("", &two, &m) == 0 && m.alpha_us == 0.12 && m.beta_gbps == 4.25, "two ranks read back %g %g",
           m.alpha_us, m.beta_gbps);
    EXPECT(read_back("", &four, &m) == 0 && m.alpha_us == 0.9 && m.beta_gbps == 2.5, "four ranks read back %g %g",
           m.alpha_us, m.beta_gbps);
    EXPECT(read_back("", &two_hosts, &m) == -1, "two hosts read a line");

    /* another kind of link: its own file */
    EXPECT(read_back("gpu", &two, &m) == -1, "the gpu file exists before it was written");
    duet_coll_tune_file_write("gpu", &two, &(duet_coll_model_t){.alpha_us = 3.5, .beta_gbps = 20});
    EXPECT(read_back("gpu", &two, &m) == 0 && m.alpha_us == 3.5, "gpu read back %g", m.alpha_us);
    EXPECT(read_back("", &two, &m) == 0 && m.alpha_us == 0.12, "the shm file changed with the gpu one: %g",
           m.alpha_us);

    /* fitted terms: used only by a reader that costs calls the way they were fitted (one of a
     * stream, stream=1: the GPU executor's; or each call alone) */
    duet_coll_model_t fitted = {.alpha_us = 2, .beta_gbps = 100, .step_us = 3.5, .fit_err = 0.1, .stream = 1};
    duet_coll_tune_file_write("gpu", &four, &fitted);
    m = (duet_coll_model_t){.stream = 1};
    EXPECT(duet_coll_tune_file_read("gpu", &four, &m, line, sizeof line) == 0 && m.step_us == 3.5 && m.fit_err == 0.1,
           "a stream fit read by a stream model: step %g us", m.step_us);
    m = (duet_coll_model_t){.stream = 0};
    EXPECT(duet_coll_tune_file_read("gpu", &four, &m, line, sizeof line) == 0 && m.alpha_us == 2 && m.step_us == 0 &&
               m.fit_err == 0,
           "a stream fit read by a model of calls alone: step %g us (the pair alone is kept)", m.step_us);
    fitted.stream = 0;
    duet_coll_tune_file_write("gpu", &four, &fitted);
    m = (duet_coll_model_t){.stream = 1};
    EXPECT(duet_coll_tune_file_read("gpu", &four, &m, line, sizeof line) == 0 && m.step_us == 0 && m.alpha_us == 2,
           "a fit of calls alone read by a stream model: step %g us", m.step_us);

    char gpu[600];
    snprintf(gpu, sizeof gpu, "%s-gpu", file);
    unlink(gpu);
    unlink(file);
    rmdir(dir);
    return dt_finish();
}
