/* SPDX-License-Identifier: MIT */
/* h264_io.h — GPU H.264: the memory that the host (h264_gpu.c) and the shaders (h264_*.comp, through
 * h264_common.glsl) share, written once for both languages: the descriptor bindings, the push constants, the
 * picture's parameters, the fields of the per-macroblock records, the layout of the control and bit-count buffers,
 * and the numbers of the passes. nvpro-samples keep one such header per sample (shaderio.h) for the same reason: a
 * field moved on one side only is a wrong picture, not a compile error.
 *
 * Included by C (h264_gpu.c) and by GLSL (glslc defines VULKAN), so it holds only #defines, with numbers spelled the
 * same in both (unsigned literals) and the two blocks as X-macro lists of 32-bit fields that each side declares in
 * its own syntax (h264_gpu.c checks the sizes with _Static_assert). The GLSL side does not see the C comments'
 * types: every field is a uint there and a uint32_t here. */
#ifndef RC_H264_IO_H
#define RC_H264_IO_H

/* ---- descriptor set 0: one storage buffer per binding ---- */
#define RC_H264_BIND_IN 0u    /* the image, 4 bytes a pixel (readonly) */
#define RC_H264_BIND_SRC 1u   /* this picture's source planes */
#define RC_H264_BIND_REF 2u   /* the reference picture, the last reconstruction (readonly) */
#define RC_H264_BIND_REC 3u   /* this picture's reconstruction */
#define RC_H264_BIND_QCUR 4u  /* the source luma at 1/4 size (motion search) */
#define RC_H264_BIND_QREF 5u  /* the reference's source luma at 1/4 size (readonly) */
#define RC_H264_BIND_MBI 6u   /* the per-macroblock records (MBI_*) */
#define RC_H264_BIND_LEV 7u   /* the levels, LEV_STRIDE ints a macroblock */
#define RC_H264_BIND_BITS 8u  /* bit counts and offsets (BITS_*) */
#define RC_H264_BIND_OUT 9u   /* the slices' RBSPs */
#define RC_H264_BIND_CTL 10u  /* sizes, indirect dispatches, counters (CTL_*): host-visible */
#define RC_H264_BIND_HOST 11u /* host-visible copy of OUT */
#define RC_H264_BIND_PIC 12u  /* the picture's parameters (RC_H264_PIC), written at the start of each pass */
#define RC_H264_NBIND 13u

/* ---- the push constants: what changes by size and by dispatch ---- */
/* mbw, mbh: the picture in macroblocks; w, h: the image in pixels; in_pitch: the input's row pitch in pixels;
 * pass: which part of a stage (CAVLC: 0 counts bits, 1 writes them; h264_me: 0 the search, ME_INTRA_CHOICE, or
 * ME_ADOPT + c: adopt round c / 4, colour c % 4; h264_scan: SCAN_SKIP_RUNS, SCAN_INTRA_WAVE, else the offsets; the
 * wavefronts: the step; h264_deblock: DEBLOCK_STRENGTHS, DEBLOCK_ROWS, or a step) */
#define RC_H264_PC(X) X(mbw) X(mbh) X(w) X(h) X(in_pitch) X(pass)

/* ---- the picture's parameters: what changes by picture (a buffer, so that a pass's commands are recorded once per
 * size and kind of picture and serve every picture of that kind) ---- */
/* qp, qpc: luma QP and chroma QP (Table 8-15 of qp, chroma_qp_index_offset 0); intra: 1 an IDR picture; frame_num,
 * idr_pic_id: the slice header's (log2_max_frame_num 4); bgra: 1 the input's bytes are B, G, R, A; lambda: the
 * motion search's cost of a bit of vector, in SAD units; me_flags: ME_* below; deblock: 1 the deblocking filter is
 * on (disable_deblocking_filter_idc 0) */
#define RC_H264_PIC(X) X(qp) X(qpc) X(intra) X(frame_num) X(idr_pic_id) X(bgra) X(lambda) X(me_flags) X(deblock)

/* me_flags: bits 0–7 flags, bits 8–15 the most steps of a P picture's intra wave */
#define ME_INT_ONLY 1u   /* whole-pixel vectors only (benchmarks) */
#define ME_NO_P8X8 2u    /* no P_8x8 (benchmarks) */
#define ME_NO_INTRA 4u   /* no intra macroblocks in P pictures (benchmarks, or a contended device) */
#define ME_NO_ADOPT 8u   /* no adopt rounds (benchmarks, or a contended device) */
#define ME_ADOPT_ALL 16u /* every adopt round looks at every macroblock (tests: the same vectors as the skipping) */
#define ME_ADOPT_COUNT 32u /* count the adopt looks in ctl (tests: one atomic on one word a look, kept off the
                            * default path) */
