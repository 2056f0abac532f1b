/* SPDX-License-Identifier: MIT */
/*
 * hello_install — the smallest program built against an INSTALLED rcanvas (tests/install/test_install.sh builds it
 * through pkg-config and through find_package): a server on a free port, a canvas, one presented frame. It prints
 * the version, the URL and every error string, and exits 0 only if each call succeeded.
 */
#include <rcanvas.h>

#include <stdio.h>
#include <string.h>

#define CHECK(call)                                                                                       \
    do {                                                                                                  \
        int r_ = (call);                                                                                  \
        if (r_ < 0) {                                                                                     \
            fprintf(stderr, "hello_install: %s: %s\n", #call, rcanvas_strerror(r_));                      \
            return 1;                                                                                     \
        }                                                                                                 \
    } while (0)

int main(void) {
    printf("version %d.%d\n", RCANVAS_VERSION_MAJOR, RCANVAS_VERSION_MINOR);

    rcanvas_server_config sc;
    rcanvas_server_config_init(&sc);
    sc.port = 0;
    sc.encode_threads = 1;
    rcanvas_server *srv = NULL;
    CHECK(rcanvas_server_new(&sc, &srv));

    rcanvas_canvas_config cc;
    rcanvas_canvas_config_init(&cc);
    rcanvas_canvas *cv = NULL;
    CHECK(rcanvas_canvas_new(srv, &cc, &cv));

    static unsigned char px[48][64][4];
    for (int y = 0; y < 48; y++)
        for (int x = 0; x < 64; x++) px[y][x][0] = (unsigned char)(x * 4), px[y][x][1] = (unsigned char)(y * 5);
    rcanvas_frame f = {px, 64, 48, sizeof px[0], RCANVAS_FORMAT_RGBA8, 0};
    CHECK(rcanvas_present(cv, &f));
    printf("present ok\n");

    char url[256];
    CHECK(rcanvas_server_url(srv, NULL, url, sizeof url));
    printf("url %s\n", url);
    printf("port %d\n", rcanvas_server_port(srv));

    for (int e = 0; e > -100; e--) {
        const char *s = rcanvas_strerror(e);
        if (e < 0 && !strcmp(s, rcanvas_strerror(-1000))) break; /* past the last code: "unknown error" */
        printf("error %d %s\n", e, s);
    }
    rcanvas_server_free(srv);
    printf("done\n");
    return 0;
}
