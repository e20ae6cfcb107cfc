// What a queued launch pays for making its context current (issue 11):
// the driver calls offload's queued path makes around `cuLaunchKernel`,
// timed one by one and inside a chain of launches on one stream.
//
//   nvcc -O2 -o ctx-cost bench/async/ctx-cost.cu -lcuda && ./ctx-cost [launches] [rounds]
//
// Prints CSV rows `ctx_cost,<case>,<value>` in µs per call (medians of
// `rounds`); `launch_*` cases launch a dependent chain of `launches`
// kernels over 2^16 floats with 3 or 5 parameters and synchronize once.
#include <cuda.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { const char *s; cuGetErrorName(r_, &s); \
    std::fprintf(stderr, "%s failed: %s\n", #x, s); std::exit(1); } } while (0)

__global__ void inc3(const float *x, float *y, unsigned long long n) {
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] + 1.0f;
}
// offload's shape: a pointer and a length per slice, and the launch shape.
__global__ void inc5(const float *x, unsigned long long nx, float *y, unsigned long long ny, unsigned shape) {
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < nx && i < ny) y[i] = x[i] + 1.0f;
}

static double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

int main(int argc, char **argv) {
    int launches = argc > 1 ? std::atoi(argv[1]) : 10000;
    int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
    const unsigned long long n = 1 << 16;
    cudaFree(0);  // the runtime's primary context, current on this thread
    CUcontext ctx;
    CK(cuCtxGetCurrent(&ctx));
    CUfunction f3, f5;
    if (cudaGetFuncBySymbol(&f3, (const void *)inc3) != cudaSuccess) return 1;
    if (cudaGetFuncBySymbol(&f5, (const void *)inc5) != cudaSuccess) return 1;
    CUdeviceptr x, y;
    CK(cuMemAlloc(&x, n * 4));
    CK(cuMemAlloc(&y, n * 4));
    CK(cuMemsetD32(x, 0, n));
    CUstream s;
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    const int calls = 1000000;
    auto per_call = [&](auto body) {
        std::vector<double> t;
        for (int r = 0; r < rounds; r++) {
            double t0 = now();
            for (int i = 0; i < calls; i++) body();
            t.push_back((now() - t0) / calls * 1e6);
        }
        return median(t);
    };
    CUcontext got;
    unsigned shape = 0;
    std::printf("ctx_cost,get_current,%.4f\n", per_call([&] { cuCtxGetCurrent(&got); }));
    std::printf("ctx_cost,set_current_same,%.4f\n", per_call([&] { cuCtxSetCurrent(ctx); }));
    std::printf("ctx_cost,get_then_skip,%.4f\n", per_call([&] {
        cuCtxGetCurrent(&got);
        if (got != ctx) cuCtxSetCurrent(ctx);
    }));
    // The parameters packed in one buffer (`extra`,
    // CU_LAUNCH_PARAM_BUFFER_POINTER) instead of one pointer each: the
    // layout of the entry point's parameter space (pointers and u64 at
    // 8-byte offsets, the trailing u32 at 32).
    struct Packed3 { CUdeviceptr a, b; unsigned long long n; };
    struct Packed5 { CUdeviceptr a; unsigned long long na; CUdeviceptr b; unsigned long long nb; unsigned shape; };
    auto chain_extra = [&](CUfunction f, int params) {
        std::vector<double> t;
        for (int r = 0; r <= rounds; r++) {
            double t0 = now();
            for (int i = 0; i < launches; i++) {
                CUdeviceptr a = (i % 2) ? y : x, b = (i % 2) ? x : y;
                Packed3 p3{a, b, n};
                Packed5 p5{a, n, b, n, shape};
                size_t size = params == 3 ? sizeof p3 : 36;
                void *buf = params == 3 ? (void *)&p3 : (void *)&p5;
                void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
                CK(cuLaunchKernel(f, (unsigned)(n / 256), 1, 1, 256, 1, 1, 0, s, nullptr, extra));
            }
            CK(cuStreamSynchronize(s));
            if (r > 0) t.push_back((now() - t0) / launches * 1e6);
        }
        return median(t);
    };
    auto chain = [&](CUfunction f, int params, int ctx_op) {
        std::vector<double> t;
        for (int r = 0; r <= rounds; r++) {
            double t0 = now();
            for (int i = 0; i < launches; i++) {
                CUdeviceptr a = (i % 2) ? y : x, b = (i % 2) ? x : y;
                void *p3[] = {&a, &b, (void *)&n};
                void *p5[] = {&a, (void *)&n, &b, (void *)&n, &shape};
                if (ctx_op == 1) CK(cuCtxSetCurrent(ctx));
                if (ctx_op == 2) { CK(cuCtxGetCurrent(&got)); if (got != ctx) CK(cuCtxSetCurrent(ctx)); }
                CK(cuLaunchKernel(f, (unsigned)(n / 256), 1, 1, 256, 1, 1, 0, s, params == 3 ? p3 : p5, nullptr));
            }
            CK(cuStreamSynchronize(s));
            if (r > 0) t.push_back((now() - t0) / launches * 1e6);
        }
        return median(t);
    };
    // Alternating, twice, so that drift shows.
    for (int pass = 0; pass < 2; pass++) {
        std::printf("ctx_cost,launch_3_params,%.4f\n", chain(f3, 3, 0));
        std::printf("ctx_cost,launch_5_params,%.4f\n", chain(f5, 5, 0));
        std::printf("ctx_cost,launch_5_params_set_current,%.4f\n", chain(f5, 5, 1));
        std::printf("ctx_cost,launch_5_params_get_current,%.4f\n", chain(f5, 5, 2));
        std::printf("ctx_cost,launch_3_params_extra,%.4f\n", chain_extra(f3, 3));
        std::printf("ctx_cost,launch_5_params_extra,%.4f\n", chain_extra(f5, 5));
    }
    return 0;
}
