/* SPDX-License-Identifier: MIT */
/*
 * test_protocol — the wire format: the 56-byte frame header round-trips field for field and malformed headers
 * are refused; client JSON messages parse into the right event fields, and bad ones (malformed JSON, unknown
 * types, wrong field types, NaN/Inf, out-of-range values, bad UTF-8) are refused with a reason.
 */
#include <math.h>
#include <string.h>

#include "test.h"
#include "transport/wire.h"

static void test_header_roundtrip(void) {
    uint8_t msg[RC_FRAME_HEADER_SIZE + 10] = {0};
    rc_frame_header h = {.version = 1, .codec = 2, .flags = 0x7, .seq = 0xDEADBEEF, .tile_index = 3,
                         .tile_count = 4, .timestamp_us = 0x0123456789ABCDEFLL, .frame_width = 3840,
                         .frame_height = 2160, .x = 0, .y = 1620, .w = 3840, .h = 540, .rtt_us = 12345,
                         .payload_bytes = 10};
    rc_frame_header_write(msg, &h);
    CHECK(msg[0] == 'R' && msg[1] == 'C' && msg[2] == 'C' && msg[3] == 'F');
    CHECK_EQ_INT(msg[8], 0xEF); /* little-endian seq */
    CHECK_EQ_INT(msg[11], 0xDE);
    rc_frame_header r;
    CHECK_EQ_INT(rc_frame_header_read(msg, sizeof msg, &r), RCANVAS_OK);
    CHECK_EQ_INT(r.codec, 2);
    CHECK_EQ_INT(r.flags, 7);
    CHECK_EQ_INT(r.seq, 0xDEADBEEFu);
    CHECK_EQ_INT(r.tile_index, 3);
    CHECK_EQ_INT(r.tile_count, 4);
    CHECK_EQ_INT(r.timestamp_us, 0x0123456789ABCDEFLL);
    CHECK_EQ_INT(r.frame_width, 3840);
    CHECK_EQ_INT(r.frame_height, 2160);
    CHECK_EQ_INT(r.y, 1620);
    CHECK_EQ_INT(r.h, 540);
    CHECK_EQ_INT(r.rtt_us, 12345);
    CHECK_EQ_INT(r.payload_bytes, 10);

    /* refusals */
    CHECK_EQ_INT(rc_frame_header_read(msg, RC_FRAME_HEADER_SIZE - 1, &r), RCANVAS_EINVAL);  /* short */
    CHECK_EQ_INT(rc_frame_header_read(msg, sizeof msg - 1, &r), RCANVAS_EINVAL);            /* length mismatch */
    rc_frame_header bad = h;
    bad.tile_index = 4;
    rc_frame_header_write(msg, &bad);
    CHECK_EQ_INT(rc_frame_header_read(msg, sizeof msg, &r), RCANVAS_EINVAL);
    bad = h;
    bad.y = 1621; /* rectangle leaves the frame */
    rc_frame_header_write(msg, &bad);
    CHECK_EQ_INT(rc_frame_header_read(msg, sizeof msg, &r), RCANVAS_EINVAL);
    bad = h;
    bad.version = 2; /* protocol 2 headers are read too */
    rc_frame_header_write(msg, &bad);
    CHECK_EQ_INT(rc_frame_header_read(msg, sizeof msg, &r), RCANVAS_OK);
    bad.version = RCANVAS_PROTOCOL_VERSION + 1;
    rc_frame_header_write(msg, &bad);
    CHECK_EQ_INT(rc_frame_header_read(msg, sizeof msg, &r), RCANVAS_EINVAL);
    bad.version = 0;
    rc_frame_header_write(msg, &bad);
    CHECK_EQ_INT(rc_frame_header_read(msg, sizeof msg, &r), RCANVAS_EINVAL);
    /* codecs= of the upgrade URL */
    CHECK_EQ_INT(rc_wire_codec_list("h264,vp9,jpeg"),
                 (1u << RCANVAS_CODEC_H264) | (1u << RCANVAS_CODEC_VP9) | (1u << RCANVAS_CODEC_JPEG));
    CHECK_EQ_INT(rc_wire_codec_list("png,,bogus,vp8"), (1u << RCANVAS_CODEC_PNG) | (1u << RCANVAS_CODEC_VP8));
    CHECK_EQ_INT(rc_wire_codec_list(""), 0);
    CHECK_EQ_INT(rc_wire_codec_list("h2640"), 0); /* whole names only */
    rc_client_msg km;
    const char *kwhy = NULL;
    CHECK_EQ_INT(rc_client_msg_parse("{\"type\":\"keyframe\"}", 19, &km, &kwhy), RCANVAS_OK);
    CHECK_EQ_INT(km.kind, RC_MSG_KEYFRAME);
    rc_frame_header_write(msg, &h);
    msg[0] = 'X';
    CHECK_EQ_INT(rc_frame_header_read(msg, sizeof msg, &r), RCANVAS_EINVAL);
}

