/* SPDX-License-Identifier: MIT */
/*
 * bench_util.h — what the benchmarks share: the median of a sample and the process's CPU time. Header only (each
 * benchmark is one file and one binary); single-threaded use of each sample.
 */
#ifndef RC_BENCH_UTIL_H
#define RC_BENCH_UTIL_H

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static int bench_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median of v[0, n) (sorts v in place): the middle value, the mean of the middle two for an even n; 0 when
 * n ≤ 0. */
static inline double bench_median(double *v, int n) {
    if (n <= 0) return 0;
    qsort(v, (size_t)n, sizeof(double), bench_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* CPU time of the whole process (every thread: the encoders' own too), µs. */
static inline int64_t bench_cpu_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

#endif
