/*
 * test_sn_output.c — how the end-of-run outputs reach the disk
 * (tracer/sn_output.c): with no device at all (a program in which libsn saw
 * no CUDA call) every output still comes and says so; files are replaced
 * through a temporary renamed over them, so a symbolic link or a FIFO at the
 * target is never opened and a failed write leaves the old file and no
 * temporary behind.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/test_capture.h"

#include <dirent.h>
#include <limits.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/sn_log.h"
#include "tracer/sn_output.h"
#include "tracer/sn_trace.h"

static char dir[PATH_MAX];

static int setup_dir(void **state)
{
    (void)state;
    char tmpl[] = "/tmp/sn_output.XXXXXX";
    if (!mkdtemp(tmpl) || !realpath(tmpl, dir) || chdir(dir) != 0)
        return -1;
    sn_log_level = SN_LOG_WARN;
    sn_log_reset_cap();
    return 0;
}

static int teardown_dir(void **state)
{
    (void)state;
    char cmd[2 * PATH_MAX + 32];
    if (chdir("/") != 0)
        return -1;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* The names in the test directory, sorted, space-separated. */
static const char *dir_listing(void)
{
    static char out[4096];
    struct dirent **names;
    int n = scandir(".", &names, NULL, alphasort);
    assert_true(n >= 0);
    out[0] = 0;
    for (int i = 0; i < n; i++) {
        if (strcmp(names[i]->d_name, ".") != 0 && strcmp(names[i]->d_name, "..") != 0) {
            strcat(out, names[i]->d_name);
            strcat(out, " ");
        }
        free(names[i]);
    }
    free(names);
    return out;
}

typedef struct outputs_call {
    sn_trace *const *traces;
    int ntraces;
    const sn_output_config *cfg;
} outputs_call;

static void outputs_call_run(void *ctx)
{
    const outputs_call *c = ctx;
    sn_outputs_write(c->traces, c->ntraces, c->cfg);
}

/* Runs sn_outputs_write(traces, n, cfg) with fd 2 captured into err. */
static void write_outputs(sn_trace *const *traces, int ntraces, const sn_output_config *cfg, char *err, size_t cap)
{
    outputs_call c = {traces, ntraces, cfg};
    capture_stderr(outputs_call_run, &c, err, cap);
}

static void write_no_devices(const sn_output_config *cfg, char *err, size_t cap)
{
    write_outputs(NULL, 0, cfg, err, cap);
}

/* One device that ran a few steps (no iteration in them): enough for
 * sn_outputs_write to write every file, as it did before it knew the case
 * of no device at all. */
static sn_trace one_trace;

static void make_trace(void)
{
    sn_trace_init(&one_trace, 0);
    uint32_t a = sn_trace_alloc(&one_trace, 0x1000, 100, 1, 1, 0);
    sn_trace_access acc[] = {{a, SN_ACC_W | SN_ACC_KILL}};
    for (int i = 0; i < 5; i++) {
        sn_call c;
        sn_call_init(&c, 0, SN_OP_MEMSET, 0, NULL);
        c.params = (uint64_t)i;
        assert_true(sn_trace_call_add(&one_trace, &c, SN_TC_STEP, acc, 1) >= 0);
    }
}

static void write_one_device(const sn_output_config *cfg, char *err, size_t cap)
{
    sn_trace *t = &one_trace;
    make_trace();
    write_outputs(&t, 1, cfg, err, cap);
    sn_trace_destroy(&one_trace);
}

static int count_lines(const char *s, const char *prefix)
{
    int n = 0;
    size_t k = strlen(prefix);
    for (const char *p = s; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p))
        n += strncmp(p, prefix, k) == 0;
    return n;
}

static const char unseen[] = "the CUDA runtime was looked up with dlsym\n\x1b[31mlibsn: forged";

