//! The wrapper's host phase: rustc for the host pass (`__OFFLOAD_PHASE=
//! host`, through `RUSTC_WORKSPACE_WRAPPER`: workspace members only).
//!
//! - `--check-cfg cfg(offload_device)` is added, so `#[cfg(offload_device)]`
//!   does not warn;
//! - `-C symbol-mangling-version=v0` is added, so that the instantiations of
//!   generic kernels can be read from a binary's symbols (`generic.rs`);
//! - a final crate (`bin`, or `--test`) with an image in the map gets
//!   `-C link-arg=<image object>`, and after rustc succeeds, the object is
//!   added to the first rule of rustc's dep-info file, so cargo relinks the
//!   binary when the image changes; then the binary's kernel records and
//!   generic instantiations are checked against the image (or, in the
//!   collect round, the instantiations are logged);
//! - after a device pass failed under `--keep-going`, a final binary with
//!   no image in the map is not linked ([`unlinked`]): linked without its
//!   kernels, it would fail at its first launch, or run them on the host
//!   fallback where a GPU is present.

use std::path::{Path, PathBuf};

use crate::arg::Args;
use crate::binary::{kernel_records, location_of};
use crate::errors::{CliError, Result};
use crate::handoff::{read_map, ImageMapEntry, COLLECT_VAR, DEVICE_FAILED_VAR, MAP_VAR};
use crate::phases::rustc;

/// The host phase: runs rustc with [`host_args`]; after a successful link
/// of a final binary, records its image in the dep-info and checks (or, in
/// the collect round, logs) its kernels. Returns rustc's exit code.
pub fn run(rustc: &str, args: Args) -> Result<i32> {
    let map = std::env::var_os(MAP_VAR).and_then(|p| read_map(Path::new(&p))).unwrap_or_default();
    let (new_args, image) = host_args(&args, &map);
    let failed = std::env::var(DEVICE_FAILED_VAR).ok();
    if let Some(error) = failed.and_then(|why| unlinked(&args, image.is_some(), &why)) {
        eprintln!("{error}");
        return Ok(1);
    }
    let code = rustc::run(rustc, &new_args)?;
    if code != 0 {
        return Ok(code);
    }
    let collect = std::env::var_os(COLLECT_VAR).map(PathBuf::from);
    let key = binary_key(&args);
    // A final binary the collect round links depends on a file that never
    // exists, so that cargo links it again in the final host pass: with its
    // image if it had none yet, and with the check of its kernels against
    // the image, which the collect round skips (its images may be out of
    // date).
    let is_build_script = args.crate_name().is_some_and(|n| n.starts_with("build_script_"));
    let pending =
        collect.as_ref().filter(|_| key.is_some() && !is_build_script).map(|l| l.with_file_name("image-pending"));
    if let Some(d) = args.dep_info_path() {
        if let Ok(mut contents) = std::fs::read_to_string(&d) {
            for dep in image.map(|e| e.object.as_path()).into_iter().chain(pending.as_deref()) {
                contents = add_dep_info(&contents, dep);
            }
            offload_image::file::write_atomic(&d, contents.as_bytes()).map_err(CliError::io("could not write", &d))?;
        }
    }
    match (collect, key, args.output_path(), args.crate_name()) {
        // Collect round: images may be out of date; only read which generic
        // kernel instantiations the binary uses.
        (Some(log), Some(key), Some(exe), Some(bin)) => collect_instances(&exe, bin, &key, &log)?,
        (None, _, Some(exe), _) => {
            if let Some(entry) = image {
                check_kernels(&exe, entry)?;
            }
        }
        _ => {}
    }
    Ok(code)
}

/// The error (as rustc would print it: JSON under `--error-format=json`)
/// in place of linking a final binary that has no device image (`image`:
/// whether it has one) after a device pass failed for `device`; `None` for
/// any other crate.
pub fn unlinked(args: &Args, image: bool, device: &str) -> Option<String> {
    let name = args.crate_name()?;
    if image || binary_key(args).is_none() || name.starts_with("build_script_") {
        return None;
    }
    let message = format!(
        "`{name}` was not linked: its device pass for {device} failed (its errors are above), so it has no device \
         image; with `--keep-going` the host pass links only the binaries whose device images were built"
    );
    let rendered = format!("error: {message}\n\n");
    if !args.as_slice().iter().any(|a| a == "--error-format=json") {
        return Some(rendered.trim_end().to_string());
    }
    let d = serde_json::json!({
        "$message_type": "diagnostic", "message": message, "code": null, "level": "error",
        "spans": [], "children": [], "rendered": rendered,
    });
    Some(d.to_string())
}

