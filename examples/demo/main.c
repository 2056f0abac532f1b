/* SPDX-License-Identifier: MIT */
/*
 * rcanvas-demo — the demo app: a CPU-rendered Mandelbrot/Julia explorer streamed to the browser (drag pans, the
 * wheel zooms, double-click zooms in, keys: p palette, j Julia, a animation, r reset, +/- iterations), or a
 * loop over the PNG files of a directory (--frames DIR; a click toggles a marker over them), or a fixed test pattern (--scene test, for tests); with
 * --gpu the fractal is rendered by a Vulkan compute shader and read back through rcanvas_present_vk().
 * It shows the app side of rcanvas: wait for a due draw, drain events, render at the physical size, present.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "frames.h"
#include "gpu_scene.h"
#include "rcanvas.h"
#if RCANVAS_HAVE_VULKAN
#include "rcanvas_vk.h"
#endif
#include "scene.h"

static volatile sig_atomic_t g_stop = 0;
static void on_signal(int sig) {
    (void)sig;
    g_stop = 1;
}

static int g_verbose = 0;
static void log_cb(void *user, rcanvas_log_level level, const char *msg) {
    (void)user;
    static const char *names[] = {"error", "warn", "info", "debug"};
    fprintf(stderr, "[rcanvas %s] %s\n", names[level], msg);
}

static const char USAGE[] =
    "usage: rcanvas-demo [options]\n"
    "  --host ADDR          address to bind (default 127.0.0.1)\n"
    "  --port N             TCP port 0-65535 (default 8080; 0 = any free port)\n"
    "  --token T            interactive token (input, may become active): 22-128 characters of A-Z a-z 0-9 _ -\n"
    "                       (default: random, 128 bits)\n"
    "  --view-token T       view-only token (frames, no input, never active): same rule (default: random)\n"
    "  --token-file FILE, --view-token-file FILE  the token from FILE (one line; a regular file of yours or\n"
    "                       root's, not readable by others, writable by its owner alone),\n"
    "                       kept out of the command line that every local user sees in ps\n"
    "  --allow-host NAME    accept this Host name (any port), against DNS rebinding; repeatable; \"*\" = any.\n"
    "                       Bound to loopback, localhost, 127.0.0.1 and [::1] are accepted without it\n"
    "  --allow-origin ORIGIN  accept WebSocket upgrades from this Origin too (e.g. https://proxy.example); repeatable\n"
    "  --base-path /PREFIX  the prefix a reverse proxy serves the server under (e.g. /viz; docs/security.md)\n"
    "  --codec C            codec of live frames, one of rcanvas.h's (below); auto picks per viewer (h264, vp9,\n"
    "                       vp8, jpeg); av1 and h264-gpu are opt-in (docs/benchmarks.md)\n"
    "                       (H.264 in Vulkan compute shaders, openh264 where no device runs it); video goes\n"
    "                       to viewers whose browser decodes it, JPEG to the others (default auto)\n"
    "  --bitrate KBPS       top video bitrate in kbit/s, 100-200000: each viewer's follows its link up to it\n"
    "                       (default 50000)\n"
    "  --keyframe-interval N  video: a keyframe every N frames, 0 = only when a viewer needs one (default 0)\n"
    "  --rtp-out HOST:PORT  also send the canvas's video as RTP over UDP to HOST:PORT (an IP address, [IPv6]\n"
    "                       or a name; PORT 1-65534), RTCP sender reports to PORT+1, both from one local port\n"
    "                       where PLI/FIR feedback is read (e.g. a Janus streaming mountpoint: docs/sfu.md)\n"
    "  --rtp-codec h264|vp8 the RTP stream's codec (default h264: constrained baseline, packetization-mode=1)\n"
    "  --rtp-kbps KBPS      the RTP stream's rate, 100-200000 kbit/s: its encoder is shared with the WebSocket\n"
    "                       viewers whose links fall in the same rate rung (default 4000)\n"
    "  --rtp-mtu BYTES      largest RTP payload, 64-65000 (default 1200)\n"
    "  --rtp-pt N           RTP payload type, 96-127 (default 96)\n"
    "  --rtp-keyframe-ms MS a keyframe at least every MS ms, 0-3600000 (default 0: only when a PLI or FIR\n"
    "                       asks; set it for a receiver that sends no RTCP)\n"
    "  --refine-codec png|webp  codec of the lossless refinement (default png; webp: half the bytes, more CPU)\n"
    "  --video-threads N    threads of each video encoder, 1-64 (default: --threads; VP8: 1)\n"
    "  --quality Q          JPEG quality 1-100 (default 85)\n"
    "  --subsampling auto|420|444  JPEG chroma subsampling (default auto: 4:4:4 for the stripes or tiles\n"
    "                       whose thin coloured detail 4:2:0 would blur, else 4:2:0)\n"
    "  --fps F              frame rate cap, 0-1000 (default 60; 0 = no cap)\n"
    "  --frames DIR         play the PNG files of DIR in a loop instead of the fractal, one per draw (at most\n"
    "                       --fps a second); a left click toggles a magenta 256x256 square at 64,64 on them\n"
    "                       (input-to-pixels latency: make bench-vnc)\n"
    "  --scene mandelbrot|test  the scene (test: a fixed pattern for tests)\n"
    "  --gpu                render the fractal with Vulkan (compute shader) and stream it via GPU readback\n"
    "  --threads N          encoder threads 0-256 (default 0: all cores)\n"
    "  --max-viewers N      simultaneous viewers, 1-100000; one more is refused with 503 (default 256)\n"
    "  --tls-cert FILE      serve https and wss with this PEM certificate (and chain); needs --tls-key\n"
    "  --tls-key FILE       the certificate's private key (PEM, unencrypted)\n"
    "  --tls self-signed    https with a self-signed certificate made at the first start and kept in --tls-dir;\n"
    "                       its SHA-256 fingerprint is printed with the URL (compare it with the browser's)\n"
    "  --tls-dir DIR        where --tls self-signed keeps cert.pem and key.pem (default\n"
    "                       $XDG_STATE_HOME/rcanvas, else ~/.local/state/rcanvas)\n"
    "  --refine-ms MS       lossless refinement after MS ms still, 0-3600000 (default 300, 0 = off)\n"
    "  --max-canvas-pixels N  most physical pixels a viewer's resize may ask for (default 33177600 = 7680x4320)\n"
    "  --max-pixel-ratio R  largest devicePixelRatio honoured, 0.01 to 16 (default 8)\n"
    "  --ping-ms MS         ping a viewer silent for MS ms, 0 = never (default 5000; 0 also means\n"
    "                       --idle-timeout-ms 0: the timeout needs pings)\n"
    "  --idle-timeout-ms MS drop a viewer that answers no ping for MS ms, 0 = never; more than\n"
    "                       --ping-ms (default 20000)\n"
    "  --print-events       print each event the app receives to stdout\n"
    "  --verbose            log connections and warnings to stderr\n"
    "  --help               print this and exit\n";

#define PROG "rcanvas-demo"

/* The token rule of rcanvas_server_config.token, checked here so that a bad token is named before anything
 * starts. 0 if t follows it, else 1 and what is wrong in why (its length or a position: the token is a secret,
 * so messages never show it). */
