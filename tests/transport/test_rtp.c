/* SPDX-License-Identifier: MIT */
/*
 * test_rtp — the RTP output (src/transport/rtp.c, rtp_pack.c), received on 127.0.0.1 by the test itself:
 *  - the packetizer alone: a small NAL unit is one single NAL unit packet, a big one FU-A fragments (RFC 6184 §5.8:
 *    S on the first, E on the last, none over the MTU, reassembled byte-exact), the marker only on the access unit's
 *    last packet, 3- and 4-byte start codes, SPS+PPS repeated before an IDR that lacks them; VP8 descriptors
 *    (RFC 7741 §4.2: S on the first, the PictureID); the SR builder read back (RFC 3550 §6.4.1);
 *  - RTCP parsing: PLI and FIR for our SSRC count, for another SSRC not, a repeated FIR sequence number not; short,
 *    wrong-version and over-long packets are malformed (a valid PLI behind a bad header does not count); 200000
 *    random datagrams parse without a crash;
 *  - bad configurations: each field out of range is RCANVAS_EINVAL, port 0 too, a name that does not resolve ENET;
 *  - a canvas of generated frames (tests/gen_frames.h) with an H.264 output (MTU 400, payload type 101): the packets
 *    are RTP v2 with that payload type and one SSRC (the output's), contiguous sequence numbers, rising timestamps,
 *    one marker per access unit, payloads ≤ MTU; depacketized (single NAL + FU-A) and decoded by openh264, every
 *    frame is within PSNR_MIN of a presented one, the first an IDR with SPS and PPS;
 *  - one encoder shared: with a WebSocket-less session in the same rate rung on the canvas, one encode per frame
 *    (the canvas's counters); an output at 4000 kbit/s beside a 10 Mbit/s session is a second tier (two encodes a
 *    frame) and leaves that session's bitrate above 4000 kbit/s;
 *  - a PLI, then a FIR, sent to the output's port yield an IDR within KEY_FRAMES frames; the same FIR again
 *    (a repetition) does not; malformed RTCP to the port is counted and ignored, and the stream goes on;
 *  - an SR arrives at PORT+1 from the output's port with its SSRC and a packet count;
 *  - VP8 (with libvpx): the same checks of the RTP header, and the frames reassembled and decoded by libvpx.
 */
#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "codec/yuv.h"
#include "gen_frames.h"
#include "rcanvas.h"
#include "stream/canvas.h"
#include "stream/session.h"
#include "test.h"
#include "transport/rtp_pack.h"
#include "video_decoders.h"

#define W 320
#define H 240
#define NFRAMES 16
#define PSNR_MIN 30.0  /* 320×240 at ≥ 4 Mbit/s: measured ~40 dB; a wrong frame or a broken reassembly is < 20 */
#define KEY_FRAMES 6   /* frames within which a PLI/FIR gives an IDR (the request is honoured at the next encode) */

/* ---- the packetizer alone ---- */

typedef struct cap_pkt {
    uint8_t b[1500];
    size_t n;
    int marker;
} cap_pkt;
typedef struct capture {
    cap_pkt p[64];
    int n;
} capture;
static int cap_emit(void *user, const uint8_t *prefix, size_t pl, const uint8_t *data, size_t len, int marker) {
    capture *c = user;
    if (c->n == 64 || pl + len > sizeof c->p[0].b) return 1;
    cap_pkt *p = &c->p[c->n++];
    if (pl) memcpy(p->b, prefix, pl); /* a single NAL unit packet has no prefix (NULL) */
    memcpy(p->b + pl, data, len);
    p->n = pl + len;
    p->marker = marker;
    return 0;
}

