//! miniBUDE, written with `offload`: the docking energy of every pose of a
//! ligand against a protein (the `fasten` kernel of BUDE), compute-bound.
//!
//! Our own code after the published algorithm (McIntosh-Smith et al.,
//! "High performance in silico virtual drug screening on many-core
//! processors", IJHPCA 2015; the mini-app UoB-HPC/miniBUDE). As there:
//! - the deck (`--deck DIR`) holds `ligand.in`, `protein.in` (atoms: x, y,
//!   z as f32, type as i32), `forcefield.in` (hbtype i32, radius, hphb, elsc
//!   f32) and `poses.in` (six f32 arrays: three rotation angles, three
//!   translations), little-endian; `ref_energies.out` one energy per line;
//! - each GPU thread evaluates `PPWI` poses (`--ppwi`, poses per work-item)
//!   in blocks of `--wgsize` threads: ceil(ceil(nposes / PPWI) / wgsize)
//!   blocks; the kernel runs `--warmup` + `--iter` times, each launch timed
//!   on the host around launch and synchronization; the figure of merit is
//!   interactions per second, nposes · natlig · natpro over the average time
//!   of the timed launches;
//! - validation: every pose's energy within 0.025 % of the reference,
//!   poses where both values are below 1 in magnitude skipped. (The
//!   original divides by the signed reference, so negative references
//!   always pass; we divide by its magnitude, which is stricter.)
//!
//! One layout difference: a thread's poses are `global_index() + i ·
//! global_size()` (the elements it owns of the output, so every write is
//! a safe `DisjointSlice` access) where the CUDA version uses `block start +
//! threadIdx.x + i · blockDim.x`; both read the pose arrays coalesced and do
//! the same work per thread.
//!
//! Three choices that keep the inner loop as short as nvcc's (measured with
//! `cuobjdump -sass` on the fast-math p1 kernel, SASS instructions per
//! protein atom: 84 before, 58 after, nvcc 63):
//! - force-field lookups index with `min(type, last)` computed in 32 bits,
//!   into the force field resliced to `last + 1` entries, so the compiler
//!   proves them in bounds: no bounds-check branch per atom pair, and no
//!   64-bit index arithmetic. `Deck::load` rejects atom types outside the
//!   force field, so the clamp never changes a result;
//! - the C ternaries `c ? a : b` of the loop become
//!   `core::hint::select_unpredictable` (a `select`, as clang emits for
//!   them); written as `if`, LLVM merged the three conditions on `hphb`
//!   into a six-way branch tree per atom pair;
//! - the protein loop counts a `u32` index (`for ip in 0..natpro`, as the
//!   CUDA version's `int ip`) rather than iterating the slice: LLVM unrolls
//!   a counted loop with a run-time trip count (by 2, see the device
//!   linker's `RUNTIME_UNROLL`), as nvcc does, but not the pointer loop of
//!   a slice iterator.
//!
//! Math: `offload::math::{sqrt, sin, cos}`; built with `cargo offload
//! --fast-math` these become the approximate forms of nvcc's
//! `-use_fast_math`, which miniBUDE's CUDA build uses.
//!
//! ```text
//! cargo offload run --release -p minibude -- --deck ../shared/data/minibude/bm1 --ppwi 1,2,4,8 --wgsize 64,128
//! ```

use offload::math::{cos, sin, sqrt};
use offload::prelude::*;

use core::hint::select_unpredictable as select;

/// An atom of the ligand or protein (`Atom` of miniBUDE's `bude.h`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, offload::DeviceCopy)]
pub struct Atom {
    pub x: f32,
    pub y: f32,
    pub z: f32,
    /// Index into the force field.
    pub ty: i32,
}

/// A force-field entry (`FFParams` of miniBUDE's `bude.h`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, offload::DeviceCopy)]
pub struct FFParams {
    pub hbtype: i32,
    pub radius: f32,
    pub hphb: f32,
    pub elsc: f32,
}

