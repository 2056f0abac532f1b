/*
 * vk_util.h — benchmark helper: upload an RGBA8 bitmap into a new device-local VkImage (GENERAL layout).
 */
#ifndef RC_BENCH_VK_UTIL_H
#define RC_BENCH_VK_UTIL_H

#include <vulkan/vulkan.h>

#include "rcanvas_vk.h"

VkImage upload_image(rcanvas_vk *vk, const uint8_t *rgba, uint32_t w, uint32_t h, VkDeviceMemory *mem_out);

#endif
