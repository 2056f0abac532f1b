/* SPDX-License-Identifier: MIT */
/*
 * codec.c — the codec table and the generic entry points of the codec interface (see codec.h), plus the
 * per-worker instances of the intra-only CPU codecs.
 */
#include "codec/codec.h"

#include <stdlib.h>
#include <string.h>

/* Every codec rcanvas has. A new codec adds its rc_codec_type here (and declares it in codec.h). */
static const rc_codec_type *const k_codecs[] = {
    &rc_codec_jpeg,
    &rc_codec_png,
#if RCANVAS_HAVE_VULKAN
    &rc_codec_jpeg_gpu,
    &rc_codec_h264_gpu,
#endif
#if RCANVAS_HAVE_H264
    &rc_codec_h264,
#endif
#if RCANVAS_HAVE_VPX
    &rc_codec_vp8,
    &rc_codec_vp9,
#endif
#if RCANVAS_HAVE_WEBP
    &rc_codec_webp,          /* before webp-lossless: rc_codec_for(RCANVAS_CODEC_WEBP) is the lossy one */
    &rc_codec_webp_lossless,
#endif
#if RCANVAS_HAVE_AV1
    &rc_codec_av1,
#endif
};
#define NBUILTIN (sizeof k_codecs / sizeof k_codecs[0])
_Static_assert(NBUILTIN <= RC_CODEC_MAX, "a canvas keeps a bit per codec");
/* those rc_codec_register added (tests) */
static const rc_codec_type *g_extra[RC_CODEC_MAX - NBUILTIN > 0 ? RC_CODEC_MAX - NBUILTIN : 1];
static size_t g_nextra;

static const rc_codec_type *codec_at(size_t i) {
    return i < NBUILTIN ? k_codecs[i] : i < NBUILTIN + g_nextra ? g_extra[i - NBUILTIN] : NULL;
}

const rc_codec_type *rc_codec_for(rcanvas_codec codec) {
    const rc_codec_type *t;
    for (size_t i = 0; (t = codec_at(i)); i++) /* a CPU codec, not another encoder of the same wire codec */
        if (t->wire_id == (uint8_t)codec && !(t->flags & (RC_CODEC_GPU | RC_CODEC_ALT))) return t;
    return NULL;
}

const rc_codec_type *rc_codec_by_name(const char *name) {
    const rc_codec_type *t;
    for (size_t i = 0; name && (t = codec_at(i)); i++)
        if (!strcmp(t->name, name)) return t;
    return NULL;
}

const rc_codec_type *rc_codec_live(int i) {
    const rc_codec_type *t;
    for (size_t k = 0; i >= 0 && (t = codec_at(k)); k++)
        if (((t->flags & RC_CODEC_ALT) || rc_codec_for((rcanvas_codec)t->wire_id) == t) && i-- == 0) return t;
    return NULL;
}

int rc_codec_index(const rc_codec_type *t) {
    for (size_t i = 0; t && codec_at(i); i++)
        if (codec_at(i) == t) return (int)i;
    return -1;
}

int rc_codec_register(const rc_codec_type *t) {
    if (!t || !t->name || rc_codec_by_name(t->name) || NBUILTIN + g_nextra >= RC_CODEC_MAX) return RCANVAS_EINVAL;
    g_extra[g_nextra++] = t;
    return RCANVAS_OK;
}

int rc_codec_new(const rc_codec_type *type, rc_codec **out) {
    if (!out) return RCANVAS_EINVAL;
    *out = NULL;
    if (!type || !type->create) return RCANVAS_EINVAL;
    return type->create(type, out);
}

int rc_codec_encode(rc_codec *c, const rc_image *img, const rc_encode_params *p, rc_buf *out, rc_encode_info *info) {
    if (!c || !img || !p || !out || !img->pixels) return RCANVAS_EINVAL;
    if (img->width == 0 || img->height == 0 || !rc_format_bpp(img->format)) return RCANVAS_EINVAL;
    if (img->pitch < (size_t)img->width * 4) return RCANVAS_EINVAL;
    rc_encode_info dummy;
    if (!info) info = &dummy;
    info->keyframe = (c->type->flags & RC_CODEC_INTRA) != 0;
    c->err[0] = '\0';
    return c->type->encode(c, img, p, out, info);
}

void rc_codec_request_keyframe(rc_codec *c) {
    if (c && c->type->request_keyframe) c->type->request_keyframe(c);
}

void rc_codec_free(rc_codec *c) {
    if (c) c->type->destroy(c);
}

const char *rc_codec_error(const rc_codec *c) { return c ? c->err : ""; }
const char *rc_codec_create_error(const rc_codec_type *type) {
    const char *why = type && type->create_error ? type->create_error() : NULL;
    return why && *why ? why : "encoder creation failed";
}

/* ---- per-worker instances ---- */

typedef struct worker_codecs {
    rc_codec *inst[RC_CODEC_MAX]; /* by rc_codec_index */
} worker_codecs;

static void worker_codecs_free(void *p) {
    worker_codecs *wc = p;
    for (size_t i = 0; wc && i < RC_CODEC_MAX; i++) rc_codec_free(wc->inst[i]);
    free(wc);
}

rc_codec *rc_worker_codec(rc_worker *w, const rc_codec_type *type) {
    int i = rc_codec_index(type);
    if (i < 0 || (type->flags & (RC_CODEC_GPU | RC_CODEC_STATEFUL))) return NULL;
    if (!w->local) {
        w->local = calloc(1, sizeof(worker_codecs));
        if (!w->local) return NULL;
        w->local_free = worker_codecs_free;
    }
    worker_codecs *wc = w->local;
    if (!wc->inst[i] && rc_codec_new(type, &wc->inst[i]) != RCANVAS_OK) wc->inst[i] = NULL;
    return wc->inst[i];
}
