/*
 * sn_output.c — building the models and writing the outputs trace mode was
 * asked for. Text to stderr gets the "libsn: " prefix on every line, like
 * every other message of libsn; files get the report as it is.
 *
 * A file is never written in place: the output goes to a new temporary file
 * beside it (created exclusively, never through a symbolic link) and is
 * renamed over the target once complete. The target's name therefore holds
 * either what was there before or the whole new output, a symbolic link or
 * FIFO put there meanwhile is never opened (so the program cannot block at
 * exit), and a failed write leaves nothing behind. sn_options.c checked the
 * paths when libsn loaded; what is left to fail here is the writing itself.
 */
#include "tracer/sn_output.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/sn_log.h"

/* Everything a writer needs: the devices seen (possibly none). */
typedef struct sn_output_job {
    const sn_trace *const *t;
    const sn_model *m;
    int n;
    int plot_model;     /* index of the model plotted, -1: none */
    const sn_output_config *cfg;
} sn_output_job;

static const char sn_no_calls[] = "no CUDA call was seen, so there is nothing to report";

static int sn_ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

static void sn_prefixed_to_stderr(const char *text, size_t len)
{
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
        sn_log_write_raw("libsn: ", 7);
        sn_log_write_raw(p, n);
        if (!nl)
            sn_log_write_raw("\n", 1);
        p += n;
    }
}

/* cfg->unseen on one line, with anything unprintable escaped: it may quote
 * names libsn found in the environment. */
static const char *sn_unseen_text(const sn_output_config *cfg, char *buf, size_t cap)
{
    if (!cfg->unseen || !*cfg->unseen)
        return NULL;
    sn_log_escape(cfg->unseen, strlen(cfg->unseen), buf, cap);
    return buf;
}

/* s, already printable (sn_log_escape), as the body of a JSON string or of
 * XML text: quotes, backslashes and markup characters escaped. */
static void sn_put_escaped(FILE *f, const char *s, int xml)
{
    for (; *s; s++) {
        if (xml && *s == '&')
            fputs("&amp;", f);
        else if (xml && *s == '<')
            fputs("&lt;", f);
        else if (xml && *s == '>')
            fputs("&gt;", f);
        else if (!xml && (*s == '"' || *s == '\\'))
            fprintf(f, "\\%c", *s);
        else
            fputc(*s, f);
    }
}

static void sn_write_report_text(FILE *f, const sn_output_job *job)
{
    sn_report_text(f, job->t, job->m, job->n, job->cfg->mode_name);
    if (job->n > 0)
        return;
    char why[1024];
    const char *unseen = sn_unseen_text(job->cfg, why, sizeof why);
    fprintf(f, "\n%s\n", sn_no_calls);
    if (unseen)
        fprintf(f, "%s\n", unseen);
}

static void sn_write_report_json(FILE *f, const sn_output_job *job)
{
    if (job->n > 0) {
        sn_report_json(f, job->t, job->m, job->n, job->cfg->mode_name);
        return;
    }
    char why[1024];
    const char *unseen = sn_unseen_text(job->cfg, why, sizeof why);
    fprintf(f, "{\"libsn\":\"trace report\",\"mode\":\"%s\",\"devices\":[],\"found\":false,\"calls_seen\":false,"
               "\"unseen\":",
            job->cfg->mode_name);
    if (unseen) {
        fputc('"', f);
        sn_put_escaped(f, unseen, 0);
        fputc('"', f);
    } else {
        fputs("null", f);
    }
    fputs("}\n", f);
}

static void sn_write_timeline(FILE *f, const sn_output_job *job)
{
    sn_timeline_json(f, job->t, job->m, job->n);
}

