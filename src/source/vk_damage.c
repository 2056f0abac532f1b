/* SPDX-License-Identifier: MIT */
/*
 * vk_damage.c — damage of Vulkan frames found on the GPU (see vk_damage.h): the mirror and hash-state buffers, the
 * two compute pipelines (vk_damage_hash.comp, vk_damage_copy.comp, compiled by glslc at build time like the GPU
 * JPEG encoder's), one descriptor set per staging slot, and the bookkeeping of which frame each slot holds.
 */
#include "source/vk_damage.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static const uint32_t k_hash[] =
#include "vk_damage_hash.comp.inc"
    ;
static const uint32_t k_copy[] =
#include "vk_damage_copy.comp.inc"
    ;

_Static_assert(RC_DAMAGE_TILE >= 1 && RC_DAMAGE_TILE <= 256 && 256 % RC_DAMAGE_TILE == 0,
               "the damage shaders map 256 invocations onto a tile's columns");

#define MAX_SLOTS 16
/* Frame numbers start over (everything dirty once) before they could wrap. */
#define FRAME_LIMIT 0x7fffffffu

typedef struct dslot {
    VkDescriptorSet set;
    uint64_t set_gen;         /* buffer generation the set points at (0: never written) */
    VkBuffer set_staging;     /* the staging buffer it points at */
    uint32_t frame;           /* number of the complete frame the staging buffer holds; 0: none */
    uint32_t w, h;            /* its geometry */
    size_t pitch;
    int format;
    atomic_int lost;          /* set by the readback thread: the last readback into it failed */
    /* the last recording, for collect */
    int recorded, whole;
    uint32_t tiles_x, tiles_y;
    size_t flags_off;         /* bytes */
    uint8_t *dirty;
    size_t dirty_cap;
} dslot;

struct rc_vk_damage {
    VkPhysicalDevice phys;
    VkDevice dev;
    const rc_logger *log;
    VkDescriptorSetLayout dsl;
    VkPipelineLayout layout;
    VkPipeline hash, copy;
    VkDescriptorPool dpool;
    VkBuffer mirror, state;
    VkDeviceMemory mirror_mem, state_mem;
    VkDeviceSize mirror_cap, state_cap;
    uint64_t gen;             /* bumped when mirror or state is reallocated */
    VkDeviceSize max_range;   /* maxStorageBufferRange (or the test override) */
    VkDeviceSize dev_range;   /* maxStorageBufferRange */
    uint32_t frame;           /* number of the last recorded frame */
    uint32_t w, h;            /* geometry of the hash state */
    int format;
    int state_valid;          /* the hash state describes the last recorded frame */
    atomic_int reset;         /* set by invalidate (any thread): the next frame is all dirty */
    atomic_int last_dirty_permille;
    double full_ratio;
    int nslots;
    dslot slots[MAX_SLOTS];
};

typedef struct push {
    uint32_t width, height, mirror_pitch, tiles_x, tiles_y, frame, slot_frame, reset, mode, stage_pitch, flags_word;
} push;

static int vkfail(rc_vk_damage *d, VkResult r, const char *what) {
    rc_log(d->log, RCANVAS_LOG_ERROR, "vulkan damage: %s failed (VkResult %d)", what, (int)r);
    return r == VK_ERROR_DEVICE_LOST ? RCANVAS_EDEVICE_LOST : RCANVAS_EVULKAN;
}

static VkResult make_pipe(rc_vk_damage *d, const uint32_t *code, size_t size, VkPipeline *out) {
    VkShaderModuleCreateInfo smi = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, .codeSize = size, .pCode = code};
    VkShaderModule sm;
    VkResult r = vkCreateShaderModule(d->dev, &smi, NULL, &sm);
    if (r != VK_SUCCESS) return r;
    const uint32_t tile = RC_DAMAGE_TILE;
    VkSpecializationMapEntry me = {.constantID = 0, .offset = 0, .size = sizeof tile};
    VkSpecializationInfo spec = {.mapEntryCount = 1, .pMapEntries = &me, .dataSize = sizeof tile, .pData = &tile};
    VkComputePipelineCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = sm, .pName = "main", .pSpecializationInfo = &spec},
        .layout = d->layout};
    r = vkCreateComputePipelines(d->dev, VK_NULL_HANDLE, 1, &ci, NULL, out);
    vkDestroyShaderModule(d->dev, sm, NULL);
    return r;
}

