/* SPDX-License-Identifier: MIT */
/*
 * wire.c — wire format (docs/protocol.md): the 56-byte little-endian frame header, and validation of client
 * JSON messages (acks and renderview events) into rc_client_msg. JSON is parsed by cJSON; every field is checked
 * for presence, type, finiteness and range before it reaches the app.
 */
#include "transport/wire.h"

#include "codec/codec.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void put16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static void put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static uint32_t get32(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static uint64_t get64(const uint8_t *p) { return (uint64_t)get32(p) | ((uint64_t)get32(p + 4) << 32); }

void rc_frame_header_write(uint8_t out[RC_FRAME_HEADER_SIZE], const rc_frame_header *h) {
    put32(out + 0, RC_FRAME_MAGIC);
    out[4] = h->version;
    out[5] = h->codec;
    put16(out + 6, h->flags);
    put32(out + 8, h->seq);
    put16(out + 12, h->tile_index);
    put16(out + 14, h->tile_count);
    put64(out + 16, (uint64_t)h->timestamp_us);
    put32(out + 24, h->frame_width);
    put32(out + 28, h->frame_height);
    put32(out + 32, h->x);
    put32(out + 36, h->y);
    put32(out + 40, h->w);
    put32(out + 44, h->h);
    put32(out + 48, h->rtt_us);
    put32(out + 52, h->payload_bytes);
}

void rc_wire_tile_header(const rc_packet *pk, int tile, uint32_t rtt_us, int version,
                         uint8_t out[RC_FRAME_HEADER_SIZE]) {
    const rc_tile *t = &pk->tiles[tile];
    uint16_t flags = 0;
    if (pk->flags & RC_PACKET_LOSSLESS) flags |= RC_FLAG_LOSSLESS;
    if (pk->flags & RC_PACKET_REFINE) flags |= RC_FLAG_REFINE;
    if (tile == pk->ntiles - 1) flags |= RC_FLAG_LAST_TILE;
    if (pk->flags & RC_PACKET_SCALED) flags |= RC_FLAG_SCALED;
    if (version >= 2 && (pk->flags & (RC_PACKET_KEYFRAME | RC_PACKET_REFINE))) flags |= RC_FLAG_KEYFRAME;
    rc_frame_header h = {.version = (uint8_t)version, .codec = pk->codec ? pk->codec->wire_id : 0,
                         .flags = flags, .seq = pk->seq, .tile_index = (uint16_t)tile,
                         .tile_count = (uint16_t)pk->ntiles, .timestamp_us = pk->present_us,
                         .frame_width = pk->width, .frame_height = pk->height, .x = t->x, .y = t->y, .w = t->w,
                         .h = t->h, .rtt_us = rtt_us, .payload_bytes = (uint32_t)t->data.len};
    rc_frame_header_write(out, &h);
}

unsigned rc_wire_codec_list(const char *list) {
    static const struct { const char *name; unsigned id; } k[] = { /* rcanvas.h's codecs that are wire ids */
#define RC_WIRE_ROW_(name, value, text, wire) {wire ? text : NULL, value},
        RCANVAS_CODECS(RC_WIRE_ROW_)
#undef RC_WIRE_ROW_
    };
    unsigned mask = 0;
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
            if (k[i].name && strlen(k[i].name) == n && !memcmp(k[i].name, p, n) && k[i].id < 32) mask |= 1u << k[i].id;
        p = e ? e + 1 : p + n;
    }
    return mask;
}

int rc_frame_header_read(const uint8_t *msg, size_t len, rc_frame_header *h) {
    if (!msg || !h || len < RC_FRAME_HEADER_SIZE) return RCANVAS_EINVAL;
    if (get32(msg) != RC_FRAME_MAGIC) return RCANVAS_EINVAL;
    h->version = msg[4];
    h->codec = msg[5];
    h->flags = get16(msg + 6);
    h->seq = get32(msg + 8);
    h->tile_index = get16(msg + 12);
    h->tile_count = get16(msg + 14);
    h->timestamp_us = (int64_t)get64(msg + 16);
    h->frame_width = get32(msg + 24);
    h->frame_height = get32(msg + 28);
    h->x = get32(msg + 32);
    h->y = get32(msg + 36);
    h->w = get32(msg + 40);
    h->h = get32(msg + 44);
    h->rtt_us = get32(msg + 48);
    h->payload_bytes = get32(msg + 52);
    if (h->version < 1 || h->version > RCANVAS_PROTOCOL_VERSION) return RCANVAS_EINVAL;
    if (h->payload_bytes != len - RC_FRAME_HEADER_SIZE) return RCANVAS_EINVAL;
    if (h->tile_count == 0 || h->tile_index >= h->tile_count) return RCANVAS_EINVAL;
    if (h->w == 0 || h->h == 0 || (uint64_t)h->x + h->w > h->frame_width ||
        (uint64_t)h->y + h->h > h->frame_height)
        return RCANVAS_EINVAL;
    return RCANVAS_OK;
}

