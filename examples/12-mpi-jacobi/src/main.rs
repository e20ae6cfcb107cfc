//! A 2-D Jacobi stencil across MPI ranks: the interior rows of the grid
//! are split into blocks of consecutive rows, one per rank; each rank runs
//! the sweeps of its block on a device of its own (`devices()[rank % number
//! of GPUs]`, or the host CPU where there is no GPU), and before every
//! sweep the ranks swap their edge rows ("halos") with their neighbours
//! through MPI. The halos go device → pinned host memory → MPI and back
//! (a queued copy each way); whether the MPI could take GPU memory
//! directly (a CUDA-aware Open MPI: `MPIX_Query_cuda_support`) is detected
//! and printed, not assumed.
//!
//! Rank 0 gathers the grid and prints its checksum (FNV-1a over the bits
//! of every value): the same for any number of ranks, bit for bit, since
//! each point is computed from the same values in the same order
//! (`grid.rs`); it also compares the grid with a serial run on the host.
//!
//! ```text
//! cargo offload build --release             # in examples/12-mpi-jacobi
//! mpirun -n 4 target/release/mpi-jacobi [NX NY ITERS]
//! ```
//!
//! Defaults: a 256 × 256 grid, 200 sweeps. `OFFLOAD_DEVICE`, if set,
//! chooses every rank's device instead (`host` to compare the host
//! fallback with a GPU run). Exits non-zero if the grid differs from the
//! serial reference.

// `offload::Error` is large (it carries the driver's texts).
#![allow(clippy::result_large_err)]

use offload::prelude::*;

// Host only (`#[offload::host]` cannot stand on a file module).
#[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
mod grid;
#[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
mod halo;

/// One sweep over the `a.len() / nx` rows of a block: `b` gets the new
/// values of its interior points, its side columns are copied. `halo`
/// holds the row above the block, then the row below it (`2 · nx`).
#[kernel(same_len(a, b))]
fn sweep(nx: usize, a: &[f64], halo: &[f64], b: &mut [f64]) {
    if let Some((k, bk)) = b.at_thread() {
        let (i, j) = (k / nx, k % nx);
        let rows = a.len() / nx;
        if j == 0 || j + 1 == nx {
            *bk = a[k];
        } else {
            let up = if i == 0 { halo[j] } else { a[k - nx] };
            let down = if i + 1 == rows { halo[nx + j] } else { a[k + nx] };
            *bk = 0.25 * ((up + down) + (a[k - 1] + a[k + 1]));
        }
    }
}

/// The first row of the block, then its last row, into `edges` (`2 · nx`):
/// what the neighbours need.
#[kernel]
fn pack(nx: usize, a: &[f64], edges: &mut [f64]) {
    if let Some((k, e)) = edges.at_thread() {
        let last = a.len() - nx;
        *e = if k < nx { a[k] } else { a[last + k - nx] };
    }
}

#[offload::host]
fn main() {
    if let Err(e) = run() {
        eprintln!("mpi-jacobi: error: {e}");
        std::process::exit(1);
    }
}

/// `NX NY ITERS` from the command line.
#[offload::host]
fn args() -> Result<(usize, usize, usize), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number = |i: usize, default: usize| args.get(i).map_or(Ok(default), |a| a.parse::<usize>());
    match (number(0, 256), number(1, 256), number(2, 200)) {
        (Ok(nx), Ok(ny), Ok(iters)) if nx >= 3 && ny >= 3 && args.len() <= 3 => Ok((nx, ny, iters)),
        _ => Err(format!("usage: mpi-jacobi [NX NY ITERS] (NX, NY at least 3), not {args:?}")),
    }
}

/// This rank's device: `OFFLOAD_DEVICE`'s if it is set, else GPU
/// `rank % GPUs`, else the host.
#[offload::host]
fn device_of(rank: usize) -> offload::Result<offload::Device> {
    if std::env::var("OFFLOAD_DEVICE").is_ok_and(|v| !v.trim().is_empty()) {
        return offload::current_device();
    }
    let all = offload::devices();
    let gpus: Vec<offload::Device> = all.iter().copied().filter(|d| d.kind() == offload::BackendKind::Cuda).collect();
    Ok(match gpus.len() {
        0 => *all.iter().find(|d| d.kind() == offload::BackendKind::Host).expect("the host is always a device"),
        n => gpus[rank % n],
    })
}