static void test_packetizer(void) {
    /* AU: 4-byte start code SPS(10) , 3-byte start code PPS(4), 4-byte IDR of 2500 bytes */
    static uint8_t au[4 + 10 + 3 + 4 + 4 + 2500];
    size_t o = 0;
    memcpy(au + o, "\0\0\0\1", 4), o += 4;
    au[o++] = 0x67;
    for (int i = 0; i < 9; i++) au[o++] = (uint8_t)(0x40 + i);
    memcpy(au + o, "\0\0\1", 3), o += 3;
    au[o++] = 0x68, au[o++] = 0xce, au[o++] = 0x3c, au[o++] = 0x80;
    memcpy(au + o, "\0\0\0\1", 4), o += 4;
    size_t idr_at = o;
    au[o++] = 0x65;
    for (int i = 1; i < 2500; i++) au[o++] = (uint8_t)(1 + (i * 7) % 250); /* no zero bytes: no start code */
    capture c = {0};
    rc_rtp_h264_params params = {0};
    rc_rtp_h264_info info;
    CHECK_EQ_INT(rc_rtp_h264_packetize(au, o, 1000, &params, cap_emit, &c, &info), 0);
    CHECK_EQ_INT(info.idr, 1);
    CHECK_EQ_INT(info.params_added, 0);
    CHECK_EQ_INT(c.n, 2 + 3); /* SPS, PPS single; 2499 bytes after the header in fragments of 998 */
    CHECK_EQ_INT(params.sps_len, 10);
    CHECK_EQ_INT(params.pps_len, 4);
    CHECK(c.n >= 5 && c.p[0].n == 10 && c.p[0].b[0] == 0x67 && !c.p[0].marker);
    CHECK(c.n >= 5 && c.p[1].n == 4 && c.p[1].b[0] == 0x68 && !c.p[1].marker);
    uint8_t re[3000];
    size_t rn = 0;
    for (int i = 2; i < c.n; i++) {
        CHECK(c.p[i].n <= 1000);
        CHECK_EQ_INT(c.p[i].b[0], (0x65 & 0xe0) | 28);             /* FU indicator */
        CHECK_EQ_INT(c.p[i].b[1] & 0x1f, 5);                       /* FU header's type */
        CHECK_EQ_INT(!!(c.p[i].b[1] & 0x80), i == 2);              /* S */
        CHECK_EQ_INT(!!(c.p[i].b[1] & 0x40), i == c.n - 1);        /* E */
        CHECK_EQ_INT(c.p[i].marker, i == c.n - 1);
        if (i == 2) re[rn++] = (uint8_t)((c.p[i].b[0] & 0xe0) | (c.p[i].b[1] & 0x1f));
        memcpy(re + rn, c.p[i].b + 2, c.p[i].n - 2);
        rn += c.p[i].n - 2;
    }
    CHECK_EQ_INT(rn, 2500);
    CHECK(rn == 2500 && !memcmp(re, au + idr_at, 2500));
    /* an IDR alone gets the kept SPS and PPS first; a P-slice does not */
    uint8_t idr[] = {0, 0, 0, 1, 0x65, 0x88, 0x84, 0x21, 0, 0}; /* trailing zeros dropped */
    c.n = 0;
    CHECK_EQ_INT(rc_rtp_h264_packetize(idr, sizeof idr, 1000, &params, cap_emit, &c, &info), 0);
    CHECK_EQ_INT(info.params_added, 1);
    CHECK_EQ_INT(c.n, 3);
    CHECK(c.n == 3 && c.p[0].b[0] == 0x67 && c.p[1].b[0] == 0x68 && c.p[2].n == 4 && c.p[2].marker);
    uint8_t p_slice[] = {0, 0, 1, 0x41, 0x9a, 0x02};
    c.n = 0;
    CHECK_EQ_INT(rc_rtp_h264_packetize(p_slice, sizeof p_slice, 1000, &params, cap_emit, &c, &info), 0);
    CHECK(c.n == 1 && c.p[0].n == 3 && c.p[0].marker && !info.idr);
    /* not Annex B, empty, bad MTU */
    CHECK_EQ_INT(rc_rtp_h264_packetize((const uint8_t *)"\x01\x02\x03\x04\x05", 5, 1000, NULL, cap_emit, &c, NULL), -1);
    CHECK_EQ_INT(rc_rtp_h264_packetize((const uint8_t *)"\0\0\0\1", 4, 1000, NULL, cap_emit, &c, NULL), -1);
    CHECK_EQ_INT(rc_rtp_h264_packetize(au, o, 10, NULL, cap_emit, &c, NULL), -1);

    /* VP8: 2500 bytes at MTU 1000: 3 packets, descriptor X|S, I, M + 15-bit PictureID */
    static uint8_t vp8[2500];
    for (int i = 0; i < 2500; i++) vp8[i] = (uint8_t)i;
    vp8[0] = 0x10; /* P bit 0: key frame */
    CHECK(rc_rtp_vp8_is_key(vp8, sizeof vp8));
    c.n = 0;
    CHECK_EQ_INT(rc_rtp_vp8_packetize(vp8, sizeof vp8, 1000, 0x1234, cap_emit, &c), 0);
    CHECK_EQ_INT(c.n, 3);
    rn = 0;
    for (int i = 0; i < c.n; i++) {
        CHECK(c.p[i].n <= 1000);
        CHECK_EQ_INT(c.p[i].b[0], i == 0 ? 0x90 : 0x80);
        CHECK_EQ_INT(c.p[i].b[1], 0x80);
        CHECK_EQ_INT(((c.p[i].b[2] & 0x7f) << 8) | c.p[i].b[3], 0x1234);
        CHECK(c.p[i].b[2] & 0x80);
        CHECK_EQ_INT(c.p[i].marker, i == c.n - 1);
        memcpy(re + rn, c.p[i].b + 4, c.p[i].n - 4);
        rn += c.p[i].n - 4;
    }
    CHECK(rn == 2500 && !memcmp(re, vp8, 2500));

    /* SR + SDES read back */
    uint8_t sr[128];
    size_t n = rc_rtcp_sr(sr, sizeof sr, 0xdeadbeef, 0x0102030405060708ull, 777, 10, 2000, "rcanvas-x");
    CHECK(n >= 28 + 8 && n % 4 == 0);
    CHECK_EQ_INT(sr[0], 0x80);
    CHECK_EQ_INT(sr[1], 200);
    CHECK_EQ_INT((sr[2] << 8 | sr[3]), 6);
    CHECK_EQ_INT(((uint32_t)sr[4] << 24 | sr[5] << 16 | sr[6] << 8 | sr[7]), 0xdeadbeef);
    CHECK_EQ_INT(sr[16] << 24 | sr[17] << 16 | sr[18] << 8 | sr[19], 777);
    CHECK_EQ_INT(sr[29], 202);
    CHECK(n > 40 && sr[36] == 1 && sr[37] == 9 && !memcmp(sr + 38, "rcanvas-x", 9));
    rc_rtcp_feedback fb;
    CHECK_EQ_INT(rc_rtcp_parse(sr, n, 0xdeadbeef, NULL, NULL, &fb), 0); /* our own SR parses: 2 packets, no request */
    CHECK(fb.packets == 2 && !fb.pli && !fb.fir);
    CHECK_EQ_INT(rc_rtcp_sr(sr, 20, 1, 0, 0, 0, 0, "x"), 0);
}

/* RTCP feedback packets */
static size_t make_pli(uint8_t *b, uint32_t sender, uint32_t media) {
    uint8_t p[12] = {0x81, 206, 0, 2};
    for (int i = 0; i < 4; i++) p[4 + i] = (uint8_t)(sender >> (24 - 8 * i)), p[8 + i] = (uint8_t)(media >> (24 - 8 * i));
    memcpy(b, p, 12);
    return 12;
}
static size_t make_fir(uint8_t *b, uint32_t sender, uint32_t target, uint8_t seq) {
    uint8_t p[20] = {0x84, 206, 0, 4};
    for (int i = 0; i < 4; i++) p[4 + i] = (uint8_t)(sender >> (24 - 8 * i)), p[12 + i] = (uint8_t)(target >> (24 - 8 * i));
    p[16] = seq;
    memcpy(b, p, 20);
    return 20;
}

