/*
 * sn_timeline.c — the Chrome/Perfetto trace-event timeline (SN_TRACE): one
 * process per device, one track per stream with a duration event for every
 * timed call (device time from the events libsn recorded on that stream),
 * and a counter of device memory as allocated. Loads in ui.perfetto.dev and
 * chrome://tracing.
 */
#include "tracer/sn_output.h"

#include <stdlib.h>

long sn_timeline_json(FILE *f, const sn_trace *const *t, const sn_model *m, int n)
{
    long xs = 0, cs = 0, ms_ = 0;
    fprintf(f, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
    int first = 1;
#define SEP() (first ? (first = 0, "") : ",\n")
    for (int d = 0; d < n; d++) {
        const sn_trace *tr = t[d];
        fprintf(f, "%s{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":\"device %d\"}}",
                SEP(), tr->dev, tr->dev);
        ms_++;
        /* streams -> track ids in order of first use */
        void **streams = NULL;
        int nstreams = 0;
        /* every step of the periodic part is labelled with its phase: the
         * steps are numbered as the model numbers them (successful steps) */
        size_t step = 0;
        for (size_t i = 0; i < tr->ncalls; i++) {
            const sn_trace_call *e = &tr->calls[i];
            int phase_id = -1;
            if ((e->flags & (SN_TC_STEP | SN_TC_FAILED)) == SN_TC_STEP && i >= tr->log_begin)
                phase_id = sn_model_phase_of_step(&m[d], step++);
            if (!(e->flags & SN_TC_TIMED))
                continue;
            int tid = -1;
            for (int k = 0; k < nstreams; k++)
                if (streams[k] == e->stream)
                    tid = k;
            if (tid < 0) {
                void **ns = realloc(streams, (size_t)(nstreams + 1) * sizeof *ns);
                if (!ns)
                    continue;
                streams = ns;
                streams[nstreams] = e->stream;
                tid = nstreams++;
                fprintf(f, "%s{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
                           "\"args\":{\"name\":\"stream %p\"}}",
                        SEP(), tr->dev, tid, e->stream);
                ms_++;
            }
            const char *phase = phase_id >= 0 ? sn_phase_name(phase_id) : "";
            fprintf(f, "%s{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,"
                       "\"pid\":%d,\"tid\":%d,\"args\":{\"call\":%zu%s%s%s}}",
                    SEP(), sn_op_name(e->op), (e->flags & SN_TC_TRANSFER) ? "transfer" : "step",
                    e->start_ms * 1000.0, e->dur_ms * 1000.0, tr->dev, tid, i, *phase ? ",\"phase\":\"" : "",
                    phase, *phase ? "\"" : "");
            xs++;
            fprintf(f, "%s{\"name\":\"device memory\",\"ph\":\"C\",\"ts\":%.3f,\"pid\":%d,"
                       "\"args\":{\"MiB\":%.3f}}",
                    SEP(), e->start_ms * 1000.0, tr->dev, (double)e->live_bytes / 1048576.0);
            cs++;
        }
        free(streams);
    }
#undef SEP
    fprintf(f, "\n],\"otherData\":{\"x_events\":%ld,\"counter_events\":%ld,\"metadata_events\":%ld}}\n", xs,
            cs, ms_);
    return xs;
}
