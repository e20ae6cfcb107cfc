#!/usr/bin/env bash
# Registers and stack (ptxas -v, sm_90) of the kernels of
# tests/fixtures/panics, release (no debug assertions), built from this
# checkout with each device toolchain (Debian's rustc 1.96 and rustup's
# nightly). Usage: measure.sh OUTDIR   (writes OUTDIR/<tc>.ptxas and
# OUTDIR/<tc>.txt: one "kernel registers stack" line per kernel).
# TOOLCHAINS="nightly debian" by default.
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
out=$(realpath -m "$1")
mkdir -p "$out"
ptxas=${PTXAS:-$(cargo offload doctor 2>/dev/null | awk '/ ptxas \(/ { for (i = 1; i <= NF; i++) if ($i ~ /^\//) { print $i; exit } }')}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$root/tests/fixtures/panics" "$work/panics"
sed -i "s#@OFFLOAD@#$root/crates/offload#" "$work/panics/Cargo.toml"
printf '\n[workspace]\n' >>"$work/panics/Cargo.toml"
cp "$root/Cargo.lock" "$work/panics/"
# OFFLOAD_BIN: a built cargo-offload to use (the checkout's is built otherwise).
offload=${OFFLOAD_BIN:-}
if [ -z "$offload" ]; then
    cargo build -q --manifest-path "$root/Cargo.toml" -p cargo-offload
    offload="$root/target/debug/cargo-offload"
fi
for tc in ${TOOLCHAINS:-nightly debian}; do
    case $tc in
    debian) rustc=/usr/bin/rustc ;;
    nightly) rustc=$(rustup which --toolchain nightly rustc) ;;
    esac
    target="$root/target/hardening-$tc"
    (cd "$work/panics" && OFFLOAD_RUSTC="$rustc" "$offload" offload build -q --release \
        --arch sm_90 --target-dir "$target")
    ptx=$(find "$target/offload" -path '*release*' -name fixture_panics.ptx -newer "$work/panics/Cargo.toml" | head -1)
    cp "$ptx" "$out/$tc.ptx"
    "$ptxas" -v -arch=sm_90 -o /dev/null "$ptx" 2>"$out/$tc.ptxas"
    awk '/Function properties for __offload_kernel_/ { k = $NF; sub(/^__offload_kernel_fixture_panics_/, "", k); sub(/_[0-9a-f]+$/, "", k) }
         /bytes stack frame/ && k { s = $1 }
         /Used [0-9]+ registers/ && k { for (i = 1; i <= NF; i++) if ($i == "registers,") r = $(i - 1); print k, r, s; k = "" }' \
        "$out/$tc.ptxas" | sort >"$out/$tc.txt"
    echo "== $tc: $("$rustc" -V)"; cat "$out/$tc.txt"
done
