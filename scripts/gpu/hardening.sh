#!/usr/bin/env bash
# Suite `hardening`: inputs that once crashed or gave wrong answers, each
# now a clear error or the right answer on the GPU, with both device
# toolchains (Debian's rustc 1.96 / LLVM 22 and rustup's nightly / LLVM 23).
# a: toolchains — float → i128 casts, PTX ISA features, warp operations;
# b: runtime and images — dynamic shared memory above 48 KiB, recursion
#    deeper than the stack (StackOverflow, and the next launch works),
#    corrupted images, the runtime tests under compute-sanitizer memcheck
#    (skipped, saying so, without compute-sanitizer); c: device semantics —
#    core atomics' orderings, warp collectives in divergent code, device
#    globals, panics with values in release builds; d: probes — the `nvidia-smi` probe of `cargo offload`
#    (child.rs) on a real driver.
# DEVICE=host runs the same checks on the host fallback where they apply.
# The run's sections can be chosen: SECTIONS="b_stack c_atomics".
what="toolchains, shared memory, stack, images, memcheck, atomics, warp, probes"
needs="NVIDIA driver; nvcc (optional: stack probe); compute-sanitizer (optional)"
takes="about 1 min, up to 5 min more with compute-sanitizer"

build() { # dir
    local out=$1 arch=${ARCH:-sm_90}
    build_a_toolchain debian /usr/bin/rustc
    build_a_toolchain nightly "$(rustup which --toolchain nightly rustc)"
    build_b_runtime_tests
    build_b_stack_probe
    build_b_images
    build_c_panics
    build_d_probes
}

run() { # dir
    cd "$1" || return 1
    local dev=${DEVICE:-cuda} section
    for section in ${SECTIONS:-a_toolchain b_shared_memory b_stack b_images b_memcheck c_atomics c_warp_divergence c_globals c_panics d_probes}; do
        if [ "$section" = a_toolchain ]; then
            local tc
            for tc in debian nightly; do
                # A run may carry one toolchain's build at a time (the
                # two together are ~50 MB): say so, never skip silently.
                if [ -d "./$tc" ]; then gpu_a_toolchain "$tc"; else echo "--- a $tc: not in this run ($tc/ absent)"; fi
            done
        else
            "gpu_$section"
        fi
    done
}

# ---------------------------------------------------------------------------
# a: toolchains — device-model (casts, PTX ISA features, warp; and section
# c's checks), reduction and babelstream (offload::warp, which rustc 1.101
# ICEd on), from each device toolchain: Debian's /usr/bin/rustc (LLVM 22,
# whose NVPTX backend drops read-modify-write orderings unless the device
# link fences them) and rustup's nightly (LLVM 23).
build_a_toolchain() { # name rustc
    local name=$1 rustc=$2 target="$root/target/hardening-$1"
    echo "== $name: $("$rustc" -V)"
    OFFLOAD_RUSTC="$rustc" offload build -q --release --arch "$arch" --target-dir "$target" \
        -p device-model -p reduction -p babelstream
    mkdir -p "$out/$name"
    for bin in device-model reduction babelstream; do
        cp "$target/release/$bin" "$out/$name/"
    done
}

# ---------------------------------------------------------------------------
# b: runtime and images — dynamic shared memory above 48 KiB, stack
# overflow in recursive kernels, corrupted images (architecture suffixes are
# covered by offload-image's unit tests).

# The runtime test suite (it runs on both backends), release, with the
# kernels of crates/offload/tests/runtime.rs in its image.
build_b_runtime_tests() {
    local exe
    exe=$(offload test -q --release --arch "$arch" -p offload --test runtime --no-run --message-format=json | test_executable runtime | sort -u)
    cp "$exe" "$out/runtime-tests"
    # The recursive functions carry the device link's stack checks: their
    # names are string constants of the image (raw bytes in the cubin); and
    # the image has the stack probe and the floor the checks read.
    for f in 'runtime::recurse' 'runtime::p[io]ng' '__offload_stack_probe' '__offload_stack_floor'; do
        if ! grep -aqE "$f" "$out/runtime-tests"; then
            echo "error: no $f (recursion check) in the image of runtime-tests" >&2
            exit 1
        fi
    done
}