static int token_problem(const char *t, char *why, size_t cap) {
    size_t n = strlen(t);
    if (n < 22 || n > 128) {
        snprintf(why, cap, "%zu characters", n);
        return 1;
    }
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)t[i]) && t[i] != '_' && t[i] != '-') {
            snprintf(why, cap, "character %zu is not allowed", i + 1);
            return 1;
        }
    return 0;
}

/* --token-file, --view-token-file (a service's token stays out of ps, which shows every command line to
 * every local user): the token from path's first line (a final "\n" or "\r\n" dropped), into out (cap bytes, 130
 * hold any good one). 0, or 1 and what is wrong in why: unreadable, not a regular file, readable by others, writable
 * by group or others, owned by another user (not root), or the token rule. */
static int read_token_file(const char *path, char *out, size_t cap, char *why, size_t whycap) {
    /* O_NONBLOCK: a FIFO must not hang the start (it is refused below: not a regular file) */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st)) {
        snprintf(why, whycap, "cannot be read: %s", strerror(errno));
        if (fd >= 0) close(fd);
        return 1;
    }
    /* checked on the open file (no race with a rename): a regular file, that no other user reads, and that only
     * we or root own and can write (a file another user owns or can write would let that user pick the token) */
    const char *bad = !S_ISREG(st.st_mode)                          ? "is not a regular file"
                      : (st.st_mode & S_IROTH)                      ? "is readable by others (chmod o-r)"
                      : (st.st_mode & (S_IWGRP | S_IWOTH))          ? "is writable by group or others (chmod go-w)"
                      : (st.st_uid != geteuid() && st.st_uid != 0) ? "is owned by another user"
                                                                     : NULL;
    FILE *f = bad ? NULL : fdopen(fd, "r");
    if (!f) {
        if (!bad) snprintf(why, whycap, "cannot be read: %s", strerror(errno));
        else snprintf(why, whycap, "%s", bad);
        close(fd);
        return 1;
    }
    size_t n = fread(out, 1, cap - 1, f);
    fclose(f);
    out[n] = '\0';
    /* a NUL would end the C string early: the token would silently be the part before it */
    if (memchr(out, '\0', n)) {
        snprintf(why, whycap, "holds a NUL byte (character %zu): must be 22 to 128 characters of A-Z a-z 0-9 _ -",
                 strlen(out) + 1);
        return 1;
    }
    if (n > 0 && out[n - 1] == '\n') out[--n] = '\0';
    if (n > 0 && out[n - 1] == '\r') out[--n] = '\0';
    char rule[64];
    if (!token_problem(out, rule, sizeof rule)) return 0;
    snprintf(why, whycap, "%s: must be 22 to 128 characters of A-Z a-z 0-9 _ -", rule);
    return 1;
}

/* Parses argv into the configs. Returns -1 to go on, or the exit status (0 after --help, CLI_USAGE after an error,
 * which it has reported). */
typedef struct video_opts {
    int bitrate_kbps, keyframe_interval; /* 0: the library's default */
    int refine_codec;                    /* 0: the library's default (PNG) */
    int video_threads;                   /* 0: the library's default */
    int tls_self_signed;                 /* --tls self-signed */
    const char *tls_dir;                 /* --tls-dir, NULL: the default (tls_default_dir) */
    char rtp_host[256];                  /* --rtp-out HOST:PORT; "" = no RTP output */
    rcanvas_rtp_config rtp;              /* its settings (--rtp-*) */
    int rtp_given;                       /* some --rtp-* other than --rtp-out was given */
    const char *encoder;                 /* --codec named an encoder, not a codec ("h264-gpu"); NULL: none */
} video_opts;

/* --rtp-out HOST:PORT: HOST an IPv4 address, a name, or [IPv6]; PORT 1-65534 (RTCP goes to PORT+1). 0, or
 * CLI_USAGE after naming what is wrong. */
static int parse_rtp_out(const char *opt, const char *v, video_opts *vo) {
    static const char rule[] = "HOST:PORT, e.g. 127.0.0.1:5004 or [::1]:5004";
    if (!v || !*v) return cli_missing(PROG, opt, rule);
    const char *colon = strrchr(v, ':');
    const char *h = v;
    size_t hl = colon ? (size_t)(colon - v) : 0;
    if (*v == '[') { /* [IPv6]:PORT */
        const char *close = strchr(v, ']');
        if (!close || close[1] != ':') return cli_error(PROG, "%s %s: must be %s", opt, v, rule);
        h = v + 1;
        hl = (size_t)(close - h);
        colon = close + 1;
    } else if (colon && memchr(v, ':', hl)) {
        return cli_error(PROG, "%s %s: an IPv6 address goes in brackets: [ADDR]:PORT", opt, v);
    }
    if (!colon || hl == 0 || hl >= sizeof vo->rtp_host) return cli_error(PROG, "%s %s: must be %s", opt, v, rule);
    long port;
    if (cli_parse_long(colon + 1, 1, 65534, &port))
        return cli_error(PROG, "%s %s: the port must be an integer from 1 to 65534 (RTCP goes to PORT+1)", opt, v);
    memcpy(vo->rtp_host, h, hl);
    vo->rtp_host[hl] = '\0';
    vo->rtp.port = (int)port;
    return 0;
}

