/*
 * sn_options.c — parsing, checking and printing the SN_* table of
 * sn_options.def. Nothing here touches CUDA; it may run from a constructor.
 */
#include "common/sn_options.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/sn_log.h"

sn_options sn_opt;

/* ---- one parser per option type ------------------------------------------
 * They follow the one grammar written at the top of sn_options.def: a value
 * is taken exactly as written (nothing trimmed, case significant, no
 * synonyms), numbers are plain decimal digits. */

static int sn_opt_parse_ENUM(const char *text, const char *accepted, long lo, long hi, int *out)
{
    (void)lo, (void)hi;
    size_t len = strlen(text);
    int index = 0;
    for (const char *p = accepted; *p; index++) {
        const char *bar = strchr(p, '|');
        size_t n = bar ? (size_t)(bar - p) : strlen(p);
        if (n == len && strncmp(p, text, n) == 0) {
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
    if ((text[0] != '0' && text[0] != '1') || text[1])
        return -1;
    *out = text[0] == '1';
    return 0;
}

/* One or more decimal digits at s; *end is set past them. strtol and
 * strtod would accept white space, signs, "0x" and exponents. */
static int sn_scan_digits(const char *s, const char **end, uint64_t *out)
{
    uint64_t v = 0;
    const char *p = s;
    for (; *p >= '0' && *p <= '9'; p++) {
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    if (p == s)
        return -1;
    *end = p;
    *out = v;
    return 0;
}

static int sn_opt_parse_INT(const char *text, const char *accepted, long lo, long hi, long *out)
{
    (void)accepted;
    const char *end;
    uint64_t v;
    /* no sign in the grammar: a negative min is as good as 0 */
    if (sn_scan_digits(text, &end, &v) != 0 || *end || (lo > 0 && v < (uint64_t)lo) || hi < 0 ||
        v > (uint64_t)hi)
        return -1;
    *out = (long)v;
    return 0;
}

int sn_parse_size(const char *text, sn_size_opt *out)
{
    if (strcmp(text, "free") == 0) {
        out->kind = SN_SIZE_FREE;
        out->bytes = 0;
        out->percent = 0;
        return 0;
    }
    const char *p;
    uint64_t whole, frac = 0;
    if (sn_scan_digits(text, &p, &whole) != 0)
        return -1;
    if (*p == '%') {
        if (p[1] || whole < 1 || whole > 100)
            return -1;
        out->kind = SN_SIZE_PERCENT;
        out->percent = (double)whole;
        out->bytes = 0;
        return 0;
    }
    int decimals = 0;
    if (*p == '.') {
        const char *q;
        /* up to 15 decimals the digits are an exact integer in a double */
        if (sn_scan_digits(p + 1, &q, &frac) != 0 || q - (p + 1) > 15)
            return -1;
        decimals = (int)(q - (p + 1));
        p = q;
    }
    unsigned shift = 0;
    switch (*p) {
    case 'K': shift = 10; break;
    case 'M': shift = 20; break;
    case 'G': shift = 30; break;
    case 'T': shift = 40; break;
    default: break;
    }
    if (shift) {
        p++;
        if (p[0] == 'i' && p[1] == 'B')
            p += 2;
    }
    if (*p || (decimals && !shift) || whole > (UINT64_MAX >> shift))
        return -1;
    uint64_t bytes = whole << shift;
    if (decimals) {
        /* frac / 10^decimals is correctly rounded, and exact whenever the
         * fraction is a whole number of bytes; scaling by 2^shift is exact */
        double scale = 1;
        for (int i = 0; i < decimals; i++)
            scale *= 10;
        uint64_t extra = (uint64_t)((double)frac / scale * (double)(UINT64_C(1) << shift));
        if (bytes > UINT64_MAX - extra)
            return -1;
        bytes += extra;
    }
    if (bytes < 1)
        return -1;
    out->kind = SN_SIZE_BYTES;
    out->bytes = bytes;
    out->percent = 0;
    return 0;
}

static int sn_opt_parse_SIZE(const char *text, const char *accepted, long lo, long hi, sn_size_opt *out)
{
    (void)accepted, (void)lo, (void)hi;
    return sn_parse_size(text, out);
}

/* Only the text is checked here; whether the file can be written is
 * sn_options_check_outputs()'s business. */
static int sn_opt_set_path(const char *text, sn_output_opt *out)
{
    size_t n = strlen(text);
    if (n >= sizeof out->path || text[0] == ' ' || text[n - 1] == ' ')
        return -1;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)text[i] < 0x20 || text[i] == 0x7f)
            return -1;
    memcpy(out->path, text, n + 1);
    out->kind = SN_OUT_PATH;
    return 0;
}

/* A path spelled like one of the words in another case ("STDERR", "Off") is
 * far more likely a mistake than a file name: refused as ambiguous. */
static int sn_like_word(const char *text, const char *const *words)
{
    for (; *words; words++)
        if (strcasecmp(text, *words) == 0)
            return 1;
    return 0;
}

static int sn_opt_parse_OUTPUT(const char *text, const char *accepted, long lo, long hi, sn_output_opt *out)
{
    (void)accepted, (void)lo, (void)hi;
    static const char *const words[] = {"auto", "off", "stderr", NULL};
    out->path[0] = 0;
    if (strcmp(text, "auto") == 0)
        out->kind = SN_OUT_AUTO;
    else if (strcmp(text, "off") == 0)
        out->kind = SN_OUT_OFF;
    else if (strcmp(text, "stderr") == 0)
        out->kind = SN_OUT_STDERR;
    else if (sn_like_word(text, words))
        return -1;
    else
        return sn_opt_set_path(text, out);
    return 0;
}

static int sn_opt_parse_PATH(const char *text, const char *accepted, long lo, long hi, sn_output_opt *out)
{
    (void)accepted, (void)lo, (void)hi;
    out->path[0] = 0;
    if (strcmp(text, "off") == 0) {
        out->kind = SN_OUT_OFF;
        return 0;
    }
    /* stderr: a timeline or an SVG on the terminal helps nobody */
    static const char *const words[] = {"off", "stderr", "auto", NULL};
    if (sn_like_word(text, words))
        return -1;
    return sn_opt_set_path(text, out);
}

/* ---- output paths ------------------------------------------------------------
 * Checked once, when libsn loads, so that a mistake is reported before the
 * program's own output and so that a later chdir() cannot move the file. */

/* What identifies an output file: its directory and name, and the file
 * itself when it exists (a second name for it through a hard link or a bind
 * mount is the same file). */
typedef struct sn_out_identity {
    dev_t dir_dev;
    ino_t dir_ino;
    const char *name;
    int exists;
    dev_t dev;
    ino_t ino;
} sn_out_identity;

static const char *sn_file_kind(mode_t mode)
{
    if (S_ISLNK(mode))
        return "a symbolic link (libsn never writes through or over one; name the file itself)";
    if (S_ISCHR(mode))
        return "a character device (libsn writes regular files only; stdout belongs to the program: use "
               "stderr for the terminal, off for no output)";
    if (S_ISFIFO(mode))
        return "a FIFO (libsn writes regular files only; opening a FIFO blocks until a reader comes)";
    if (S_ISSOCK(mode))
        return "a socket (libsn writes regular files only)";
    if (S_ISBLK(mode))
        return "a block device (libsn writes regular files only)";
    if (S_ISDIR(mode))
        return "a directory";
    return "not a regular file";
}

/* Makes path absolute in out (its directory resolved, its last component
 * kept as given and never followed) and checks that libsn can replace it.
 * Returns NULL, or why it cannot be used (in why). */
static const char *sn_resolve_output(const char *path, char *out, size_t cap, sn_out_identity *id,
                                     char *why, size_t whycap)
{
    const char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    if (!*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
        snprintf(why, whycap, "it names a directory, not a file");
        return why;
    }
    char dir[SN_OPT_PATH_MAX], real[PATH_MAX];
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    if (!realpath(dir, real)) {
        int e = errno;
        if (e == ENOENT)
            snprintf(why, whycap, "the directory %.300s does not exist", dir);
        else if (e == ENOTDIR)
            snprintf(why, whycap, "%.300s is not a directory", dir);
        else
            snprintf(why, whycap, "the directory %.300s cannot be resolved (%s)", dir, strerror(e));
        return why;
    }
    struct stat st;
    if (stat(real, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(why, whycap, "%.300s is not a directory", dir);
        return why;
    }
    id->dir_dev = st.st_dev;
    id->dir_ino = st.st_ino;
    int n = snprintf(out, cap, "%s%s%s", real, strcmp(real, "/") == 0 ? "" : "/", name);
    if (n < 0 || (size_t)n >= cap) {
        snprintf(why, whycap, "the path is too long once made absolute");
        return why;
    }
    id->name = strrchr(out, '/') + 1;
    id->exists = 0;
    if (lstat(out, &st) == 0) {
        if (!S_ISREG(st.st_mode)) {
            snprintf(why, whycap, "it is %s", sn_file_kind(st.st_mode));
            return why;
        }
        /* Replacing the file the program's stdout or stderr goes to would
         * take that output away from it. */
        static const char *const stream[] = {"", "standard output", "standard error"};
        for (int fd = 1; fd <= 2; fd++) {
            struct stat sf;
            if (fstat(fd, &sf) == 0 && sf.st_dev == st.st_dev && sf.st_ino == st.st_ino) {
                snprintf(why, whycap, "it is the file the program's %s goes to", stream[fd]);
                return why;
            }
        }
        id->exists = 1;
        id->dev = st.st_dev;
        id->ino = st.st_ino;
    } else if (errno != ENOENT) {
        snprintf(why, whycap, "it cannot be examined (%s)", strerror(errno));
        return why;
    }
    /* Writable is what creating a file there says, not the mode bits
     * (root, read-only mounts, ACLs): a probe created the way the output
     * will be, then removed. */
    char probe[PATH_MAX + 64];
    for (int attempt = 0;; attempt++) {
        snprintf(probe, sizeof probe, "%s%s.%.32s.sn-probe-%ld-%d", real, strcmp(real, "/") == 0 ? "" : "/",
                 name, (long)getpid(), attempt);
        int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0) {
            close(fd);
            unlink(probe);
            break;
        }
        if (errno != EEXIST || attempt == 16) {
            snprintf(why, whycap, "no file can be created in %.300s (%s)", real, strerror(errno));
            return why;
        }
    }
    return NULL;
}

static int sn_same_output(const sn_out_identity *a, const sn_out_identity *b)
{
    if (a->dir_dev == b->dir_dev && a->dir_ino == b->dir_ino && strcmp(a->name, b->name) == 0)
        return 1;
    return a->exists && b->exists && a->dev == b->dev && a->ino == b->ino;
}

/* The output options (OUTPUT and PATH types) of o, in table order. */
#define SN_OUT_ENUM(field, var)
#define SN_OUT_BOOL(field, var)
#define SN_OUT_INT(field, var)
#define SN_OUT_SIZE(field, var)
#define SN_OUT_OUTPUT(field, var) {var, &o->field},
#define SN_OUT_PATH(field, var) {var, &o->field},

int sn_options_check_outputs(sn_options *o, sn_option_problem *problems, int max_problems)
{
    struct {
        const char *variable;
        sn_output_opt *opt;
    } outs[] = {
#define SN_OPTION(field_, var_, type_, def_, accepted_, lo_, hi_, help_) SN_OUT_##type_(field_, var_)
#include "common/sn_options.def"
#undef SN_OPTION
    };
    enum { NOUTS = sizeof outs / sizeof outs[0] };
    sn_out_identity ids[NOUTS];
    int usable[NOUTS] = {0};
    int bad = 0;
    for (int i = 0; i < NOUTS; i++) {
        sn_output_opt *opt = outs[i].opt;
        if (opt->kind != SN_OUT_PATH)
            continue;
        char why[512], resolved[SN_OPT_PATH_MAX];
        const char *problem = sn_resolve_output(opt->path, resolved, sizeof resolved, &ids[i], why, sizeof why);
        for (int k = 0; k < i && !problem; k++) {
            if (usable[k] && sn_same_output(&ids[k], &ids[i])) {
                snprintf(why, sizeof why, "it is the same file as %s; each output needs its own",
                         outs[k].variable);
                problem = why;
            }
        }
        if (!problem) {
            usable[i] = 1;
            memcpy(opt->path, resolved, sizeof opt->path);
            ids[i].name = strrchr(opt->path, '/') + 1;
            continue;
        }
        if (bad < max_problems) {
            sn_option_problem *p = &problems[bad];
            memset(p, 0, sizeof *p);
            p->variable = outs[i].variable;
            snprintf(p->value, sizeof p->value, "%.*s", (int)sizeof p->value - 1, opt->path);
            snprintf(p->why, sizeof p->why, "%s", problem);
        }
        bad++;
        opt->kind = SN_OUT_OFF;
        opt->path[0] = 0;
    }
    return bad;
}

/* ---- the table ----------------------------------------------------------- */

typedef struct sn_option_info {
    const char *variable, *type, *default_text, *accepted, *help;
} sn_option_info;

static const sn_option_info sn_option_table[] = {
#define SN_OPTION(field_, var_, type_, def_, accepted_, lo_, hi_, help_) {var_, #type_, def_, accepted_, help_},
#include "common/sn_options.def"
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
#include "common/sn_options.def"
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
    /* static: this runs once, and may run on a thread with a small stack */
    static sn_option_problem problems[SN_OPTION_COUNT];
    static sn_options parsed;
    const int cap = (int)SN_OPTION_COUNT;
    int bad = sn_options_parse(&parsed, sn_env_lookup, NULL, problems, cap);
    int nbad = bad < cap ? bad : cap;
    int unusable = 0;
    /* In off mode nothing is ever written: no reason to touch the disk. */
    if (parsed.mode != SN_MODE_OFF)
        unusable = sn_options_check_outputs(&parsed, problems + nbad, cap - nbad);
    sn_opt = parsed;
    sn_log_level = sn_opt.log;
    int nprob = nbad + unusable < cap ? nbad + unusable : cap;
    for (int i = 0; i < nprob; i++) {
        const sn_option_problem *p = &problems[i];
        if (p->why[0] && sn_opt.strict)
            sn_error("%s=%s cannot be used: %s", p->variable, p->value, p->why);
        else if (p->why[0])
            sn_warn("%s=%s cannot be used: %s; %s is off", p->variable, p->value, p->why, p->variable);
        else if (sn_opt.strict)
            sn_error("%s=%s is not valid (accepted: %s)", p->variable, p->value, p->accepted);
        else
            sn_warn("%s=%s is not valid (accepted: %s); using the default, %s", p->variable,
                    p->value, p->accepted, p->default_text);
    }
    if (sn_opt.help)
        sn_options_print_help();
    if (bad + unusable && sn_opt.strict) {
        sn_error("SN_STRICT=1: stopping over the value%s above", bad + unusable > 1 ? "s" : "");
        _exit(2);
    }
}