# The CUDA C stack probe (bench/probe/stack.cu: where a thread's stack
# starts and ends, for the recursion checks' floor): its source, and a
# binary if nvcc is found here (PATH, /usr/local/cuda, the PyPI
# nvidia-cuda-nvcc wheel that setup.sh installs for ptxas); otherwise
# the run compiles it on the GPU machine.
build_b_stack_probe() {
    cp bench/probe/stack.cu "$out/stack.cu"
    local nvcc
    nvcc=$(command -v nvcc || true)
    [ -n "$nvcc" ] || [ ! -x /usr/local/cuda/bin/nvcc ] || nvcc=/usr/local/cuda/bin/nvcc
    [ -n "$nvcc" ] || nvcc=$(python3 -c 'import glob,site
print(next(iter(sorted(g for p in site.getsitepackages()+[site.getusersitepackages()] for g in glob.glob(p+"/nvidia/cu*/bin/nvcc"))), ""))' 2>/dev/null || true)
    if [ -n "$nvcc" ]; then
        # (ptxas warns that krec's stack cannot be bounded: it recurses.)
        PATH="$(dirname "$nvcc"):$PATH" "$nvcc" -O3 -arch="$arch" -o "$out/stack-probe" bench/probe/stack.cu
        # The searches' logic, without a GPU: a stack of exactly L passes,
        # one 576 bytes short fails.
        if ! STACK_PROBE_SIMULATE=0 "$out/stack-probe" >/dev/null || STACK_PROBE_SIMULATE=-576 "$out/stack-probe" >/dev/null; then
            echo "error: bench/probe/stack.cu's simulated searches give the wrong verdicts" >&2
            exit 1
        fi
    else
        echo "note: no nvcc here; the run compiles bench/probe/stack.cu on the GPU machine"
    fi
}

# sample_offload (sm_90 PTX + cubin) and copies with corrupted images: the
# cubin damaged at 11 places (the issue's 11 copies crashed 3 times), the
# PTX damaged, both damaged.
build_b_images() {
    offload build -q --release --arch "$arch" -p sample_offload
    local exe=target/release/sample_offload
    cp "$exe" "$out/sample_offload"
    for k in 0 1 2 3 4 5 6 7 8 9 10; do
        python3 scripts/corrupt-image.py "$exe" "$out/sample_offload-cubin-$k" cubin "$(awk "BEGIN { print $k / 11 }")" 16 >/dev/null
    done
    python3 scripts/corrupt-image.py "$exe" "$out/sample_offload-ptx" ptx 0.5 16 >/dev/null
    python3 scripts/corrupt-image.py "$out/sample_offload-ptx" "$out/sample_offload-both" cubin 0.5 16 >/dev/null
    python3 scripts/corrupt-image.py "$exe" "$out/sample_offload-header" header version >/dev/null
}


# ---------------------------------------------------------------------------
# a: toolchains. Saturating float → i128/u128 casts (exact against a
# bit-level reference), PTX ISA features (sm_90 image: mask 0x5a5a0077),
# warp operations (reductions in partial warps included: blocks of 16 and
# 48 threads, exact against the host), and the warp examples, from each
# device toolchain.
gpu_a_toolchain() { # debian | nightly
    local d=./$1
    gpu_check "a $1: device-model casts, features, warp" 0 \
        "casts +ok .*values \\(NaN, ±inf, ±2\\^127, 2\\^128, subnormals, random\\) exact" \
        "features +ok .*ptx70\\.\\.ptx78 and sm_90 on \\(0x5a5a0077\\)" \
        "warp +ok .*reductions over 16-, 48- and 64-thread blocks exact" \
        -- env OFFLOAD_DEVICE="$dev" "$d/device-model" casts features warp
    gpu_check "a $1: reduction 2^24" 0 -- env OFFLOAD_DEVICE="$dev" "$d/reduction" 24
    gpu_check "a $1: babelstream 2^25" 0 -- env OFFLOAD_DEVICE="$dev" "$d/babelstream" -s 33554432 -n 20
}

# ---------------------------------------------------------------------------
# b: runtime and images.

# Dynamic shared memory above 48 KiB: 64 and 200 KiB reduce correctly (the
# H200 allows 227 KiB per block once a kernel opts in); 1 MiB is
# InvalidLaunch naming request and limit; static shared memory counts.
gpu_b_shared_memory() {
    # On an H200 (227 KiB per block) 200 KiB must run; elsewhere it may be
    # refused, naming the limit.
    local big="200 KiB of dynamic shared memory: ran, sums right"
    [ "$dev" = cuda ] || big="200 KiB of dynamic shared memory: (ran, sums right|refused, the limit is)"
    gpu_check "b shared memory: 64 and 200 KiB run, 1 MiB is refused naming the limit" 0 \
        "64 KiB of dynamic shared memory: ran, sums right" "$big" "test result: ok. 1 passed" \
        -- env OFFLOAD_DEVICE="$dev" ./runtime-tests --exact dynamic_shared_memory_above_48_kib --nocapture
    gpu_check "b shared memory: static shared memory counts against the limit" 0 "test result: ok. 1 passed" \
        -- env OFFLOAD_DEVICE="$dev" ./runtime-tests --exact static_shared_memory_counts_against_the_limit
}

# Recursion too deep for a GPU thread's stack: Error::StackOverflow naming
# the kernel (single and mutual recursion), then normal launches work in
# the same process; and the whole runtime suite passes after it. On the
# GPU the checks compare with the floor the runtime measured with the
# image's stack probe (printed); with the default 8 KiB stack and with
# 64 KiB the deepest recursion must fit the stack and not stop short (the
# test asserts both). First, the CUDA C probe of the stack's layout
# (bench/probe/stack.cu): the same initial stack pointer T for every
# kernel and stack limit L, [T - L, T) writable, recursion as deep as that
# allows, and offload's floor at or above the lowest writable address.
gpu_b_stack() {
    if [ "$dev" = cuda ]; then
        # Built with this machine's CUDA if it has one (its cudart matches
        # the driver), else the binary built with the stack.cu beside it.
        local nvcc=${NVCC:-/usr/local/cuda/bin/nvcc} probe=./stack-probe
        if [ -x "$nvcc" ] && "$nvcc" -O3 -arch=sm_90 -o stack-probe-here stack.cu 2>/dev/null; then
            probe=./stack-probe-here
        fi
        gpu_check "b stack: CUDA C probe: [T - L, T) is the usable stack of every kernel, offload's floor is safe" 0 \
            "\(1\) T the same for k_small, k_big and krec at L=1024 and 65536: yes" \
            "\(2\) L=8192: .*usable stack [0-9]+ bytes, (exactly|more than) L" "verdict: PASS" \
            -- timeout 20 "$probe"
    fi
    local floor=()
    [ "$dev" = cuda ] && floor=("stack floor of the recursion checks: local 0x[0-9a-f]+")
    local bytes
    for bytes in 8192 65536; do
        gpu_check "b stack: deep recursion is StackOverflow, the next launches work ($bytes-byte stack)" 0 \
            "deep recursion: kernel .runtime::recursive. overflowed the stack of a GPU thread" \
            "deep mutual recursion: kernel .runtime::mutually_recursive. overflowed the stack of a GPU thread" \
            "deepest recursion of .recurse. that runs on $dev: [0-9]+ calls" \
            "${floor[@]}" "test result: ok. 1 passed" \
            -- env OFFLOAD_DEVICE="$dev" OFFLOAD_CUDA_STACK_BYTES=$bytes \
            ./runtime-tests --exact too_deep_recursion_is_an_error_and_the_next_launch_works --nocapture
    done
    gpu_check "b stack: the whole runtime suite, overflows included, in one process" 0 "test result: ok" \
        -- env OFFLOAD_DEVICE="$dev" ./runtime-tests --test-threads=1
}

# Corrupted images: never a crash. A damaged cubin → the PTX of the same
# binary (one warning naming the image), right results; PTX and cubin
# damaged → the host fallback (right results), or with OFFLOAD_DEVICE=cuda
# a one-line error.
gpu_b_images() {
    local right="all results match the host reference"
    local warned="1*offload: warning: the embedded sm_90 (cubin|PTX) image is corrupted"
    if [ "$dev" = cuda ]; then
        gpu_check "b images: intact binary runs its cubin" 0 "offload backend: cuda: .*image: sm_90 cubin" "$right" -- ./sample_offload
        local k
        for k in 0 1 2 3 4 5 6 7 8 9 10; do
            gpu_check "b images: cubin corrupted (copy $k of 11): PTX instead, right results" 0 "$warned" \
                "offload backend: cuda: .*image: sm_90 PTX, JIT-compiled" "$right" -- ./sample_offload-cubin-$k
        done
        gpu_check "b images: PTX corrupted: the cubin runs" 0 "$warned" "offload backend: cuda: .*image: sm_90 cubin" "$right" \
            -- ./sample_offload-ptx
        gpu_check "b images: OFFLOAD_DEVICE=cuda, cubin corrupted: still the GPU, from the PTX" 0 "$warned" \
            "offload backend: cuda: .*PTX" "$right" -- env OFFLOAD_DEVICE=cuda ./sample_offload-cubin-5
    else
        gpu_check "b images: cubin corrupted, host fallback: one warning, right results" 0 "$warned" "$right" \
            -- env OFFLOAD_DEVICE=host ./sample_offload-cubin-5
    fi
    gpu_check "b images: cubin and PTX corrupted: host fallback, right results" 0 \
        "2*offload: warning: the embedded sm_90 (cubin|PTX) image is corrupted" "offload backend: host" "$right" \
        -- ./sample_offload-both
    local why="no usable CUDA GPU: "
    [ "$dev" = cuda ] && why="no usable CUDA GPU: no device image for .*every device image in this binary is corrupted"
    gpu_check "b images: cubin and PTX corrupted, OFFLOAD_DEVICE=cuda: a one-line error, no crash" error \
        "OFFLOAD_DEVICE=cuda but $why" -- env OFFLOAD_DEVICE=cuda ./sample_offload-both
    # A damaged bundle header (the format version; no checksum covers it):
    # one warning, never silence; the host fallback runs the kernels (with
    # the limits of a binary without images); OFFLOAD_DEVICE=cuda is an
    # error naming the damage.
    local damaged="1*offload: warning: the device image section of this binary is damaged \\(device image bundle has format version"
    gpu_check "b images: damaged bundle header: one warning, the host fallback, right results" 0 "$damaged" \
        "offload backend: host" "$right" -- env OFFLOAD_DEVICE="${dev/cuda/}" ./sample_offload-header
    why="no usable CUDA GPU: "
    [ "$dev" = cuda ] && why="no usable CUDA GPU: no device image for .*: the device image section of this binary is damaged"
    gpu_check "b images: damaged bundle header, OFFLOAD_DEVICE=cuda: a one-line error, no crash" error \
        "OFFLOAD_DEVICE=cuda but $why" -- env OFFLOAD_DEVICE=cuda ./sample_offload-header
}

# The blocking path under compute-sanitizer memcheck: the runtime tests,
# panicking kernels included (the panic record is claimed in device memory,
# written with plain stores: no atomic on the mapped host record), with no
# invalid access and no failed driver call ("ERROR SUMMARY: 0 errors"; a
# module without recursion checks is not asked for the stack probe). Not
# the stack-overflow test: it recurses until the checks fire at the end of
# the stack, whose use by an instrumented kernel may differ from what the
# checks' reserves were computed for (section b_stack checks it natively);
# nor the test that asks for more memory than any GPU has, whose
# `cuMemAlloc` fails by design (CUDA_ERROR_OUT_OF_MEMORY, which memcheck
# counts as an error; the smoke suite runs it natively).
gpu_b_memcheck() {
    if [ "$dev" != cuda ]; then
        echo "=== b memcheck: skipped (a sanitizer checks GPU code; DEVICE=$dev)"
        return 0
    fi
    gpu_sanitize "b memcheck: the runtime tests, panics included" memcheck "test result: ok" \
        -- ./runtime-tests --test-threads=1 --skip too_deep_recursion_is_an_error_and_the_next_launch_works \
        --skip buffer_length_mismatch_is_an_error_not_a_panic
}

# ---------------------------------------------------------------------------
# c: device semantics.

# core::sync::atomic with every operation x ordering (96 kernels, values
# checked), and message passing between blocks through RMW flags: the
# check fails on any stale read with Release/Acquire, AcqRel or SeqCst, or
# on fewer than 80,000 observed pairs; Relaxed's count is only printed (a
# non-zero one there shows the test can see reordering on this GPU).
# `debian`: Debian rustc 1.96, whose RMW orderings come from the device
# link's fences; `nightly`: rustup nightly (LLVM 23).
gpu_c_atomics() {
    local tc
    for tc in debian nightly; do
        [ -x "./$tc/device-model" ] || continue
        gpu_check "c atomics ($tc): every op x ordering, message passing with 0 stale reads" 0 \
            "device-model on $dev" "orderings +ok .*96 kernels \\(op x ordering\\) exact" \
            "Release/Acquire 0/[0-9]{5,}, AcqRel 0/[0-9]{5,}, SeqCst 0/[0-9]{5,}" \
            -- env OFFLOAD_DEVICE="$dev" "./$tc/device-model" orderings atomics
    done
}

# A warp collective reached by part of a warp (reduce_sum after an early
# return, inside `if lane < 16`; ballot after a return): Error::Divergence
# with the host fallback's exact text; late reconvergence and a reduction
# in each branch are not reported and give the host's values.
gpu_c_warp_divergence() {
    local tc
    for tc in debian nightly; do
        [ -x "./$tc/device-model" ] || continue
        gpu_check "c warp divergence ($tc): same Error::Divergence as the host, no false reports" 0 \
            "device-model on $dev" "warp_divergence +ok" "warp +ok" \
            -- env OFFLOAD_DEVICE="$dev" "./$tc/device-model" warp_divergence warp
    done
}

# Device globals: the initializer is the device's first value, kernels'
# updates persist across launches and reach the host only through read(),
# write() reaches the kernels; a 1 MiB global goes through read_into /
# write_from on a thread with a 64 KiB stack.
gpu_c_globals() {
    local tc
    for tc in debian nightly; do
        [ -x "./$tc/device-model" ] || continue
        gpu_check "c device globals ($tc): read/write through the image's symbols" 0 \
            "device-model on $dev" "globals +ok +[0-9.]+ ms  first read 7; " \
            "1 MiB table through read_into/write_from" \
            -- env OFFLOAD_DEVICE="$dev" "./$tc/device-model" globals
    done
}

# Panics whose messages carry values, in release builds (no debug
# assertions: the GPU does not format messages), from each device
# toolchain: tests/fixtures/panics, whose launches panic with an index out
# of bounds, the four slice range failures, copy_from_slice's length
# mismatch, Option::expect, a formatted assert in a kernel body, one in
# a helper function and one in a helper marked #[offload::record_panics],
# asserts with 0, 2, 4, 6 and 8 values (the chained recorders) and with
# &str arguments (constants of the image and a string built at run time
# on the thread's stack, whose bytes the recorder copies), one thread each. The GPU records the values and the host writes the
# message (core's, or the assert's from its recorded format string and
# values): the GPU run must print exactly what the host fallback printed
# here, except for the unmarked helper's assert (outside a kernel body),
# whose message is the placeholder the program prints last
# (offload::UNFORMATTED_PANIC_MESSAGE); after each panic the next launch
# computes the right values.
build_c_panics() {
    local work tc rustc target
    work=$(mktemp -d)
    cp -r tests/fixtures/panics "$work/panics"
    sed -i "s#@OFFLOAD@#$root/crates/offload#" "$work/panics/Cargo.toml"
    printf '\n[workspace]\n' >>"$work/panics/Cargo.toml"
    cp Cargo.lock "$work/panics/"
    for tc in debian nightly; do
        case $tc in
        debian) rustc=/usr/bin/rustc ;;
        nightly) rustc=$(rustup which --toolchain nightly rustc) ;;
        esac
        # The target directory of section a's build with this toolchain:
        # the same release dependencies.
        target="$root/target/hardening-$tc"
        (cd "$work/panics" && OFFLOAD_RUSTC="$rustc" offload build -q --release --arch "$arch" --target-dir "$target")
        mkdir -p "$out/$tc"
        cp "$target/release/fixture_panics" "$out/$tc/panics"
        check_panics_ptx "$target" "$work/panics/Cargo.toml"
        OFFLOAD_DEVICE=host "$out/$tc/panics" >"$out/$tc/panics.expected-host"
        python3 - "$out/$tc/panics.expected-host" >"$out/$tc/panics.expected-cuda" <<'EOF'
