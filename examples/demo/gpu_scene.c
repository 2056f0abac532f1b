/* SPDX-License-Identifier: MIT */
/*
 * gpu_scene.c — the demo's Vulkan scene (`rcanvas-demo --gpu`): a compute shader (shaders/mandel.comp, SPIR-V
 * embedded at build time) renders the Mandelbrot/Julia set into an RGBA8 storage image; the render's submission
 * signals a semaphore that rcanvas_present_vk() waits on, so the CPU never waits for the GPU in between.
 * Interaction mirrors the CPU scene: drag pans, zoom about a point, keys p/a/j/r/+/-.
 */
#include <vulkan/vulkan.h>

#include "gpu_scene.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const uint32_t k_spirv[] =
#include "mandel.comp.inc"
    ;

typedef struct push {
    float center[2], julia_c[2];
    float scale, t;
    uint32_t width, height, max_iter, palette, julia;
} push;

struct gpu_scene {
    rcanvas_vk *vk;
    VkDevice dev;
    VkQueue queue;
    VkDescriptorSetLayout dsl;
    VkPipelineLayout layout;
    VkPipeline pipe;
    VkDescriptorPool dpool;
    VkDescriptorSet set;
    VkCommandPool cpool;
    VkCommandBuffer cmd;
    VkFence fence;
    VkSemaphore rendered;
    VkImage image;
    VkDeviceMemory mem;
    VkImageView view;
    uint32_t w, h;
    int fresh;               /* image just (re)created: layout UNDEFINED */
    double cx, cy, scale;    /* view: centre, complex units per physical pixel (at height 1080) */
    double jx, jy;
    int julia, palette, animate, iter_factor_x10, changed;
};

static int vk_ok(VkResult r, const char *what) {
    if (r == VK_SUCCESS) return 1;
    fprintf(stderr, "rcanvas-demo: %s failed (VkResult %d)\n", what, (int)r);
    return 0;
}

static void destroy_image(gpu_scene *g) {
    if (g->view) vkDestroyImageView(g->dev, g->view, NULL);
    if (g->image) vkDestroyImage(g->dev, g->image, NULL);
    if (g->mem) vkFreeMemory(g->dev, g->mem, NULL);
    g->view = VK_NULL_HANDLE;
    g->image = VK_NULL_HANDLE;
    g->mem = VK_NULL_HANDLE;
}

static int create_image(gpu_scene *g, uint32_t w, uint32_t h) {
    vkQueueWaitIdle(g->queue); /* not the device: rcanvas's GPU codecs submit to its other queues */
    destroy_image(g);
    VkImageCreateInfo ici = {.sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO, .imageType = VK_IMAGE_TYPE_2D,
                             .format = VK_FORMAT_R8G8B8A8_UNORM, .extent = {w, h, 1}, .mipLevels = 1, .arrayLayers = 1,
                             .samples = VK_SAMPLE_COUNT_1_BIT, .tiling = VK_IMAGE_TILING_OPTIMAL,
                             .usage = VK_IMAGE_USAGE_STORAGE_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT |
                                      VK_IMAGE_USAGE_SAMPLED_BIT}; /* SAMPLED: the GPU JPEG reads it, no copy */
    if (!vk_ok(vkCreateImage(g->dev, &ici, NULL, &g->image), "vkCreateImage")) return -1;
    VkMemoryRequirements req;
    vkGetImageMemoryRequirements(g->dev, g->image, &req);
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(rcanvas_vk_physical_device(g->vk), &mp);
    uint32_t type = UINT32_MAX;
    for (uint32_t i = 0; i < mp.memoryTypeCount && type == UINT32_MAX; i++)
        if ((req.memoryTypeBits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT))
            type = i;
    for (uint32_t i = 0; i < mp.memoryTypeCount && type == UINT32_MAX; i++)
        if (req.memoryTypeBits & (1u << i)) type = i;
    VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = req.size,
                                .memoryTypeIndex = type};
    if (!vk_ok(vkAllocateMemory(g->dev, &mai, NULL, &g->mem), "vkAllocateMemory") ||
        !vk_ok(vkBindImageMemory(g->dev, g->image, g->mem, 0), "vkBindImageMemory"))
        return -1;
    VkImageViewCreateInfo vci = {.sType = VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO, .image = g->image,
                                 .viewType = VK_IMAGE_VIEW_TYPE_2D, .format = VK_FORMAT_R8G8B8A8_UNORM,
                                 .subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1}};
    if (!vk_ok(vkCreateImageView(g->dev, &vci, NULL, &g->view), "vkCreateImageView")) return -1;
    VkDescriptorImageInfo dii = {.imageView = g->view, .imageLayout = VK_IMAGE_LAYOUT_GENERAL};
    VkWriteDescriptorSet wr = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstSet = g->set, .dstBinding = 0,
                               .descriptorCount = 1, .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_IMAGE,
                               .pImageInfo = &dii};
    vkUpdateDescriptorSets(g->dev, 1, &wr, 0, NULL);
    g->w = w, g->h = h, g->fresh = 1;
    return 0;
}