const ZERO: f32 = 0.0;
const QUARTER: f32 = 0.25;
const HALF: f32 = 0.5;
const ONE: f32 = 1.0;
const TWO: f32 = 2.0;
const FOUR: f32 = 4.0;
const CNSTNT: f32 = 45.0;
const HBTYPE_F: i32 = 70;
const HBTYPE_E: i32 = 69;
const HARDNESS: f32 = 38.0;
const NPNPDIST: f32 = 5.5;
const NPPDIST: f32 = 1.0;

/// The pose arrays: rotations about x, y, z and translations along x, y, z.
type Poses<'a> = [&'a [f32]; 6];

/// The body shared by the kernels: this thread's `PPWI` poses.
#[inline(always)]
fn fasten<const PPWI: usize>(
    protein: &[Atom],
    ligand: &[Atom],
    forcefield: &[FFParams],
    poses: Poses<'_>,
    etotals: &mut DisjointSlice<'_, f32>,
) {
    let nposes = etotals.len();
    if nposes == 0 || forcefield.is_empty() {
        return;
    }
    // Lookups clamp the atom type to `last_ff` in 32 bits, so they need no
    // bounds check (see the top of the file); the host validated the types.
    let last_ff = (forcefield.len() - 1).min(u32::MAX as usize) as u32;
    let forcefield = &forcefield[..=last_ff as usize];
    let natpro = protein.len().min(u32::MAX as usize) as u32;
    let protein = &protein[..natpro as usize];
    let gid = global_index();
    let stride = global_size();
    let [t0, t1, t2, t3, t4, t5] = poses;
    let (t0, t1, t2, t3, t4, t5) = (&t0[..nposes], &t1[..nposes], &t2[..nposes], &t3[..nposes], &t4[..nposes], &t5[..nposes]);

    // Transformation matrices (3 rows of rotation | translation).
    let mut transform = [[[0f32; 4]; 3]; PPWI];
    let mut etot = [0f32; PPWI];
    for i in 0..PPWI {
        // Threads past the last pose compute the last pose again (as the CUDA
        // version clamps) and do not write it.
        let ix = (gid + i * stride).min(nposes - 1);
        let (sx, cx) = (sin(t0[ix]), cos(t0[ix]));
        let (sy, cy) = (sin(t1[ix]), cos(t1[ix]));
        let (sz, cz) = (sin(t2[ix]), cos(t2[ix]));
        transform[i] = [
            [cy * cz, sx * sy * cz - cx * sz, cx * sy * cz + sx * sz, t3[ix]],
            [cy * sz, sx * sy * sz + cx * cz, cx * sy * sz - sx * cz, t4[ix]],
            [-sy, sx * cy, cx * cy, t5[ix]],
        ];
    }

    for l_atom in ligand {
        let l_params = forcefield[(l_atom.ty as u32).min(last_ff) as usize];
        let lhphb_ltz = l_params.hphb < ZERO;
        let lhphb_gtz = l_params.hphb > ZERO;

        let mut lpos = [[0f32; 3]; PPWI];
        for i in 0..PPWI {
            let t = &transform[i];
            for r in 0..3 {
                lpos[i][r] = t[r][3] + l_atom.x * t[r][0] + l_atom.y * t[r][1] + l_atom.z * t[r][2];
            }
        }

        for ip in 0..natpro {
            let p_atom = protein[ip as usize];
            let p_params = forcefield[(p_atom.ty as u32).min(last_ff) as usize];

            let radij = p_params.radius + l_params.radius;
            let r_radij = ONE / radij;

            let both_f = p_params.hbtype == HBTYPE_F && l_params.hbtype == HBTYPE_F;
            let elcdst = if both_f { FOUR } else { TWO };
            let elcdst1 = if both_f { QUARTER } else { HALF };
            let type_e = p_params.hbtype == HBTYPE_E || l_params.hbtype == HBTYPE_E;

            let phphb_ltz = p_params.hphb < ZERO;
            let phphb_gtz = p_params.hphb > ZERO;
            let phphb_nz = p_params.hphb != ZERO;
            let p_hphb = p_params.hphb * select(phphb_ltz & lhphb_gtz, -ONE, ONE);
            let l_hphb = l_params.hphb * select(phphb_gtz & lhphb_ltz, -ONE, ONE);
            let distdslv = select(
                phphb_ltz,
                select(lhphb_ltz, NPNPDIST, NPPDIST),
                select(lhphb_ltz, NPPDIST, -f32::MAX),
            );
            let r_distdslv = ONE / distdslv;

            let chrg_init = l_params.elsc * p_params.elsc;
            let dslv_init = p_hphb + l_hphb;

            for i in 0..PPWI {
                // Distance between the atoms.
                let x = lpos[i][0] - p_atom.x;
                let y = lpos[i][1] - p_atom.y;
                let z = lpos[i][2] - p_atom.z;
                let distij = sqrt(x * x + y * y + z * z);

                // Overlap of the spheres.
                let distbb = distij - radij;
                let zone1 = distbb < ZERO;

                // Steric energy.
                etot[i] += (ONE - distij * r_radij) * if zone1 { TWO * HARDNESS } else { ZERO };

                // Formal and dipole charge interactions.
                let mut chrg_e = chrg_init
                    * ((if zone1 { ONE } else { ONE - distbb * elcdst1 }) * if distbb < elcdst { ONE } else { ZERO });
                let neg_chrg_e = -chrg_e.abs();
                chrg_e = if type_e { neg_chrg_e } else { chrg_e };
                etot[i] += chrg_e * CNSTNT;

                // Nonpolar-polar repulsive interactions.
                let coeff = ONE - distbb * r_distdslv;
                let mut dslv_e = dslv_init * if distbb < distdslv && phphb_nz { ONE } else { ZERO };
                dslv_e *= if zone1 { ONE } else { coeff };
                etot[i] += dslv_e;
            }
        }
    }

    for (i, e) in etot.iter().enumerate() {
        if let Some(out) = etotals.get_mut(gid + i * stride) {
            *out = e * HALF;
        }
    }
}

