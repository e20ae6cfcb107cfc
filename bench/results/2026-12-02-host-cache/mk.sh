#!/bin/sh
# mk.sh NAME: a new project from tests/fixtures/bin-only in $B/NAME, package
# NAME, offload by path from the worktree $W, the workspace's Cargo.lock.
set -e
W=${W:-/work/wt/hostcache}; B=${B:-/tmp/hostcache-bench}
rm -rf $B/$1 && cp -r $W/tests/fixtures/bin-only $B/$1
sed -i "s|@OFFLOAD@|$W/crates/offload|; s|name = \"fixture_bin_only\"|name = \"$1\"|" $B/$1/Cargo.toml
grep -q '^\[workspace\]' $B/$1/Cargo.toml || printf '\n[workspace]\n' >> $B/$1/Cargo.toml
cp $W/Cargo.lock $B/$1/
