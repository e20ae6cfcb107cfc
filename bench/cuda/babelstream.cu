// BabelStream in CUDA C++: the baseline for bench/babelstream.
//
// Our own code after the published algorithm and the structure of
// UoB-HPC/BabelStream 5.0's CUDA version: grid-stride kernels over three
// double arrays, TBSIZE threads per block and ceil(n / TBSIZE) blocks, a dot
// kernel of 4 blocks per multiprocessor reducing in shared memory, partial
// sums in pinned host memory added on the host; a non-blocking stream,
// each launch followed by cudaStreamSynchronize and timed on the host.
// Validation as BabelStream's check_solution. Output: the same CSV rows as
// the Rust version (`--csv`).
//
//   nvcc -O3 -arch=sm_90 -o babelstream-cuda babelstream.cu
//   ./babelstream-cuda [-s N] [-n TIMES] [--block B] [--csv]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "check.h"

static const double startA = 0.1, startB = 0.2, startC = 0.0, startScalar = 0.4;
#ifndef TBSIZE
#define TBSIZE 1024
#endif

__global__ void init_kernel(double *a, double *b, double *c, double ia, double ib, double ic, int n) {
  for (int i = threadIdx.x + blockDim.x * blockIdx.x; i < n; i += gridDim.x * blockDim.x) {
    a[i] = ia;
    b[i] = ib;
    c[i] = ic;
  }
}
__global__ void copy_kernel(const double *a, double *c, int n) {
  for (int i = threadIdx.x + blockDim.x * blockIdx.x; i < n; i += gridDim.x * blockDim.x) c[i] = a[i];
}
__global__ void mul_kernel(double *b, const double *c, int n) {
  const double scalar = startScalar;
  for (int i = threadIdx.x + blockDim.x * blockIdx.x; i < n; i += gridDim.x * blockDim.x) b[i] = scalar * c[i];
}
__global__ void add_kernel(const double *a, const double *b, double *c, int n) {
  for (int i = threadIdx.x + blockDim.x * blockIdx.x; i < n; i += gridDim.x * blockDim.x) c[i] = a[i] + b[i];
}
__global__ void triad_kernel(double *a, const double *b, const double *c, int n) {
  const double scalar = startScalar;
  for (int i = threadIdx.x + blockDim.x * blockIdx.x; i < n; i += gridDim.x * blockDim.x) a[i] = b[i] + scalar * c[i];
}
__global__ void nstream_kernel(double *a, const double *b, const double *c, int n) {
  const double scalar = startScalar;
  for (int i = threadIdx.x + blockDim.x * blockIdx.x; i < n; i += gridDim.x * blockDim.x) a[i] += b[i] + scalar * c[i];
}
__global__ void dot_kernel(const double *a, const double *b, double *sums, int n) {
  __shared__ double smem[TBSIZE];
  double tmp = 0.0;
  const size_t t = threadIdx.x;
  for (int i = t + (size_t)blockDim.x * blockIdx.x; i < n; i += gridDim.x * blockDim.x) tmp += a[i] * b[i];
  smem[t] = tmp;
  for (int offset = blockDim.x / 2; offset > 0; offset /= 2) {
    __syncthreads();
    if (t < offset) smem[t] += smem[t + offset];
  }
  if (t == 0) sums[blockIdx.x] = smem[t];
}

struct Timings {
  const char *name;
  double bytes;
  std::vector<double> t;
  void stats(double &mn, double &mx, double &avg) const {
    mn = *std::min_element(t.begin() + 1, t.end());
    mx = *std::max_element(t.begin() + 1, t.end());
    avg = 0;
    for (size_t i = 1; i < t.size(); i++) avg += t[i];
    avg /= (t.size() - 1);
  }
};

template <class F> static void timed(Timings &k, F f) {
  auto t0 = std::chrono::high_resolution_clock::now();
  f();
  auto t1 = std::chrono::high_resolution_clock::now();
  k.t.push_back(std::chrono::duration<double>(t1 - t0).count());
}

static void check(unsigned times, bool nstream, const std::vector<double> &a, const std::vector<double> &b,
                  const std::vector<double> &c, const double *sum, std::vector<std::string> &fails) {
  double ga = startA, gb = startB, gc = startC;
  const double scalar = startScalar;
  for (unsigned i = 0; i < times; i++) {
    if (nstream) {
      ga += gb + scalar * gc;
    } else {
      gc = ga;
      gb = scalar * gc;
      gc = ga + gb;
      ga = gb + scalar * gc;
    }
  }
  double goldSum = ga * gb * a.size();
  auto err = [](const std::vector<double> &v, double g) {
    double s = 0;
    for (double x : v) s += std::fabs(x - g);
    return s / v.size();
  };
  double epsi = std::numeric_limits<double>::epsilon() * 100.0;
  const char *names[3] = {"a", "b", "c"};
  const std::vector<double> *vs[3] = {&a, &b, &c};
  double gs[3] = {ga, gb, gc};
  char buf[256];
  for (int k = 0; k < 3; k++) {
    double e = err(*vs[k], gs[k]);
    if (e > epsi) {
      std::snprintf(buf, sizeof buf, "%svalidation failed on %s[]: average error %g", nstream ? "nstream: " : "", names[k], e);
      fails.push_back(buf);
    }
  }
  if (sum) {
    double e = std::fabs((*sum - goldSum) / goldSum);
    if (e > 1.0e-8) {
      std::snprintf(buf, sizeof buf, "validation failed on sum: error %g", e);
      fails.push_back(buf);
    }
  }
}