static void test_rtcp_parse(void) {
    uint8_t b[64];
    rc_rtcp_feedback fb;
    int hf = 0;
    uint8_t lf = 0;
    size_t n = make_pli(b, 1, 0xabc);
    CHECK_EQ_INT(rc_rtcp_parse(b, n, 0xabc, &hf, &lf, &fb), 0);
    CHECK_EQ_INT(fb.pli, 1);
    CHECK_EQ_INT(rc_rtcp_parse(b, n, 0xdef, &hf, &lf, &fb), 0); /* another SSRC's */
    CHECK_EQ_INT(fb.pli, 0);
    n = make_fir(b, 1, 0xabc, 5);
    CHECK_EQ_INT(rc_rtcp_parse(b, n, 0xabc, &hf, &lf, &fb), 0);
    CHECK(fb.fir == 1 && fb.fir_seq == 5 && hf && lf == 5);
    CHECK_EQ_INT(rc_rtcp_parse(b, n, 0xabc, &hf, &lf, &fb), 0); /* repeated: RFC 5104 §4.3.1.2 */
    CHECK_EQ_INT(fb.fir, 0);
    n = make_fir(b, 1, 0xabc, 6);
    CHECK_EQ_INT(rc_rtcp_parse(b, n, 0xabc, &hf, &lf, &fb), 0);
    CHECK_EQ_INT(fb.fir, 1);
    /* compound: RR (empty) + PLI */
    uint8_t comp[20] = {0x80, 201, 0, 1, 0, 0, 0, 9};
    make_pli(comp + 8, 9, 0xabc);
    CHECK_EQ_INT(rc_rtcp_parse(comp, 20, 0xabc, NULL, NULL, &fb), 0);
    CHECK(fb.packets == 2 && fb.pli == 1);
    /* malformed */
    CHECK_EQ_INT(rc_rtcp_parse(b, 3, 0xabc, NULL, NULL, &fb), -1);
    n = make_pli(b, 1, 0xabc);
    b[0] = 0x41; /* version 1 */
    CHECK_EQ_INT(rc_rtcp_parse(b, n, 0xabc, NULL, NULL, &fb), -1);
    n = make_pli(b, 1, 0xabc);
    b[2] = 0xff, b[3] = 0xff; /* length beyond the datagram */
    CHECK_EQ_INT(rc_rtcp_parse(b, n, 0xabc, NULL, NULL, &fb), -1);
    comp[0] = 0x00; /* a bad first header: the PLI behind it does not count */
    CHECK_EQ_INT(rc_rtcp_parse(comp, 20, 0xabc, NULL, NULL, &fb), -1);
    CHECK_EQ_INT(fb.pli, 0);
    n = make_pli(b, 1, 0xabc);
    CHECK_EQ_INT(rc_rtcp_parse(b, n + 2, 0xabc, NULL, NULL, &fb), -1); /* 2 trailing bytes */
    /* random datagrams: no crash, and a structurally valid one never reads past its end (ASan build) */
    uint32_t x = 12345;
    int valid = 0;
    for (int i = 0; i < 200000; i++) {
        uint8_t r[48];
        size_t len = 4 + (size_t)(i % 45);
        for (size_t k = 0; k < len; k++) {
            x ^= x << 13, x ^= x >> 17, x ^= x << 5;
            r[k] = (uint8_t)x;
        }
        if (i & 1) r[0] = (uint8_t)(0x80 | (r[0] & 0x3f)), r[2] = 0, r[3] = (uint8_t)(r[3] % 12);
        uint8_t *heap = malloc(len);
        memcpy(heap, r, len);
        valid += rc_rtcp_parse(heap, len, 0xabc, &hf, &lf, &fb) == 0;
        free(heap);
    }
    CHECK(valid > 0); /* the loop did reach the feedback paths */
}

/* ---- a receiver on 127.0.0.1: RTP on PORT, RTCP on PORT+1 ---- */

#define RX_MAX 20000
typedef struct rx {
    int fd, rtcp_fd, port;
    pthread_t th;
    atomic_int stop;
    pthread_mutex_t mu;
    cap_pkt *pk;
    int npk, markers;
    uint8_t sr[256];
    size_t sr_n;
    int nsr;
    int sr_from_port;
} rx;

static void *rx_run(void *arg) {
    rx *r = arg;
    struct pollfd pf[2] = {{.fd = r->fd, .events = POLLIN}, {.fd = r->rtcp_fd, .events = POLLIN}};
    while (!atomic_load(&r->stop)) {
        if (poll(pf, 2, 20) <= 0) continue;
        uint8_t b[1500];
        struct sockaddr_in from;
        socklen_t fl = sizeof from;
        if (pf[0].revents & POLLIN) {
            ssize_t n = recv(r->fd, b, sizeof b, MSG_DONTWAIT);
            pthread_mutex_lock(&r->mu);
            if (n > 0 && r->npk < RX_MAX) {
                memcpy(r->pk[r->npk].b, b, (size_t)n);
                r->pk[r->npk].n = (size_t)n;
                r->pk[r->npk].marker = n > 1 && (b[1] & 0x80);
                r->markers += r->pk[r->npk].marker;
                r->npk++;
            }
            pthread_mutex_unlock(&r->mu);
        }
        if (pf[1].revents & POLLIN) {
            ssize_t n = recvfrom(r->rtcp_fd, b, sizeof b, MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
            pthread_mutex_lock(&r->mu);
            if (n > 0 && (size_t)n <= sizeof r->sr) {
                memcpy(r->sr, b, (size_t)n);
                r->sr_n = (size_t)n;
                r->nsr++;
                r->sr_from_port = ntohs(from.sin_port);
            }
            pthread_mutex_unlock(&r->mu);
        }
    }
    return NULL;
}

static int bind_udp(int port) {
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int big = 4 << 20;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    if (bind(fd, (struct sockaddr *)&a, sizeof a)) {
        close(fd);
        return -1;
    }
    return fd;
}

static int rx_start(rx *r) {
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->mu, NULL);
    r->pk = calloc(RX_MAX, sizeof *r->pk);
    for (int tries = 0; tries < 200; tries++) { /* two adjacent free ports: PORT (even) and PORT+1 */
        int fd = bind_udp(0);
        struct sockaddr_in a;
        socklen_t al = sizeof a;
        getsockname(fd, (struct sockaddr *)&a, &al);
        int p = ntohs(a.sin_port);
        close(fd);
        p &= ~1;
        if (p < 1024) continue;
        int f1 = bind_udp(p), f2 = f1 >= 0 ? bind_udp(p + 1) : -1;
        if (f1 >= 0 && f2 >= 0) {
            r->fd = f1, r->rtcp_fd = f2, r->port = p;
            return pthread_create(&r->th, NULL, rx_run, r);
        }
        if (f1 >= 0) close(f1);
    }
    return -1;
}

