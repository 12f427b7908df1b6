/*
 * sn_options.c — parsing, checking and printing the SN_* table of
 * sn_options.def. Nothing here touches CUDA; it may run from a constructor.
 */
#include "shim/sn_options.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "shim/sn_log.h"

sn_options sn_opt;

/* ---- one parser per option type ---------------------------------------- */

static int sn_opt_parse_ENUM(const char *text, const char *accepted, long lo, long hi, int *out)
{
    (void)lo, (void)hi;
    size_t len = strlen(text);
    int index = 0;
    for (const char *p = accepted; *p; index++) {
        const char *bar = strchr(p, '|');
        size_t n = bar ? (size_t)(bar - p) : strlen(p);
        if (n == len && strncasecmp(p, text, n) == 0) {
            *out = index;
            return 0;
        }
        if (!bar)
            break;
        p = bar + 1;
    }
    return -1;
}

static int sn_opt_parse_BOOL(const char *text, const char *accepted, long lo, long hi, int *out)
{
    (void)accepted, (void)lo, (void)hi;
    static const char *yes[] = {"1", "yes", "true", "on"};
    static const char *no[] = {"0", "no", "false", "off"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(text, yes[i]) == 0) {
            *out = 1;
            return 0;
        }
        if (strcasecmp(text, no[i]) == 0) {
            *out = 0;
            return 0;
        }
    }
    return -1;
}

static int sn_opt_parse_INT(const char *text, const char *accepted, long lo, long hi, long *out)
{
    (void)accepted;
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int sn_parse_size(const char *text, sn_size_opt *out)
{
    if (strcasecmp(text, "free") == 0) {
        out->kind = SN_SIZE_FREE;
        out->bytes = 0;
        out->percent = 0;
        return 0;
    }
    if (!isdigit((unsigned char)text[0]) && text[0] != '.')
        return -1;
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || !(v >= 0) || !isfinite(v))
        return -1;
    if (*end == '%') {
        if (end[1] || v <= 0 || v > 100)
            return -1;
        out->kind = SN_SIZE_PERCENT;
        out->percent = v;
        out->bytes = 0;
        return 0;
    }
    double mult = 1;
    switch (toupper((unsigned char)*end)) {
    case 0: break;
    case 'K': mult = 1024.0; end++; break;
    case 'M': mult = 1024.0 * 1024; end++; break;
    case 'G': mult = 1024.0 * 1024 * 1024; end++; break;
    case 'T': mult = 1024.0 * 1024 * 1024 * 1024; end++; break;
    default: return -1;
    }
    if (mult > 1 && (*end == 'i' || *end == 'I'))
        end++;
    if (mult > 1 && (*end == 'b' || *end == 'B'))
        end++;
    if (*end)
        return -1;
    double bytes = v * mult;
    if (bytes < 1 || bytes > 1.8e19)
        return -1;
    out->kind = SN_SIZE_BYTES;
    out->bytes = (uint64_t)bytes;
    out->percent = 0;
    return 0;
}

static int sn_opt_parse_SIZE(const char *text, const char *accepted, long lo, long hi, sn_size_opt *out)
{
    (void)accepted, (void)lo, (void)hi;
    return sn_parse_size(text, out);
}

static int sn_opt_set_path(const char *text, sn_output_opt *out)
{
    size_t n = strlen(text);
    if (n >= sizeof out->path)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (iscntrl((unsigned char)text[i]))
            return -1;
    memcpy(out->path, text, n + 1);
    out->kind = SN_OUT_PATH;
    return 0;
}

static int sn_opt_parse_OUTPUT(const char *text, const char *accepted, long lo, long hi, sn_output_opt *out)
{
    (void)accepted, (void)lo, (void)hi;
    out->path[0] = 0;
    if (strcasecmp(text, "auto") == 0)
        out->kind = SN_OUT_AUTO;
    else if (strcasecmp(text, "off") == 0 || strcmp(text, "0") == 0)
        out->kind = SN_OUT_OFF;
    else if (strcasecmp(text, "stderr") == 0 || strcmp(text, "-") == 0)
        out->kind = SN_OUT_STDERR;
    else
        return sn_opt_set_path(text, out);
    return 0;
}

static int sn_opt_parse_PATH(const char *text, const char *accepted, long lo, long hi, sn_output_opt *out)
{
    (void)accepted, (void)lo, (void)hi;
    out->path[0] = 0;
    if (strcasecmp(text, "off") == 0 || strcmp(text, "0") == 0) {
        out->kind = SN_OUT_OFF;
        return 0;
    }
    if (strcasecmp(text, "stderr") == 0 || strcmp(text, "-") == 0)
        return -1; /* a timeline or an SVG on the terminal helps nobody */
    return sn_opt_set_path(text, out);
}

/* ---- the table ----------------------------------------------------------- */

typedef struct sn_option_info {
    const char *variable, *type, *default_text, *accepted, *help;
} sn_option_info;