/* The demo's options (getopt_long; each one's value checked in parse_args). Each has a value of its own, so that
 * getopt_long finds an abbreviation of two ("--to": --token or --token-file?) ambiguous. */
static const struct option k_opts[] = {
    {"help", no_argument, NULL, 'h' + 256}, /* -h is 'h': an error's optopt is then a short option's */
    {"print-events", no_argument, NULL, 256},
    {"gpu", no_argument, NULL, 257},
    {"verbose", no_argument, NULL, 258},
    {"host", required_argument, NULL, 259},
    {"port", required_argument, NULL, 260},
    {"token", required_argument, NULL, 261},
    {"view-token", required_argument, NULL, 262},
    {"token-file", required_argument, NULL, 263},
    {"view-token-file", required_argument, NULL, 264},
    {"allow-host", required_argument, NULL, 265},
    {"allow-origin", required_argument, NULL, 266},
    {"base-path", required_argument, NULL, 267},
    {"max-viewers", required_argument, NULL, 268},
    {"max-canvas-pixels", required_argument, NULL, 269},
    {"max-pixel-ratio", required_argument, NULL, 270},
    {"ping-ms", required_argument, NULL, 271},
    {"idle-timeout-ms", required_argument, NULL, 272},
    {"threads", required_argument, NULL, 273},
    {"quality", required_argument, NULL, 274},
    {"fps", required_argument, NULL, 275},
    {"refine-ms", required_argument, NULL, 276},
    {"frames", required_argument, NULL, 277},
    {"scene", required_argument, NULL, 278},
    {"codec", required_argument, NULL, 279},
    {"bitrate", required_argument, NULL, 280},
    {"video-threads", required_argument, NULL, 281},
    {"refine-codec", required_argument, NULL, 282},
    {"rtp-out", required_argument, NULL, 283},
    {"rtp-codec", required_argument, NULL, 284},
    {"rtp-kbps", required_argument, NULL, 285},
    {"rtp-mtu", required_argument, NULL, 286},
    {"rtp-pt", required_argument, NULL, 287},
    {"rtp-keyframe-ms", required_argument, NULL, 288},
    {"keyframe-interval", required_argument, NULL, 289},
    {"subsampling", required_argument, NULL, 290},
    {"tls-cert", required_argument, NULL, 291},
    {"tls-key", required_argument, NULL, 292},
    {"tls-dir", required_argument, NULL, 293},
    {"tls", required_argument, NULL, 294},
    {NULL, 0, NULL, 0}};

/* The option an argument names ("--por" is --port: getopt_long takes unique prefixes), for the messages; the
 * argument itself where none. */
static const char *opt_named(const char *arg, char *buf, size_t cap) {
    if (arg[0] != '-' || arg[1] != '-') return arg;
    size_t n = strcspn(arg + 2, "=");
    const struct option *hit = NULL;
    for (const struct option *o = k_opts; o->name; o++) {
        if (strncmp(o->name, arg + 2, n)) continue;
        if (!o->name[n]) { /* exact: --tls, not --tls-cert */
            hit = o;
            break;
        }
        if (!hit) hit = o;
    }
    if (!hit) return arg;
    snprintf(buf, cap, "--%s", hit->name);
    return buf;
}

/* What --codec takes, into words[0..cap-1), NULL after the last: every codec name of rcanvas.h's table
 * (RCANVAS_CODECS) in its order, then the names of this build's other encoders (rcanvas_encoder_name: "h264-gpu"),
 * so that a codec or encoder the library adds needs nothing here. */
static void codec_names(const char **words, int cap) {
    int n = 0;
    for (int c = 0; c < 256 && n < cap - 1; c++)
        if (rcanvas_codec_name(c)) words[n++] = rcanvas_codec_name(c);
    for (int i = 0; rcanvas_encoder_name(i) && n < cap - 1; i++)
        if (rcanvas_codec_from_name(rcanvas_encoder_name(i)) < 0) words[n++] = rcanvas_encoder_name(i);
    words[n] = NULL;
}