static int parse(const char *json, rc_client_msg *m, const char **why) {
    return rc_client_msg_parse(json, strlen(json), m, why);
}

static void test_good_events(void) {
    rc_client_msg m;
    const char *why;
    CHECK_EQ_INT(parse("{\"event_type\":\"pointer_down\",\"x\":12.5,\"y\":30,\"button\":1,\"buttons\":[1,3],"
                       "\"modifiers\":[\"Shift\",\"Meta\"],\"ntouches\":0,\"touches\":{},\"time_stamp\":1700000000.25}",
                       &m, &why),
                 RCANVAS_OK);
    CHECK_EQ_INT(m.kind, RC_MSG_EVENT);
    CHECK_EQ_INT(m.event.type, RCANVAS_EVENT_POINTER_DOWN);
    CHECK_NEAR(m.event.x, 12.5, 0);
    CHECK_NEAR(m.event.y, 30, 0);
    CHECK_EQ_INT(m.event.button, 1);
    CHECK_EQ_INT(m.event.buttons, (1u << 1) | (1u << 3));
    CHECK_EQ_INT(m.event.modifiers, RCANVAS_MOD_SHIFT | RCANVAS_MOD_META);
    CHECK_NEAR(m.event.time_stamp, 1700000000.25, 1e-6);

    CHECK_EQ_INT(parse("{\"event_type\":\"wheel\",\"x\":1,\"y\":2,\"dx\":0,\"dy\":-120,\"buttons\":[],"
                       "\"modifiers\":[\"Control\"]}", &m, &why), RCANVAS_OK);
    CHECK_EQ_INT(m.event.type, RCANVAS_EVENT_WHEEL);
    CHECK_NEAR(m.event.dy, -120, 0);
    CHECK_EQ_INT(m.event.modifiers, RCANVAS_MOD_CONTROL);

    CHECK_EQ_INT(parse("{\"event_type\":\"key_down\",\"key\":\"ArrowLeft\",\"modifiers\":[\"Alt\"]}", &m, &why),
                 RCANVAS_OK);
    CHECK(!strcmp(m.event.key, "ArrowLeft"));
    CHECK_EQ_INT(m.event.modifiers, RCANVAS_MOD_ALT);

    CHECK_EQ_INT(parse("{\"event_type\":\"char\",\"data\":\"\xc3\xa9\",\"modifiers\":[]}", &m, &why), RCANVAS_OK);
    CHECK(!strcmp(m.event.data, "\xc3\xa9"));

    CHECK_EQ_INT(parse("{\"event_type\":\"resize\",\"width\":800,\"height\":600.5,\"pixel_ratio\":2}", &m, &why),
                 RCANVAS_OK);
    CHECK_NEAR(m.event.width, 800, 0);
    CHECK_NEAR(m.event.height, 600.5, 0);
    CHECK_NEAR(m.event.pixel_ratio, 2, 0);

    CHECK_EQ_INT(parse("{\"event_type\":\"pointer_move\",\"x\":5,\"y\":6,\"ntouches\":2,\"touches\":"
                       "{\"7\":{\"x\":1,\"y\":2,\"pressure\":0.5},\"9\":{\"x\":3,\"y\":4}}}", &m, &why),
                 RCANVAS_OK);
    CHECK_EQ_INT(m.event.ntouches, 2);
    CHECK_EQ_INT(m.event.touches[0].id, 7);
    CHECK_NEAR(m.event.touches[0].pressure, 0.5, 0);
    CHECK_NEAR(m.event.touches[1].x, 3, 0);

    CHECK_EQ_INT(parse("{\"event_type\":\"close\"}", &m, &why), RCANVAS_OK);
    CHECK_EQ_INT(m.event.type, RCANVAS_EVENT_CLOSE);
    CHECK_EQ_INT(parse("{\"event_type\":\"double_click\",\"x\":1,\"y\":1,\"button\":1,\"extra\":[1,2]}", &m, &why),
                 RCANVAS_OK); /* unknown extra fields are ignored */

    CHECK_EQ_INT(parse("{\"type\":\"ack\",\"seq\":4294967295}", &m, &why), RCANVAS_OK);
    CHECK_EQ_INT(m.kind, RC_MSG_ACK);
    CHECK_EQ_INT(m.ack_seq, 4294967295u);
    CHECK(!strcmp(rcanvas_event_type_name(RCANVAS_EVENT_DOUBLE_CLICK), "double_click"));

    CHECK_EQ_INT(parse("{\"type\":\"visibility\",\"visible\":false}", &m, &why), RCANVAS_OK);
    CHECK_EQ_INT(m.kind, RC_MSG_VISIBILITY);
    CHECK_EQ_INT(m.visible, 0);
    CHECK_EQ_INT(parse("{\"type\":\"visibility\",\"visible\":true,\"extra\":1}", &m, &why), RCANVAS_OK);
    CHECK_EQ_INT(m.kind, RC_MSG_VISIBILITY);
    CHECK_EQ_INT(m.visible, 1);
}

