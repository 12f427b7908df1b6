/*
 * sn_plot.c — SVG of device memory per step over one training iteration
 * (SN_PLOT): as allocated, with liveness, with convolution outputs
 * offloaded, with all feature maps offloaded, and the lower bound and the
 * expected budget as horizontal lines; forward, backward and update are
 * shaded. Under manage mode with a plan, also the memory the plan predicted
 * and the memory mapped when each step's call came in the latest iteration
 * followed. Plain SVG 1.1, no scripts or external resources.
 */
#include "tracer/sn_output.h"

#include <math.h>

#include "common/sn_options.h"

#define W 960.0
#define H 480.0
#define L 70.0
#define R 250.0
#define T 40.0
#define B 50.0

static double sn_x(const sn_model *m, double s)
{
    double n = m->period > 1 ? (double)(m->period - 1) : 1.0;
    return L + s / n * (W - L - R);
}

static double sn_y(double mibv, double top)
{
    return T + (H - T - B) * (1.0 - mibv / top);
}

static void sn_curve(FILE *f, const sn_model *m, int which, double top, const char *color,
                     const char *dash)
{
    fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\"%s%s%s points=\"", color,
            dash ? " stroke-dasharray=\"" : "", dash ? dash : "", dash ? "\"" : "");
    for (size_t s = 0; s < m->period; s++) {
        const sn_model_step *st = &m->steps[s];
        uint64_t v = which == 0 ? st->mem_asis : which == 1 ? st->mem_live : which == 2 ? st->mem_conv : st->mem_all;
        fprintf(f, "%s%.1f,%.1f", s ? " " : "", sn_x(m, (double)s), sn_y((double)v / 1048576.0, top));
    }
    fprintf(f, "\"/>\n");
}

/* A curve given per step (bytes), over the model's steps. */
static void sn_curve_of(FILE *f, const sn_model *m, const uint64_t *v, double top, const char *color,
                        const char *dash)
{
    fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s%s%s points=\"", color,
            dash ? " stroke-dasharray=\"" : "", dash ? dash : "", dash ? "\"" : "");
    for (size_t s = 0; s < m->period; s++)
        fprintf(f, "%s%.1f,%.1f", s ? " " : "", sn_x(m, (double)s), sn_y((double)v[s] / 1048576.0, top));
    fprintf(f, "\"/>\n");
}

