#!/bin/bash
# measure.sh TARGETDIR LOG [env...]: cold `cargo test --workspace` with helpers paused (re-stopped every 2 s)
t=$1; log=$2; shift 2
rm -rf $t
( while true; do /work/notes/pause.sh STOP >/dev/null; sleep 2; done ) &
keeper=$!
trap 'kill $keeper; /work/notes/pause.sh CONT >/dev/null' EXIT
sleep 3
/usr/bin/time -f "%e s wall %U u %S s" env CARGO_TARGET_DIR=$t "$@" cargo test --workspace > $log.out 2> $log.err
tail -1 $log.err
