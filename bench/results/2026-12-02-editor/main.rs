use offload::{for_len, kernel};

/// `y[i] = sin(x[i])`: `f32::sin` is `std`'s; without offload's
/// `FloatMethods` in scope it exists on the host only.
#[kernel]
fn sines(x: &[f32], y: &mut [f32]) {
    if let Some((i, out)) = y.at_thread() {
        *out = x[i].sin();
    }
}

#[offload::host]
fn main() -> Result<(), offload::Error> {
    let x: Vec<f32> = (0..1000).map(|i| i as f32 * 0.01).collect();
    let mut y = vec![0.0f32; x.len()];
    sines(for_len(x.len()), &x, &mut y)?;
    println!("{}", y[100]);
    Ok(())
}