static void test_no_devices_text(void **state)
{
    (void)state;
    sn_output_config cfg = {0};
    cfg.report_path = "r.txt";
    cfg.mode_name = "trace";
    cfg.unseen = unseen;
    char err[1024];
    write_no_devices(&cfg, err, sizeof err);
    assert_string_equal(err, "");
    const char *text = read_file("r.txt");
    assert_non_null(text);
    assert_string_equal(text, "libsn trace report (SN_MODE=trace)\n\n"
                              "no CUDA call was seen, so there is nothing to report\n"
                              "the CUDA runtime was looked up with dlsym\\n\\x1b[31mlibsn: forged\n");
    /* without an explanation, just the fact */
    cfg.unseen = NULL;
    write_no_devices(&cfg, err, sizeof err);
    assert_string_equal(read_file("r.txt"), "libsn trace report (SN_MODE=trace)\n\n"
                                            "no CUDA call was seen, so there is nothing to report\n");
    assert_string_equal(dir_listing(), "r.txt ");
}

static void test_no_devices_stderr(void **state)
{
    (void)state;
    sn_output_config cfg = {0};
    cfg.report_to_stderr = 1;
    cfg.mode_name = "manage";
    cfg.unseen = unseen;
    char err[2048];
    write_no_devices(&cfg, err, sizeof err);
    assert_string_equal(err, "libsn: libsn trace report (SN_MODE=manage)\nlibsn: \n"
                             "libsn: no CUDA call was seen, so there is nothing to report\n"
                             "libsn: the CUDA runtime was looked up with dlsym\\n\\x1b[31mlibsn: forged\n");
}

static void test_no_devices_json(void **state)
{
    (void)state;
    sn_output_config cfg = {0};
    cfg.report_path = "r.json";
    cfg.mode_name = "trace";
    cfg.unseen = "quote \" and backslash \\ <here>";
    char err[1024];
    write_no_devices(&cfg, err, sizeof err);
    assert_string_equal(err, "");
    assert_string_equal(read_file("r.json"),
                        "{\"libsn\":\"trace report\",\"mode\":\"trace\",\"devices\":[],\"found\":false,"
                        "\"calls_seen\":false,\"unseen\":\"quote \\\" and backslash \\\\\\\\ <here>\"}\n");
    cfg.unseen = NULL;
    write_no_devices(&cfg, err, sizeof err);
    const char *json = read_file("r.json");
    assert_non_null(strstr(json, "\"found\":false"));
    assert_non_null(strstr(json, "\"unseen\":null}"));
    assert_null(strstr(json, "budget"));
}

static void test_no_devices_timeline_and_plot(void **state)
{
    (void)state;
    sn_output_config cfg = {0};
    cfg.trace_path = "t.json";
    cfg.plot_path = "p.svg";
    cfg.mode_name = "trace";
    cfg.unseen = "a <b> & c";
    char err[1024];
    write_no_devices(&cfg, err, sizeof err);
    assert_string_equal(err, "");
    const char *t = read_file("t.json");
    assert_non_null(t);
    assert_non_null(strstr(t, "\"traceEvents\":[\n\n]"));
    assert_non_null(strstr(t, "\"x_events\":0,"));
    const char *p = read_file("p.svg");
    assert_non_null(p);
    assert_int_equal(strncmp(p, "<?xml", 5), 0);
    assert_non_null(strstr(p, "no data to plot: no CUDA call was seen"));
    assert_non_null(strstr(p, ">a &lt;b&gt; &amp; c</text>"));
    assert_non_null(strstr(p, "</svg>\n"));
    assert_string_equal(dir_listing(), "p.svg t.json ");
}

/* An existing file is replaced as a whole, by a new file: a reader that
 * has the old one open keeps it intact. */
