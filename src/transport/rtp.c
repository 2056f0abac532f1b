/* SPDX-License-Identifier: MIT */
/*
 * rtp.c — frames out as RTP: one output is a session of its canvas (view-only, one codec, a fixed link
 * rate: session.h) served by its own thread. On a wake (a new packet) it takes the session's packet, cuts it into
 * RTP packets (rtp_pack.c) and sends them from one UDP socket with sendmsg straight from the shared packet (header
 * and fragment prefix from the stack, the payload from the tile buffer: no copy, no allocation), then acks it at
 * once (UDP has no acks; the session's rate is configured). Every ~1 s an RTCP SR goes to port + 1; PLI and FIR
 * read on the same socket ask the session for a keyframe. poll() on the socket and an eventfd.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "stream/session.h"
#include "transport/rtp.h"
#include "transport/rtp_pack.h"

#define RTP_CLOCK 90000          /* RTP clock of video, Hz (RFC 6184 §8.2.1, RFC 7741 §6.1) */
#define SR_INTERVAL_US 1000000   /* RFC 3550 §6.2: randomized to 0.5–1.5 of this */
#define RTCP_BUF 1500            /* an RTCP datagram read: more is malformed for us */

struct rcanvas_rtp_output {
    rcanvas_canvas *canvas;
    rc_session *session;
    const rc_logger *log;
    rcanvas_rtp_config cfg;
    char host[256];
    const rc_codec_type *codec;
    int fd, efd;
    struct sockaddr_storage dst, dst_rtcp;
    socklen_t dst_len;
    pthread_t thread;
    int started;
    atomic_int stop;
    /* the stream: network thread (the output's own) only */
    uint32_t ssrc;
    uint16_t seq;
    uint32_t ts_base;          /* RTP timestamp of base_us */
    int64_t base_us;           /* CLOCK_MONOTONIC µs the timestamps count from */
    uint32_t ts;               /* timestamp of the frame being sent */
    uint32_t last_ts;
    int sent_any;
    uint16_t picture_id;       /* VP8, 15 bits */
    rc_rtp_h264_params params;
    int have_fir;
    uint8_t fir_seq;
    int64_t next_sr_us, last_key_us;
    uint32_t rnd;
    char cname[40];
    int frame_packets;         /* packets of the frame being sent */
    size_t frame_octets;
    size_t frame_max;
    uint64_t frame_errors;
    /* counters, read by rc_rtp_output_get_stats from any thread */
    pthread_mutex_t mu;
    rcanvas_rtp_stats st;
};

void rcanvas_rtp_config_init(rcanvas_rtp_config *cfg) {
    if (!cfg) return;
    memset(cfg, 0, sizeof *cfg);
    cfg->codec = RCANVAS_CODEC_H264;
    cfg->payload_type = 96;
    cfg->mtu = 1200;
    cfg->kbps = 4000;
}

static uint32_t rnd_next(rcanvas_rtp_output *o) { /* xorshift32: the SR interval's jitter */
    uint32_t x = o->rnd ? o->rnd : 0x9e3779b9u;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return o->rnd = x;
}

static uint32_t ts_at(const rcanvas_rtp_output *o, int64_t us) {
    return o->ts_base + (uint32_t)(int64_t)((double)(us - o->base_us) * RTP_CLOCK / 1e6);
}

static int same_host(const struct sockaddr_storage *a, const struct sockaddr_storage *b) {
    if (a->ss_family != b->ss_family) return 0;
    if (a->ss_family == AF_INET)
        return ((const struct sockaddr_in *)a)->sin_addr.s_addr == ((const struct sockaddr_in *)b)->sin_addr.s_addr;
    if (a->ss_family == AF_INET6)
        return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr, &((const struct sockaddr_in6 *)b)->sin6_addr, 16);
    return 0;
}

/* ---- RTP out ---- */

static int emit(void *user, const uint8_t *prefix, size_t prefix_len, const uint8_t *data, size_t len, int marker) {
    rcanvas_rtp_output *o = user;
    uint8_t hdr[RC_RTP_HEADER];
    rc_rtp_header(hdr, o->cfg.payload_type, marker, o->seq++, o->ts, o->ssrc);
    struct iovec iov[3] = {{hdr, sizeof hdr}, {(void *)prefix, prefix_len}, {(void *)data, len}};
    struct msghdr m = {.msg_name = &o->dst, .msg_namelen = o->dst_len, .msg_iov = iov, .msg_iovlen = 3};
    ssize_t w;
    do w = sendmsg(o->fd, &m, 0);
    while (w < 0 && errno == EINTR);
    if (w < 0) o->frame_errors++;
    size_t payload = prefix_len + len;
    o->frame_packets++;
    o->frame_octets += payload;
    if (payload > o->frame_max) o->frame_max = payload;
    return 0; /* a refused packet is counted; the frame goes on (the receiver asks for a keyframe if it matters) */
}

