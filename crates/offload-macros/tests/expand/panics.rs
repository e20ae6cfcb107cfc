//! Panic messages with arguments in a kernel body: the device body records
//! them as values in optimized NVPTX builds and keeps the user's macro
//! elsewhere; the host launcher keeps the user's macros. (Expanded by
//! `src/expand_tests.rs`; not compiled.)
use offload::prelude::*;

#[kernel]
fn checks(n: usize, x: &[u32], out: &mut [u32]) {
    if let Some((i, o)) = out.at_thread() {
        assert!(i < n, "i = {} n = {}", i, n);
        assert_eq!(x[i] % 2, 0);
        assert_ne!(x[i], 7, "x[{i}] at {}", n);
        let v = match x[i] {
            0 => panic!("zero at {i:>4}, {what}", what = 'z'),
            9 => unreachable!("nine at {}", i),
            v => v,
        };
        panic!("literal");
        *o = v;
    }
}
