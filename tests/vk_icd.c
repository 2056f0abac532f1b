/* SPDX-License-Identifier: MIT */
/*
 * vk_icd.c — keeps the Vulkan drivers loaded for the process lifetime in sanitizer builds (see vk_icd.h and
 * tests/lsan.supp). Finds the ICD manifests where the Vulkan loader looks on Linux, reads each one's
 * ICD.library_path, resolves it as the loader does (relative to the manifest when it holds a '/', else through the
 * dynamic linker's search path) and dlopen()s it with RTLD_NODELETE: the loader's own dlopen then returns this
 * same object, and its dlclose at vkDestroyInstance no longer unmaps it.
 */
#include "vk_icd.h"

#ifndef RCANVAS_SANITIZE

int test_vk_keep_drivers_loaded(void) { return 0; }

#else

#include <cjson/cJSON.h>
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imageio.h"

typedef struct kept {
    char libs[2048];
    int n;
} kept;

static void keep_manifest(kept *k, const char *json_path) {
    uint8_t *data;
    size_t len;
    if (rc_read_file(json_path, &data, &len)) return;
    cJSON *root = cJSON_ParseWithLength((const char *)data, len);
    free(data);
    const cJSON *icd = cJSON_GetObjectItemCaseSensitive(root, "ICD");
    const cJSON *lib = cJSON_GetObjectItemCaseSensitive(icd, "library_path");
    if (cJSON_IsString(lib) && lib->valuestring[0]) {
        char path[4096];
        const char *slash = strrchr(json_path, '/');
        if (lib->valuestring[0] != '/' && strchr(lib->valuestring, '/') && slash)
            snprintf(path, sizeof path, "%.*s/%s", (int)(slash - json_path), json_path, lib->valuestring);
        else snprintf(path, sizeof path, "%s", lib->valuestring);
        char token[4100];
        snprintf(token, sizeof token, " %s ", path);
        if (!strstr(k->libs, token)) { /* a driver named by two manifests (or two search paths): once */
            if (dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE)) {
                size_t l = strlen(k->libs);
                snprintf(k->libs + l, sizeof k->libs - l, "%s", l ? token + 1 : token);
                k->n++;
            } else {
                printf("vulkan driver %s (from %s) does not load: %s\n", path, json_path, dlerror());
            }
        }
    }
    cJSON_Delete(root);
}

/* A manifest file, or every *.json of a directory. */
static void keep_path(kept *k, const char *p) {
    DIR *d = opendir(p);
    if (!d) {
        keep_manifest(k, p);
        return;
    }
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l < 6 || strcmp(de->d_name + l - 5, ".json")) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", p, de->d_name);
        keep_manifest(k, path);
    }
    closedir(d);
}

/* Each entry of a ':'-separated list, with suffix appended. */
static void keep_list(kept *k, const char *list, const char *suffix) {
    while (list && *list) {
        const char *end = strchr(list, ':');
        size_t n = end ? (size_t)(end - list) : strlen(list);
        if (n) {
            char p[4096];
            snprintf(p, sizeof p, "%.*s%s", (int)n, list, suffix);
            keep_path(k, p);
        }
        list = end ? end + 1 : NULL;
    }
}

int test_vk_keep_drivers_loaded(void) {
    kept k = {.n = 0};
    k.libs[0] = 0;
    const char *only = getenv("VK_DRIVER_FILES");
    if (!only || !*only) only = getenv("VK_ICD_FILENAMES");
    if (only && *only) keep_list(&k, only, "");
    else {
        /* the loader's search order on Linux (docs/LoaderInterfaceArchitecture.md, "Linux Layer/ICD discovery") */
        const char *home = getenv("HOME"), *e;
        char p[4096];
        if ((e = getenv("XDG_CONFIG_HOME")) && *e) keep_list(&k, e, "/vulkan/icd.d");
        else if (home) snprintf(p, sizeof p, "%s/.config/vulkan/icd.d", home), keep_path(&k, p);
        keep_list(&k, (e = getenv("XDG_CONFIG_DIRS")) && *e ? e : "/etc/xdg", "/vulkan/icd.d");
        keep_path(&k, "/etc/vulkan/icd.d");
        if ((e = getenv("XDG_DATA_HOME")) && *e) keep_list(&k, e, "/vulkan/icd.d");
        else if (home) snprintf(p, sizeof p, "%s/.local/share/vulkan/icd.d", home), keep_path(&k, p);
        keep_list(&k, (e = getenv("XDG_DATA_DIRS")) && *e ? e : "/usr/local/share:/usr/share", "/vulkan/icd.d");
    }
    const char *add = getenv("VK_ADD_DRIVER_FILES");
    if (add && *add) keep_list(&k, add, "");
    size_t l = strlen(k.libs);
    printf("sanitizer build: %d Vulkan driver(s) kept loaded for the process lifetime (see tests/lsan.supp):%.*s\n",
           k.n, (int)(l ? l - 1 : 0), k.libs);
    return k.n;
}

#endif
