// CUDA C baseline for `async-bench` (bench/async): the same three
// benchmarks with the same shapes, flags and CSV rows, written as a CUDA
// programmer would with streams and graphs. Our own code; it mirrors
// bench/async/src/main.rs variant by variant:
//
// - launches: a dependent chain of --launches kernels over 2^--log2-elems
//   floats, ping-pong y[i] = x[i] + 1 / x[i] = y[i] + 1, 256-thread blocks.
//   `blocking`: <<<>>> + cudaStreamSynchronize per launch (what offload's
//   blocking launch does); `queued`: <<<>>> on one non-blocking stream, one
//   cudaStreamSynchronize; `queued_driver`: the same with cuLaunchKernel
//   (the driver call offload makes); `graph`: --graph-len launches captured
//   once (cudaStreamBeginCapture, thread-local mode, as offload), replayed
//   with cudaGraphLaunch launches / graph-len times.
// - overlap: --mib MiB in --chunk-mib MiB chunks, each in its own
//   cudaHostAlloc buffer (as offload's PinnedBuffers), copied in, y = 2x + 1,
//   copied out. `blocking`: cudaMemcpy, kernel, cudaStreamSynchronize,
//   cudaMemcpy per chunk; `queues_K`: chunk c on stream c % K
//   (cudaStreamNonBlocking), cudaMemcpyAsync / kernel / cudaMemcpyAsync,
//   one pair of device buffers per stream, every stream synchronized at the
//   end: the overlapped pipeline of NVIDIA's "How to Overlap Data Transfers
//   in CUDA C/C++" (Harris, 2012), version 1.
// - jacobi: --jacobi-steps 5-point Jacobi steps on an --jacobi-n squared
//   grid with fixed edges, ping-pong buffers: `blocking`, `queued`,
//   `graph_all` (every step in one graph), `graph_2` (two steps, replayed).
//
// Every variant runs once untimed and is checked exactly (the chain's
// x + launches; every output element; the grid against a host Jacobi with
// the same float operations in the same order), then --reps times timed;
// rows are medians of the timed runs. Exits 1 if a check fails.
//
//   nvcc -O3 -arch=sm_90 -o async-cuda async.cu -lcuda
//   ./async-cuda [--only launches|overlap|jacobi] [--reps R] [--csv] ...
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda.h>
#include <string>
#include <thread>
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

typedef unsigned long long u64;
static const unsigned BLOCK = 256;

// A slice is passed as pointer and length, as offload passes `&[f32]`.
extern "C" __global__ void inc(const float *__restrict__ x, u64 nx, float *__restrict__ y, u64 ny) {
  u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < ny) y[i] = x[i] + 1.0f;
}

extern "C" __global__ void twice_plus_one(const float *__restrict__ x, u64 nx, float *__restrict__ y, u64 ny) {
  u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < ny) y[i] = 2.0f * x[i] + 1.0f;
}

extern "C" __global__ void jacobi(unsigned n, const float *__restrict__ a, u64 na, float *__restrict__ b, u64 nb) {
  u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < nb) {
    unsigned k = (unsigned)i, r = k / n, c = k % n;
    b[i] = (r == 0 || c == 0 || r + 1 == n || c + 1 == n) ? a[i]
                                                          : 0.25f * (((a[i - n] + a[i + n]) + a[i - 1]) + a[i + 1]);
  }
}

struct Args {
  std::string only;
  unsigned launches = 10000, log2_elems = 16, graph_len = 100;
  size_t mib = 1024, chunk_mib = 64;
  std::vector<int> queues = {1, 2, 3, 4};
  unsigned jacobi_n = 512, jacobi_steps = 500, reps = 5;
  size_t stack_bytes = 0; // 0: the CUDA default per-thread stack
  unsigned extra_streams = 0;
  bool csv = false;
};

static Args A;
static bool all_ok = true;

