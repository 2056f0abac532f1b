/*
 * damage.h — private to src/stream/: which parts of a frame changed (issue 10, "damage"). Frames are cut into
 * RC_DAMAGE_TILE × RC_DAMAGE_TILE tiles (the last column and row may be narrower); a dirty bitmap has one byte
 * per tile, row-major, tiles_x = ceil(width / RC_DAMAGE_TILE) by tiles_y = ceil(height / RC_DAMAGE_TILE),
 * nonzero = the tile changed.
 */
#ifndef RC_DAMAGE_H
#define RC_DAMAGE_H

#include <stdint.h>

#define RC_DAMAGE_TILE 64 /* pixels: a multiple of 16, so tiles keep JPEG's 4:2:0 MCU grid */

static inline uint32_t rc_damage_tiles(uint32_t pixels) { return (pixels + RC_DAMAGE_TILE - 1) / RC_DAMAGE_TILE; }

#endif