static void send_frame(rcanvas_rtp_output *o, const rc_packet *pk, int64_t now) {
    if (pk->codec != o->codec || pk->ntiles != 1 || !pk->tiles[0].data.len) {
        pthread_mutex_lock(&o->mu);
        o->st.skipped++;
        pthread_mutex_unlock(&o->mu);
        return;
    }
    /* 90 kHz from when the app presented the frame; a frame coded again (a paint-over, a keyframe of a still
     * frame: the same present time) takes the send time, so timestamps rise with every access unit */
    uint32_t ts = ts_at(o, pk->present_us);
    if (o->sent_any && (int32_t)(ts - o->last_ts) <= 0) {
        ts = ts_at(o, now);
        if ((int32_t)(ts - o->last_ts) <= 0) ts = o->last_ts + 1;
    }
    o->ts = ts;
    o->frame_packets = 0;
    o->frame_octets = o->frame_max = 0;
    o->frame_errors = 0;
    const uint8_t *d = rc_buf_data(&pk->tiles[0].data);
    size_t n = pk->tiles[0].data.len;
    int key = 0, r;
    if (o->cfg.codec == RCANVAS_CODEC_VP8) {
        key = rc_rtp_vp8_is_key(d, n);
        r = rc_rtp_vp8_packetize(d, n, (size_t)o->cfg.mtu, o->picture_id, emit, o);
        o->picture_id = (uint16_t)((o->picture_id + 1) & 0x7fff);
    } else {
        rc_rtp_h264_info info;
        r = rc_rtp_h264_packetize(d, n, (size_t)o->cfg.mtu, &o->params, emit, o, &info);
        key = info.idr;
    }
    if (r) {
        rc_log(o->log, RCANVAS_LOG_WARN, "rtp %s:%d: frame %u is not a %s frame: not sent", o->host, o->cfg.port,
               pk->seq, o->codec->name);
        pthread_mutex_lock(&o->mu);
        o->st.skipped++;
        pthread_mutex_unlock(&o->mu);
        return;
    }
    o->last_ts = ts;
    o->sent_any = 1;
    if (key) o->last_key_us = now;
    pthread_mutex_lock(&o->mu);
    o->st.packets += (uint64_t)o->frame_packets;
    o->st.octets += o->frame_octets;
    o->st.frames++;
    o->st.keyframes += key;
    o->st.send_errors += o->frame_errors;
    if (o->frame_max > o->st.max_payload) o->st.max_payload = o->frame_max;
    pthread_mutex_unlock(&o->mu);
}

/* ---- RTCP ---- */

static void send_sr(rcanvas_rtp_output *o, int64_t now) {
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    uint64_t ntp = ((uint64_t)wall.tv_sec + 2208988800u) << 32 | (uint64_t)(((uint64_t)wall.tv_nsec << 32) / 1000000000u);
    pthread_mutex_lock(&o->mu);
    uint32_t packets = (uint32_t)o->st.packets, octets = (uint32_t)o->st.octets; /* mod 2^32, §6.4.1 */
    pthread_mutex_unlock(&o->mu);
    uint8_t b[128];
    size_t n = rc_rtcp_sr(b, sizeof b, o->ssrc, ntp, ts_at(o, now), packets, octets, o->cname);
    if (n && sendto(o->fd, b, n, 0, (struct sockaddr *)&o->dst_rtcp, o->dst_len) == (ssize_t)n) {
        pthread_mutex_lock(&o->mu);
        o->st.sr_sent++;
        pthread_mutex_unlock(&o->mu);
    }
    o->next_sr_us = now + SR_INTERVAL_US / 2 + (int64_t)(rnd_next(o) % SR_INTERVAL_US);
}

static void read_rtcp(rcanvas_rtp_output *o) {
    uint8_t b[RTCP_BUF];
    for (int i = 0; i < 64; i++) { /* a bounded batch: a flood cannot hold the thread here */
        struct sockaddr_storage from;
        socklen_t fl = sizeof from;
        ssize_t n = recvfrom(o->fd, b, sizeof b, MSG_DONTWAIT | MSG_TRUNC, (struct sockaddr *)&from, &fl);
        if (n < 0) return; /* EAGAIN, or an ICMP error of an earlier send */
        rc_rtcp_feedback fb;
        int bad = !same_host(&from, &o->dst) || (size_t)n > sizeof b ||
                  rc_rtcp_parse(b, (size_t)n, o->ssrc, &o->have_fir, &o->fir_seq, &fb) != 0;
        pthread_mutex_lock(&o->mu);
        o->st.rtcp_received++;
        o->st.rtcp_bad += bad;
        if (!bad) {
            o->st.pli += (uint64_t)fb.pli;
            o->st.fir += (uint64_t)fb.fir;
        }
        pthread_mutex_unlock(&o->mu);
        if (!bad && (fb.pli || fb.fir)) rc_session_request_keyframe(o->session); /* at most one a second */
    }
}

