#!/bin/bash
# usage: measure.sh <mode: on|off>
export PATH=/work/wt/devcache/target/debug:$PATH CARGO_NET_OFFLINE=true OFFLOAD_CACHE_DIR=/tmp/dc/cache OFFLOAD_PTXAS= CARGO_BUILD_JOBS=2
[ "$1" = off ] && export OFFLOAD_CRATE_CACHE=0
cd /tmp/dc && rm -rf cache a/target b/target b-host/target
for p in a b; do
  cd /tmp/dc/$p
  l0=$(cut -d' ' -f1 /proc/loadavg)
  /usr/bin/time -f "%e %U %S" -o /tmp/dc/t.txt cargo offload build --arch sm_90 > /tmp/dc/$p-$1.log 2>&1
  l1=$(cut -d' ' -f1 /proc/loadavg)
  dev=$(grep -o "in [0-9.ms ]*s (device sm_90)" /tmp/dc/$p-$1.log)
  echo "$1 $p offload-build wall/user/sys: $(cat /tmp/dc/t.txt) | load $l0->$l1 | $dev | $(grep -o 'Device .*image' /tmp/dc/$p-$1.log)"
done
cd /tmp/dc/b-host
l0=$(cut -d' ' -f1 /proc/loadavg)
/usr/bin/time -f "%e %U %S" -o /tmp/dc/t.txt cargo build > /dev/null 2>&1
l1=$(cut -d' ' -f1 /proc/loadavg)
echo "$1 b plain-cargo-build wall/user/sys: $(cat /tmp/dc/t.txt) | load $l0->$l1"
