/*
 * sn_output.c — building the models and writing the outputs trace mode was
 * asked for. Text to stderr gets the "libsn: " prefix on every line, like
 * every other message of libsn; files get the report as it is.
 */
#include "tracer/sn_output.h"

#include <stdlib.h>
#include <string.h>

#include "shim/sn_log.h"

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

void sn_outputs_write(sn_trace *const *traces, int ntraces, const sn_output_config *cfg)
{
    if (ntraces <= 0)
        return;
    sn_model *m = calloc((size_t)ntraces, sizeof *m);
    if (!m)
        return;
    for (int i = 0; i < ntraces; i++)
        if (sn_model_build(traces[i], &m[i]) != 0)
            sn_warn("device %d: out of memory while analysing the trace", traces[i]->dev);
    const sn_trace *const *t = (const sn_trace *const *)traces;
    if (cfg->report_to_stderr) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        if (f) {
            sn_report_text(f, t, m, ntraces, cfg->mode_name);
            fclose(f);
            sn_prefixed_to_stderr(buf, len);
            free(buf);
        }
    }
    if (cfg->report_path) {
        FILE *f = fopen(cfg->report_path, "w");
        if (!f) {
            sn_warn("SN_REPORT=%s: cannot write the report there", cfg->report_path);
        } else {
            if (sn_ends_with(cfg->report_path, ".json"))
                sn_report_json(f, t, m, ntraces, cfg->mode_name);
            else
                sn_report_text(f, t, m, ntraces, cfg->mode_name);
            if (fclose(f) != 0)
                sn_warn("SN_REPORT=%s: the report could not be written completely", cfg->report_path);
        }
    }
    if (cfg->trace_path) {
        FILE *f = fopen(cfg->trace_path, "w");
        if (!f) {
            sn_warn("SN_TRACE=%s: cannot write the timeline there", cfg->trace_path);
        } else {
            sn_timeline_json(f, t, m, ntraces);
            if (fclose(f) != 0)
                sn_warn("SN_TRACE=%s: the timeline could not be written completely", cfg->trace_path);
        }
    }
    if (cfg->plot_path) {
        int which = -1;
        for (int i = 0; i < ntraces && which < 0; i++)
            if (m[i].found)
                which = i;
        if (which < 0) {
            sn_warn("SN_PLOT=%s: no training iteration was recognised, nothing to plot", cfg->plot_path);
        } else {
            FILE *f = fopen(cfg->plot_path, "w");
            if (!f) {
                sn_warn("SN_PLOT=%s: cannot write the plot there", cfg->plot_path);
            } else {
                sn_plot_svg(f, &m[which]);
                if (fclose(f) != 0)
                    sn_warn("SN_PLOT=%s: the plot could not be written completely", cfg->plot_path);
            }
        }
    }
    for (int i = 0; i < ntraces; i++)
        sn_model_free(&m[i]);
    free(m);
}