gpu_scene *gpu_scene_new(rcanvas_vk *vk) {
    gpu_scene *g = calloc(1, sizeof(*g));
    if (!g) return NULL;
    g->vk = vk;
    g->dev = rcanvas_vk_device(vk);
    g->queue = rcanvas_vk_queue(vk);
    VkDescriptorSetLayoutBinding b = {.binding = 0, .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_IMAGE,
                                      .descriptorCount = 1, .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    VkDescriptorSetLayoutCreateInfo dli = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                           .bindingCount = 1, .pBindings = &b};
    VkPushConstantRange pr = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .size = sizeof(push)};
    VkShaderModuleCreateInfo smi = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, .codeSize = sizeof k_spirv,
                                    .pCode = k_spirv};
    VkShaderModule sm = VK_NULL_HANDLE;
    VkDescriptorPoolSize ps = {.type = VK_DESCRIPTOR_TYPE_STORAGE_IMAGE, .descriptorCount = 1};
    VkDescriptorPoolCreateInfo dpi = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO, .maxSets = 1,
                                      .poolSizeCount = 1, .pPoolSizes = &ps};
    VkCommandPoolCreateInfo cpi = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                   .queueFamilyIndex = rcanvas_vk_queue_family(vk)};
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO, .flags = VK_FENCE_CREATE_SIGNALED_BIT};
    VkSemaphoreCreateInfo sci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
    int ok = vk_ok(vkCreateDescriptorSetLayout(g->dev, &dli, NULL, &g->dsl), "descriptor set layout");
    VkPipelineLayoutCreateInfo pli = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, .setLayoutCount = 1,
                                      .pSetLayouts = &g->dsl, .pushConstantRangeCount = 1, .pPushConstantRanges = &pr};
    ok = ok && vk_ok(vkCreatePipelineLayout(g->dev, &pli, NULL, &g->layout), "pipeline layout");
    ok = ok && vk_ok(vkCreateShaderModule(g->dev, &smi, NULL, &sm), "shader module");
    if (ok) {
        VkComputePipelineCreateInfo cpci = {
            .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
            .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                      .module = sm, .pName = "main"},
            .layout = g->layout};
        ok = vk_ok(vkCreateComputePipelines(g->dev, VK_NULL_HANDLE, 1, &cpci, NULL, &g->pipe), "compute pipeline");
        vkDestroyShaderModule(g->dev, sm, NULL);
    }
    ok = ok && vk_ok(vkCreateDescriptorPool(g->dev, &dpi, NULL, &g->dpool), "descriptor pool");
    if (ok) {
        VkDescriptorSetAllocateInfo dai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                           .descriptorPool = g->dpool, .descriptorSetCount = 1, .pSetLayouts = &g->dsl};
        ok = vk_ok(vkAllocateDescriptorSets(g->dev, &dai, &g->set), "descriptor set");
    }
    ok = ok && vk_ok(vkCreateCommandPool(g->dev, &cpi, NULL, &g->cpool), "command pool");
    if (ok) {
        VkCommandBufferAllocateInfo cai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, .commandPool = g->cpool,
                                           .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY, .commandBufferCount = 1};
        ok = vk_ok(vkAllocateCommandBuffers(g->dev, &cai, &g->cmd), "command buffer");
    }
    ok = ok && vk_ok(vkCreateFence(g->dev, &fci, NULL, &g->fence), "fence");
    ok = ok && vk_ok(vkCreateSemaphore(g->dev, &sci, NULL, &g->rendered), "semaphore");
    if (!ok) {
        gpu_scene_free(g);
        return NULL;
    }
    gpu_scene_key(g, "r");
    g->animate = 1;
    g->iter_factor_x10 = 10;
    return g;
}