#[offload::host]
fn run() -> Result<(), Box<dyn std::error::Error>> {
    use mpi::traits::*;

    let universe = mpi::initialize().ok_or("MPI was initialized already")?;
    let world = universe.world();
    let (rank, ranks) = (world.rank() as usize, world.size() as usize);
    let (nx, ny, iters) = args()?;
    let (first, last) = grid::block(ny, rank, ranks)
        .ok_or_else(|| format!("{ranks} ranks need at least {ranks} interior rows; the grid has {}", ny - 2))?;
    let device = device_of(rank)?;
    offload::set_device(device)?;
    println!("rank {rank} of {ranks}: rows {first}..{last} on {}", device.description());
    if rank == 0 {
        println!("mpi-jacobi: {ranks} rank(s), grid {nx} x {ny}, {iters} sweeps");
        println!("mpi-jacobi: CUDA-aware MPI: {}", halo::cuda_aware());
    }

    let block = run_block(&world, nx, ny, iters, (first, last))?;

    // Rank 0 gathers the blocks in rank order, between the boundary rows.
    let root = world.process_at_rank(0);
    if rank != 0 {
        root.send(&block[..]);
        return Ok(());
    }
    let mut grid = grid::rows(nx, ny, 0, 1);
    grid.extend_from_slice(&block);
    for r in 1..ranks {
        let (part, _) = world.process_at_rank(r as i32).receive_vec::<f64>();
        grid.extend_from_slice(&part);
    }
    grid.extend(grid::rows(nx, ny, ny - 1, ny));
    println!("mpi-jacobi: checksum fnv1a64={:#018x}", grid::fnv1a(&grid));
    let want = grid::reference(nx, ny, iters);
    match grid.iter().zip(&want).position(|(g, w)| g.to_bits() != w.to_bits()) {
        None => println!("mpi-jacobi: the grid equals the serial host reference bit for bit"),
        Some(k) => {
            return Err(format!(
                "point ({}, {}) is {} but the serial reference has {}",
                k / nx,
                k % nx,
                grid[k],
                want[k]
            )
            .into())
        }
    }
    Ok(())
}

/// `iters` sweeps of rows `first..last` on this thread's device, the halos
/// swapped with the neighbour ranks before each; returns the rows.
#[offload::host]
fn run_block(
    world: &mpi::topology::SimpleCommunicator,
    nx: usize,
    ny: usize,
    iters: usize,
    (first, last): (usize, usize),
) -> Result<Vec<f64>, Box<dyn std::error::Error>> {
    use offload::{DeviceBuffer, PinnedBuffer, Queue};

    let n = (last - first) * nx;
    let q = Queue::new()?;
    let mut a = DeviceBuffer::from_slice(&grid::rows(nx, ny, first, last))?;
    let mut b = DeviceBuffer::<f64>::zeroed(n)?;
    let mut edges = DeviceBuffer::<f64>::zeroed(2 * nx)?;
    let mut edges_host = PinnedBuffer::<f64>::zeroed(2 * nx)?;
    // The rows above and below the block: the boundary's where the block
    // touches it (set once), the neighbours' otherwise (every sweep).
    let mut halo_host =
        PinnedBuffer::from_slice(&[grid::rows(nx, ny, first - 1, first), grid::rows(nx, ny, last, last + 1)].concat())?;
    let mut halo = DeviceBuffer::<f64>::zeroed(2 * nx)?;
    let neighbours = halo::Neighbours::of(world);
    for _ in 0..iters {
        pack::on(&q, for_len(2 * nx), nx, &a, &mut edges)?;
        q.memcpy_dtoh(&edges, &mut edges_host)?;
        // Reading the pinned edges waits for the copy; writing the pinned
        // halos waits for the last sweep's copy out of them.
        neighbours.swap(&edges_host, &mut halo_host);
        q.memcpy_htod(&halo_host, &mut halo)?;
        sweep::on(&q, for_len(n), nx, &a, &halo, &mut b)?;
        std::mem::swap(&mut a, &mut b);
    }
    q.synchronize()?;
    Ok(a.to_vec()?)
}
