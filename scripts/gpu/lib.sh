#!/usr/bin/env bash
# Helpers shared by the suites of scripts/gpu.sh (sourced, not run).

# The cargo-offload of this tree (the one the suite is meant to test), built
# on first use.
offload() {
    if [ ! -x "$root/target/debug/cargo-offload" ] || [ -z "${_offload_built:-}" ]; then
        cargo build -q --manifest-path "$root/Cargo.toml" -p cargo-offload
        _offload_built=1
    fi
    "$root/target/debug/cargo-offload" offload "$@"
}

# The executable of a `--no-run` test build, from cargo's JSON messages:
#     offload test ... --no-run --message-format=json | test_executable NAME
test_executable() {
    # Each executable once: a build that compiled the test reports it in
    # more than one message.
    python3 -c 'import json,sys
seen = []
for l in sys.stdin:
    m = json.loads(l) if l.startswith("{") else {}
    if m.get("reason") == "compiler-artifact" and m.get("executable") and sys.argv[1] in m["target"]["name"]:
        if m["executable"] not in seen:
            seen.append(m["executable"])
print("\n".join(seen))' "$1"
}

# Strips the symbols of every ELF executable under DIR that still has them.
strip_executables() { # dir
    local f
    while IFS= read -r -d '' f; do
        [ "$(head -c4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] && strip "$f"
    done < <(find "$1" -type f -perm -u+x -print0)
    return 0
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

# The compute-sanitizer of this machine (PATH, else /usr/local/cuda/bin),
# or nothing.
compute_sanitizer() {
    if command -v compute-sanitizer 2>/dev/null; then
        return
    fi
    [ ! -x /usr/local/cuda/bin/compute-sanitizer ] || echo /usr/local/cuda/bin/compute-sanitizer
}

# gpu_sanitize NAME TOOL [PATTERN...] -- PROGRAM [ARG...]
# PROGRAM on the GPU (OFFLOAD_DEVICE=cuda) under `compute-sanitizer --tool
# TOOL` (memcheck, racecheck, ...), at most ${SANITIZE_TIMEOUT:-600} s: ok if
# it exits 0, prints its tool's clean summary and every PATTERN, and prints
# no summary that counts an error, hazard or warning. The summaries
# (compute-sanitizer's, per tool): racecheck ends with "RACECHECK SUMMARY:
# N hazards displayed (E errors, W warnings)", the other tools (memcheck,
# initcheck, synccheck) with "ERROR SUMMARY: E errors". A reported error
# also makes compute-sanitizer exit 1 (--error-exitcode); racecheck's
# warnings do not, hence the summary check. Without compute-sanitizer one
# line says the check is skipped; it is not counted.
gpu_sanitize() {
    local name=$1 tool=$2 cs clean patterns=()
    shift 2
    while [ $# -gt 0 ] && [ "$1" != -- ]; do
        patterns+=("$1")
        shift
    done
    shift
    cs=$(compute_sanitizer)
    if [ -z "$cs" ]; then
        echo "=== $name"
        echo "--- $name: skipped (no compute-sanitizer in PATH or /usr/local/cuda/bin)"
        return 0
    fi
    case $tool in
    racecheck) clean="RACECHECK SUMMARY: 0 hazards displayed \(0 errors, 0 warnings\)" ;;
    *) clean="ERROR SUMMARY: 0 errors" ;;
    esac
    # `0*...`: no summary line with a non-zero count, whichever tool printed it.
    CHECK_TIMEOUT=${SANITIZE_TIMEOUT:-600} gpu_check "$name" 0 "$clean" \
        "0*SUMMARY:.*[^0-9][1-9][0-9]* (error|hazard|warning)" "${patterns[@]}" \
        -- env OFFLOAD_DEVICE=cuda "$cs" --tool "$tool" --error-exitcode 1 "$@"
}
