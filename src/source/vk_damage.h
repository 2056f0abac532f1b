/* SPDX-License-Identifier: MIT */
/*
 * vk_damage.h — private: damage of Vulkan frames found on the GPU, for the readback ring (vk_readback.c). In the
 * command buffer that reads the app's image back, the image is also copied into a device-local mirror, a compute
 * pass hashes every RC_DAMAGE_TILE² tile and compares with the tile's hash of the previous frame (device-local
 * state: hash + the number of the frame that last changed it), and a second pass copies into the host-visible
 * staging buffer only the tiles that buffer lacks. So unchanged tiles are not read back at all.
 *
 * Each staging buffer of the ring stays a complete frame: the buffer remembers which frame it holds (number K), and
 * the copy pass brings it up to frame N by copying the tiles changed in (K, N]. The canvas gets the staging buffer
 * itself, zero-copy as before, plus a dirty map vs the previous frame. (Why not one host "shadow" frame patched
 * with the dirty tiles: the canvas holds frames by reference while it encodes them and keeps the last one as the
 * refinement source, so one shadow cannot be patched in place; several shadows would need the same per-frame
 * bookkeeping, plus a CPU copy of every dirty tile, and of the whole frame when all of it changes.) The price: a
 * tile that changed in frame N is read back once into each staging buffer the ring uses after N — at most
 * ring-depth times, usually once or twice (the ring reuses the first free buffer).
 *
 * When most of the frame changed in the last frame, or the buffer holds no usable frame (first use, size or
 * format change, a frame lost), the whole frame is read back with vkCmdCopyImageToBuffer (the copy engine) and
 * the hash pass still runs, so the dirty map stays exact. Frames too big for the device's storage buffers take the
 * plain copy alone (no map; the next frame then starts over: all dirty).
 *
 * Threads: record/skip/grow on the presenting thread; collect/invalidate/slot_lost on the readback thread, for a
 * slot the presenting thread does not touch then (the ring's slot states order them).
 */
#ifndef RC_VK_DAMAGE_H
#define RC_VK_DAMAGE_H

#include <vulkan/vulkan.h>

#include "core/util.h"

/* The tile size is the canvas's (src/stream/damage.h): the dirty map goes to it as is. The shaders take it as a
 * specialization constant (256 % tile == 0). */
#include "stream/damage.h"

typedef struct rc_vk_damage rc_vk_damage;

/* What the GPU found for one delivered frame. */
typedef struct rc_vk_damage_info {
    const uint8_t *dirty;     /* tiles_x × tiles_y bytes, row-major, 1 = changed vs the previous frame, 0 = same;
                                 NULL: unknown (damage off, or the frame took the plain copy) — treat as all changed */
    uint32_t tiles_x, tiles_y, tile; /* tile: RC_DAMAGE_TILE pixels; edge tiles are cut at the frame's edge */
    uint32_t dirty_tiles;     /* tiles changed vs the previous frame */
    uint32_t copied_tiles;    /* tiles read back into the staging buffer (all of them when whole) */
    int whole;                /* the whole frame was read back (vkCmdCopyImageToBuffer) */
    uint64_t readback_bytes;  /* bytes the GPU wrote into host memory for this frame: pixels + 4 flag bytes a tile */
} rc_vk_damage_info;

/* Pipelines and per-slot descriptor sets for a ring of nslots (1..16) staging buffers. RCANVAS_OK, RCANVAS_ENOMEM,
 * RCANVAS_EVULKAN (logged). */
int rc_vk_damage_new(VkPhysicalDevice phys, VkDevice dev, int nslots, const rc_logger *log, rc_vk_damage **out);
/* The device must be idle for this rcanvas_vk (no submitted frame pending). NULL is fine. */
void rc_vk_damage_free(rc_vk_damage *d);

/* Bytes a staging buffer needs for a w×h frame with row pitch `pitch` (bytes): the pixels, then a flag word a tile. */
VkDeviceSize rc_vk_damage_staging_size(uint32_t w, uint32_t h, size_t pitch);

/* 1 when the mirror or the hash state must grow for a w×h frame (rc_vk_damage_grow, with no frame in flight). */
int rc_vk_damage_needs_grow(const rc_vk_damage *d, uint32_t w, uint32_t h);
/* Grows them; the caller has waited for every submitted frame. RCANVAS_OK or RCANVAS_EVULKAN (out of memory: the
 * frames take the plain copy until a grow succeeds). */
int rc_vk_damage_grow(rc_vk_damage *d, uint32_t w, uint32_t h);

/* Records, into cb (recording; image in `layout`, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL or GENERAL, after a barrier
 * that makes the app's writes visible to the transfer stage), the readback of frame w×h (format_id: any value that differs between
 * pixel formats) into `staging` (slot `slot`, row pitch `pitch` bytes, at least rc_vk_damage_staging_size bytes,
 * usage STORAGE_BUFFER | TRANSFER_DST): the damage passes and the copy. The caller adds a barrier from the transfer
 * and compute stages to the host before the fence. RCANVAS_OK: recorded. Else nothing was recorded and the caller
 * records the plain copy and calls rc_vk_damage_skip: RCANVAS_EFRAME_SIZE (beyond the storage buffer range, or the
 * mirror could not grow). */
int rc_vk_damage_record(rc_vk_damage *d, VkCommandBuffer cb, int slot, VkBuffer staging, VkImage image,
                        VkImageLayout layout, uint32_t w, uint32_t h, size_t pitch, int format_id);
/* The frame in `slot` took the plain copy: no damage known for it; the next frame starts over (all dirty). */
void rc_vk_damage_skip(rc_vk_damage *d, int slot);

/* After the slot's fence (and the invalidation of non-coherent memory): reads the flags out of the mapped staging
 * memory and fills *out (out->dirty stays valid until the slot is recorded again). */
void rc_vk_damage_collect(rc_vk_damage *d, int slot, const uint8_t *mapped, rc_vk_damage_info *out);
/* A frame was lost before the consumer got it (failed readback, refused by the canvas): the next frame is all
 * dirty, so that no dirty map is relative to a frame the consumer never saw. Any thread. */
void rc_vk_damage_invalidate(rc_vk_damage *d);
/* The slot's staging buffer was (re)allocated or its readback failed: it holds no usable frame. */
void rc_vk_damage_slot_lost(rc_vk_damage *d, int slot);

/* Tests and benchmarks: read the whole frame back when at least full_ratio of the tiles changed in the last frame
 * (default 0.5; > 1 = never, only when required); max_buffer_bytes > 0 lowers the storage buffer limit (to test
 * the plain-copy fallback), 0 = the device's. */
void rc_vk_damage_tune(rc_vk_damage *d, double full_ratio, uint64_t max_buffer_bytes);

#endif
