// Graph replay of one kernel from two compilers in one harness (issue 11):
// CUDA C's `inc` (nvcc) against offload's `inc` (rustc + LLVM NVPTX, the PTX
// of bench/async), both loaded with cuModuleLoadData into the same context,
// launched with cuLaunchKernel into captured graphs of G launches (a
// dependent ping-pong chain over 2^K floats), replayed R times. Whatever
// differs between the two rows is the kernels' code, nothing of either
// runtime.
//
//     nvcc -O3 -arch=sm_90 -o foreign-kernel foreign-kernel.cu -lcuda
//     ./foreign-kernel NVCC_PTX OURS_PTX OURS_SYMBOL [K=16] [G=100] [R=100] [REPS=7]
//
// NVCC_PTX: `nvcc -ptx` of bench/cuda/async.cu (symbol `inc`); OURS_PTX:
// the device image's PTX of bench/async (symbol __offload_kernel_..._inc_...),
// whose parameters are (x, len, y, len, launch shape = 1 for 1-D launches).
// Prints µs per launch (median of REPS) for each and their ratio; checks
// both chains' results (x[i] + G*R exactly).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda.h>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#define CK(x)                                                                                                          \
  do {                                                                                                                 \
    CUresult r_ = (x);                                                                                                 \
    if (r_ != CUDA_SUCCESS) {                                                                                          \
      const char *s_ = nullptr;                                                                                        \
      cuGetErrorName(r_, &s_);                                                                                         \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, s_ ? s_ : "?");                                  \
      std::exit(1);                                                                                                    \
    }                                                                                                                  \
  } while (0)

