//! CUDA backend: host ↔ device copies of pageable host memory through
//! pinned staging buffers, filled and emptied by several host threads.
//!
//! The GPU's copy engines reach only page-locked memory, so a copy from or
//! to pageable memory goes through page-locked staging buffers either way
//! (CUDA C++ Best Practices Guide, "Pinned Memory"). The driver's own
//! staging for `cuMemcpyHtoD`/`cuMemcpyDtoH` copies between the user's
//! memory and its buffers with one host thread, which bounds a 1 GiB copy
//! on an H200 host to about 8 GB/s (host → device) and 15 GB/s (device →
//! host), against about 55 GB/s from pinned memory. Here that host-side copy
//! is split over up to [`MAX_COPY_THREADS`] threads (a dedicated `rayon`
//! pool, see [`copy_pool`]) and overlapped with the DMA of the neighbouring
//! chunks: chunk `k` (of [`STAGING_CHUNK_BYTES`])
//! goes through staging buffer `k % STAGING_BUFFERS`, whose CUDA event,
//! recorded after that buffer's DMA, says when the buffer may be reused.
//! Every DMA is issued in the backend's stream with `cuMemcpy*Async`, which
//! is asynchronous only for page-locked host memory (CUDA Driver API, "API
//! synchronization behavior"): the staging buffers are page-locked.
//!
//! The buffers are allocated once copies that want them have moved
//! [`STAGING_AFTER_BYTES`] directly (see `Transfers::buffers`), so a program
//! that copies little does not pay for page-locking them.
//!
//! Copies of fewer than [`STAGING_THRESHOLD_BYTES`], copies from or to host
//! memory the driver already knows (page-locked, as from
//! [`PinnedBuffer`](crate::PinnedBuffer), or managed), and every copy if the
//! staging buffers cannot be allocated, keep the driver's direct path.
//! `OFFLOAD_CUDA_STAGING=0` (or `false`, `no`, `off`) turns staging off, to
//! compare with the direct path; `OFFLOAD_CUDA_STAGING=eager` stages from
//! the first large copy on, for tests; `1` (`true`, `yes`, `on`) is the
//! default; other values warn and keep the default.
//!
//! Invariant, between calls: no DMA reads or writes a staging buffer. Every
//! staged copy returns after its last DMA has completed; one that fails
//! waits for the stream, and if even that fails the buffers are abandoned
//! (leaked, never touched again) rather than reused.

use core::ffi::{c_uint, c_void};
use core::mem::MaybeUninit;
use std::sync::OnceLock;

use cudarc::driver::result::{self, DriverError};
use cudarc::driver::sys;
use rayon::prelude::*;

/// Bytes of one staging buffer, and so of one chunk of a staged copy:
/// 32 MiB. Large enough that the fixed costs of a chunk (one
/// `cuMemcpy*Async`, one event record and wait, waking the copy threads:
/// tens of µs) stay a few percent of its DMA (about 0.6 ms at the ~55 GB/s
/// of pinned copies on an H200); small enough that the first (host → device)
/// or last (device → host) chunk, whose host copy nothing overlaps, stays
/// short, and that the buffers pin only `STAGING_BUFFERS` × 32 MiB = 96 MiB.
pub(crate) const STAGING_CHUNK_BYTES: usize = 32 << 20;

/// Staging buffers (each with its CUDA event) per context: 3. Host → device,
/// the threads fill one buffer while the DMAs of the two before it may
/// still be running; device → host, two DMAs stay in flight while the
/// threads empty the third buffer.
pub(crate) const STAGING_BUFFERS: usize = 3;

/// Bytes that copies wanting staging move directly before the staging
/// buffers are allocated: 512 MiB (see `Transfers::buffers`).
pub(crate) const STAGING_AFTER_BYTES: usize = 512 << 20;

/// Copies of fewer bytes than this (4 MiB) take the driver's direct path:
/// they are dominated by fixed latencies (tens of µs), which staging does
/// not reduce, and their host copy is too short to split over many threads.
pub(crate) const STAGING_THRESHOLD_BYTES: usize = 4 << 20;

