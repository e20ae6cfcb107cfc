// Launch overhead baseline for `microbench launch`: one call at a time of
// an empty kernel through the raw driver API (cuLaunchKernel +
// cuStreamSynchronize on a non-blocking stream, as offload's CUDA backend
// does), through the runtime API (<<<>>> + cudaStreamSynchronize), with two
// pointer and two length parameters (what a kernel with two resident
// slices takes), and the launch alone (back-to-back launches, one
// synchronization, divided by the count). Prints the mean and median per
// call in microseconds.
//
//   nvcc -O3 -arch=sm_90 -o launch-cuda launch.cu -lcuda
//   ./launch-cuda [--iters N] [--csv]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda.h>
#include <vector>

#include "check.h"
#define DRV(EXPR)                                                                                  \
  do {                                                                                             \
    CUresult r_ = (EXPR);                                                                          \
    if (r_ != CUDA_SUCCESS) {                                                                      \
      const char *s_ = "";                                                                         \
      cuGetErrorName(r_, &s_);                                                                     \
      std::fprintf(stderr, "error: %s:%d: %s: %s\n", __FILE__, __LINE__, #EXPR, s_);               \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

extern "C" __global__ void empty() {}
extern "C" __global__ void empty_args(const float *x, unsigned long long nx, float *y, unsigned long long ny) {}

static bool csv = false;

template <class F> static void bench(const char *name, int iters, F f) {
  for (int i = 0; i < iters / 10 + 1; i++) f();
  std::vector<double> t(iters);
  for (int i = 0; i < iters; i++) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    t[i] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  double mean = 0;
  for (double x : t) mean += x;
  mean /= iters;
  std::sort(t.begin(), t.end());
  double med = iters % 2 ? t[iters / 2] : (t[iters / 2 - 1] + t[iters / 2]) / 2;
  if (csv) {
    std::printf("launch,cuda,default,%s,0,us_mean,%.4f\n", name, mean * 1e6);
    std::printf("launch,cuda,default,%s,0,us_median,%.4f\n", name, med * 1e6);
  } else {
    std::printf("launch    %-22s mean %8.3f us  median %8.3f us\n", name, mean * 1e6, med * 1e6);
  }
}

int main(int argc, char **argv) {
  int iters = 20000;
  for (int i = 1; i < argc; i++) {
    if (!std::strcmp(argv[i], "--csv")) csv = true;
    else if (!std::strcmp(argv[i], "--iters") && i + 1 < argc) iters = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: %s [--iters N] [--csv]\n", argv[0]);
      return 2;
    }
  }
  if (iters < 1) return 2;
  CU(cudaSetDevice(0));
  CU(cudaFree(0));  // create the primary context
  CUfunction f_empty, f_args;
  CU(cudaGetFuncBySymbol(&f_empty, (const void *)empty));
  CU(cudaGetFuncBySymbol(&f_args, (const void *)empty_args));
  CUstream s;
  DRV(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  float *x, *y;
  CU(cudaMalloc(&x, 1024));
  CU(cudaMalloc(&y, 1024));
  unsigned long long nx = 256, ny = 256;
  void *params[] = {&x, &nx, &y, &ny};

  bench("empty", iters, [&] {
    DRV(cuLaunchKernel(f_empty, 1, 1, 1, 1, 1, 1, 0, s, nullptr, nullptr));
    DRV(cuStreamSynchronize(s));
  });
  bench("resident_args", iters, [&] {
    DRV(cuLaunchKernel(f_args, 1, 1, 1, 1, 1, 1, 0, s, params, nullptr));
    DRV(cuStreamSynchronize(s));
  });
  bench("runtime_empty", iters, [&] {
    empty<<<1, 1, 0, (cudaStream_t)s>>>();
    CU(cudaStreamSynchronize((cudaStream_t)s));
  });
  // Launch alone: 100 launches back to back, one synchronization.
  bench("launch_only_x100", iters / 100 + 1, [&] {
    for (int i = 0; i < 100; i++) DRV(cuLaunchKernel(f_empty, 1, 1, 1, 1, 1, 1, 0, s, nullptr, nullptr));
    DRV(cuStreamSynchronize(s));
  });
  return 0;
}
