/* SPDX-License-Identifier: MIT */
/*
 * imageio.h — image files and measurements for the tools, tests and benchmarks (not part of the library):
 * load PNG/PPM into RGBA8, decode JPEG/PNG bytes back into RGBA8, PSNR between two RGBA8 images.
 */
#ifndef RC_IMAGEIO_H
#define RC_IMAGEIO_H

#include <stddef.h>
#include <stdint.h>

/* Loads a PNG (any bit depth/colour type, via libspng) or binary PPM (P6, maxval 255) into a malloc'd RGBA8
 * buffer, pitch = width × 4, alpha 255 for PPM. Returns 0, or -1 with a message in err (errcap bytes). */
int rc_image_load(const char *path, uint8_t **rgba, uint32_t *width, uint32_t *height, char *err, size_t errcap);

/* Decodes a JPEG (libturbojpeg) or PNG (libspng) into malloc'd RGBA8, pitch = width × 4. 0 or -1. A JPEG that
 * libjpeg-turbo decodes with a warning counts as a failure (strict). */
int rc_decode_jpeg(const uint8_t *data, size_t len, uint8_t **rgba, uint32_t *width, uint32_t *height);
int rc_decode_png(const uint8_t *data, size_t len, uint8_t **rgba, uint32_t *width, uint32_t *height);

/* PSNR in dB over the R, G, B channels of two width × height images of 4 bytes per pixel; 99.0 if identical. */
double rc_psnr_rgb(const uint8_t *a, size_t pitch_a, const uint8_t *b, size_t pitch_b, uint32_t width,
                   uint32_t height);

/* The names of the *.png files in dir, sorted by strcmp, at most max of them (readdir's first max), each
 * malloc'd (the caller frees them; a name that could not be copied is left out). Returns the count, or -1 if dir
 * cannot be opened (errno says why). */
int rc_list_png(const char *dir, char **names, int max);

/* Reads a whole file into a malloc'd buffer. 0 or -1. */
int rc_read_file(const char *path, uint8_t **data, size_t *len);
/* Writes len bytes to path. 0 or -1. */
int rc_write_file(const char *path, const void *data, size_t len);

#endif
