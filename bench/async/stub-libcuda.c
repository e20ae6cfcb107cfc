// A stand-in libcuda.so for profiling offload's host-side CUDA paths on a
// machine without a GPU (issue 11: what a queued launch costs on the CPU
// besides cuLaunchKernel). Every call succeeds at once, device memory is
// host memory, kernels never run (so results are wrong and benchmarks say
// so); the device reports itself as an sm_90 "Stub H200". With
// STUB_COUNTS=1 it prints how often each function was called at exit.
//
//   gcc -shared -fPIC -O2 -o /tmp/stub/libcuda.so bench/async/stub-libcuda.c
//   ln -sf libcuda.so /tmp/stub/libcuda.so.1
//   LD_LIBRARY_PATH=/tmp/stub OFFLOAD_DEVICE=cuda valgrind --tool=callgrind \
//       --toggle-collect='*inc>::on::<offload::runtime::queue::handle::Queue*' \
//       target/release/async-bench --only launches --launches 2000 --reps 1
//
// With STUB_COUNT_FROM=<function> as well (cuEventRecord, say), the counts
// start at that function's first call (start-up's calls left out), so that
// a loop's calls can be checked; STUB_EVENT_WAIT_US=<µs> makes every
// cuEventSynchronize take that long and cuEventQuery answer "not ready"
// (CUDA_ERROR_NOT_READY), so that a queue's synchronize waits as it would
// for a kernel, and other threads run meanwhile: bench/async/stub-sync-check.sh runs a queued launch while
// another thread allocates and frees DeviceBuffers and checks that nothing
// in that loop calls a synchronizing function (cuMemFree, cuMemAlloc,
// cuMemsetD8, cuCtxSynchronize). Memory pools are supported
// (attribute 115, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, is 1; the
// pool functions succeed at once). Counts from several threads are not
// atomic: a count of 0 is exact, others may be a little low.
//
// Only for measuring instructions and counting calls: nothing it prints about results means anything.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <unistd.h>
typedef int CUresult;
typedef unsigned long long CUdeviceptr;
static uintptr_t next_handle = 0x1000;
static void *handle(void) { next_handle += 16; return (void *)next_handle; }
static char globals[1 << 20];
static size_t globals_used;
static unsigned long counts[96];
static const char *names[]={"cuInit","cuDriverGetVersion","cuDeviceGetCount","cuDeviceGet","cuDeviceGetName","cuDeviceTotalMem_v2","cuDeviceGetAttribute","cuDeviceCanAccessPeer","cuDevicePrimaryCtxRetain","cuDevicePrimaryCtxRelease_v2","cuDevicePrimaryCtxReset_v2","cuCtxSetCurrent","cuCtxGetCurrent","cuCtxSynchronize","cuCtxEnablePeerAccess","cuCtxGetLimit","cuCtxSetLimit","cuModuleLoadDataEx","cuModuleLoadData","cuModuleUnload","cuModuleGetFunction","cuModuleGetGlobal_v2","cuFuncGetAttribute","cuFuncSetAttribute","cuFuncSetCacheConfig","cuLaunchKernel","cuMemAlloc_v2","cuMemFree_v2","cuMemAllocAsync","cuMemFreeAsync","cuMemHostAlloc","cuMemAllocHost_v2","cuMemFreeHost","cuMemHostGetDevicePointer_v2","cuMemGetInfo_v2","cuMemcpyHtoD_v2","cuMemcpyDtoH_v2","cuMemcpyDtoD_v2","cuMemcpyHtoDAsync_v2","cuMemcpyDtoHAsync_v2","cuMemcpyDtoDAsync_v2","cuMemcpyAsync","cuMemcpy","cuMemcpyPeerAsync","cuMemsetD8_v2","cuMemsetD8Async","cuMemsetD32_v2","cuMemsetD32Async","cuMemHostRegister_v2","cuMemHostUnregister","cuPointerGetAttributes","cuPointerGetAttribute","cuStreamCreate","cuStreamCreateWithPriority","cuStreamDestroy_v2","cuStreamSynchronize","cuStreamQuery","cuStreamWaitEvent","cuStreamBeginCapture_v2","cuStreamEndCapture","cuStreamIsCapturing","cuLaunchHostFunc","cuEventCreate","cuEventDestroy_v2","cuEventRecord","cuEventRecordWithFlags","cuEventSynchronize","cuEventQuery","cuEventElapsedTime","cuGraphInstantiateWithFlags","cuGraphInstantiate_v2","cuGraphLaunch","cuGraphExecDestroy","cuGraphDestroy","cuGraphDebugDotPrint","cuGetErrorName","cuGetErrorString","cuCtxGetDevice","cuCtxPushCurrent_v2","cuCtxPopCurrent_v2","cuDeviceGetDefaultMemPool","cuDeviceGetMemPool","cuMemPoolSetAttribute","cuMemPoolGetAttribute","cuMemPoolTrimTo","cuMemAllocFromPoolAsync","cuMemPoolSetAccess"};
#define NNAMES ((int)(sizeof names / sizeof *names))
__attribute__((destructor)) static void dump(void){ if(!getenv("STUB_COUNTS")) return; for(int i=0;i<NNAMES;i++) if(counts[i]) fprintf(stderr,"stub %-32s %lu\n",names[i],counts[i]); }
static int count_from = -2; // index of STUB_COUNT_FROM's function; -1: count from the start
static void C(int i) {
  if (count_from == -2) {
    const char *f = getenv("STUB_COUNT_FROM");
    count_from = -1;
    for (int k = 0; f && k < NNAMES; k++) if (!strcmp(names[k], f)) { memset(counts, 0, sizeof counts); count_from = k; }
  }
  if (count_from >= 0) { if (i != count_from) return; count_from = -1; }
  counts[i]++;
}
#define H(name, ...) CUresult name(__VA_ARGS__)
H(cuInit, unsigned f) { C(0); return 0; }
H(cuDriverGetVersion, int *v) { C(1); *v = 13000; return 0; }
H(cuDeviceGetCount, int *n) { C(2); *n = 1; return 0; }
H(cuDeviceGet, int *d, int o) { C(3); *d = o; return 0; }
H(cuDeviceGetName, char *name, int len, int d) { C(4); strncpy(name, "Stub H200", len); return 0; }
H(cuDeviceTotalMem_v2, size_t *b, int d) { C(5); *b = 141ull << 30; return 0; }
H(cuDeviceGetAttribute, int *v, int a, int d) { C(6);
  switch (a) {
  case 1: case 2: case 3: *v = 1024; break;
  case 4: *v = 64; break;
  case 5: *v = 2147483647; break;
  case 6: case 7: *v = 65535; break;
  case 8: *v = 49152; break;
  case 10: *v = 32; break;
  case 16: *v = 132; break;
  case 75: *v = 9; break;
  case 76: *v = 0; break;
  case 97: *v = 232448; break;
  default: *v = 1;
  }
  return 0;
}
H(cuDeviceCanAccessPeer, int *c, int a, int b) { C(7); *c = 0; return 0; }
H(cuDevicePrimaryCtxRetain, void **c, int d) { C(8); *c = (void *)0x77; return 0; }
H(cuDevicePrimaryCtxRelease_v2, int d) { C(9); return 0; }
H(cuDevicePrimaryCtxReset_v2, int d) { C(10); return 0; }
H(cuCtxSetCurrent, void *c) { C(11); return 0; }
H(cuCtxGetCurrent, void **c) { C(12); *c = (void *)0x77; return 0; }
H(cuCtxSynchronize, void) { C(13); return 0; }
H(cuCtxEnablePeerAccess, void *c, unsigned f) { C(14); return 0; }
H(cuCtxGetLimit, size_t *v, int l) { C(15); *v = 1024; return 0; }
H(cuCtxSetLimit, int l, size_t v) { C(16); return 0; }
H(cuModuleLoadDataEx, void **m, const void *img, unsigned n, void *o, void **ov) { C(17); *m = handle(); return 0; }
H(cuModuleLoadData, void **m, const void *img) { C(18); *m = handle(); return 0; }
H(cuModuleUnload, void *m) { C(19); return 0; }
H(cuModuleGetFunction, void **f, void *m, const char *name) { C(20); *f = handle(); return 0; }
H(cuModuleGetGlobal_v2, CUdeviceptr *p, size_t *b, void *m, const char *name) { C(21);
  size_t sz = 4096;
  if (p) *p = (CUdeviceptr)(globals + globals_used);
  if (b) *b = sz;
  globals_used += sz;
  if (globals_used >= sizeof globals) globals_used = 0;
  return 0;
}
H(cuFuncGetAttribute, int *v, int a, void *f) { C(22);
  switch (a) { case 0: *v = 1024; break; case 4: *v = 32; break; default: *v = 0; }
  return 0;
}
H(cuFuncSetAttribute, void *f, int a, int v) { C(23); return 0; }
H(cuFuncSetCacheConfig, void *f, int c) { C(24); return 0; }
H(cuLaunchKernel, void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
  unsigned sh, void *s, void **p, void **e) {
  C(25);
  return 0;
}
static CUresult stub_alloc(CUdeviceptr *p, size_t b) { *p = (CUdeviceptr)aligned_alloc(256, (b + 255) & ~(size_t)255); return *p ? 0 : 2; }
H(cuMemAlloc_v2, CUdeviceptr *p, size_t b) { C(26); return stub_alloc(p, b); }
H(cuMemFree_v2, CUdeviceptr p) { C(27); free((void *)p); return 0; }
H(cuMemAllocAsync, CUdeviceptr *p, size_t b, void *s) { C(28); return stub_alloc(p, b); }
H(cuMemFreeAsync, CUdeviceptr p, void *s) { C(29); free((void *)p); return 0; }
H(cuDeviceGetDefaultMemPool, void **pool, int d) { C(80); *pool = (void *)0x88; return 0; }
H(cuDeviceGetMemPool, void **pool, int d) { C(81); *pool = (void *)0x88; return 0; }
H(cuMemPoolSetAttribute, void *pool, int a, void *v) { C(82); return 0; }
H(cuMemPoolGetAttribute, void *pool, int a, void *v) { C(83); if (v) *(unsigned long long *)v = 0; return 0; }
H(cuMemPoolTrimTo, void *pool, size_t keep) { C(84); return 0; }
H(cuMemAllocFromPoolAsync, CUdeviceptr *p, size_t b, void *pool, void *s) { C(85); return stub_alloc(p, b); }
H(cuMemPoolSetAccess, void *pool, const void *desc, size_t n) { C(86); return 0; }
H(cuMemHostAlloc, void **p, size_t b, unsigned f) { C(30); *p = aligned_alloc(4096, (b + 4095) & ~(size_t)4095); memset(*p, 0, b); return 0; }
H(cuMemAllocHost_v2, void **p, size_t b) { C(31); return cuMemHostAlloc(p, b, 0); }
H(cuMemFreeHost, void *p) { C(32); free(p); return 0; }
H(cuMemHostGetDevicePointer_v2, CUdeviceptr *d, void *p, unsigned f) { C(33); *d = (CUdeviceptr)p; return 0; }
H(cuMemGetInfo_v2, size_t *f, size_t *t) { C(34); *f = 140ull << 30; *t = 141ull << 30; return 0; }
H(cuMemcpyHtoD_v2, CUdeviceptr d, const void *s, size_t b) { C(35); memcpy((void *)d, s, b); return 0; }
H(cuMemcpyDtoH_v2, void *d, CUdeviceptr s, size_t b) { C(36); memcpy(d, (void *)s, b); return 0; }
H(cuMemcpyDtoD_v2, CUdeviceptr d, CUdeviceptr s, size_t b) { C(37); memmove((void *)d, (void *)s, b); return 0; }
H(cuMemcpyHtoDAsync_v2, CUdeviceptr d, const void *s, size_t b, void *st) { C(38); memcpy((void *)d, s, b); return 0; }
H(cuMemcpyDtoHAsync_v2, void *d, CUdeviceptr s, size_t b, void *st) { C(39); memcpy(d, (void *)s, b); return 0; }
H(cuMemcpyDtoDAsync_v2, CUdeviceptr d, CUdeviceptr s, size_t b, void *st) { C(40); memmove((void *)d, (void *)s, b); return 0; }
H(cuMemcpyAsync, CUdeviceptr d, CUdeviceptr s, size_t b, void *st) { C(41); memmove((void *)d, (void *)s, b); return 0; }
H(cuMemcpy, CUdeviceptr d, CUdeviceptr s, size_t b) { C(42); memmove((void *)d, (void *)s, b); return 0; }
H(cuMemcpyPeerAsync, CUdeviceptr d, void *dc, CUdeviceptr s, void *sc, size_t b, void *st) { C(43); memmove((void *)d, (void *)s, b); return 0; }
H(cuMemsetD8_v2, CUdeviceptr d, unsigned char v, size_t n) { C(44); memset((void *)d, v, n); return 0; }
H(cuMemsetD8Async, CUdeviceptr d, unsigned char v, size_t n, void *s) { C(45); memset((void *)d, v, n); return 0; }
H(cuMemsetD32_v2, CUdeviceptr d, unsigned v, size_t n) { C(46); for (size_t i = 0; i < n; i++) ((unsigned *)d)[i] = v; return 0; }
H(cuMemsetD32Async, CUdeviceptr d, unsigned v, size_t n, void *s) { C(47); return cuMemsetD32_v2(d, v, n); }
H(cuMemHostRegister_v2, void *p, size_t b, unsigned f) { C(48); return 0; }
H(cuMemHostUnregister, void *p) { C(49); return 0; }
H(cuPointerGetAttributes, unsigned n, int *a, void **d, CUdeviceptr p) { C(50); return 0; }
H(cuPointerGetAttribute, void *d, int a, CUdeviceptr p) { C(51); return 1; }
H(cuStreamCreate, void **s, unsigned f) { C(52); *s = handle(); return 0; }
H(cuStreamCreateWithPriority, void **s, unsigned f, int p) { C(53); *s = handle(); return 0; }
H(cuStreamDestroy_v2, void *s) { C(54); return 0; }
H(cuStreamSynchronize, void *s) { C(55); return 0; }
H(cuStreamQuery, void *s) { C(56); return 0; }
H(cuStreamWaitEvent, void *s, void *e, unsigned f) { C(57); return 0; }
H(cuStreamBeginCapture_v2, void *s, int m) { C(58); return 0; }
H(cuStreamEndCapture, void *s, void **g) { C(59); *g = handle(); return 0; }
H(cuStreamIsCapturing, void *s, int *st) { C(60); *st = 0; return 0; }
H(cuLaunchHostFunc, void *s, void (*fn)(void *), void *u) { C(61); fn(u); return 0; }
H(cuEventCreate, void **e, unsigned f) { C(62); *e = handle(); return 0; }
H(cuEventDestroy_v2, void *e) { C(63); return 0; }
H(cuEventRecord, void *e, void *s) { C(64); return 0; }
H(cuEventRecordWithFlags, void *e, void *s, unsigned f) { C(65); return 0; }
H(cuEventSynchronize, void *e) { C(66); const char *w = getenv("STUB_EVENT_WAIT_US"); if (w) usleep(atoi(w)); return 0; }
H(cuEventQuery, void *e) { C(67); return getenv("STUB_EVENT_WAIT_US") ? 600 : 0; }
H(cuEventElapsedTime, float *ms, void *a, void *b) { C(68); *ms = 1.0f; return 0; }
H(cuGraphInstantiateWithFlags, void **x, void *g, unsigned long long f) { C(69); *x = handle(); return 0; }
H(cuGraphInstantiate_v2, void **x, void *g, void *a, char *b, size_t c) { C(70); *x = handle(); return 0; }
H(cuGraphLaunch, void *x, void *s) { C(71); return 0; }
H(cuGraphExecDestroy, void *x) { C(72); return 0; }
H(cuGraphDestroy, void *g) { C(73); return 0; }
H(cuGraphDebugDotPrint, void *g, const char *p, unsigned f) { C(74); return 0; }
H(cuGetErrorName, int e, const char **s) { C(75); *s = "CUDA_ERROR_STUB"; return 0; }
H(cuGetErrorString, int e, const char **s) { C(76); *s = "stub error"; return 0; }
H(cuCtxGetDevice, int *d) { C(77); *d = 0; return 0; }
H(cuCtxPushCurrent_v2, void *c) { C(78); return 0; }
H(cuCtxPopCurrent_v2, void **c) { C(79); if (c) *c = (void *)0x77; return 0; }