static void rx_stop(rx *r) {
    atomic_store(&r->stop, 1);
    pthread_join(r->th, NULL);
    close(r->fd);
    close(r->rtcp_fd);
    free(r->pk);
    pthread_mutex_destroy(&r->mu);
}

static int rx_markers(rx *r) {
    pthread_mutex_lock(&r->mu);
    int m = r->markers;
    pthread_mutex_unlock(&r->mu);
    return m;
}

/* ---- depacketizing ---- */

typedef struct au {
    uint8_t *data;
    size_t len;
    uint32_t ts;
    int idr, sps, pps, key;
} au;

typedef struct stream_check {
    int bad_version, bad_pt, bad_ssrc, seq_gaps, ts_back, ts_mid_change, fu_errors, over_mtu;
    int packets;
    uint32_t last_ts;
} stream_check;

static void au_append(au *a, const uint8_t *p, size_t n) {
    a->data = realloc(a->data, a->len + n);
    memcpy(a->data + a->len, p, n);
    a->len += n;
}

/* The access units of packets [from, to) of r: H.264 (vp8 = 0) into Annex B, VP8 frames whole. */
static int depacketize(rx *r, int from, int to, int pt, uint32_t ssrc, size_t mtu, int vp8, au *out, int max,
                       stream_check *sc) {
    int nau = 0, in_au = 0, in_fu = 0;
    uint16_t prev_seq = 0;
    for (int i = from; i < to && nau < max; i++) {
        const uint8_t *b = r->pk[i].b;
        size_t n = r->pk[i].n;
        sc->packets++;
        if (n < 13 || (b[0] >> 6) != 2 || (b[0] & 0x3f)) { sc->bad_version++; continue; }
        if ((b[1] & 0x7f) != pt) sc->bad_pt++;
        uint16_t seq = (uint16_t)(b[2] << 8 | b[3]);
        uint32_t ts = (uint32_t)b[4] << 24 | b[5] << 16 | b[6] << 8 | b[7];
        uint32_t s = (uint32_t)b[8] << 24 | b[9] << 16 | b[10] << 8 | b[11];
        if (s != ssrc) sc->bad_ssrc++;
        if (i > from && seq != (uint16_t)(prev_seq + 1)) sc->seq_gaps++;
        prev_seq = seq;
        if (n - 12 > mtu) sc->over_mtu++;
        au *a = &out[nau];
        if (!in_au) {
            if (sc->packets > 1 && (int32_t)(ts - sc->last_ts) <= 0) sc->ts_back++;
            memset(a, 0, sizeof *a);
            a->ts = ts;
            in_au = 1;
        } else if (ts != a->ts) sc->ts_mid_change++;
        const uint8_t *p = b + 12;
        size_t pn = n - 12;
        if (vp8) {
            size_t d = 1;
            if (p[0] & 0x80) { d = 2; if (p[1] & 0x80) d += (p[2] & 0x80) ? 2 : 1; if (p[1] & 0x40) d++; if (p[1] & 0x30) d++; }
            if ((p[0] & 0x10) && a->len == 0) a->key = !(p[d] & 1);
            if (pn > d) au_append(a, p + d, pn - d);
        } else {
            int type = p[0] & 0x1f;
            if (type >= 1 && type <= 23) {
                if (in_fu) sc->fu_errors++, in_fu = 0;
                au_append(a, (const uint8_t *)"\0\0\0\1", 4);
                au_append(a, p, pn);
                if (type == 5) a->idr = 1;
                if (type == 7) a->sps = 1;
                if (type == 8) a->pps = 1;
            } else if (type == 28 && pn > 2) {
                int st = p[1] & 0x80, en = p[1] & 0x40, nt = p[1] & 0x1f;
                if (st) {
                    if (in_fu) sc->fu_errors++;
                    uint8_t hdr = (uint8_t)((p[0] & 0xe0) | nt);
                    au_append(a, (const uint8_t *)"\0\0\0\1", 4);
                    au_append(a, &hdr, 1);
                    in_fu = 1;
                    if (nt == 5) a->idr = 1;
                } else if (!in_fu) sc->fu_errors++;
                au_append(a, p + 2, pn - 2);
                if (en) in_fu = 0;
            } else sc->fu_errors++;
        }
        if (r->pk[i].marker) {
            if (in_fu) sc->fu_errors++, in_fu = 0;
            sc->last_ts = a->ts;
            in_au = 0;
            nau++;
        }
    }
    return nau;
}

/* ---- decoding: openh264 and libvpx (tests/video_decoders.h) ---- */

static rc_i420 g_src[NFRAMES * 4];
static int g_nsrc;

/* The best Y PSNR of a decoded picture against the presented frames; *which = that frame. */
static double best_psnr(const uint8_t *y, int stride, int w, int h, int *which) {
    double best = 0;
    *which = -1;
    if (w != W || h != H) return 0;
    for (int i = 0; i < g_nsrc; i++) {
        double p = gen_psnr_plane(y, stride, g_src[i].y, g_src[i].stride_y, W, H);
        if (p > best) best = p, *which = i;
    }
    return best;
}

/* ---- the canvas and its output ---- */

