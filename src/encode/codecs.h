/*
 * codecs.h — private: the struct behind rc_encoder and the per-codec entry points (jpeg.c, png.c).
 */
#ifndef RC_CODECS_H
#define RC_CODECS_H

#include "encode/encoder.h"

struct rc_encoder {
    rcanvas_codec codec;
    void *tj;          /* JPEG: tjhandle (libturbojpeg compressor) */
    uint8_t *row;      /* PNG: one RGB8 row of scratch */
    size_t row_cap;
    char err[160];     /* last library message */
};

int rc_jpeg_init(rc_encoder *e);
void rc_jpeg_fini(rc_encoder *e);
int rc_jpeg_encode(rc_encoder *e, const rc_image *img, const rc_encode_params *p, rc_buf *out);

int rc_png_init(rc_encoder *e);
void rc_png_fini(rc_encoder *e);
int rc_png_encode(rc_encoder *e, const rc_image *img, rc_buf *out);

#endif
