// Where a CUDA thread's stack lives (2026-12, for offload's recursion checks).
//
// offload's recursion check stops a thread when the local address of its
// frame is below floor + reserve, with floor = T' + 64 - L measured once per
// module: T' the local address at the top of a one-thread probe kernel's
// 8-byte frame, L = CU_LIMIT_STACK_SIZE (crates/offload/src/runtime/
// cuda_recover.rs, install_stack_floor). That is right if
//   (1) every kernel of a context starts its stack at the same local address
//       T (SASS `LDC R1, c[0x0][0x28]`), whatever its frame and whatever L,
//   (2) the usable stack is [T - L, T): writes below T - L fault, and
//   (3) a recursion runs exactly as deep as [T - L, T) allows.
// This program measures all three on the GPU it runs on and ends with one
// `verdict: PASS` or `verdict: FAIL` line.
//
//   nvcc -O3 -arch=sm_90 -o stack-probe bench/probe/stack.cu
//   timeout 20 ./stack-probe
//
// A fault (CUDA_ERROR_ILLEGAL_ADDRESS) leaves a process's context unusable,
// so every launch that may fault runs in a child process (this program with
// `write L ADDRESS` or `rec L DEPTH`), several at a time; the searches
// narrow down in rounds (the first one around the expected answers, which
// settles them if they are right), printing each. Local addresses are `cvta.to.local` of a generic
// address, as offload computes them.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include <algorithm>
#include <chrono>
#include <functional>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cuda_runtime.h>

extern char** environ;

