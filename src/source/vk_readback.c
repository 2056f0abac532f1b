/* SPDX-License-Identifier: MIT */
/*
 * vk_readback.c — frames in from the GPU: rcanvas_present_vk() records a copy of the app's VkImage into one
 * staging buffer of a reused ring (host-visible, host-cached where possible, row pitch aligned as the device
 * prefers), with layout transitions around it, and submits it with the app's semaphores and a fence. The
 * readback thread waits on the fences in submission order and hands the mapped memory to the canvas as an
 * external frame (no CPU copy); the slot returns to the ring when the encoders let go of it.
 * Slot life: FREE → (present_vk) SUBMITTED → (fence) HELD by the canvas → (release) FREE.
 * With damage on (vk_damage.h), the same command buffer also finds the tiles that changed on the GPU and reads back
 * only those the slot lacks; the canvas gets the slot (still a complete frame) and the dirty map.
 * GPU JPEG: each slot has its own encoder (the first one's pipelines shared: rc_gpu_jpeg_new_sibling), recorded into
 * the slot's command buffer, so that as many frames are encoded on the GPU at once as the ring holds (with
 * one encoder, a frame that came while the previous one was encoding went to the CPU encoder). A slot's encoder is
 * finished as soon as the canvas has copied its bytes, so it is free again when its slot is (should the canvas let go
 * of the slot even sooner, the next frame in it gets RCANVAS_EBUSY from the encoder and goes to the CPU encoder).
 * The device: the app's; else, with codec_device, the GPU codecs' (codec/gpu/gpu_device.h) with a queue of its own
 * where it has one to spare, so that each frame goes on with its staging buffer as a device buffer (rc_image.gpu) and an h264-gpu
 * encoder reads it there (a copy on the GPU, none on the host); else one of its own.
 */
#include <vulkan/vulkan.h>

#include "source/vk_readback.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/gpu/gpu_device.h"
#include "codec/gpu/jpeg_gpu.h"
#include "source/vk_damage.h"
#include "stream/canvas.h"

#define MAX_RING 16

enum slot_state { SLOT_FREE = 0, SLOT_SUBMITTED, SLOT_HELD };

typedef struct slot {
    rcanvas_vk *vk;
    enum slot_state state;
    VkBuffer buf;
    VkDeviceMemory mem;
    VkDeviceSize cap;
    uint8_t *mapped;
    VkCommandBuffer cmd;
    VkFence fence;
    uint32_t width, height;
    size_t pitch;
    rcanvas_pixel_format format;
    int64_t submit_us;
    int gpu_encoded;          /* this copy also ran the GPU JPEG encoder */
    int gpu_read_image;       /* ... reading the image in its DCT pass (no input copy) */
    rc_gpu_jpeg *gj;          /* this slot's GPU JPEG encoder (vk->gj[i] for slot i; NULL: CPU encoding only) */
    rc_gpu_frame gpu;         /* the staging buffer as a device buffer, handed on with the frame (codec.h) */
} slot;

struct rcanvas_vk {
    rcanvas_canvas *canvas;
    const rc_logger *log;
    int own;                  /* rcanvas created instance + device */
    rc_gpu_device *shared;    /* or the GPU codecs' device, with a queue of its own (NULL: not) */
    uint32_t shared_queue;
    VkInstance instance;
    VkPhysicalDevice phys;
    VkDevice device;
    uint32_t family;
    VkQueue queue;
    VkDebugUtilsMessengerEXT messenger;
    int validation_errors;

    VkCommandPool pool;
    VkQueryPool queries;      /* 2 timestamps per slot (before/after the copy) */
    double ts_period_ns;
    int have_timestamps;
    VkPhysicalDeviceType device_type;
    uint32_t mem_type;
    int coherent;
    VkDeviceSize atom;
    uint32_t pitch_align;
    int depth;
    slot slots[MAX_RING];

    pthread_mutex_t mu;       /* slot states, the submit FIFO, lost, stop; cv wakes the readback thread */
    pthread_cond_t cv;
    pthread_cond_t freed;     /* a slot became free (rcanvas_vk_free waits on it) */
    int fifo[MAX_RING];
    int fifo_head, fifo_len;
    int lost, stop;
    pthread_t thread;
    int thread_started;
    rc_vk_stats stats;
    rc_vk_sink sink;          /* optional override of the canvas (benchmarks) */
    rc_gpu_jpeg *gj[MAX_RING]; /* GPU JPEG encoders, one per slot: [0] owns the pipelines, the rest are its
                                  siblings (all NULL: CPU encoding only) */
    rc_vk_damage *dmg;        /* damage on the GPU (NULL: off, every frame read back whole) */
};

/* Frees the GPU JPEG encoders, the owner ([0]) last; the slots have none after it. */
static void free_gpu_jpeg(rcanvas_vk *vk) {
    for (int i = MAX_RING - 1; i >= 0; i--) {
        rc_gpu_jpeg_free(vk->gj[i]);
        vk->gj[i] = NULL;
        vk->slots[i].gj = NULL;
    }
}

/* Tells the canvas whether its JPEG frames come from the GPU encoder; viewers are told ("encoder" messages,
 * docs/protocol.md). */
static void set_canvas_gpu_jpeg(rcanvas_vk *vk, int on) {
    if (vk->canvas) rc_canvas_set_source_codec(vk->canvas, on ? &rc_codec_jpeg_gpu : NULL);
}

void rcanvas_vk_config_init(rcanvas_vk_config *cfg) {
    if (!cfg) return;
    memset(cfg, 0, sizeof(*cfg));
    cfg->ring_depth = 4;
    cfg->gpu_jpeg = 1;
    cfg->damage = 0; /* auto */
}