macro_rules! fasten_kernels {
    ($($name:ident = $ppwi:literal),* $(,)?) => {$(
        /// `fasten` with this many poses per thread.
        #[kernel]
        fn $name(
            protein: &[Atom],
            ligand: &[Atom],
            forcefield: &[FFParams],
            rx: &[f32],
            ry: &[f32],
            rz: &[f32],
            tx: &[f32],
            ty: &[f32],
            tz: &[f32],
            etotals: &mut [f32],
        ) {
            fasten::<$ppwi>(protein, ligand, forcefield, [rx, ry, rz, tx, ty, tz], &mut etotals);
        }
    )*};
}

fasten_kernels!(
    fasten_1 = 1,
    fasten_2 = 2,
    fasten_4 = 4,
    fasten_8 = 8,
    fasten_16 = 16,
    fasten_32 = 32,
    fasten_64 = 64,
    fasten_128 = 128,
);

/// Poses per thread with a kernel, in order.
pub const PPWIS: [usize; 8] = [1, 2, 4, 8, 16, 32, 64, 128];

#[offload::host]
mod host {
    use super::*;
    use clap::Parser;
    use offload::{DeviceBuffer, LaunchConfig};
    use std::path::{Path, PathBuf};
    use std::time::Instant;

    /// Relative error allowed per pose, in percent (miniBUDE's `DIFF_TOLERANCE_PCT`).
    pub const DIFF_TOLERANCE_PCT: f64 = 0.025;