void gpu_scene_free(gpu_scene *g) {
    if (!g) return;
    if (g->queue) vkQueueWaitIdle(g->queue);
    destroy_image(g);
    if (g->rendered) vkDestroySemaphore(g->dev, g->rendered, NULL);
    if (g->fence) vkDestroyFence(g->dev, g->fence, NULL);
    if (g->cpool) vkDestroyCommandPool(g->dev, g->cpool, NULL);
    if (g->dpool) vkDestroyDescriptorPool(g->dev, g->dpool, NULL);
    if (g->pipe) vkDestroyPipeline(g->dev, g->pipe, NULL);
    if (g->layout) vkDestroyPipelineLayout(g->dev, g->layout, NULL);
    if (g->dsl) vkDestroyDescriptorSetLayout(g->dev, g->dsl, NULL);
    free(g);
}

int gpu_scene_render_present(gpu_scene *g, uint32_t w, uint32_t h, double t) {
    if ((w != g->w || h != g->h) && create_image(g, w, h)) return RCANVAS_EVULKAN;
    if (!vk_ok(vkWaitForFences(g->dev, 1, &g->fence, VK_TRUE, UINT64_MAX), "vkWaitForFences")) return RCANVAS_EVULKAN;
    vkResetFences(g->dev, 1, &g->fence);
    double zoom = 3.0 / 1080.0 / g->scale;
    push pc = {.center = {(float)g->cx, (float)g->cy}, .julia_c = {(float)g->jx, (float)g->jy},
               .scale = (float)(g->scale * 1080.0 / h), .t = g->animate ? (float)t : 0.0f, .width = w, .height = h,
               .max_iter = (uint32_t)((256 + 64 * log2(zoom > 1 ? zoom : 1)) * g->iter_factor_x10 / 10),
               .palette = (uint32_t)g->palette, .julia = (uint32_t)g->julia};
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    vkResetCommandBuffer(g->cmd, 0);
    vkBeginCommandBuffer(g->cmd, &bi);
    /* The previous frame's copy (a later submission on this queue) must finish reading before we write. */
    VkImageMemoryBarrier b = {.sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER, .srcAccessMask = VK_ACCESS_TRANSFER_READ_BIT,
                              .dstAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
                              .oldLayout = g->fresh ? VK_IMAGE_LAYOUT_UNDEFINED : VK_IMAGE_LAYOUT_GENERAL,
                              .newLayout = VK_IMAGE_LAYOUT_GENERAL, .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
                              .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED, .image = g->image,
                              .subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1}};
    vkCmdPipelineBarrier(g->cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 0, NULL, 0,
                         NULL, 1, &b);
    g->fresh = 0;
    vkCmdBindPipeline(g->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, g->pipe);
    vkCmdBindDescriptorSets(g->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, g->layout, 0, 1, &g->set, 0, NULL);
    vkCmdPushConstants(g->cmd, g->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof pc, &pc);
    vkCmdDispatch(g->cmd, (w + 15) / 16, (h + 15) / 16, 1);
    vkEndCommandBuffer(g->cmd);
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &g->cmd,
                       .signalSemaphoreCount = 1, .pSignalSemaphores = &g->rendered};
    if (!vk_ok(vkQueueSubmit(g->queue, 1, &si, g->fence), "vkQueueSubmit")) return RCANVAS_EVULKAN;
    rcanvas_vk_frame f = {.image = g->image, .format = VK_FORMAT_R8G8B8A8_UNORM, .width = w, .height = h,
                          .layout = VK_IMAGE_LAYOUT_GENERAL, .wait_semaphore = g->rendered,
                          .wait_stage = VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                          .usage = VK_IMAGE_USAGE_STORAGE_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT |
                                   VK_IMAGE_USAGE_SAMPLED_BIT};
    int r = rcanvas_present_vk(g->vk, &f);
    if (r == RCANVAS_EBUSY) { /* not taken: consume the semaphore so it can be signalled again */
        VkPipelineStageFlags st = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
        VkSubmitInfo wi = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .waitSemaphoreCount = 1,
                           .pWaitSemaphores = &g->rendered, .pWaitDstStageMask = &st};
        vkQueueSubmit(g->queue, 1, &wi, VK_NULL_HANDLE);
    }
    g->changed = 0;
    return r;
}