/// Most host threads that copy between the user's memory and a staging
/// buffer (the threads of [`copy_pool`]; the calling thread waits for them):
/// 8, or fewer where the host has fewer CPUs. One thread's `memcpy` moves
/// about 10 GB/s, well below the DMA's ~55 GB/s; a few threads reach the
/// host's memory bandwidth, more only compete with the DMA for it.
pub(crate) const MAX_COPY_THREADS: usize = 8;

/// Smallest piece of a chunk that one copy thread takes: 256 KiB, so that
/// waking a thread (a few µs) costs well under the piece's copy (~25 µs).
const MIN_PIECE_BYTES: usize = 256 << 10;

/// Pieces start at multiples of 4 KiB from the chunk's start, so that no
/// two threads write the same page (or cache line) of the destination.
const PIECE_ALIGN: usize = 4096;

/// Why a staged copy failed: the driver call and its error.
pub(crate) type Failure = (&'static str, DriverError);

/// The staging state of one CUDA backend (kept in its `State`, so used by
/// one thread at a time with the context current).
pub(crate) struct Transfers {
    /// `OFFLOAD_CUDA_STAGING` allows staging (it does unless set to `0`,
    /// `false`, `no` or `off`).
    enabled: bool,
    /// `OFFLOAD_CUDA_STAGING=eager`: stage from the first copy on.
    eager: bool,
    /// Allocated after the first copy that wants staging, kept for the
    /// context's life.
    staging: Option<Staging>,
    /// Bytes copied directly so far by copies that wanted staging (see
    /// [`buffers`](Self::buffers)).
    direct_bytes: usize,
    /// Allocating the buffers failed, or a failed copy could not prove them
    /// idle: copy directly until the context is rebuilt.
    unavailable: bool,
}

impl Transfers {
    pub(crate) fn new() -> Self {
        let (enabled, eager, warning) = parse_setting(&std::env::var("OFFLOAD_CUDA_STAGING").unwrap_or_default());
        if let Some(w) = warning {
            std::eprintln!("offload: warning: {w}");
        }
        Transfers { enabled, eager, staging: None, direct_bytes: 0, unavailable: false }
    }

    /// Runs the staged copy `copy` of `bytes` from or to host memory at
    /// `host`, or returns `None` (nothing done) if the copy is not one for
    /// staging. After a failure, waits until no DMA can still use a buffer.
    fn staged(
        &mut self,
        stream: sys::CUstream,
        host: *const u8,
        bytes: usize,
        copy: impl FnOnce(&Staging) -> core::result::Result<(), Failure>,
    ) -> Option<core::result::Result<(), Failure>> {
        if !self.wants(host, bytes) {
            return None;
        }
        let r = copy(self.buffers(bytes)?);
        if r.is_err() {
            self.drain(stream);
        }
        Some(r)
    }

    /// The context was reset, which freed the staging buffers and events:
    /// forget them (not freed again) and allocate new ones at the next
    /// staged copy.
    pub(crate) fn forget_context(&mut self) {
        self.staging = None;
        self.unavailable = false;
    }

    /// Copies `bytes` from host memory at `src` to device memory at `dst`
    /// through the staging buffers, in `stream`, and returns once the data
    /// is in device memory. `None` if the copy is not one for staging (see
    /// the module docs): nothing was done, the caller copies directly.
    ///
    /// # Safety
    /// The context that owns `stream` is current on this thread; `dst` is
    /// device memory of that context with room for `bytes`; `src` is valid
    /// for reads of `bytes` and not written during the call.
    pub(crate) unsafe fn upload(
        &mut self,
        stream: sys::CUstream,
        dst: sys::CUdeviceptr,
        src: *const u8,
        bytes: usize,
    ) -> Option<core::result::Result<(), Failure>> {
        // SAFETY: the caller's contract, plus: the staging buffers belong to
        // the current context and no DMA uses them (the module's invariant).
        self.staged(stream, src, bytes, |s| unsafe { upload_chunks(s, stream, dst, src, bytes) })
    }

    /// Copies `bytes` from device memory at `src` to host memory at `dst`
    /// through the staging buffers, in `stream`, and returns once every byte
    /// is in `dst`. `None` as for [`upload`](Self::upload).
    ///
    /// # Safety
    /// The context that owns `stream` is current on this thread; `src` is
    /// device memory of that context holding `bytes`, not written by the
    /// device meanwhile; `dst` is valid for writes of `bytes` and not
    /// otherwise accessed during the call.
    pub(crate) unsafe fn download(
        &mut self,
        stream: sys::CUstream,
        dst: *mut u8,
        src: sys::CUdeviceptr,
        bytes: usize,
    ) -> Option<core::result::Result<(), Failure>> {
        // SAFETY: as in `upload`.
        self.staged(stream, dst, bytes, |s| unsafe { download_chunks(s, stream, dst, src, bytes) })
    }

    /// Whether a copy of `bytes` from or to host memory at `host` takes the
    /// staging path.
    fn wants(&self, host: *const u8, bytes: usize) -> bool {
        self.enabled && !self.unavailable && bytes >= STAGING_THRESHOLD_BYTES && !driver_knows(host, bytes)
    }

    /// The staging buffers for a copy of `bytes`, or `None` to copy it
    /// directly.
    ///
    /// Page-locking the 96 MiB of buffers takes tens of milliseconds (about
    /// 60 ms on the H200 host), what the direct path needs to move about
    /// 500 MB. So copies go directly until [`STAGING_AFTER_BYTES`] have, and
    /// only then are the buffers allocated (the rent-or-buy rule: a program
    /// pays at most about twice what it would have without staging, and one
    /// that copies little never pays). With `OFFLOAD_CUDA_STAGING=eager` the
    /// first copy allocates them. `None` for good (staging off) if they
    /// cannot be allocated: the direct path still works.
    fn buffers(&mut self, bytes: usize) -> Option<&Staging> {
        if self.staging.is_none() {
            if !self.eager && self.direct_bytes < STAGING_AFTER_BYTES {
                self.direct_bytes = self.direct_bytes.saturating_add(bytes);
                return None;
            }
            match Staging::new() {
                Ok(s) => self.staging = Some(s),
                Err(_) => {
                    self.unavailable = true;
                    return None;
                }
            }
        }
        self.staging.as_ref()
    }

    /// After a failed staged copy: waits until no DMA of it can still use a
    /// staging buffer; if that cannot be established, abandons the buffers.
    fn drain(&mut self, stream: sys::CUstream) {
        // SAFETY: the stream belongs to the current context; every DMA of
        // a staged copy was issued in it.
        if unsafe { result::stream::synchronize(stream) }.is_err() {
            // A DMA may still be running: never touch these buffers again
            // (leaked; a context reset frees them).
            self.staging = None;
            self.unavailable = true;
        }
    }
}

/// `OFFLOAD_CUDA_STAGING`'s value as (staging on, eager, warning for an
/// unknown value): `0`/`false`/`no`/`off` turn staging off, `eager` stages
/// from the first large copy on, unset or `1`/`true`/`yes`/`on` is the
/// default; anything else keeps the default with a warning.
fn parse_setting(raw: &str) -> (bool, bool, Option<std::string::String>) {
    if raw.trim().eq_ignore_ascii_case("eager") {
        return (true, true, None);
    }
    match super::setting::switch(raw) {
        Some(on) => (on, false, None),
        None if raw.trim().is_empty() => (true, false, None),
        None => (
            true,
            false,
            Some(std::format!(
                "OFFLOAD_CUDA_STAGING={raw:?} is not one of 0, 1 or eager; staging stays on (its default)"
            )),
        ),
    }
}

/// Whether the driver knows the host memory at `p` (page-locked, mapped or
/// managed): then it reaches it without staging and a direct copy is the
/// fastest. Asked with `cuPointerGetAttributes`, which, unlike
/// `cuPointerGetAttribute`, answers memory type 0 for pageable memory
/// instead of failing with `CUDA_ERROR_INVALID_VALUE` (CUDA Driver API,
/// `cuPointerGetAttributes`), so a correct program makes no failing driver
/// call (compute-sanitizer counts those as errors). Both ends of the range
/// are checked.
fn driver_knows(p: *const u8, bytes: usize) -> bool {
    let known = |addr: usize| {
        let mut kind: c_uint = 0;
        let mut attribute = sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE;
        let mut data = [&mut kind as *mut c_uint as *mut c_void];
        // SAFETY: one attribute, whose value (an `unsigned int`, the
        // attribute's type) is written to `kind` through `data[0]`; the
        // address is only looked up, never dereferenced.
        let r = unsafe { sys::cuPointerGetAttributes(1, &mut attribute, data.as_mut_ptr(), addr as sys::CUdeviceptr) };
        r.result().is_ok() && kind != 0
    };
    known(p as usize) && known(p as usize + bytes.saturating_sub(1))
}

/// [`STAGING_BUFFERS`] page-locked buffers of [`STAGING_CHUNK_BYTES`] each
/// and one event per buffer, of one context. Never freed while the context
/// lives (the backend is never dropped); a context reset frees them.
struct Staging {
    bufs: [*mut u8; STAGING_BUFFERS],
    events: [sys::CUevent; STAGING_BUFFERS],
}

impl Staging {
    /// Allocates the buffers and events in the current context (all or
    /// none).
    fn new() -> core::result::Result<Staging, DriverError> {
        let (buf, event) = (core::ptr::null_mut(), core::ptr::null_mut());
        let mut s = Staging { bufs: [buf; STAGING_BUFFERS], events: [event; STAGING_BUFFERS] };
        for i in 0..STAGING_BUFFERS {
            // SAFETY: a context is current (the caller holds the backend's
            // state); flags 0 = page-locked memory of this context, as
            // `alloc_pinned` allocates.
            let made = unsafe { result::malloc_host(STAGING_CHUNK_BYTES, 0) }.and_then(|p| {
                s.bufs[i] = p as *mut u8;
                result::event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING).map(|e| s.events[i] = e)
            });
            if let Err(e) = made {
                // SAFETY: everything allocated so far is unused: no copy
                // has run through it.
                unsafe { s.free() };
                return Err(e);
            }
        }
        Ok(s)
    }

    /// Frees the buffers and events allocated so far.
    ///
    /// # Safety
    /// They belong to the current context and no DMA uses them.
    unsafe fn free(&mut self) {
        for p in &mut self.bufs {
            if !p.is_null() {
                // SAFETY: from `malloc_host`, freed once (nulled), unused.
                let _ = unsafe { result::free_host(*p as *mut c_void) };
                *p = core::ptr::null_mut();
            }
        }
        for e in &mut self.events {
            if !e.is_null() {
                // SAFETY: from `event::create`, destroyed once (nulled).
                let _ = unsafe { result::event::destroy(*e) };
                *e = core::ptr::null_mut();
            }
        }
    }
}