static void sn_write_plot(FILE *f, const sn_output_job *job)
{
    if (job->plot_model >= 0) {
        sn_plot_svg(f, &job->m[job->plot_model], &job->t[job->plot_model]->manage);
        return;
    }
    char why[1024];
    const char *unseen = job->n ? NULL : sn_unseen_text(job->cfg, why, sizeof why);
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"960\" height=\"120\" "
               "viewBox=\"0 0 960 120\" font-family=\"sans-serif\" font-size=\"14\">\n"
               "<title>libsn: no data</title>\n"
               "<rect x=\"0\" y=\"0\" width=\"960\" height=\"120\" fill=\"white\"/>\n"
               "<text x=\"20\" y=\"40\">libsn: no data to plot: %s</text>\n",
            job->n ? "no training iteration was recognised" : "no CUDA call was seen");
    if (unseen) {
        fprintf(f, "<text x=\"20\" y=\"70\" font-size=\"12\">");
        sn_put_escaped(f, unseen, 1);
        fprintf(f, "</text>\n");
    }
    fprintf(f, "</svg>\n");
}

/* Writes path (named by variable, holding a "what") through a temporary
 * file renamed over it. One error and no file left behind on failure. */
static void sn_write_file(const char *variable, const char *path, const char *what,
                          void (*writer)(FILE *, const sn_output_job *), const sn_output_job *job)
{
    const char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    int dirlen = slash ? (int)(slash - path) + 1 : 0;
    char tmp[PATH_MAX + 64];
    int fd = -1, err = 0;
    for (int attempt = 0; attempt < 16 && fd < 0; attempt++) {
        /* name cut so that the temporary's name stays within NAME_MAX */
        snprintf(tmp, sizeof tmp, "%.*s.%.32s.sn-%ld-%d.tmp", dirlen, path, name, (long)getpid(), attempt);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd < 0) {
        sn_error("%s=%s: the %s could not be written: no file can be created beside it (%s)", variable, path,
                 what, strerror(errno));
        return;
    }
    FILE *f = fdopen(fd, "w");
    if (!f) {
        err = errno;
        close(fd);
    } else {
        writer(f, job);
        if (fflush(f) != 0)
            err = errno;
        else if (ferror(f))
            err = EIO;
        if (fclose(f) != 0 && !err)
            err = errno;
    }
    const char *why = NULL;
    if (!err) {
        /* sn_options.c refused anything but a regular file; rename() would
         * not follow a link or block on a FIFO put there since, but it
         * would replace it, and the refusal should not depend on timing. */
        struct stat st;
        if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode))
            why = "it is no longer a regular file";
        else if (rename(tmp, path) != 0)
            err = errno;
    }
    if (err || why) {
        unlink(tmp);
        sn_error("%s=%s: the %s could not be written (%s); nothing was written there", variable, path, what,
                 why ? why : strerror(err));
    }
}

void sn_outputs_write(sn_trace *const *traces, int ntraces, const sn_output_config *cfg)
{
    if (ntraces < 0)
        ntraces = 0;
    sn_model *m = ntraces ? calloc((size_t)ntraces, sizeof *m) : NULL;
    if (ntraces && !m)
        return;
    for (int i = 0; i < ntraces; i++)
        if (sn_model_build(traces[i], &m[i]) != 0)
            sn_warn("device %d: out of memory while analysing the trace", traces[i]->dev);
    sn_output_job job = {(const sn_trace *const *)traces, m, ntraces, -1, cfg};
    if (cfg->report_to_stderr) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        if (f) {
            sn_write_report_text(f, &job);
            fclose(f);
            sn_prefixed_to_stderr(buf, len);
            free(buf);
        }
    }
    if (cfg->report_path)
        sn_write_file("SN_REPORT", cfg->report_path, "report",
                      sn_ends_with(cfg->report_path, ".json") ? sn_write_report_json : sn_write_report_text, &job);
    if (cfg->trace_path)
        sn_write_file("SN_TRACE", cfg->trace_path, "timeline", sn_write_timeline, &job);
    if (cfg->plot_path) {
        for (int i = 0; i < ntraces && job.plot_model < 0; i++)
            if (m[i].found)
                job.plot_model = i;
        if (ntraces && job.plot_model < 0)
            sn_warn("SN_PLOT=%s: no training iteration was recognised; the plot only says so", cfg->plot_path);
        sn_write_file("SN_PLOT", cfg->plot_path, "plot", sn_write_plot, &job);
    }
    for (int i = 0; i < ntraces; i++)
        sn_model_free(&m[i]);
    free(m);
}
