/* SPDX-License-Identifier: MIT */
/*
 * rcanvas_export.h — RCANVAS_API, the mark on every public function of rcanvas.
 *
 * The library is compiled with -fvisibility=hidden and RCANVAS_BUILDING_SHARED defined (CMakeLists.txt), so
 * librcanvas.so exports exactly the functions marked RCANVAS_API and none of its internal rc_* ones. For a program
 * that uses rcanvas (shared or static), and for compilers without GCC-style attributes, RCANVAS_API is empty: on
 * ELF platforms a declaration without an attribute binds to the library's default-visibility symbol as usual.
 * Define RCANVAS_API before including rcanvas.h to override.
 */
#ifndef RCANVAS_EXPORT_H
#define RCANVAS_EXPORT_H

#ifndef RCANVAS_API
#if defined(RCANVAS_BUILDING_SHARED) && (defined(__GNUC__) || defined(__clang__))
#define RCANVAS_API __attribute__((visibility("default")))
#else
#define RCANVAS_API
#endif
#endif

#endif /* RCANVAS_EXPORT_H */