static uint8_t g_rgba[W * H * 4];

/* Presents frame t (its I420 kept for the PSNR) and waits until the receiver has one more access unit; the
 * session s (may be NULL) takes and acks its packets meanwhile, like a fast WebSocket viewer. */
static int present_and_wait(rcanvas_canvas *cv, rx *r, int t, rc_session *s) {
    gen_frame(g_rgba, W, H, W * 4, t, 1.0);
    if (g_nsrc < (int)(sizeof g_src / sizeof g_src[0])) {
        rc_image img = {g_rgba, W, H, W * 4, RCANVAS_FORMAT_RGBA8, NULL};
        rc_i420_from_image(&g_src[g_nsrc++], &img);
    }
    int m0 = rx_markers(r);
    rcanvas_frame f = {.pixels = g_rgba, .width = W, .height = H, .pitch = W * 4, .format = RCANVAS_FORMAT_RGBA8};
    int pr = rcanvas_present(cv, &f);
    for (int i = 0; i < 1000 && pr == RCANVAS_EBUSY; i++) {
        usleep(5000);
        pr = rcanvas_present(cv, &f);
    }
    if (pr) return pr;
    for (int i = 0; i < 1000; i++) { /* 10 s: generous on a loaded machine */
        rc_packet *pk;
        while (s && rc_session_next(s, rc_now_us(), &pk, NULL)) {
            uint32_t seq = pk->seq;
            rc_packet_unref(pk);
            rc_session_ack(s, seq, 0, rc_now_us());
        }
        if (rx_markers(r) > m0) return 0;
        usleep(10000);
    }
    return -1;
}

static void drain(rc_session *s) {
    rc_packet *pk;
    while (s && rc_session_next(s, rc_now_us(), &pk, NULL)) {
        uint32_t seq = pk->seq;
        rc_packet_unref(pk);
        rc_session_ack(s, seq, 0, rc_now_us());
    }
}

/* Presents n frames from *t on, one every ~25 ms whatever the encoder does (so the scene is never still for the
 * 150 ms after which a video tier paints its frame over: those encodes would count too), the session s taking its
 * packets; then waits for the pipeline to empty. Returns the frames encoded and the encodes made meanwhile. */
static void stream_frames(rcanvas_canvas *cv, int *t, int n, rc_session *s, uint64_t *enc, uint64_t *encodes) {
    rc_canvas_counters c0, c1;
    rc_canvas_get_counters(cv, &c0);
    for (int i = 0; i < n; i++) {
        gen_frame(g_rgba, W, H, W * 4, *t, 1.0);
        if (g_nsrc < (int)(sizeof g_src / sizeof g_src[0])) {
            rc_image img = {g_rgba, W, H, W * 4, RCANVAS_FORMAT_RGBA8, NULL};
            rc_i420_from_image(&g_src[g_nsrc++], &img);
        }
        (*t)++;
        rcanvas_frame f = {.pixels = g_rgba, .width = W, .height = H, .pitch = W * 4, .format = RCANVAS_FORMAT_RGBA8};
        int pr = rcanvas_present(cv, &f);
        CHECK(pr == RCANVAS_OK || pr == RCANVAS_EBUSY); /* EBUSY: every slot in use, that frame is left out */
        for (int k = 0; k < 5; k++) {
            drain(s);
            usleep(5000);
        }
    }
    for (int i = 0; i < 2000; i++) { /* 10 s */
        rc_canvas_debug d;
        drain(s);
        rc_canvas_get_debug(cv, &d);
        if (!d.encoding_seq && !d.pending_seq) break;
        usleep(5000);
    }
    drain(s);
    rc_canvas_get_counters(cv, &c1);
    *enc = c1.encoded - c0.encoded;
    *encodes = c1.encode_count - c0.encode_count;
}

static void send_rtcp(rx *r, int port, const uint8_t *b, size_t n) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sendto(r->fd, b, n, 0, (struct sockaddr *)&a, sizeof a);
}

static int rx_count(rx *r) {
    pthread_mutex_lock(&r->mu);
    int n = r->npk;
    pthread_mutex_unlock(&r->mu);
    return n;
}

/* 1 if packets [from, to) of r hold an IDR slice (H.264) or the start of a key frame (VP8). */
static int has_key(rx *r, int from, int to, int vp8) {
    for (int i = from; i < to; i++) {
        const uint8_t *p = r->pk[i].b + 12;
        if (!vp8 && ((p[0] & 0x1f) == 5 || ((p[0] & 0x1f) == 28 && (p[1] & 0x1f) == 5))) return 1;
        if (vp8 && (p[0] & 0x10) && !(p[4] & 1)) return 1;
    }
    return 0;
}

/* Presents up to KEY_FRAMES frames from *t on; returns after how many of them the packets received since packet
 * `from` (counted before the request was sent: the keyframe of a still frame may come before the next frame) hold a
 * keyframe, or -1. */
static int frames_until_key(rcanvas_canvas *cv, rx *r, int from, int *t, int vp8) {
    for (int k = 1; k <= KEY_FRAMES; k++) {
        if (present_and_wait(cv, r, (*t)++, NULL)) return -1;
        usleep(20000);
        if (has_key(r, from, rx_count(r), vp8)) return k;
    }
    return -1;
}

