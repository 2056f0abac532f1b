/* SPDX-License-Identifier: MIT */
/*
 * webp.c — WebP through libwebp, two intra-only stripe codecs: "webp" (lossy, VP8 intra in libwebp's own BT.601
 * 4:2:0, at the canvas's quality) for live frames and "webp-lossless" for the refinement. Frames are shown opaque,
 * so alpha is dropped on import (WebPPictureImportRGBX/BGRX) for every input format, and the file is written
 * straight into the caller's rc_buf through libwebp's writer callback. libwebp allocates its picture and encoder
 * state on every call (no API keeps them), like libspng's context per PNG.
 *
 * Speed settings, measured on the 1080p corpus frames (../shared/frames), one thread, CPU ms per frame:
 * lossy method 0 (17–54 ms): method 1 costs 22–31 % more for 0–14 % fewer bytes, methods ≥ 3 three to five times
 * as much; lossless preset level 1 (method 1, quality 20; 21–300 ms, 5× PNG's CPU in all): 47 % fewer bytes than
 * PNG level 1 over the corpus and fewer on every frame, where level 0 (2× PNG's CPU) is larger than PNG on the line
 * and scatter plots.
 */
#include "codec/codec.h"

#include <stdio.h>
#include <stdlib.h>
#include <webp/encode.h>

#define WEBP_LOSSY_METHOD 0
#define WEBP_LOSSLESS_LEVEL 1

typedef struct webp_codec {
    rc_codec base;
    int lossless;
} webp_codec;

static void webp_destroy(rc_codec *c) { free(c); }

static int webp_create(const rc_codec_type *type, rc_codec **out) {
    webp_codec *e = calloc(1, sizeof(*e));
    if (!e) return RCANVAS_ENOMEM;
    e->base.type = type;
    e->lossless = (type->flags & RC_CODEC_LOSSLESS) != 0;
    *out = &e->base;
    return RCANVAS_OK;
}

static int write_cb(const uint8_t *data, size_t len, const WebPPicture *pic) {
    return rc_buf_append(pic->custom_ptr, data, len) == 0;
}

static const char *webp_error_name(WebPEncodingError e) {
    switch (e) {
    case VP8_ENC_OK: return "ok";
    case VP8_ENC_ERROR_OUT_OF_MEMORY: return "out of memory";
    case VP8_ENC_ERROR_BITSTREAM_OUT_OF_MEMORY: return "out of memory (bitstream)";
    case VP8_ENC_ERROR_NULL_PARAMETER: return "null parameter";
    case VP8_ENC_ERROR_INVALID_CONFIGURATION: return "invalid configuration";
    case VP8_ENC_ERROR_BAD_DIMENSION: return "bad dimension";
    case VP8_ENC_ERROR_PARTITION0_OVERFLOW: return "partition 0 overflow";
    case VP8_ENC_ERROR_PARTITION_OVERFLOW: return "partition overflow";
    case VP8_ENC_ERROR_BAD_WRITE: return "write failed";
    case VP8_ENC_ERROR_FILE_TOO_BIG: return "file too big";
    case VP8_ENC_ERROR_USER_ABORT: return "aborted";
    case VP8_ENC_ERROR_LAST: break;
    }
    return "unknown error";
}

static int webp_encode(rc_codec *c, const rc_image *img, const rc_encode_params *p, rc_buf *out,
                       rc_encode_info *info) {
    (void)info; /* intra-only: always a keyframe */
    webp_codec *e = (webp_codec *)c;
    if (!e->lossless && (p->quality < 1 || p->quality > 100)) return RCANVAS_EINVAL;
    if (img->width > WEBP_MAX_DIMENSION || img->height > WEBP_MAX_DIMENSION || img->pitch > INT32_MAX)
        return RCANVAS_EINVAL;
    WebPConfig cfg;
    int ok = WebPConfigInit(&cfg);
    if (ok && e->lossless) ok = WebPConfigLosslessPreset(&cfg, WEBP_LOSSLESS_LEVEL);
    if (!ok) {
        snprintf(c->err, sizeof c->err, "WebPConfigInit: libwebp version mismatch");
        return RCANVAS_ECODEC;
    }
    if (!e->lossless) {
        cfg.quality = (float)p->quality;
        cfg.method = WEBP_LOSSY_METHOD;
    }
    WebPPicture pic;
    if (!WebPPictureInit(&pic)) {
        snprintf(c->err, sizeof c->err, "WebPPictureInit: libwebp version mismatch");
        return RCANVAS_ECODEC;
    }
    pic.width = (int)img->width;
    pic.height = (int)img->height;
    pic.use_argb = e->lossless; /* lossless codes ARGB; lossy converts to YUV 4:2:0 on import */
    ok = img->format == RCANVAS_FORMAT_BGRA8 ? WebPPictureImportBGRX(&pic, img->pixels, (int)img->pitch)
                                                 : WebPPictureImportRGBX(&pic, img->pixels, (int)img->pitch);
    if (!ok) {
        snprintf(c->err, sizeof c->err, "WebPPictureImport: %s", webp_error_name(pic.error_code));
        WebPPictureFree(&pic);
        return RCANVAS_ENOMEM; /* import fails only on allocation once sizes are checked */
    }
    size_t start = out->len;
    pic.writer = write_cb;
    pic.custom_ptr = out;
    ok = WebPEncode(&cfg, &pic);
    int ret = RCANVAS_OK;
    if (!ok) {
        snprintf(c->err, sizeof c->err, "WebPEncode: %s", webp_error_name(pic.error_code));
        ret = pic.error_code == VP8_ENC_ERROR_OUT_OF_MEMORY || pic.error_code == VP8_ENC_ERROR_BITSTREAM_OUT_OF_MEMORY ||
                      pic.error_code == VP8_ENC_ERROR_BAD_WRITE
                  ? RCANVAS_ENOMEM
                  : RCANVAS_ECODEC;
        out->len = start;
    }
    WebPPictureFree(&pic);
    return ret;
}

const rc_codec_type rc_codec_webp = {
    .name = "webp", .wire_id = RCANVAS_CODEC_WEBP, .flags = RC_CODEC_INTRA | RC_CODEC_STRIPES,
    .create = webp_create, .encode = webp_encode, .request_keyframe = NULL, .destroy = webp_destroy};

const rc_codec_type rc_codec_webp_lossless = {
    .name = "webp-lossless", .wire_id = RCANVAS_CODEC_WEBP,
    .flags = RC_CODEC_INTRA | RC_CODEC_STRIPES | RC_CODEC_LOSSLESS, .create = webp_create, .encode = webp_encode,
    .request_keyframe = NULL, .destroy = webp_destroy};