static int parse_args(int argc, char **argv, rcanvas_server_config *scfg, rcanvas_canvas_config *ccfg,
                      const char **frames_dir, int *test_scene, int *print_events, int *gpu, video_opts *vo) {
    int idle_given = 0; /* --idle-timeout-ms was given (else --ping-ms 0 turns it off too) */
    const char *codecs[33];
    codec_names(codecs, 33);
    static const char *const subs[] = {"420", "444", "auto", NULL},
                             *const scenes[] = {"mandelbrot", "test", NULL};
    int k;
    opterr = 0; /* the messages are ours (cli.h's forms) */
    optind = 1;
    for (;;) {
        int idx = -1, c = getopt_long(argc, argv, "+:h", k_opts, &idx);
        if (c == -1) break;
        if (c == '?') {
            if (optopt > 0 && optopt < 256) return cli_error(PROG, "-%c: unknown option", optopt);
            return cli_error(PROG, "%s: unknown option", argv[optind - 1]);
        }
        char nb[40];
        const char *a = c == ':' ? opt_named(argv[optind - 1], nb, sizeof nb) : c == 'h' || c == 'h' + 256 ? "--help"
                      : (snprintf(nb, sizeof nb, "--%s", k_opts[idx].name), nb);
        /* a value that is itself an option ("--port --verbose") is a missing one, as cli_value() has it */
        const char *v = c == ':' ? NULL : optarg, *val = v;
        if (v && v == argv[optind - 1] && !strncmp(v, "--", 2)) val = NULL, optind--;
        if (!strcmp(a, "--help")) {
            fputs(USAGE, stdout);
            printf("\ncodecs (--codec):");
            for (int i = 0; codecs[i]; i++) printf(" %s", codecs[i]);
            printf("\n");
            return 0;
        } else if (!strcmp(a, "--print-events")) {
            *print_events = 1;
        } else if (!strcmp(a, "--gpu")) {
            *gpu = 1;
        } else if (!strcmp(a, "--verbose")) {
            g_verbose = 1;
        } else if (!strcmp(a, "--host")) {
            if (!(v = val)) return cli_missing(PROG, a, "an address such as 127.0.0.1");
            if (!*v || strlen(v) > 255) return cli_error(PROG, "%s: must be an address of 1 to 255 characters", a);
            scfg->host = v;
        } else if (!strcmp(a, "--port")) {
            if (cli_int(PROG, a, val, 0, 65535, &scfg->port)) return CLI_USAGE;
        } else if (!strcmp(a, "--token") || !strcmp(a, "--view-token")) {
            const char *rule = "22 to 128 characters of A-Z a-z 0-9 _ -";
            if (!(v = val)) return cli_missing(PROG, a, rule);
            char why[64];
            if (token_problem(v, why, sizeof why)) return cli_error(PROG, "%s: %s: must be %s", a, why, rule);
            *(a[2] == 't' ? &scfg->token : &scfg->view_token) = v;
        } else if (!strcmp(a, "--token-file") || !strcmp(a, "--view-token-file")) {
            static char tokens[2][130];
            int view = a[2] == 'v';
            char why[128];
            if (!(v = val)) return cli_missing(PROG, a, "a file holding the token");
            if (read_token_file(v, tokens[view], sizeof tokens[view], why, sizeof why))
                return cli_error(PROG, "%s %s: %s", a, v, why);
            *(view ? &scfg->view_token : &scfg->token) = tokens[view];
        } else if (!strcmp(a, "--allow-host") || !strcmp(a, "--allow-origin")) {
            int host = a[8] == 'h';
            if (!(v = val) || !*v || strlen(v) > 255)
                return cli_missing(PROG, a, host ? "a host name such as viz.example.org" : "an origin such as https://viz.example.org");
            static const char *hosts[64], *origins[64];
            int *n = host ? &scfg->n_allowed_hosts : &scfg->n_allowed_origins;
            if (*n == 64) return cli_error(PROG, "%s: at most 64", a);
            (host ? hosts : origins)[(*n)++] = v;
            if (host) scfg->allowed_hosts = hosts;
            else scfg->allowed_origins = origins;
        } else if (!strcmp(a, "--base-path")) {
            if (!(v = val)) return cli_missing(PROG, a, "a path such as /viz");
            if (v[0] != '/' || strlen(v) > 200 || strstr(v, "//") || strstr(v, "/./") || strstr(v, "/../") ||
                strspn(v, "/abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._~-") != strlen(v))
                return cli_error(PROG, "%s: must be / then segments of A-Z a-z 0-9 . _ ~ - (at most 200 bytes)", a);
            scfg->base_path = v;
        } else if (!strcmp(a, "--max-viewers")) {
            if (cli_int(PROG, a, val, 1, 100000, &scfg->max_viewers)) return CLI_USAGE;
        } else if (!strcmp(a, "--max-canvas-pixels")) {
            double px;
            if (cli_number(PROG, a, val, 1, 4294967296.0, &px)) return CLI_USAGE;
            scfg->max_canvas_pixels = (uint64_t)px;
        } else if (!strcmp(a, "--max-pixel-ratio")) {
            if (cli_number(PROG, a, val, 0.01, 16, &scfg->max_pixel_ratio)) return CLI_USAGE;
        } else if (!strcmp(a, "--ping-ms")) {
            if (cli_int(PROG, a, val, 0, 3600000, &scfg->ping_ms)) return CLI_USAGE;
        } else if (!strcmp(a, "--idle-timeout-ms")) {
            if (cli_int(PROG, a, val, 0, 3600000, &scfg->idle_timeout_ms)) return CLI_USAGE;
            idle_given = 1;
        } else if (!strcmp(a, "--threads")) {
            if (cli_int(PROG, a, val, 0, 256, &scfg->encode_threads)) return CLI_USAGE;
        } else if (!strcmp(a, "--quality")) {
            if (cli_int(PROG, a, val, 1, 100, &ccfg->quality)) return CLI_USAGE;
        } else if (!strcmp(a, "--fps")) {
            if (cli_number(PROG, a, val, 0, 1000, &ccfg->max_fps)) return CLI_USAGE;
        } else if (!strcmp(a, "--refine-ms")) {
            if (cli_int(PROG, a, val, 0, 3600000, &ccfg->refine_ms)) return CLI_USAGE;
        } else if (!strcmp(a, "--frames")) {
            if (!(v = val) || !*v) return cli_missing(PROG, a, "a directory of PNG files");
            *frames_dir = v;
        } else if (!strcmp(a, "--scene")) {
            if ((k = cli_choice(PROG, a, val, scenes)) < 0) return CLI_USAGE;
            *test_scene = k == 1;
        } else if (!strcmp(a, "--codec")) {
            if ((k = cli_choice(PROG, a, val, codecs)) < 0) return CLI_USAGE;
            int id = rcanvas_codec_from_name(codecs[k]);
            ccfg->codec = id >= 0 ? (rcanvas_codec)id : RCANVAS_CODEC_AUTO;
            vo->encoder = id >= 0 ? NULL : codecs[k]; /* an encoder's name: set once the canvas exists */
        } else if (!strcmp(a, "--bitrate")) {
            if (cli_int(PROG, a, val, 100, 200000, &vo->bitrate_kbps)) return CLI_USAGE;
        } else if (!strcmp(a, "--video-threads")) {
            if (cli_int(PROG, a, val, 1, 64, &vo->video_threads)) return CLI_USAGE;
        } else if (!strcmp(a, "--refine-codec")) {
            static const char *const refine[] = {"png", "webp", NULL};
            if ((k = cli_choice(PROG, a, val, refine)) < 0) return CLI_USAGE;
            vo->refine_codec = k ? RCANVAS_CODEC_WEBP : RCANVAS_CODEC_PNG;
        } else if (!strcmp(a, "--rtp-out")) {
            if (parse_rtp_out(a, val, vo)) return CLI_USAGE;
        } else if (!strcmp(a, "--rtp-codec")) {
            static const char *const rtp_codecs[] = {"h264", "vp8", NULL};
            if ((k = cli_choice(PROG, a, val, rtp_codecs)) < 0) return CLI_USAGE;
            vo->rtp.codec = k == 0 ? RCANVAS_CODEC_H264 : RCANVAS_CODEC_VP8;
            vo->rtp_given = 1;
        } else if (!strcmp(a, "--rtp-kbps")) {
            if (cli_int(PROG, a, val, 100, 200000, &vo->rtp.kbps)) return CLI_USAGE;
            vo->rtp_given = 1;
        } else if (!strcmp(a, "--rtp-mtu")) {
            if (cli_int(PROG, a, val, 64, 65000, &vo->rtp.mtu)) return CLI_USAGE;
            vo->rtp_given = 1;
        } else if (!strcmp(a, "--rtp-pt")) {
            if (cli_int(PROG, a, val, 96, 127, &vo->rtp.payload_type)) return CLI_USAGE;
            vo->rtp_given = 1;
        } else if (!strcmp(a, "--rtp-keyframe-ms")) {
            if (cli_int(PROG, a, val, 0, 3600000, &vo->rtp.keyframe_ms)) return CLI_USAGE;
            vo->rtp_given = 1;
        } else if (!strcmp(a, "--keyframe-interval")) {
            if (cli_int(PROG, a, val, 0, 100000, &vo->keyframe_interval)) return CLI_USAGE;
        } else if (!strcmp(a, "--subsampling")) {
            if ((k = cli_choice(PROG, a, val, subs)) < 0) return CLI_USAGE;
            ccfg->subsampling = k == 2 ? RCANVAS_SUBSAMP_AUTO : k ? RCANVAS_SUBSAMP_444 : RCANVAS_SUBSAMP_420;
        } else if (!strcmp(a, "--tls-cert") || !strcmp(a, "--tls-key") || !strcmp(a, "--tls-dir")) {
            int kind = a[6] == 'c' ? 0 : a[6] == 'k' ? 1 : 2;
            if (!(v = val) || !*v)
                return cli_missing(PROG, a, kind == 2 ? "a directory" : "a PEM file");
            if (kind == 0) scfg->tls_cert = v;
            else if (kind == 1) scfg->tls_key = v;
            else vo->tls_dir = v;
        } else if (!strcmp(a, "--tls")) {
            static const char *const tls_modes[] = {"self-signed", NULL};
            if (cli_choice(PROG, a, val, tls_modes) < 0) return CLI_USAGE;
            vo->tls_self_signed = 1;
        }
    }
    if (optind < argc) return cli_error(PROG, "%s: unexpected argument (the demo takes options only)", argv[optind]);
    /* Keep-alive: a viewer is dropped only after a ping it does not answer, so --ping-ms 0 alone turns
     * the idle timeout off too; both given and in conflict, or a timeout not past the ping, is named here (the
     * library would only say "invalid argument"). */
    if (scfg->ping_ms == 0 && !idle_given) scfg->idle_timeout_ms = 0;
    if (scfg->ping_ms == 0 && scfg->idle_timeout_ms > 0)
        return cli_error(PROG, "--idle-timeout-ms %d: needs pings (--ping-ms 0 turns them off; use --idle-timeout-ms 0)",
                         scfg->idle_timeout_ms);
    if (scfg->idle_timeout_ms > 0 && scfg->idle_timeout_ms <= scfg->ping_ms) {
        if (idle_given)
            return cli_error(PROG, "--idle-timeout-ms %d: must be more than --ping-ms (%d)", scfg->idle_timeout_ms,
                             scfg->ping_ms);
        return cli_error(PROG, "--ping-ms %d: must be less than --idle-timeout-ms (%d, the default), or give both",
                         scfg->ping_ms, scfg->idle_timeout_ms);
    }
    /* --gpu renders the fractal itself: a frame directory or the test pattern would be ignored */
    if (vo->rtp_given && !vo->rtp_host[0]) return cli_error(PROG, "--rtp-codec, --rtp-kbps, --rtp-mtu, --rtp-pt and "
                                                             "--rtp-keyframe-ms need --rtp-out HOST:PORT");
    if (*gpu && *frames_dir) return cli_error(PROG, "--gpu: cannot be combined with --frames");
    if (*gpu && *test_scene) return cli_error(PROG, "--gpu: cannot be combined with --scene test");
    /* TLS: a certificate and its key, or a self-signed one, not both */
    if (vo->tls_self_signed && (scfg->tls_cert || scfg->tls_key))
        return cli_error(PROG, "--tls self-signed: cannot be combined with --tls-cert or --tls-key");
    if (scfg->tls_cert && !scfg->tls_key) return cli_error(PROG, "--tls-cert: needs --tls-key (its private key)");
    if (scfg->tls_key && !scfg->tls_cert) return cli_error(PROG, "--tls-key: needs --tls-cert (its certificate)");
    if (vo->tls_dir && !vo->tls_self_signed) return cli_error(PROG, "--tls-dir: needs --tls self-signed");
    return -1;
}