int rc_vk_damage_new(VkPhysicalDevice phys, VkDevice dev, int nslots, const rc_logger *log, rc_vk_damage **out) {
    static const rc_logger quiet = {0};
    if (!phys || !dev || !out || nslots < 1 || nslots > MAX_SLOTS) return RCANVAS_EINVAL;
    *out = NULL;
    rc_vk_damage *d = calloc(1, sizeof(*d));
    if (!d) return RCANVAS_ENOMEM;
    d->phys = phys, d->dev = dev, d->log = log ? log : &quiet, d->nslots = nslots;
    d->full_ratio = 0.5;
    atomic_init(&d->reset, 1);
    atomic_init(&d->last_dirty_permille, 1000);
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(phys, &props);
    d->max_range = d->dev_range = props.limits.maxStorageBufferRange;
    VkDescriptorSetLayoutBinding b[3];
    for (int i = 0; i < 3; i++)
        b[i] = (VkDescriptorSetLayoutBinding){.binding = (uint32_t)i, .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                              .descriptorCount = 1, .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    VkDescriptorSetLayoutCreateInfo dli = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                           .bindingCount = 3, .pBindings = b};
    VkPushConstantRange pr = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .size = sizeof(push)};
    VkResult r = vkCreateDescriptorSetLayout(dev, &dli, NULL, &d->dsl);
    VkPipelineLayoutCreateInfo pli = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, .setLayoutCount = 1,
                                      .pSetLayouts = &d->dsl, .pushConstantRangeCount = 1, .pPushConstantRanges = &pr};
    if (r == VK_SUCCESS) r = vkCreatePipelineLayout(dev, &pli, NULL, &d->layout);
    if (r == VK_SUCCESS) r = make_pipe(d, k_hash, sizeof k_hash, &d->hash);
    if (r == VK_SUCCESS) r = make_pipe(d, k_copy, sizeof k_copy, &d->copy);
    VkDescriptorPoolSize ps = {.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .descriptorCount = 3 * (uint32_t)nslots};
    VkDescriptorPoolCreateInfo dpi = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                      .maxSets = (uint32_t)nslots, .poolSizeCount = 1, .pPoolSizes = &ps};
    if (r == VK_SUCCESS) r = vkCreateDescriptorPool(dev, &dpi, NULL, &d->dpool);
    for (int i = 0; r == VK_SUCCESS && i < nslots; i++) {
        VkDescriptorSetAllocateInfo dai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                           .descriptorPool = d->dpool, .descriptorSetCount = 1, .pSetLayouts = &d->dsl};
        r = vkAllocateDescriptorSets(dev, &dai, &d->slots[i].set);
    }
    if (r != VK_SUCCESS) {
        int e = vkfail(d, r, "pipeline setup");
        rc_vk_damage_free(d);
        return e;
    }
    *out = d;
    return RCANVAS_OK;
}

static void free_buffer(rc_vk_damage *d, VkBuffer *b, VkDeviceMemory *m, VkDeviceSize *cap) {
    if (*b) vkDestroyBuffer(d->dev, *b, NULL);
    if (*m) vkFreeMemory(d->dev, *m, NULL);
    *b = VK_NULL_HANDLE;
    *m = VK_NULL_HANDLE;
    *cap = 0;
}

