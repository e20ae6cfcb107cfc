//! `mpi-jacobi` on the host fallback under `mpirun`: 1 and 3 ranks print
//! the same checksum, and each run's grid equals the serial reference (the
//! program exits non-zero otherwise). CI runs 4 ranks with
//! `scripts/mpi-jacobi-check.sh`.

// Host-only: `cargo offload test` also builds this target for the GPU.
#[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
#[test]
fn one_and_three_ranks_give_the_same_grid() {
    let run = |ranks: &str| {
        let out = std::process::Command::new("mpirun")
            .args([
                "--allow-run-as-root",
                "--oversubscribe",
                "-n",
                ranks,
                env!("CARGO_BIN_EXE_mpi-jacobi"),
                "48",
                "20",
                "30",
            ])
            .env("OFFLOAD_DEVICE", "host")
            .env("OFFLOAD_HOST_THREADS", "1")
            .output()
            .expect("run mpirun (install MPI with `./setup.sh mpi`)");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{ranks} rank(s): {}\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains(&format!("mpi-jacobi: {ranks} rank(s), grid 48 x 20, 30 sweeps")), "{stdout}");
        assert!(stdout.contains("the grid equals the serial host reference bit for bit"), "{stdout}");
        let line = stdout.lines().find(|l| l.contains("checksum fnv1a64=0x")).expect("a checksum line").to_string();
        line
    };
    assert_eq!(run("1"), run("3"));
}
