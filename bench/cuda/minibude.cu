// miniBUDE in CUDA C++: the baseline for bench/minibude.
//
// Our own code after the published algorithm and the structure of
// UoB-HPC/miniBUDE's CUDA version: the fasten kernel templated on PPWI
// (poses per thread), thread ix = blockIdx.x * blockDim.x * PPWI +
// threadIdx.x evaluates poses ix + i * blockDim.x, extra threads clamp to
// the last poses; ceil(ceil(nposes / PPWI) / wgsize) blocks of wgsize
// threads; the force field read from global memory (the original's default,
// no USE_SHARED); `__restrict__` on every pointer (the original builds with
// nvcc -restrict). Each launch is followed by cudaDeviceSynchronize and
// timed on the host; `--warmup` untimed launches first; interactions per
// second = nposes * natlig * natpro / average time of the timed launches.
// Validation: every pose within 0.025 % of ref_energies.out (relative to its
// magnitude), poses where both are below 1 skipped.
//
// The original declares Atom and FFParams __attribute__((packed)), which
// makes nvcc load them byte by byte; -DBUDE_ALIGNED gives them their natural
// 4-byte alignment (as the Rust version has). Build both and compare against
// the faster.
//
//   nvcc -O3 -arch=sm_90 [-use_fast_math] [-DBUDE_ALIGNED] -o minibude-cuda minibude.cu
//   ./minibude-cuda --deck DIR --ppwi 1,2,4 --wgsize 64,128 [--csv] [--mode LABEL]
#include <chrono>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "check.h"

#define ZERO 0.0f
#define QUARTER 0.25f
#define HALF 0.5f
#define ONE 1.0f
#define TWO 2.0f
#define FOUR 4.0f
#define CNSTNT 45.0f
#define HBTYPE_F 70
#define HBTYPE_E 69
#define HARDNESS 38.0f
#define NPNPDIST 5.5f
#define NPPDIST 1.0f
#define DIFF_TOLERANCE_PCT 0.025
// PPWI 64 and 128 take most of nvcc's time and are never the fastest on
// current GPUs; -DBUDE_PPWI_MAX=128 builds them too.
#ifndef BUDE_PPWI_MAX
#define BUDE_PPWI_MAX 32
#endif

#ifdef BUDE_ALIGNED
#define BUDE_PACKED
static const char *LAYOUT = "aligned";
#else
#define BUDE_PACKED __attribute__((__packed__))
static const char *LAYOUT = "packed";
#endif

struct BUDE_PACKED Atom {
  float x, y, z;
  int type;
};
struct BUDE_PACKED FFParams {
  int hbtype;
  float radius, hphb, elsc;
};