/* ---- the thread ---- */

static void *run(void *arg) {
    rcanvas_rtp_output *o = arg;
    struct pollfd pf[2] = {{.fd = o->fd, .events = POLLIN}, {.fd = o->efd, .events = POLLIN}};
    send_sr(o, rc_now_us()); /* at once: the receiver learns where feedback goes before the first frame */
    while (!atomic_load(&o->stop)) {
        int64_t now = rc_now_us();
        int64_t wait = o->next_sr_us - now;
        if (o->cfg.keyframe_ms) {
            int64_t k = o->last_key_us + (int64_t)o->cfg.keyframe_ms * 1000 - now;
            if (k < wait) wait = k;
        }
        if (wait < 0) wait = 0;
        int r = poll(pf, 2, (int)((wait + 999) / 1000));
        if (r < 0 && errno != EINTR) break;
        if (pf[1].revents & POLLIN) {
            uint64_t v;
            if (read(o->efd, &v, sizeof v) < 0) { /* EAGAIN: another read took it */ }
        }
        if (pf[0].revents & (POLLIN | POLLERR)) read_rtcp(o);
        now = rc_now_us();
        rc_packet *pk;
        while (!atomic_load(&o->stop) && rc_session_next(o->session, now, &pk, NULL)) {
            send_frame(o, pk, now);
            uint32_t seq = pk->seq;
            rc_packet_unref(pk);
            now = rc_now_us();
            rc_session_ack(o->session, seq, 0, now); /* sent: the window is free again (its rate is fixed) */
        }
        if (now >= o->next_sr_us) send_sr(o, now);
        if (o->cfg.keyframe_ms && now - o->last_key_us >= (int64_t)o->cfg.keyframe_ms * 1000) {
            rc_session_request_keyframe(o->session);
            o->last_key_us = now; /* the next try one interval on, if this one is not answered */
        }
    }
    return NULL;
}

/* ---- lifecycle ---- */

static int check_config(const rcanvas_rtp_config *cfg) {
    if (!cfg->host || !*cfg->host || strlen(cfg->host) > 255) return 0;
    if (cfg->port < 1 || cfg->port > 65534) return 0;
    if (cfg->codec != RCANVAS_CODEC_H264 && cfg->codec != RCANVAS_CODEC_VP8) return 0;
    if (cfg->payload_type < 96 || cfg->payload_type > 127) return 0;
    if (cfg->mtu < RC_RTP_MTU_MIN || cfg->mtu > RC_RTP_MTU_MAX) return 0;
    if (cfg->kbps < 100 || cfg->kbps > 200000) return 0;
    return cfg->keyframe_ms >= 0 && cfg->keyframe_ms <= 3600000;
}

/* The socket: bound to the local address the route to dst takes (so it is not reachable on other interfaces),
 * system-chosen port. -1 on failure. */
