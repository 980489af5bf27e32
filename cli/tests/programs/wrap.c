/*
 * A library preloaded after reprise's interposer that wraps puts(3) the
 * usual way: the next definition through dlsym(RTLD_NEXT, "puts"), looked
 * up in its constructor (which the loader runs before the interposer's
 * own initialisation) and again at the call. Were RTLD_NEXT searched past
 * the interposer instead of past this library, it would find this very
 * puts: the wrapper says so and exits.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int puts(const char *s);

typedef int (*puts_t)(const char *);
static puts_t early;

static puts_t next_puts(void) {
  puts_t next = (puts_t)dlsym(RTLD_NEXT, "puts");
  if (!next || next == puts) {
    fprintf(stderr, "wrap: dlsym(RTLD_NEXT, \"puts\") gave %s\n",
            next ? "the wrapper itself" : "nothing");
    exit(4);
  }
  return next;
}

__attribute__((constructor)) static void find_early(void) {
  early = next_puts();
}

int puts(const char *s) {
  puts_t next = next_puts();
  if (next != early) {
    fprintf(stderr, "wrap: RTLD_NEXT answered differently at the start\n");
    exit(5);
  }
  fputs("wrapped: ", stdout);
  return next(s);
}
