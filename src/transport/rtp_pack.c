/* SPDX-License-Identifier: MIT */
/*
 * rtp_pack.c — RTP payloads out of encoded frames and RTCP in and out (rtp_pack.h): H.264 Annex B access units
 * into single NAL unit packets and FU-A fragments (RFC 6184), VP8 frames behind their payload descriptor
 * (RFC 7741), the RTP header, the sender report and the feedback it reads (PLI, FIR). Pure byte work; the output
 * thread (rtp.c) sends what it emits.
 */
#include <string.h>

#include "transport/rtp_pack.h"

#include "codec/nal.h"

static void put16(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}
static void put32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}
static uint32_t get32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

void rc_rtp_header(uint8_t out[RC_RTP_HEADER], int payload_type, int marker, uint16_t seq, uint32_t timestamp,
                   uint32_t ssrc) {
    out[0] = 0x80; /* V=2, P=0, X=0, CC=0 */
    out[1] = (uint8_t)((marker ? 0x80 : 0) | (payload_type & 0x7f));
    put16(out + 2, seq);
    put32(out + 4, timestamp);
    put32(out + 8, ssrc);
}

/* ---- H.264 (RFC 6184) ---- */

/* One NAL unit into payloads: whole if it fits, else FU-A fragments. last: it is the access unit's last. */
static int emit_nal(const uint8_t *nal, size_t len, size_t mtu, int last, rc_rtp_emit_fn emit, void *user,
                    int *packets) {
    if (len <= mtu) {
        (*packets)++;
        return emit(user, NULL, 0, nal, len, last); /* §5.6 single NAL unit packet */
    }
    /* §5.8 FU-A: the NAL header's F and NRI go into the FU indicator, its type into each FU header */
    uint8_t fu[2];
    const uint8_t *p = nal + 1;
    size_t left = len - 1, chunk = mtu - 2;
    int first = 1;
    while (left) {
        size_t k = left < chunk ? left : chunk;
        int end = k == left;
        fu[0] = (uint8_t)((nal[0] & 0xe0) | 28);
        fu[1] = (uint8_t)((first ? 0x80 : 0) | (end ? 0x40 : 0) | (nal[0] & 0x1f));
        (*packets)++;
        int r = emit(user, fu, 2, p, k, last && end);
        if (r) return r;
        p += k;
        left -= k;
        first = 0;
    }
    return 0;
}

int rc_rtp_h264_packetize(const uint8_t *au, size_t n, size_t mtu, rc_rtp_h264_params *params, rc_rtp_emit_fn emit,
                          void *user, rc_rtp_h264_info *info) {
    rc_rtp_h264_info inf = {0};
    if (info) *info = inf;
    if (!au || mtu < RC_RTP_MTU_MIN || mtu > RC_RTP_MTU_MAX || n < 4) return -1;
    if (!(au[0] == 0 && au[1] == 0 && (au[2] == 1 || (au[2] == 0 && au[3] == 1)))) return -1;
    /* first pass: what it holds, and the parameter sets it brings */
    int sps = 0, pps = 0, nals = 0;
    const uint8_t *nal;
    size_t len, pos = 0;
    while (rc_nal_next(au, n, &pos, &nal, &len)) {
        int type = nal[0] & 0x1f;
        nals++;
        if (type == 5) inf.idr = 1;
        if (type == 7) {
            sps = 1;
            if (params && len <= RC_RTP_PARAM_MAX) memcpy(params->sps, nal, params->sps_len = len);
        }
        if (type == 8) {
            pps = 1;
            if (params && len <= RC_RTP_PARAM_MAX) memcpy(params->pps, nal, params->pps_len = len);
        }
    }
    if (!nals) return -1;
    int r;
    /* an IDR without its SPS and PPS: the kept ones first (a receiver may join at any IDR) */
    if (inf.idr && (!sps || !pps) && params && params->sps_len && params->pps_len) {
        if ((r = emit_nal(params->sps, params->sps_len, mtu, 0, emit, user, &inf.packets)) ||
            (r = emit_nal(params->pps, params->pps_len, mtu, 0, emit, user, &inf.packets)))
            return r;
        inf.params_added = 1;
        inf.nals += 2;
    }
    pos = 0;
    int i = 0;
    while (rc_nal_next(au, n, &pos, &nal, &len)) {
        i++;
        if ((r = emit_nal(nal, len, mtu, i == nals, emit, user, &inf.packets))) return r;
    }
    inf.nals += nals;
    if (info) *info = inf;
    return 0;
}

/* ---- VP8 (RFC 7741) ---- */

int rc_rtp_vp8_is_key(const uint8_t *frame, size_t n) { return frame && n >= 3 && !(frame[0] & 1); }

