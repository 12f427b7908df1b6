/*
 * sn_options.h — libsn's configuration, read once from the SN_* variables
 * listed in sn_options.def.
 *
 * Parsing is a pure function of a lookup callback so that tests can feed it
 * any environment; sn_options_load() applies it to the process environment,
 * reports each malformed value once (with the accepted forms and the default
 * used) and honours SN_STRICT and SN_HELP.
 */
#ifndef SN_OPTIONS_H
#define SN_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

#define SN_OPT_PATH_MAX 4096

enum sn_mode { SN_MODE_OFF = 0, SN_MODE_TRACE = 1, SN_MODE_MANAGE = 2 };
enum sn_policy {
    SN_POLICY_AUTO, SN_POLICY_LRU, SN_POLICY_VDNN_ALL, SN_POLICY_VDNN_CONV, SN_POLICY_VDNN_DYN,
    SN_POLICY_SUPERNEURONS, SN_POLICY_MODNN, SN_POLICY_POOCH, SN_POLICY_DYMEM
};
enum sn_workspace_choice { SN_WORKSPACE_AUTO, SN_WORKSPACE_KEEP, SN_WORKSPACE_MIN };
/* SN_DEBUG_BREAK: deliberate residency bugs, for the tests that prove the
 * simulator catches them. */
enum sn_debug_break { SN_BREAK_NONE, SN_BREAK_SKIP_SWAP_IN, SN_BREAK_EARLY_SWAP_OUT, SN_BREAK_SLOW_RELEASE };

/* SN_BUDGET: free memory, an absolute byte count, or a share of the device. */
enum sn_size_kind { SN_SIZE_FREE = 0, SN_SIZE_BYTES = 1, SN_SIZE_PERCENT = 2 };
typedef struct sn_size_opt {
    int kind;
    uint64_t bytes;     /* SN_SIZE_BYTES */
    double percent;     /* SN_SIZE_PERCENT, in (0, 100] */
} sn_size_opt;

/* OUTPUT: stderr, off, a path, or "auto" (decided by the mode). */
enum sn_output_kind { SN_OUT_AUTO = 0, SN_OUT_OFF = 1, SN_OUT_STDERR = 2, SN_OUT_PATH = 3 };
typedef struct sn_output_opt {
    int kind;
    char path[SN_OPT_PATH_MAX];
} sn_output_opt;

typedef int sn_opt_ENUM;
typedef int sn_opt_BOOL;
typedef long sn_opt_INT;
typedef sn_size_opt sn_opt_SIZE;
typedef sn_output_opt sn_opt_OUTPUT;
typedef sn_output_opt sn_opt_PATH;

typedef struct sn_options {
#define SN_OPTION(field, var, type, def, accepted, lo, hi, help) sn_opt_##type field;
#include "common/sn_options.def"
#undef SN_OPTION
} sn_options;

/* One malformed value found while parsing (accepted and default_text set),
 * or one output that cannot be used (why set, the others NULL). */
typedef struct sn_option_problem {
    const char *variable;
    const char *accepted;
    const char *default_text;
    char value[256];
    char why[512];
} sn_option_problem;

typedef const char *(*sn_option_lookup)(const char *variable, void *ctx);

/* Fills o from lookup (NULL or "" means unset). Malformed values are
 * replaced by the default and listed in problems (up to max_problems).
 * Returns the number of malformed values. */
int sn_options_parse(sn_options *o, sn_option_lookup lookup, void *ctx,
                     sn_option_problem *problems, int max_problems);

/* Resolves and checks the output paths of o (SN_REPORT, SN_TRACE, SN_PLOT
 * when they name a path), against the current working directory: the
 * directory must exist and a file must be creatable in it; the file itself
 * must be absent or a regular file other than the one the program's stdout
 * or stderr goes to (a symbolic link, device, FIFO, socket or directory is
 * refused); and no two outputs may be the same file (the first in table
 * order keeps it). A usable path is replaced by its absolute form (its
 * directory resolved, its last component as given); an unusable one turns
 * that output off and is listed in problems. Returns the number turned
 * off. Touches the file system: creates and removes a probe file in each
 * output's directory. */
int sn_options_check_outputs(sn_options *o, sn_option_problem *problems, int max_problems);

/* The process-wide options, valid after sn_options_load(). */
extern sn_options sn_opt;

/* Whether libsn chooses convolutions' algorithms and workspaces: manage
 * mode with a plan (not SN_POLICY=lru) that may change them (not
 * SN_WORKSPACE=keep). Otherwise a convolution runs as the framework made
 * it, is never measured by libsn, and its wrapper forwards it itself. */
static inline int sn_opt_chooses_convs(void)
{
    return sn_opt.mode == SN_MODE_MANAGE && sn_opt.workspace != SN_WORKSPACE_KEEP && sn_opt.policy != SN_POLICY_LRU;
}

/* Parses the environment into sn_opt once (later calls do nothing), checks
 * the output paths unless SN_MODE=off, warns about malformed values and
 * unusable outputs, prints the table if SN_HELP=1, exits with status 2 on
 * either kind of problem if SN_STRICT=1. Safe to call from a constructor. */
void sn_options_load(void);

/* Writes the option table (name, accepted values, default, meaning) to fd 2. */
void sn_options_print_help(void);

/* Writes the option table as a Markdown table to fd (used by the docs). */
void sn_options_write_markdown(int fd);

/* Choice names of an ENUM option value, e.g. sn_option_choice("SN_MODE", 1)
 * is "trace"; NULL if out of range. */
const char *sn_option_choice(const char *variable, int index);

/* Parses a SIZE value as sn_options.def defines it: "12G", "512MiB",
 * "100000", "1.5G", "80%", "free". Returns 0 on success. */
int sn_parse_size(const char *text, sn_size_opt *out);

#endif