/* ---- client messages ---- */

#define COORD_MAX 1e6

typedef struct { const char *name; rcanvas_event_type type; } type_name;
static const type_name k_types[] = { /* rcanvas.h's table */
#define RC_EVENT_ROW_(name, value, text) {text, RCANVAS_EVENT_##name},
    RCANVAS_EVENTS(RC_EVENT_ROW_)
#undef RC_EVENT_ROW_
};

const char *rcanvas_event_type_name(rcanvas_event_type type) {
    for (size_t i = 0; i < sizeof k_types / sizeof k_types[0]; i++)
        if (k_types[i].type == type) return k_types[i].name;
    return "unknown";
}

/* Number field: required unless opt; finite; in [lo, hi]. */
static int get_num(const cJSON *o, const char *key, double lo, double hi, int opt, double *out, const char **why,
                   const char *msg) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!it) {
        if (opt) return 0;
        *why = msg;
        return -1;
    }
    if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble) || it->valuedouble < lo || it->valuedouble > hi) {
        *why = msg;
        return -1;
    }
    *out = it->valuedouble;
    return 0;
}

static int get_int(const cJSON *o, const char *key, int lo, int hi, int opt, int *out, const char **why,
                   const char *msg) {
    double d = 0;
    if (get_num(o, key, lo, hi, opt, &d, why, msg)) return -1;
    if (d != floor(d)) {
        *why = msg;
        return -1;
    }
    *out = (int)d;
    return 0;
}

/* Strict UTF-8 (RFC 3629 §4): no overlong forms, no UTF-16 surrogates (U+D800–DFFF), nothing above U+10FFFF.
 * 1 if the n bytes at s are well-formed, else 0. */
static int utf8_valid(const unsigned char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t k = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (!k || i + k > n || (k == 2 && c < 0xC2) || (k == 4 && c > 0xF4)) return 0;
        for (size_t j = 1; j < k; j++)
            if ((s[i + j] & 0xC0) != 0x80) return 0;
        if (k == 3 && c == 0xE0 && s[i + 1] < 0xA0) return 0; /* overlong 3-byte form */
        if (k == 3 && c == 0xED && s[i + 1] > 0x9F) return 0; /* U+D800–DFFF: surrogates */
        if (k == 4 && c == 0xF0 && s[i + 1] < 0x90) return 0; /* overlong 4-byte form */
        if (k == 4 && c == 0xF4 && s[i + 1] > 0x8F) return 0; /* above U+10FFFF */
        i += k;
    }
    return 1;
}

/* A bounded UTF-8 string (≤ cap-1 bytes, valid UTF-8, no NUL). */
static int get_str(const cJSON *o, const char *key, char *out, size_t cap, const char **why, const char *msg) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsString(it) || !it->valuestring) {
        *why = msg;
        return -1;
    }
    size_t n = strlen(it->valuestring);
    if (n == 0 || n >= cap) {
        *why = msg;
        return -1;
    }
    if (!utf8_valid((const unsigned char *)it->valuestring, n)) {
        *why = "string is not valid UTF-8";
        return -1;
    }
    memcpy(out, it->valuestring, n + 1);
    return 0;
}

static int get_buttons(const cJSON *o, uint32_t *mask, const char **why) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, "buttons");
    *mask = 0;
    if (!it) return 0; /* optional */
    if (!cJSON_IsArray(it) || cJSON_GetArraySize(it) > 10) {
        *why = "buttons must be a list of at most 10 integers";
        return -1;
    }
    const cJSON *b;
    cJSON_ArrayForEach(b, it) {
        if (!cJSON_IsNumber(b) || b->valuedouble < 0 || b->valuedouble > 5 || b->valuedouble != floor(b->valuedouble)) {
            *why = "buttons entries must be integers 0..5";
            return -1;
        }
        *mask |= 1u << (int)b->valuedouble;
    }
    return 0;
}

