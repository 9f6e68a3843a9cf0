#!/usr/bin/env python3
# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark the drift analysis (filter lockstep.gpu.drift) on synthetic clusters.

Generates facts for N hosts x C components (a per-host unique component that
is ignored, a few drifted components on random hosts, a few unreadable and
missing cells; seeded), times ``drift`` (best of R runs) and prints
N -> seconds -> microseconds per host.

Exits 1 when 10,000 hosts take >= 1 s, or when the time per host at the
largest N is more than 2x that at the smallest (growth is not linear).

    python tests/bench/bench_drift.py
    python tests/bench/bench_drift.py --hosts 1000 10000 50000 --components 40 --repeat 3
"""

from __future__ import annotations

import argparse
import random
import sys
import time

from ansible_collections.lockstep.gpu.plugins.plugin_utils.drift import drift

LIMIT_10K_S = 1.0
MAX_PER_HOST_GROWTH = 2.0


def synthetic_facts(n_hosts, n_components=40, drift_rate=0.01, seed=1234):
    """Facts for ``n_hosts`` hosts; about ``drift_rate`` of hosts drift somewhere."""
    rng = random.Random(seed)
    base = {}
    for c in range(1, n_components):
        base[f"pkg_{c:02d}"] = f"{c}.{(c * 7) % 31}.{(c * 13) % 97}-1+cuda12.2"
    base["pkg_01"] = "535.261.03"
    base["pkg_02"] = True
    base["pkg_03"] = 8
    facts = {}
    for i in range(n_hosts):
        row = dict(base)
        row["serial"] = f"SN{rng.getrandbits(48):012x}"
        facts[f"gpu-node-{i:05d}"] = row
    names = sorted(facts)
    for _ in range(max(1, int(n_hosts * drift_rate))):
        host = names[rng.randrange(n_hosts)]
        comp = f"pkg_{rng.randrange(4, n_components):02d}"
        kind = rng.random()
        if kind < 0.8:
            facts[host][comp] = "0.0.1-drift"
        elif kind < 0.9:
            facts[host][comp] = {"error": "dpkg-query: status database locked"}
        else:
            facts[host].pop(comp, None)
    return facts


def best_of(fn, repeat):
    best = float("inf")
    result = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, nargs="+", default=[1000, 2000, 5000, 10000])
    parser.add_argument("--components", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

    sizes = sorted(set(args.hosts))
    rows = []
    print(f"lockstep.gpu.drift: {args.components} components/host, best of {args.repeat}")
    print(f"{'hosts':>8}  {'seconds':>9}  {'us/host':>9}  {'drifts':>7}")
    for n in sizes:
        facts = synthetic_facts(n, args.components)
        seconds, report = best_of(lambda: drift(facts, ignore=["serial"]), args.repeat)
        per_host = seconds / n
        rows.append((n, seconds, per_host))
        print(f"{n:>8}  {seconds:>9.4f}  {per_host * 1e6:>9.2f}  {len(report['drifts']):>7}")

    failures = []
    by_n = {n: (s, p) for n, s, p in rows}
    if 10000 in by_n and by_n[10000][0] >= LIMIT_10K_S:
        failures.append(f"10,000 hosts took {by_n[10000][0]:.3f} s (limit {LIMIT_10K_S} s)")
    if len(rows) > 1:
        small_n, _s, small_p = rows[0]
        large_n, _l, large_p = rows[-1]
        growth = large_p / small_p
        print(
            f"time per host at {large_n} / at {small_n}: {growth:.2f}x (limit {MAX_PER_HOST_GROWTH}x)"
        )
        if growth > MAX_PER_HOST_GROWTH:
            failures.append(
                f"time per host grew {growth:.2f}x from {small_n} to {large_n} hosts (not linear)"
            )
    for failure in failures:
        print(f"FAIL: {failure}", file=sys.stderr)
    if not failures:
        print("OK")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
