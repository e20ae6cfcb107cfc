// Probe: does ld.global.nc (LDG.CONSTANT) cost bandwidth on streaming kernels?
#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <algorithm>
#include <functional>
#define CK(x) do { CUresult r = (x); if (r) { const char* s; cuGetErrorString(r, &s); printf("%s: %s\n", #x, s); exit(1);} } while (0)
__global__ void copy_plain(const double *a, double *c, int n) { for (int i = threadIdx.x + blockDim.x * blockIdx.x; i < n; i += gridDim.x * blockDim.x) c[i] = a[i]; }
__global__ void copy_ldg(const double *__restrict__ a, double *__restrict__ c, int n) { for (int i = threadIdx.x + blockDim.x * blockIdx.x; i < n; i += gridDim.x * blockDim.x) c[i] = __ldg(&a[i]); }
__global__ void copy_64(const double *a, double *c, size_t n) { for (size_t i = threadIdx.x + (size_t)blockDim.x * blockIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) c[i] = a[i]; }
__global__ void mul_plain(double *b, const double *c, int n) { for (int i = threadIdx.x + blockDim.x * blockIdx.x; i < n; i += gridDim.x * blockDim.x) b[i] = 0.4 * c[i]; }
__global__ void triad_plain(double *a, const double *b, const double *c, int n) { for (int i = threadIdx.x + blockDim.x * blockIdx.x; i < n; i += gridDim.x * blockDim.x) a[i] = b[i] + 0.4 * c[i]; }
__global__ void fill(double *a, double *b, double *c, int n) { int i = threadIdx.x + blockDim.x * blockIdx.x; if (i < n) { a[i] = 0.1; b[i] = 0.2; c[i] = 0.0; } }

int main(int argc, char **argv) {
  cudaFree(0);
  CUmodule m[3];
  CK(cuModuleLoad(&m[0], argv[1]));
  CK(cuModuleLoad(&m[1], argv[2]));
  CK(cuModuleLoad(&m[2], argv[6]));
  const char *kcopy = argv[3], *kmul = argv[4], *ktriad = argv[5];
  for (int lg : {25, 28}) {
    size_t n = size_t(1) << lg;
    double *a, *b, *c;
    cudaMalloc(&a, n * 8); cudaMalloc(&b, n * 8); cudaMalloc(&c, n * 8);
    unsigned blocks = (n + 1023) / 1024;
    fill<<<blocks, 1024>>>(a, b, c, (int)n);
    cudaDeviceSynchronize();
    int ni = (int)n; unsigned long long nn = n; double s = 0.4; unsigned flag1 = 1;
    struct V { const char *name; double bytes; std::function<void()> f; std::vector<double> best; };
    auto drv = [&](int mi, const char *k, std::vector<void*> args) {
      CUfunction f; CK(cuModuleGetFunction(&f, m[mi], k));
      return [=]() mutable { CK(cuLaunchKernel(f, blocks, 1, 1, 1024, 1, 1, 0, 0, args.data(), 0)); };
    };
    std::vector<V> vs;
    vs.push_back({"cuda copy (LDG)", 16.0 * n, [&] { copy_plain<<<blocks, 1024>>>(a, c, ni); }});
    vs.push_back({"cuda copy __ldg (LDG.CONSTANT)", 16.0 * n, [&] { copy_ldg<<<blocks, 1024>>>(a, c, ni); }});
    vs.push_back({"cuda copy size_t index", 16.0 * n, [&] { copy_64<<<blocks, 1024>>>(a, c, n); }});
    vs.push_back({"ours copy (ld.global.nc)", 16.0 * n, drv(0, kcopy, {&a, &nn, &c, &nn})});
    vs.push_back({"ours copy, nc removed", 16.0 * n, drv(1, kcopy, {&a, &nn, &c, &nn})});
    for (int k = 7; k < argc; k++) vs.push_back({argv[k], 16.0 * n, drv(2, argv[k], {&a, &nn, &c, &nn, &flag1})});
    vs.push_back({"cuda mul", 16.0 * n, [&] { mul_plain<<<blocks, 1024>>>(b, c, ni); }});
    vs.push_back({"ours mul (nc)", 16.0 * n, drv(0, kmul, {&b, &nn, &c, &nn, &s})});
    vs.push_back({"ours mul, nc removed", 16.0 * n, drv(1, kmul, {&b, &nn, &c, &nn, &s})});
    vs.push_back({"cuda triad", 24.0 * n, [&] { triad_plain<<<blocks, 1024>>>(a, b, c, ni); }});
    vs.push_back({"ours triad (nc)", 24.0 * n, drv(0, ktriad, {&a, &nn, &b, &nn, &c, &nn, &s})});
    vs.push_back({"ours triad, nc removed", 24.0 * n, drv(1, ktriad, {&a, &nn, &b, &nn, &c, &nn, &s})});
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
      if (v.name[0] == 'c' && v.name[5] != 'c') base = gbs; // cuda mul/triad baselines
      if (!strcmp(v.name, "cuda copy (LDG)")) base = gbs;
      printf("  %-34s %8.1f  ratio %.3f\n", v.name, gbs, gbs / base);
    }
    cudaFree(a); cudaFree(b); cudaFree(c);
  }
  return 0;
}