/// Host → device, chunk by chunk: wait until the chunk's buffer is free
/// (the DMA of chunk `k - STAGING_BUFFERS` read it), fill it with the copy
/// threads, start its DMA and record its event; the threads then fill the
/// next buffer while that DMA runs. Returns after the stream has drained.
///
/// # Safety
/// As [`Transfers::upload`]; `s` belongs to the current context and no DMA
/// uses it.
unsafe fn upload_chunks(
    s: &Staging,
    stream: sys::CUstream,
    dst: sys::CUdeviceptr,
    src: *const u8,
    bytes: usize,
) -> core::result::Result<(), Failure> {
    for (k, off) in (0..bytes).step_by(STAGING_CHUNK_BYTES).enumerate() {
        let len = STAGING_CHUNK_BYTES.min(bytes - off);
        let (buf, event) = (s.bufs[k % STAGING_BUFFERS], s.events[k % STAGING_BUFFERS]);
        // Wait for the DMA that last read `buf` (none yet: returns at once).
        // SAFETY: an event of the current context.
        unsafe { result::event::synchronize(event) }.map_err(|e| ("cuEventSynchronize", e))?;
        // SAFETY: `src + off` is valid for reads of `len` bytes (`off + len
        // <= bytes`) and not written while the call borrows it (the
        // caller's contract); `buf` holds `STAGING_CHUNK_BYTES >= len` bytes
        // that no DMA uses (its event has completed) and nothing else
        // references. The pinned buffer is our own allocation, distinct from
        // the user's memory, so the slices do not overlap; both end with this
        // statement. `MaybeUninit` bytes: the user's data may hold padding.
        let (to, from) = unsafe {
            (
                core::slice::from_raw_parts_mut(buf as *mut MaybeUninit<u8>, len),
                core::slice::from_raw_parts(src.add(off) as *const MaybeUninit<u8>, len),
            )
        };
        parallel_copy(copy_pool(), to, from);
        // SAFETY: `buf` is page-locked memory of this context holding `len`
        // bytes, left untouched until `event` completes; `dst + off` has
        // room for `len` bytes (the caller's contract).
        unsafe { sys::cuMemcpyHtoDAsync_v2(dst + off as u64, buf as *const c_void, len, stream) }
            .result()
            .map_err(|e| ("cuMemcpyHtoDAsync", e))?;
        // SAFETY: `event` and `stream` belong to the current context.
        unsafe { result::event::record(event, stream) }.map_err(|e| ("cuEventRecord", e))?;
    }
    // SAFETY: the stream belongs to the current context.
    unsafe { result::stream::synchronize(stream) }.map_err(|e| ("cuStreamSynchronize", e))
}

