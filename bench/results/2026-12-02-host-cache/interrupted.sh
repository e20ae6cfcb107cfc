#!/bin/bash
# Ctrl-C (SIGINT to the process group) in the middle of a first project's
# host pass, whose misses compile and store; then the cache holds no partial
# entry, the same project builds, and a new project takes every crate.
B=/tmp/hostcache-bench; W=/work/wt/hostcache; M=$W/bench/results/2026-12-02-host-cache/mk.sh
export CARGO_BUILD_JOBS=2 OFFLOAD_PTXAS= CARGO_NET_OFFLINE=true OFFLOAD_CACHE_DIR=$B/int-cache PATH=/tmp/hostcache-bin:$PATH
rm -rf $B/int-cache && mkdir -p $B/int-cache && cp -r $B/cache/sysroot $B/int-cache/
$M ia; $M ib
cd $B/ia
setsid cargo offload build --arch sm_90 > $B/ia.log 2>&1 &
pid=$!
until grep -q "Compiling cudarc v[0-9.]*$" $B/ia.log; do sleep 0.2; done
sleep 3; kill -INT -- -$pid; wait $pid; echo "interrupted: rc $? ($(grep -c . $B/ia.log) lines): $(tail -1 $B/ia.log)"
echo "entries: $(ls $B/int-cache/crates | grep -vc '\.lock$'), without a manifest: $(for e in $B/int-cache/crates/*; do [ -d $e ] && [ ! -f $e/offload-crate.json ] && echo $e; done | wc -l)"
echo "temporary directories (never read): $(ls $B/int-cache/crates | grep -c '\.tmp$')"
cargo offload build --arch sm_90 > $B/ia2.log 2>&1; echo "again: rc $?: $(grep -E '^ *Host ' $B/ia2.log | sed 's/ (.*//')"
OFFLOAD_DEVICE=host ./target/debug/ia | head -1
cd $B/ib && cargo offload build --arch sm_90 > $B/ib.log 2>&1; echo "new project: rc $?: $(grep -E '^ *(Device|Host) ' $B/ib.log | sed 's/ (.*//' | tr '\n' ';')"
OFFLOAD_DEVICE=host ./target/debug/ib | head -1
