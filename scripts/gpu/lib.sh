#!/usr/bin/env bash
# Helpers shared by the suites of scripts/gpu.sh (sourced, not run).

# The cargo-offload of this tree (the one the suite is meant to test), built
# on first use.
offload() {
    if [ ! -x "$root/target/debug/cargo-offload" ] || [ -z "${_offload_built:-}" ]; then
        cargo build -q -p cargo-offload
        _offload_built=1
    fi
    "$root/target/debug/cargo-offload" offload "$@"
}

# The executable of a `--no-run` test build, from cargo's JSON messages:
#     offload test ... --no-run --message-format=json | test_executable NAME
test_executable() {
    python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l) if l.startswith("{") else {}
    if m.get("reason") == "compiler-artifact" and m.get("executable") and sys.argv[1] in m["target"]["name"]:
        print(m["executable"])' "$1"
}

gpu_begin() {
    _failed=0
    _checks=0
    nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv,noheader 2>/dev/null \
        || echo "(no nvidia-smi: no NVIDIA driver here)"
}

gpu_end() { # suite
    echo "$1: $_checks check(s), $_failed failed"
    [ "$_failed" -eq 0 ]
}

# gpu_check NAME WANT [PATTERN...] -- COMMAND...
# Runs COMMAND (at most ${CHECK_TIMEOUT:-300} s) and prints its output (the
# last ${CHECK_TAIL:-40} lines). The check is ok if the exit status is WANT
# (0; or `error`: non-zero but neither a signal nor a timeout, i.e. a clean
# failure) and every PATTERN (an extended regex) occurs in the output; a
# PATTERN `N*REGEX` must match exactly N lines.
gpu_check() {
    local name=$1 want=$2
    shift 2
    local patterns=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do
        patterns+=("$1")
        shift
    done
    shift
    _checks=$((_checks + 1))
    echo "=== $name"
    local out rc ok=1
    out=$(timeout "${CHECK_TIMEOUT:-300}" "$@" 2>&1)
    rc=$?
    echo "$out" | tail -n "${CHECK_TAIL:-40}"
    if [ "$want" = 0 ]; then
        [ $rc -eq 0 ] || ok=0
    elif [ $rc -eq 0 ] || [ $rc -ge 124 ]; then
        ok=0
    fi
    local p n re
    for p in "${patterns[@]}"; do
        if [[ "$p" =~ ^([0-9]+)\*(.*)$ ]]; then
            n=${BASH_REMATCH[1]} re=${BASH_REMATCH[2]}
            if [ "$(grep -Ec -- "$re" <<<"$out")" != "$n" ]; then
                echo "(expected $n line(s) matching: $re)"
                ok=0
            fi
        elif ! grep -Eq -- "$p" <<<"$out"; then
            echo "(missing: $p)"
            ok=0
        fi
    done
    if [ $ok = 1 ]; then
        echo "--- $name: ok (exit $rc)"
    else
        echo "--- $name: FAILED (exit $rc)"
        _failed=$((_failed + 1))
    fi
}