/// The host phase's rewrite; returns the image this binary links (its
/// object is recorded in the dep-info, its kernels checked), if any.
pub fn host_args<'m>(args: &Args, map: &'m [ImageMapEntry]) -> (Vec<String>, Option<&'m ImageMapEntry>) {
    let mut out = args.as_slice().to_vec();
    let end = out.iter().position(|a| a == "--").unwrap_or(out.len());
    let mut add = vec!["--check-cfg".to_string(), "cfg(offload_device)".into()];
    // v0 symbol names carry type arguments: `cargo offload` reads the
    // instantiations of generic kernels from them (see `generic.rs`).
    add.extend(["-C".into(), "symbol-mangling-version=v0".into()]);
    let image = find_image(args, map);
    if let Some(e) = image {
        add.extend(["-C".into(), format!("link-arg={}", e.object.display())]);
    }
    out.splice(end..end, add);
    (out, image)
}

/// The map entry for this compilation, if it is a final crate with an image.
pub fn find_image<'m>(args: &Args, map: &'m [ImageMapEntry]) -> Option<&'m ImageMapEntry> {
    let name = args.crate_name()?;
    let test = args.is_test();
    if !args.is_final() {
        return None;
    }
    let src = canonical(args.source_file()?);
    let same = |e: &&ImageMapEntry| e.crate_name == name && e.src_path == src;
    // A bin and its unit tests share name and source and differ in `--test`;
    // a `harness = false` bench or test is a test to cargo but gets no
    // `--test`, and is the only build of its source. A `--test` build never
    // takes the image of a non-test build: its `#[cfg(test)]` kernels differ.
    map.iter().find(|e| same(e) && e.test == test).or_else(|| {
        if test {
            return None;
        }
        let mut it = map.iter().filter(same);
        it.next().filter(|_| it.next().is_none())
    })
}

fn canonical(src: &str) -> PathBuf {
    std::fs::canonicalize(src).unwrap_or_else(|_| PathBuf::from(src))
}

/// The identity of a final binary in the lists of generic kernel
/// instantiations: crate name, root source file, and whether it is a test.
pub fn binary_key(args: &Args) -> Option<String> {
    let name = args.crate_name()?;
    if !args.is_final() {
        return None;
    }
    let src = canonical(args.source_file()?);
    let test = if args.is_test() { " --test" } else { "" };
    Some(format!("{name} {}{test}", src.display()).replace('\t', " "))
}

/// Inserts `dep` into the first rule of a Makefile-style dep-info file
/// (the one cargo reads), and adds an empty rule for it.
pub fn add_dep_info(contents: &str, dep: &Path) -> String {
    let escaped = dep.display().to_string().replace(' ', "\\ ");
    let mut out = String::with_capacity(contents.len() + 2 * escaped.len() + 8);
    let mut done = false;
    for line in contents.lines() {
        out.push_str(line);
        if !done && !line.starts_with('#') && (line.contains(": ") || line.ends_with(':')) {
            out.push(' ');
            out.push_str(&escaped);
            done = true;
        }
        out.push('\n');
    }
    out.push('\n');
    out.push_str(&escaped);
    out.push_str(":\n");
    out
}

/// Collect round: logs the final binary `key` (crate `bin`, linked as
/// `exe`) and the generic kernel instantiations it uses (see
/// `generic::merge`).
pub fn collect_instances(exe: &Path, bin: &str, key: &str, log: &Path) -> Result<()> {
    use std::io::Write;
    let records = kernel_records(exe);
    let instances = crate::generic::instances_of(exe, bin, records.iter().any(|r| r.generic))?;
    let mut text = format!("{key}\t-\n");
    for i in &instances {
        text.push_str(&format!("{key}\t{}\t{}\t{}\n", i.base, i.args, location_of(&records, &i.base)));
    }
    // One write per binary: cargo links binaries in parallel.
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(CliError::io("could not write", log))
}