static int vkerr(rcanvas_vk *vk, VkResult r, const char *what) {
    rc_log(vk->log, RCANVAS_LOG_ERROR, "vulkan: %s failed (VkResult %d)", what, (int)r);
    if (r == VK_ERROR_DEVICE_LOST) {
        pthread_mutex_lock(&vk->mu);
        vk->lost = 1;
        pthread_mutex_unlock(&vk->mu);
        return RCANVAS_EDEVICE_LOST;
    }
    return RCANVAS_EVULKAN;
}

static VKAPI_ATTR VkBool32 VKAPI_CALL on_validation(VkDebugUtilsMessageSeverityFlagBitsEXT sev,
                                                    VkDebugUtilsMessageTypeFlagsEXT type,
                                                    const VkDebugUtilsMessengerCallbackDataEXT *data, void *user) {
    (void)type;
    rcanvas_vk *vk = user;
    if (sev & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
        __atomic_add_fetch(&vk->validation_errors, 1, __ATOMIC_RELAXED);
        /* whole, with its ID (newer layers keep the VUID out of pMessage): rc_log cuts lines at 512 bytes, and the
         * layer's messages run to a few kB, what the hazard needs coming last */
        const rc_logger *lg = vk->log;
        if (!lg->fn || RCANVAS_LOG_ERROR > lg->level) return VK_FALSE;
        const char *id = data->pMessageIdName ? data->pMessageIdName : "", *msg = data->pMessage ? data->pMessage : "";
        size_t n = strlen(id) + strlen(msg) + 32;
        char *line = malloc(n);
        if (line) {
            if (strstr(msg, id)) snprintf(line, n, "vulkan validation: %s", msg); /* older layers: already there */
            else snprintf(line, n, "vulkan validation: [%s] %s", id, msg);
            lg->fn(lg->user, RCANVAS_LOG_ERROR, line);
            free(line);
        } else {
            rc_log(lg, RCANVAS_LOG_ERROR, "vulkan validation: [%s] %s", id, msg);
        }
    }
    return VK_FALSE;
}

static int has_layer(const char *name) {
    uint32_t n = 0;
    if (vkEnumerateInstanceLayerProperties(&n, NULL) != VK_SUCCESS || n == 0) return 0;
    VkLayerProperties *p = calloc(n, sizeof(*p));
    int found = 0;
    if (p && vkEnumerateInstanceLayerProperties(&n, p) == VK_SUCCESS)
        for (uint32_t i = 0; i < n; i++) found |= !strcmp(p[i].layerName, name);
    free(p);
    return found;
}

/* Own instance + device: first discrete GPU, else the first device; a queue family with compute. */
static int create_own_device(rcanvas_vk *vk, int validation) {
    const char *layer = "VK_LAYER_KHRONOS_validation";
    int use_val = validation && has_layer(layer);
    if (validation && !use_val) rc_log(vk->log, RCANVAS_LOG_WARN, "vulkan: validation layer not installed");
    const char *ext = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .pApplicationName = "rcanvas",
                             .apiVersion = VK_API_VERSION_1_1};
    VkInstanceCreateInfo ici = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app,
                                .enabledLayerCount = use_val ? 1u : 0u, .ppEnabledLayerNames = &layer,
                                .enabledExtensionCount = use_val ? 1u : 0u, .ppEnabledExtensionNames = &ext};
    VkResult r = vkCreateInstance(&ici, NULL, &vk->instance);
    if (r != VK_SUCCESS) return vkerr(vk, r, "vkCreateInstance");
    if (use_val) {
        PFN_vkCreateDebugUtilsMessengerEXT create =
            (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(vk->instance, "vkCreateDebugUtilsMessengerEXT");
        VkDebugUtilsMessengerCreateInfoEXT mi = {
            .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
            .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT,
            .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT,
            .pfnUserCallback = on_validation, .pUserData = vk};
        if (create) create(vk->instance, &mi, NULL, &vk->messenger);
    }
    int rr = rc_gpu_pick_device(vk->instance, vk->log, &vk->phys, &vk->family);
    if (rr) return rr;
    r = rc_gpu_create_device(vk->phys, vk->family, &vk->device, &vk->queue);
    if (r != VK_SUCCESS) return vkerr(vk, r, "vkCreateDevice");
    return RCANVAS_OK;
}

