//! The halo exchange: each rank sends the first row of its block to the
//! rank above and the last row to the rank below, and receives their edge
//! rows as its halos, through non-blocking sends and receives in one
//! `mpi::request::scope` (rsmpi's `examples/immediate.rs`), which waits
//! for all four before it returns. The rows travel in host memory (pinned,
//! so that the queued copies from and to the device run at full speed);
//! [`cuda_aware`] says whether this MPI could take GPU memory instead.

use mpi::request::WaitGuard;
use mpi::topology::{Process, SimpleCommunicator};
use mpi::traits::*;

/// The ranks above and below this one (none at the grid's edges).
pub struct Neighbours<'a> {
    up: Option<Process<'a>>,
    down: Option<Process<'a>>,
}

impl<'a> Neighbours<'a> {
    /// This rank's neighbours in `world`: rank − 1 holds the rows above.
    pub fn of(world: &'a SimpleCommunicator) -> Self {
        let (rank, size) = (world.rank(), world.size());
        Neighbours {
            up: (rank > 0).then(|| world.process_at_rank(rank - 1)),
            down: (rank + 1 < size).then(|| world.process_at_rank(rank + 1)),
        }
    }

    /// Sends `edges` (this block's first row, then its last) and receives
    /// the neighbours' into `halo` (the row above the block, then the row
    /// below); a halo without a neighbour (the grid's boundary) is left as
    /// it is. Returns once all has arrived and been sent.
    pub fn swap(&self, edges: &[f64], halo: &mut [f64]) {
        let nx = edges.len() / 2;
        let (first, last) = edges.split_at(nx);
        let (above, below) = halo.split_at_mut(nx);
        mpi::request::scope(|scope| {
            let mut pending = Vec::with_capacity(4);
            if let Some(up) = &self.up {
                pending.push(WaitGuard::from(up.immediate_receive_into(scope, above)));
                pending.push(WaitGuard::from(up.immediate_send(scope, first)));
            }
            if let Some(down) = &self.down {
                pending.push(WaitGuard::from(down.immediate_receive_into(scope, below)));
                pending.push(WaitGuard::from(down.immediate_send(scope, last)));
            }
            // Dropping the guards waits for each request.
            drop(pending);
        });
    }
}

/// Whether this MPI can send from and receive into GPU memory ("CUDA-aware"),
/// asked, not assumed: Open MPI answers through `MPIX_Query_cuda_support()`
/// (its `mpi-ext.h`: 1 if the library was built with CUDA support and it is
/// on), looked up at run time because other MPIs (MPICH, Intel MPI) have no
/// such function. This example sends through pinned host memory either
/// way; the answer says whether a direct path would work here.
pub fn cuda_aware() -> &'static str {
    // SAFETY: `dlsym` with the pseudo-handle RTLD_DEFAULT (every object
    // loaded, libmpi among them) and a NUL-terminated name.
    let f = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"MPIX_Query_cuda_support".as_ptr()) };
    if f.is_null() {
        return "no (this MPI has no MPIX_Query_cuda_support: not Open MPI)";
    }
    // SAFETY: Open MPI declares it `int MPIX_Query_cuda_support(void)`, to
    // be called after MPI_Init (done: `mpi::initialize`).
    let query: extern "C" fn() -> libc::c_int = unsafe { core::mem::transmute(f) };
    match query() {
        1 => "yes (MPIX_Query_cuda_support() = 1); halos still go through pinned host memory",
        _ => "no (MPIX_Query_cuda_support() = 0): halos go through pinned host memory",
    }
}