    #[derive(Parser, Debug)]
    #[command(about = "miniBUDE with offload: docking energies of every pose, interactions per second")]
    pub struct Args {
        /// Input deck directory
        #[arg(long, default_value = "../shared/data/minibude/bm1")]
        pub deck: PathBuf,
        /// Timed launches per configuration
        #[arg(short, long = "iter", default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..))]
        pub iter: u32,
        /// Untimed launches first
        #[arg(long, default_value_t = 2)]
        pub warmup: u32,
        /// Poses to evaluate, the first N of the deck (0: all)
        #[arg(short = 'n', long, default_value_t = 0)]
        pub poses: usize,
        /// Poses per thread, a comma-separated list or `all` (1, 2, 4, …, 128)
        #[arg(short, long, default_value = "4", value_parser = parse_ppwi)]
        pub ppwi: PpwiList,
        /// Threads per block, a comma-separated list
        #[arg(short, long, default_value = "64", value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..=1024))]
        pub wgsize: Vec<u32>,
        /// Label of the build in CSV rows (e.g. `fast-math` for a `cargo offload --fast-math` build)
        #[arg(long, default_value = "default")]
        pub mode: String,
        /// Print CSV rows `bench,impl,mode,case,size,metric,value` only
        #[arg(long)]
        pub csv: bool,
    }

    #[derive(Clone, Debug)]
    pub struct PpwiList(pub Vec<usize>);

