// CHECK for the fabric tests written in C: prints the failing condition's place and message
// and counts it in `failures`, which the test defines; main() exits non-zero when it is not 0.
#pragma once

#include <stdio.h>

#define CHECK(cond, ...)                                   \
  do {                                                     \
    if (!(cond)) {                                         \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                        \
      fprintf(stderr, "\n");                               \
      ++failures;                                          \
    }                                                      \
  } while (0)