void rc_vk_damage_free(rc_vk_damage *d) {
    if (!d) return;
    free_buffer(d, &d->mirror, &d->mirror_mem, &d->mirror_cap);
    free_buffer(d, &d->state, &d->state_mem, &d->state_cap);
    if (d->dpool) vkDestroyDescriptorPool(d->dev, d->dpool, NULL); /* frees the sets */
    if (d->hash) vkDestroyPipeline(d->dev, d->hash, NULL);
    if (d->copy) vkDestroyPipeline(d->dev, d->copy, NULL);
    if (d->layout) vkDestroyPipelineLayout(d->dev, d->layout, NULL);
    if (d->dsl) vkDestroyDescriptorSetLayout(d->dev, d->dsl, NULL);
    for (int i = 0; i < MAX_SLOTS; i++) free(d->slots[i].dirty);
    free(d);
}

static uint32_t tiles_of(uint32_t n) { return (n + RC_DAMAGE_TILE - 1) / RC_DAMAGE_TILE; }

VkDeviceSize rc_vk_damage_staging_size(uint32_t w, uint32_t h, size_t pitch) {
    return (VkDeviceSize)pitch * h + (VkDeviceSize)tiles_of(w) * tiles_of(h) * 4;
}

static VkDeviceSize mirror_bytes(uint32_t w, uint32_t h) { return (VkDeviceSize)w * h * 4; }
static VkDeviceSize state_bytes(uint32_t w, uint32_t h) { return (VkDeviceSize)tiles_of(w) * tiles_of(h) * 16; }

int rc_vk_damage_needs_grow(const rc_vk_damage *d, uint32_t w, uint32_t h) {
    return d->mirror_cap < mirror_bytes(w, h) || d->state_cap < state_bytes(w, h);
}

/* A device-local storage buffer (host-visible memory only if the device has nothing else). */
static int alloc_device(rc_vk_damage *d, VkDeviceSize size, VkBufferUsageFlags usage, VkBuffer *b, VkDeviceMemory *m) {
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = size,
                              .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | usage};
    VkResult r = vkCreateBuffer(d->dev, &bci, NULL, b);
    if (r != VK_SUCCESS) return vkfail(d, r, "vkCreateBuffer");
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(d->dev, *b, &req);
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(d->phys, &mp);
    int type = -1;
    for (uint32_t i = 0; i < mp.memoryTypeCount; i++) {
        if (!(req.memoryTypeBits & (1u << i))) continue;
        int local = !!(mp.memoryTypes[i].propertyFlags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
        if (type < 0 || (local && !(mp.memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)))
            type = (int)i;
    }
    VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = req.size,
                                .memoryTypeIndex = (uint32_t)(type < 0 ? 0 : type)};
    r = type < 0 ? VK_ERROR_OUT_OF_DEVICE_MEMORY : vkAllocateMemory(d->dev, &mai, NULL, m);
    if (r == VK_SUCCESS) r = vkBindBufferMemory(d->dev, *b, *m, 0);
    if (r != VK_SUCCESS) return vkfail(d, r, "device buffer allocation");
    return RCANVAS_OK;
}

int rc_vk_damage_grow(rc_vk_damage *d, uint32_t w, uint32_t h) {
    int r = RCANVAS_OK;
    if (d->mirror_cap < mirror_bytes(w, h)) {
        free_buffer(d, &d->mirror, &d->mirror_mem, &d->mirror_cap);
        r = alloc_device(d, mirror_bytes(w, h), VK_BUFFER_USAGE_TRANSFER_DST_BIT, &d->mirror, &d->mirror_mem);
        if (r) free_buffer(d, &d->mirror, &d->mirror_mem, &d->mirror_cap);
        else d->mirror_cap = mirror_bytes(w, h);
    }
    if (!r && d->state_cap < state_bytes(w, h)) {
        free_buffer(d, &d->state, &d->state_mem, &d->state_cap);
        r = alloc_device(d, state_bytes(w, h), 0, &d->state, &d->state_mem);
        if (r) free_buffer(d, &d->state, &d->state_mem, &d->state_cap);
        else d->state_cap = state_bytes(w, h);
    }
    d->gen++;
    d->state_valid = 0; /* a new state buffer holds nothing */
    return r;
}