static void test_config(rcanvas_canvas *cv) {
    rcanvas_rtp_config c;
    rcanvas_rtp_output *o = (rcanvas_rtp_output *)1;
    rcanvas_rtp_config_init(&c);
    CHECK_EQ_INT(c.codec, RCANVAS_CODEC_H264);
    CHECK_EQ_INT(c.payload_type, 96);
    CHECK_EQ_INT(c.mtu, 1200);
    CHECK_EQ_INT(c.kbps, 4000);
    c.host = "127.0.0.1";
    c.port = 0;
    CHECK_EQ_INT(rcanvas_canvas_add_rtp_output(cv, &c, &o), RCANVAS_EINVAL);
    CHECK(o == NULL);
    c.port = 65535; /* its RTCP port would be 65536 */
    CHECK_EQ_INT(rcanvas_canvas_add_rtp_output(cv, &c, &o), RCANVAS_EINVAL);
    c.port = 5004;
    struct { int *field, bad; } cases[] = {{&c.payload_type, 95}, {&c.payload_type, 128}, {&c.mtu, 63},
                                           {&c.mtu, 65001}, {&c.kbps, 99}, {&c.keyframe_ms, -1}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rcanvas_rtp_config b = c;
        *(int *)((char *)&b + ((char *)cases[i].field - (char *)&c)) = cases[i].bad;
        CHECK_EQ_INT(rcanvas_canvas_add_rtp_output(cv, &b, &o), RCANVAS_EINVAL);
    }
    rcanvas_rtp_config b = c;
    b.codec = RCANVAS_CODEC_JPEG;
    CHECK_EQ_INT(rcanvas_canvas_add_rtp_output(cv, &b, &o), RCANVAS_EINVAL);
    b = c;
    b.host = "no-such-host.invalid";
    CHECK_EQ_INT(rcanvas_canvas_add_rtp_output(cv, &b, &o), RCANVAS_ENET);
    b.host = NULL;
    CHECK_EQ_INT(rcanvas_canvas_add_rtp_output(cv, &b, &o), RCANVAS_EINVAL);
    CHECK_EQ_INT(rcanvas_canvas_add_rtp_output(NULL, &c, &o), RCANVAS_EINVAL);
    CHECK_EQ_INT(rcanvas_rtp_output_stats(NULL, NULL), RCANVAS_EINVAL);
    rcanvas_rtp_output_free(NULL);
}

static rcanvas_canvas *new_canvas(rcanvas_server *srv, const char *name, rcanvas_codec codec) {
    rcanvas_canvas_config cc;
    rcanvas_canvas_config_init(&cc);
    cc.name = name;
    cc.codec = codec;
    cc.refine_ms = 0;
    rcanvas_canvas *cv = NULL;
    CHECK_EQ_INT(rcanvas_canvas_new(srv, &cc, &cv), RCANVAS_OK);
    return cv;
}