/// Device → host: start the DMAs of the first `STAGING_BUFFERS` chunks,
/// then for each chunk wait for its event, empty its buffer into `dst` with
/// the copy threads, and start the DMA of the chunk `STAGING_BUFFERS` later into the
/// buffer just emptied. Returns once every chunk is in `dst` (so no DMA is
/// left running).
///
/// # Safety
/// As [`Transfers::download`]; `s` belongs to the current context and no
/// DMA uses it.
unsafe fn download_chunks(
    s: &Staging,
    stream: sys::CUstream,
    dst: *mut u8,
    src: sys::CUdeviceptr,
    bytes: usize,
) -> core::result::Result<(), Failure> {
    let chunks = bytes.div_ceil(STAGING_CHUNK_BYTES);
    // (offset, length) of chunk `k`.
    let span = |k: usize| (k * STAGING_CHUNK_BYTES, STAGING_CHUNK_BYTES.min(bytes - k * STAGING_CHUNK_BYTES));
    let start = |k: usize| -> core::result::Result<(), Failure> {
        let (off, len) = span(k);
        let (buf, event) = (s.bufs[k % STAGING_BUFFERS], s.events[k % STAGING_BUFFERS]);
        // SAFETY: `buf` is page-locked memory of this context with room for
        // `len` bytes, free (chunk `k - STAGING_BUFFERS` was copied out of
        // it, or it is unused at the start of the call) and untouched by the
        // host until `event` completes; `src + off` holds `len` bytes.
        unsafe { sys::cuMemcpyDtoHAsync_v2(buf as *mut c_void, src + off as u64, len, stream) }
            .result()
            .map_err(|e| ("cuMemcpyDtoHAsync", e))?;
        // SAFETY: `event` and `stream` belong to the current context.
        unsafe { result::event::record(event, stream) }.map_err(|e| ("cuEventRecord", e))
    };
    for k in 0..chunks.min(STAGING_BUFFERS) {
        start(k)?;
    }
    for k in 0..chunks {
        let (off, len) = span(k);
        let (buf, event) = (s.bufs[k % STAGING_BUFFERS], s.events[k % STAGING_BUFFERS]);
        // SAFETY: an event of the current context, recorded after chunk
        // `k`'s DMA.
        unsafe { result::event::synchronize(event) }.map_err(|e| ("cuEventSynchronize", e))?;
        // SAFETY: chunk `k`'s DMA has completed, so `buf` holds its `len`
        // bytes and nothing writes it; `dst + off` is valid for writes of
        // `len` bytes and not otherwise accessed while the call borrows it
        // (the caller's contract). The pinned buffer is our own allocation,
        // distinct from the user's memory, so the slices do not overlap; both
        // end with this statement.
        let (to, from) = unsafe {
            (
                core::slice::from_raw_parts_mut(dst.add(off) as *mut MaybeUninit<u8>, len),
                core::slice::from_raw_parts(buf as *const MaybeUninit<u8>, len),
            )
        };
        parallel_copy(copy_pool(), to, from);
        if k + STAGING_BUFFERS < chunks {
            start(k + STAGING_BUFFERS)?;
        }
    }
    Ok(())
}