static int get_modifiers(const cJSON *o, uint32_t *mask, const char **why) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, "modifiers");
    *mask = 0;
    if (!it) return 0;
    if (!cJSON_IsArray(it) || cJSON_GetArraySize(it) > 10) {
        *why = "modifiers must be a list of at most 10 strings";
        return -1;
    }
    const cJSON *m;
    cJSON_ArrayForEach(m, it) {
        const char *s = cJSON_IsString(m) ? m->valuestring : NULL;
        if (s && !strcmp(s, "Shift")) *mask |= RCANVAS_MOD_SHIFT;
        else if (s && !strcmp(s, "Control")) *mask |= RCANVAS_MOD_CONTROL;
        else if (s && !strcmp(s, "Alt")) *mask |= RCANVAS_MOD_ALT;
        else if (s && !strcmp(s, "Meta")) *mask |= RCANVAS_MOD_META;
        else {
            *why = "modifiers entries must be Shift, Control, Alt or Meta";
            return -1;
        }
    }
    return 0;
}

static int get_touches(const cJSON *o, rcanvas_event *ev, const char **why) {
    int n = 0;
    if (get_int(o, "ntouches", 0, RCANVAS_MAX_TOUCHES, 1, &n, why, "ntouches must be an integer 0..10")) return -1;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "touches");
    int count = 0;
    if (t) {
        if (!cJSON_IsObject(t) || cJSON_GetArraySize(t) > RCANVAS_MAX_TOUCHES) {
            *why = "touches must be an object of at most 10 touches";
            return -1;
        }
        const cJSON *e;
        cJSON_ArrayForEach(e, t) {
            rcanvas_touch *tc = &ev->touches[count];
            char *end = NULL;
            long id = e->string ? strtol(e->string, &end, 10) : 0;
            if (!e->string || end == e->string || *end || id < INT32_MIN || id > INT32_MAX || !cJSON_IsObject(e)) {
                *why = "touches keys must be integer ids mapping to {x, y, pressure}";
                return -1;
            }
            tc->id = (int32_t)id;
            tc->pressure = 0;
            if (get_num(e, "x", -COORD_MAX, COORD_MAX, 0, &tc->x, why, "touch x must be a finite number") ||
                get_num(e, "y", -COORD_MAX, COORD_MAX, 0, &tc->y, why, "touch y must be a finite number") ||
                get_num(e, "pressure", 0, 1, 1, &tc->pressure, why, "touch pressure must be 0..1"))
                return -1;
            count++;
        }
    }
    ev->ntouches = n > count ? n : count;
    return 0;
}

static int parse_event(const cJSON *o, const char *type, rc_client_msg *out, const char **why) {
    rcanvas_event *ev = &out->event;
    ev->type = 0;
    for (size_t i = 0; i < sizeof k_types / sizeof k_types[0]; i++)
        if (!strcmp(type, k_types[i].name)) ev->type = k_types[i].type;
    if (!ev->type) {
        *why = "unknown event_type";
        return -1;
    }
    out->kind = RC_MSG_EVENT;
    if (get_num(o, "time_stamp", 0, 1e12, 1, &ev->time_stamp, why, "time_stamp must be a number ≥ 0")) return -1;
    switch (ev->type) {
    case RCANVAS_EVENT_POINTER_DOWN:
    case RCANVAS_EVENT_POINTER_UP:
    case RCANVAS_EVENT_POINTER_MOVE:
    case RCANVAS_EVENT_POINTER_ENTER:
    case RCANVAS_EVENT_POINTER_LEAVE:
    case RCANVAS_EVENT_DOUBLE_CLICK:
        if (get_num(o, "x", -COORD_MAX, COORD_MAX, 0, &ev->x, why, "x must be a finite number within ±1e6") ||
            get_num(o, "y", -COORD_MAX, COORD_MAX, 0, &ev->y, why, "y must be a finite number within ±1e6") ||
            get_int(o, "button", 0, 5, 1, &ev->button, why, "button must be an integer 0..5") ||
            get_buttons(o, &ev->buttons, why) || get_modifiers(o, &ev->modifiers, why) ||
            get_touches(o, ev, why))
            return -1;
        return 0;
    case RCANVAS_EVENT_WHEEL:
        if (get_num(o, "x", -COORD_MAX, COORD_MAX, 0, &ev->x, why, "x must be a finite number within ±1e6") ||
            get_num(o, "y", -COORD_MAX, COORD_MAX, 0, &ev->y, why, "y must be a finite number within ±1e6") ||
            get_num(o, "dx", -COORD_MAX, COORD_MAX, 0, &ev->dx, why, "dx must be a finite number within ±1e6") ||
            get_num(o, "dy", -COORD_MAX, COORD_MAX, 0, &ev->dy, why, "dy must be a finite number within ±1e6") ||
            get_buttons(o, &ev->buttons, why) || get_modifiers(o, &ev->modifiers, why))
            return -1;
        return 0;
    case RCANVAS_EVENT_KEY_DOWN:
    case RCANVAS_EVENT_KEY_UP:
        if (get_str(o, "key", ev->key, sizeof ev->key, why, "key must be a string of 1..31 bytes") ||
            get_modifiers(o, &ev->modifiers, why))
            return -1;
        return 0;
    case RCANVAS_EVENT_CHAR:
        if (get_str(o, "data", ev->data, sizeof ev->data, why, "data must be a string of 1..31 bytes") ||
            get_modifiers(o, &ev->modifiers, why))
            return -1;
        return 0;
    case RCANVAS_EVENT_RESIZE:
        if (get_num(o, "width", 0, 32768, 0, &ev->width, why, "width must be a number in (0, 32768]") ||
            get_num(o, "height", 0, 32768, 0, &ev->height, why, "height must be a number in (0, 32768]") ||
            get_num(o, "pixel_ratio", 0, 16, 0, &ev->pixel_ratio, why, "pixel_ratio must be in (0, 16]"))
            return -1;
        if (ev->width <= 0 || ev->height <= 0 || ev->pixel_ratio <= 0) {
            *why = "resize width, height and pixel_ratio must be > 0";
            return -1;
        }
        return 0;
    case RCANVAS_EVENT_CLOSE:
        return 0;
    }
    return -1;
}