static void start_over(rc_vk_damage *d) {
    d->frame = 0;
    d->state_valid = 0;
    for (int i = 0; i < d->nslots; i++) d->slots[i].frame = 0;
}

int rc_vk_damage_record(rc_vk_damage *d, VkCommandBuffer cb, int slot, VkBuffer staging, VkImage image,
                        VkImageLayout layout, uint32_t w, uint32_t h, size_t pitch, int format_id) {
    if (slot < 0 || slot >= d->nslots) return RCANVAS_EINVAL;
    if (mirror_bytes(w, h) > d->max_range || rc_vk_damage_staging_size(w, h, pitch) > d->max_range ||
        rc_vk_damage_needs_grow(d, w, h))
        return RCANVAS_EFRAME_SIZE;
    dslot *s = &d->slots[slot];
    if (s->set_gen != d->gen || s->set_staging != staging) {
        /* the slot's previous submission is complete (the slot is free), the others do not use this set */
        VkDescriptorBufferInfo bi[3] = {{d->mirror, 0, VK_WHOLE_SIZE}, {d->state, 0, VK_WHOLE_SIZE},
                                        {staging, 0, VK_WHOLE_SIZE}};
        VkWriteDescriptorSet wr[3];
        for (int i = 0; i < 3; i++)
            wr[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstSet = s->set,
                                           .dstBinding = (uint32_t)i, .descriptorCount = 1,
                                           .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .pBufferInfo = &bi[i]};
        vkUpdateDescriptorSets(d->dev, 3, wr, 0, NULL);
        s->set_gen = d->gen;
        s->set_staging = staging;
    }
    uint32_t tx = tiles_of(w), ty = tiles_of(h);
    size_t ntiles = (size_t)tx * ty;
    if (s->dirty_cap < ntiles) {
        uint8_t *p = realloc(s->dirty, ntiles);
        if (!p) return RCANVAS_ENOMEM;
        s->dirty = p;
        s->dirty_cap = ntiles;
    }
    if (d->frame >= FRAME_LIMIT) start_over(d);
    int reset = atomic_exchange(&d->reset, 0) || !d->state_valid || w != d->w || h != d->h || format_id != d->format;
    uint32_t frame = ++d->frame;
    /* The copy pass can bring the slot up to date only from a complete frame of the same geometry. */
    int usable = !atomic_exchange(&s->lost, 0) && s->frame != 0 && s->w == w && s->h == h && s->pitch == pitch &&
                 s->format == format_id;
    int whole = reset || !usable ||
                atomic_load(&d->last_dirty_permille) >= (int)(d->full_ratio * 1000.0 + 0.5);

    /* The mirror is one buffer for every slot, and the previous frame's submission may still be running (its fence
     * not waited yet: the ring keeps several in flight): its copy into the mirror (write after write) and its passes'
     * reads of it (write after read) come before this frame's copy overwrites it. */
    VkBufferMemoryBarrier mirror_b = {.sType = VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER,
                                      .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
                                      .dstAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
                                      .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
                                      .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED, .buffer = d->mirror, .offset = 0,
                                      .size = VK_WHOLE_SIZE};
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                         VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 0, NULL, 1, &mirror_b, 0, NULL);
    VkBufferImageCopy to_mirror = {.bufferRowLength = w, .imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1},
                                   .imageExtent = {w, h, 1}};
    vkCmdCopyImageToBuffer(cb, image, layout, d->mirror, 1, &to_mirror);
    if (whole) { /* the copy engine, as without damage; the passes below then only hash and write the flags */
        VkBufferImageCopy to_staging = {.bufferRowLength = (uint32_t)(pitch / 4),
                                        .imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1}, .imageExtent = {w, h, 1}};
        vkCmdCopyImageToBuffer(cb, image, layout, staging, 1, &to_staging);
    }
    /* the mirror copy, and the previous frame's passes over the state, before the hash pass reads and writes */
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_SHADER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT};
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                         VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
    push pc = {.width = w, .height = h, .mirror_pitch = w, .tiles_x = tx, .tiles_y = ty, .frame = frame,
               .slot_frame = whole ? 0 : s->frame, .reset = (uint32_t)reset, .mode = (uint32_t)whole,
               .stage_pitch = (uint32_t)(pitch / 4), .flags_word = (uint32_t)((size_t)pitch * h / 4)};
    vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, d->layout, 0, 1, &s->set, 0, NULL);
    vkCmdPushConstants(cb, d->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof pc, &pc);
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, d->hash);
    vkCmdDispatch(cb, tx, ty, 1);
    mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT;
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0,
                         NULL, 0, NULL);
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, d->copy);
    vkCmdDispatch(cb, tx, ty, 1);

    d->w = w, d->h = h, d->format = format_id, d->state_valid = 1;
    s->frame = frame, s->w = w, s->h = h, s->pitch = pitch, s->format = format_id;
    s->recorded = 1, s->whole = whole, s->tiles_x = tx, s->tiles_y = ty, s->flags_off = pitch * h;
    return RCANVAS_OK;
}

