/*
 * test_sn_options.c — the SN_* option table: defaults, every accepted form,
 * malformed values (one problem each, default kept), the one grammar every
 * value follows (exact words, decimal digits), size parsing, the checks of
 * output paths made when libsn loads, the help text, and logging: the cap,
 * the prefix and the escaping that keeps every message on one line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/test_capture.h"

#include "common/sn_log.h"
#include "common/sn_options.h"

typedef struct env_pair {
    const char *name, *value;
} env_pair;

static const char *lookup(const char *name, void *ctx)
{
    for (const env_pair *p = ctx; p && p->name; p++)
        if (strcmp(p->name, name) == 0)
            return p->value;
    return NULL;
}

static void test_defaults(void **state)
{
    (void)state;
    sn_options o;
    sn_option_problem probs[16];
    assert_int_equal(sn_options_parse(&o, lookup, NULL, probs, 16), 0);
    assert_int_equal(o.mode, SN_MODE_MANAGE);
    assert_int_equal(o.budget.kind, SN_SIZE_FREE);
    assert_int_equal(o.policy, SN_POLICY_AUTO);
    assert_int_equal(o.workspace, SN_WORKSPACE_AUTO);
    assert_int_equal(o.profile_iters, 2);
    assert_int_equal(o.report.kind, SN_OUT_AUTO);
    assert_int_equal(o.trace.kind, SN_OUT_OFF);
    assert_int_equal(o.plot.kind, SN_OUT_OFF);
    assert_int_equal(o.log, SN_LOG_WARN);
    assert_int_equal(o.strict, 0);
    assert_int_equal(o.help, 0);
}

static void test_valid_values(void **state)
{
    (void)state;
    env_pair env[] = {{"SN_MODE", "trace"},         {"SN_BUDGET", "1.5G"},
                      {"SN_POLICY", "vdnn-conv"},   {"SN_WORKSPACE", "min"},
                      {"SN_PROFILE_ITERS", "5"},    {"SN_REPORT", "/tmp/r.json"},
                      {"SN_TRACE", "t.json"},       {"SN_PLOT", "off"},
                      {"SN_LOG", "debug"},          {"SN_STRICT", "1"},
                      {"SN_HELP", "0"},             {NULL, NULL}};
    sn_options o;
    sn_option_problem probs[16];
    assert_int_equal(sn_options_parse(&o, lookup, env, probs, 16), 0);
    assert_int_equal(o.mode, SN_MODE_TRACE);
    assert_int_equal(o.budget.kind, SN_SIZE_BYTES);
    assert_true(o.budget.bytes == (uint64_t)(1.5 * 1024 * 1024 * 1024));
    assert_int_equal(o.policy, SN_POLICY_VDNN_CONV);
    assert_int_equal(o.workspace, SN_WORKSPACE_MIN);
    assert_int_equal(o.profile_iters, 5);
    assert_int_equal(o.report.kind, SN_OUT_PATH);
    assert_string_equal(o.report.path, "/tmp/r.json");
    assert_int_equal(o.trace.kind, SN_OUT_PATH);
    assert_int_equal(o.plot.kind, SN_OUT_OFF);
    assert_int_equal(o.log, SN_LOG_DEBUG);
    assert_int_equal(o.strict, 1);
    assert_string_equal(sn_option_choice("SN_POLICY", o.policy), "vdnn-conv");
    assert_null(sn_option_choice("SN_POLICY", 99));
}

static void test_malformed_values(void **state)
{
    (void)state;
    env_pair env[] = {{"SN_MODE", "tracing"},     {"SN_BUDGET", "12Q"},
                      {"SN_PROFILE_ITERS", "0"},  {"SN_LOG", ""},
                      {"SN_STRICT", "maybe"},     {"SN_TRACE", "stderr"},
                      {NULL, NULL}};
    sn_options o;
    sn_option_problem probs[16];
    int bad = sn_options_parse(&o, lookup, env, probs, 16);
    /* SN_LOG="" counts as unset, not as malformed. */
    assert_int_equal(bad, 5);
    assert_string_equal(probs[0].variable, "SN_MODE");
    assert_string_equal(probs[0].value, "tracing");
    assert_string_equal(probs[0].default_text, "manage");
    assert_non_null(strstr(probs[0].accepted, "trace"));
    assert_int_equal(o.mode, SN_MODE_MANAGE);
    assert_int_equal(o.budget.kind, SN_SIZE_FREE);
    assert_int_equal(o.profile_iters, 2);
    assert_int_equal(o.log, SN_LOG_WARN);
    assert_int_equal(o.strict, 0);
    assert_int_equal(o.trace.kind, SN_OUT_OFF);
}

