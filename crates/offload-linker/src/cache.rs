//! The link cache: a device link whose inputs, flags and tools are those of
//! an earlier link reuses its image (`OFFLOAD_LINK_CACHE`).

use std::path::PathBuf;

use offload_image::file::copy_atomic;

use crate::runner::record;
use crate::{kernels, link, LinkArgs, LinkError, LlvmTools};

/// The cache key of a link: every input's bytes, the flags and the tools.
/// Two links with the same key produce the same image.
pub fn cache_key(args: &LinkArgs, tools: &LlvmTools) -> Result<String, LinkError> {
    let mut parts: Vec<Vec<u8>> = Vec::new();
    for f in &args.files {
        parts.push(std::fs::read(f).map_err(|source| LinkError::Io { path: f.clone(), source })?);
    }
    parts.push(args.target.clone().into_bytes());
    parts.push(args.target_cpu.clone().unwrap_or_default().into_bytes());
    parts.push(args.target_feature.clone().unwrap_or_default().into_bytes());
    parts.push(args.opt_level.clone().into_bytes());
    parts.push(vec![args.debug as u8, args.fast_math as u8, args.fmad as u8]);
    // Experiment flags change the image too.
    parts.push(std::env::var("OFFLOAD_OPT_FLAGS").unwrap_or_default().into_bytes());
    parts.push(kernels(&args.exports).join(",").into_bytes());
    for t in [&tools.llvm_link, &tools.opt, &tools.llc] {
        parts.push(t.display().to_string().into_bytes());
    }
    parts.push(env!("CARGO_PKG_VERSION").as_bytes().to_vec());
    // The linker itself: a new offload-linker must not reuse old images.
    if let Ok(exe) = std::env::current_exe() {
        parts.push(std::fs::read(exe).unwrap_or_default());
    }
    Ok(format!("{:016x}", offload_image::hash::fnv64_parts(&parts)))
}

/// Links like [`link`], reusing a cached image when the inputs, flags and
/// tools are the same as in an earlier link (`OFFLOAD_LINK_CACHE` names the
/// cache directory). Each link is recorded as `linked <output>` or
/// `reused <output>` in the file `OFFLOAD_LINK_RECORD` names, if set.
pub fn link_cached(args: &LinkArgs, tools: &LlvmTools) -> Result<(), LinkError> {
    let cache = std::env::var_os("OFFLOAD_LINK_CACHE").map(PathBuf::from);
    let Some(cache) = cache else {
        link(args, tools)?;
        record("OFFLOAD_LINK_RECORD", &format!("linked {}", args.output.display()));
        return Ok(());
    };
    let key = cache_key(args, tools)?;
    let ext = args.output.extension().map(|e| e.to_string_lossy().into_owned()).unwrap_or_default();
    let cached = cache.join(format!("{key}.{ext}"));
    if cached.is_file() {
        // Copied under a temporary name and renamed: an interrupted copy
        // leaves no partial image.
        copy_atomic(&cached, &args.output).map_err(|source| LinkError::Io { path: args.output.clone(), source })?;
        record("OFFLOAD_LINK_RECORD", &format!("reused {}", args.output.display()));
        return Ok(());
    }
    link(args, tools)?;
    let _ = std::fs::create_dir_all(&cache);
    // A name of its own (two builds may link the same inputs at once),
    // renamed into place only when complete.
    let _ = copy_atomic(&args.output, &cached);
    record("OFFLOAD_LINK_RECORD", &format!("linked {}", args.output.display()));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_args;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn cache_keys_differ_by_math_mode() {
        let tools =
            LlvmTools { major: 22, llvm_link: "llvm-link".into(), opt: "opt".into(), llc: "llc".into(), lld: None };
        let base = parse_args(argv("--target nvptx64-nvidia-cuda --target-cpu sm_90 -o out.ptx -O3")).unwrap();
        let key = |f: &dyn Fn(&mut LinkArgs)| {
            let mut a = base.clone();
            f(&mut a);
            cache_key(&a, &tools).unwrap()
        };
        let plain = key(&|_| {});
        let fmad = key(&|a| a.fmad = true);
        let fast = key(&|a| a.fast_math = true);
        assert_eq!(plain, key(&|_| {}));
        assert_ne!(plain, fmad);
        assert_ne!(plain, fast);
        assert_ne!(fmad, fast);
    }
}
