// Shared by the CUDA baselines: CU(expr) checks a CUDA runtime call and
// exits with the file, line, call and CUDA's error text when it fails.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CU(EXPR)                                                                                   \
  do {                                                                                             \
    cudaError_t e_ = (EXPR);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      std::fprintf(stderr, "error: %s:%d: %s: %s\n", __FILE__, __LINE__, #EXPR, cudaGetErrorString(e_)); \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)
