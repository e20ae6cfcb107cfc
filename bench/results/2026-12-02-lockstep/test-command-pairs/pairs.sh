#!/bin/bash
# pairs.sh N LOGDIR: N alternating cold `cargo test --workspace` runs of tier-before and tier-main
n=$1; d=$2; mkdir -p $d
for i in $(seq 1 $n); do
  if [ $((i % 2)) = 1 ]; then order="before main"; else order="main before"; fi
  for w in $order; do
    cd /work/wt/tier-$w && r=$(/work/notes/measure.sh /tmp/tgt-m-$w $d/$w-$i 2>&1 | tail -1)
    echo "$i $w $r" | tee -a $d/summary.txt
    grep -c "test result: ok" $d/$w-$i.out > /dev/null
  done
done
