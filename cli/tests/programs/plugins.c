/*
 * Opens the plugin given as argv[1] with RTLD_LOCAL and prints what its
 * own lookup through dlsym(RTLD_DEFAULT, ...) found.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv) {
  if (argc < 2)
    return 2;
  void *plugin = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!plugin) {
    fprintf(stderr, "%s\n", dlerror());
    return 2;
  }
  const char *(*finds)(void) =
      (const char *(*)(void))dlsym(plugin, "plugin_finds_itself");
  if (!finds)
    return 2;
  puts(finds());
  return 0;
}