static void test_h264_stream(rcanvas_server *srv) {
    rx r;
    CHECK_EQ_INT(rx_start(&r), 0);
    rcanvas_canvas *cv = new_canvas(srv, "h264", RCANVAS_CODEC_H264);
    test_config(cv);
    rcanvas_rtp_config c;
    rcanvas_rtp_config_init(&c);
    c.host = "127.0.0.1";
    c.port = r.port;
    c.mtu = 400;
    c.payload_type = 101;
    c.kbps = 12000; /* the rung (5-16 Mbit/s) of the 10 Mbit/s session below: one tier for both */
    rcanvas_rtp_output *o = NULL;
    CHECK_EQ_INT(rcanvas_canvas_add_rtp_output(cv, &c, &o), RCANVAS_OK);
    if (!o) return;
    rcanvas_rtp_stats st;
    CHECK_EQ_INT(rcanvas_rtp_output_stats(o, &st), RCANVAS_OK);
    CHECK(st.ssrc != 0 && st.local_port > 0);
    CHECK_EQ_INT(rcanvas_canvas_viewer_count(cv), 1);
    /* a viewer whose link measures 10 Mbit/s (rung 1), held there: a test loop's instant acks would otherwise
     * measure a LAN and move it to rung 0 within seconds, as a real viewer on one would */
    rc_session_caps caps = {.codecs = 1u << RCANVAS_CODEC_H264, .protocol = 2, .fixed_bps = 10e6};
    rc_session *ws = NULL;
    CHECK_EQ_INT(rc_session_open(cv, &caps, &ws), RCANVAS_OK);

    /* the stream, shared with the WebSocket-less session */
    g_nsrc = 0;
    int t = 0;
    CHECK_EQ_INT(present_and_wait(cv, &r, t++, ws), 0); /* the first frame: the encoder starts */
    uint64_t enc, encodes;
    stream_frames(cv, &t, NFRAMES - 1, ws, &enc, &encodes);
    usleep(100000); /* the last packets on their way */
    CHECK(enc >= 4);
    /* one encoder for both: an encoder of the RTP output's own would code every frame again (2 x enc). Not
     * encodes == enc: where a loaded machine spaces two frames past the paint-over delay, the tier paints the
     * still picture over once (one more encode of that frame, by the same encoder) */
    CHECK_MSG(encodes >= enc && encodes < 2 * enc - 1,
              "%llu encodes for %llu frames: the RTP output did not share the tier's encoder",
              (unsigned long long)encodes, (unsigned long long)enc);
    rc_session_close(ws);

    pthread_mutex_lock(&r.mu);
    int npk = r.npk;
    pthread_mutex_unlock(&r.mu);
    static au aus[256];
    stream_check sc = {0};
    int nau = depacketize(&r, 0, npk, 101, st.ssrc, 400, 0, aus, 256, &sc);
    CHECK(nau >= 1 + (int)enc); /* every frame encoded was sent (paint-overs of the last one may follow) */
    CHECK_EQ_INT(sc.bad_version, 0);
    CHECK_EQ_INT(sc.bad_pt, 0);
    CHECK_EQ_INT(sc.bad_ssrc, 0);
    CHECK_EQ_INT(sc.seq_gaps, 0);
    CHECK_EQ_INT(sc.ts_back, 0);
    CHECK_EQ_INT(sc.ts_mid_change, 0);
    CHECK_EQ_INT(sc.fu_errors, 0);
    CHECK_EQ_INT(sc.over_mtu, 0);
    CHECK(nau > 0 && aus[0].idr && aus[0].sps && aus[0].pps);
    int fu = 0;
    for (int i = 0; i < npk; i++) fu += (r.pk[i].b[12] & 0x1f) == 28;
    CHECK(fu > 0); /* frames bigger than the MTU went as FU-A */
    void *d = h264_open();
    CHECK(d != NULL);
    int decoded = 0, prev = -1, order_ok = 1;
    double minp = 99;
    for (int i = 0; i < nau && d; i++) {
        yuv_view v;
        int rc = h264_decode(d, aus[i].data, aus[i].len, &v);
        CHECK_MSG(rc == 0, "access unit %d of %d does not decode to a picture", i, nau);
        if (rc) continue;
        int which;
        double p = best_psnr(v.y, v.stride_y, v.w, v.h, &which);
        if (p < minp) minp = p;
        if (which < prev) order_ok = 0;
        prev = which;
        decoded++;
    }
    CHECK(decoded == nau);
    CHECK_MSG(minp >= PSNR_MIN, "lowest Y PSNR %.1f dB", minp);
    CHECK(order_ok);
    printf("h264: %d packets, %d access units (%d FU-A), %d decoded, lowest Y PSNR %.1f dB\n", npk, nau, fu, decoded,
           minp);
    h264_close(d);
    for (int i = 0; i < nau; i++) free(aus[i].data);

    /* PLI, FIR, a repeated FIR; each honoured request at most once a second (the session's rule) */
    uint8_t b[64];
    int k = frames_until_key(cv, &r, rx_count(&r), &t, 0);
    CHECK_EQ_INT(k, -1); /* no keyframe unasked (keyframe_ms 0, no periodic interval) */
    int from = rx_count(&r);
    send_rtcp(&r, st.local_port, b, make_pli(b, 0x1111, st.ssrc));
    k = frames_until_key(cv, &r, from, &t, 0);
    CHECK_MSG(k >= 1, "no IDR within %d frames of a PLI", KEY_FRAMES);
    usleep(1100000);
    from = rx_count(&r);
    send_rtcp(&r, st.local_port, b, make_fir(b, 0x1111, st.ssrc, 7));
    k = frames_until_key(cv, &r, from, &t, 0);
    CHECK_MSG(k >= 1, "no IDR within %d frames of a FIR", KEY_FRAMES);
    usleep(1100000);
    from = rx_count(&r);
    send_rtcp(&r, st.local_port, b, make_fir(b, 0x1111, st.ssrc, 7)); /* the same request again */
    CHECK_EQ_INT(frames_until_key(cv, &r, from, &t, 0), -1);
    CHECK_EQ_INT(rcanvas_rtp_output_stats(o, &st), RCANVAS_OK);
    CHECK_EQ_INT(st.pli, 1);
    CHECK_EQ_INT(st.fir, 1);
    CHECK_EQ_INT(st.rtcp_bad, 0);

    /* malformed RTCP: counted, ignored, and the stream goes on */
    usleep(1100000);
    uint64_t bad0 = st.rtcp_bad;
    int nbad = 0;
    send_rtcp(&r, st.local_port, (const uint8_t *)"\x81\xce\x00", 3), nbad++;
    make_pli(b, 1, st.ssrc);
    b[0] = 0x41; /* version 1 */
    send_rtcp(&r, st.local_port, b, 12), nbad++;
    make_pli(b, 1, st.ssrc);
    b[2] = 0xff, b[3] = 0xff; /* huge length */
    send_rtcp(&r, st.local_port, b, 12), nbad++;
    uint32_t x = 99;
    for (int i = 0; i < 200; i++, nbad++) {
        uint8_t rb[64];
        for (int j = 0; j < 64; j++) x ^= x << 13, x ^= x >> 17, x ^= x << 5, rb[j] = (uint8_t)x;
        rb[0] &= 0x3f; /* never version 2: malformed for sure */
        send_rtcp(&r, st.local_port, rb, 4 + (size_t)(i % 60));
    }
    usleep(200000);
    CHECK_EQ_INT(present_and_wait(cv, &r, t++, NULL), 0);
    CHECK_EQ_INT(rcanvas_rtp_output_stats(o, &st), RCANVAS_OK);
    CHECK_MSG(st.rtcp_bad - bad0 == (uint64_t)nbad, "%llu of %d malformed datagrams counted",
              (unsigned long long)(st.rtcp_bad - bad0), nbad);
    CHECK_EQ_INT(st.pli, 1);
    CHECK(st.max_payload <= 400);
    CHECK(st.frames >= NFRAMES && st.keyframes >= 3);

    /* the SR at PORT+1: our SSRC, from the output's port, packets counted */
    pthread_mutex_lock(&r.mu);
    uint8_t sr[256];
    size_t srn = r.sr_n;
    memcpy(sr, r.sr, sizeof sr);
    int nsr = r.nsr, from_port = r.sr_from_port;
    pthread_mutex_unlock(&r.mu);
    CHECK(nsr >= 2); /* one at the start, then ~ one a second: the test ran > 3 s */
    CHECK(srn >= 28 && sr[0] >> 6 == 2 && sr[1] == 200);
    CHECK_EQ_INT((uint32_t)sr[4] << 24 | sr[5] << 16 | sr[6] << 8 | sr[7], st.ssrc);
    CHECK_EQ_INT(from_port, st.local_port);
    uint32_t sr_packets = (uint32_t)sr[20] << 24 | sr[21] << 16 | sr[22] << 8 | sr[23];
    CHECK(sr_packets > 0 && sr_packets <= st.packets);
    rcanvas_rtp_output_free(o);
    CHECK_EQ_INT(rcanvas_canvas_viewer_count(cv), 0);
    rcanvas_canvas_free(cv);
    rx_stop(&r);
    for (int i = 0; i < g_nsrc; i++) rc_i420_free(&g_src[i]);
    g_nsrc = 0;
}

/* An output at 4000 kbit/s beside a 10 Mbit/s session: a rung apart, so two encoders, and the session keeps its
 * rate (the RTP output neither pulls it down nor is pushed up). */
