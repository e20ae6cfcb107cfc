use crate::cli::{parse, Command};

fn clean(line: &str) -> Result<super::CleanArgs, String> {
    match parse(line.split_whitespace()).map_err(|e| e.to_string())?.command {
        Command::Clean(a) => Ok(a),
        other => panic!("{line}: {other:?}"),
    }
}

/// `cargo clean`'s own flags pass through; `--max-size` needs
/// `--cache`, which takes no `cargo clean` arguments.
#[test]
fn clean_command_lines() {
    let a = clean("cargo offload clean --release -p foo --target-dir t").unwrap();
    assert_eq!((a.cache, a.args.join(" ")), (false, "--release -p foo --target-dir t".to_string()));
    let a = clean("cargo offload clean --cache --max-size 1G --dry-run").unwrap();
    assert_eq!((a.cache, a.max_size.as_deref(), a.dry_run, a.args.len()), (true, Some("1G"), true, 0));
    let e = clean("cargo offload clean --max-size 1G").unwrap_err();
    assert!(e.contains("--cache"), "{e}");
    let e = clean("cargo offload clean --cache --release").unwrap_err();
    assert!(e.contains("cannot be used with") || e.contains("unexpected argument"), "{e}");
}