/* Host-visible memory for the staging buffers: host-cached (fast CPU reads) if the device has it. */
static int pick_memory(rcanvas_vk *vk, uint32_t type_bits) {
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(vk->phys, &mp);
    int best = -1, best_score = -1;
    for (uint32_t i = 0; i < mp.memoryTypeCount; i++) {
        VkMemoryPropertyFlags f = mp.memoryTypes[i].propertyFlags;
        if (!(type_bits & (1u << i)) || !(f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)) continue;
        int score = ((f & VK_MEMORY_PROPERTY_HOST_CACHED_BIT) ? 4 : 0) +
                    ((f & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) ? 1 : 0) +
                    ((f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) ? 0 : 2); /* system RAM: CPU reads are fast */
        if (score > best_score) best = (int)i, best_score = score;
    }
    if (best >= 0) {
        vk->mem_type = (uint32_t)best;
        vk->coherent = !!(mp.memoryTypes[best].propertyFlags & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
    }
    return best;
}

static void slot_destroy_buffer(rcanvas_vk *vk, slot *s) {
    if (s->mapped) vkUnmapMemory(vk->device, s->mem);
    if (s->buf) vkDestroyBuffer(vk->device, s->buf, NULL);
    if (s->mem) vkFreeMemory(vk->device, s->mem, NULL);
    s->mapped = NULL;
    s->buf = VK_NULL_HANDLE;
    s->mem = VK_NULL_HANDLE;
    s->cap = 0;
}

/* Makes the slot's staging buffer hold at least `need` bytes (only on first use and resize). */
static int slot_reserve(rcanvas_vk *vk, slot *s, VkDeviceSize need) {
    if (s->cap >= need) return RCANVAS_OK;
    slot_destroy_buffer(vk, s);
    if (vk->dmg) rc_vk_damage_slot_lost(vk->dmg, (int)(s - vk->slots)); /* the new buffer holds no frame */
    /* storage: the damage pass writes the changed tiles into it */
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = need,
                              .usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                       (vk->dmg ? VK_BUFFER_USAGE_STORAGE_BUFFER_BIT : 0),
                              .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    VkResult r = vkCreateBuffer(vk->device, &bci, NULL, &s->buf);
    if (r != VK_SUCCESS) return vkerr(vk, r, "vkCreateBuffer");
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(vk->device, s->buf, &req);
    if (pick_memory(vk, req.memoryTypeBits) < 0) {
        slot_destroy_buffer(vk, s);
        rc_log(vk->log, RCANVAS_LOG_ERROR, "vulkan: no host-visible memory type for staging buffers");
        return RCANVAS_EVULKAN;
    }
    VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = req.size,
                                .memoryTypeIndex = vk->mem_type};
    r = vkAllocateMemory(vk->device, &mai, NULL, &s->mem);
    if (r == VK_SUCCESS) r = vkBindBufferMemory(vk->device, s->buf, s->mem, 0);
    void *p = NULL;
    if (r == VK_SUCCESS) r = vkMapMemory(vk->device, s->mem, 0, VK_WHOLE_SIZE, 0, &p);
    if (r != VK_SUCCESS) {
        slot_destroy_buffer(vk, s);
        return vkerr(vk, r, "staging buffer allocation");
    }
    s->mapped = p;
    s->cap = need;
    return RCANVAS_OK;
}

static void *readback_main(void *arg);

int rc_vk_new_internal(rcanvas_canvas *canvas, const rcanvas_vk_config *cfg, const rc_logger *log, rcanvas_vk **out) {
    if (!cfg || !out || cfg->ring_depth < 1 || cfg->ring_depth > MAX_RING) return RCANVAS_EINVAL;
    if (cfg->row_pitch_alignment & (cfg->row_pitch_alignment - 1)) return RCANVAS_EINVAL;
    int own = cfg->device == VK_NULL_HANDLE;
    if (!own && (!cfg->instance || !cfg->physical_device || !cfg->queue)) return RCANVAS_EINVAL;
    *out = NULL;
    rcanvas_vk *vk = calloc(1, sizeof(*vk));
    if (!vk) return RCANVAS_ENOMEM;
    static const rc_logger quiet = {0};
    vk->canvas = canvas;
    vk->log = log ? log : &quiet;
    vk->own = own;
    vk->depth = cfg->ring_depth;
    pthread_mutex_init(&vk->mu, NULL);
    pthread_cond_init(&vk->cv, NULL);
    pthread_cond_init(&vk->freed, NULL);
    int r = RCANVAS_OK;
    /* codec_device: the GPU codecs' device where it has a queue to spare (and no validation layer is asked for), so
     * that an h264-gpu canvas's encoder reads the staging buffer on the GPU (rc_image.gpu) instead of the host
     * copying it back up; RCANVAS_VK_OWN_DEVICE=1 (benchmarks) makes a device of its own as without it. */
    const char *own_env = getenv("RCANVAS_VK_OWN_DEVICE");
    if (own && cfg->codec_device && !cfg->validation && !(own_env && !strcmp(own_env, "1")) &&
        rc_gpu_device_acquire_ring_queue(NULL, &vk->shared, &vk->shared_queue) == RCANVAS_OK) { /* quiet: a CPU device is refused */
        vk->own = own = 0;
        vk->instance = vk->shared->instance;
        vk->phys = vk->shared->phys;
        vk->device = vk->shared->dev;
        vk->family = vk->shared->family;
        vk->queue = vk->shared->queues[vk->shared_queue];
        rc_log(vk->log, RCANVAS_LOG_INFO, "vulkan: the ring shares the GPU codecs' device (queue %u of its own)",
               vk->shared_queue);
    } else if (own) {
        r = create_own_device(vk, cfg->validation);
    } else {
        vk->instance = cfg->instance;
        vk->phys = cfg->physical_device;
        vk->device = cfg->device;
        vk->family = cfg->queue_family;
        vk->queue = cfg->queue;
    }
    if (!r) {
        VkPhysicalDeviceProperties props;
        vkGetPhysicalDeviceProperties(vk->phys, &props);
        vk->pitch_align = cfg->row_pitch_alignment ? cfg->row_pitch_alignment
                                                   : (uint32_t)props.limits.optimalBufferCopyRowPitchAlignment;
        if (vk->pitch_align < 4) vk->pitch_align = 4;
        vk->atom = props.limits.nonCoherentAtomSize ? props.limits.nonCoherentAtomSize : 1;
        vk->ts_period_ns = props.limits.timestampPeriod;
        vk->device_type = props.deviceType;
        uint32_t nf = 0;
        vkGetPhysicalDeviceQueueFamilyProperties(vk->phys, &nf, NULL);
        VkQueueFamilyProperties fam[32];
        if (nf > 32) nf = 32;
        vkGetPhysicalDeviceQueueFamilyProperties(vk->phys, &nf, fam);
        vk->have_timestamps = vk->family < nf && fam[vk->family].timestampValidBits > 0;
        rc_log(vk->log, RCANVAS_LOG_INFO, "vulkan: %s, ring of %d staging buffers, row pitch alignment %u",
               props.deviceName, vk->depth, vk->pitch_align);
        VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                       .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                       .queueFamilyIndex = vk->family};
        VkResult vr = vkCreateCommandPool(vk->device, &pci, NULL, &vk->pool);
        if (vr != VK_SUCCESS) r = vkerr(vk, vr, "vkCreateCommandPool");
    }
    if (!r && vk->have_timestamps) {
        VkQueryPoolCreateInfo qpi = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                     .queryType = VK_QUERY_TYPE_TIMESTAMP, .queryCount = 2 * (uint32_t)vk->depth};
        if (vkCreateQueryPool(vk->device, &qpi, NULL, &vk->queries) != VK_SUCCESS) vk->have_timestamps = 0;
    }
    for (int i = 0; !r && i < vk->depth; i++) {
        slot *s = &vk->slots[i];
        s->vk = vk;
        VkCommandBufferAllocateInfo cai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                           .commandPool = vk->pool, .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                           .commandBufferCount = 1};
        VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
        VkResult vr = vkAllocateCommandBuffers(vk->device, &cai, &s->cmd);
        if (vr == VK_SUCCESS) vr = vkCreateFence(vk->device, &fci, NULL, &s->fence);
        if (vr != VK_SUCCESS) r = vkerr(vk, vr, "slot creation");
    }
    if (!r && (cfg->damage > 0 || (cfg->damage == 0 && vk->device_type != VK_PHYSICAL_DEVICE_TYPE_CPU))) {
        int g = rc_vk_damage_new(vk->phys, vk->device, vk->depth, vk->log, &vk->dmg);
        if (g) rc_log(vk->log, RCANVAS_LOG_WARN, "vulkan: no damage on the GPU (%s): whole frames read back", rcanvas_strerror(g));
        else rc_log(vk->log, RCANVAS_LOG_INFO, "vulkan: damage on the GPU (%d px tiles): only changed tiles read back",
                    RC_DAMAGE_TILE);
    }
    if (!r && canvas && cfg->gpu_jpeg) {
        /* one encoder per slot; RCANVAS_GPU_JPEG_ENCODERS=N (1..ring depth, benchmarks) makes fewer, slot i using
         * encoder i mod N (N=1: one encoder shared by all slots, the earlier design) */
        const char *envn = getenv("RCANVAS_GPU_JPEG_ENCODERS");
        int n = envn && atoi(envn) >= 1 && atoi(envn) <= vk->depth ? atoi(envn) : vk->depth;
        int g = rc_gpu_jpeg_new(vk->phys, vk->device, vk->family, vk->queue, vk->log, &vk->gj[0]);
        for (int i = 1; !g && i < n; i++) g = rc_gpu_jpeg_new_sibling(vk->gj[0], &vk->gj[i]);
        if (g) {
            rc_log(vk->log, RCANVAS_LOG_WARN, "vulkan: no GPU JPEG encoder (%s); JPEG on the CPU", rcanvas_strerror(g));
            free_gpu_jpeg(vk);
        } else {
            rc_log(vk->log, RCANVAS_LOG_INFO, "vulkan: GPU JPEG encoder ready, %d encodes in flight at most (codec "
                   "jpeg-gpu for JPEG canvases)", n);
            for (int i = 0; i < vk->depth; i++) vk->slots[i].gj = vk->gj[i % n];
        }
        set_canvas_gpu_jpeg(vk, vk->gj[0] != NULL);
    }
    if (!r) {
        if (rc_thread_create(&vk->thread, "rcanvas-ring", readback_main, vk)) r = RCANVAS_ETHREAD;
        else vk->thread_started = 1;
    }
    if (r) {
        rcanvas_vk_free(vk);
        return r;
    }
    *out = vk;
    return RCANVAS_OK;
}