static int open_socket(const struct sockaddr_storage *dst, socklen_t len) {
    int probe = socket(dst->ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (probe < 0) return -1;
    struct sockaddr_storage local;
    socklen_t ll = sizeof local;
    int ok = connect(probe, (const struct sockaddr *)dst, len) == 0 &&
             getsockname(probe, (struct sockaddr *)&local, &ll) == 0;
    close(probe);
    if (!ok) return -1;
    if (local.ss_family == AF_INET) ((struct sockaddr_in *)&local)->sin_port = 0;
    else ((struct sockaddr_in6 *)&local)->sin6_port = 0;
    int fd = socket(dst->ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    int sndbuf = 1 << 20; /* a keyframe's packets leave in one burst */
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
    if (bind(fd, (struct sockaddr *)&local, ll)) {
        close(fd);
        return -1;
    }
    return fd;
}

static void destroy(rcanvas_rtp_output *o) {
    if (o->session) rc_session_close(o->session);
    if (o->fd >= 0) close(o->fd);
    if (o->efd >= 0) close(o->efd);
    pthread_mutex_destroy(&o->mu);
    free(o);
}

int rc_rtp_output_new(rcanvas_canvas *c, const rcanvas_rtp_config *cfg, const rc_logger *log,
                      rcanvas_rtp_output **out) {
    if (!c || !cfg || !out) return RCANVAS_EINVAL;
    *out = NULL;
    if (!check_config(cfg)) return RCANVAS_EINVAL;
    const rc_codec_type *codec = rc_codec_for(cfg->codec);
    if (!codec) return RCANVAS_ECODEC;
    rcanvas_rtp_output *o = calloc(1, sizeof *o);
    if (!o) return RCANVAS_ENOMEM;
    o->fd = o->efd = -1;
    pthread_mutex_init(&o->mu, NULL);
    o->canvas = c;
    o->log = log;
    o->cfg = *cfg;
    o->codec = codec;
    snprintf(o->host, sizeof o->host, "%s", cfg->host);
    o->cfg.host = o->host;

    char port[8];
    snprintf(port, sizeof port, "%d", cfg->port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_DGRAM, .ai_flags = AI_NUMERICSERV}, *ai;
    int g = getaddrinfo(cfg->host, port, &hints, &ai);
    if (g) {
        rc_log(log, RCANVAS_LOG_ERROR, "rtp: %s does not resolve: %s", cfg->host, gai_strerror(g));
        destroy(o);
        return RCANVAS_ENET;
    }
    memcpy(&o->dst, ai->ai_addr, ai->ai_addrlen);
    o->dst_len = ai->ai_addrlen;
    freeaddrinfo(ai);
    o->dst_rtcp = o->dst;
    if (o->dst.ss_family == AF_INET) ((struct sockaddr_in *)&o->dst_rtcp)->sin_port = htons((uint16_t)(cfg->port + 1));
    else ((struct sockaddr_in6 *)&o->dst_rtcp)->sin6_port = htons((uint16_t)(cfg->port + 1));
    if ((o->fd = open_socket(&o->dst, o->dst_len)) < 0 || (o->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) {
        rc_log(log, RCANVAS_LOG_ERROR, "rtp: no UDP socket to %s:%d: %s", cfg->host, cfg->port, strerror(errno));
        destroy(o);
        return RCANVAS_ENET;
    }
    struct sockaddr_storage local;
    socklen_t ll = sizeof local;
    getsockname(o->fd, (struct sockaddr *)&local, &ll);
    int lport = ntohs(local.ss_family == AF_INET ? ((struct sockaddr_in *)&local)->sin_port
                                                 : ((struct sockaddr_in6 *)&local)->sin6_port);

    /* RFC 3550 §5.1, §8: random SSRC, first sequence number and timestamp */
    uint32_t r[4] = {0};
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
        destroy(o);
        return RCANVAS_EIO;
    }
    o->ssrc = cfg->ssrc ? cfg->ssrc : (r[0] ? r[0] : 1);
    o->seq = (uint16_t)r[1];
    o->ts_base = r[2];
    o->rnd = r[3] | 1;
    o->picture_id = (uint16_t)(r[1] >> 17);
    o->base_us = rc_now_us();
    o->last_key_us = o->base_us;
    snprintf(o->cname, sizeof o->cname, "rcanvas-%08x", o->ssrc);
    o->st.ssrc = o->ssrc;
    o->st.local_port = lport;

    rc_session_caps caps = {.codecs = 1u << codec->wire_id, .protocol = 2, .view_only = 1,
                            .fixed_bps = cfg->kbps * 1000.0, .exact_codecs = 1};
    int e = rc_session_open(c, &caps, &o->session);
    if (e) {
        o->session = NULL;
        destroy(o);
        return e;
    }
    if (rc_thread_create(&o->thread, "rcanvas-rtp", run, o)) {
        destroy(o);
        return RCANVAS_ETHREAD;
    }
    o->started = 1;
    rc_log(log, RCANVAS_LOG_INFO, "rtp: %s to %s:%d (RTCP %d) from port %d, payload type %d, SSRC %08x, mtu %d, "
           "%d kbit/s", codec->name, cfg->host, cfg->port, cfg->port + 1, lport, cfg->payload_type, o->ssrc, cfg->mtu,
           cfg->kbps);
    *out = o;
    return RCANVAS_OK;
}

void rc_rtp_output_wake(rcanvas_rtp_output *o) {
    uint64_t one = 1;
    if (write(o->efd, &one, sizeof one) < 0) { /* full counter: a wake is pending anyway */ }
}

rcanvas_canvas *rc_rtp_output_canvas(const rcanvas_rtp_output *o) { return o->canvas; }

void rc_rtp_output_free(rcanvas_rtp_output *o) {
    if (!o) return;
    if (o->started) {
        atomic_store(&o->stop, 1);
        rc_rtp_output_wake(o);
        pthread_join(o->thread, NULL);
    }
    destroy(o);
}

int rc_rtp_output_get_stats(rcanvas_rtp_output *o, rcanvas_rtp_stats *out) {
    if (!o || !out) return RCANVAS_EINVAL;
    pthread_mutex_lock(&o->mu);
    *out = o->st;
    pthread_mutex_unlock(&o->mu);
    return RCANVAS_OK;
}
