/* SPDX-License-Identifier: MIT */
/* jpeg_io.h — the GPU JPEG encoder: what the host (jpeg_gpu.c) and the shaders (jpeg_*.comp) share, written once
 * for both languages (as h264_io.h for the H.264 encoder): the descriptor bindings, and each pass's push constants
 * as an X-macro list of 32-bit fields that the host declares as a struct (jpeg_gpu.c checks the sizes) and a shader
 * as its push-constant block. Included by C and by GLSL (glslc defines VULKAN): #defines only. */
#ifndef RC_JPEG_IO_H
#define RC_JPEG_IO_H

/* ---- descriptor set 0: storage buffers 0–12, then the app's image ---- */
#define JPEG_BIND_PX 0u      /* the pixels, RGBA8 or BGRA8, row pitch pitch_px (the DCT pass) */
#define JPEG_BIND_COEF 1u    /* quantized coefficients, [block][64] in zigzag order */
#define JPEG_BIND_DIV 2u     /* [2][64] in natural order: 1/(q·s_u·s_v·8) */
#define JPEG_BIND_TAB 3u     /* Huffman codes: dc_code[2][12], ac_code[2][256], code | len << 24 */
#define JPEG_BIND_SCRATCH 4u /* the interval coder's bits, or the block path's unstuffed stream U */
#define JPEG_BIND_LEN 5u     /* bytes of each interval */
#define JPEG_BIND_OFF 6u     /* their offsets */
#define JPEG_BIND_CTL 7u     /* total bytes, then indirect dispatches */
#define JPEG_BIND_HDR 8u     /* the JPEG headers, written by the host */
#define JPEG_BIND_OUT 9u     /* the JFIF stream */
#define JPEG_BIND_SLOT 10u   /* the block path: each block's bits */
#define JPEG_BIND_SC 11u     /* the block path: its prefix-summed arrays in one buffer */
#define JPEG_BIND_MASK 12u   /* per block, the 64-bit mask of its nonzero coefficients (zigzag order) */
#define JPEG_NBIND 13u       /* the storage buffers */
#define JPEG_BIND_IMAGE 13u  /* the app's image, a sampled image (the DCT pass built with RC_IMAGE_INPUT) */

/* ---- push constants, by pass ---- */
/* jpeg_dct: the frame (width, height, pitch_px), its MCUs, subsamp420 (1: MCU 16×16 with Y0..Y3 Cb Cr; 0: MCU 8×8
 * with Y Cb Cr), bgra (1: bytes B,G,R,A; image input: 1 = the view is _SRGB, decoded on fetch), the blocks */
#define JPEG_PC_DCT(X) X(width) X(height) X(pitch_px) X(mcus_x) X(mcus_y) X(subsamp420) X(bgra) X(total_blocks)
/* jpeg_huff: an interval per invocation */
#define JPEG_PC_HUFF(X) X(total_mcus) X(mcus_per_interval) X(blocks_per_mcu) X(slot_words) X(n_intervals)
/* jpeg_scan: the intervals' offsets */
#define JPEG_PC_SCAN(X) X(n_intervals) X(header_bytes)
/* jpeg_pack: the intervals' bits into the stream, stuffed, with restart markers */
#define JPEG_PC_PACK(X) X(n_intervals) X(header_bytes) X(slot_words)
/* jpeg_blk: a block per invocation (mcus_per_interval 0: no restart intervals; boff: the bit counts in sc) */
#define JPEG_PC_BLK(X) X(n_blocks) X(blocks_per_mcu) X(mcus_per_interval) X(boff)
/* jpeg_bscan: one level of a prefix sum over sc (mode 0 local, 1 add; `in & mask` are the values) */
#define JPEG_PC_BSCAN(X) X(mode) X(in_base) X(out_base) X(aux_base) X(n) X(dyn) X(misc) X(mask)
/* jpeg_place: the block path's placement passes (mode 0–3) */
#define JPEG_PC_PLACE(X)                                                                                          \
    X(mode) X(n_blocks) X(n_iv) X(blocks_per_iv) X(boff) X(ioff) X(misc) X(cbase) X(coff) X(cap_words) X(header_bytes)
/* jpeg_bpack: the block path's stream, stuffed, with restart markers */
#define JPEG_PC_BPACK(X) X(n_iv) X(ioff) X(misc) X(coff) X(cbase) X(header_bytes) X(out_words)

#endif