static void test_rungs_apart(rcanvas_server *srv) {
    rx r;
    CHECK_EQ_INT(rx_start(&r), 0);
    rcanvas_canvas *cv = new_canvas(srv, "rungs", RCANVAS_CODEC_H264);
    rcanvas_rtp_config c;
    rcanvas_rtp_config_init(&c);
    c.host = "127.0.0.1";
    c.port = r.port;
    rcanvas_rtp_output *o = NULL;
    CHECK_EQ_INT(rcanvas_canvas_add_rtp_output(cv, &c, &o), RCANVAS_OK);
    /* a viewer whose link measures 10 Mbit/s (rung 1), held there: a test loop's instant acks would otherwise
     * measure a LAN and move it to rung 0 within seconds, as a real viewer on one would */
    rc_session_caps caps = {.codecs = 1u << RCANVAS_CODEC_H264, .protocol = 2, .fixed_bps = 10e6};
    rc_session *ws = NULL;
    CHECK_EQ_INT(rc_session_open(cv, &caps, &ws), RCANVAS_OK);
    int t = 0;
    CHECK_EQ_INT(present_and_wait(cv, &r, t++, ws), 0);
    uint64_t enc, encodes;
    stream_frames(cv, &t, 10, ws, &enc, &encodes);
    /* two tiers in lock-step: two encodes a frame (a tier may skip a frame its viewer had no room for, and catch up
     * on it alone: so not exactly 2x, but far from the 1x of a shared encoder) */
    CHECK(enc >= 4);
    CHECK_MSG(encodes * 4 >= 7 * enc && encodes <= 2 * enc + 2, "%llu encodes for %llu frames (two tiers expected)",
              (unsigned long long)encodes, (unsigned long long)enc);
    rc_session_state s;
    rc_session_get_state(ws, &s);
    CHECK_MSG(s.bitrate_kbps > 1.5 * 4000, "the 10 Mbit/s session's bitrate is %.0f kbit/s", s.bitrate_kbps);
    CHECK_MSG(s.rung != 2, "the session is in rung %d, the output's", s.rung);
    rc_session_close(ws);
    rcanvas_rtp_output_free(o);
    rcanvas_canvas_free(cv);
    rx_stop(&r);
    for (int i = 0; i < g_nsrc; i++) rc_i420_free(&g_src[i]);
    g_nsrc = 0;
}

#if RCANVAS_HAVE_VPX
static void test_vp8_stream(rcanvas_server *srv) {
    rx r;
    CHECK_EQ_INT(rx_start(&r), 0);
    rcanvas_canvas *cv = new_canvas(srv, "vp8", RCANVAS_CODEC_AUTO); /* VP8 is third in auto: the output's codec */
    rcanvas_rtp_config c;
    rcanvas_rtp_config_init(&c);
    c.host = "127.0.0.1";
    c.port = r.port;
    c.codec = RCANVAS_CODEC_VP8;
    c.mtu = 500;
    rcanvas_rtp_output *o = NULL;
    CHECK_EQ_INT(rcanvas_canvas_add_rtp_output(cv, &c, &o), RCANVAS_OK);
    if (!o) return;
    rcanvas_rtp_stats st;
    rcanvas_rtp_output_stats(o, &st);
    int t = 0;
    for (int i = 0; i < NFRAMES; i++) CHECK_EQ_INT(present_and_wait(cv, &r, t++, NULL), 0);
    pthread_mutex_lock(&r.mu);
    int npk = r.npk;
    pthread_mutex_unlock(&r.mu);
    static au aus[256];
    stream_check sc = {0};
    int nau = depacketize(&r, 0, npk, 96, st.ssrc, 500, 1, aus, 256, &sc);
    CHECK(nau >= NFRAMES);
    CHECK(sc.bad_version == 0 && sc.bad_pt == 0 && sc.bad_ssrc == 0 && sc.seq_gaps == 0 && sc.ts_back == 0 &&
          sc.ts_mid_change == 0 && sc.over_mtu == 0);
    CHECK(nau > 0 && aus[0].key);
    void *dec = vp8_open();
    CHECK(dec != NULL);
    int decoded = 0;
    double minp = 99;
    for (int i = 0; i < nau && dec; i++) {
        yuv_view v;
        int rc = vpx_decode(dec, aus[i].data, aus[i].len, &v);
        CHECK_MSG(rc == 0, "VP8 frame %d of %d does not decode to a picture", i, nau);
        if (rc) continue;
        int which;
        double p = best_psnr(v.y, v.stride_y, v.w, v.h, &which);
        if (p < minp) minp = p;
        decoded++;
    }
    if (dec) vpx_dec_close(dec);
    CHECK(decoded >= NFRAMES);
    CHECK_MSG(minp >= PSNR_MIN, "VP8: lowest Y PSNR %.1f dB", minp);
    printf("vp8: %d packets, %d frames, %d decoded, lowest Y PSNR %.1f dB\n", npk, nau, decoded, minp);
    for (int i = 0; i < nau; i++) free(aus[i].data);
    /* a PLI asks VP8 for a key frame too */
    uint8_t b[16];
    int from = rx_count(&r);
    send_rtcp(&r, st.local_port, b, make_pli(b, 0x2222, st.ssrc));
    CHECK_MSG(frames_until_key(cv, &r, from, &t, 1) >= 1, "no VP8 key frame within %d frames of a PLI", KEY_FRAMES);
    rcanvas_canvas_free(cv); /* frees its output too */
    rx_stop(&r);
    for (int i = 0; i < g_nsrc; i++) rc_i420_free(&g_src[i]);
    g_nsrc = 0;
}
#endif

int main(void) {
    test_packetizer();
    test_rtcp_parse();
    rcanvas_server_config sc;
    rcanvas_server_config_init(&sc);
    sc.port = 0;
    sc.encode_threads = 2;
    sc.log_level = RCANVAS_LOG_ERROR;
    rcanvas_server *srv = NULL;
    CHECK_EQ_INT(rcanvas_server_new(&sc, &srv), RCANVAS_OK);
    if (srv) {
        test_h264_stream(srv);
        test_rungs_apart(srv);
#if RCANVAS_HAVE_VPX
        test_vp8_stream(srv);
#endif
        rcanvas_server_free(srv);
    }
    TEST_MAIN_END();
}