int main(int argc, char **argv) {
  long long n = 1 << 25;
  unsigned times = 100;
  bool csv = false;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if ((a == "-s" || a == "--arraysize") && i + 1 < argc) n = std::atoll(argv[++i]);
    else if ((a == "-n" || a == "--numtimes") && i + 1 < argc) times = std::atoi(argv[++i]);
    else if (a == "--csv") csv = true;
    else {
      std::fprintf(stderr, "usage: %s [-s N] [-n TIMES] [--csv]\n", argv[0]);
      return 2;
    }
  }
  if (n < 1 || n > 2147483647LL || times < 2) {
    std::fprintf(stderr, "error: need 1 <= N <= 2^31-1 and TIMES >= 2\n");
    return 2;
  }
  cudaStream_t stream;
  CU(cudaSetDevice(0));
  CU(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaDeviceProp props;
  CU(cudaGetDeviceProperties(&props, 0));
  const int dot_blocks = props.multiProcessorCount * 4;
  const size_t bytes = sizeof(double) * n;
  double *d_a, *d_b, *d_c, *sums;
  CU(cudaMalloc(&d_a, bytes));
  CU(cudaMalloc(&d_b, bytes));
  CU(cudaMalloc(&d_c, bytes));
  CU(cudaHostAlloc(&sums, sizeof(double) * dot_blocks, cudaHostAllocDefault));
  const int nn = (int)n;
  const size_t blocks = (n + TBSIZE - 1) / TBSIZE;
  if (!csv) {
    std::printf("BabelStream (CUDA baseline)\nDevice: %s\nRunning kernels %u times, precision: double\n", props.name, times);
    std::printf("Array size: %.1f MB\nReduction kernel config: %d groups of size %d\n", n * 8e-6, dot_blocks, TBSIZE);
  }
  auto sync = [&] {
    CU(cudaPeekAtLastError());
    CU(cudaStreamSynchronize(stream));
  };
  auto init = [&] {
    init_kernel<<<blocks, TBSIZE, 0, stream>>>(d_a, d_b, d_c, startA, startB, startC, nn);
    sync();
  };
  auto read = [&](std::vector<double> &a, std::vector<double> &b, std::vector<double> &c) {
    CU(cudaMemcpy(a.data(), d_a, bytes, cudaMemcpyDeviceToHost));
    CU(cudaMemcpy(b.data(), d_b, bytes, cudaMemcpyDeviceToHost));
    CU(cudaMemcpy(c.data(), d_c, bytes, cudaMemcpyDeviceToHost));
  };
  init();
  Timings t[6] = {{"copy", 16.0 * n, {}}, {"mul", 16.0 * n, {}},  {"add", 24.0 * n, {}},
                  {"triad", 24.0 * n, {}}, {"dot", 16.0 * n, {}}, {"nstream", 32.0 * n, {}}};
  double sum = 0;
  for (unsigned k = 0; k < times; k++) {
    timed(t[0], [&] { copy_kernel<<<blocks, TBSIZE, 0, stream>>>(d_a, d_c, nn); sync(); });
    timed(t[1], [&] { mul_kernel<<<blocks, TBSIZE, 0, stream>>>(d_b, d_c, nn); sync(); });
    timed(t[2], [&] { add_kernel<<<blocks, TBSIZE, 0, stream>>>(d_a, d_b, d_c, nn); sync(); });
    timed(t[3], [&] { triad_kernel<<<blocks, TBSIZE, 0, stream>>>(d_a, d_b, d_c, nn); sync(); });
    timed(t[4], [&] {
      dot_kernel<<<dot_blocks, TBSIZE, 0, stream>>>(d_a, d_b, sums, nn);
      sync();
      double s = 0;
      for (int i = 0; i < dot_blocks; i++) s += sums[i];
      sum = s;
    });
  }
  std::vector<double> a(n), b(n), c(n);
  std::vector<std::string> fails;
  read(a, b, c);
  check(times, false, a, b, c, &sum, fails);
  init();
  for (unsigned k = 0; k < times; k++)
    timed(t[5], [&] { nstream_kernel<<<blocks, TBSIZE, 0, stream>>>(d_a, d_b, d_c, nn); sync(); });
  read(a, b, c);
  check(times, true, a, b, c, nullptr, fails);

  for (auto &k : t) {
    double mn, mx, avg;
    k.stats(mn, mx, avg);
    if (csv) {
      std::printf("babelstream,cuda,default,%s,%lld,gbytes_per_sec,%.3f\n", k.name, n, k.bytes / mn * 1e-9);
      std::printf("babelstream,cuda,default,%s,%lld,avg_gbytes_per_sec,%.3f\n", k.name, n, k.bytes / avg * 1e-9);
    } else {
      std::printf("%-12s%-12.3f%-12.5f%-12.5f%-12.5f\n", k.name, k.bytes / mn * 1e-6, mn, mx, avg);
    }
  }
  if (csv) std::printf("babelstream,cuda,default,validation,%lld,valid,%d\n", n, fails.empty() ? 1 : 0);
  for (auto &f : fails) std::fprintf(stderr, "%s\n", f.c_str());
  CU(cudaFree(d_a));
  CU(cudaFree(d_b));
  CU(cudaFree(d_c));
  CU(cudaFreeHost(sums));
  return fails.empty() ? 0 : 1;
}
