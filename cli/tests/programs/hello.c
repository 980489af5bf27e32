/* Says hello through puts(3), for wrap.c to wrap. */
#include <stdio.h>

int main(void) {
  puts("hello");
  return 0;
}
