#!/usr/bin/env python3
"""Rebuild benchmark of `cargo offload build` (issue: fast rebuilds).

Copies examples/01-first-kernel to a temporary directory and times, each
scenario N times (default 5), median/min/max in seconds:

  cold         every target directory removed first
  no-op        nothing changed
  host-only    a string in host code changed (no line moves)
  kernel       a constant in a kernel changed

For each run it also reports what `cargo offload` says it did on the device
side ("Device compiled N crates, linked L device images, reused R device images
from the link cache", or "Device up to date: nothing to compile") and whether
the host binary was relinked (its mtime changed). Targets checked at the end:
a no-op rebuild compiles no device crate and takes < 2 s; a host-only change
links no device image; a kernel change relinks the host binary.

Usage: scripts/rebuild-bench.py [--runs N] [--arch sm_90] [--cargo-offload PATH]
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--cargo-offload", default=shutil.which("cargo-offload") or "cargo-offload")
    args = ap.parse_args()
    args.cargo_offload = os.path.abspath(args.cargo_offload) if os.sep in args.cargo_offload else (shutil.which(args.cargo_offload) or args.cargo_offload)
    if args.runs < 1:
        ap.error("--runs must be at least 1")

    work = tempfile.mkdtemp(prefix="offload-rebuild-")
    app = os.path.join(work, "app")
    shutil.copytree(os.path.join(ROOT, "examples/01-first-kernel"), app)
    manifest = os.path.join(app, "Cargo.toml")
    text = open(manifest).read().replace('offload.workspace = true', 'offload = { path = "%s" }' % os.path.join(ROOT, "crates/offload"))
    open(manifest, "w").write(text + "\n[workspace]\n")
    target = os.path.join(work, "target")
    main_rs = os.path.join(app, "src/main.rs")
    exe = os.path.join(target, "debug", "sample_offload")
    env = dict(os.environ, CARGO_TERM_COLOR="never")
    env.setdefault("CARGO", shutil.which("cargo") or "cargo")

    def build():
        t0 = time.monotonic()
        p = subprocess.run([args.cargo_offload, "offload", "build", "--arch", args.arch, "--target-dir", target],
                           cwd=app, env=env, capture_output=True, text=True)
        dt = time.monotonic() - t0
        if p.returncode != 0:
            sys.exit("build failed:\n" + p.stderr)
        line = next((l for l in p.stderr.splitlines() if l.strip().startswith("Device ") and ("compiled" in l or "up to date" in l)), None)
        if line is None:
            sys.exit("no device summary in:\n" + p.stderr)
        n = lambda pat: int(m.group(1)) if (m := re.search(pat, line)) else 0
        return dt, (n(r"compiled (\d+) crate"), n(r"linked (\d+) device image"), n(r"reused (\d+) device image"))

    def mtime():
        return os.stat(exe).st_mtime_ns if os.path.exists(exe) else None

    def toggle(old, new):
        s = open(main_rs).read()
        if old in s:
            s = s.replace(old, new)
        else:
            s = s.replace(new, old)
        open(main_rs, "w").write(s)

    kernel_edits = iter(range(1, 1000))

    def edit_kernel():
        # A new constant each time, so the image really changes (no cache hit).
        s = open(main_rs).read()
        s, edits = re.subn(r"\*yi = a \* x\[i\] \+ \*yi( \+ [0-9.e-]+)?;",
                           "*yi = a * x[i] + *yi + %d.0e-30;" % next(kernel_edits), s)
        if edits != 1:
            sys.exit("the saxpy kernel's body was not found in %s" % main_rs)
        open(main_rs, "w").write(s)

    scenarios = [
        ("cold", lambda: shutil.rmtree(target, ignore_errors=True)),
        ("no-op", lambda: None),
        ("host-only", lambda: toggle("all results match the host reference", "all results match the host-side reference")),
        ("kernel", edit_kernel),
    ]
    build()  # warm the toolchain caches (rustc metadata, python site dirs)
    results = {}
    for name, prepare in scenarios:
        rows = []
        for _ in range(args.runs):
            prepare()
            before = mtime()
            dt, (compiled, linked, reused) = build()
            rows.append((dt, compiled, linked, reused, mtime() != before))
        results[name] = rows
        print("%-10s done" % name, file=sys.stderr)

    print("\ncargo offload build --arch %s, examples/01-first-kernel, %d runs each (seconds)" % (args.arch, args.runs))
    print("%-10s %8s %8s %8s  %-26s %s" % ("scenario", "median", "min", "max", "device: compiled/linked/reused", "host relinked"))
    for name, rows in results.items():
        times = [r[0] for r in rows]
        dev = sorted(set("%d/%d/%d" % r[1:4] for r in rows))
        relinked = sum(1 for r in rows if r[4])
        print("%-10s %8.2f %8.2f %8.2f  %-30s %d/%d" % (name, statistics.median(times), min(times), max(times), ",".join(dev), relinked, len(rows)))

    failures = []
    noop = results["no-op"]
    if any(r[1] != 0 for r in noop):
        failures.append("a no-op rebuild compiled device crates")
    if statistics.median(r[0] for r in noop) >= 2.0:
        failures.append("a no-op rebuild took >= 2 s")
    if any(r[4] for r in noop):
        failures.append("a no-op rebuild relinked the host binary")
    if any(r[2] != 0 for r in results["host-only"]):
        failures.append("a host-only change linked a device image")
    if not all(r[4] for r in results["kernel"]) or any(r[2] != 1 for r in results["kernel"]):
        failures.append("a kernel change did not relink the image and the host binary")
    shutil.rmtree(work, ignore_errors=True)
    print("\ntargets: " + ("all met" if not failures else "MISSED: " + "; ".join(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