static std::string slurp(const char *path) {
  std::ifstream f(path);
  if (!f) {
    std::fprintf(stderr, "cannot read %s\n", path);
    std::exit(2);
  }
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// µs per launch of `f` in graphs of g launches replayed r times (median of
// reps), and whether the result is exact. `ours` adds the launch-shape
// parameter.
static double run(CUfunction f, bool ours, size_t n, unsigned g, unsigned r, unsigned reps, bool *ok) {
  CUstream s;
  CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUdeviceptr x, y;
  CK(cuMemAlloc(&x, n * 4));
  CK(cuMemAlloc(&y, n * 4));
  std::vector<float> h(n);
  for (size_t i = 0; i < n; i++) h[i] = (float)(i % 1000);
  unsigned long long len = n;
  unsigned shape = 1, block = 256, grid = (unsigned)((n + block - 1) / block);
  void *ab[] = {&x, &len, &y, &len, &shape};
  void *ba[] = {&y, &len, &x, &len, &shape};
  CUgraph graph;
  CUgraphExec exec;
  CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  for (unsigned i = 0; i < g / 2; i++) {
    CK(cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, s, ab, nullptr));
    CK(cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, s, ba, nullptr));
  }
  CK(cuStreamEndCapture(s, &graph));
  CK(cuGraphInstantiate(&exec, graph, 0));
  // FK_DOT=PREFIX: each kernel's graph, verbose DOT, to PREFIX-ours.dot /
  // PREFIX-nvcc.dot (cuGraphDebugDotPrint), to compare with the graph
  // offload's runtime captures (async-bench --raw-capture-dot).
  if (getenv("FK_DOT")) {
    std::string path = std::string(getenv("FK_DOT")) + (ours ? "-ours.dot" : "-nvcc.dot");
    CK(cuGraphDebugDotPrint(graph, path.c_str(), 1));
  }
  std::vector<double> t;
  *ok = true;
  for (unsigned rep = 0; rep <= reps; rep++) {
    CK(cuMemcpyHtoD(x, h.data(), n * 4));
    CK(cuCtxSynchronize());
    auto t0 = std::chrono::steady_clock::now();
    for (unsigned i = 0; i < r; i++) CK(cuGraphLaunch(exec, s));
    CK(cuStreamSynchronize(s));
    double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    if (rep == 0) {
      std::vector<float> out(n);
      CK(cuMemcpyDtoH(out.data(), x, n * 4));
      for (size_t i = 0; i < n; i++)
        if (out[i] != h[i] + (float)g * r) *ok = false;
    } else {
      t.push_back(us / ((double)g * r));
    }
  }
  CK(cuGraphExecDestroy(exec));
  CK(cuGraphDestroy(graph));
  CK(cuMemFree(x));
  CK(cuMemFree(y));
  CK(cuStreamDestroy(s));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int main(int argc, char **argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s NVCC_PTX OURS_PTX OURS_SYMBOL [K] [G] [R] [REPS]\n", argv[0]);
    return 2;
  }
  unsigned k = argc > 4 ? atoi(argv[4]) : 16, g = argc > 5 ? atoi(argv[5]) : 100, r = argc > 6 ? atoi(argv[6]) : 100,
           reps = argc > 7 ? atoi(argv[7]) : 7;
  CK(cuInit(0));
  CUdevice dev;
  CK(cuDeviceGet(&dev, 0));
  CUcontext ctx;
  CK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(cuCtxSetCurrent(ctx));
  std::string a = slurp(argv[1]), b = slurp(argv[2]);
  CUmodule ma, mb;
  CK(cuModuleLoadData(&ma, a.c_str()));
  CK(cuModuleLoadData(&mb, b.c_str()));
  CUfunction fa, fb;
  CK(cuModuleGetFunction(&fa, ma, "inc"));
  CK(cuModuleGetFunction(&fb, mb, argv[3]));
  // What offload's runtime does to a context before any launch, one step
  // at a time (FK_SETUP, a list): `stack` sets CU_LIMIT_STACK_SIZE to
  // 8 KiB; `slot` maps pinned host memory for the panic record and stores
  // its device address in the image's __offload_global_panic_slot, as
  // runtime/cuda/recover.rs's PanicSlot::install does.
  std::string setup = getenv("FK_SETUP") ? getenv("FK_SETUP") : "";
  if (setup.find("stack") != std::string::npos) CK(cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 8192));
  if (setup.find("slot") != std::string::npos) {
    CUdeviceptr global;
    size_t size;
    CK(cuModuleGetGlobal(&global, &size, mb, "__offload_global_panic_slot"));
    void *host;
    CK(cuMemHostAlloc(&host, 4096, CU_MEMHOSTALLOC_DEVICEMAP));
    std::memset(host, 0, 4096);
    CUdeviceptr dev;
    CK(cuMemHostGetDevicePointer(&dev, host, 0));
    CK(cuMemcpyHtoD(global, &dev, 8));
    CK(cuCtxSynchronize());
  }
  std::printf("setup: %s\n", setup.empty() ? "(none)" : setup.c_str());
  // CUDA C's inc takes four parameters; the fifth pointer is ignored by it
  // (cuLaunchKernel reads as many as the function declares).
  size_t n = (size_t)1 << k;
  bool oka, okb;
  double ta = 0, tb = 0;
  // Alternate which goes first, three rounds, median per side.
  std::vector<double> va, vb;
  for (int round = 0; round < 3; round++) {
    if (round % 2 == 0) {
      va.push_back(run(fa, false, n, g, r, reps, &oka));
      vb.push_back(run(fb, true, n, g, r, reps, &okb));
    } else {
      vb.push_back(run(fb, true, n, g, r, reps, &okb));
      va.push_back(run(fa, false, n, g, r, reps, &oka));
    }
  }
  std::sort(va.begin(), va.end());
  std::sort(vb.begin(), vb.end());
  ta = va[1];
  tb = vb[1];
  std::printf("graph replay, 2^%u floats, graphs of %u launches x %u replays, same harness and context:\n", k, g, r);
  std::printf("  nvcc's inc:    %.3f us/launch (result %s)\n", ta, oka ? "exact" : "WRONG");
  std::printf("  offload's inc: %.3f us/launch (result %s)\n", tb, okb ? "exact" : "WRONG");
  std::printf("  ratio offload/nvcc: %.3f\n", tb / ta);
  return oka && okb ? 0 : 1;
}