static void test_sizes(void **state)
{
    (void)state;
    sn_size_opt s;
    assert_int_equal(sn_parse_size("512M", &s), 0);
    assert_true(s.kind == SN_SIZE_BYTES && s.bytes == 512ull << 20);
    assert_int_equal(sn_parse_size("12GiB", &s), 0);
    assert_true(s.bytes == 12ull << 30);
    assert_int_equal(sn_parse_size("4096", &s), 0);
    assert_true(s.bytes == 4096);
    assert_int_equal(sn_parse_size("80%", &s), 0);
    assert_true(s.kind == SN_SIZE_PERCENT && s.percent == 80.0);
    assert_int_equal(sn_parse_size("free", &s), 0);
    assert_int_equal(s.kind, SN_SIZE_FREE);
    assert_int_equal(sn_parse_size("1.5K", &s), 0);
    assert_true(s.bytes == 1536);
    assert_int_equal(sn_parse_size("0.1K", &s), 0); /* 102.4, rounded down */
    assert_true(s.bytes == 102);
    assert_int_equal(sn_parse_size("2T", &s), 0);
    assert_true(s.bytes == 2ull << 40);
    assert_int_equal(sn_parse_size("100%", &s), 0);
    assert_true(s.kind == SN_SIZE_PERCENT && s.percent == 100.0);
    assert_int_equal(sn_parse_size("18446744073709551615", &s), 0);
    assert_true(s.bytes == UINT64_MAX);
    const char *bad[] = {"", "-1G", "0", "101%", "0%", "G", "1GG", "nan", "1e400", "12 G", "abc",
                         /* leniencies of strtod that the grammar has no room for */
                         "0x10", "0X10", "1e3", "inf", " 16", "16 ", "+16", "\t16", "16\n",
                         /* case, decimal units, fractions of bytes or percent */
                         "12g", "12GB", "12Gb", "12gib", "FREE", "Free", "1.5", ".5G", "1.G", "12.5%", "50 %",
                         /* overflow */
                         "18446744073709551616", "16777216T", "17179869184G", "1.0000000000000001G"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (sn_parse_size(bad[i], &s) == 0)
            fail_msg("SN_BUDGET=\"%s\" was accepted", bad[i]);
}

/* One grammar for every type: exact words, decimal digits, no white space. */
static void test_grammar(void **state)
{
    (void)state;
    static const struct {
        const char *variable, *value;
        int valid;
    } cases[] = {
        {"SN_PROFILE_ITERS", "3", 1},    {"SN_PROFILE_ITERS", "0003", 1}, {"SN_PROFILE_ITERS", "1000", 1},
        {"SN_PROFILE_ITERS", " 3", 0},   {"SN_PROFILE_ITERS", "3 ", 0},   {"SN_PROFILE_ITERS", "+3", 0},
        {"SN_PROFILE_ITERS", "-3", 0},   {"SN_PROFILE_ITERS", "0x3", 0},  {"SN_PROFILE_ITERS", "3e0", 0},
        {"SN_PROFILE_ITERS", "3.0", 0},  {"SN_PROFILE_ITERS", "1001", 0}, {"SN_PROFILE_ITERS", "0", 0},
        {"SN_PROFILE_ITERS", "99999999999999999999999", 0},
        {"SN_MODE", "trace", 1},         {"SN_MODE", " trace", 0},        {"SN_MODE", "trace ", 0},
        {"SN_MODE", "TRACE", 0},         {"SN_MODE", "Trace", 0},         {"SN_MODE", "tr", 0},
        {"SN_POLICY", "vdnn-conv", 1},   {"SN_POLICY", "VDNN-CONV", 0},   {"SN_LOG", "WARN", 0},
        {"SN_STRICT", "1", 1},           {"SN_STRICT", "0", 1},           {"SN_STRICT", "yes", 0},
        {"SN_STRICT", "true", 0},        {"SN_STRICT", "on", 0},          {"SN_STRICT", "01", 0},
        {"SN_STRICT", " 1", 0},          {"SN_HELP", "no", 0},
        {"SN_BUDGET", "0x10", 0},        {"SN_BUDGET", "16", 1},          {"SN_BUDGET", "80%", 1},
        {"SN_REPORT", "auto", 1},        {"SN_REPORT", "stderr", 1},      {"SN_REPORT", "off", 1},
        {"SN_REPORT", "r.txt", 1},       {"SN_REPORT", "my report.txt", 1},
        {"SN_REPORT", " r.txt", 0},      {"SN_REPORT", "r.txt ", 0},      {"SN_REPORT", "STDERR", 0},
        {"SN_REPORT", "Off", 0},         {"SN_REPORT", "a\nb", 0},        {"SN_REPORT", "a\x1b[31m", 0},
        {"SN_REPORT", "a\x7f", 0},
        {"SN_TRACE", "t.json", 1},       {"SN_TRACE", "off", 1},          {"SN_TRACE", "stderr", 0},
        {"SN_TRACE", "OFF", 0},          {"SN_PLOT", "\tp.svg", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        env_pair env[] = {{cases[i].variable, cases[i].value}, {NULL, NULL}};
        sn_options o;
        sn_option_problem probs[4];
        int bad = sn_options_parse(&o, lookup, env, probs, 4);
        if (bad != !cases[i].valid)
            fail_msg("%s=\"%s\" should be %s", cases[i].variable, cases[i].value,
                     cases[i].valid ? "accepted" : "refused");
    }
    /* accepted values mean what they say */
    env_pair env[] = {{"SN_PROFILE_ITERS", "0003"}, {"SN_BUDGET", "16"}, {NULL, NULL}};
    sn_options o;
    sn_option_problem probs[4];
    assert_int_equal(sn_options_parse(&o, lookup, env, probs, 4), 0);
    assert_int_equal(o.profile_iters, 3);
    assert_true(o.budget.kind == SN_SIZE_BYTES && o.budget.bytes == 16);
}

static void print_help(void *ctx)
{
    (void)ctx;
    sn_options_print_help();
}

static void test_help(void **state)
{
    (void)state;
    static char buf[16384];
    capture_stderr(print_help, NULL, buf, sizeof buf);
    const char *names[] = {"SN_MODE",  "SN_BUDGET", "SN_POLICY", "SN_WORKSPACE",
                           "SN_PROFILE_ITERS", "SN_REPORT", "SN_TRACE", "SN_PLOT",
                           "SN_LOG",   "SN_STRICT", "SN_HELP"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        assert_non_null(strstr(buf, names[i]));
    for (char *line = buf; *line; line = strchr(line, '\n') + 1) {
        assert_int_equal(strncmp(line, "libsn: ", 7), 0);
        if (!strchr(line, '\n'))
            break;
    }
}

static void many_warnings(void *ctx)
{
    (void)ctx;
    sn_log_reset_cap();
    for (int i = 0; i < SN_LOG_WARN_CAP + 10; i++)
        sn_warn("warning %d", i);
}

static void test_log_cap(void **state)
{
    (void)state;
    static char buf[65536];
    sn_log_level = SN_LOG_WARN;
    capture_stderr(many_warnings, NULL, buf, sizeof buf);
    int lines = 0;
    for (char *p = buf; (p = strchr(p, '\n')); p++)
        lines++;
    assert_int_equal(lines, SN_LOG_WARN_CAP + 1);
    assert_non_null(strstr(buf, "libsn: warning 0\n"));
    assert_null(strstr(buf, "warning 64"));
    assert_non_null(strstr(buf, "further ones are not shown"));
    assert_int_equal(sn_log_suppressed(), 10);
}

static void quiet_debug(void *ctx)
{
    (void)ctx;
    sn_log_level = SN_LOG_WARN;
    sn_debug("not shown");
    sn_info("not shown either");
    sn_error("shown %d", 1);
}

static void test_log_levels(void **state)
{
    (void)state;
    char buf[1024];
    capture_stderr(quiet_debug, NULL, buf, sizeof buf);
    assert_string_equal(buf, "libsn: error: shown 1\n");
}

/* A crafted value must not start a line of its own or reach the terminal
 * as an escape sequence: every message is one line, escaped. */
static void forged_messages(void *ctx)
{
    (void)ctx;
    sn_log_reset_cap();
    sn_log_level = SN_LOG_WARN;
    sn_warn("SN_MODE=%s is not valid", "x\nlibsn: forged\x1b[31m");
    sn_error("tab\there, cr\r, del\x7f, backslash\\, bell\a");
    sn_warn("utf-8 %s kept, invalid %s, C1 %s", "caf\xc3\xa9 \xe2\x82\xac", "\xff\xc3(", "\xc2\x9b" "1m");
    sn_warn("overlong %s, surrogate %s, truncated %s", "\xc0\xaf", "\xed\xa0\x80", "\xe2\x82");
}

static void test_log_escape(void **state)
{
    (void)state;
    char buf[4096];
    capture_stderr(forged_messages, NULL, buf, sizeof buf);
    assert_string_equal(buf, "libsn: SN_MODE=x\\nlibsn: forged\\x1b[31m is not valid\n"
                             "libsn: error: tab\\there, cr\\r, del\\x7f, backslash\\\\, bell\\x07\n"
                             "libsn: utf-8 caf\xc3\xa9 \xe2\x82\xac kept, invalid \\xff\\xc3(, C1 \\xc2\\x9b1m\n"
                             "libsn: overlong \\xc0\\xaf, surrogate \\xed\\xa0\\x80, truncated \\xe2\\x82\n");
    /* no room for half an escape or half a character */
    char out[8];
    assert_int_equal(sn_log_escape("abcd\n", 5, out, 6), 4);
    assert_string_equal(out, "abcd");
    assert_int_equal(sn_log_escape("abcd\n", 5, out, 7), 6);
    assert_string_equal(out, "abcd\\n");
    assert_int_equal(sn_log_escape("ab\xc3\xa9", 4, out, 4), 2);
    assert_string_equal(out, "ab");
    assert_int_equal(sn_log_escape("\x1b", 1, out, 4), 0);
    assert_string_equal(out, "");
}

/* Long messages are cut, still as one line with one newline. */
static void long_message(void *ctx)
{
    (void)ctx;
    static char big[3000];
    memset(big, '\n', sizeof big - 1);
    sn_log_reset_cap();
    sn_warn("%s", big);
}

static void test_log_escape_long(void **state)
{
    (void)state;
    static char buf[8192];
    size_t n = capture_stderr(long_message, NULL, buf, sizeof buf);
    assert_true(n > 100 && n < 2100);
    assert_int_equal(strncmp(buf, "libsn: \\n\\n", 11), 0);
    assert_ptr_equal(strchr(buf, '\n'), buf + n - 1);
    assert_int_equal(buf[n - 2], 'n'); /* a whole "\n" escape before the end */
    assert_int_equal(buf[n - 3], '\\');
}

/* ---- output paths, checked when libsn loads -------------------------------- */

static char test_dir[PATH_MAX];

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int check_outputs(const char *report, const char *trace, const char *plot, sn_options *o,
                         sn_option_problem *probs, int max)
{
    env_pair env[] = {{"SN_MODE", "trace"}, {"SN_REPORT", report}, {"SN_TRACE", trace}, {"SN_PLOT", plot},
                      {NULL, NULL}};
    assert_int_equal(sn_options_parse(o, lookup, env, probs, max), 0);
    return sn_options_check_outputs(o, probs, max);
}

static int setup_dir(void **state)
{
    (void)state;
    char tmpl[] = "/tmp/sn_paths.XXXXXX";
    if (!mkdtemp(tmpl) || !realpath(tmpl, test_dir) || chdir(test_dir) != 0)
        return -1;
    return mkdir("sub", 0777);
}

static int teardown_dir(void **state)
{
    (void)state;
    char cmd[2 * PATH_MAX + 64];
    if (chdir("/") != 0)
        return -1;
    snprintf(cmd, sizeof cmd, "chmod -R u+w '%s'; rm -rf '%s'", test_dir, test_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_paths_made_absolute(void **state)
{
    (void)state;
    sn_options o;
    sn_option_problem probs[8];
    assert_int_equal(check_outputs("r.json", "sub/../t.json", "sub/p.svg", &o, probs, 8), 0);
    char want[PATH_MAX + 16];
    snprintf(want, sizeof want, "%s/r.json", test_dir);
    assert_string_equal(o.report.path, want);
    snprintf(want, sizeof want, "%s/t.json", test_dir);
    assert_string_equal(o.trace.path, want);
    snprintf(want, sizeof want, "%s/sub/p.svg", test_dir);
    assert_string_equal(o.plot.path, want);
    assert_int_equal(o.report.kind, SN_OUT_PATH);
    /* an existing regular file is fine (it will be replaced) */
    write_text("old.txt", "old\n");
    assert_int_equal(check_outputs("old.txt", "off", "off", &o, probs, 8), 0);
    assert_int_equal(o.report.kind, SN_OUT_PATH);
    /* the words are not paths, and stderr needs no check */
    assert_int_equal(check_outputs("stderr", "off", "off", &o, probs, 8), 0);
    assert_int_equal(o.report.kind, SN_OUT_STDERR);
    /* the probe leaves nothing behind: only what the test made */
    assert_int_equal(system("test \"$(ls -A | tr '\\n' ' ')\" = 'old.txt sub '"), 0);
}

/* Each refused report path, and a word of why. */
static void test_paths_refused(void **state)
{
    (void)state;
    write_text("victim.txt", "keep\n");
    assert_int_equal(symlink("victim.txt", "link.txt"), 0);
    assert_int_equal(mkfifo("fifo", 0666), 0);
    write_text("plainfile", "x");
    static const struct {
        const char *path, *why;
    } cases[] = {
        {"/dev/stdout", "symbolic link"},     {"/proc/self/fd/1", "symbolic link"},
        {"link.txt", "symbolic link"},        {"/dev/null", "character device"},
        {"fifo", "FIFO"},                     {"sub", "a directory"},
        {"sub/", "names a directory"},        {"sub/..", "names a directory"},
        {"missing/r.txt", "does not exist"},  {"plainfile/r.txt", "not a directory"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sn_options o;
        sn_option_problem probs[8];
        int bad = check_outputs(cases[i].path, "off", "off", &o, probs, 8);
        if (bad != 1 || o.report.kind != SN_OUT_OFF || strcmp(probs[0].variable, "SN_REPORT") != 0 ||
            strcmp(probs[0].value, cases[i].path) != 0 || !strstr(probs[0].why, cases[i].why))
            fail_msg("SN_REPORT=%s: %d problems, kind %d, why \"%s\"", cases[i].path, bad, o.report.kind,
                     bad ? probs[0].why : "");
    }
    struct stat st;
    assert_int_equal(lstat("link.txt", &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_int_equal(lstat("fifo", &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
}

/* A directory no file can be created in: mode bits for an ordinary user;
 * root ignores them, so then a directory of /proc. */
static void test_paths_unwritable(void **state)
{
    (void)state;
    assert_int_equal(mkdir("ro", 0555), 0);
    assert_int_equal(chmod("ro", 0555), 0);
    const char *path = "ro/r.txt";
    int fd = open("ro/probe", O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd >= 0) { /* root */
        close(fd);
        unlink("ro/probe");
        path = "/proc/self/r.txt";
    }
    sn_options o;
    sn_option_problem probs[8];
    assert_int_equal(check_outputs("off", path, "off", &o, probs, 8), 1);
    assert_int_equal(o.trace.kind, SN_OUT_OFF);
    assert_string_equal(probs[0].variable, "SN_TRACE");
    assert_non_null(strstr(probs[0].why, "no file can be created in"));
}

/* The three outputs are three files; the first keeps one that is shared. */
static void test_paths_distinct(void **state)
{
    (void)state;
    sn_options o;
    sn_option_problem probs[8];
    assert_int_equal(check_outputs("same.txt", "./same.txt", "sub/../same.txt", &o, probs, 8), 2);
    assert_int_equal(o.report.kind, SN_OUT_PATH);
    assert_int_equal(o.trace.kind, SN_OUT_OFF);
    assert_int_equal(o.plot.kind, SN_OUT_OFF);
    assert_string_equal(probs[0].variable, "SN_TRACE");
    assert_non_null(strstr(probs[0].why, "same file as SN_REPORT"));
    assert_string_equal(probs[1].variable, "SN_PLOT");
    /* two names of one file (a hard link) */
    write_text("a.txt", "a");
    assert_int_equal(link("a.txt", "sub/b.txt"), 0);
    assert_int_equal(check_outputs("off", "a.txt", "sub/b.txt", &o, probs, 8), 1);
    assert_int_equal(o.trace.kind, SN_OUT_PATH);
    assert_int_equal(o.plot.kind, SN_OUT_OFF);
    assert_non_null(strstr(probs[0].why, "same file as SN_TRACE"));
    /* a refused path does not take the name from a later output */
    assert_int_equal(check_outputs("/dev/null", "x.txt", "off", &o, probs, 8), 1);
    assert_int_equal(o.trace.kind, SN_OUT_PATH);
}

/* The file the program's stdout goes to is not replaced under it. */
static void test_paths_not_stdout(void **state)
{
    (void)state;
    write_text("out.txt", "");
    fflush(stdout);
    int saved = dup(1);
    int fd = open("out.txt", O_WRONLY);
    assert_true(saved >= 0 && fd >= 0);
    dup2(fd, 1);
    close(fd);
    sn_options o;
    sn_option_problem probs[8];
    int bad = check_outputs("out.txt", "off", "off", &o, probs, 8);
    dup2(saved, 1);
    close(saved);
    assert_int_equal(bad, 1);
    assert_non_null(strstr(probs[0].why, "standard output"));
}

/* README.md and docs/libsn.md carry the table generated from sn_options.def. */
static void test_docs_table(void **state)
{
    (void)state;
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    sn_options_write_markdown(fileno(tmp));
    fseek(tmp, 0, SEEK_END);
    long n = ftell(tmp);
    rewind(tmp);
    char *table = calloc((size_t)n + 1, 1);
    assert_int_equal(fread(table, 1, (size_t)n, tmp), (size_t)n);
    fclose(tmp);
    static const char *const docs[] = {"docs/libsn.md", "README.md"};
    for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
        FILE *doc = fopen(docs[i], "r");
        assert_non_null(doc);
        static char text[1 << 17];
        size_t len = fread(text, 1, sizeof text - 1, doc);
        text[len] = 0;
        fclose(doc);
        if (!strstr(text, table))
            fail_msg("%s does not carry the option table generated from common/sn_options.def", docs[i]);
    }
    free(table);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),  cmocka_unit_test(test_valid_values),
        cmocka_unit_test(test_malformed_values), cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_help),      cmocka_unit_test(test_log_cap),
        cmocka_unit_test(test_log_levels), cmocka_unit_test(test_docs_table),
        cmocka_unit_test(test_grammar),   cmocka_unit_test(test_log_escape),
        cmocka_unit_test(test_log_escape_long),
        cmocka_unit_test_setup_teardown(test_paths_made_absolute, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_paths_refused, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_paths_unwritable, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_paths_distinct, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_paths_not_stdout, setup_dir, teardown_dir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
