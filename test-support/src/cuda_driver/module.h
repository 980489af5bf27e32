/* module.c: images, modules and their functions. */
#ifndef SIM_CUDA_MODULE_H
#define SIM_CUDA_MODULE_H

#include "sim.h"

#pragma GCC visibility push(hidden)

extern int g_nmodules;
CUresult load_module(CUmodule *out, const void *image);
/* The file at `path`, read whole, with a NUL after it (for PTX): free()
 * it; NULL with *err CUDA_ERROR_FILE_NOT_FOUND when it cannot be read (as
 * cuModuleLoad says), CUDA_ERROR_INVALID_VALUE for a NULL path. */
void *read_image_file(const char *path, CUresult *err);
/* What cuModuleLoad and cuLibraryLoadFromFile share: the image in the file
 * at `path` (read_image_file's errors) handed to `load` with `out` and
 * `arg`, and freed after; CUDA_ERROR_INVALID_VALUE for a NULL `out`. */
CUresult load_image_file(const char *path, void *out,
                         CUresult (*load)(void *out, const void *image,
                                          void *arg),
                         void *arg);
void unload_module(const char *call, CUmodule m);

#pragma GCC visibility pop

#endif