static const sn_option_info sn_option_table[] = {
#define SN_OPTION(field_, var_, type_, def_, accepted_, lo_, hi_, help_) {var_, #type_, def_, accepted_, help_},
#include "shim/sn_options.def"
#undef SN_OPTION
};
#define SN_OPTION_COUNT (sizeof sn_option_table / sizeof sn_option_table[0])

int sn_options_parse(sn_options *o, sn_option_lookup lookup, void *ctx,
                     sn_option_problem *problems, int max_problems)
{
    int bad = 0;
    memset(o, 0, sizeof *o);
#define SN_OPTION(field_, var_, type_, def_, accepted_, lo_, hi_, help_)                          \
    {                                                                                     \
        const char *text = lookup ? lookup(var_, ctx) : NULL;                              \
        int ok = 0;                                                                       \
        if (text && *text)                                                                \
            ok = sn_opt_parse_##type_(text, accepted_, lo_, hi_, &o->field_) == 0;             \
        if (!ok) {                                                                        \
            if (text && *text) {                                                          \
                if (bad < max_problems) {                                                 \
                    sn_option_problem *p = &problems[bad];                                \
                    p->variable = var_;                                                    \
                    p->accepted = accepted_;                                               \
                    p->default_text = def_;                                                \
                    snprintf(p->value, sizeof p->value, "%s", text);                      \
                }                                                                         \
                bad++;                                                                    \
            }                                                                             \
            if (sn_opt_parse_##type_(def_, accepted_, lo_, hi_, &o->field_) != 0)               \
                abort(); /* a default that does not parse is a bug in the table */        \
        }                                                                                 \
    }
#include "shim/sn_options.def"
#undef SN_OPTION
    return bad;
}

const char *sn_option_choice(const char *variable, int index)
{
    static __thread char buf[64];
    for (size_t i = 0; i < SN_OPTION_COUNT; i++) {
        if (strcmp(sn_option_table[i].variable, variable) != 0)
            continue;
        const char *p = sn_option_table[i].accepted;
        for (int k = 0; k < index; k++) {
            p = strchr(p, '|');
            if (!p)
                return NULL;
            p++;
        }
        size_t n = strcspn(p, "|");
        if (index < 0 || n >= sizeof buf)
            return NULL;
        memcpy(buf, p, n);
        buf[n] = 0;
        return buf;
    }
    return NULL;
}

static const char *sn_env_lookup(const char *variable, void *ctx)
{
    (void)ctx;
    return getenv(variable);
}

static void sn_fd_printf(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sn_fd_printf(int fd, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof buf)
        n = sizeof buf - 1;
    for (const char *p = buf; n > 0;) {
        ssize_t w = write(fd, p, (size_t)n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        p += w;
        n -= (int)w;
    }
}

void sn_options_print_help(void)
{
    sn_fd_printf(2, "libsn: options (environment variables, read once at start)\n");
    for (size_t i = 0; i < SN_OPTION_COUNT; i++) {
        const sn_option_info *t = &sn_option_table[i];
        sn_fd_printf(2, "libsn:   %-16s %s\n", t->variable, t->help);
        sn_fd_printf(2, "libsn:   %-16s   accepted: %s; default: %s\n", "", t->accepted, t->default_text);
    }
}

/* A table cell: '|' would end the cell, so it is escaped. */
static const char *md_cell(const char *in, char *out, size_t cap)
{
    size_t o = 0;
    for (; *in && o + 2 < cap; in++) {
        if (*in == '|')
            out[o++] = '\\';
        out[o++] = *in;
    }
    out[o] = 0;
    return out;
}

void sn_options_write_markdown(int fd)
{
    sn_fd_printf(fd, "| variable | accepted values | default | meaning |\n|---|---|---|---|\n");
    for (size_t i = 0; i < SN_OPTION_COUNT; i++) {
        const sn_option_info *t = &sn_option_table[i];
        char acc[256], help[512];
        sn_fd_printf(fd, "| `%s` | %s | `%s` | %s |\n", t->variable, md_cell(t->accepted, acc, sizeof acc),
                     t->default_text, md_cell(t->help, help, sizeof help));
    }
}

void sn_options_load(void)
{
    static int loaded;
    if (__atomic_exchange_n(&loaded, 1, __ATOMIC_ACQ_REL))
        return;
    sn_option_problem problems[SN_OPTION_COUNT];
    sn_options parsed;
    int bad = sn_options_parse(&parsed, sn_env_lookup, NULL, problems, (int)SN_OPTION_COUNT);
    sn_opt = parsed;
    sn_log_level = sn_opt.log;
    for (int i = 0; i < bad && i < (int)SN_OPTION_COUNT; i++) {
        const sn_option_problem *p = &problems[i];
        if (sn_opt.strict)
            sn_error("%s=%s is not valid (accepted: %s)", p->variable, p->value, p->accepted);
        else
            sn_warn("%s=%s is not valid (accepted: %s); using the default, %s", p->variable,
                    p->value, p->accepted, p->default_text);
    }
    if (sn_opt.help)
        sn_options_print_help();
    if (bad && sn_opt.strict) {
        sn_error("SN_STRICT=1: stopping over the malformed value%s above", bad > 1 ? "s" : "");
        _exit(2);
    }
}
