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
#define NCODECS (sizeof k_codecs / sizeof k_codecs[0])

const rc_codec_type *rc_codec_for(rcanvas_codec codec) {
    for (size_t i = 0; i < NCODECS; i++) /* GPU codecs only where an option value of their own names them */
        if (k_codecs[i]->option ? k_codecs[i]->option == (uint8_t)codec
                                : k_codecs[i]->wire_id == (uint8_t)codec && !(k_codecs[i]->flags & RC_CODEC_GPU))
            return k_codecs[i];
    return NULL;
}

const rc_codec_type *rc_codec_by_name(const char *name) {
    for (size_t i = 0; name && i < NCODECS; i++)
        if (!strcmp(k_codecs[i]->name, name)) return k_codecs[i];
    return NULL;
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
    rc_codec *inst[NCODECS];
} worker_codecs;

static void worker_codecs_free(void *p) {
    worker_codecs *wc = p;
    for (size_t i = 0; wc && i < NCODECS; i++) rc_codec_free(wc->inst[i]);
    free(wc);
}

rc_codec *rc_worker_codec(rc_worker *w, const rc_codec_type *type) {
    size_t i = 0;
    while (i < NCODECS && k_codecs[i] != type) i++;
    if (i == NCODECS || (type->flags & (RC_CODEC_GPU | RC_CODEC_STATEFUL))) return NULL;
    if (!w->local) {
        w->local = calloc(1, sizeof(worker_codecs));
        if (!w->local) return NULL;
        w->local_free = worker_codecs_free;
    }
    worker_codecs *wc = w->local;
    if (!wc->inst[i] && rc_codec_new(type, &wc->inst[i]) != RCANVAS_OK) wc->inst[i] = NULL;
    return wc->inst[i];
}
