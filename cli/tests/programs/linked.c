/*
 * A CUDA driver API program linked with -lcuda: loads the PTX given as
 * argv[1] (saxpy.ptx), copies its inputs synchronously, launches saxpy
 * three times on a stream of its own, copies the result back on the
 * stream, and prints `result <sum of y>`. Exits 1 when the result is
 * wrong, else with argv[2] (default 0). The computation is driver.h's
 * saxpy_program, which resolver.c makes too: this program's point is that
 * it reaches the driver by linking with it.
 */
#include "driver.h"

int main(int argc, char **argv) { return saxpy_program(argc, argv); }
