/*
 * A plugin opened with RTLD_LOCAL (as Python opens its extensions) that
 * looks up one of its own symbols with dlsym(RTLD_DEFAULT, ...): the C
 * library searches the caller's scope too, so it finds it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>

int plugin_marker = 42;

const char *plugin_finds_itself(void) {
  int *p = dlsym(RTLD_DEFAULT, "plugin_marker");
  return p && *p == 42 ? "found" : "missing";
}
