/* SPDX-License-Identifier: MIT */
/*
 * cli.h — strict command-line parsing shared by rcanvas-demo, rcanvas-encode and the benchmarks (header only; not
 * part of the library). Numbers must be the whole argument, in range ("abc", "12x", "", " 5" and overflow are
 * refused), and a usage error is one line naming the argument and the rule it broke, then a hint, exit status 2:
 *     rcanvas-demo: --quality 0: must be an integer from 1 to 100
 *     try 'rcanvas-demo --help'
 */
#ifndef RC_CLI_H
#define RC_CLI_H

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CLI_USAGE 2 /* exit status of a usage error; --help exits 0 */

/* Prints "PROG: MESSAGE" and the --help hint to stderr. Returns CLI_USAGE, so `return cli_error(...)` exits. */
static inline int cli_error(const char *prog, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline int cli_error(const char *prog, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", prog);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\ntry '%s --help'\n", prog);
    va_end(ap);
    return CLI_USAGE;
}

/* An argument as the user typed it, for messages: '' when empty, quoted when it holds a space. */
static inline const char *cli_show(const char *v, char *buf, size_t cap) {
    if (*v && !strpbrk(v, " \t")) return v;
    snprintf(buf, cap, "'%s'", v);
    return buf;
}

/* 0 and *out if the whole of s is a decimal integer in [min, max]; -1 otherwise (*out untouched). */
static inline int cli_parse_long(const char *s, long min, long max, long *out) {
    if (!s || !*s || isspace((unsigned char)*s)) return -1; /* strtol would skip leading blanks */
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < min || v > max) return -1;
    *out = v;
    return 0;
}

/* 0 and *out if the whole of s is a finite decimal number in [min, max]; -1 otherwise. */
static inline int cli_parse_double(const char *s, double min, double max, double *out) {
    if (!s || !*s || isspace((unsigned char)*s)) return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v) || v < min || v > max) return -1;
    *out = v;
    return 0;
}

/* Takes the value of option argv[*i] (advancing *i). NULL when there is none, or when the next argument is
 * itself an option ("--port --verbose"); the caller then reports it with cli_missing(). */
static inline const char *cli_value(int argc, char **argv, int *i) {
    if (*i + 1 >= argc || !strncmp(argv[*i + 1], "--", 2)) return NULL;
    return argv[++*i];
}

/* "PROG: OPT: needs a value (RULE)". Returns CLI_USAGE. */
static inline int cli_missing(const char *prog, const char *opt, const char *rule) {
    return cli_error(prog, "%s: needs a value (%s)", opt, rule);
}

/* Option OPT with value v (NULL = missing) as an integer in [min, max] into *out. 0, or CLI_USAGE after
 * reporting "PROG: OPT V: must be an integer from MIN to MAX". */
static inline int cli_int(const char *prog, const char *opt, const char *v, long min, long max, int *out) {
    char rule[96], b[64];
    snprintf(rule, sizeof rule, "an integer from %ld to %ld", min, max);
    if (!v) return cli_missing(prog, opt, rule);
    long x;
    if (cli_parse_long(v, min, max, &x)) return cli_error(prog, "%s %s: must be %s", opt, cli_show(v, b, sizeof b), rule);
    *out = (int)x;
    return 0;
}

/* Option OPT with value v (NULL = missing) as a number in [min, max] into *out. 0 or CLI_USAGE (reported). */
static inline int cli_number(const char *prog, const char *opt, const char *v, double min, double max, double *out) {
    char rule[96], b[64];
    snprintf(rule, sizeof rule, "a number from %.10g to %.10g", min, max); /* whole up to 10 digits */
    if (!v) return cli_missing(prog, opt, rule);
    if (cli_parse_double(v, min, max, out)) return cli_error(prog, "%s %s: must be %s", opt, cli_show(v, b, sizeof b), rule);
    return 0;
}

/* Option OPT with value v (NULL = missing) as one of the NULL-terminated words: its index, or -1 after reporting
 * "PROG: OPT V: must be one of: A, B". */
static inline int cli_choice(const char *prog, const char *opt, const char *v, const char *const *words) {
    char rule[160] = "one of:", b[64];
    size_t n = strlen(rule);
    for (int k = 0; words[k]; k++) {
        if (v && !strcmp(v, words[k])) return k;
        n += (size_t)snprintf(rule + n, sizeof rule - n, "%s %s", k ? "," : "", words[k]);
        if (n >= sizeof rule) n = sizeof rule - 1;
    }
    if (!v) cli_missing(prog, opt, rule);
    else cli_error(prog, "%s %s: must be %s", opt, cli_show(v, b, sizeof b), rule);
    return -1;
}

/* What a hand-written option loop does with an argument none of its options took: "-h" or "--help" prints usage and
 * ends the program with 0; another "-x" is an unknown option; anything else is the one positional argument, into
 * *pos (NULL: the program takes none; `what` names it in the message about a second one). -1 to go on, else the
 * exit status (0 after the help, CLI_USAGE after an error). */
static inline int cli_rest(const char *prog, const char *usage, const char *a, const char **pos, const char *what) {
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
        fputs(usage, stdout);
        return 0;
    }
    if (a[0] == '-' && a[1]) return cli_error(prog, "%s: unknown option", a);
    if (!pos) return cli_error(prog, "%s: unexpected argument", a);
    if (*pos) return cli_error(prog, "%s: unexpected argument (%s is %s already)", a, what, *pos);
    *pos = a;
    return -1;
}

#endif
