/*
 * A library preloaded after reprise's interposer that wraps puts(3) the
 * usual way: the next definition through dlsym(RTLD_NEXT, "puts"). Were
 * RTLD_NEXT searched past the interposer's dlsym instead of past this
 * library, it would find this very puts and recurse: the guard says so
 * and stops.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static int depth;

int puts(const char *s) {
  if (depth++ > 0) {
    fprintf(stderr, "wrap: puts recursed: dlsym(RTLD_NEXT) found the wrapper\n");
    exit(4);
  }
  int (*next)(const char *) = (int (*)(const char *))dlsym(RTLD_NEXT, "puts");
  if (!next) {
    fprintf(stderr, "wrap: dlsym(RTLD_NEXT, \"puts\") found nothing\n");
    exit(5);
  }
  fputs("wrapped: ", stdout);
  int r = next(s);
  depth--;
  return r;
}
