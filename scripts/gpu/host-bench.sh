#!/usr/bin/env bash
# Suite `host-bench`: the host fallback against the same computations
# written by hand with rayon (issue 14; bench/host), on all the run
# machine's CPU cores: triad, dot (shared memory + warp shuffles), n-body,
# SGEMM naive and tiled, a barrier loop, histogram (atomics), Jacobi. It
# needs no GPU; it is in the runbook to run on the GPU machine's 16 cores,
# where the issue's targets are set.
#
# build: bench/host (the `host-bench` binary, no device image: it measures
#   the host fallback), release. With BEFORE=<git revision>, also
#   `host-bench-before`: the same benchmark source built against the
#   runtime of that revision (e.g. the merge base of the fallback's work),
#   so that one run compares before and after on the same machine.
# run: ROUNDS (3) rounds, each running every build once, alternating which
#   goes first; each run checks every result (a wrong one fails the check)
#   and takes the median of REPS (5) timed runs per side. THREADS (the
#   run machine's cores) workers on both sides. Results in $OUT/host-bench:
#   raw.csv (every row of every round), summary.md (medians, ratios,
#   targets: bench/host/table.py), env.txt, log.txt. HOST_BENCH_ARGS adds
#   flags (sizes: `--sgemm-n 512`, ...; see `host-bench --help`).
what="host fallback vs hand-written rayon on the CPU (bench/host)"
needs="no GPU: the run machine's CPU cores (16 on the H200 machine)"
takes="about 3 min on 16 cores (x2 with BEFORE)"

build() { # dir
    local out=$1 rev=${BEFORE:-} src
    cargo build -q --release -p host-bench
    cp target/release/host-bench "$out/host-bench"
    {
        echo "commit $(git rev-parse HEAD)$(git diff --quiet HEAD -- . ':!bench/results' || echo ' (with uncommitted changes)')"
        echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -m): cargo build --release -p host-bench"
    } >"$out/BUILD"
    if [ -n "$rev" ]; then
        # The benchmark of this tree against the runtime of `rev`: the
        # crates of `rev`, this tree's bench/host and lock file.
        src=$root/target/host-bench-before/src
        rm -rf "$src" && mkdir -p "$src"
        git archive "$rev" | tar -x -C "$src"
        rm -rf "$src/bench/host" && cp -r bench/host "$src/bench/host" && cp Cargo.lock "$src/"
        # `rev`'s workspace may not list `offload` among its dependencies.
        sed -i 's|^offload.workspace = true|offload = { path = "../../crates/offload" }|' "$src/bench/host/Cargo.toml"
        grep -q '"bench/host"' "$src/Cargo.toml" || sed -i 's|^members = \[|members = [\n    "bench/host",|' "$src/Cargo.toml"
        (cd "$src" && CARGO_TARGET_DIR=$root/target/host-bench-before/target cargo build -q --release -p host-bench)
        cp "$root/target/host-bench-before/target/release/host-bench" "$out/host-bench-before"
        echo "host-bench-before: bench/host of this tree against the runtime of $(git rev-parse "$rev") ($rev)" >>"$out/BUILD"
    fi
    cat "$out/BUILD"
}

run() { # dir
    local dir=$1 res=$OUT/host-bench r b start
    local threads=${THREADS:-$(nproc)} rounds=${ROUNDS:-3} reps=${REPS:-5}
    mkdir -p "$res"
    local raw=$res/raw.csv log=$res/log.txt
    : >"$log"
    echo "round,bench,impl,mode,case,size,metric,value" >"$raw"
    start=$(date +%s)
    {
        echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
        echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)  cores: $(nproc)  threads used: $threads"
        echo "memory: $(grep MemTotal /proc/meminfo | awk '{print $2 / 1048576 " GiB"}')"
        echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
        cat "$dir/BUILD"
        echo "command: host-bench --threads $threads --reps $reps --csv ${HOST_BENCH_ARGS:-}"
    } >"$res/env.txt" 2>&1
    cat "$res/env.txt"
    local builds=(host-bench)
    [ -x "$dir/host-bench-before" ] && builds+=(host-bench-before)
    # One build, one round: its CSV rows (renamed `*_before` for the old
    # runtime), prefixed with the round, into raw.csv; a failure (a result
    # that differs exits 1) is a failed check.
    one() { # round build
        local round=$1 bin=$2 suffix=""
        [ "$bin" = host-bench-before ] && suffix=_before
        _checks=$((_checks + 1))
        echo "[$(($(date +%s) - start))s] round $round: $bin --threads $threads --reps $reps --csv ${HOST_BENCH_ARGS:-}" >>"$log"
        # shellcheck disable=SC2086
        "$dir/$bin" --threads "$threads" --reps "$reps" --csv ${HOST_BENCH_ARGS:-} 2>>"$log" |
            sed -e "s/^host,offload,/host,offload$suffix,/" -e "s/^host,rayon,/host,rayon$suffix,/" -e "s/^/$round,/" >>"$raw"
        if [ "${PIPESTATUS[0]}" -eq 0 ]; then
            echo "--- round $round, $bin: ok"
        else
            echo "--- round $round, $bin: FAILED (a result differs or the run failed; see $log)"
            _failed=$((_failed + 1))
        fi
    }
    for r in $(seq 1 "$rounds"); do
        if [ $((r % 2)) -eq 1 ]; then
            for b in "${builds[@]}"; do one "$r" "$b"; done
        else
            for ((b = ${#builds[@]} - 1; b >= 0; b--)); do one "$r" "${builds[b]}"; done
        fi
    done
    echo
    echo "== host fallback / hand-written rayon, $threads threads each (medians of $rounds rounds)"
    python3 bench/host/table.py "$res"
    echo "results: $res (raw.csv, summary.md, env.txt, log.txt); $(($(date +%s) - start)) s"
}
