#!/usr/bin/env bash
# cold.sh TARGET_DIR LOG: the README's quick test command from an empty
# target directory, timed; cargo's stdout in LOG.out, stderr in LOG.err.
# Run from the repository root with nothing else running on the machine.
set -euo pipefail
rm -rf "$1"
/usr/bin/time -f "%e s wall, %U s user, %S s system" env CARGO_TARGET_DIR="$1" cargo test --workspace >"$2.out" 2>"$2.err" || true
tail -n 1 "$2.err"
python3 "$(dirname "$0")/breakdown.py" "$2"
