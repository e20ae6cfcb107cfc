#!/usr/bin/env python3
"""List-scheduling model of how the host fallback's workers claim a launch's
blocks (crates/offload/src/runtime/host/claims.rs), for equal blocks: each
worker claims a run of consecutive blocks the moment it is free and runs it
at its speed. `fixed`: runs of blocks/(8 workers) (main before this branch);
`guided`: the unclaimed blocks over 2 workers, at least one (this branch).
Rayon's time is taken as perfectly balanced (total work / total speed; it
splits down to single items and steals). Prints balanced/ours, i.e. the
ratio ours/rayon that imbalance alone leaves. Output: claims-model.txt."""
import heapq
import random


def makespan(blocks, speeds, delays, policy):
    workers = len(speeds)
    free = [(d, k) for k, d in enumerate(delays)]
    heapq.heapify(free)
    nxt, end = 0, 0.0
    while nxt < blocks:
        t, k = heapq.heappop(free)
        rest = blocks - nxt
        n = max(1, blocks // (workers * 8)) if policy == "fixed" else max(1, rest // (workers * 2))
        n = min(n, rest)
        nxt += n
        t += n / speeds[k]
        end = max(end, t)
        heapq.heappush(free, (t, k))
    return end


def ratio(blocks, speeds, delays, policy):
    return (blocks / sum(speeds) + min(delays)) / makespan(blocks, speeds, delays, policy)


W = 16
print("16 workers, equal blocks; balanced time (rayon's, taken as perfect) / ours")
print("claims: fixed = blocks/(8 workers) per run (main), guided = unclaimed/(2 workers) (this branch)")
print(f"{'blocks':>6} {'claims':>7} {'1 core 10% slow':>16} {'1 core 20% slow':>16} {'1 late 0.5 block':>17} {'speeds U(0.9,1.1)':>18}")
for blocks in (64, 256, 4096, 32768):
    for policy in ("fixed", "guided"):
        a = ratio(blocks, [1.0] * (W - 1) + [0.9], [0.0] * W, policy)
        b = ratio(blocks, [1.0] * (W - 1) + [0.8], [0.0] * W, policy)
        c = ratio(blocks, [1.0] * W, [0.0] * (W - 1) + [0.5], policy)
        random.seed(1)
        rs = [ratio(blocks, [random.uniform(0.9, 1.1) for _ in range(W)], [0.0] * W, policy) for _ in range(200)]
        print(f"{blocks:>6} {policy:>7} {a:16.3f} {b:16.3f} {c:17.3f} {sum(rs) / len(rs):18.3f}")
