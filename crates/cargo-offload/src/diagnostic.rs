//! What the messages of the device pass mean to `cargo offload`: the one
//! place where rustc's and cargo's text is matched ([`classify`]).
//!
//! The device pass reads rustc's diagnostics as JSON (cargo's
//! `--message-format json`: a message and its children) and cargo's own
//! stderr lines. A few of them change what `cargo offload` does: an
//! interruption ends the build quietly, a failed device link is shown as
//! what offload-linker said, a crate that needs `std` gets a hint, rustc's
//! warning about the PTX feature `cargo offload` itself enables is not
//! shown. rustc's wording is not a stable interface, so the matching is
//! here, tested against real messages of the device toolchains (rustc 1.96
//! and 1.101-nightly).

/// What a message means (see [`classify`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Meaning {
    /// A child was killed by SIGINT or SIGTERM (cargo's `process didn't
    /// exit successfully: … (signal: 2, SIGINT: interrupt)`), or
    /// offload-linker reports that a tool under it was: the build was
    /// interrupted.
    Interrupted,
    /// rustc's `linking with `…offload-linker` failed`, with what
    /// offload-linker said (its `error: offload-linker: …` lines, without
    /// that prefix; empty if it said nothing).
    DeviceLinkFailed { said: Vec<String> },
    /// The crate needs `std` (or an item only `std`/`alloc` have), which GPU
    /// targets do not have.
    NeedsStd,
    /// Two kernels got the same symbol.
    DuplicateKernelSymbol,
    /// offload's error at a kernel that calls another kernel (its
    /// `#[diagnostic::on_unimplemented]` message); rustc follows it with an
    /// E0061 at the same call (the launcher takes a launch configuration
    /// first), which says nothing more.
    KernelCallsKernel,
    /// rustc before 1.101 warns that a `ptxNN` target feature is unstable;
    /// `feature` is its name (`ptx78`).
    UnstableTargetFeature { feature: String },
    /// cargo's progress (`Compiling …`, `Checking …`, `Finished …`).
    Progress,
    /// Anything else: shown as it is.
    Other,
}

/// Names that only `std` (or `alloc`) provides; an unresolved one means
/// host-only code reached the device pass.
const STD_ONLY: &[&str] = &[
    "std", "String", "Vec", "Box", "format", "println", "print", "eprintln", "eprint", "vec", "HashMap", "HashSet",
    "BTreeMap", "Rc", "Arc", "ToString", "ToOwned", "dbg",
];

/// The meaning of one message: rustc's diagnostic `message` with its
/// `children`'s messages, or one of cargo's stderr lines (no children;
/// ANSI colors and leading blanks are ignored).
pub fn classify(message: &str, children: &[&str]) -> Meaning {
    let plain = strip_ansi(message);
    let m = plain.trim_start();
    let linker_said = |c: &&str| c.split_once("offload-linker: ").map(|(_, rest)| rest.trim_end().to_string());
    if m.contains("(signal: 2, SIGINT") || m.contains("(signal: 15, SIGTERM") {
        return Meaning::Interrupted;
    }
    if m.starts_with("linking with `") && m.contains("offload-linker") {
        let said: Vec<String> = children.iter().filter_map(linker_said).collect();
        if said.iter().any(|s| s.starts_with(offload_linker::INTERRUPTED)) {
            return Meaning::Interrupted;
        }
        return Meaning::DeviceLinkFailed { said };
    }
    if m.contains("can't find crate for `std`") {
        return Meaning::NeedsStd;
    }
    let unresolved = m.contains("cannot find") || m.contains("unresolved") || m.contains("failed to resolve");
    if unresolved && STD_ONLY.iter().any(|n| m.contains(&format!("`{n}`"))) {
        return Meaning::NeedsStd;
    }
    if m.contains("is already defined") && m.contains(offload_linker::KERNEL_PREFIX) {
        return Meaning::DuplicateKernelSymbol;
    }
    if m.starts_with("a kernel cannot call or launch another kernel") {
        return Meaning::KernelCallsKernel;
    }
    if let Some(f) = m.strip_prefix("unstable feature specified for `-Ctarget-feature`: `") {
        return Meaning::UnstableTargetFeature { feature: f.trim_end_matches('`').to_string() };
    }
    if ["Compiling ", "Checking ", "Finished "].iter().any(|p| m.starts_with(p)) {
        return Meaning::Progress;
    }
    Meaning::Other
}