static void test_bad_messages(void) {
    static const char *bad[] = {
        "",                                                            /* empty */
        "{",                                                           /* malformed */
        "[1,2]",                                                       /* not an object */
        "\"ack\"",                                                     /* not an object */
        "{}",                                                          /* no type */
        "{\"type\":\"hello\"}",                                        /* unknown type */
        "{\"event_type\":\"explode\"}",                                /* unknown event */
        "{\"event_type\":42}",                                         /* wrong type of event_type */
        "{\"event_type\":\"pointer_down\",\"y\":1}",                   /* missing x */
        "{\"event_type\":\"pointer_down\",\"x\":\"1\",\"y\":1}",       /* x a string */
        "{\"event_type\":\"pointer_down\",\"x\":1e999,\"y\":1}",       /* x infinite */
        "{\"event_type\":\"pointer_down\",\"x\":NaN,\"y\":1}",         /* NaN is not JSON */
        "{\"event_type\":\"pointer_down\",\"x\":2e6,\"y\":1}",         /* out of range */
        "{\"event_type\":\"pointer_down\",\"x\":1,\"y\":1,\"button\":9}",
        "{\"event_type\":\"pointer_down\",\"x\":1,\"y\":1,\"button\":1.5}",
        "{\"event_type\":\"pointer_down\",\"x\":1,\"y\":1,\"buttons\":7}",
        "{\"event_type\":\"pointer_down\",\"x\":1,\"y\":1,\"buttons\":[1,2,3,4,5,1,2,3,4,5,1]}",
        "{\"event_type\":\"pointer_down\",\"x\":1,\"y\":1,\"modifiers\":[\"Hyper\"]}",
        "{\"event_type\":\"pointer_down\",\"x\":1,\"y\":1,\"ntouches\":-1}",
        "{\"event_type\":\"pointer_down\",\"x\":1,\"y\":1,\"touches\":{\"a\":{\"x\":1,\"y\":1}}}",
        "{\"event_type\":\"wheel\",\"x\":1,\"y\":1,\"dx\":0}",        /* missing dy */
        "{\"event_type\":\"key_down\",\"key\":\"\"}",                  /* empty key */
        "{\"event_type\":\"key_down\",\"key\":\"0123456789012345678901234567890123\"}", /* too long */
        "{\"event_type\":\"key_down\",\"key\":5}",
        "{\"event_type\":\"char\",\"data\":\"\xff\"}",                 /* invalid UTF-8 */
        "{\"event_type\":\"char\",\"data\":\"\xc0\xaf\"}",             /* overlong */
        "{\"event_type\":\"char\",\"data\":\"\xe0\x80\xaf\"}",         /* overlong, 3 bytes */
        "{\"event_type\":\"char\",\"data\":\"\xf0\x80\x80\xaf\"}",     /* overlong, 4 bytes */
        "{\"event_type\":\"char\",\"data\":\"\xed\xa0\x80\"}",         /* U+D800, a surrogate */
        "{\"event_type\":\"char\",\"data\":\"\xed\xbf\xbf\"}",         /* U+DFFF, a surrogate */
        "{\"event_type\":\"char\",\"data\":\"\xf4\x90\x80\x80\"}",     /* U+110000, above U+10FFFF */
        "{\"event_type\":\"char\",\"data\":\"\xf5\x80\x80\x80\"}",     /* F5: never in UTF-8 */
        "{\"event_type\":\"resize\",\"width\":0,\"height\":100,\"pixel_ratio\":1}",
        "{\"event_type\":\"resize\",\"width\":100,\"height\":100,\"pixel_ratio\":0}",
        "{\"event_type\":\"resize\",\"width\":100000,\"height\":100,\"pixel_ratio\":1}",
        "{\"event_type\":\"resize\",\"width\":100,\"height\":100,\"pixel_ratio\":1,\"time_stamp\":-5}",
        "{\"type\":\"ack\"}",
        "{\"type\":\"ack\",\"seq\":-1}",
        "{\"type\":\"ack\",\"seq\":1.5}",
        "{\"type\":\"ack\",\"seq\":4294967296}",
        "{\"type\":\"visibility\"}",                                /* missing visible */
        "{\"type\":\"visibility\",\"visible\":1}",                  /* not a boolean */
        "{\"type\":\"visibility\",\"visible\":\"false\"}",
        "{\"type\":\"visibility\",\"visible\":null}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rc_client_msg m;
        const char *why = NULL;
        int r = parse(bad[i], &m, &why);
        CHECK_MSG(r == RCANVAS_EINVAL && why && *why, "accepted: %s", bad[i]);
    }
    /* a message longer than its length argument is not read past the length */
    rc_client_msg m;
    const char *why;
    CHECK_EQ_INT(rc_client_msg_parse("{\"type\":\"ack\",\"seq\":1}garbage", 22, &m, &why), RCANVAS_OK);
    CHECK_EQ_INT(rc_client_msg_parse("{\"type\":\"ack\",\"seq\":1}", 10, &m, &why), RCANVAS_EINVAL);
    /* the edges of strict UTF-8 are accepted: U+D7FF, U+E000, U+10FFFF */
    static const char *edge[] = {"\xed\x9f\xbf", "\xee\x80\x80", "\xf4\x8f\xbf\xbf"};
    for (size_t i = 0; i < 3; i++) {
        char msg[80];
        snprintf(msg, sizeof msg, "{\"event_type\":\"char\",\"data\":\"%s\"}", edge[i]);
        CHECK_EQ_INT(parse(msg, &m, &why), RCANVAS_OK);
        CHECK_EQ_INT(strcmp(m.event.data, edge[i]), 0);
    }
}

