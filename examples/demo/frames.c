/* SPDX-License-Identifier: MIT */
/*
 * frames.c — loads every *.png of a directory (sorted by name, at most FRAME_SET_MAX_FILES) into memory as
 * tightly packed RGBA8 with libspng (see frames.h); and the click marker the frame players draw over them.
 */
#define _POSIX_C_SOURCE 200809L

#include "frames.h"

#include <dirent.h>
#include <errno.h>
#include <spng.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct frame {
    char *name;
    uint8_t *pixels;
    uint32_t width, height;
} frame;

struct frame_set {
    size_t count;
    frame frames[FRAME_SET_MAX_FILES];
};

static void set_err(char *err, size_t cap, const char *fmt, ...) {
    if (!err || !cap) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, cap, fmt, ap);
    va_end(ap);
}

static int is_png_name(const char *name) {
    size_t n = strlen(name);
    if (n < 5 || name[0] == '.') return 0; /* skip hidden files and a bare ".png" */
    const char *e = name + n - 4;
    return e[0] == '.' && (e[1] == 'p' || e[1] == 'P') && (e[2] == 'n' || e[2] == 'N') && (e[3] == 'g' || e[3] == 'G');
}

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

static char *join_path(const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (!p) return NULL;
    memcpy(p, dir, a);
    size_t o = a;
    if (a && dir[a - 1] != '/') p[o++] = '/';
    memcpy(p + o, name, b + 1);
    return p;
}

/* Decodes one PNG file into f. 0, or -1 with err set. */
static int load_png(const char *path, const char *name, frame *f, char *err, size_t errcap) {
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        set_err(err, errcap, "%s: %s", name, strerror(errno));
        return -1;
    }
    int rc = -1;
    /* a file that is not a PNG at all is named as such, not by the first libspng error it runs into */
    unsigned char sig[8];
    if (fread(sig, 1, sizeof sig, fp) != sizeof sig || memcmp(sig, "\x89PNG\r\n\x1a\n", sizeof sig)) {
        set_err(err, errcap, "%s: not a PNG file", name);
        fclose(fp);
        return -1;
    }
    rewind(fp);
    uint8_t *px = NULL;
    spng_ctx *ctx = spng_ctx_new(0);
    if (!ctx) {
        set_err(err, errcap, "%s: out of memory", name);
        goto done;
    }
    int r;
    /* image size capped; stored ancillary chunks (text, ICC, ...) capped at 64 MiB each and in all (IDAT is
       streamed, not subject to these limits) */
    if ((r = spng_set_image_limits(ctx, FRAME_SET_MAX_DIM, FRAME_SET_MAX_DIM)) ||
        (r = spng_set_chunk_limits(ctx, (size_t)64 << 20, (size_t)64 << 20)) || (r = spng_set_png_file(ctx, fp))) {
        set_err(err, errcap, "%s: not a valid PNG (%s)", name, spng_strerror(r));
        goto done;
    }
    struct spng_ihdr ihdr;
    if ((r = spng_get_ihdr(ctx, &ihdr))) {
        set_err(err, errcap, "%s: not a valid PNG (%s)", name, spng_strerror(r));
        goto done;
    }
    if (!ihdr.width || !ihdr.height || ihdr.width > FRAME_SET_MAX_DIM || ihdr.height > FRAME_SET_MAX_DIM) {
        set_err(err, errcap, "%s: %ux%u is outside 1..%d per side", name, ihdr.width, ihdr.height, FRAME_SET_MAX_DIM);
        goto done;
    }
    size_t size;
    if ((r = spng_decoded_image_size(ctx, SPNG_FMT_RGBA8, &size))) {
        set_err(err, errcap, "%s: not a valid PNG (%s)", name, spng_strerror(r));
        goto done;
    }
    if (size != (size_t)ihdr.width * ihdr.height * 4) {
        set_err(err, errcap, "%s: unexpected decoded size %zu", name, size);
        goto done;
    }
    px = malloc(size);
    if (!px) {
        set_err(err, errcap, "%s: out of memory (%zu bytes)", name, size);
        goto done;
    }
    if ((r = spng_decode_image(ctx, px, size, SPNG_FMT_RGBA8, SPNG_DECODE_TRNS))) {
        set_err(err, errcap, "%s: not a valid PNG (%s)", name, spng_strerror(r));
        goto done;
    }
    f->name = dup_str(name);
    if (!f->name) {
        set_err(err, errcap, "%s: out of memory", name);
        goto done;
    }
    f->pixels = px;
    px = NULL;
    f->width = ihdr.width;
    f->height = ihdr.height;
    rc = 0;