int rc_rtp_vp8_packetize(const uint8_t *frame, size_t n, size_t mtu, uint16_t picture_id, rc_rtp_emit_fn emit,
                         void *user) {
    if (!frame || !n || mtu < RC_RTP_MTU_MIN || mtu > RC_RTP_MTU_MAX) return -1;
    uint8_t d[RC_RTP_VP8_DESC];
    size_t chunk = mtu - RC_RTP_VP8_DESC, off = 0;
    while (off < n) {
        size_t k = n - off < chunk ? n - off : chunk;
        d[0] = (uint8_t)(0x80 | (off == 0 ? 0x10 : 0)); /* X=1, R=0, N=0, S on the first, PID=0 */
        d[1] = 0x80;                                     /* I=1: a PictureID follows */
        d[2] = (uint8_t)(0x80 | ((picture_id >> 8) & 0x7f)); /* M=1: 15 bits */
        d[3] = (uint8_t)picture_id;
        int r = emit(user, d, sizeof d, frame + off, k, off + k == n);
        if (r) return r;
        off += k;
    }
    return 0;
}

/* ---- RTCP ---- */

#define RTCP_SR 200
#define RTCP_SDES 202
#define RTCP_PSFB 206 /* payload-specific feedback (RFC 4585 §6.1) */

size_t rc_rtcp_sr(uint8_t *out, size_t cap, uint32_t ssrc, uint64_t ntp, uint32_t rtp_ts, uint32_t packets,
                  uint32_t octets, const char *cname) {
    size_t cn = cname ? strlen(cname) : 0;
    if (cn < 1 || cn > 255) return 0;
    /* SDES chunk: SSRC, CNAME item (type, length, text), a null item ending the list, padded to 32 bits */
    size_t chunk = 4 + 2 + cn + 1;
    chunk = (chunk + 3) & ~(size_t)3;
    size_t total = 28 + 4 + chunk;
    if (!out || cap < total) return 0;
    memset(out, 0, total);
    out[0] = 0x80; /* V=2, P=0, RC=0 */
    out[1] = RTCP_SR;
    put16(out + 2, 28 / 4 - 1);
    put32(out + 4, ssrc);
    put32(out + 8, (uint32_t)(ntp >> 32));
    put32(out + 12, (uint32_t)ntp);
    put32(out + 16, rtp_ts);
    put32(out + 20, packets);
    put32(out + 24, octets);
    uint8_t *s = out + 28;
    s[0] = 0x81; /* V=2, SC=1 */
    s[1] = RTCP_SDES;
    put16(s + 2, (uint32_t)((4 + chunk) / 4 - 1));
    put32(s + 4, ssrc);
    s[8] = 1; /* CNAME */
    s[9] = (uint8_t)cn;
    memcpy(s + 10, cname, cn); /* the rest is zero: the end of the list and the padding */
    return total;
}

int rc_rtcp_parse(const uint8_t *p, size_t n, uint32_t ssrc, int *have_fir, uint8_t *last_fir_seq,
                  rc_rtcp_feedback *out) {
    rc_rtcp_feedback fb = {0};
    memset(out, 0, sizeof *out);
    if (!p || n < 4) return -1;
    /* first the whole datagram's structure: one bad header and none of it counts (RFC 3550 A.2) */
    for (size_t off = 0; off < n;) {
        if (n - off < 4 || (p[off] >> 6) != 2) return -1;
        size_t len = ((size_t)p[off + 2] << 8 | p[off + 3]) * 4 + 4;
        if (len > n - off) return -1;
        off += len;
    }
    int hf = have_fir && *have_fir;
    uint8_t lf = last_fir_seq ? *last_fir_seq : 0;
    for (size_t off = 0; off < n;) {
        const uint8_t *h = p + off;
        size_t len = ((size_t)h[2] << 8 | h[3]) * 4 + 4;
        int fmt = h[0] & 0x1f;
        fb.packets++;
        if (h[1] == RTCP_PSFB && len >= 12) {
            uint32_t media = get32(h + 8);
            if (fmt == 1 && (media == ssrc || media == 0)) fb.pli++; /* RFC 4585 §6.3.1: no FCI */
            if (fmt == 4) /* RFC 5104 §4.3.1: media SSRC 0, FCI entries of SSRC + seq nr + 3 reserved bytes */
                for (size_t e = 12; e + 8 <= len; e += 8)
                    if (get32(h + e) == ssrc) {
                        uint8_t sq = h[e + 4];
                        if (!hf || sq != lf) fb.fir++;
                        hf = 1;
                        lf = fb.fir_seq = sq;
                    }
        }
        off += len;
    }
    if (have_fir) *have_fir = hf;
    if (last_fir_seq) *last_fir_seq = lf;
    *out = fb;
    return 0;
}
