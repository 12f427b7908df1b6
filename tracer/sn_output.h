/*
 * sn_output.h — the end-of-run outputs of trace mode: the report (text, or
 * JSON for a path ending in .json), the Chrome/Perfetto timeline and the
 * SVG of memory per step, written from the call logs of every device that
 * ran something. Writers take a FILE so tests can hold the formats.
 *
 * With no device at all (ntraces == 0: the program made no CUDA call libsn
 * saw) the outputs still come: a report that says so (JSON: "found": false,
 * no budget), an empty timeline and an SVG saying there is no data.
 */
#ifndef SN_OUTPUT_H
#define SN_OUTPUT_H

#include <stdio.h>

#include "tracer/sn_model.h"
#include "tracer/sn_trace.h"

typedef struct sn_output_config {
    int report_to_stderr;
    const char *report_path;   /* NULL: none (unless report_to_stderr) */
    const char *trace_path;    /* SN_TRACE, NULL: none */
    const char *plot_path;     /* SN_PLOT, NULL: none */
    const char *mode_name;     /* for the report's heading */
    const char *unseen;        /* why no CUDA call may have been seen, for a
                                  report without devices; NULL: nothing known */
} sn_output_config;

/* Builds the models and writes what cfg asks for (ntraces may be 0).
 * Files are replaced atomically, never written through a link; a failure is
 * one libsn error and leaves the target as it was. */
void sn_outputs_write(sn_trace *const *traces, int ntraces, const sn_output_config *cfg);

/* The report of n devices, as text or as JSON. */
void sn_report_text(FILE *f, const sn_trace *const *t, const sn_model *m, int n, const char *mode);
void sn_report_json(FILE *f, const sn_trace *const *t, const sn_model *m, int n, const char *mode);
/* Chrome/Perfetto trace-event JSON: one track per stream, a memory counter.
 * Returns the number of duration ("X") events written. */
long sn_timeline_json(FILE *f, const sn_trace *const *t, const sn_model *m, int n);
/* SVG of memory per step of the representative iteration of m. */
int sn_plot_svg(FILE *f, const sn_model *m, const sn_manage_stats *ms);

#endif