done:
    free(px);
    spng_ctx_free(ctx);
    fclose(fp);
    return rc;
}

void frame_set_free(frame_set *fs) {
    if (!fs) return;
    for (size_t i = 0; i < fs->count; i++) {
        free(fs->frames[i].name);
        free(fs->frames[i].pixels);
    }
    free(fs);
}

int frame_set_load(const char *dir, frame_set **out, char *err, size_t errcap) {
    if (out) *out = NULL;
    if (!dir || !out) {
        set_err(err, errcap, "frame_set_load: invalid arguments");
        return -1;
    }
    DIR *d = opendir(dir);
    if (!d) {
        set_err(err, errcap, "%s", strerror(errno));
        return -1;
    }
    /* collect the names of regular *.png files */
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = -1;
    frame_set *fs = NULL;
    for (;;) {
        errno = 0;
        struct dirent *e = readdir(d);
        if (!e) {
            if (errno) {
                set_err(err, errcap, "%s", strerror(errno));
                goto done;
            }
            break;
        }
        if (!is_png_name(e->d_name)) continue;
        char *path = join_path(dir, e->d_name);
        if (!path) {
            set_err(err, errcap, "out of memory");
            goto done;
        }
        struct stat st;
        int regular = stat(path, &st) == 0 && S_ISREG(st.st_mode);
        free(path);
        if (!regular) continue;
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 64;
            char **nn = realloc(names, nc * sizeof *nn);
            if (!nn) {
                set_err(err, errcap, "out of memory");
                goto done;
            }
            names = nn;
            cap = nc;
        }
        if (!(names[n] = dup_str(e->d_name))) {
            set_err(err, errcap, "out of memory");
            goto done;
        }
        n++;
    }
    if (!n) {
        set_err(err, errcap, "no .png files");
        goto done;
    }
    qsort(names, n, sizeof *names, cmp_names);

    fs = calloc(1, sizeof *fs);
    if (!fs) {
        set_err(err, errcap, "out of memory");
        goto done;
    }
    size_t load = n < FRAME_SET_MAX_FILES ? n : FRAME_SET_MAX_FILES;
    for (size_t i = 0; i < load; i++) {
        char *path = join_path(dir, names[i]);
        if (!path) {
            set_err(err, errcap, "out of memory");
            goto done;
        }
        int r = load_png(path, names[i], &fs->frames[fs->count], err, errcap);
        free(path);
        if (r) goto done;
        fs->count++;
    }
    *out = fs;
    fs = NULL;
    rc = 0;
done:
    frame_set_free(fs);
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    closedir(d);
    return rc;
}

size_t frame_set_count(const frame_set *fs) { return fs ? fs->count : 0; }

const uint8_t *frame_set_pixels(const frame_set *fs, size_t i, uint32_t *width, uint32_t *height) {
    if (!fs || i >= fs->count) {
        if (width) *width = 0;
        if (height) *height = 0;
        return NULL;
    }
    if (width) *width = fs->frames[i].width;
    if (height) *height = fs->frames[i].height;
    return fs->frames[i].pixels;
}

const char *frame_set_name(const frame_set *fs, size_t i) { return fs && i < fs->count ? fs->frames[i].name : NULL; }

void frame_marker_draw(uint8_t *rgba, uint32_t width, uint32_t height, size_t pitch) {
    uint32_t x1 = FRAME_MARKER_X + FRAME_MARKER_SIZE, y1 = FRAME_MARKER_Y + FRAME_MARKER_SIZE;
    if (x1 > width) x1 = width;
    if (y1 > height) y1 = height;
    for (uint32_t y = FRAME_MARKER_Y; y < y1; y++) {
        uint8_t *p = rgba + y * pitch + (size_t)FRAME_MARKER_X * 4;
        for (uint32_t x = FRAME_MARKER_X; x < x1; x++, p += 4) {
            p[0] = (FRAME_MARKER_RGB >> 16) & 0xFF;
            p[1] = (FRAME_MARKER_RGB >> 8) & 0xFF;
            p[2] = FRAME_MARKER_RGB & 0xFF;
            p[3] = 255;
        }
    }
}