/* The test pattern: four solid quadrants (red, green, blue, white) shifted by the drag offset, with a 1-pixel
 * black border; exact under PNG, so tests can check decoded pixels. */
static void render_test(uint8_t *px, uint32_t w, uint32_t h, size_t pitch, int ox, int oy) {
    static const uint8_t col[4][3] = {{255, 0, 0}, {0, 255, 0}, {0, 0, 255}, {255, 255, 255}};
    for (uint32_t y = 0; y < h; y++) {
        uint8_t *row = px + y * pitch;
        for (uint32_t x = 0; x < w; x++) {
            long sx = ((long)x - ox) % (long)w, sy = ((long)y - oy) % (long)h;
            if (sx < 0) sx += w;
            if (sy < 0) sy += h;
            int q = (sx >= (long)w / 2) + 2 * (sy >= (long)h / 2);
            int border = x == 0 || y == 0 || x == w - 1 || y == h - 1;
            row[4 * x + 0] = border ? 0 : col[q][0];
            row[4 * x + 1] = border ? 0 : col[q][1];
            row[4 * x + 2] = border ? 0 : col[q][2];
            row[4 * x + 3] = 255;
        }
    }
}

static void print_event(const rcanvas_event *e) {
    printf("event %s viewer=%u", rcanvas_event_type_name(e->type), e->viewer_id);
    switch (e->type) {
    case RCANVAS_EVENT_RESIZE: printf(" width=%g height=%g pixel_ratio=%g", e->width, e->height, e->pixel_ratio); break;
    case RCANVAS_EVENT_WHEEL: printf(" x=%g y=%g dx=%g dy=%g modifiers=%u", e->x, e->y, e->dx, e->dy, e->modifiers); break;
    case RCANVAS_EVENT_KEY_DOWN:
    case RCANVAS_EVENT_KEY_UP: printf(" key=%s modifiers=%u", e->key, e->modifiers); break;
    case RCANVAS_EVENT_CHAR: printf(" data=%s", e->data); break;
    case RCANVAS_EVENT_CLOSE: break;
    default: printf(" x=%g y=%g button=%d buttons=%u modifiers=%u", e->x, e->y, e->button, e->buttons, e->modifiers);
    }
    printf("\n");
    fflush(stdout);
}