void rc_vk_damage_skip(rc_vk_damage *d, int slot) {
    if (slot < 0 || slot >= d->nslots) return;
    d->slots[slot].frame = 0;
    d->slots[slot].recorded = 0;
    d->state_valid = 0;
}

void rc_vk_damage_collect(rc_vk_damage *d, int slot, const uint8_t *mapped, rc_vk_damage_info *out) {
    memset(out, 0, sizeof(*out));
    out->tile = RC_DAMAGE_TILE;
    if (!d || slot < 0 || slot >= d->nslots || !d->slots[slot].recorded) return;
    dslot *s = &d->slots[slot];
    const uint32_t *flags = (const uint32_t *)(mapped + s->flags_off);
    uint32_t dirty = 0, copied = 0;
    uint64_t px = 0;
    for (uint32_t ty = 0; ty < s->tiles_y; ty++)
        for (uint32_t tx = 0; tx < s->tiles_x; tx++) {
            size_t t = (size_t)ty * s->tiles_x + tx;
            uint32_t f = flags[t];
            s->dirty[t] = (uint8_t)(f & 1u);
            dirty += f & 1u;
            if (f & 2u) {
                copied++;
                uint32_t tw = s->w - tx * RC_DAMAGE_TILE, th = s->h - ty * RC_DAMAGE_TILE;
                px += (uint64_t)(tw < RC_DAMAGE_TILE ? tw : RC_DAMAGE_TILE) * (th < RC_DAMAGE_TILE ? th : RC_DAMAGE_TILE);
            }
        }
    uint32_t n = s->tiles_x * s->tiles_y;
    out->dirty = s->dirty;
    out->tiles_x = s->tiles_x;
    out->tiles_y = s->tiles_y;
    out->dirty_tiles = dirty;
    out->copied_tiles = copied;
    out->whole = s->whole;
    out->readback_bytes = px * 4 + (uint64_t)n * 4;
    atomic_store(&d->last_dirty_permille, (int)((uint64_t)dirty * 1000 / (n ? n : 1)));
}

void rc_vk_damage_invalidate(rc_vk_damage *d) {
    if (d) atomic_store(&d->reset, 1);
}

void rc_vk_damage_slot_lost(rc_vk_damage *d, int slot) {
    if (d && slot >= 0 && slot < d->nslots) atomic_store(&d->slots[slot].lost, 1);
}

void rc_vk_damage_tune(rc_vk_damage *d, double full_ratio, uint64_t max_buffer_bytes) {
    if (!d) return;
    d->full_ratio = full_ratio;
    d->max_range = max_buffer_bytes && max_buffer_bytes < d->dev_range ? max_buffer_bytes : d->dev_range;
}