static void test_replaces_regular_file(void **state)
{
    (void)state;
    write_text("r.txt", "old report\n");
    FILE *old = fopen("r.txt", "r");
    assert_non_null(old);
    sn_output_config cfg = {0};
    cfg.report_path = "r.txt";
    cfg.mode_name = "trace";
    char err[1024];
    write_one_device(&cfg, err, sizeof err);
    assert_string_equal(err, "");
    const char *text = read_file("r.txt");
    static const char head[] = "libsn trace report (SN_MODE=trace)\n\n== device 0 ==\n";
    assert_int_equal(strncmp(text, head, sizeof head - 1), 0);
    char line[64] = "";
    assert_non_null(fgets(line, sizeof line, old));
    fclose(old);
    assert_string_equal(line, "old report\n");
    assert_string_equal(dir_listing(), "r.txt ");
}

/* A link put at the target after libsn checked it: not followed, not
 * replaced; one error. */
static void test_symlink_untouched(void **state)
{
    (void)state;
    write_text("victim.txt", "keep me\n");
    assert_int_equal(symlink("victim.txt", "r.txt"), 0);
    sn_output_config cfg = {0};
    cfg.report_path = "r.txt";
    cfg.mode_name = "trace";
    char err[1024];
    write_one_device(&cfg, err, sizeof err);
    assert_int_equal(count_lines(err, "libsn: error: SN_REPORT=r.txt"), 1);
    assert_int_equal(count_lines(err, ""), 1);
    assert_string_equal(read_file("victim.txt"), "keep me\n");
    struct stat st;
    assert_int_equal(lstat("r.txt", &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_string_equal(dir_listing(), "r.txt victim.txt ");
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "writing an output blocked on a FIFO\n";
    if (write(2, msg, sizeof msg - 1) < 0)
        _exit(3);
    _exit(3);
}

/* A FIFO without a reader at the target: opening it would block forever. */
static void test_fifo_never_opened(void **state)
{
    (void)state;
    assert_int_equal(mkfifo("t.json", 0666), 0);
    signal(SIGALRM, on_alarm);
    alarm(10);
    sn_output_config cfg = {0};
    cfg.trace_path = "t.json";
    cfg.mode_name = "trace";
    char err[1024];
    write_one_device(&cfg, err, sizeof err);
    alarm(0);
    assert_int_equal(count_lines(err, "libsn: error: SN_TRACE=t.json"), 1);
    struct stat st;
    assert_int_equal(lstat("t.json", &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
    assert_string_equal(dir_listing(), "t.json ");
}

/* The write itself fails (file size limit): one error, the old file intact,
 * no temporary left. */
static void test_failed_write_leaves_nothing(void **state)
{
    (void)state;
    write_text("r.json", "old\n");
    static char long_unseen[4000];
    memset(long_unseen, 'x', sizeof long_unseen - 1);
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit lim = {100, 100};
        setrlimit(RLIMIT_FSIZE, &lim);
        sn_output_config cfg = {0};
        cfg.report_path = "r.json";
        cfg.mode_name = "trace";
        cfg.unseen = long_unseen;
        /* once with no device (a long explanation), once with one */
        sn_outputs_write(NULL, 0, &cfg);
        sn_trace *t = &one_trace;
        make_trace();
        sn_outputs_write(&t, 1, &cfg);
        _exit(0);
    }
    close(fds[1]);
    char err[2048];
    size_t n = 0;
    ssize_t r;
    while (n + 1 < sizeof err && (r = read(fds[0], err + n, sizeof err - 1 - n)) > 0)
        n += (size_t)r;
    err[n] = 0;
    close(fds[0]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(count_lines(err, "libsn: error: SN_REPORT=r.json: the report could not be written"), 2);
    assert_int_equal(count_lines(err, ""), 2);
    assert_string_equal(read_file("r.json"), "old\n");
    assert_string_equal(dir_listing(), "r.json ");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_no_devices_text, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_no_devices_stderr, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_no_devices_json, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_no_devices_timeline_and_plot, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_replaces_regular_file, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_symlink_untouched, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_fifo_never_opened, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_failed_write_leaves_nothing, setup_dir, teardown_dir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