int rcanvas_vk_new(rcanvas_canvas *canvas, const rcanvas_vk_config *cfg, rcanvas_vk **out) {
    if (!canvas) return RCANVAS_EINVAL;
    return rc_vk_new_internal(canvas, cfg, rc_canvas_logger(canvas), out);
}

void rc_vk_damage_tuning(rcanvas_vk *vk, double full_ratio, uint64_t max_buffer_bytes) {
    rc_vk_damage_tune(vk->dmg, full_ratio, max_buffer_bytes);
}

int rc_vk_damage_enabled(const rcanvas_vk *vk) { return vk && vk->dmg; }

void rc_vk_set_sink(rcanvas_vk *vk, rc_vk_sink sink) {
    vk->sink = sink;
    if (vk->gj[0]) set_canvas_gpu_jpeg(vk, !sink.deliver); /* a sink takes the frames: the canvas sees none */
}

void rcanvas_vk_free(rcanvas_vk *vk) {
    if (!vk) return;
    if (vk->thread_started) {
        pthread_mutex_lock(&vk->mu);
        vk->stop = 1; /* the thread first delivers (or, if lost, drops) what was submitted */
        pthread_cond_broadcast(&vk->cv);
        pthread_mutex_unlock(&vk->mu);
        pthread_join(vk->thread, NULL);
    }
    if (vk->canvas && !vk->sink.deliver) rc_canvas_release_external(vk->canvas);
    pthread_mutex_lock(&vk->mu); /* wait for every held slot to come back from the encoders */
    for (;;) {
        int held = 0;
        for (int i = 0; i < vk->depth; i++) held |= vk->slots[i].state == SLOT_HELD;
        if (!held) break;
        pthread_cond_wait(&vk->freed, &vk->mu);
    }
    pthread_mutex_unlock(&vk->mu);
    if (vk->gj[0]) set_canvas_gpu_jpeg(vk, 0);
    free_gpu_jpeg(vk);
    if (vk->device) {
        vkQueueWaitIdle(vk->queue); /* all rcanvas submits here; the device's other queues are others' */
        rc_vk_damage_free(vk->dmg);
        for (int i = 0; i < vk->depth; i++) {
            slot *s = &vk->slots[i];
            slot_destroy_buffer(vk, s);
            if (s->fence) vkDestroyFence(vk->device, s->fence, NULL);
        }
        if (vk->queries) vkDestroyQueryPool(vk->device, vk->queries, NULL);
        if (vk->pool) vkDestroyCommandPool(vk->device, vk->pool, NULL);
        if (vk->own) vkDestroyDevice(vk->device, NULL);
    }
    if (vk->own && vk->instance) {
        if (vk->messenger) {
            PFN_vkDestroyDebugUtilsMessengerEXT destroy = (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(
                vk->instance, "vkDestroyDebugUtilsMessengerEXT");
            if (destroy) destroy(vk->instance, vk->messenger, NULL);
        }
        vkDestroyInstance(vk->instance, NULL);
    }
    rc_gpu_device_release_ring_queue(vk->shared, vk->shared_queue);
    pthread_mutex_destroy(&vk->mu);
    pthread_cond_destroy(&vk->cv);
    pthread_cond_destroy(&vk->freed);
    free(vk);
}

VkInstance rcanvas_vk_instance(const rcanvas_vk *vk) { return vk ? vk->instance : VK_NULL_HANDLE; }
VkPhysicalDevice rcanvas_vk_physical_device(const rcanvas_vk *vk) { return vk ? vk->phys : VK_NULL_HANDLE; }
VkDevice rcanvas_vk_device(const rcanvas_vk *vk) { return vk ? vk->device : VK_NULL_HANDLE; }
VkQueue rcanvas_vk_queue(const rcanvas_vk *vk) { return vk ? vk->queue : VK_NULL_HANDLE; }
uint32_t rcanvas_vk_queue_family(const rcanvas_vk *vk) { return vk ? vk->family : 0; }
int rcanvas_vk_validation_errors(const rcanvas_vk *vk) {
    return vk ? __atomic_load_n(&vk->validation_errors, __ATOMIC_RELAXED) : 0;
}
void rc_vk_get_stats(rcanvas_vk *vk, rc_vk_stats *out) {
    pthread_mutex_lock(&vk->mu);
    *out = vk->stats;
    pthread_mutex_unlock(&vk->mu);
}

static int format_of(VkFormat f, rcanvas_pixel_format *out) {
    switch (f) {
    case VK_FORMAT_R8G8B8A8_UNORM:
    case VK_FORMAT_R8G8B8A8_SRGB: *out = RCANVAS_FORMAT_RGBA8; return 0;
    case VK_FORMAT_B8G8R8A8_UNORM:
    case VK_FORMAT_B8G8R8A8_SRGB: *out = RCANVAS_FORMAT_BGRA8; return 0;
    default: return -1;
    }
}

static int valid_layout(VkImageLayout l) {
    return l == VK_IMAGE_LAYOUT_GENERAL || l == VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL ||
           l == VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL || l == VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL ||
           l == VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL || l == VK_IMAGE_LAYOUT_PRESENT_SRC_KHR;
}

void rc_vk_release_slot(void *arg) {
    slot *s = arg;
    rcanvas_vk *vk = s->vk;
    pthread_mutex_lock(&vk->mu);
    s->state = SLOT_FREE;
    pthread_cond_broadcast(&vk->freed);
    pthread_mutex_unlock(&vk->mu);
}

static void release_gpu_encoder(slot *s) {
    if (!s->gpu_encoded) return;
    s->gpu_encoded = 0;
    rc_gpu_jpeg_finish(s->gj);
}

/* A frame whose command buffer was recorded with the damage passes never ran, or its readback failed: the slot
 * holds no usable frame, and the next dirty map must not be relative to a frame no one got. */
static void damage_lost(rcanvas_vk *vk, int idx) {
    if (!vk->dmg) return;
    rc_vk_damage_slot_lost(vk->dmg, idx);
    rc_vk_damage_invalidate(vk->dmg);
}

/* Waits for every submitted frame's fence (the damage buffers are about to be replaced). 0, or -1 (a fence failed
 * or took over 10 s: the caller keeps the old buffers). Presenting thread. */
static int wait_in_flight(rcanvas_vk *vk) {
    VkFence fences[MAX_RING];
    uint32_t n = 0;
    pthread_mutex_lock(&vk->mu);
    for (int i = 0; i < vk->depth; i++)
        if (vk->slots[i].state == SLOT_SUBMITTED) fences[n++] = vk->slots[i].fence;
    pthread_mutex_unlock(&vk->mu);
    /* the readback thread may wait on them at the same time: allowed (only resets need external sync, and only
     * the presenting thread resets, a free slot's fence) */
    return n == 0 || vkWaitForFences(vk->device, n, fences, VK_TRUE, 10ull * 1000 * 1000 * 1000) == VK_SUCCESS ? 0 : -1;
}

int rcanvas_present_vk(rcanvas_vk *vk, const rcanvas_vk_frame *f) {
    if (!vk || !f || f->image == VK_NULL_HANDLE) return RCANVAS_EINVAL;
    rcanvas_pixel_format pf;
    if (format_of(f->format, &pf) || !valid_layout(f->layout) ||
        (f->final_layout != VK_IMAGE_LAYOUT_UNDEFINED && !valid_layout(f->final_layout)))
        return RCANVAS_EINVAL;
    uint32_t maxd = vk->canvas ? rc_canvas_max_frame_dim(vk->canvas) : 16384;
    if (f->width == 0 || f->height == 0 || f->width > maxd || f->height > maxd) return RCANVAS_EFRAME_SIZE;

    pthread_mutex_lock(&vk->mu);
    if (vk->lost) {
        pthread_mutex_unlock(&vk->mu);
        return RCANVAS_EDEVICE_LOST;
    }
    if (vk->stop) {
        pthread_mutex_unlock(&vk->mu);
        return RCANVAS_ECLOSED;
    }
    int idx = -1;
    for (int i = 0; i < vk->depth && idx < 0; i++)
        if (vk->slots[i].state == SLOT_FREE) idx = i;
    if (idx < 0) vk->stats.busy++;
    pthread_mutex_unlock(&vk->mu);
    if (idx < 0) return RCANVAS_EBUSY;
    slot *s = &vk->slots[idx]; /* FREE: only this thread touches it until it is queued */

    size_t pitch = ((size_t)f->width * 4 + vk->pitch_align - 1) / vk->pitch_align * vk->pitch_align;
    int r = slot_reserve(vk, s, vk->dmg ? rc_vk_damage_staging_size(f->width, f->height, pitch)
                                        : (VkDeviceSize)pitch * f->height);
    if (r) return r;
    if (vk->dmg && rc_vk_damage_needs_grow(vk->dmg, f->width, f->height) && wait_in_flight(vk) == 0)
        rc_vk_damage_grow(vk->dmg, f->width, f->height); /* on failure: whole frames (plain copy) until it works */
    s->width = f->width;
    s->height = f->height;
    s->pitch = pitch;
    s->format = pf;

    VkImageLayout final = f->final_layout ? f->final_layout : f->layout;
    /* JPEG on the GPU too, when the canvas streams JPEG and the encoder is free (EBUSY while the previous GPU
     * encode is in flight: this frame is encoded on the CPU): only the compressed bytes are then encoded-and-sent;
     * the staged pixels serve the lossless refinement (and the CPU fallback). An image the encoder can sample is
     * read in GENERAL layout, by the copy and by the DCT pass alike, so neither waits for a layout change. */
    rc_encode_params ep = {0};
    if (s->gj && vk->canvas) rc_canvas_get_params(vk->canvas, &ep);
    int gpu_jpeg = s->gj && vk->canvas && ep.codec == RCANVAS_CODEC_JPEG;
    VkImageLayout work = gpu_jpeg && rc_gpu_jpeg_reads_image(s->gj, f->format, f->usage)
                             ? VK_IMAGE_LAYOUT_GENERAL
                             : VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL;
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    VkResult vr = vkResetCommandBuffer(s->cmd, 0);
    if (vr == VK_SUCCESS) vr = vkBeginCommandBuffer(s->cmd, &bi);
    if (vr != VK_SUCCESS) return vkerr(vk, vr, "vkBeginCommandBuffer");
    VkImageSubresourceRange range = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
    if (vk->have_timestamps) {
        vkCmdResetQueryPool(s->cmd, vk->queries, 2 * (uint32_t)idx, 2);
        vkCmdWriteTimestamp(s->cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, vk->queries, 2 * (uint32_t)idx);
    }
    /* the app's writes (and the layout change) before the copies, and before the DCT pass when it reads too */
    VkPipelineStageFlags readers = VK_PIPELINE_STAGE_TRANSFER_BIT |
                                   (work == VK_IMAGE_LAYOUT_GENERAL ? VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT : 0);
    VkAccessFlags reads = VK_ACCESS_TRANSFER_READ_BIT | (work == VK_IMAGE_LAYOUT_GENERAL ? VK_ACCESS_SHADER_READ_BIT : 0);
    if (f->layout != work) {
        VkImageMemoryBarrier b = {.sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER,
                                  .srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT, .dstAccessMask = reads,
                                  .oldLayout = f->layout, .newLayout = work,
                                  .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED, .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
                                  .image = f->image, .subresourceRange = range};
        vkCmdPipelineBarrier(s->cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, readers, 0, 0, NULL, 0, NULL, 1, &b);
    } else {
        VkMemoryBarrier b = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT,
                             .dstAccessMask = reads};
        vkCmdPipelineBarrier(s->cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, readers, 0, 1, &b, 0, NULL, 0, NULL);
    }
    /* damage: the changed tiles the slot lacks (or the whole frame) plus the dirty map; else the plain copy */
    if (!vk->dmg || rc_vk_damage_record(vk->dmg, s->cmd, idx, s->buf, f->image, work, f->width, f->height, pitch,
                                        (int)f->format) != RCANVAS_OK) {
        VkBufferImageCopy region = {.bufferOffset = 0, .bufferRowLength = (uint32_t)(pitch / 4), .bufferImageHeight = 0,
                                    .imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1},
                                    .imageExtent = {f->width, f->height, 1}};
        vkCmdCopyImageToBuffer(s->cmd, f->image, work, s->buf, 1, &region);
        if (vk->dmg) rc_vk_damage_skip(vk->dmg, idx);
    }
    s->gpu_encoded = gpu_jpeg && rc_gpu_jpeg_record(s->gj, s->cmd, f->image, f->format, f->usage, work, f->width,
                                                    f->height, ep.quality, ep.subsampling) == RCANVAS_OK;
    s->gpu_read_image = s->gpu_encoded && rc_gpu_jpeg_read_directly(s->gj);
    if (final != work) { /* after the copies and the DCT pass's reads */
        VkImageMemoryBarrier b = {.sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER,
                                  .srcAccessMask = 0,
                                  .dstAccessMask = VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT,
                                  .oldLayout = work, .newLayout = final,
                                  .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED, .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
                                  .image = f->image, .subresourceRange = range};
        vkCmdPipelineBarrier(s->cmd, VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                             VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0, 0, NULL, 0, NULL, 1, &b);
    }
    VkBufferMemoryBarrier hb = {.sType = VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER,
                                .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_SHADER_WRITE_BIT,
                                .dstAccessMask = VK_ACCESS_HOST_READ_BIT,
                                .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED, .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
                                .buffer = s->buf, .offset = 0, .size = VK_WHOLE_SIZE};
    vkCmdPipelineBarrier(s->cmd, VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                         VK_PIPELINE_STAGE_HOST_BIT, 0, 0, NULL, 1, &hb, 0, NULL);
    if (vk->have_timestamps)
        vkCmdWriteTimestamp(s->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, vk->queries, 2 * (uint32_t)idx + 1);
    vr = vkEndCommandBuffer(s->cmd);
    if (vr == VK_SUCCESS) vr = vkResetFences(vk->device, 1, &s->fence);
    if (vr != VK_SUCCESS) {
        release_gpu_encoder(s);
        damage_lost(vk, idx);
        return vkerr(vk, vr, "recording the copy");
    }
    VkPipelineStageFlags stage = f->wait_stage ? f->wait_stage : VK_PIPELINE_STAGE_TRANSFER_BIT;
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                       .waitSemaphoreCount = f->wait_semaphore ? 1u : 0u, .pWaitSemaphores = &f->wait_semaphore,
                       .pWaitDstStageMask = &stage, .commandBufferCount = 1, .pCommandBuffers = &s->cmd,
                       .signalSemaphoreCount = f->signal_semaphore ? 1u : 0u, .pSignalSemaphores = &f->signal_semaphore};
    s->submit_us = rc_now_us();
    vr = vkQueueSubmit(vk->queue, 1, &si, s->fence);
    if (vr != VK_SUCCESS) {
        release_gpu_encoder(s);
        damage_lost(vk, idx);
        return vkerr(vk, vr, "vkQueueSubmit");
    }
    pthread_mutex_lock(&vk->mu);
    s->state = SLOT_SUBMITTED;
    vk->fifo[(vk->fifo_head + vk->fifo_len) % MAX_RING] = idx;
    vk->fifo_len++;
    vk->stats.submitted++;
    pthread_cond_broadcast(&vk->cv);
    pthread_mutex_unlock(&vk->mu);
    return RCANVAS_OK;
}

