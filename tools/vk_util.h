/* SPDX-License-Identifier: MIT */
/*
 * vk_util.h — benchmark and test helper: upload an 8-bit RGBA bitmap into a new device-local VkImage (GENERAL
 * layout). It waits for the queue: not for production paths.
 */
#ifndef RC_BENCH_VK_UTIL_H
#define RC_BENCH_VK_UTIL_H

#include <vulkan/vulkan.h>

#include "rcanvas_vk.h"

/* R8G8B8A8_UNORM, usage TRANSFER_SRC | TRANSFER_DST | SAMPLED. */
VkImage upload_image(rcanvas_vk *vk, const uint8_t *rgba, uint32_t w, uint32_t h, VkDeviceMemory *mem_out);
/* Any 4-byte format: `px` (w × h × 4 bytes, tightly packed) is stored as it is; usage gets TRANSFER_DST added.
 * VK_NULL_HANDLE on failure. */
VkImage upload_image_as(rcanvas_vk *vk, const uint8_t *px, uint32_t w, uint32_t h, VkFormat format,
                        VkImageUsageFlags usage, VkDeviceMemory *mem_out);
/* Moves the image from layout `from` to `to` (after all earlier work on the queue; waits). 0 or -1. */
int set_image_layout(rcanvas_vk *vk, VkImage img, VkImageLayout from, VkImageLayout to);

#endif
