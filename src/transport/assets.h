/* SPDX-License-Identifier: MIT */
/*
 * assets.h — the browser client (client/), embedded at build time by cmake/embed.cmake.
 */
#ifndef RC_ASSETS_H
#define RC_ASSETS_H

#include <stddef.h>

typedef struct rc_asset {
    const char *name;          /* file name in client/, e.g. "rcanvas.js" */
    const char *content_type;
    const unsigned char *data; /* NUL-terminated */
    size_t len;
} rc_asset;

/* Terminated by an entry with name NULL. */
extern const rc_asset rc_assets[];

#endif
