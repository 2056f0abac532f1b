/* SPDX-License-Identifier: MIT */
/*
 * test.h — a minimal assertion kit for the C unit tests: CHECK* record a failure with file:line and the values,
 * and keep going; TEST_MAIN_END prints the closing line "N passed, M failed" and sets the exit status.
 */
#ifndef RC_TEST_H
#define RC_TEST_H

#include <stdio.h>
#include <stdlib.h>

static int t_pass = 0, t_fail = 0;

#define CHECK(cond)                                                                                            \
    do {                                                                                                       \
        if (cond) t_pass++;                                                                                    \
        else {                                                                                                 \
            t_fail++;                                                                                          \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);                           \
        }                                                                                                      \
    } while (0)

#define CHECK_MSG(cond, ...)                                                                                   \
    do {                                                                                                       \
        if (cond) t_pass++;                                                                                    \
        else {                                                                                                 \
            t_fail++;                                                                                          \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);                           \
            fprintf(stderr, __VA_ARGS__);                                                                      \
            fputc('\n', stderr);                                                                               \
        }                                                                                                      \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                                                     \
    do {                                                                                                       \
        long long a_ = (long long)(a), b_ = (long long)(b);                                                    \
        CHECK_MSG(a_ == b_, "%s = %lld, expected %s = %lld", #a, a_, #b, b_);                                  \
    } while (0)

#define CHECK_NEAR(a, b, eps)                                                                                  \
    do {                                                                                                       \
        double a_ = (double)(a), b_ = (double)(b);                                                             \
        CHECK_MSG(a_ - b_ <= (eps) && b_ - a_ <= (eps), "%s = %g, expected %g ± %g", #a, a_, b_, (double)(eps)); \
    } while (0)

#define TEST_MAIN_END()                                                                                        \
    do {                                                                                                       \
        printf("%d passed, %d failed\n", t_pass, t_fail);                                                      \
        return t_fail ? 1 : 0;                                                                                 \
    } while (0)

/* The frame corpus directory (set by CMake from ../shared/frames). */
static inline const char *test_frames_dir(void) {
    const char *d = getenv("RCANVAS_FRAMES_DIR");
    return d ? d : "../shared/frames";
}

#endif