static double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void row(const char *bench, const std::string &c, size_t size, const char *metric, double value) {
  if (A.csv) {
    // With --extra-streams K the rows are CUDA C's with K more streams
    // (impl `cuda_xK`), beside the plain baseline's (`cuda`).
    std::string impl = A.extra_streams ? "cuda_x" + std::to_string(A.extra_streams) : "cuda";
    std::printf("%s,%s,default,%s,%zu,%s,%.4f\n", bench, impl.c_str(), c.c_str(), size, metric, value);
  } else
    std::printf("%-14s %-13s %11zu %-22s %12.4f\n", bench, c.c_str(), size, metric, value);
}

static void valid(const char *bench, const std::string &c, size_t size, bool ok, const char *what) {
  if (!ok) {
    std::fprintf(stderr, "error: %s %s: %s\n", bench, c.c_str(), what);
    all_ok = false;
  }
  row(bench, c, size, "valid", ok ? 1 : 0);
}

static unsigned blocks(size_t n) { return (unsigned)((n + BLOCK - 1) / BLOCK); }

// Runs `run` (returns its submit seconds) once untimed then `check`, then
// --reps times timed; fills total and submit seconds.
template <class Run, class Check>
static bool timed(Run run, Check check, std::vector<double> &total, std::vector<double> &submit) {
  bool ok = true;
  for (unsigned rep = 0; rep <= A.reps; rep++) {
    double t0 = now();
    double s = run(t0);
    double t = now() - t0;
    if (rep == 0) {
      ok = check();
    } else {
      total.push_back(t);
      submit.push_back(s);
    }
  }
  return ok;
}