/* Where --tls self-signed keeps its certificate without --tls-dir: $XDG_STATE_HOME/rcanvas, else
 * $HOME/.local/state/rcanvas (the XDG base-directory default). 0, or -1 when neither variable is set. */
static int tls_default_dir(char *out, size_t cap) {
    const char *x = getenv("XDG_STATE_HOME"), *h = getenv("HOME");
    int n;
    if (x && *x == '/') n = snprintf(out, cap, "%s/rcanvas", x);
    else if (h && *h) n = snprintf(out, cap, "%s/.local/state/rcanvas", h);
    else return -1;
    return n > 0 && (size_t)n < cap ? 0 : -1;
}

/* --tls self-signed: makes or reuses DIR/cert.pem and DIR/key.pem (rcanvas_tls_self_signed) and points the
 * server's config at them. 0, or 1 after printing why not. */
static int setup_self_signed(const video_opts *vo, rcanvas_server_config *scfg, char *cert, char *key, size_t cap) {
    char dir[2048];
    if (vo->tls_dir) snprintf(dir, sizeof dir, "%s", vo->tls_dir);
    else if (tls_default_dir(dir, sizeof dir)) {
        fprintf(stderr, PROG ": --tls self-signed: neither XDG_STATE_HOME nor HOME is set: give --tls-dir\n");
        return 1;
    }
    int created = 0;
    int r = rcanvas_tls_self_signed(dir, scfg->host, log_cb, NULL, cert, key, cap, &created);
    if (r) {
        fprintf(stderr, PROG ": --tls self-signed: cannot make a certificate in %s: %s\n", dir, rcanvas_strerror(r));
        return 1;
    }
    printf(PROG ": %s self-signed certificate %s\n", created ? "made a" : "using the", cert);
    scfg->tls_cert = cert;
    scfg->tls_key = key;
    return 0;
}

/* The render buffer for a frame of need bytes: *pixels grown or shrunk to fit. Grown by free then malloc, not
 * realloc (the contents are redrawn anyway: no copy, and the old block is gone before the new one is taken); given
 * back when the size drops to half or less of a block over 4 MiB, so that one giant resize does not keep its
 * buffer for the rest of the run (133 MB at the 33 Mpx cap). NULL when out of memory. */
static uint8_t *fit_buffer(uint8_t **pixels, size_t *cap, size_t need) {
    if (need <= *cap && !(*cap > ((size_t)4 << 20) && *cap / 2 >= need)) return *pixels;
    int shrink = need < *cap;
    free(*pixels);
    *pixels = malloc(need);
    *cap = *pixels ? need : 0;
#ifdef __GLIBC__
    if (shrink) malloc_trim(0); /* the freed pages of glibc's heaps go back too (the big block may not be mmap'd) */
#endif
    return *pixels;
}