void gpu_scene_drag(gpu_scene *g, double dx, double dy) {
    double s = g->scale * 1080.0 / (g->h ? g->h : 1080);
    g->cx -= dx * s;
    g->cy += dy * s;
    g->changed = 1;
}

void gpu_scene_zoom(gpu_scene *g, double x, double y, double factor) {
    if (!g->w || factor <= 0) return;
    double s = g->scale * 1080.0 / g->h;
    double px = g->cx + (x - 0.5 * g->w) * s, py = g->cy - (y - 0.5 * g->h) * s;
    double ns = g->scale / factor;
    if (ns < 1e-7 / 1080 || ns > 10.0 / 1080) return; /* float precision, and the set out of sight */
    g->scale = ns;
    s = ns * 1080.0 / g->h;
    g->cx = px - (x - 0.5 * g->w) * s;
    g->cy = py + (y - 0.5 * g->h) * s;
    g->changed = 1;
}

void gpu_scene_key(gpu_scene *g, const char *key) {
    if (!strcmp(key, "r") || !strcmp(key, "R")) {
        g->cx = g->julia ? 0.0 : -0.6;
        g->cy = 0.0;
        g->scale = 3.0 / 1080.0;
        g->iter_factor_x10 = 10;
    } else if (!strcmp(key, "p") || !strcmp(key, "P")) {
        g->palette = (g->palette + 1) % 3;
    } else if (!strcmp(key, "a") || !strcmp(key, "A")) {
        g->animate = !g->animate;
    } else if (!strcmp(key, "j") || !strcmp(key, "J")) {
        g->julia = !g->julia;
        if (g->julia) g->jx = g->cx, g->jy = g->cy, g->cx = 0, g->cy = 0, g->scale = 3.0 / 1080.0;
        else gpu_scene_key(g, "r");
    } else if (!strcmp(key, "+") || !strcmp(key, "=")) {
        if (g->iter_factor_x10 < 160) g->iter_factor_x10 = g->iter_factor_x10 * 3 / 2;
    } else if (!strcmp(key, "-")) {
        if (g->iter_factor_x10 > 3) g->iter_factor_x10 = g->iter_factor_x10 * 2 / 3;
    } else {
        return;
    }
    g->changed = 1;
}

int gpu_scene_changed(const gpu_scene *g) { return g->changed || g->animate; }

void gpu_scene_describe(const gpu_scene *g, char *buf, size_t cap) {
    snprintf(buf, cap, "%s (GPU) x=%.6f y=%.6f zoom=%.3g×", g->julia ? "Julia" : "Mandelbrot", g->cx, g->cy,
             3.0 / 1080.0 / g->scale);
}