#define CK(x)                                                                                       \
    do {                                                                                            \
        cudaError_t e_ = (x);                                                                       \
        if (e_ != cudaSuccess) {                                                                    \
            fprintf(stderr, "%s:%d %s -> %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));    \
            exit(2);                                                                                \
        }                                                                                           \
    } while (0)

typedef unsigned long long u64;

__device__ __forceinline__ u64 local_of(const volatile void* p) {
    u64 l;
    asm volatile("cvta.to.local.u64 %0, %1;" : "=l"(l) : "l"((u64)(size_t)p));
    return l;
}

// Kernels with frames of different sizes: each stores the local address of
// the bottom of its frame (its only local array, at R1 after the prologue).
__global__ void k_small(u64* out) {  // 8-byte frame, as offload's probe
    volatile u64 slot[1];
    slot[0] = 0;
    out[0] = local_of(slot);
}

__global__ void k_big(u64* out, int i) {  // 2000-byte frame, above L = 1024
    volatile unsigned char buf[2000];
    for (int k = 0; k < 2000; k += 500) buf[k] = (unsigned char)k;
    buf[i % 2000] = 1;
    out[0] = local_of(buf);
    out[1] = buf[(i * 7) % 2000];
}

// The lead's recursion (/work/main/.carry/probe/probe.cu): an 80-byte frame
// per level (64-byte buffer + saved registers), kept live across the call.
__device__ __noinline__ int rec(int n, u64* offs) {
    volatile char buf[64];
    buf[0] = (char)n;
    buf[63] = 1;
    if (offs && n < 4096) offs[n] = local_of(buf);
    if (n == 0) return buf[0];
    return rec(n - 1, offs) + buf[63];
}
__global__ void krec(int n, u64* offs, int* out) { out[threadIdx.x] = rec(n, offs); }

// Writes one byte at local address `a` (a generic store into the local
// window).
__global__ void k_write(u64 a, int* out) {
    u64 g;
    asm volatile("cvta.local.u64 %0, %1;" : "=l"(g) : "l"(a));
    *(volatile unsigned char*)(size_t)g = 0x5a;
    out[0] = 1;
}

static size_t set_limit(size_t bytes) {
    CK(cudaDeviceSetLimit(cudaLimitStackSize, bytes));
    size_t got = 0;
    CK(cudaDeviceGetLimit(&got, cudaLimitStackSize));
    return got;
}

// STACK_PROBE_SIMULATE=<bytes>: no GPU; T = 0xFFFDC0, 80-byte levels, and
// a usable stack of L + <bytes> (a self-test of the searches, on any machine).
static const char* simulate = getenv("STACK_PROBE_SIMULATE");
static const long long SIM_T = 0xFFFDC0, SIM_FRAME = 80;

// Child: one launch that may fault. Exit 0: ran; 3: the kernel failed with
// an illegal address (what an out-of-range local access gives); 4: it
// failed otherwise (counted as a fault, and reported); 2: setup failed.
static int child(const char* what, size_t L, long long arg) {
    if (simulate) {
        long long usable = (long long)L + atoll(simulate);
        long long lowest = !strcmp(what, "write") ? arg : SIM_T - (arg + 1) * SIM_FRAME;
        return lowest >= SIM_T - usable ? 0 : 3;
    }
    set_limit(L);
    int* out;
    CK(cudaMalloc(&out, 64 * sizeof(int)));
    if (!strcmp(what, "write")) {
        k_write<<<1, 1>>>((u64)arg, out);
    } else {
        krec<<<1, 1>>>((int)arg, nullptr, out);
    }
    CK(cudaGetLastError());
    cudaError_t e = cudaDeviceSynchronize();
    return e == cudaSuccess ? 0 : e == cudaErrorIllegalAddress ? 3 : 4;
}

// The frames, in this process (nothing here faults).
struct Frames {
    u64 t;       // T from k_small
    u64 frame;   // one level of `rec`
    bool same;   // every estimate of T agrees
};

static Frames measure_frames() {
    size_t def = 0;
    CK(cudaDeviceGetLimit(&def, cudaLimitStackSize));
    printf("default CU_LIMIT_STACK_SIZE: %zu\n", def);
    cudaFuncAttributes fs, fb, fr;
    CK(cudaFuncGetAttributes(&fs, k_small));
    CK(cudaFuncGetAttributes(&fb, k_big));
    CK(cudaFuncGetAttributes(&fr, krec));
    printf("localSizeBytes: k_small %zu, k_big %zu, krec %zu (recursive: not static)\n", fs.localSizeBytes,
           fb.localSizeBytes, fr.localSizeBytes);
    u64 *out, *offs;
    int* iout;
    CK(cudaMallocManaged(&out, 16 * sizeof(u64)));
    CK(cudaMallocManaged(&offs, 4096 * sizeof(u64)));
    CK(cudaMalloc(&iout, 64 * sizeof(int)));
    Frames r = {0, 0, true};
    const size_t limits[2] = {1024, 65536};
    for (size_t L : limits) {
        size_t got = set_limit(L);
        k_small<<<1, 1>>>(out);
        CK(cudaDeviceSynchronize());
        u64 ts = out[0] + fs.localSizeBytes;
        k_big<<<1, 1>>>(out, 3);
        CK(cudaDeviceSynchronize());
        u64 tb = out[0] + fb.localSizeBytes;
        size_t after = 0;
        CK(cudaDeviceGetLimit(&after, cudaLimitStackSize));
        const int depth = 8;
        krec<<<1, 1>>>(depth, offs, iout);
        CK(cudaDeviceSynchronize());
        u64 frame = offs[depth - 1] > offs[depth] ? 0 : offs[depth] - offs[depth - 1];
        u64 tr = offs[depth] + frame;  // krec has no frame of its own (localSizeBytes 0)
        printf("L=%zu (driver: %zu): first frame + its size: k_small %llu (%#llx), k_big %llu (%#llx), "
               "krec's rec %llu (%#llx; %llu-byte levels)\n",
               L, got, ts, ts, tb, tb, tr, tr, frame);
        printf("L=%zu: CU_LIMIT_STACK_SIZE after k_big (2000-byte frame) ran: %zu%s\n", L, after,
               after > got ? " (the driver raised it for the launch and kept it)" : " (unchanged)");
        if (r.t == 0) r.t = ts, r.frame = frame;
        r.same = r.same && ts == r.t && tb == r.t && tr == r.t && frame == r.frame;
        CK(cudaDeviceReset());  // a fresh limit for the next L (and no raised one)
        CK(cudaMallocManaged(&out, 16 * sizeof(u64)));
        CK(cudaMallocManaged(&offs, 4096 * sizeof(u64)));
        CK(cudaMalloc(&iout, 64 * sizeof(int)));
    }
    printf("(1) T the same for k_small, k_big and krec at L=1024 and 65536: %s; T = %llu (%#llx), 2^24 - T = %llu\n",
           r.same ? "yes" : "NO", r.t, r.t, (1ull << 24) - r.t);
    return r;
}

// One search: the largest `ok` value (ok(v) true up to it, false above), in
// [lo, hi], steps of `step`, lo assumed ok and hi tried.
struct Search {
    const char* name;
    const char* mode;   // "write" or "rec"
    size_t L;
    long long lo, hi, step;  // lo: known ok; hi: known bad once `hi_known`
    long long hint;          // the expected answer: round 1 tries around it
    bool hi_known = false, done = false, inconsistent = false;
    std::function<long long(long long)> arg;  // value -> child argument
};

static pid_t spawn_child(const std::string& self, const char* mode, size_t L, long long arg) {
    std::string a1 = std::to_string(L), a2 = std::to_string(arg);
    char* argv[] = {(char*)self.c_str(), (char*)mode, (char*)a1.c_str(), (char*)a2.c_str(), nullptr};
    pid_t pid;
    if (posix_spawn(&pid, self.c_str(), nullptr, nullptr, argv, environ) != 0) {
        perror("posix_spawn");
        exit(2);
    }
    return pid;
}

int main(int argc, char** argv) {
    if (argc == 4) return child(argv[1], strtoull(argv[2], nullptr, 10), strtoll(argv[3], nullptr, 10));
    auto start = std::chrono::steady_clock::now();
    auto secs = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
    Frames f = {(u64)SIM_T, (u64)SIM_FRAME, true};
    if (simulate) {
        printf("SIMULATED (no GPU): T = %#llx, %lld-byte levels, usable stack L + %s\n", SIM_T, SIM_FRAME, simulate);
        printf("(1) T the same for k_small, k_big and krec at L=1024 and 65536: yes (simulated)\n");
    } else {
        cudaDeviceProp p;
        CK(cudaGetDeviceProperties(&p, 0));
        int driver = 0;
        CK(cudaDriverGetVersion(&driver));
        printf("%s (sm_%d%d), driver API %d\n", p.name, p.major, p.minor, driver);
        f = measure_frames();
        CK(cudaDeviceReset());
    }
    fflush(stdout);
    const long long T = (long long)f.t, F = (long long)f.frame;
    if (F <= 0) {
        printf("verdict: FAIL (could not measure rec's frame)\n");
        return 1;
    }
    // Searches, in bytes below T (write: the lowest writable address is
    // T - U) and in recursion depth.
    std::vector<Search> s;
    for (size_t L : {(size_t)1024, (size_t)8192}) {
        Search w{"write", "write", L, 8, (long long)(4 * L + 4096), 8, (long long)L};
        w.arg = [T](long long d) { return T - d; };
        s.push_back(w);
    }
    Search r{"rec", "rec", 8192, 0, (long long)(2 * 8192 / F + 8), 1, 8192 / F - 1};
    r.arg = [](long long n) { return n; };
    s.push_back(r);
    std::string self = argv[0];
    const int K = 6;  // children per search and round
    int other_errors = 0;
    for (int round = 1; round <= 8; round++) {
        std::vector<std::pair<size_t, std::pair<long long, pid_t>>> kids;
        for (size_t i = 0; i < s.size(); i++) {
            Search& x = s[i];
            if (x.done) continue;
            std::vector<long long> pts;
            if (!x.hi_known) pts.push_back(x.hi);
            if (round == 1) {
                // Around the expected answer: done in one round if right.
                for (long long d : {-32, -1, 0, 1, 32}) {
                    long long v = x.hint + d * x.step;
                    if (v > x.lo && v < x.hi) pts.push_back(v);
                }
            } else {
                long long gap = (x.hi - x.lo) / x.step;
                int n = (int)std::min<long long>(K - (int)pts.size(), gap - 1);
                for (int k = 1; k <= n; k++) {
                    long long v = x.lo + (x.hi - x.lo) * k / (n + 1);
                    v -= (v - x.lo) % x.step;
                    if (v > x.lo && v < x.hi && (pts.empty() || pts.back() != v)) pts.push_back(v);
                }
            }
            for (long long v : pts) kids.push_back({i, {v, spawn_child(self, x.mode, x.L, x.arg(v))}});
        }
        if (kids.empty()) break;
        std::vector<std::vector<std::pair<long long, bool>>> res(s.size());
        for (auto& k : kids) {
            int st = 0;
            waitpid(k.second.second, &st, 0);
            int code = WIFEXITED(st) ? WEXITSTATUS(st) : 100;
            if (code == 4) other_errors++;
            if (code != 0 && code != 3 && code != 4) {
                printf("child %s %zu %lld: exit %d (setup failed)\n", s[k.first].mode, s[k.first].L,
                       s[k.first].arg(k.second.first), code);
                printf("verdict: FAIL (a child could not run)\n");
                return 1;
            }
            res[k.first].push_back({k.second.first, code == 0});
        }
        if (other_errors) {
            printf("(%d launch(es) so far failed with another error than an illegal address)\n", other_errors);
            other_errors = 0;
        }
        for (size_t i = 0; i < s.size(); i++) {
            Search& x = s[i];
            if (x.done) continue;
            std::sort(res[i].begin(), res[i].end());
            long long lo = x.lo, hi = x.hi;
            for (auto& [v, ok] : res[i]) {
                if (ok && v > lo) lo = v;
            }
            for (auto& [v, ok] : res[i]) {
                if (!ok && v < hi) hi = v;
                if (!ok && v <= lo) x.inconsistent = true;
            }
            bool hi_ran = false;
            for (auto& [v, ok] : res[i]) hi_ran |= (v == x.hi);
            if (hi_ran && !x.hi_known) {
                bool hi_ok = false;
                for (auto& [v, ok] : res[i]) hi_ok |= (v == x.hi && ok);
                if (hi_ok) {  // no fault even there: nothing to narrow down
                    x.lo = x.hi;
                    x.done = true;
                    continue;
                }
                x.hi_known = true;
            }
            x.lo = lo;
            x.hi = hi;
            if (x.hi_known && x.hi - x.lo <= x.step) x.done = true;
        }
        printf("round %d (%.1f s):", round, secs());
        for (auto& x : s) printf("  %s L=%zu: ok %lld, fails %s%lld;", x.name, x.L, x.lo, x.hi_known ? "" : "? ", x.hi);
        printf("\n");
        fflush(stdout);
    }
    bool pass = f.same;
    long long u8192 = 0;
    for (auto& x : s) {
        if (x.inconsistent) printf("%s L=%zu: NOT monotonic (a fault below an ok point)\n", x.name, x.L), pass = false;
        if (!x.done) printf("%s L=%zu: not narrowed down in 8 rounds\n", x.name, x.L), pass = false;
        if (!x.hi_known) printf("%s L=%zu: no fault even at %lld (the search's end)\n", x.name, x.L, x.hi);
    }
    // Above T (informational): is the window's top, [T, 2^24), writable?
    for (long long a : {T + 8, (long long)(1ull << 24) - 8}) {
        int st = 0;
        waitpid(spawn_child(self, "write", 8192, a), &st, 0);
        printf("write at local %lld (%#llx, T + %lld): %s\n", a, a, a - T,
               WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "ok" : "fails");
    }
    for (auto& x : s) {
        if (strcmp(x.mode, "write")) continue;
        long long U = x.lo;  // bytes below T that are writable
        if (x.L == 8192) u8192 = U;
        const char* how = U == (long long)x.L ? "exactly L: the floor T - L is exact"
                          : U > (long long)x.L ? "more than L: the floor T - L is conservative"
                                               : "LESS than L: the floor T - L is too low";
        printf("(2) L=%zu: lowest writable local address T - %lld = %lld (%#llx)%s: usable stack %lld bytes, %s\n", x.L,
               U, T - U, T - U, x.hi_known ? "" : " or lower", U, how);
        if (U < (long long)x.L) pass = false;
        // offload's floor: the probe's T' (k_small's slot: T - 8) + 64 - L.
        long long floor = T - 8 + 64 - (long long)x.L;
        printf("    offload's floor for L=%zu: T' + 64 - L = %lld: %lld bytes above the lowest writable address%s\n", x.L,
               floor, floor - (T - U), floor >= T - U ? "" : " (BELOW it: unsafe)");
        if (floor < T - U) pass = false;
    }
    for (auto& x : s) {
        if (strcmp(x.mode, "rec")) continue;
        long long pred_l = x.L / F - 1, pred_u = u8192 / F - 1;
        printf("(3) L=%zu: deepest recursion that runs: rec(%lld) (%lld frames of %lld bytes); predicted from [T - L, T): "
               "%lld; from the writable range: %lld\n",
               x.L, x.lo, x.lo + 1, F, pred_l, pred_u);
        if (x.lo < pred_l || x.lo > pred_u + 1) pass = false;
    }
    printf("(%.1f s)\n", secs());
    printf("verdict: %s\n", pass ? "PASS ([T - L, T) is the usable stack of every kernel; offload's floor is safe)"
                                 : "FAIL (see the lines above)");
    return pass ? 0 : 1;
}