/* Reads the slot's damage flags (after its fence) into *out and the statistics. Readback thread. */
static void damage_collect(rcanvas_vk *vk, int idx, rc_vk_damage_info *out) {
    slot *s = &vk->slots[idx];
    rc_vk_damage_collect(vk->dmg, idx, s->mapped, out); /* NULL dmg: zeroed, dirty NULL */
    uint32_t tiles = ((s->width + RC_DAMAGE_TILE - 1) / RC_DAMAGE_TILE) * ((s->height + RC_DAMAGE_TILE - 1) / RC_DAMAGE_TILE);
    if (!out->dirty) { /* plain copy: the whole frame, no map */
        out->tile = RC_DAMAGE_TILE;
        out->whole = 1;
        out->dirty_tiles = out->copied_tiles = tiles;
        out->readback_bytes = (uint64_t)s->width * s->height * 4;
    }
    pthread_mutex_lock(&vk->mu);
    vk->stats.readback_bytes = out->readback_bytes;
    vk->stats.readback_bytes_total += out->readback_bytes;
    vk->stats.tiles = tiles;
    vk->stats.dirty_tiles = out->dirty_tiles;
    vk->stats.copied_tiles = out->copied_tiles;
    vk->stats.damage_frames += out->dirty != NULL;
    vk->stats.whole_frames += out->whole;
    pthread_mutex_unlock(&vk->mu);
}

