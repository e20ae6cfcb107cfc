#!/bin/sh
# measure.sh: a new project's first `cargo offload build --arch sm_90`, whole
# command, with the crate cache warm from an earlier project (after: this
# branch; before: main, whose cache covers the device pass only), without it
# (OFFLOAD_CRATE_CACHE=0), and a plain `cargo build` of the same project.
# Each build is a new project from tests/fixtures/bin-only (mk.sh) with an
# empty target directory. AFTER and BEFORE are directories holding the
# cargo-offload and offload-linker executables of this branch and of main.
set -u
W=${W:-/work/wt/hostcache}; B=${B:-/tmp/hostcache-bench}
AFTER=${AFTER:-/tmp/hostcache-bin}; BEFORE=${BEFORE:-/tmp/hostcache-before}
export CARGO_BUILD_JOBS=2 OFFLOAD_PTXAS= CARGO_NET_OFFLINE=true OFFLOAD_CACHE_DIR=$B/cache
rm -rf $B/cache/crates   # the device sysroot in $B/cache stays (built once before)
load() { cut -d' ' -f1 /proc/loadavg; }
run() { # run LABEL BIN-DIR CMD...: one new project, one build
  label=$1; bin=$2; shift 2
  n=$label-$(date +%s%N | tail -c 7); $W/bench/results/2026-12-02-host-cache/mk.sh $n
  l0=$(load)
  ( cd $B/$n && PATH=$bin:$PATH /usr/bin/time -f "%e %U %S" -o $B/time.txt "$@" > $B/$n.log 2>&1 )
  rc=$?; l1=$(load)
  ok=$(cd $B/$n && OFFLOAD_DEVICE=host ./target/debug/$n 2>&1 | head -1)
  summary=$(grep -E '^ *(Device|Host) ' $B/$n.log | sed 's/ (.*//; s/^ *//' | tr '\n' ';')
  printf '%-9s wall %6s user %6s sys %5s  load %s -> %s  rc %s  %s  [%s]\n' $label \
    $(cat $B/time.txt | tail -1) $l0 $l1 $rc "$summary" "$ok"
  rm -rf $B/$n
}
echo "# $(date -u) $(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
echo "# fill: the first project of each binary fills the (empty) crate cache"
run fill-after $AFTER cargo offload build --arch sm_90
run fill-before $BEFORE cargo offload build --arch sm_90
for round in 1 2; do
  echo "# round $round"
  run after $AFTER cargo offload build --arch sm_90
  run before $BEFORE cargo offload build --arch sm_90
  run nocache $AFTER env OFFLOAD_CRATE_CACHE=0 cargo offload build --arch sm_90
  run plain $AFTER cargo build
done
