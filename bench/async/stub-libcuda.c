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
// Only for measuring instructions: nothing it prints about results means anything.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
typedef int CUresult;
typedef unsigned long long CUdeviceptr;
static uintptr_t next_handle = 0x1000;
static void *handle(void) { next_handle += 16; return (void *)next_handle; }
static char globals[1 << 20];
static size_t globals_used;
static unsigned long counts[80];
static const char *names[]={"cuInit","cuDriverGetVersion","cuDeviceGetCount","cuDeviceGet","cuDeviceGetName","cuDeviceTotalMem_v2","cuDeviceGetAttribute","cuDeviceCanAccessPeer","cuDevicePrimaryCtxRetain","cuDevicePrimaryCtxRelease_v2","cuDevicePrimaryCtxReset_v2","cuCtxSetCurrent","cuCtxGetCurrent","cuCtxSynchronize","cuCtxEnablePeerAccess","cuCtxGetLimit","cuCtxSetLimit","cuModuleLoadDataEx","cuModuleLoadData","cuModuleUnload","cuModuleGetFunction","cuModuleGetGlobal_v2","cuFuncGetAttribute","cuFuncSetAttribute","cuFuncSetCacheConfig","cuLaunchKernel","cuMemAlloc_v2","cuMemFree_v2","cuMemAllocAsync","cuMemFreeAsync","cuMemHostAlloc","cuMemAllocHost_v2","cuMemFreeHost","cuMemHostGetDevicePointer_v2","cuMemGetInfo_v2","cuMemcpyHtoD_v2","cuMemcpyDtoH_v2","cuMemcpyDtoD_v2","cuMemcpyHtoDAsync_v2","cuMemcpyDtoHAsync_v2","cuMemcpyDtoDAsync_v2","cuMemcpyAsync","cuMemcpy","cuMemcpyPeerAsync","cuMemsetD8_v2","cuMemsetD8Async","cuMemsetD32_v2","cuMemsetD32Async","cuMemHostRegister_v2","cuMemHostUnregister","cuPointerGetAttributes","cuPointerGetAttribute","cuStreamCreate","cuStreamCreateWithPriority","cuStreamDestroy_v2","cuStreamSynchronize","cuStreamQuery","cuStreamWaitEvent","cuStreamBeginCapture_v2","cuStreamEndCapture","cuStreamIsCapturing","cuLaunchHostFunc","cuEventCreate","cuEventDestroy_v2","cuEventRecord","cuEventRecordWithFlags","cuEventSynchronize","cuEventQuery","cuEventElapsedTime","cuGraphInstantiateWithFlags","cuGraphInstantiate_v2","cuGraphLaunch","cuGraphExecDestroy","cuGraphDestroy","cuGraphDebugDotPrint","cuGetErrorName","cuGetErrorString","cuCtxGetDevice","cuCtxPushCurrent_v2","cuCtxPopCurrent_v2"};
__attribute__((destructor)) static void dump(void){ if(!getenv("STUB_COUNTS")) return; for(int i=0;i<80;i++) if(counts[i]) fprintf(stderr,"stub %-32s %lu\n",names[i],counts[i]); }
#define H(name, ...) CUresult name(__VA_ARGS__)
H(cuInit, unsigned f) { counts[0]++; return 0; }
H(cuDriverGetVersion, int *v) { counts[1]++; *v = 13000; return 0; }
H(cuDeviceGetCount, int *n) { counts[2]++; *n = 1; return 0; }
H(cuDeviceGet, int *d, int o) { counts[3]++; *d = o; return 0; }
H(cuDeviceGetName, char *name, int len, int d) { counts[4]++; strncpy(name, "Stub H200", len); return 0; }
H(cuDeviceTotalMem_v2, size_t *b, int d) { counts[5]++; *b = 141ull << 30; return 0; }
H(cuDeviceGetAttribute, int *v, int a, int d) { counts[6]++;
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
H(cuDeviceCanAccessPeer, int *c, int a, int b) { counts[7]++; *c = 0; return 0; }
H(cuDevicePrimaryCtxRetain, void **c, int d) { counts[8]++; *c = (void *)0x77; return 0; }
H(cuDevicePrimaryCtxRelease_v2, int d) { counts[9]++; return 0; }
H(cuDevicePrimaryCtxReset_v2, int d) { counts[10]++; return 0; }
H(cuCtxSetCurrent, void *c) { counts[11]++; return 0; }
H(cuCtxGetCurrent, void **c) { counts[12]++; *c = (void *)0x77; return 0; }
H(cuCtxSynchronize, void) { counts[13]++; return 0; }
H(cuCtxEnablePeerAccess, void *c, unsigned f) { counts[14]++; return 0; }
H(cuCtxGetLimit, size_t *v, int l) { counts[15]++; *v = 1024; return 0; }
H(cuCtxSetLimit, int l, size_t v) { counts[16]++; return 0; }
H(cuModuleLoadDataEx, void **m, const void *img, unsigned n, void *o, void **ov) { counts[17]++; *m = handle(); return 0; }
H(cuModuleLoadData, void **m, const void *img) { counts[18]++; *m = handle(); return 0; }
H(cuModuleUnload, void *m) { counts[19]++; return 0; }
H(cuModuleGetFunction, void **f, void *m, const char *name) { counts[20]++; *f = handle(); return 0; }
H(cuModuleGetGlobal_v2, CUdeviceptr *p, size_t *b, void *m, const char *name) { counts[21]++;
  size_t sz = 4096;
  if (p) *p = (CUdeviceptr)(globals + globals_used);
  if (b) *b = sz;
  globals_used += sz;
  if (globals_used >= sizeof globals) globals_used = 0;
  return 0;
}
H(cuFuncGetAttribute, int *v, int a, void *f) { counts[22]++;
  switch (a) { case 0: *v = 1024; break; case 4: *v = 32; break; default: *v = 0; }
  return 0;
}
H(cuFuncSetAttribute, void *f, int a, int v) { counts[23]++; return 0; }
H(cuFuncSetCacheConfig, void *f, int c) { counts[24]++; return 0; }
H(cuLaunchKernel, void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
  unsigned sh, void *s, void **p, void **e) { return 0; }
H(cuMemAlloc_v2, CUdeviceptr *p, size_t b) { counts[26]++; *p = (CUdeviceptr)aligned_alloc(256, (b + 255) & ~(size_t)255); return 0; }
H(cuMemFree_v2, CUdeviceptr p) { counts[27]++; free((void *)p); return 0; }
H(cuMemAllocAsync, CUdeviceptr *p, size_t b, void *s) { counts[28]++; return cuMemAlloc_v2(p, b); }
H(cuMemFreeAsync, CUdeviceptr p, void *s) { counts[29]++; return cuMemFree_v2(p); }
H(cuMemHostAlloc, void **p, size_t b, unsigned f) { counts[30]++; *p = aligned_alloc(4096, (b + 4095) & ~(size_t)4095); memset(*p, 0, b); return 0; }
H(cuMemAllocHost_v2, void **p, size_t b) { counts[31]++; return cuMemHostAlloc(p, b, 0); }
H(cuMemFreeHost, void *p) { counts[32]++; free(p); return 0; }
H(cuMemHostGetDevicePointer_v2, CUdeviceptr *d, void *p, unsigned f) { counts[33]++; *d = (CUdeviceptr)p; return 0; }
H(cuMemGetInfo_v2, size_t *f, size_t *t) { counts[34]++; *f = 140ull << 30; *t = 141ull << 30; return 0; }
H(cuMemcpyHtoD_v2, CUdeviceptr d, const void *s, size_t b) { counts[35]++; memcpy((void *)d, s, b); return 0; }
H(cuMemcpyDtoH_v2, void *d, CUdeviceptr s, size_t b) { counts[36]++; memcpy(d, (void *)s, b); return 0; }
H(cuMemcpyDtoD_v2, CUdeviceptr d, CUdeviceptr s, size_t b) { counts[37]++; memmove((void *)d, (void *)s, b); return 0; }
H(cuMemcpyHtoDAsync_v2, CUdeviceptr d, const void *s, size_t b, void *st) { counts[38]++; memcpy((void *)d, s, b); return 0; }
H(cuMemcpyDtoHAsync_v2, void *d, CUdeviceptr s, size_t b, void *st) { counts[39]++; memcpy(d, (void *)s, b); return 0; }
H(cuMemcpyDtoDAsync_v2, CUdeviceptr d, CUdeviceptr s, size_t b, void *st) { counts[40]++; memmove((void *)d, (void *)s, b); return 0; }
H(cuMemcpyAsync, CUdeviceptr d, CUdeviceptr s, size_t b, void *st) { counts[41]++; memmove((void *)d, (void *)s, b); return 0; }
H(cuMemcpy, CUdeviceptr d, CUdeviceptr s, size_t b) { counts[42]++; memmove((void *)d, (void *)s, b); return 0; }
H(cuMemcpyPeerAsync, CUdeviceptr d, void *dc, CUdeviceptr s, void *sc, size_t b, void *st) { counts[43]++; memmove((void *)d, (void *)s, b); return 0; }
H(cuMemsetD8_v2, CUdeviceptr d, unsigned char v, size_t n) { counts[44]++; memset((void *)d, v, n); return 0; }
H(cuMemsetD8Async, CUdeviceptr d, unsigned char v, size_t n, void *s) { counts[45]++; memset((void *)d, v, n); return 0; }
H(cuMemsetD32_v2, CUdeviceptr d, unsigned v, size_t n) { counts[46]++; for (size_t i = 0; i < n; i++) ((unsigned *)d)[i] = v; return 0; }
H(cuMemsetD32Async, CUdeviceptr d, unsigned v, size_t n, void *s) { counts[47]++; return cuMemsetD32_v2(d, v, n); }
H(cuMemHostRegister_v2, void *p, size_t b, unsigned f) { counts[48]++; return 0; }
H(cuMemHostUnregister, void *p) { counts[49]++; return 0; }
H(cuPointerGetAttributes, unsigned n, int *a, void **d, CUdeviceptr p) { counts[50]++; return 0; }
H(cuPointerGetAttribute, void *d, int a, CUdeviceptr p) { counts[51]++; return 1; }
H(cuStreamCreate, void **s, unsigned f) { counts[52]++; *s = handle(); return 0; }
H(cuStreamCreateWithPriority, void **s, unsigned f, int p) { counts[53]++; *s = handle(); return 0; }
H(cuStreamDestroy_v2, void *s) { counts[54]++; return 0; }
H(cuStreamSynchronize, void *s) { counts[55]++; return 0; }
H(cuStreamQuery, void *s) { counts[56]++; return 0; }
H(cuStreamWaitEvent, void *s, void *e, unsigned f) { counts[57]++; return 0; }
H(cuStreamBeginCapture_v2, void *s, int m) { counts[58]++; return 0; }
H(cuStreamEndCapture, void *s, void **g) { counts[59]++; *g = handle(); return 0; }
H(cuStreamIsCapturing, void *s, int *st) { counts[60]++; *st = 0; return 0; }
H(cuLaunchHostFunc, void *s, void (*fn)(void *), void *u) { counts[61]++; fn(u); return 0; }
H(cuEventCreate, void **e, unsigned f) { counts[62]++; *e = handle(); return 0; }
H(cuEventDestroy_v2, void *e) { counts[63]++; return 0; }
H(cuEventRecord, void *e, void *s) { counts[64]++; return 0; }
H(cuEventRecordWithFlags, void *e, void *s, unsigned f) { counts[65]++; return 0; }
H(cuEventSynchronize, void *e) { counts[66]++; return 0; }
H(cuEventQuery, void *e) { counts[67]++; return 0; }
H(cuEventElapsedTime, float *ms, void *a, void *b) { counts[68]++; *ms = 1.0f; return 0; }
H(cuGraphInstantiateWithFlags, void **x, void *g, unsigned long long f) { counts[69]++; *x = handle(); return 0; }
H(cuGraphInstantiate_v2, void **x, void *g, void *a, char *b, size_t c) { counts[70]++; *x = handle(); return 0; }
H(cuGraphLaunch, void *x, void *s) { counts[71]++; return 0; }
H(cuGraphExecDestroy, void *x) { counts[72]++; return 0; }
H(cuGraphDestroy, void *g) { counts[73]++; return 0; }
H(cuGraphDebugDotPrint, void *g, const char *p, unsigned f) { counts[74]++; return 0; }
H(cuGetErrorName, int e, const char **s) { counts[75]++; *s = "CUDA_ERROR_STUB"; return 0; }
H(cuGetErrorString, int e, const char **s) { counts[76]++; *s = "stub error"; return 0; }
H(cuCtxGetDevice, int *d) { counts[77]++; *d = 0; return 0; }
H(cuCtxPushCurrent_v2, void *c) { counts[78]++; return 0; }
H(cuCtxPopCurrent_v2, void **c) { counts[79]++; if (c) *c = (void *)0x77; return 0; }