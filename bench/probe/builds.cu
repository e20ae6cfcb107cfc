// Probe 2: BabelStream copy/mul/triad of several builds of our PTX vs CUDA C++.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <string>
#include <algorithm>
#include <functional>
#define CK(x) do { CUresult r = (x); if (r) { const char* s; cuGetErrorString(r, &s); printf("%s: %s\n", #x, s); exit(1);} } while (0)
__global__ void copy_plain(const double *a, double *c, int n) { for (int i = threadIdx.x + blockDim.x * blockIdx.x; i < n; i += gridDim.x * blockDim.x) c[i] = a[i]; }
__global__ void mul_plain(double *b, const double *c, int n) { for (int i = threadIdx.x + blockDim.x * blockIdx.x; i < n; i += gridDim.x * blockDim.x) b[i] = 0.4 * c[i]; }
__global__ void triad_plain(double *a, const double *b, const double *c, int n) { for (int i = threadIdx.x + blockDim.x * blockIdx.x; i < n; i += gridDim.x * blockDim.x) a[i] = b[i] + 0.4 * c[i]; }
__global__ void fill(double *a, double *b, double *c, int n) { int i = threadIdx.x + blockDim.x * blockIdx.x; if (i < n) { a[i] = 0.1; b[i] = 0.2; c[i] = 0.0; } }
int main(int argc, char **argv) {
  cudaFree(0);
  int nm = argc - 1;
  std::vector<CUmodule> m(nm);
  for (int i = 0; i < nm; i++) CK(cuModuleLoad(&m[i], argv[i + 1]));
  for (int lg : {25, 28}) {
    size_t n = size_t(1) << lg;
    double *a, *b, *c;
    cudaMalloc(&a, n * 8); cudaMalloc(&b, n * 8); cudaMalloc(&c, n * 8);
    unsigned blocks = (n + 1023) / 1024;
    fill<<<blocks, 1024>>>(a, b, c, (int)n);
    cudaDeviceSynchronize();
    int ni = (int)n; unsigned long long nn = n; double s = 0.4;
    struct V { std::string name; double bytes; std::function<void()> f; std::vector<double> best; };
    auto drv = [&](int mi, const char *k, std::vector<void*> args) {
      CUfunction f; CK(cuModuleGetFunction(&f, m[mi], k));
      return [=]() mutable { CK(cuLaunchKernel(f, blocks, 1, 1, 1024, 1, 1, 0, 0, args.data(), 0)); };
    };
    std::vector<V> vs;
    vs.push_back({"cuda copy", 16.0 * n, [&] { copy_plain<<<blocks, 1024>>>(a, c, ni); }});
    for (int i = 0; i < nm; i++) vs.push_back({std::string(argv[i + 1]) + " copy", 16.0 * n, drv(i, "__offload_kernel_babelstream_copy_e4ca9329", {&a, &nn, &c, &nn})});
    vs.push_back({"cuda mul", 16.0 * n, [&] { mul_plain<<<blocks, 1024>>>(b, c, ni); }});
    for (int i = 0; i < nm; i++) vs.push_back({std::string(argv[i + 1]) + " mul", 16.0 * n, drv(i, "__offload_kernel_babelstream_mul_0eda91e8", {&b, &nn, &c, &nn, &s})});
    vs.push_back({"cuda triad", 24.0 * n, [&] { triad_plain<<<blocks, 1024>>>(a, b, c, ni); }});
    for (int i = 0; i < nm; i++) vs.push_back({std::string(argv[i + 1]) + " triad", 24.0 * n, drv(i, "__offload_kernel_babelstream_triad_08270314", {&a, &nn, &b, &nn, &c, &nn, &s})});
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    for (int round = 0; round < 5; round++)
      for (auto &v : vs) {
        float best = 1e30;
        for (int it = 0; it < 50; it++) {
          cudaEventRecord(e0); v.f(); cudaEventRecord(e1); cudaEventSynchronize(e1);
          float ms; cudaEventElapsedTime(&ms, e0, e1); if (it) best = std::min(best, ms);
        }
        v.best.push_back(best);
      }
    if (cudaGetLastError() != cudaSuccess) { printf("cuda error\n"); return 1; }
    printf("n = 2^%d (GB/s, best of 50 per round; median of 5 rounds)\n", lg);
    double base = 0;
    for (auto &v : vs) {
      std::sort(v.best.begin(), v.best.end());
      double gbs = v.bytes / (v.best[2] * 1e-3) / 1e9;
      if (v.name.rfind("cuda", 0) == 0) base = gbs;
      printf("  %-28s %8.1f  ratio %.3f\n", v.name.c_str(), gbs, gbs / base);
    }
    cudaFree(a); cudaFree(b); cudaFree(c);
  }
  return 0;
}