int sn_plot_svg(FILE *f, const sn_model *m, const sn_manage_stats *ms)
{
    if (!m->found || m->period == 0)
        return -1;
    double top = 0;
    for (size_t s = 0; s < m->period; s++)
        if ((double)m->steps[s].mem_asis > top)
            top = (double)m->steps[s].mem_asis;
    if ((double)m->budget > top)
        top = (double)m->budget;
    top = top / 1048576.0 * 1.1;
    if (top <= 0)
        top = 1;
    /* round the axis to a readable step */
    double step = pow(10, floor(log10(top / 5)));
    if (top / step > 10)
        step *= 2;
    top = ceil(top / step) * step;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%.0f\" height=\"%.0f\" "
               "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n",
            W, H, W, H);
    fprintf(f, "<title>libsn: device %d memory per step</title>\n", m->dev);
    fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"white\"/>\n", W, H);
    /* phase bands */
    static const char *const band[] = {"#eef4ff", "#fff1e6", "#eefaee"};
    size_t s0 = 0;
    for (size_t s = 1; s <= m->period; s++) {
        if (s < m->period && m->steps[s].phase == m->steps[s0].phase)
            continue;
        double x0 = sn_x(m, (double)s0 - 0.5), x1 = sn_x(m, (double)s - 0.5);
        if (x0 < L)
            x0 = L;
        if (x1 > W - R)
            x1 = W - R;
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>\n", x0, T,
                x1 - x0, H - T - B, band[m->steps[s0].phase]);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#666\">%s</text>\n", x0 + 4, T + 14,
                sn_phase_name(m->steps[s0].phase));
        s0 = s;
    }
    /* axes and grid */
    for (double v = 0; v <= top + step / 2; v += step) {
        double y = sn_y(v, top);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", L, y, W - R, y);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", L - 6, y + 4, v);
    }
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n", L, H - B, W - R, H - B);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n", L, T, L, H - B);
    for (int k = 0; k <= 4; k++) {
        double s = (double)(m->period - 1) * k / 4.0;
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.0f</text>\n", sn_x(m, s), H - B + 16, s);
    }
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">step of the iteration (%zu steps)</text>\n",
            (L + W - R) / 2, H - 12, m->period);
    fprintf(f, "<text x=\"16\" y=\"%.1f\" transform=\"rotate(-90 16 %.1f)\" text-anchor=\"middle\">device memory (MiB)</text>\n",
            (T + H - B) / 2, (T + H - B) / 2);
    fprintf(f, "<text x=\"%.1f\" y=\"24\" font-size=\"14\">libsn: device %d, memory per step</text>\n", L, m->dev);
    /* reference lines */
    double lb = (double)m->lower_bound / 1048576.0, bud = (double)m->budget / 1048576.0;
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#b00\" stroke-dasharray=\"2 3\"/>\n",
            L, sn_y(lb, top), W - R, sn_y(lb, top));
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555\" stroke-dasharray=\"8 4\"/>\n",
            L, sn_y(bud, top), W - R, sn_y(bud, top));
    /* the plan's curves only where they describe this iteration */
    const uint64_t *planned = ms && ms->curve_len == m->period ? ms->plan_curve : NULL;
    const uint64_t *seen = ms && ms->curve_len == m->period ? ms->seen_curve : NULL;
    if (planned)
        sn_curve_of(f, m, planned, top, "#9467bd", "5 2");
    if (seen)
        sn_curve_of(f, m, seen, top, "#ff7f0e", NULL);
    /* curves */
    static const char *const colors[] = {"#000000", "#1f77b4", "#2ca02c", "#d62728"};
    static const char *const dashes[] = {NULL, NULL, "6 3", "2 2"};
    static const char *const names[] = {"as allocated", "with liveness", "conv outputs offloaded",
                                        "all feature maps offloaded"};
    for (int c = 0; c < 4; c++)
        sn_curve(f, m, c, top, colors[c], dashes[c]);
    /* legend */
    double lx = W - R + 14, ly = T + 10;
    for (int c = 0; c < 4; c++, ly += 20) {
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"%s%s%s/>\n",
                lx, ly, lx + 24, ly, colors[c], dashes[c] ? " stroke-dasharray=\"" : "",
                dashes[c] ? dashes[c] : "", dashes[c] ? "\"" : "");
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">%s</text>\n", lx + 30, ly + 4, names[c]);
    }
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#b00\" stroke-dasharray=\"2 3\"/>\n",
            lx, ly, lx + 24, ly);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">lower bound %.1f MiB</text>\n", lx + 30, ly + 4, lb);
    ly += 20;
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555\" stroke-dasharray=\"8 4\"/>\n",
            lx, ly, lx + 24, ly);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">budget %.0f MiB</text>\n", lx + 30, ly + 4, bud);
    if (planned) {
        ly += 20;
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#9467bd\" stroke-width=\"2\" "
                   "stroke-dasharray=\"5 2\"/>\n",
                lx, ly, lx + 24, ly);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">plan (%s), predicted</text>\n", lx + 30, ly + 4,
                sn_option_choice("SN_POLICY", ms->plan_policy));
    }
    if (seen) {
        ly += 20;
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ff7f0e\" stroke-width=\"2\"/>\n",
                lx, ly, lx + 24, ly);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">mapped under the plan</text>\n", lx + 30, ly + 4);
    }
    fprintf(f, "</svg>\n");
    return 0;
}
