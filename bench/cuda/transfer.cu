// Host <-> device transfer baseline for `microbench transfer`: cudaMemcpy of
// MIB MiB (1024 by default) between a device buffer and host memory, from
// pageable memory (malloc, touched first) and from pinned memory
// (cudaMallocHost); the median of ITERS copies after one untimed copy, in
// GB/s (1e9 bytes).
//
//   nvcc -O3 -arch=sm_90 -o transfer-cuda transfer.cu
//   ./transfer-cuda [--mib M] [--iters N] [--csv]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "check.h"

int main(int argc, char **argv) {
  long long mib = 1024;
  int iters = 10;
  bool csv = false;
  for (int i = 1; i < argc; i++) {
    if (!std::strcmp(argv[i], "--csv")) csv = true;
    else if (!std::strcmp(argv[i], "--mib") && i + 1 < argc) mib = std::atoll(argv[++i]);
    else if (!std::strcmp(argv[i], "--iters") && i + 1 < argc) iters = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: %s [--mib M] [--iters N] [--csv]\n", argv[0]);
      return 2;
    }
  }
  if (mib < 1 || iters < 1) return 2;
  const size_t bytes = size_t(mib) << 20;
  CU(cudaSetDevice(0));
  void *dev;
  CU(cudaMalloc(&dev, bytes));
  char *pageable = (char *)std::malloc(bytes);
  std::memset(pageable, 1, bytes);
  char *pinned;
  CU(cudaMallocHost(&pinned, bytes));
  std::memset(pinned, 2, bytes);
  auto run = [&](const char *name, void *dst, const void *src, cudaMemcpyKind kind) {
    CU(cudaMemcpy(dst, src, bytes, kind));
    std::vector<double> t(iters);
    for (int i = 0; i < iters; i++) {
      auto t0 = std::chrono::steady_clock::now();
      CU(cudaMemcpy(dst, src, bytes, kind));
      t[i] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    std::sort(t.begin(), t.end());
    double med = iters % 2 ? t[iters / 2] : (t[iters / 2 - 1] + t[iters / 2]) / 2;
    if (csv) std::printf("transfer,cuda,default,%s,%zu,gbytes_per_sec,%.4f\n", name, bytes, bytes / med * 1e-9);
    else std::printf("transfer  %-22s %8.2f GB/s\n", name, bytes / med * 1e-9);
  };
  run("htod_pageable", dev, pageable, cudaMemcpyHostToDevice);
  run("dtoh_pageable", pageable, dev, cudaMemcpyDeviceToHost);
  run("htod_pinned", dev, pinned, cudaMemcpyHostToDevice);
  run("dtoh_pinned", pinned, dev, cudaMemcpyDeviceToHost);
  CU(cudaFreeHost(pinned));
  std::free(pageable);
  CU(cudaFree(dev));
  return 0;
}