/// The copy threads, shared by every CUDA backend of the process. Several
/// threads because the host-side copy into or out of the page-locked
/// staging buffers, which the DMA needs (CUDA C++ Best Practices Guide,
/// "Pinned Memory"), is the staged path's bottleneck on one thread (see the
/// module docs). A dedicated `rayon` pool of `min(available_parallelism, MAX_COPY_THREADS)`
/// threads named `offload-copy-{i}`, started at the first staged copy.
/// Dedicated, so that the user's own `rayon` work neither delays a copy nor
/// is slowed by one. `None` if the pool cannot be started: each copy then
/// runs on the calling thread.
fn copy_pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(MAX_COPY_THREADS);
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| std::format!("offload-copy-{i}"))
            .build()
            .ok()
    })
    .as_ref()
}

/// Copies `src` into `dst` (of the same length) with the threads of `pool`,
/// or on the calling thread if there is no pool or the copy is too short to
/// split; returns once every byte is copied. The bytes are `MaybeUninit`
/// because they are copied as they are, padding included.
///
/// The copy is cut into about one piece per thread, each at least
/// [`MIN_PIECE_BYTES`] and a multiple of [`PIECE_ALIGN`]; `rayon` hands the
/// pieces to its threads, so one slow to wake delays nothing.
fn parallel_copy(pool: Option<&rayon::ThreadPool>, dst: &mut [MaybeUninit<u8>], src: &[MaybeUninit<u8>]) {
    assert_eq!(dst.len(), src.len(), "parallel_copy: lengths differ");
    let len = src.len();
    match pool {
        Some(pool) if len > MIN_PIECE_BYTES => {
            let piece = len.div_ceil(pool.current_num_threads()).max(MIN_PIECE_BYTES).next_multiple_of(PIECE_ALIGN);
            pool.install(|| {
                dst.par_chunks_mut(piece).zip(src.par_chunks(piece)).for_each(|(d, s)| d.copy_from_slice(s));
            });
        }
        _ => dst.copy_from_slice(src),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec;
    use std::vec::Vec;

    /// `n` bytes that differ from byte to byte and between seeds: one
    /// multiplication per 8 bytes (the unoptimized test build spent most of
    /// its time here with one per byte).
    fn pattern(n: usize, seed: u64) -> Vec<u8> {
        let mut v = Vec::with_capacity(n + 8);
        for w in 0..n.div_ceil(8) as u64 {
            let x = (w.wrapping_add(seed)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            v.extend_from_slice(&(x ^ (x >> 29)).to_le_bytes());
        }
        v.truncate(n);
        v
    }

    fn uninit(v: &[u8]) -> &[MaybeUninit<u8>] {
        // SAFETY: `MaybeUninit<u8>` has the layout of `u8`; shared, so
        // nothing writes through it.
        unsafe { &*(v as *const [u8] as *const [MaybeUninit<u8>]) }
    }

    fn uninit_mut(v: &mut [u8]) -> &mut [MaybeUninit<u8>] {
        // SAFETY: `MaybeUninit<u8>` has the layout of `u8`; the tests write
        // through it only bytes copied from `uninit` views of `u8` data, so
        // every byte stays initialized.
        unsafe { &mut *(v as *mut [u8] as *mut [MaybeUninit<u8>]) }
    }

    fn pool(threads: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap()
    }

    #[test]
    fn copies_every_byte_at_every_size_and_offset() {
        let pools = [1, 2, 3, 8].map(pool);
        let cases = [None, copy_pool()].into_iter().chain(pools.iter().map(Some));
        for p in cases {
            let threads = p.map_or(0, |p| p.current_num_threads());
            let sizes = [
                0,
                1,
                MIN_PIECE_BYTES - 1,
                MIN_PIECE_BYTES,
                MIN_PIECE_BYTES + 1,
                2 * MIN_PIECE_BYTES + 1,
                3 * MIN_PIECE_BYTES + PIECE_ALIGN + 17,
                (8 << 20) + 5,
            ];
            for (round, &n) in sizes.iter().enumerate() {
                for shift in [0, 3] {
                    let src = pattern(n + shift, round as u64);
                    let mut dst = vec![0u8; n + 7];
                    parallel_copy(p, &mut uninit_mut(&mut dst)[1..n + 1], &uninit(&src)[shift..]);
                    assert_eq!(dst[0], 0, "{threads} threads, {n} bytes: wrote before the range");
                    assert!(dst[n + 1..].iter().all(|&b| b == 0), "{threads} threads, {n} bytes: wrote past the range");
                    if dst[1..n + 1] != src[shift..] {
                        let i = (0..n).find(|&i| dst[1 + i] != src[shift + i]).unwrap();
                        panic!("{threads} threads, {n} bytes, shift {shift}: byte {i} differs");
                    }
                }
            }
        }
    }

    #[test]
    fn runs_many_copies_back_to_back() {
        let n = 4 * MIN_PIECE_BYTES + 100;
        let mut dst = vec![0u8; n];
        for round in 0..200u64 {
            let src = pattern(n, round);
            parallel_copy(copy_pool(), uninit_mut(&mut dst), uninit(&src));
            assert!(dst == src, "round {round}");
        }
    }

    #[test]
    fn copy_pool_is_bounded_and_named() {
        let pool = copy_pool().expect("the copy pool starts");
        assert!((1..=MAX_COPY_THREADS).contains(&pool.current_num_threads()));
        let name = pool.install(|| std::thread::current().name().map(std::string::String::from));
        assert!(name.as_deref().is_some_and(|n| n.starts_with("offload-copy-")), "{name:?}");
    }

    /// `tests/runtime.rs` round-trips sizes around these values, written
    /// there as numbers: keep the two in step.
    #[test]
    fn staging_setting_values() {
        assert_eq!(parse_setting(""), (true, false, None));
        assert_eq!(parse_setting(" Off "), (false, false, None));
        assert_eq!(parse_setting("0"), (false, false, None));
        assert_eq!(parse_setting("EAGER"), (true, true, None));
        assert_eq!(parse_setting("yes"), (true, false, None));
        let (on, eager, warning) = parse_setting("fast");
        assert!(on && !eager);
        assert_eq!(
            warning.as_deref(),
            Some("OFFLOAD_CUDA_STAGING=\"fast\" is not one of 0, 1 or eager; staging stays on (its default)")
        );
    }

    #[test]
    fn staging_sizes_match_the_integration_tests() {
        assert_eq!(STAGING_THRESHOLD_BYTES, 4 << 20);
        assert_eq!(STAGING_CHUNK_BYTES, 32 << 20);
    }
}