template <int PPWI>
__global__ void fasten_main(int natlig, int natpro, const Atom *__restrict__ protein, const Atom *__restrict__ ligand,
                            const float *__restrict__ t0, const float *__restrict__ t1, const float *__restrict__ t2,
                            const float *__restrict__ t3, const float *__restrict__ t4, const float *__restrict__ t5,
                            float *__restrict__ etotals, const FFParams *__restrict__ forcefield, int nposes) {
  int ix = blockIdx.x * blockDim.x * PPWI + threadIdx.x;
  ix = ix < nposes ? ix : nposes - PPWI;

  float etot[PPWI];
  float4 transform[PPWI][3];
  const size_t lsz = blockDim.x;
  for (int i = 0; i < PPWI; i++) {
    size_t index = ix + i * lsz;
    const float sx = sin(t0[index]), cx = cos(t0[index]);
    const float sy = sin(t1[index]), cy = cos(t1[index]);
    const float sz = sin(t2[index]), cz = cos(t2[index]);
    transform[i][0] = make_float4(cy * cz, sx * sy * cz - cx * sz, cx * sy * cz + sx * sz, t3[index]);
    transform[i][1] = make_float4(cy * sz, sx * sy * sz + cx * cz, cx * sy * sz - sx * cz, t4[index]);
    transform[i][2] = make_float4(-sy, sx * cy, cx * cy, t5[index]);
    etot[i] = ZERO;
  }

  int il = 0;
  do {
    const Atom l_atom = ligand[il];
    const FFParams l_params = forcefield[l_atom.type];
    const bool lhphb_ltz = l_params.hphb < ZERO;
    const bool lhphb_gtz = l_params.hphb > ZERO;

    float3 lpos[PPWI];
    for (int i = 0; i < PPWI; i++) {
      lpos[i].x = transform[i][0].w + l_atom.x * transform[i][0].x + l_atom.y * transform[i][0].y + l_atom.z * transform[i][0].z;
      lpos[i].y = transform[i][1].w + l_atom.x * transform[i][1].x + l_atom.y * transform[i][1].y + l_atom.z * transform[i][1].z;
      lpos[i].z = transform[i][2].w + l_atom.x * transform[i][2].x + l_atom.y * transform[i][2].y + l_atom.z * transform[i][2].z;
    }

    int ip = 0;
    do {
      const Atom p_atom = protein[ip];
      const FFParams p_params = forcefield[p_atom.type];

      const float radij = p_params.radius + l_params.radius;
      const float r_radij = 1.0f / radij;
      const float elcdst = (p_params.hbtype == HBTYPE_F && l_params.hbtype == HBTYPE_F) ? FOUR : TWO;
      const float elcdst1 = (p_params.hbtype == HBTYPE_F && l_params.hbtype == HBTYPE_F) ? QUARTER : HALF;
      const bool type_E = ((p_params.hbtype == HBTYPE_E || l_params.hbtype == HBTYPE_E));
      const bool phphb_ltz = p_params.hphb < ZERO;
      const bool phphb_gtz = p_params.hphb > ZERO;
      const bool phphb_nz = p_params.hphb != ZERO;
      const float p_hphb = p_params.hphb * (phphb_ltz && lhphb_gtz ? -ONE : ONE);
      const float l_hphb = l_params.hphb * (phphb_gtz && lhphb_ltz ? -ONE : ONE);
      const float distdslv = (phphb_ltz ? (lhphb_ltz ? NPNPDIST : NPPDIST) : (lhphb_ltz ? NPPDIST : -FLT_MAX));
      const float r_distdslv = 1.0f / distdslv;
      const float chrg_init = l_params.elsc * p_params.elsc;
      const float dslv_init = p_hphb + l_hphb;

      for (int i = 0; i < PPWI; i++) {
        const float x = lpos[i].x - p_atom.x;
        const float y = lpos[i].y - p_atom.y;
        const float z = lpos[i].z - p_atom.z;
        const float distij = sqrt(x * x + y * y + z * z);
        const float distbb = distij - radij;
        const bool zone1 = (distbb < ZERO);
        etot[i] += (ONE - (distij * r_radij)) * (zone1 ? TWO * HARDNESS : ZERO);
        float chrg_e = chrg_init * ((zone1 ? ONE : (ONE - distbb * elcdst1)) * (distbb < elcdst ? ONE : ZERO));
        const float neg_chrg_e = -fabs(chrg_e);
        chrg_e = type_E ? neg_chrg_e : chrg_e;
        etot[i] += chrg_e * CNSTNT;
        const float coeff = (ONE - (distbb * r_distdslv));
        float dslv_e = dslv_init * ((distbb < distdslv && phphb_nz) ? ONE : ZERO);
        dslv_e *= (zone1 ? ONE : coeff);
        etot[i] += dslv_e;
      }
    } while (++ip < natpro);
  } while (++il < natlig);

  const int td_base = blockIdx.x * blockDim.x * PPWI + threadIdx.x;
  if (td_base < nposes) {
    for (int i = 0; i < PPWI; i++) {
      if (td_base + i * blockDim.x < nposes) etotals[td_base + i * blockDim.x] = etot[i] * HALF;
    }
  }
}

