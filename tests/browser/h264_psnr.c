/* SPDX-License-Identifier: MIT */
/*
 * rcanvas-test-h264-psnr — what a viewer of an H.264 stream shows, decoded by openh264's own decoder, against a
 * reference frame: for the paint-over test (tests/browser/paint.test.mjs).
 *   rcanvas-test-h264-psnr REF STREAM
 * REF: "W H\n" and W × H × 4 bytes of RGBA (rcanvas-test-pan --dump). STREAM: records of a u32 (little endian)
 * length and that many bytes, one H.264 access unit each, in the order the viewer received them. For each record it
 * prints "N PSNR" — the Y PSNR in dB (BT.601 limited range, the server's conversion; 99 if equal) of the decoded
 * picture's top-left W × H against REF — or "N -1" if it gave no picture. Bad input: exit 2 with a message.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_frames.h"
#include "video_decoders.h"

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: rcanvas-test-h264-psnr REF STREAM\n");
        return 2;
    }
    FILE *rf = fopen(argv[1], "rb");
    unsigned w = 0, h = 0;
    if (!rf || fscanf(rf, "%u %u", &w, &h) != 2 || fgetc(rf) != '\n' || !w || !h || w > 8192 || h > 8192) {
        fprintf(stderr, "rcanvas-test-h264-psnr: %s: not a frame dump\n", argv[1]);
        return 2;
    }
    uint8_t *rgba = malloc((size_t)w * h * 4), *ref = malloc((size_t)w * h);
    if (!rgba || !ref || fread(rgba, 4, (size_t)w * h, rf) != (size_t)w * h) {
        fprintf(stderr, "rcanvas-test-h264-psnr: %s: short\n", argv[1]);
        return 2;
    }
    fclose(rf);
    for (size_t i = 0; i < (size_t)w * h; i++) { /* BT.601 limited range, as libyuv's ABGRToI420 */
        const uint8_t *p = rgba + i * 4;
        ref[i] = (uint8_t)(((66 * p[0] + 129 * p[1] + 25 * p[2] + 128) >> 8) + 16);
    }
    void *d = h264_open();
    if (!d) {
        fprintf(stderr, "rcanvas-test-h264-psnr: openh264's decoder does not start\n");
        return 2;
    }
    FILE *sf = fopen(argv[2], "rb");
    if (!sf) {
        fprintf(stderr, "rcanvas-test-h264-psnr: %s: cannot open\n", argv[2]);
        return 2;
    }
    uint8_t *buf = NULL;
    for (int n = 0;; n++) {
        uint8_t lb[4];
        if (fread(lb, 1, 4, sf) != 4) break;
        uint32_t len = lb[0] | (uint32_t)lb[1] << 8 | (uint32_t)lb[2] << 16 | (uint32_t)lb[3] << 24;
        if (len > (64u << 20) || !(buf = realloc(buf, len ? len : 1)) || fread(buf, 1, len, sf) != len) {
            fprintf(stderr, "rcanvas-test-h264-psnr: %s: bad record %d\n", argv[2], n);
            return 2;
        }
        yuv_view v;
        if (h264_decode(d, buf, len, &v) || v.w < (int)w || v.h < (int)h) {
            printf("%d -1\n", n);
            continue;
        }
        printf("%d %.2f\n", n, gen_psnr_plane(v.y, v.stride_y, ref, w, (int)w, (int)h));
    }
    fclose(sf);
    free(buf);
    h264_close(d);
    free(rgba);
    free(ref);
    return 0;
}
