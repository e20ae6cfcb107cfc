#!/bin/sh
# Two new projects built at once on an empty crate cache, then a third.
B=/tmp/hostcache-bench; W=/work/wt/hostcache; M=$W/bench/results/2026-12-02-host-cache/mk.sh
export CARGO_BUILD_JOBS=2 OFFLOAD_PTXAS= CARGO_NET_OFFLINE=true OFFLOAD_CACHE_DIR=$B/cc-cache PATH=/tmp/hostcache-bin:$PATH
rm -rf $B/cc-cache && mkdir -p $B/cc-cache && cp -r $B/cache/sysroot $B/cc-cache/
for p in cx cy cz; do $M $p; done
( cd $B/cx && /usr/bin/time -f "cx %e wall %U user %S sys" cargo offload build --arch sm_90 > $B/cx.log 2>&1; echo "cx rc $?" ) &
( cd $B/cy && /usr/bin/time -f "cy %e wall %U user %S sys" cargo offload build --arch sm_90 > $B/cy.log 2>&1; echo "cy rc $?" ) &
wait
for p in cx cy; do tail -1 $B/$p.log; grep -E '^ *(Device|Host) ' $B/$p.log | sed 's/ (.*//'; (cd $B/$p && OFFLOAD_DEVICE=host ./target/debug/$p | head -1); done
cd $B/cz && /usr/bin/time -f "cz %e wall %U user %S sys" cargo offload build --arch sm_90 > $B/cz.log 2>&1; echo "cz rc $?"; tail -1 $B/cz.log
grep -E '^ *(Device|Host) ' $B/cz.log | sed 's/ (.*//'; OFFLOAD_DEVICE=host ./target/debug/cz | head -1
echo "tmp dirs left in the cache: $(ls $B/cc-cache/crates | grep -c '\.tmp$')"
echo "entries without a manifest: $(for e in $B/cc-cache/crates/*; do [ -d $e ] && [ ! -f $e/offload-crate.json ] && echo $e; done | wc -l)"