import sys
lines = open(sys.argv[1]).read().splitlines()
placeholder = lines[-1].removeprefix("placeholder: ")
for line in lines:
    if line.startswith("helper: kernel "):
        line = line[: line.index("): ") + 3] + placeholder
    print(line)
EOF
    done
    rm -rf "$work"
}

# The release PTX of the panics fixture records what the fixture expects:
# the explicit format strings of the 8-value and &str sites as string
# constants (the site statics), the chained recorders' calls, and no call
# through a function pointer (core::fmt).
check_panics_ptx() { # target-dir manifest (the PTX is newer)
    local ptx
    ptx=$(find "$1/offload" -path '*release*' -name fixture_panics.ptx -newer "$2" | head -1)
    python3 - "$ptx" <<'EOF'
import sys
ptx = open(sys.argv[1]).read()
def has(s):
    return ", ".join(str(b) for b in s.encode()) in ptx
need = {
    "the 8-value format string": has("eight: {0} {1} {2} {3:#x} {4:+} {5:?} {6:.3} {7:?}"),
    "the &str format string": has("{0} is {1} ({2:>6}|{3:.2}|{4:?}) {5}"),
    "a call of __offload_panic_format_begin": "call.uni __offload_panic_format_begin, (" in ptx,
    "a call of __offload_panic_format_end_8": "call.uni __offload_panic_format_end_8, (" in ptx,
    "a call of __offload_panic_format_end_str_6": "call.uni __offload_panic_format_end_str_6, (" in ptx,
    "no call through a function pointer (core::fmt)": "prototype" not in ptx,
}
bad = [k for k, ok in need.items() if not ok]
if bad:
    sys.exit(f"error: the release PTX of the panics fixture ({sys.argv[1]}) lacks: " + "; ".join(bad))
print(f"panics PTX: {len(need)} checks ok")
EOF
}

