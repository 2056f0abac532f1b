/* SPDX-License-Identifier: MIT */
/*
 * vk_icd.h — for the Vulkan tests under LeakSanitizer: keep every Vulkan driver (ICD) loaded for the life of the
 * process, so that what a driver allocates once per process stays reachable from the driver's globals and LSan
 * sees the driver by name, instead of a "(<unknown module>)" leak after the loader dlclose()d it. Why, and the
 * evidence, in tests/lsan.supp.
 */
#ifndef RC_VK_ICD_H
#define RC_VK_ICD_H

/* In a sanitizer build (RCANVAS_SANITIZE): dlopen()s with RTLD_NODELETE the library named by each ICD manifest the
 * Vulkan loader would read (VK_DRIVER_FILES / VK_ICD_FILENAMES when set, else the icd.d directories), and prints
 * one line naming them. Call before the first vkCreateInstance. Returns how many are kept; 0 and nothing printed
 * in other builds. */
int test_vk_keep_drivers_loaded(void);

#endif
