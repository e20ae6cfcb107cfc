"""Compile time, per-binary test times and counts of one `cargo test` log pair.

Usage: python3 breakdown.py LOG (reads LOG.out, cargo's stdout, and LOG.err,
its stderr, as `cold.sh` writes them)."""
import re
import sys

log = sys.argv[1]
err = open(log + ".err").read().splitlines()
out = open(log + ".out").read().splitlines()
runs = [l for l in err if "Running " in l or "Doc-tests" in l]
res = [l for l in out if l.startswith("test result")]
print(*[l.strip() for l in err if "Finished" in l])
rows = []
for r, t in zip(runs, res):
    m = re.search(r"finished in ([0-9.]+)s", t)
    rows.append((float(m.group(1)), r.strip()[8:75]))
print("tests, summed per binary:", round(sum(x[0] for x in rows), 1), "s")
for t, r in sorted(rows, reverse=True)[:8]:
    print(f"  {t:6.2f} s {r}")
count = lambda what: sum(int(re.search(rf"(\d+) {what}", t).group(1)) for t in res)
print(count("passed"), "passed", count("failed"), "failed", count("ignored"), "ignored")