gpu_c_panics() {
    local tc
    for tc in debian nightly; do
        [ -x "./$tc/panics" ] || continue
        gpu_check "c panics ($tc, release): core's messages with values, formatted as on the host fallback" 0 \
            "^index: kernel .fixture_panics::index. panicked at src/main.rs:[0-9]+:[0-9]+ \(block \(3, 0, 0\), thread \(9, 0, 0\)\): index out of bounds: the len is 1000 but the index is 1777$" \
            "^range order: kernel .fixture_panics::range. panicked at .*: slice index starts at 7 but ends at 3$" \
            "^formatted: kernel .fixture_panics::formatted. panicked at .*: thread 606 of 1000 asserts$" \
            "^recorded: kernel .fixture_panics::recorded. panicked at .*: thread 808 asserts in a marked helper$" \
            "^values_8: kernel .fixture_panics::values_8. panicked at .*: eight: 908 908 908 0xaa4 -1092 false 113.500 'y'$" \
            "^names: kernel .fixture_panics::names. panicked at .*: 911 is odd \\(   odd\\|li\\|\"odd\"\\) b!$" \
            "17*: next launch right$" \
            -- bash -c "set -o pipefail; OFFLOAD_DEVICE=$dev ./$tc/panics | tee ./$tc/panics.out-$dev &&
                diff ./$tc/panics.expected-$dev ./$tc/panics.out-$dev"
    done
}

# ---------------------------------------------------------------------------
# d: probes — `cargo offload` asks `nvidia-smi` through child::probe (a
# time limit, killed on Ctrl-C): on a real driver its answer still reads
# as before. `doctor` needs no Rust to list the GPUs (it says what else is
# missing, and exits 3 where no toolchain is installed).
build_d_probes() {
    cargo build -q -p cargo-offload
    cp "$root/target/debug/cargo-offload" "$out/cargo-offload"
}

gpu_d_probes() {
    [ "$dev" = cuda ] || return 0
    gpu_check "d probes: doctor lists each GPU from nvidia-smi, within the probe's time limit" 0 \
        "ok +GPU 0 +[^,]+, sm_[0-9]+[af]?, [0-9]+ MiB, driver [0-9.]+" \
        -- bash -c 'timeout 60 ./cargo-offload offload doctor; [ $? -le 3 ]'
}
