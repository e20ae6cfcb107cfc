//! What more than one test binary of this directory needs.

/// `n` steps of the LCG `x -> 6364136223846793005 x + 1442695040888963407`
/// (mod 2^64) from `v`, computed independently of a kernel's loop, in
/// O(log n): `n` steps of `x -> a x + c` are the affine map `x -> A x + C`,
/// built by squaring (F. Brown, "Random number generation with arbitrary
/// strides", 1994).
#[offload::host]
pub fn lcg_jump(v: u64, mut n: u32) -> u64 {
    let (mut a, mut c) = (6364136223846793005u64, 1442695040888963407u64);
    let (mut big_a, mut big_c) = (1u64, 0u64);
    while n > 0 {
        if n & 1 == 1 {
            // Apply (a, c) after (A, C): x -> a (A x + C) + c.
            big_a = a.wrapping_mul(big_a);
            big_c = a.wrapping_mul(big_c).wrapping_add(c);
        }
        // (a, c) ∘ (a, c): x -> a (a x + c) + c.
        c = a.wrapping_mul(c).wrapping_add(c);
        a = a.wrapping_mul(a);
        n >>= 1;
    }
    big_a.wrapping_mul(v).wrapping_add(big_c)
}