static void launches() {
  unsigned l = A.launches, gl = A.graph_len;
  if (l == 0 || gl == 0 || l % 2 || gl % 2 || l % gl) {
    std::fprintf(stderr, "error: --launches and --graph-len must be even and --graph-len must divide --launches\n");
    std::exit(2);
  }
  const char *bench = "async_launch";
  size_t n = size_t(1) << A.log2_elems;
  std::vector<float> init(n), got(n);
  for (size_t i = 0; i < n; i++) init[i] = float(i % 1000);
  float *x, *y;
  CU(cudaMalloc(&x, n * 4));
  CU(cudaMalloc(&y, n * 4));
  cudaStream_t s;
  CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  // Every copy and memset on `s`, then a synchronize: see jacobi_bench.
  CU(cudaMemsetAsync(y, 0, n * 4, s));
  CU(cudaStreamSynchronize(s));
  CUfunction f;
  CU(cudaGetFuncBySymbol(&f, (const void *)inc));
  u64 nn = n;
  void *pxy[] = {&x, &nn, &y, &nn}, *pyx[] = {&y, &nn, &x, &nn};
  auto reset = [&] {
    CU(cudaMemcpyAsync(x, init.data(), n * 4, cudaMemcpyHostToDevice, s));
    CU(cudaStreamSynchronize(s));
  };
  auto check = [&] {
    CU(cudaMemcpyAsync(got.data(), x, n * 4, cudaMemcpyDeviceToHost, s));
    CU(cudaStreamSynchronize(s));
    for (size_t i = 0; i < n; i++)
      if (got[i] != init[i] + float(l)) return false;
    return true;
  };
  const char *what = "the chain's result differs from x + launches";
  auto per = [&](const std::vector<double> &t) { return median(t) / l * 1e6; };
  unsigned g = blocks(n);

  {
    std::vector<double> t, st;
    reset();
    bool ok = timed(
        [&](double) {
          for (unsigned k = 0; k < l / 2; k++) {
            inc<<<g, BLOCK, 0, s>>>(x, n, y, n);
            CU(cudaStreamSynchronize(s));
            inc<<<g, BLOCK, 0, s>>>(y, n, x, n);
            CU(cudaStreamSynchronize(s));
          }
          return 0.0;
        },
        check, t, st);
    row(bench, "blocking", n, "us_per_launch", per(t));
    valid(bench, "blocking", n, ok, what);
  }
  {
    std::vector<double> t, st;
    reset();
    bool ok = timed(
        [&](double t0) {
          for (unsigned k = 0; k < l / 2; k++) {
            inc<<<g, BLOCK, 0, s>>>(x, n, y, n);
            inc<<<g, BLOCK, 0, s>>>(y, n, x, n);
          }
          double sub = now() - t0;
          CU(cudaStreamSynchronize(s));
          return sub;
        },
        check, t, st);
    row(bench, "queued", n, "us_per_launch", per(t));
    row(bench, "queued", n, "us_submit_per_launch", per(st));
    valid(bench, "queued", n, ok, what);
  }
  {
    std::vector<double> t, st;
    reset();
    bool ok = timed(
        [&](double t0) {
          for (unsigned k = 0; k < l / 2; k++) {
            DRV(cuLaunchKernel(f, g, 1, 1, BLOCK, 1, 1, 0, (CUstream)s, pxy, nullptr));
            DRV(cuLaunchKernel(f, g, 1, 1, BLOCK, 1, 1, 0, (CUstream)s, pyx, nullptr));
          }
          double sub = now() - t0;
          CU(cudaStreamSynchronize(s));
          return sub;
        },
        check, t, st);
    row(bench, "queued_driver", n, "us_per_launch", per(t));
    row(bench, "queued_driver", n, "us_submit_per_launch", per(st));
    valid(bench, "queued_driver", n, ok, what);
  }
  {
    std::vector<double> t, st;
    reset();
    double t0 = now();
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CU(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (unsigned k = 0; k < gl / 2; k++) {
      inc<<<g, BLOCK, 0, s>>>(x, n, y, n);
      inc<<<g, BLOCK, 0, s>>>(y, n, x, n);
    }
    CU(cudaStreamEndCapture(s, &graph));
    CU(cudaGraphInstantiate(&exec, graph, 0));
    double inst = now() - t0;
    bool ok = timed(
        [&](double t0) {
          for (unsigned k = 0; k < l / gl; k++) CU(cudaGraphLaunch(exec, s));
          double sub = now() - t0;
          CU(cudaStreamSynchronize(s));
          return sub;
        },
        check, t, st);
    row(bench, "graph", n, "us_per_launch", per(t));
    row(bench, "graph", n, "us_submit_per_launch", per(st));
    row(bench, "graph", n, "ms_capture_instantiate", inst * 1e3);
    valid(bench, "graph", n, ok, what);
    CU(cudaGraphExecDestroy(exec));
    CU(cudaGraphDestroy(graph));
  }
  CU(cudaStreamDestroy(s));
  CU(cudaFree(x));
  CU(cudaFree(y));
}

// f(c) for every chunk c, one thread per chunk.
template <class F> static void par_chunks(size_t chunks, F f) {
  std::vector<std::thread> th;
  for (size_t c = 0; c < chunks; c++) th.emplace_back([&f, c] { f(c); });
  for (auto &t : th) t.join();
}

static void overlap() {
  if (A.chunk_mib == 0 || A.mib % A.chunk_mib) {
    std::fprintf(stderr, "error: --chunk-mib must divide --mib\n");
    std::exit(2);
  }
  const char *bench = "async_overlap";
  size_t bytes = A.mib << 20, chunks = A.mib / A.chunk_mib, len = (A.chunk_mib << 20) / 4;
  auto value = [&](size_t c, size_t i) { return float((c * len + i) % 4096); };
  std::vector<float *> in(chunks), out(chunks);
  for (size_t c = 0; c < chunks; c++) {
    CU(cudaHostAlloc(&in[c], len * 4, cudaHostAllocDefault));
    CU(cudaHostAlloc(&out[c], len * 4, cudaHostAllocDefault));
  }
  par_chunks(chunks, [&](size_t c) {
    for (size_t i = 0; i < len; i++) in[c][i] = value(c, i);
  });
  auto check = [&] {
    std::vector<size_t> bad(chunks);
    par_chunks(chunks, [&](size_t c) {
      for (size_t i = 0; i < len; i++) bad[c] += out[c][i] != 2.0f * value(c, i) + 1.0f;
    });
    for (size_t b : bad)
      if (b) return false;
    return true;
  };
  auto clear = [&] { par_chunks(chunks, [&](size_t c) { std::memset(out[c], 0, len * 4); }); };
  const char *what = "an output chunk differs from 2*input + 1";
  auto emit = [&](const std::string &c, const std::vector<double> &t, const std::vector<double> *st, bool ok) {
    double m = median(t);
    row(bench, c, bytes, "ms", m * 1e3);
    row(bench, c, bytes, "gbytes_per_sec", bytes / m * 1e-9);
    if (st) row(bench, c, bytes, "ms_submit", median(*st) * 1e3);
    valid(bench, c, bytes, ok, what);
  };
  unsigned g = blocks(len);
  {
    float *d_in, *d_out;
    CU(cudaMalloc(&d_in, len * 4));
    CU(cudaMalloc(&d_out, len * 4));
    cudaStream_t s;
    CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    clear();
    std::vector<double> t, st;
    bool ok = timed(
        [&](double) {
          for (size_t c = 0; c < chunks; c++) {
            CU(cudaMemcpy(d_in, in[c], len * 4, cudaMemcpyHostToDevice));
            twice_plus_one<<<g, BLOCK, 0, s>>>(d_in, len, d_out, len);
            CU(cudaStreamSynchronize(s));
            CU(cudaMemcpy(out[c], d_out, len * 4, cudaMemcpyDeviceToHost));
          }
          return 0.0;
        },
        check, t, st);
    emit("blocking", t, nullptr, ok);
    CU(cudaStreamDestroy(s));
    CU(cudaFree(d_in));
    CU(cudaFree(d_out));
  }
  for (int k : A.queues) {
    if (k <= 0) continue;
    std::vector<cudaStream_t> s(k);
    std::vector<float *> d_in(k), d_out(k);
    for (int j = 0; j < k; j++) {
      CU(cudaStreamCreateWithFlags(&s[j], cudaStreamNonBlocking));
      CU(cudaMalloc(&d_in[j], len * 4));
      CU(cudaMalloc(&d_out[j], len * 4));
    }
    clear();
    std::vector<double> t, st;
    bool ok = timed(
        [&](double t0) {
          for (size_t c = 0; c < chunks; c++) {
            int j = c % k;
            CU(cudaMemcpyAsync(d_in[j], in[c], len * 4, cudaMemcpyHostToDevice, s[j]));
            twice_plus_one<<<g, BLOCK, 0, s[j]>>>(d_in[j], len, d_out[j], len);
            CU(cudaMemcpyAsync(out[c], d_out[j], len * 4, cudaMemcpyDeviceToHost, s[j]));
          }
          double sub = now() - t0;
          for (int j = 0; j < k; j++) CU(cudaStreamSynchronize(s[j]));
          return sub;
        },
        check, t, st);
    emit("queues_" + std::to_string(k), t, &st, ok);
    for (int j = 0; j < k; j++) {
      CU(cudaStreamDestroy(s[j]));
      CU(cudaFree(d_in[j]));
      CU(cudaFree(d_out[j]));
    }
  }
  for (size_t c = 0; c < chunks; c++) {
    CU(cudaFreeHost(in[c]));
    CU(cudaFreeHost(out[c]));
  }
}

static void jacobi_bench() {
  unsigned steps = A.jacobi_steps, nn = A.jacobi_n;
  if (steps == 0 || steps % 2 || nn < 3) {
    std::fprintf(stderr, "error: --jacobi-steps must be even and positive, --jacobi-n at least 3\n");
    std::exit(2);
  }
  const char *bench = "async_jacobi";
  size_t n = nn, cells = n * n;
  std::vector<float> init(cells), want, got(cells);
  for (size_t i = 0; i < cells; i++) init[i] = i < n ? 1.0f : (i % n == 0 ? 0.5f : 0.0f);
  {
    std::vector<float> a = init, b = init;
    for (unsigned s = 0; s < steps; s++) {
      for (size_t r = 1; r + 1 < n; r++)
        for (size_t c = 1; c + 1 < n; c++) {
          size_t i = r * n + c;
          b[i] = 0.25f * (((a[i - n] + a[i + n]) + a[i - 1]) + a[i + 1]);
        }
      std::swap(a, b);
    }
    want = a;
  }
  float *a, *b;
  CU(cudaMalloc(&a, cells * 4));
  CU(cudaMalloc(&b, cells * 4));
  cudaStream_t s;
  CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  // reset and check copy on `s` and synchronize it, as offload's
  // copy_from_slice / to_vec are ordered with the queue's work and return
  // once the copy is done. Not cudaMemcpy: it runs on the legacy default
  // stream, which a cudaStreamNonBlocking stream does not synchronize
  // with, and from pageable memory to the device it returns "once the
  // pageable buffer has been copied to the staging memory ... the DMA to
  // final destination may not have completed" (CUDA Runtime API, "API
  // synchronization behavior"). The first kernels on `s` then raced with
  // reset's copy of `b` (the queued variant, launched at once, failed its
  // check; blocking's first launch loads the module and graphs capture
  // first, which hid the race).
  auto reset = [&] {
    CU(cudaMemcpyAsync(a, init.data(), cells * 4, cudaMemcpyHostToDevice, s));
    CU(cudaMemcpyAsync(b, init.data(), cells * 4, cudaMemcpyHostToDevice, s));
    CU(cudaStreamSynchronize(s));
  };
  auto check = [&] {
    CU(cudaMemcpyAsync(got.data(), a, cells * 4, cudaMemcpyDeviceToHost, s));
    CU(cudaStreamSynchronize(s));
    return got == want;
  };
  const char *what = "the grid differs from the host Jacobi (same float operations)";
  auto per = [&](const std::vector<double> &t) { return median(t) / steps * 1e6; };
  unsigned g = blocks(cells);
  {
    std::vector<double> t, st;
    reset();
    bool ok = timed(
        [&](double) {
          for (unsigned k = 0; k < steps / 2; k++) {
            jacobi<<<g, BLOCK, 0, s>>>(nn, a, cells, b, cells);
            CU(cudaStreamSynchronize(s));
            jacobi<<<g, BLOCK, 0, s>>>(nn, b, cells, a, cells);
            CU(cudaStreamSynchronize(s));
          }
          return 0.0;
        },
        check, t, st);
    row(bench, "blocking", n, "us_per_step", per(t));
    valid(bench, "blocking", n, ok, what);
  }
  {
    std::vector<double> t, st;
    reset();
    bool ok = timed(
        [&](double t0) {
          for (unsigned k = 0; k < steps / 2; k++) {
            jacobi<<<g, BLOCK, 0, s>>>(nn, a, cells, b, cells);
            jacobi<<<g, BLOCK, 0, s>>>(nn, b, cells, a, cells);
          }
          double sub = now() - t0;
          CU(cudaStreamSynchronize(s));
          return sub;
        },
        check, t, st);
    row(bench, "queued", n, "us_per_step", per(t));
    row(bench, "queued", n, "us_submit_per_step", per(st));
    valid(bench, "queued", n, ok, what);
  }
  for (unsigned len : {steps, 2u}) {
    std::string name = len == steps ? "graph_all" : "graph_2";
    reset();
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CU(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (unsigned k = 0; k < len / 2; k++) {
      jacobi<<<g, BLOCK, 0, s>>>(nn, a, cells, b, cells);
      jacobi<<<g, BLOCK, 0, s>>>(nn, b, cells, a, cells);
    }
    CU(cudaStreamEndCapture(s, &graph));
    CU(cudaGraphInstantiate(&exec, graph, 0));
    std::vector<double> t, st;
    bool ok = timed(
        [&](double t0) {
          for (unsigned k = 0; k < steps / len; k++) CU(cudaGraphLaunch(exec, s));
          double sub = now() - t0;
          CU(cudaStreamSynchronize(s));
          return sub;
        },
        check, t, st);
    row(bench, name, n, "us_per_step", per(t));
    row(bench, name, n, "us_submit_per_step", per(st));
    valid(bench, name, n, ok, what);
    CU(cudaGraphExecDestroy(exec));
    CU(cudaGraphDestroy(graph));
  }
  CU(cudaStreamDestroy(s));
  CU(cudaFree(a));
  CU(cudaFree(b));
}

static void usage(const char *argv0) {
  std::fprintf(stderr,
               "usage: %s [--only launches|overlap|jacobi] [--launches N] [--log2-elems K] [--graph-len G] [--mib M]\n"
               "       [--chunk-mib C] [--queues 1,2,3,4] [--jacobi-n N] [--jacobi-steps S] [--reps R] [--csv]\n"
               "       [--stack-bytes B] [--extra-streams K]\n",
               argv0);
  std::exit(2);
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage(argv[0]);
      return argv[++i];
    };
    if (a == "--csv") A.csv = true;
    else if (a == "--only") A.only = next();
    else if (a == "--launches") A.launches = std::stoul(next());
    else if (a == "--log2-elems") A.log2_elems = std::stoul(next());
    else if (a == "--graph-len") A.graph_len = std::stoul(next());
    else if (a == "--mib") A.mib = std::stoul(next());
    else if (a == "--chunk-mib") A.chunk_mib = std::stoul(next());
    else if (a == "--jacobi-n") A.jacobi_n = std::stoul(next());
    else if (a == "--jacobi-steps") A.jacobi_steps = std::stoul(next());
    else if (a == "--reps") A.reps = std::stoul(next());
    else if (a == "--stack-bytes") A.stack_bytes = std::stoul(next());
    else if (a == "--extra-streams") A.extra_streams = std::stoul(next());
    else if (a == "--queues") {
      A.queues.clear();
      std::string v = next();
      for (size_t p = 0; p < v.size();) {
        size_t q = v.find(',', p);
        if (q == std::string::npos) q = v.size();
        A.queues.push_back(std::stoi(v.substr(p, q - p)));
        p = q + 1;
      }
    } else usage(argv[0]);
  }
  if (A.reps < 1 || A.log2_elems < 8 || A.log2_elems > 28) usage(argv[0]);
  CU(cudaSetDevice(0));
  CU(cudaFree(0));
  // offload sets an 8 KiB per-thread stack (its CU_LIMIT_STACK_SIZE); this
  // sets the same here, to see whether the limit alone changes a timing.
  if (A.stack_bytes) CU(cudaDeviceSetLimit(cudaLimitStackSize, A.stack_bytes));
  // --extra-streams K: K more streams run a few kernels first and stay
  // alive, as offload's runtime has streams of its own beside a queue's
  // (graph-gap.sh: the per-node cost of graph replay follows the number of
  // streams that have run work in the context).
  if (A.extra_streams) {
    float *d, *o;
    CU(cudaMalloc(&d, 4 << 16));
    CU(cudaMalloc(&o, 4 << 16));
    for (unsigned k = 0; k < A.extra_streams; k++) {
      cudaStream_t e;
      CU(cudaStreamCreateWithFlags(&e, cudaStreamNonBlocking));
      for (int i = 0; i < 10; i++) inc<<<256, BLOCK, 0, e>>>(d, 1 << 16, o, 1 << 16);
      CU(cudaStreamSynchronize(e));
    }
  }
  if (!A.csv) {
    cudaDeviceProp p;
    CU(cudaGetDeviceProperties(&p, 0));
    std::printf("Device: %s\n", p.name);
  }
  if (A.only.empty() || A.only == "launches") launches();
  if (A.only.empty() || A.only == "overlap") overlap();
  if (A.only.empty() || A.only == "jacobi") jacobi_bench();
  return all_ok ? 0 : 1;
}
