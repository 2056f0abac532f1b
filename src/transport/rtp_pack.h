/* SPDX-License-Identifier: MIT */
/*
 * rtp_pack.h — RTP and RTCP bytes, pure functions (no sockets, no clock, no allocation): an H.264 access unit or a
 * VP8 frame cut into RTP payloads no larger than an MTU, the 12-byte RTP header, the RTCP sender report the output
 * sends and the feedback (PLI, FIR) it reads. src/transport/rtp.c puts them on a socket; tests/transport/test_rtp.c
 * and tests/fuzz read them back.
 *
 * Sources: RFC 3550 (RTP: §5.1 the fixed header, §6.4.1 SR, §6.5 SDES CNAME, §6.1 compound packets, A.2 header
 * validity), RFC 6184 (H.264 payload: §5.6 single NAL unit packets, §5.8 FU-A, §5.1 the marker bit), RFC 7741 (VP8
 * payload: §4.2 payload descriptor, §4.1 marker), RFC 4585 §6.3.1 (PLI), RFC 5104 §4.3.1 (FIR).
 */
#ifndef RC_RTP_PACK_H
#define RC_RTP_PACK_H

#include <stddef.h>
#include <stdint.h>

#define RC_RTP_HEADER 12          /* RFC 3550 §5.1 fixed header, no CSRC, no extension */
#define RC_RTP_MTU_MIN 64         /* payload bytes per packet, the smallest the output accepts */
#define RC_RTP_MTU_MAX 65000      /* ... and the largest (a UDP datagram is at most 65507 bytes of payload) */
#define RC_RTP_PARAM_MAX 256      /* the largest SPS or PPS kept to repeat before an IDR, bytes */

/* One RTP payload of a frame: `prefix` (prefix_len bytes: an FU indicator and header, a VP8 payload descriptor;
 * may be 0) then len bytes at data, which point into the frame (no copy). marker: the last packet of the frame
 * (the RTP marker bit, RFC 6184 §5.1, RFC 7741 §4.1). Return non-zero to stop. */
typedef int (*rc_rtp_emit_fn)(void *user, const uint8_t *prefix, size_t prefix_len, const uint8_t *data, size_t len,
                              int marker);

/* The SPS and PPS last seen in the stream, repeated in front of an IDR that comes without them. */
typedef struct rc_rtp_h264_params {
    uint8_t sps[RC_RTP_PARAM_MAX], pps[RC_RTP_PARAM_MAX];
    size_t sps_len, pps_len;
} rc_rtp_h264_params;

/* What one access unit held. */
typedef struct rc_rtp_h264_info {
    int nals;                     /* NAL units in it (with the repeated SPS/PPS) */
    int idr;                      /* it holds an IDR slice (nal_unit_type 5) */
    int params_added;             /* SPS and PPS were repeated from *params in front of it */
    int packets;                  /* payloads emitted */
} rc_rtp_h264_info;

/* Cuts an access unit in Annex B form (start codes of 3 or 4 bytes; trailing zero bytes of a NAL unit dropped)
 * into payloads of at most mtu bytes (RC_RTP_MTU_MIN..RC_RTP_MTU_MAX): a NAL unit that fits is a single NAL unit
 * packet (RFC 6184 §5.6), a larger one FU-A fragments (§5.8: FU indicator F|NRI|28, FU header S|E|R|type, mtu - 2
 * bytes of the NAL unit's payload after its header each). The SPS (7) and PPS (8) it carries are kept in *params
 * (may be NULL); an IDR without them gets the kept ones first. Returns 0, -1 if au is not Annex B or holds no NAL
 * unit (nothing emitted), or emit's non-zero value. *info may be NULL. */
int rc_rtp_h264_packetize(const uint8_t *au, size_t n, size_t mtu, rc_rtp_h264_params *params, rc_rtp_emit_fn emit,
                          void *user, rc_rtp_h264_info *info);

/* The VP8 payload descriptor written (RFC 7741 §4.2): X=1, S=1 on the first packet (partition 0, PID 0), I=1 and
 * a 15-bit PictureID (M=1): 4 bytes. */
#define RC_RTP_VP8_DESC 4
/* Cuts a VP8 frame into payloads of at most mtu bytes (descriptor included). Returns 0, -1 for an empty frame or an
 * mtu below RC_RTP_MTU_MIN, or emit's non-zero value. */
int rc_rtp_vp8_packetize(const uint8_t *frame, size_t n, size_t mtu, uint16_t picture_id, rc_rtp_emit_fn emit,
                         void *user);
/* 1 if a VP8 frame is a key frame (its frame tag's P bit is 0, RFC 6386 §9.1), 0 otherwise or if empty. */
int rc_rtp_vp8_is_key(const uint8_t *frame, size_t n);

/* Writes the RTP fixed header (RFC 3550 §5.1: V=2, no padding, extension or CSRC) into out. */
void rc_rtp_header(uint8_t out[RC_RTP_HEADER], int payload_type, int marker, uint16_t seq, uint32_t timestamp,
                   uint32_t ssrc);

/* A compound RTCP packet of an SR (RFC 3550 §6.4.1, no report blocks) and an SDES with one CNAME (§6.5.1): ntp
 * is the NTP timestamp (seconds since 1900 in 32.32 fixed point), rtp_ts the RTP timestamp of the same instant,
 * packets and octets the RTP packets and payload octets sent so far. cname: 1..255 bytes. Returns the bytes
 * written, or 0 if cap is too small. */
size_t rc_rtcp_sr(uint8_t *out, size_t cap, uint32_t ssrc, uint64_t ntp, uint32_t rtp_ts, uint32_t packets,
                  uint32_t octets, const char *cname);

/* What a received RTCP packet asks of the sender `ssrc`. */
typedef struct rc_rtcp_feedback {
    int pli;                      /* PLI (PSFB, FMT 1) packets for ssrc (or for media SSRC 0) */
    int fir;                      /* FIR (PSFB, FMT 4) entries for ssrc, new ones: a different sequence number */
    int packets;                  /* RTCP packets read */
    uint8_t fir_seq;              /* the newest FIR entry's sequence number (valid if fir) */
} rc_rtcp_feedback;
/* Reads a compound RTCP packet (RFC 3550 §6.1, A.2: every packet V=2 and its length within the datagram; a
 * reduced-size packet of feedback alone, RFC 5506, is accepted). A FIR entry whose sequence number equals
 * *last_fir_seq (when *have_fir) repeats a request already honoured (RFC 5104 §4.3.1.2) and is not counted; both
 * are updated. Returns 0 and *out, or -1 for a malformed datagram (then nothing in it counts). */
int rc_rtcp_parse(const uint8_t *p, size_t n, uint32_t ssrc, int *have_fir, uint8_t *last_fir_seq,
                  rc_rtcp_feedback *out);

#endif