/* Hands a frame and its dirty map to the canvas. ADAPTER until the canvas's damage entry point lands (branch
 * i10-damage adds rc_canvas_present_external_damage(c, img, release, arg, dirty, tiles_x, tiles_y) to
 * stream/canvas.h: 1 byte a tile, nonzero = changed vs the previous frame presented; dirty NULL = unknown): then
 * the body becomes that one call with d->dirty, d->tiles_x, d->tiles_y; d->dirty stays valid until release(arg),
 * like the pixels. Until then the canvas gets the whole frame (still complete in the slot) and does its own work.
 * A refused frame makes the next map all dirty (see the caller). Readback thread. */
static int present_with_damage(rcanvas_canvas *c, const rc_image *img, void (*release)(void *), void *arg,
                               const rc_vk_damage_info *d) {
    if (!d || !d->dirty) return rc_canvas_present_external(c, img, release, arg); /* unknown: the CPU diff */
    return rc_canvas_present_external_damage(c, img, release, arg, d->dirty, d->tiles_x, d->tiles_y);
}

/* A frame whose GPU damage map says at most 1/RC_VK_GPU_JPEG_DAMAGE_DIV of its tiles changed goes to the canvas's
 * damage path (the CPU encodes those tiles; the canvas skips an unchanged frame) instead of as the GPU encoder's
 * whole-frame JPEG: on a link, a few tiles cost a few kB where the whole frame costs hundreds (a marker moving on a
 * 1080p plot: 1.5 kB against 290 kB, docs/benchmarks.md), and the lossless refinement then covers only those tiles.
 * The CPU's share stays bounded: 1/8 of 1080p is about 0.26 Mpx. */