/// Removes ANSI escape sequences (cargo colors its lines).
pub fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            if chars.peek() == Some(&'[') {
                chars.next();
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Real messages: rustc 1.96 (Debian) and 1.101.0-nightly compiling for
    /// nvptx64-nvidia-cuda with `--error-format=json` (a `no_std` crate that
    /// uses `std` items; `extern crate std`; two `#[no_mangle]` kernels of
    /// one name; a cdylib whose linker, named offload-linker, fails or is
    /// interrupted), and cargo's stderr lines. Each: (message, children,
    /// meaning).
    #[test]
    fn real_messages() {
        use Meaning::*;
        let link = |said: &[&str]| DeviceLinkFailed { said: said.iter().map(|s| s.to_string()).collect() };
        let args = " \"/t/bin/offload-linker\" \"--export-symbol\" \"__offload_kernel_a_k_1\" \"<1 object files omitted>\" \
                    \"--target\" \"nvptx64-nvidia-cuda\" \"--target-cpu\" \"sm_80\" \"-o\" \"/t/k.ptx\" \"-O0\" \"--debug\"";
        let omitted = "some arguments are omitted. use `--verbose` to show all linker arguments";
        let table: Vec<(&str, Vec<&str>, Meaning)> = vec![
            // both toolchains
            ("cannot find macro `println` in this scope", vec![], NeedsStd),
            ("cannot find macro `format` in this scope", vec![], NeedsStd),
            (
                "cannot find module or crate `std` in this scope",
                vec!["you might be missing a crate named `std`"],
                NeedsStd,
            ),
            ("cannot find type `Vec` in this scope", vec![], NeedsStd),
            ("cannot find type `HashMap` in this scope", vec![], NeedsStd),
            // 1.96
            (
                "can't find crate for `std`",
                vec![
                    "the `nvptx64-nvidia-cuda` target may not support the standard library",
                    "consider building the standard library from source with `cargo build -Zbuild-std`",
                ],
                NeedsStd,
            ),
            // 1.101-nightly
            (
                "can't find crate for `std`",
                vec![
                    "the `nvptx64-nvidia-cuda` target may not be installed",
                    "consider downloading the target with `rustup target add nvptx64-nvidia-cuda`",
                ],
                NeedsStd,
            ),
            // older rustc (1.8x) wording
            ("failed to resolve: use of unresolved module or unlinked crate `std`", vec![], NeedsStd),
            ("cannot find value `x` in this scope", vec![], Other),
            ("cannot find type `Grid` in this scope", vec![], Other),
            ("mismatched types", vec![], Other),
            ("aborting due to 7 previous errors; 1 warning emitted", vec![], Other),
            ("symbol `__offload_kernel_a_k_1` is already defined", vec![], DuplicateKernelSymbol),
            ("symbol `helper` is already defined", vec![], Other),
            (
                "a kernel cannot call or launch another kernel, and a launcher's first argument is a launch \
                 configuration: `f32` is not one",
                vec!["the trait `IntoLaunchConfig` is not implemented for `f32`"],
                KernelCallsKernel,
            ),
            // the device pass (1.101-nightly): offload's message for the GPU
            (
                "a kernel cannot call or launch another kernel",
                vec!["the trait `offload::__private::KernelCannotLaunch` is not implemented for `f32`"],
                KernelCallsKernel,
            ),
            (
                "unstable feature specified for `-Ctarget-feature`: `ptx70`",
                vec!["this feature is not stably supported; its behavior can change in the future"],
                UnstableTargetFeature { feature: "ptx70".into() },
            ),
            (
                "linking with `/t/bin/offload-linker` failed: exit status: 1",
                vec![args, omitted, "error: offload-linker: f128 is not supported in device code, used in `app::q`\n"],
                link(&["f128 is not supported in device code, used in `app::q`"]),
            ),
            (
                "linking with `/t/bin/offload-linker` failed: exit status: 130",
                vec![
                    args,
                    omitted,
                    "error: offload-linker: interrupted: llc was killed by signal 2 while generating PTX\n",
                ],
                Interrupted,
            ),
            ("linking with `/t/bin/offload-linker` failed: signal: 9 (SIGKILL)", vec![args, omitted], link(&[])),
            ("linking with `cc` failed: exit status: 1", vec!["collect2: error: ld returned 1 exit status"], Other),
            // cargo's stderr lines
            (
                "  process didn't exit successfully: `rustc --crate-name x` (signal: 2, SIGINT: interrupt)",
                vec![],
                Interrupted,
            ),
            (
                "  process didn't exit successfully: `rustc` (signal: 15, SIGTERM: termination signal)",
                vec![],
                Interrupted,
            ),
            ("  process didn't exit successfully: `rustc` (exit status: 1)", vec![], Other),
            ("\x1b[1m\x1b[32m   Compiling\x1b[0m fixture v0.1.0 (/t/f)", vec![], Progress),
            ("    Finished `dev` profile [unoptimized + debuginfo] target(s) in 1.2s", vec![], Progress),
            ("warning: unused variable: `x`", vec![], Other),
        ];
        for (message, children, want) in &table {
            assert_eq!(classify(message, children), *want, "{message:?}");
        }
    }

    #[test]
    fn ansi_is_stripped() {
        assert_eq!(strip_ansi("\x1b[1m\x1b[32m   Compiling\x1b[0m foo"), "   Compiling foo");
    }
}