template <class T> static std::vector<T> read_records(const std::string &path) {
  FILE *f = std::fopen(path.c_str(), "rb");
  if (!f) {
    std::fprintf(stderr, "error: cannot read %s\n", path.c_str());
    std::exit(1);
  }
  std::vector<T> v;
  T x;
  while (std::fread(&x, sizeof(T), 1, f) == 1) v.push_back(x);
  std::fclose(f);
  return v;
}

static std::vector<int> parse_list(const char *s) {
  std::vector<int> v;
  std::string str(s);
  if (str == "all") return BUDE_PPWI_MAX >= 128 ? std::vector<int>{1, 2, 4, 8, 16, 32, 64, 128} : std::vector<int>{1, 2, 4, 8, 16, 32};
  size_t pos = 0;
  while (pos <= str.size()) {
    size_t c = str.find(',', pos);
    if (c == std::string::npos) c = str.size();
    v.push_back(std::atoi(str.substr(pos, c - pos).c_str()));
    pos = c + 1;
  }
  return v;
}

int main(int argc, char **argv) {
  std::string deck = "../shared/data/minibude/bm1", mode = "default";
  int iters = 8, warmup = 2, nposes_arg = 0;
  bool csv = false;
  std::vector<int> ppwis = {4}, wgsizes = {64};
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    auto next = [&] {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "error: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--deck") deck = next();
    else if (a == "-i" || a == "--iter") iters = std::atoi(next());
    else if (a == "--warmup") warmup = std::atoi(next());
    else if (a == "-n" || a == "--poses") nposes_arg = std::atoi(next());
    else if (a == "-p" || a == "--ppwi") ppwis = parse_list(next());
    else if (a == "-w" || a == "--wgsize") wgsizes = parse_list(next());
    else if (a == "--mode") mode = next();
    else if (a == "--csv") csv = true;
    else {
      std::fprintf(stderr, "usage: %s [--deck DIR] [-i N] [--warmup N] [-n POSES] [-p LIST] [-w LIST] [--mode L] [--csv]\n", argv[0]);
      return 2;
    }
  }
  auto ligand = read_records<Atom>(deck + "/ligand.in");
  auto protein = read_records<Atom>(deck + "/protein.in");
  auto ff = read_records<FFParams>(deck + "/forcefield.in");
  auto raw = read_records<float>(deck + "/poses.in");
  size_t maxp = raw.size() / 6, n = nposes_arg ? nposes_arg : maxp;
  if (raw.size() % 6 || n > maxp || iters < 1) {
    std::fprintf(stderr, "error: bad poses.in or pose count\n");
    return 1;
  }
  std::vector<float> ref;
  {
    FILE *f = std::fopen((deck + "/ref_energies.out").c_str(), "r");
    if (!f) {
      std::fprintf(stderr, "error: cannot read ref_energies.out\n");
      return 1;
    }
    float e;
    while (std::fscanf(f, "%f", &e) == 1) ref.push_back(e);
    std::fclose(f);
  }
  if (ref.size() < n) {
    std::fprintf(stderr, "error: %zu reference energies for %zu poses\n", ref.size(), n);
    return 1;
  }
  CU(cudaSetDevice(0));
  cudaDeviceProp props;
  CU(cudaGetDeviceProperties(&props, 0));
  auto upload = [](const void *src, size_t bytes) {
    void *d;
    CU(cudaMalloc(&d, bytes));
    CU(cudaMemcpy(d, src, bytes, cudaMemcpyHostToDevice));
    return d;
  };
  Atom *d_protein = (Atom *)upload(protein.data(), protein.size() * sizeof(Atom));
  Atom *d_ligand = (Atom *)upload(ligand.data(), ligand.size() * sizeof(Atom));
  FFParams *d_ff = (FFParams *)upload(ff.data(), ff.size() * sizeof(FFParams));
  float *d_t[6];
  for (int k = 0; k < 6; k++) d_t[k] = (float *)upload(raw.data() + k * maxp, n * sizeof(float));
  float *d_e;
  CU(cudaMalloc(&d_e, n * sizeof(float)));
  const int natlig = ligand.size(), natpro = protein.size(), nn = n;
  if (!csv) {
    std::printf("miniBUDE (CUDA baseline, %s structs, mode %s)\nDevice: %s\n", LAYOUT, mode.c_str(), props.name);
    std::printf("Deck: %s (%d ligand atoms, %d protein atoms, %zu poses)\n", deck.c_str(), natlig, natpro, n);
    std::printf("%5s %6s %12s %12s %14s %10s  valid\n", "ppwi", "wgsize", "avg ms", "min ms", "GInteract/s", "max diff %");
  }
  bool all_valid = true;
  std::vector<float> energies(n);
  const double interactions = double(n) * natlig * natpro;
  for (int ppwi : ppwis) {
    for (int wg : wgsizes) {
      size_t global = (n + ppwi - 1) / ppwi;
      global = (global + wg - 1) / wg;
      auto launch = [&] {
        switch (ppwi) {
#define CASE(P)                                                                                                       \
  case P:                                                                                                             \
    fasten_main<P><<<global, wg>>>(natlig, natpro, d_protein, d_ligand, d_t[0], d_t[1], d_t[2], d_t[3], d_t[4], d_t[5], \
                                   d_e, d_ff, nn);                                                                    \
    break;
          CASE(1) CASE(2) CASE(4) CASE(8) CASE(16) CASE(32)
#if BUDE_PPWI_MAX >= 128
          CASE(64) CASE(128)
#endif
#undef CASE
        default:
          std::fprintf(stderr, "error: unsupported PPWI %d\n", ppwi);
          std::exit(2);
        }
        CU(cudaPeekAtLastError());
        CU(cudaDeviceSynchronize());
      };
      CU(cudaMemset(d_e, 0xff, n * sizeof(float)));  // NaN: every pose must be written
      std::vector<double> times;
      for (int k = 0; k < warmup + iters; k++) {
        auto t0 = std::chrono::high_resolution_clock::now();
        launch();
        auto t1 = std::chrono::high_resolution_clock::now();
        if (k >= warmup) times.push_back(std::chrono::duration<double>(t1 - t0).count());
      }
      CU(cudaMemcpy(energies.data(), d_e, n * sizeof(float), cudaMemcpyDeviceToHost));
      double maxdiff = 0;
      size_t failed = 0;
      for (size_t i = 0; i < n; i++) {
        if (std::fabs(ref[i]) < 1.f && std::fabs(energies[i]) < 1.f) continue;
        double d = 100.0 * std::fabs(double(ref[i]) - energies[i]) / std::fabs(double(ref[i]));
        if (!(d <= DIFF_TOLERANCE_PCT)) failed++;
        maxdiff = std::isnan(d) ? INFINITY : std::max(maxdiff, d);
      }
      all_valid &= failed == 0;
      double avg = 0, mn = 1e30;
      for (double t : times) avg += t, mn = std::min(mn, t);
      avg /= times.size();
      double rate = interactions / avg * 1e-9;
      if (csv) {
        const char *impl = LAYOUT[0] == 'p' ? "cuda" : "cuda_aligned";
        std::printf("minibude,%s,%s,p%d_w%d,%zu,ginteractions_per_sec,%.4f\n", impl, mode.c_str(), ppwi, wg, n, rate);
        std::printf("minibude,%s,%s,p%d_w%d,%zu,best_ginteractions_per_sec,%.4f\n", impl, mode.c_str(), ppwi, wg, n, interactions / mn * 1e-9);
        std::printf("minibude,%s,%s,p%d_w%d,%zu,max_diff_pct,%.6f\n", impl, mode.c_str(), ppwi, wg, n, maxdiff);
        std::printf("minibude,%s,%s,p%d_w%d,%zu,valid,%d\n", impl, mode.c_str(), ppwi, wg, n, failed == 0);
      } else {
        std::printf("%5d %6d %12.3f %12.3f %14.3f %10.5f  %s\n", ppwi, wg, avg * 1e3, mn * 1e3, rate, maxdiff, failed ? "NO" : "yes");
      }
    }
  }
  return all_valid ? 0 : 1;
}