    fn parse_ppwi(s: &str) -> Result<PpwiList, String> {
        if s == "all" {
            return Ok(PpwiList(PPWIS.to_vec()));
        }
        s.split(',')
            .map(|p| match p.trim().parse::<usize>() {
                Ok(v) if PPWIS.contains(&v) => Ok(v),
                _ => Err(format!("`{p}` is not a supported PPWI; use one of {PPWIS:?} or `all`")),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(PpwiList)
    }

    /// The input deck.
    pub struct Deck {
        pub protein: Vec<Atom>,
        pub ligand: Vec<Atom>,
        pub forcefield: Vec<FFParams>,
        /// Six arrays of `nposes` values.
        pub poses: [Vec<f32>; 6],
        pub ref_energies: Vec<f32>,
    }

    fn read(path: &Path) -> Result<Vec<u8>, String> {
        std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
    }

    fn records<T>(path: &Path, f: impl Fn(&[u8]) -> T) -> Result<Vec<T>, String> {
        let bytes = read(path)?;
        if bytes.is_empty() || bytes.len() % 16 != 0 {
            return Err(format!("{}: {} bytes is not a whole number of 16-byte records", path.display(), bytes.len()));
        }
        Ok(bytes.chunks_exact(16).map(f).collect())
    }

    fn f32_at(b: &[u8], i: usize) -> f32 {
        f32::from_le_bytes(b[4 * i..4 * i + 4].try_into().unwrap())
    }
    fn i32_at(b: &[u8], i: usize) -> i32 {
        i32::from_le_bytes(b[4 * i..4 * i + 4].try_into().unwrap())
    }

    impl Deck {
        /// Reads a deck, keeping the first `nposes` poses (0: all).
        ///
        /// # Errors
        /// A message naming the file for a missing or malformed file, atom
        /// types outside the force field, or too few poses or reference energies.
        pub fn load(dir: &Path, nposes: usize) -> Result<Deck, String> {
            let atom = |b: &[u8]| Atom { x: f32_at(b, 0), y: f32_at(b, 1), z: f32_at(b, 2), ty: i32_at(b, 3) };
            let ligand = records(&dir.join("ligand.in"), atom)?;
            let protein = records(&dir.join("protein.in"), atom)?;
            let forcefield = records(&dir.join("forcefield.in"), |b| FFParams {
                hbtype: i32_at(b, 0),
                radius: f32_at(b, 1),
                hphb: f32_at(b, 2),
                elsc: f32_at(b, 3),
            })?;
            for (name, atoms) in [("ligand.in", &ligand), ("protein.in", &protein)] {
                if let Some(a) = atoms.iter().find(|a| a.ty < 0 || a.ty as usize >= forcefield.len()) {
                    return Err(format!("{name}: atom type {} is outside the force field's {} entries", a.ty, forcefield.len()));
                }
            }
            let path = dir.join("poses.in");
            let raw = read(&path)?;
            if raw.len() % 24 != 0 || raw.is_empty() {
                return Err(format!("{}: {} bytes is not six equal f32 arrays", path.display(), raw.len()));
            }
            let max = raw.len() / 24;
            let n = if nposes == 0 { max } else { nposes };
            if n > max {
                return Err(format!("{n} poses requested but the deck has {max}"));
            }
            let poses: [Vec<f32>; 6] = std::array::from_fn(|k| (0..n).map(|i| f32_at(&raw, k * max + i)).collect());
            let path = dir.join("ref_energies.out");
            let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let ref_energies = text
                .lines()
                .filter(|l| !l.trim().is_empty())
                .enumerate()
                .map(|(i, l)| l.trim().parse::<f32>().map_err(|e| format!("{}:{}: `{l}`: {e}", path.display(), i + 1)))
                .collect::<Result<Vec<_>, _>>()?;
            if ref_energies.len() < n {
                return Err(format!("{}: {} reference energies for {n} poses", path.display(), ref_energies.len()));
            }
            Ok(Deck { protein, ligand, forcefield, poses, ref_energies })
        }

        pub fn nposes(&self) -> usize {
            self.poses[0].len()
        }
    }

    /// Checks every pose against the reference: returns the largest relative
    /// difference in percent and the indices of poses beyond the tolerance.
    pub fn validate(energies: &[f32], reference: &[f32]) -> (f64, Vec<usize>) {
        let mut max = 0.0f64;
        let mut failed = Vec::new();
        for (i, (&e, &r)) in energies.iter().zip(reference).enumerate() {
            if r.abs() < 1.0 && e.abs() < 1.0 {
                continue;
            }
            let diff = 100.0 * (r as f64 - e as f64).abs() / (r as f64).abs();
            // NaN must fail too.
            if diff.is_nan() || diff > DIFF_TOLERANCE_PCT {
                failed.push(i);
            }
            max = max.max(if diff.is_nan() { f64::INFINITY } else { diff });
        }
        (max, failed)
    }

    pub struct DeviceDeck {
        protein: DeviceBuffer<Atom>,
        ligand: DeviceBuffer<Atom>,
        forcefield: DeviceBuffer<FFParams>,
        poses: [DeviceBuffer<f32>; 6],
        energies: DeviceBuffer<f32>,
    }

    impl DeviceDeck {
        pub fn new(d: &Deck) -> offload::Result<Self> {
            let p = |k: usize| DeviceBuffer::from_slice(&d.poses[k]);
            Ok(DeviceDeck {
                protein: DeviceBuffer::from_slice(&d.protein)?,
                ligand: DeviceBuffer::from_slice(&d.ligand)?,
                forcefield: DeviceBuffer::from_slice(&d.forcefield)?,
                poses: [p(0)?, p(1)?, p(2)?, p(3)?, p(4)?, p(5)?],
                energies: DeviceBuffer::zeroed(d.nposes())?,
            })
        }

        /// One launch of the kernel for `ppwi` poses per thread.
        pub fn fasten(&mut self, ppwi: usize, wgsize: u32) -> offload::Result<()> {
            let n = self.energies.len();
            let threads = n.div_ceil(ppwi);
            let cfg = LaunchConfig::new(threads.div_ceil(wgsize as usize) as u32, wgsize);
            let k = match ppwi {
                1 => fasten_1,
                2 => fasten_2,
                4 => fasten_4,
                8 => fasten_8,
                16 => fasten_16,
                32 => fasten_32,
                64 => fasten_64,
                128 => fasten_128,
                _ => unreachable!("PPWI values are checked when parsed"),
            };
            let [rx, ry, rz, tx, ty, tz] = &self.poses;
            k(cfg, &self.protein, &self.ligand, &self.forcefield, rx, ry, rz, tx, ty, tz, &mut self.energies)
        }
    }

    pub fn run(args: Args) -> Result<bool, String> {
        let deck = Deck::load(&args.deck, args.poses)?;
        let backend = offload::backend().map_err(|e| e.to_string())?;
        let n = deck.nposes();
        let (natlig, natpro) = (deck.ligand.len(), deck.protein.len());
        if !args.csv {
            println!("miniBUDE (offload)");
            println!("Backend: {backend}");
            println!(
                "Deck: {} ({natlig} ligand atoms, {natpro} protein atoms, {} force-field types, {n} poses)",
                args.deck.display(),
                deck.forcefield.len()
            );
            println!("Iterations: {} timed after {} warm-up; mode {}", args.iter, args.warmup, args.mode);
            println!("{:>5} {:>6} {:>12} {:>12} {:>14} {:>10}  valid", "ppwi", "wgsize", "avg ms", "min ms", "GInteract/s", "max diff %");
        }
        let mut dev = DeviceDeck::new(&deck).map_err(|e| e.to_string())?;
        let interactions = (n * natlig * natpro) as f64;
        let mut all_valid = true;
        for &ppwi in &args.ppwi.0 {
            for &wg in &args.wgsize {
                let mut times = Vec::new();
                dev.energies.copy_from_slice(&vec![f32::NAN; n]).map_err(|e| e.to_string())?;
                for k in 0..args.warmup + args.iter {
                    let t = Instant::now();
                    dev.fasten(ppwi, wg).map_err(|e| e.to_string())?;
                    if k >= args.warmup {
                        times.push(t.elapsed().as_secs_f64());
                    }
                }
                let energies = dev.energies.to_vec().map_err(|e| e.to_string())?;
                let (max_diff, failed) = validate(&energies, &deck.ref_energies[..n]);
                let valid = failed.is_empty();
                all_valid &= valid;
                let avg = times.iter().sum::<f64>() / times.len() as f64;
                let min = times.iter().cloned().fold(f64::INFINITY, f64::min);
                let rate = interactions / avg * 1e-9;
                if args.csv {
                    let case = format!("p{ppwi}_w{wg}");
                    println!("minibude,offload,{},{case},{n},ginteractions_per_sec,{rate:.4}", args.mode);
                    println!("minibude,offload,{},{case},{n},best_ginteractions_per_sec,{:.4}", args.mode, interactions / min * 1e-9);
                    println!("minibude,offload,{},{case},{n},max_diff_pct,{max_diff:.6}", args.mode);
                    println!("minibude,offload,{},{case},{n},valid,{}", args.mode, u8::from(valid));
                } else {
                    println!(
                        "{ppwi:>5} {wg:>6} {:>12.3} {:>12.3} {rate:>14.3} {max_diff:>10.5}  {}",
                        avg * 1e3,
                        min * 1e3,
                        if valid { "yes".to_string() } else { format!("NO ({} poses)", failed.len()) }
                    );
                }
                if !valid {
                    for &i in failed.iter().take(5) {
                        eprintln!("pose {i}: energy {} but the reference is {}", energies[i], deck.ref_energies[i]);
                    }
                }
            }
        }
        Ok(all_valid)
    }
}

#[offload::host]
fn main() {
    let args = <host::Args as clap::Parser>::parse();
    match host::run(args) {
        Ok(true) => {}
        Ok(false) => {
            eprintln!("error: validation failed");
            std::process::exit(1)
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::host::validate;

    #[test]
    fn validation_rule() {
        // within 0.025 %: passes; beyond: fails; both below 1: skipped.
        assert!(validate(&[100.02], &[100.0]).1.is_empty());
        assert_eq!(validate(&[100.03], &[100.0]).1, vec![0]);
        assert_eq!(validate(&[-100.03], &[-100.0]).1, vec![0]);
        assert!(validate(&[0.5], &[0.9]).1.is_empty());
        assert_eq!(validate(&[f32::NAN], &[5.0]).1, vec![0]);
    }
}
