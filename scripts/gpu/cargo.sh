#!/usr/bin/env bash
# Suite `cargo`: what `cargo offload` builds runs the same on the GPU as on
# the host fallback. The generic-kernel fixture, the apps and every test
# binary of the workspace fixture (`cargo offload test`), and the sample
# with images for two architectures (the runtime must pick the sm_90
# cubin). Each program's host-fallback output, recorded when it is built,
# is the expected output of its GPU run.
what="fixtures (generic kernels, workspace tests) equal to the host"
needs="NVIDIA driver"
takes="under 1 min"

build() { # dir
    local out=$1 work name kind exe
    work=$(mktemp -d)
    copy_fixture() { # name
        cp -r "tests/fixtures/$1" "$work/$1"
        find "$work/$1" -name Cargo.toml -exec sed -i "s#@OFFLOAD@#$root/crates/offload#" {} +
        grep -q '^\[workspace\]' "$work/$1/Cargo.toml" || printf '\n[workspace]\n' >>"$work/$1/Cargo.toml"
    }
    expect() { # exe name: its host-fallback output is the expected output
        OFFLOAD_DEVICE=host "$1" >"$out/$2.expected"
        cp "$1" "$out/$2"
    }
    copy_fixture generic
    (cd "$work/generic" && offload build -q --arch sm_90)
    expect "$work/generic/target/debug/fixture_generic" generic
    copy_fixture workspace
    (cd "$work/workspace" && offload build -q --arch sm_90 --workspace)
    expect "$work/workspace/target/debug/ws_app_a" ws_app_a
    expect "$work/workspace/target/debug/ws_app_b" ws_app_b
    (cd "$work/workspace" && offload test -q --arch sm_90 --workspace --no-run --message-format=json) |
        python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l) if l.startswith("{") else {}
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        print(m["target"]["name"], m["target"]["kind"][0], m["executable"])' |
        while read -r name kind exe; do cp "$exe" "$out/test-$name-$kind"; done
    offload build -q --release --arch sm_80,sm_90 -p sample_offload
    cp target/release/sample_offload "$out/sample_sm80_sm90"
    # The images are in their own section, which strip keeps.
    find "$out" -type f -perm -u+x -exec strip {} +
    rm -rf "$work"
}

run() { # dir
    cd "$1" || return 1
    local name t
    for name in generic ws_app_a ws_app_b; do
        gpu_check "$name on the GPU prints what it printed on the host fallback" 0 \
            -- bash -c "OFFLOAD_DEVICE=cuda ./$name > $name.gpu && diff $name.expected $name.gpu"
    done
    for t in test-*; do
        gpu_check "cargo offload test: $t on the GPU" 0 "test result: ok" -- env OFFLOAD_DEVICE=cuda "./$t" --test-threads=1
    done
    gpu_check "sample with sm_80 and sm_90 images: the sm_90 cubin runs" 0 "sm_90 cubin" \
        -- env OFFLOAD_DEVICE=cuda ./sample_sm80_sm90
}