/// Checks that the image has a kernel for every launcher in the binary, and
/// every instantiation of a generic kernel that the binary launches.
pub fn check_kernels(exe: &Path, entry: &ImageMapEntry) -> Result<()> {
    let records = kernel_records(exe);
    let generic = records.iter().any(|r| r.generic);
    let instances = crate::generic::instances_of(exe, &entry.crate_name, generic)?;
    let absent: Vec<(String, String, String)> = instances
        .iter()
        .filter(|i| !entry.kernels.contains(&i.symbol()))
        .map(|i| (i.base.clone(), i.args.clone(), location_of(&records, &i.base).to_string()))
        .collect();
    if !absent.is_empty() {
        return Err(CliError::MissingInstances { binary: entry.crate_name.clone(), instances: absent });
    }
    let mut missing: Vec<(String, String)> = records
        .into_iter()
        .filter(|r| !r.generic && !entry.kernels.contains(&r.symbol))
        .map(|r| (r.symbol, r.location))
        .collect();
    missing.sort();
    missing.dedup();
    if missing.is_empty() {
        return Ok(());
    }
    Err(CliError::MissingKernels { binary: entry.crate_name.clone(), kernels: missing })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// After a failed device pass (`--keep-going`): a final binary without
    /// an image gets an error naming it in place of its link, in rustc's
    /// JSON when cargo asks for JSON; libraries, build scripts and binaries
    /// with an image are compiled as always.
    #[test]
    fn binaries_without_an_image_are_not_linked_after_a_failed_device_pass() {
        let a = |s: &str| Args::new(s.split_whitespace().map(String::from).collect());
        let dev = "nvptx64-nvidia-cuda sm_90";
        let bad = a("--crate-name bad --edition=2021 src/bin/bad.rs --error-format=json --crate-type bin");
        let json: serde_json::Value = serde_json::from_str(&unlinked(&bad, false, dev).unwrap()).unwrap();
        let message = "`bad` was not linked: its device pass for nvptx64-nvidia-cuda sm_90 failed (its errors are \
                       above), so it has no device image; with `--keep-going` the host pass links only the binaries \
                       whose device images were built";
        assert_eq!((json["level"].as_str(), json["message"].as_str()), (Some("error"), Some(message)));
        assert_eq!(json["$message_type"], "diagnostic");
        assert_eq!(json["rendered"], format!("error: {message}\n\n"));
        let plain = a("--crate-name bad src/bin/bad.rs --crate-type bin");
        assert_eq!(unlinked(&plain, false, dev), Some(format!("error: {message}")));
        assert_eq!(unlinked(&bad, true, dev), None, "it has an image");
        assert_eq!(unlinked(&a("--crate-name good src/lib.rs --crate-type lib"), false, dev), None);
        assert_eq!(unlinked(&a("--crate-name build_script_build build.rs --crate-type bin"), false, dev), None);
    }

    #[test]
    fn host_adds_the_image_of_final_crates_only() {
        let dir = std::env::temp_dir().join(format!("offload-wrap-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("src")).unwrap();
        let main = dir.join("src/main.rs");
        std::fs::write(&main, "fn main() {}").unwrap();
        let main = std::fs::canonicalize(&main).unwrap();
        let entry = ImageMapEntry {
            crate_name: "s".into(),
            src_path: main.clone(),
            test: false,
            object: "/img/s.o".into(),
            kernels: vec![],
        };
        let map = vec![entry];
        let m = main.display().to_string();
        let args = |s: &str| Args::new(s.replace("MAIN", &m).split_whitespace().map(String::from).collect());
        let (out, image) = host_args(&args("--crate-name s MAIN --crate-type bin"), &map);
        assert_eq!(image.map(|e| e.object.clone()), Some(PathBuf::from("/img/s.o")));
        assert_eq!(
            out[5..],
            ["--check-cfg", "cfg(offload_device)", "-C", "symbol-mangling-version=v0", "-C", "link-arg=/img/s.o"]
        );
        // the unit-test build of the same bin has no image in this map
        assert_eq!(host_args(&args("--crate-name s MAIN --test"), &map).1, None);
        // a library gets the cfg and the mangling, no image
        let (out, image) = host_args(&args("--crate-name s MAIN --crate-type lib"), &map);
        assert_eq!((out.len(), image), (9, None));
        // A `harness = false` bench: cargo's profile says test, rustc gets
        // neither `--test` nor a crate type; the only image of its source is its.
        let bench = vec![ImageMapEntry { test: true, ..map[0].clone() }];
        let plain = args("--crate-name s MAIN");
        assert_eq!(host_args(&plain, &bench).1.map(|e| e.object.clone()), Some(PathBuf::from("/img/s.o")));
        assert_eq!(binary_key(&plain), Some(format!("s {m}")));
        assert_eq!(binary_key(&args("--crate-name s MAIN --test")), Some(format!("s {m} --test")));
        assert_eq!(binary_key(&args("--crate-name s MAIN --crate-type lib")), None);
        // Flags are added before `--`.
        let (out, _) = host_args(&args("--crate-name s MAIN --crate-type lib -- x"), &map);
        assert_eq!(out[out.len() - 2..], ["--", "x"]);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn dep_info_gains_the_image() {
        let d = "/t/deps/s-1.d: src/main.rs src/k.rs\n\nsrc/main.rs:\nsrc/k.rs:\n\n# env-dep:X=1\n";
        let out = add_dep_info(d, Path::new("/t/img dir/s.o"));
        assert!(out.starts_with("/t/deps/s-1.d: src/main.rs src/k.rs /t/img\\ dir/s.o\n"));
        assert!(out.ends_with("/t/img\\ dir/s.o:\n"));
        assert_eq!(out.matches("s.o").count(), 2);
    }

    /// An object with the kernel records the `#[kernel]` macro writes
    /// (section `offload_kernels`: `a_1` twice, `b_2`, and the generic
    /// `g_3`) and the v0 symbol of the marker for `g_3::<(f32,)>`, as a
    /// binary's host pass links them.
    fn binary_with_records(path: &Path) {
        use object::write::{Object as Obj, Symbol, SymbolSection};
        use object::{SymbolFlags, SymbolKind, SymbolScope};
        let mut obj = Obj::new(object::BinaryFormat::Elf, object::Architecture::X86_64, object::Endianness::Little);
        let s = obj.add_section(Vec::new(), b"offload_kernels".to_vec(), object::SectionKind::ReadOnlyData);
        obj.append_section_data(
            s,
            b"__offload_kernel_app_b_2\tsrc/main.rs:9\0__offload_kernel_app_a_1\tsrc/main.rs:3\0\
              __offload_kernel_app_a_1\tsrc/main.rs:3\0__offload_kernel_app_g_3\tsrc/main.rs:20\tgeneric\0",
            1,
        );
        let text = obj.add_section(Vec::new(), b".text".to_vec(), object::SectionKind::Text);
        let at = obj.append_section_data(text, &[0xc3], 1);
        // app::__offload_kernel_app_g_3::<(f32,)> (v0: `24_`, as the
        // identifier starts with `_`)
        obj.add_symbol(Symbol {
            name: b"_RINvC3app24___offload_kernel_app_g_3TfEE".to_vec(),
            value: at,
            size: 1,
            kind: SymbolKind::Text,
            scope: SymbolScope::Linkage,
            weak: false,
            section: SymbolSection::Section(text),
            flags: SymbolFlags::None,
        });
        std::fs::write(path, obj.write().unwrap()).unwrap();
    }

    /// The check after the host link: every kernel the binary can launch,
    /// and every instantiation of a generic kernel it launches, is in its
    /// image; the missing ones are named once each, with where the kernel
    /// is defined.
    #[test]
    fn missing_kernels_are_named() {
        let exe = std::env::temp_dir().join(format!("offload-missing-kernels-{}.o", std::process::id()));
        binary_with_records(&exe);
        let g_f32 = offload_image::symbol::instance("__offload_kernel_app_g_3", "(f32,)");
        let entry = |kernels: &[&str]| ImageMapEntry {
            crate_name: "app".into(),
            src_path: "/x/src/main.rs".into(),
            test: false,
            object: "/img/app.o".into(),
            kernels: kernels.iter().map(|k| k.to_string()).collect(),
        };
        let complete = ["__offload_kernel_app_a_1", "__offload_kernel_app_b_2", g_f32.as_str()];
        let result = check_kernels(&exe, &entry(&complete));
        assert!(result.is_ok(), "{result:?}");
        // The instantiation is missing: named with its type arguments.
        match check_kernels(&exe, &entry(&complete[..2])) {
            Err(CliError::MissingInstances { binary, instances }) => {
                assert_eq!(binary, "app");
                assert_eq!(
                    instances,
                    [("__offload_kernel_app_g_3".to_string(), "(f32,)".to_string(), "src/main.rs:20".to_string())]
                );
            }
            other => panic!("{other:?}"),
        }
        // Plain kernels missing: each once, in order, with its location.
        match check_kernels(&exe, &entry(&[g_f32.as_str()])) {
            Err(CliError::MissingKernels { binary, kernels }) => {
                assert_eq!(binary, "app");
                let want =
                    [("__offload_kernel_app_a_1", "src/main.rs:3"), ("__offload_kernel_app_b_2", "src/main.rs:9")];
                assert_eq!(kernels, want.map(|(k, at)| (k.to_string(), at.to_string())));
            }
            other => panic!("{other:?}"),
        }
        // A binary without records (this test binary has none of its own)
        // launches no kernel: nothing is missing.
        assert!(check_kernels(&std::env::current_exe().unwrap(), &entry(&[])).is_ok());
        let _ = std::fs::remove_file(&exe);
    }
}