/* A NUL inside a string (raw, or the \u0000 escape) is refused: cJSON keeps C strings, so "z\u0000b" reached the
 * app as "z"; an escaped backslash before the text u0000 is no NUL. */
/* acks: seq, the optional hold_ms and decode_ms (the viewer's decode+draw time the steering reads: 0 when not said,
 * an old client's ack), and out-of-range values refused as malformed */
static void test_acks(void) {
    rc_client_msg m;
    const char *why = NULL;
    CHECK_EQ_INT(parse("{\"type\":\"ack\",\"seq\":7}", &m, &why), RCANVAS_OK);
    CHECK_EQ_INT(m.kind, RC_MSG_ACK);
    CHECK_EQ_INT(m.ack_seq, 7);
    CHECK_EQ_INT(m.ack_hold_us, 0);
    CHECK_EQ_INT(m.ack_decode_us, 0);
    CHECK_EQ_INT(parse("{\"type\":\"ack\",\"seq\":8,\"hold_ms\":12.5,\"decode_ms\":31.25}", &m, &why), RCANVAS_OK);
    CHECK_EQ_INT(m.ack_seq, 8);
    CHECK_EQ_INT(m.ack_hold_us, 12500);
    CHECK_EQ_INT(m.ack_decode_us, 31250);
    CHECK_EQ_INT(parse("{\"type\":\"ack\",\"seq\":9,\"decode_ms\":60000}", &m, &why), RCANVAS_OK);
    CHECK_EQ_INT(m.ack_decode_us, 60000000u);
    static const char *bad[] = {
        "{\"type\":\"ack\",\"seq\":9,\"decode_ms\":-1}",
        "{\"type\":\"ack\",\"seq\":9,\"decode_ms\":60000.5}",
        "{\"type\":\"ack\",\"seq\":9,\"decode_ms\":\"fast\"}",
        "{\"type\":\"ack\",\"seq\":9,\"decode_ms\":1e309}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        why = NULL;
        CHECK_MSG(parse(bad[i], &m, &why) == RCANVAS_EINVAL && why && strstr(why, "decode_ms"), "%s: %s", bad[i],
                  why ? why : "(no reason)");
    }
}