#define RC_VK_GPU_JPEG_DAMAGE_DIV 8

static int damage_small(const rc_vk_damage_info *d) {
    uint64_t tiles = (uint64_t)d->tiles_x * d->tiles_y;
    return d->dirty && tiles && (uint64_t)d->dirty_tiles * RC_VK_GPU_JPEG_DAMAGE_DIV <= tiles;
}

/* The readback thread: fences in submission order → external frames for the canvas (or the sink). */
static void *readback_main(void *arg) {
    rcanvas_vk *vk = arg;
    pthread_mutex_lock(&vk->mu);
    for (;;) {
        while (!vk->fifo_len && !vk->stop) pthread_cond_wait(&vk->cv, &vk->mu);
        if (!vk->fifo_len) break; /* stopping, nothing in flight */
        int idx = vk->fifo[vk->fifo_head];
        slot *s = &vk->slots[idx];
        int lost = vk->lost;
        pthread_mutex_unlock(&vk->mu);

        int64_t t0 = rc_now_us();
        /* a plain wait: sleeping until shortly before the fence (predicted from the last frames) was tried and
         * measured the same on an H100 host, 0.38 ms of this thread a 1080p frame either way; that time was the
         * fine-detail look's (rc_image_fine_detail), not a spinning wait */
        VkResult vr = lost ? VK_ERROR_DEVICE_LOST : vkWaitForFences(vk->device, 1, &s->fence, VK_TRUE, 100000000ull);
        if (vr == VK_TIMEOUT) { /* 100 ms: wait again (what was submitted is delivered, stopping or not) */
            pthread_mutex_lock(&vk->mu);
            continue;
        }
        int64_t t1 = rc_now_us();
        double copy_ms = 0;
        if (vr == VK_SUCCESS && vk->have_timestamps) {
            uint64_t ts[2];
            if (vkGetQueryPoolResults(vk->device, vk->queries, 2 * (uint32_t)idx, 2, sizeof ts, ts, sizeof ts[0],
                                      VK_QUERY_RESULT_64_BIT) == VK_SUCCESS)
                copy_ms = (double)(ts[1] - ts[0]) * vk->ts_period_ns / 1e6;
        }
        if (vr == VK_SUCCESS && !vk->coherent) {
            VkMappedMemoryRange mr = {.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE, .memory = s->mem, .offset = 0,
                                      .size = VK_WHOLE_SIZE};
            vr = vkInvalidateMappedMemoryRanges(vk->device, 1, &mr);
        }
        pthread_mutex_lock(&vk->mu);
        vk->fifo_head = (vk->fifo_head + 1) % MAX_RING;
        vk->fifo_len--;
        if (vr != VK_SUCCESS) {
            if (vr == VK_ERROR_DEVICE_LOST) vk->lost = 1;
            if (s->gpu_encoded) rc_gpu_jpeg_finish(s->gj), s->gpu_encoded = 0;
            damage_lost(vk, idx);
            s->state = SLOT_FREE;
            pthread_cond_broadcast(&vk->freed);
            vk->stats.failed++;
            pthread_mutex_unlock(&vk->mu);
            rc_log(vk->log, RCANVAS_LOG_ERROR, "vulkan: readback failed (VkResult %d)", (int)vr);
            pthread_mutex_lock(&vk->mu);
            continue;
        }
        s->state = SLOT_HELD;
        vk->stats.copy_ms = copy_ms;
        vk->stats.fence_wait_ms = (double)(t1 - t0) / 1000.0;
        vk->stats.submit_to_ready_ms = (double)(t1 - s->submit_us) / 1000.0;
        pthread_mutex_unlock(&vk->mu);

        s->gpu = (rc_gpu_frame){.dev = vk->device, .buf = s->buf};
        rc_image img = {.pixels = s->mapped, .width = s->width, .height = s->height, .pitch = s->pitch,
                        .format = s->format, .gpu = &s->gpu};
        rc_vk_damage_info dmg;
        damage_collect(vk, idx, &dmg);
        int64_t t2 = rc_now_us();
        const uint8_t *jpeg = NULL;
        size_t jlen = 0;
        int pr = RCANVAS_OK;
        int tiles_instead = s->gpu_encoded && damage_small(&dmg);
        int whole_gpu_jpeg = !vk->sink.deliver && s->gpu_encoded && !tiles_instead &&
                             rc_gpu_jpeg_result(s->gj, &jpeg, &jlen) == RCANVAS_OK;
        /* counted before the canvas (or the sink) sees the frame, all at once: a reader that saw the frame arrive
         * sees it counted, and sees how it was encoded with it */
        pthread_mutex_lock(&vk->mu);
        vk->stats.delivered++;
        vk->stats.gpu_encoded += whole_gpu_jpeg;
        vk->stats.gpu_read_image += whole_gpu_jpeg && s->gpu_read_image;
        vk->stats.gpu_jpeg_unused_damage += tiles_instead && !vk->sink.deliver;
        uint64_t n_gpu = vk->stats.gpu_encoded;
        pthread_mutex_unlock(&vk->mu);
        if (whole_gpu_jpeg && n_gpu == 1) rc_log(vk->log, RCANVAS_LOG_INFO, "vulkan: first frame encoded on the GPU (jpeg-gpu)");
        if (vk->sink.deliver) vk->sink.deliver(vk->sink.user, &img, &dmg, rc_vk_release_slot, s);
        else if (whole_gpu_jpeg)
            /* the GPU JPEG encoder made the whole frame, and much of it changed: it goes whole */
            pr = rc_canvas_present_external_encoded(vk->canvas, &img, rc_vk_release_slot, s, &rc_codec_jpeg_gpu,
                                                    jpeg, jlen);
        else
            pr = present_with_damage(vk->canvas, &img, rc_vk_release_slot, s, &dmg); /* CPU JPEG (or PNG) */
        if (pr != RCANVAS_OK && vk->dmg) rc_vk_damage_invalidate(vk->dmg); /* the canvas did not take it */
        if (s->gpu_encoded) { /* the canvas has copied the bytes: the encoder may take the next frame */
            rc_gpu_jpeg_finish(s->gj);
            s->gpu_encoded = 0;
        }
        int64_t t3 = rc_now_us();
        pthread_mutex_lock(&vk->mu);
        vk->stats.handoff_ms = (double)(t3 - t2) / 1000.0;
    }
    pthread_mutex_unlock(&vk->mu);
    return NULL;
}