int main(int argc, char **argv) {
    rcanvas_server_config scfg;
    rcanvas_server_config_init(&scfg);
    rcanvas_canvas_config ccfg;
    rcanvas_canvas_config_init(&ccfg);
    /* The demo shows what rcanvas is for: video to every browser that decodes it (WebCodecs: https or loopback),
     * JPEG to the others; the library's own default stays JPEG, which every caller's viewer decodes. */
    ccfg.codec = RCANVAS_CODEC_AUTO;
    ccfg.title = "rcanvas demo";
    const char *frames_dir = NULL;
    int print_events = 0, gpu = 0, test_scene = 0;
    video_opts vo = {0};
    rcanvas_rtp_config_init(&vo.rtp);
    int st = parse_args(argc, argv, &scfg, &ccfg, &frames_dir, &test_scene, &print_events, &gpu, &vo);
    if (st >= 0) return st;
    scfg.log = log_cb;
    scfg.log_level = g_verbose ? RCANVAS_LOG_INFO : RCANVAS_LOG_ERROR;

    frame_set *fs = NULL;
    if (frames_dir) {
        char err[256];
        if (frame_set_load(frames_dir, &fs, err, sizeof err)) {
            fprintf(stderr, "rcanvas-demo: --frames %s: %s\n", frames_dir, err);
            return 1;
        }
        /* The player shows a new frame at every draw: the library paces it (--fps, and flow control) and
         * rcanvas_wait() returns when the next one is due. (It used to request a draw from its own 1/fps clock,
         * looked at only when rcanvas_wait() returned: after a draw that came a few µs before that clock, the
         * next request waited for the 100 ms timeout, and a run locked at 10 fps instead of 30.) */
        ccfg.update_mode = RCANVAS_UPDATE_CONTINUOUS;
    }

    char tls_cert[2200], tls_key[2200];
    if (vo.tls_self_signed && setup_self_signed(&vo, &scfg, tls_cert, tls_key, sizeof tls_cert)) {
        frame_set_free(fs);
        return 1;
    }

    rcanvas_server *srv = NULL;
    int r = rcanvas_server_new(&scfg, &srv);
    if (r) {
        if (r == RCANVAS_ENET) /* the library logged why (above) */
            fprintf(stderr, "rcanvas-demo: cannot listen on %s:%d\n", scfg.host, scfg.port);
        else if (r == RCANVAS_ETLS) /* the library logged which file and why (above) */
            fprintf(stderr, "rcanvas-demo: cannot start TLS with --tls-cert %s --tls-key %s: %s\n", scfg.tls_cert,
                    scfg.tls_key, rcanvas_strerror(r));
        else if (r == RCANVAS_EADDRINUSE)
            fprintf(stderr, "rcanvas-demo: cannot listen on %s:%d: %s\n"
                            "try another --port (PORT= with make demo), or --port 0 for any free port\n",
                    scfg.host, scfg.port, rcanvas_strerror(r));
        else
            fprintf(stderr, "rcanvas-demo: cannot start the server on %s:%d: %s\n", scfg.host, scfg.port,
                    rcanvas_strerror(r));
        frame_set_free(fs);
        return 1;
    }
    rcanvas_canvas *cv = NULL;
    r = rcanvas_canvas_new(srv, &ccfg, &cv);
    if (r == RCANVAS_EINVAL && ccfg.codec != RCANVAS_CODEC_JPEG && ccfg.codec != RCANVAS_CODEC_PNG) {
        fprintf(stderr, "rcanvas-demo: --codec: this build has no encoder for it (see the configure output)\n");
        rcanvas_server_free(srv);
        frame_set_free(fs);
        return 1;
    }
    if (!r && vo.encoder) r = rcanvas_canvas_set_encoder(cv, vo.encoder);
    if (!r && vo.bitrate_kbps) r = rcanvas_canvas_set_option(cv, RCANVAS_OPT_BITRATE_KBPS, vo.bitrate_kbps);
    if (!r && vo.refine_codec) r = rcanvas_canvas_set_option(cv, RCANVAS_OPT_REFINE_CODEC, vo.refine_codec);
    if (!r && vo.video_threads) r = rcanvas_canvas_set_option(cv, RCANVAS_OPT_ENCODER_THREADS, vo.video_threads);
    if (!r && vo.keyframe_interval)
        r = rcanvas_canvas_set_option(cv, RCANVAS_OPT_KEYFRAME_INTERVAL, vo.keyframe_interval);
    if (!r && vo.rtp_host[0]) { /* the canvas's video as RTP too (docs/sfu.md, "RTP output") */
        rcanvas_rtp_output *ro = NULL;
        vo.rtp.host = vo.rtp_host;
        int e = rcanvas_canvas_add_rtp_output(cv, &vo.rtp, &ro);
        if (e) {
            if (e == RCANVAS_ENET) /* the library logged why */
                fprintf(stderr, "rcanvas-demo: --rtp-out %s:%d: HOST must be an IP address or a name that resolves, "
                        "with a route to it\n", vo.rtp_host, vo.rtp.port);
            else
                fprintf(stderr, "rcanvas-demo: --rtp-out %s:%d: %s%s\n", vo.rtp_host, vo.rtp.port, rcanvas_strerror(e),
                        e == RCANVAS_ECODEC ? " (--rtp-codec: this build has no encoder for it)" : "");
            rcanvas_server_free(srv);
            frame_set_free(fs);
            return 1;
        }
        rcanvas_rtp_stats rs;
        rcanvas_rtp_output_stats(ro, &rs);
        printf("rcanvas-demo: rtp %s to %s:%d (RTCP to port %d, from local port %d), payload type %d, SSRC %08x, "
               "mtu %d, %d kbit/s\n", vo.rtp.codec == RCANVAS_CODEC_VP8 ? "vp8" : "h264", vo.rtp_host, vo.rtp.port,
               vo.rtp.port + 1, rs.local_port, vo.rtp.payload_type, rs.ssrc, vo.rtp.mtu, vo.rtp.kbps);
    }
#if RCANVAS_HAVE_VULKAN
    rcanvas_vk *vk = NULL;
#endif
    gpu_scene *gs = NULL;
    if (!r && gpu) {
#if RCANVAS_HAVE_VULKAN
        rcanvas_vk_config vc;
        rcanvas_vk_config_init(&vc);
        vc.codec_device = 1; /* h264-gpu reads the frames on the GPU (gpu_scene waits on its queue, not the device) */
        r = rcanvas_vk_new(cv, &vc, &vk);
        if (!r && !(gs = gpu_scene_new(vk))) r = RCANVAS_EVULKAN;
#else
        fprintf(stderr, "rcanvas-demo: --gpu: this build has no Vulkan (RCANVAS_VULKAN=OFF)\n");
        r = RCANVAS_EINVAL;
#endif
    }
    scene *sc = (!r && !fs && !test_scene && !gpu) ? scene_new(0) : NULL;
    if (r || (!fs && !test_scene && !gpu && !sc)) {
        fprintf(stderr, "rcanvas-demo: %s\n", r ? rcanvas_strerror(r) : "out of memory");
        gpu_scene_free(gs);
#if RCANVAS_HAVE_VULKAN
        rcanvas_vk_free(vk);
#endif
        rcanvas_server_free(srv);
        frame_set_free(fs);
        return 1;
    }
    /* the handlers before the URLs go out: whoever reads them (a script, a test) may stop us at once, and a
     * signal before them killed the demo instead of stopping it cleanly (test_hello caught it in hello.c) */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    char url[512], view_url[512], fp[100];
    rcanvas_server_url(srv, NULL, url, sizeof url);
    rcanvas_server_view_url(srv, NULL, view_url, sizeof view_url);
    if (rcanvas_server_tls_fingerprint(srv, fp, sizeof fp) > 0) /* before the URLs, so that all are on screen */
        printf("rcanvas-demo: certificate SHA-256 fingerprint %s\n", fp);
    /* the interactive URL first (a hurried user took the first line, the view-only one, and dragging did
     * nothing); tests take the line with "open", and the view-only one by its label */
    printf("rcanvas-demo: open %s   (interactive: your mouse and keys reach the app)\n", url);
    printf("rcanvas-demo: view only (to share; input is ignored): %s\n", view_url);
    fflush(stdout);

    uint8_t *pixels = NULL;
    size_t cap = 0;
    size_t frame_index = 0;
    int dragging = 0, test_ox = 0, test_oy = 0, marker = 0;
    double last_x = 0, last_y = 0;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    double last_title_t = -1;
    char title[256] = "";
    int rc = 0;

    while (!g_stop) {
        int w = rcanvas_wait(cv, 100);
        if (w < 0) break;
        rcanvas_size sz;
        rcanvas_canvas_get_size(cv, &sz);
        double ratio = sz.pixel_ratio;
        rcanvas_event ev;
        int changed = 0;
        while (rcanvas_poll_event(cv, &ev) == 1) {
            if (print_events) print_event(&ev);
            switch (ev.type) {
            case RCANVAS_EVENT_POINTER_DOWN:
                if (ev.button == 1) dragging = 1, last_x = ev.x, last_y = ev.y;
                if (fs && ev.button == 1) marker = !marker; /* shown from the next frame drawn on */
                break;
            case RCANVAS_EVENT_POINTER_UP: dragging = 0; break;
            case RCANVAS_EVENT_POINTER_MOVE:
                if (dragging && (ev.buttons & 2u)) {
                    double dx = (ev.x - last_x) * ratio, dy = (ev.y - last_y) * ratio;
                    if (sc) scene_drag(sc, dx, dy);
                    if (gs) gpu_scene_drag(gs, dx, dy);
                    test_ox += (int)lround(dx), test_oy += (int)lround(dy);
                    last_x = ev.x, last_y = ev.y;
                    changed = 1;
                }
                break;
            case RCANVAS_EVENT_WHEEL:
                if (sc) scene_zoom(sc, ev.x * ratio, ev.y * ratio, pow(1.0015, -ev.dy));
                if (gs) gpu_scene_zoom(gs, ev.x * ratio, ev.y * ratio, pow(1.0015, -ev.dy));
                changed = 1;
                break;
            case RCANVAS_EVENT_DOUBLE_CLICK:
                if (sc) scene_zoom(sc, ev.x * ratio, ev.y * ratio, ev.button == 2 ? 0.5 : 2.0);
                if (gs) gpu_scene_zoom(gs, ev.x * ratio, ev.y * ratio, ev.button == 2 ? 0.5 : 2.0);
                changed = 1;
                break;
            case RCANVAS_EVENT_KEY_DOWN:
                if (sc) scene_key(sc, ev.key);
                if (gs) gpu_scene_key(gs, ev.key);
                changed = 1;
                break;
            case RCANVAS_EVENT_RESIZE: changed = 1; break;
            default: break;
            }
        }
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        double t = (double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) * 1e-9;
        if (!fs && ((sc && scene_changed(sc)) || (gs && gpu_scene_changed(gs)))) {
            changed = 1;
        }
        if (changed) rcanvas_request_draw(cv);
        if (!(w & RCANVAS_WAKE_DRAW)) continue;

        if (gs) {
            r = gpu_scene_render_present(gs, sz.physical_width, sz.physical_height, t);
            if (r && r != RCANVAS_EBUSY) {
                fprintf(stderr, "rcanvas-demo: present_vk: %s\n", rcanvas_strerror(r));
                if (r == RCANVAS_EDEVICE_LOST) {
                    rc = 1;
                    break;
                }
            }
            if (t - last_title_t > 0.25) {
                char d[200];
                gpu_scene_describe(gs, d, sizeof d);
                if (strcmp(d, title)) {
                    snprintf(title, sizeof title, "%s", d);
                    rcanvas_canvas_set_title(cv, title);
                }
                last_title_t = t;
            }
            continue;
        }
        rcanvas_frame f = {.format = RCANVAS_FORMAT_RGBA8, .timestamp_us = (int64_t)(t * 1e6)};
        if (fs) {
            const uint8_t *p = frame_set_pixels(fs, frame_index, &f.width, &f.height);
            f.pixels = p;
            f.pitch = (size_t)f.width * 4;
            if (marker) { /* the click marker over a copy of the frame */
                size_t need = f.pitch * f.height;
                if (!fit_buffer(&pixels, &cap, need)) {
                    fprintf(stderr, "rcanvas-demo: out of memory\n");
                    rc = 1;
                    break;
                }
                memcpy(pixels, p, need);
                frame_marker_draw(pixels, f.width, f.height, f.pitch);
                f.pixels = pixels;
            }
            if (t - last_title_t > 0.25) {
                snprintf(title, sizeof title, "rcanvas demo: %s", frame_set_name(fs, frame_index));
                rcanvas_canvas_set_title(cv, title);
                last_title_t = t;
            }
            frame_index = (frame_index + 1) % frame_set_count(fs);
        } else {
            f.width = sz.physical_width;
            f.height = sz.physical_height;
            f.pitch = (size_t)f.width * 4;
            size_t need = f.pitch * f.height;
            if (!fit_buffer(&pixels, &cap, need)) {
                fprintf(stderr, "rcanvas-demo: out of memory\n");
                rc = 1;
                break;
            }
            if (sc) {
                if (scene_render(sc, pixels, f.width, f.height, f.pitch, t)) {
                    fprintf(stderr, "rcanvas-demo: out of memory while rendering\n");
                    rc = 1;
                    break;
                }
                if (t - last_title_t > 0.25) {
                    char d[200];
                    scene_describe(sc, d, sizeof d);
                    if (strcmp(d, title)) {
                        snprintf(title, sizeof title, "%s", d);
                        rcanvas_canvas_set_title(cv, title);
                    }
                    last_title_t = t;
                }
            } else {
                render_test(pixels, f.width, f.height, f.pitch, test_ox, test_oy);
            }
            f.pixels = pixels;
        }
        r = rcanvas_present(cv, &f);
        if (r) fprintf(stderr, "rcanvas-demo: present: %s\n", rcanvas_strerror(r));
    }
    printf("rcanvas-demo: stopping\n");
    fflush(stdout);
    gpu_scene_free(gs);
#if RCANVAS_HAVE_VULKAN
    rcanvas_vk_free(vk); /* before its canvas */
#endif
    rcanvas_server_free(srv); /* frees the canvas too */
    scene_free(sc);
    frame_set_free(fs);
    free(pixels);
    return rc;
}