static void test_nul(void) {
    rc_client_msg m;
    const char *why = NULL;
    static const char esc[] = "{\"event_type\":\"char\",\"data\":\"z\\u0000b\",\"modifiers\":[]}";
    CHECK_EQ_INT(rc_client_msg_parse(esc, sizeof esc - 1, &m, &why), RCANVAS_EINVAL);
    CHECK_MSG(why && strstr(why, "NUL"), "why: %s", why ? why : "(none)");
    static const char raw[] = "{\"event_type\":\"char\",\"data\":\"z\0b\",\"modifiers\":[]}";
    why = NULL;
    CHECK_EQ_INT(rc_client_msg_parse(raw, sizeof raw - 1, &m, &why), RCANVAS_EINVAL);
    CHECK_MSG(why && strstr(why, "NUL"), "why: %s", why ? why : "(none)");
    static const char key[] = "{\"type\":\"keyframe\\u0000x\"}";
    CHECK_EQ_INT(rc_client_msg_parse(key, sizeof key - 1, &m, &why), RCANVAS_EINVAL);
    static const char ok[] = "{\"event_type\":\"char\",\"data\":\"\\\\u0000\",\"modifiers\":[]}";
    CHECK_EQ_INT(rc_client_msg_parse(ok, sizeof ok - 1, &m, &why), RCANVAS_OK);
    CHECK_MSG(!strcmp(m.event.data, "\\u0000"), "data: %s", m.event.data);
    static const char one[] = "{\"event_type\":\"char\",\"data\":\"\\u0001\",\"modifiers\":[]}";
    CHECK_EQ_INT(rc_client_msg_parse(one, sizeof one - 1, &m, &why), RCANVAS_OK);
}

int main(void) {
    test_acks();
    test_nul();
    test_header_roundtrip();
    test_good_events();
    test_bad_messages();
    TEST_MAIN_END();
}
