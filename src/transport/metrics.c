/* SPDX-License-Identifier: MIT */
/*
 * metrics.c — GET /metrics: the server's counters in the Prometheus text exposition format 0.0.4, for
 * an operator's scraper. Per canvas (stream counters, read under its lock: rc_registry_metrics): frames
 * presented / encoded / dropped / unchanged, viewers, the encode-time histogram. Per viewer (the transport's own
 * counters, network thread only, and the session's state): frames and bytes sent, packets in flight, round trip,
 * link rate and target, codec and role (labels). The process: resident memory and open descriptors
 * (/proc/self). Rendered on the network thread, which owns the viewers; the request needs the token (route.c).
 */
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/transport_internal.h"

typedef struct out_buf {
    char *p;
    size_t len, cap;
    int failed;
} out_buf;

static void put(out_buf *b, const char *fmt, ...) {
    if (b->failed) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->failed = 1;
            return;
        }
        if ((size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap * 2 + (size_t)n;
        char *q = realloc(b->p, cap);
        if (!q) {
            b->failed = 1;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
}

/* A label value with \, " and newline escaped (the format's rule), into out. */
static void label_escape(char *out, size_t cap, const char *s) {
    size_t o = 0;
    for (; *s && o + 3 < cap; s++) {
        if (*s == '\\' || *s == '"') out[o++] = '\\', out[o++] = *s;
        else if (*s == '\n') out[o++] = '\\', out[o++] = 'n';
        else out[o++] = *s;
    }
    out[o] = '\0';
}

static void head(out_buf *b, const char *name, const char *type, const char *help) {
    put(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Resident set size (bytes) from /proc/self/status, or -1. */
static long long rss_bytes(void) {
    FILE *f = fopen("/proc/self/status", "re");
    if (!f) return -1;
    char line[256];
    long long kb = -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6)) {
            kb = atoll(line + 6);
            break;
        }
    fclose(f);
    return kb < 0 ? -1 : kb * 1024;
}

/* Open file descriptors (entries of /proc/self/fd, less the one reading it), or -1. */
static int open_fds(void) {
    DIR *d = opendir("/proc/self/fd");
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n - 1;
}

/* One viewer's labels and state, gathered once per scrape. */
typedef struct viewer_row {
    char labels[400];
    rc_session_state st;
    const rc_viewer *v;
} viewer_row;

char *rc_metrics_render(rc_transport *t, size_t *len) {
    out_buf b = {.cap = 16384};
    b.p = malloc(b.cap);
    if (!b.p) return NULL;
    b.p[0] = '\0';

    /* canvases */
    rc_canvas_metrics cm[64];
    int nc = rc_registry_metrics(t->registry, cm, 64);
    if (nc > 64) nc = 64; /* more canvases than this are not listed */
    char names[64][RC_NAME_MAX * 2 + 1];
    for (int i = 0; i < nc; i++) label_escape(names[i], sizeof names[i], cm[i].name);
    static const struct { const char *name, *help; size_t off; } k_counters[] = {
        {"rcanvas_canvas_frames_presented_total", "Frames the app presented.",
         offsetof(rc_canvas_counters, presented)},
        {"rcanvas_canvas_frames_encoded_total", "Frames encoded for the viewers.", offsetof(rc_canvas_counters, encoded)},
        {"rcanvas_canvas_frames_dropped_total", "Frames never encoded: replaced by a newer one while waiting, or failed.",
         offsetof(rc_canvas_counters, dropped)},
        {"rcanvas_canvas_frames_unchanged_total", "Frames identical to the one before, not encoded.",
         offsetof(rc_canvas_counters, unchanged)},
    };
    for (size_t k = 0; k < sizeof k_counters / sizeof k_counters[0]; k++) {
        head(&b, k_counters[k].name, "counter", k_counters[k].help);
        for (int i = 0; i < nc; i++)
            put(&b, "%s{canvas=\"%s\"} %llu\n", k_counters[k].name, names[i],
                (unsigned long long)*(const uint64_t *)((const char *)&cm[i].counters + k_counters[k].off));
    }
    head(&b, "rcanvas_canvas_viewers", "gauge", "Viewers connected to the canvas.");
    for (int i = 0; i < nc; i++) put(&b, "rcanvas_canvas_viewers{canvas=\"%s\"} %d\n", names[i], cm[i].viewers);
    static const double bounds[RC_ENCODE_MS_BUCKETS] = RC_ENCODE_MS_BOUNDS;
    head(&b, "rcanvas_canvas_encode_ms", "histogram",
         "Time of one encode (one encoder, one frame; start to packet done), milliseconds.");
    for (int i = 0; i < nc; i++) {
        const rc_canvas_counters *c = &cm[i].counters;
        unsigned long long cum = 0;
        for (int k = 0; k < RC_ENCODE_MS_BUCKETS; k++) {
            cum += c->encode_ms_bucket[k];
            put(&b, "rcanvas_canvas_encode_ms_bucket{canvas=\"%s\",le=\"%g\"} %llu\n", names[i], bounds[k], cum);
        }
        cum += c->encode_ms_bucket[RC_ENCODE_MS_BUCKETS];
        put(&b, "rcanvas_canvas_encode_ms_bucket{canvas=\"%s\",le=\"+Inf\"} %llu\n", names[i], cum);
        put(&b, "rcanvas_canvas_encode_ms_sum{canvas=\"%s\"} %.3f\n", names[i], c->encode_ms_sum);
        put(&b, "rcanvas_canvas_encode_ms_count{canvas=\"%s\"} %llu\n", names[i],
            (unsigned long long)c->encode_count);
    }

    /* viewers (network thread: the list is ours) */
    int nv = 0;
    for (const rc_viewer *v = t->viewers; v; v = v->next) nv++;
    viewer_row *rows = nv ? calloc((size_t)nv, sizeof *rows) : NULL;
    if (nv && !rows) nv = 0;
    int r = 0;
    for (const rc_viewer *v = t->viewers; v && r < nv; v = v->next, r++) {
        rc_session_hello h;
        rc_session_get_hello(v->session, &h);
        rc_session_get_state(v->session, &rows[r].st);
        char canvas[RC_NAME_MAX * 2 + 1];
        label_escape(canvas, sizeof canvas, h.canvas);
        snprintf(rows[r].labels, sizeof rows[r].labels, "canvas=\"%s\",viewer=\"%u\",role=\"%s\",codec=\"%s\"", canvas,
                 v->id, rows[r].st.active ? "active" : "passive",
                 rows[r].st.encoder ? rows[r].st.encoder->name : "jpeg");
        rows[r].v = v;
    }
#define VIEWER_METRIC(name, type, help, fmt, expr)                                                                  \
    do {                                                                                                           \
        head(&b, name, type, help);                                                                                \
        for (int i = 0; i < nv; i++) {                                                                             \
            const viewer_row *row = &rows[i];                                                                      \
            put(&b, "%s{%s} " fmt "\n", name, row->labels, expr);                                                  \
        }                                                                                                          \
    } while (0)
    VIEWER_METRIC("rcanvas_viewer_frames_sent_total", "counter", "Frames sent to the viewer (all their tiles).",
                  "%llu", (unsigned long long)row->v->frames_sent);
    VIEWER_METRIC("rcanvas_viewer_bytes_sent_total", "counter",
                  "Bytes of frame messages sent to the viewer (headers and payloads).", "%llu",
                  (unsigned long long)row->v->bytes_sent);
    VIEWER_METRIC("rcanvas_viewer_frames_in_flight", "gauge", "Frames sent to the viewer and not acknowledged yet.",
                  "%d", row->st.in_flight);
    VIEWER_METRIC("rcanvas_viewer_active", "gauge", "1 if the viewer is the canvas's active one, else 0.", "%d",
                  row->st.active);
    VIEWER_METRIC("rcanvas_viewer_rtt_ms", "gauge",
                  "Last round trip, from present to the viewer's ack, milliseconds (0: none yet).", "%.3f",
                  row->st.rtt_us / 1000.0);
    VIEWER_METRIC("rcanvas_viewer_link_srtt_ms", "gauge",
                  "Smoothed round trip of the link, from send to ack, milliseconds (0: none yet).", "%.3f",
                  row->st.srtt_us / 1000.0);
    VIEWER_METRIC("rcanvas_viewer_link_rate_kbps", "gauge",
                  "Delivery rate measured from the viewer's acks, kbit/s (0: none yet).", "%.1f", row->st.rate_kbps);
    VIEWER_METRIC("rcanvas_viewer_link_target_kbps", "gauge", "Rate the viewer's frames aim at, kbit/s.", "%.1f",
                  row->st.target_kbps);
#undef VIEWER_METRIC
    free(rows);

    head(&b, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
    put(&b, "process_resident_memory_bytes %lld\n", rss_bytes());
    head(&b, "process_open_fds", "gauge", "Number of open file descriptors.");
    put(&b, "process_open_fds %d\n", open_fds());
    if (b.failed) {
        free(b.p);
        return NULL;
    }
    *len = b.len;
    return b.p;
}
