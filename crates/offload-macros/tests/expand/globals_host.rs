//! `#[device_global]` and `#[host]`. (Expanded by `src/expand_tests.rs`; not compiled.)
use offload::atomic::AtomicU32;

/// A counter.
#[offload::device_global]
pub static COUNT: AtomicU32 = AtomicU32::new(0);

#[device_global]
static TABLE: [f32; 4] = [1.0, 2.0, 3.0, 4.0];

#[device_global(fast)]
static ARGS: u32 = 0;

#[device_global]
static mut MUTABLE: u32 = 0;

#[offload::host]
fn host_only() -> Vec<u32> {
    Vec::new()
}

#[host]
mod host_module {}

#[host(all)]
fn host_with_arguments() {}