/* 1 if the message holds a NUL byte or a \u0000 escape. A backslash occurs in valid JSON only inside a string,
 * where it starts an escape of 2 characters (\uXXXX: 6); skipping each whole keeps "\\u0000" (a backslash, then
 * the text u0000) from counting. */
static int has_nul(const char *json, size_t len) {
    if (memchr(json, 0, len)) return 1;
    for (size_t i = 0; i + 1 < len; i++) {
        if (json[i] != '\\') continue;
        if (json[i + 1] == 'u' && i + 5 < len && !memcmp(json + i + 2, "0000", 4)) return 1;
        i++;
    }
    return 0;
}

int rc_client_msg_parse(const char *json, size_t len, rc_client_msg *out, const char **why) {
    static const char *dummy;
    if (!why) why = &dummy;
    *why = NULL;
    if (!json || !out) {
        *why = "no message";
        return RCANVAS_EINVAL;
    }
    memset(out, 0, sizeof(*out));
    if (has_nul(json, len)) { /* cJSON keeps C strings: "z\u0000b" would reach the app as "z" */
        *why = "NUL character in message (raw or \\u0000)";
        return RCANVAS_EINVAL;
    }
    const char *end = NULL;
    cJSON *o = cJSON_ParseWithLengthOpts(json, len, &end, 0);
    if (!o) {
        *why = "malformed JSON";
        return RCANVAS_EINVAL;
    }
    int r = -1;
    if (!cJSON_IsObject(o)) {
        *why = "message must be a JSON object";
    } else {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "type");
        const cJSON *et = cJSON_GetObjectItemCaseSensitive(o, "event_type");
        if (cJSON_IsString(t) && !strcmp(t->valuestring, "keyframe")) {
            out->kind = RC_MSG_KEYFRAME;
            r = 0;
        } else if (cJSON_IsString(t) && !strcmp(t->valuestring, "ack")) {
            double seq = 0;
            double hold = 0, decode = 0;
            if (!get_num(o, "seq", 0, 4294967295.0, 0, &seq, why, "ack seq must be an integer 0..2^32-1") &&
                !get_num(o, "hold_ms", 0, 60000, 1, &hold, why, "ack hold_ms must be a number 0..60000") &&
                !get_num(o, "decode_ms", 0, 60000, 1, &decode, why, "ack decode_ms must be a number 0..60000")) {
                if (seq != floor(seq)) *why = "ack seq must be an integer 0..2^32-1";
                else {
                    out->kind = RC_MSG_ACK;
                    out->ack_seq = (uint32_t)seq;
                    out->ack_hold_us = (uint32_t)(hold * 1000);
                    out->ack_decode_us = (uint32_t)(decode * 1000);
                    r = 0;
                }
            }
        } else if (cJSON_IsString(t) && !strcmp(t->valuestring, "visibility")) {
            const cJSON *vis = cJSON_GetObjectItemCaseSensitive(o, "visible");
            if (!cJSON_IsBool(vis)) *why = "visibility needs visible: true or false";
            else {
                out->kind = RC_MSG_VISIBILITY;
                out->visible = cJSON_IsTrue(vis);
                r = 0;
            }
        } else if (cJSON_IsString(et) && et->valuestring) {
            r = parse_event(o, et->valuestring, out, why);
        } else if (t) {
            *why = "unknown message type";
        } else {
            *why = "message has neither type nor event_type";
        }
    }
    cJSON_Delete(o);
    if (r) {
        if (!*why) *why = "invalid message";
        return RCANVAS_EINVAL;
    }
    return RCANVAS_OK;
}