#define ME_STEPS_SHIFT 8u

/* ---- passes ---- */
#define ME_INTRA_CHOICE 8u           /* h264_me built with RC_ME_POST: which macroblocks are better intra */
#define ME_ADOPT 16u                 /* … + c: adopt round c / 4, colour c % 4 */
#define ME_ADOPT_ROUNDS 3u           /* rounds of h264_me's adopt (4 dispatches each) */
#define SCAN_SKIP_RUNS 2u            /* h264_scan: each macroblock's mb_skip_run */
#define SCAN_INTRA_WAVE 3u           /* h264_scan: a P picture's intra macroblocks into steps */
#define DEBLOCK_STRENGTHS 0xFFFFFFFEu /* h264_deblock: every edge's boundary strength, a workgroup a macroblock */
#define DEBLOCK_ROWS 0xFFFFFFFFu     /* h264_deblock: the wave as one dispatch, a workgroup a macroblock row */

/* ---- the per-macroblock record (MBI_STRIDE uints; h264_common.glsl describes each field) ---- */
#define MBI_STRIDE 48u
#define MBI_TC 8u       /* [8 + k] TotalCoeff of block k: 0–15 luma (luma4x4BlkIdx order), 16–19 Cb AC, 20–23 Cr AC */
#define MBI_QMV 32u     /* [32 + 2q], [33 + 2q]: the vector of 8×8 quadrant q */
#define MBI_PART 40u    /* the motion search's choice: MB_P8X8, MB_INTRA */
#define MB_P8X8 1u
#define MB_INTRA 2u
#define MBI_BS 41u      /* [41..44] the deblocking filter's 32 edge strengths, 4 bits each */
#define MBI_DEPTH 45u   /* an intra macroblock's step in the P picture's intra wave, from 1 */
#define MBI_ADOPTED 45u /* after the intra wave: ADOPT_STAMP + the adopt dispatch that last changed the vector */
#define ADOPT_STAMP 0x100u
#define MBI_SAD 46u     /* the luma SAD at the 16×16 vector */
#define MBI_INTER 47u   /* the chosen inter prediction's cost, SAD + λ × bits */
#define LEV_STRIDE 408u /* ints of levels a macroblock, in coding order */
#define LEV_CDC 272u    /* [272, 276) Cb DC, [276, 280) Cr DC */
#define LEV_CAC 280u    /* [280 + 16 (4c + b), +16) chroma AC */

/* The intra macroblocks of a P picture are coded after its inter ones, in at most INTRA_STEPS steps */
#define INTRA_STEPS 16u

/* ---- BITS (n = mbw × mbh): [0, n) bits a macroblock, [n, 2n) their offsets; in P pictures before CAVLC, [0, n) the
 * intra wave's macroblocks by step, step k's from [n + k], and [n + INTRA_ANY] whether there are any; from 2n the
 * deblocking rows' progress counters, one a row; from BITS_ADOPT the adopt rounds' counts of changed macroblocks ---- */
#define INTRA_ANY (INTRA_STEPS + 1u)
#define BITS_ROWS(n) (2u * (n))
#define BITS_ADOPT(n, mbh) (2u * (n) + (mbh) + INTRA_STEPS + 4u) /* ME_ADOPT_ROUNDS words: how many macroblocks each
                                                                * adopt round changed */
#define BITS_WORDS(n, mbh) (BITS_ADOPT(n, mbh) + ME_ADOPT_ROUNDS)

/* ---- CTL (host-visible): [0] the RBSP's bytes, [1..3] the copy's indirect dispatch, [4] and [5] the slice's first
 * byte and its end; then counters and the intra wave's indirect dispatches, after mbh words kept free ---- */
#define CTL_BYTES 0u
#define CTL_COPY_DISPATCH 1u
#define CTL_SLICE 4u
#define CTL_I4X4(mbh) (5u + (mbh))     /* Intra4x4 macroblocks */
#define CTL_P8X8(mbh) (6u + (mbh))     /* P_8x8 macroblocks */
#define CTL_INTRA_P(mbh) (7u + (mbh))  /* intra macroblocks in a P picture */
#define CTL_STEP(mbh, k) (8u + (mbh) + 3u * (k)) /* the indirect dispatch of intra wave step k (3 words) */
#define CTL_DEFERRED(mbh) CTL_STEP(mbh, INTRA_STEPS) /* intra candidates the wave coded inter */
#define CTL_ADOPT_LOOKS(mbh) (CTL_DEFERRED(mbh) + 1u) /* adopt looks (a macroblock's turns not skipped) */
#define CTL_WORDS(mbh) (CTL_ADOPT_LOOKS(mbh) + 1u)

#endif
