#!/usr/bin/env python3
"""Benchmark: verify.yml over 1,000 and 5,000 hosts read from saved bundles.

    tests/bench/verify_scale.py [--sizes 1000 5000]

Each host of a generated inventory sets gpu_facts_from_dir to one of the real
support bundles in tests/fixtures/bundles (copied once into a scratch
directory, one directory per host, as collect_bundles.yml would leave them),
so verify.yml reads them on the controller (lookup
lockstep.gpu.bundle_components) and contacts no node. It prints the time per
host at each size and their ratio: the controller-side cost per host must
stay flat (5x the hosts within 6x the time). Also shows that the terminal
output stays readable (its widest table line, within verify_table_width),
that the HTML folds identical hosts, and, where Debian's Chromium is
installed, how long the report takes to open in it (headless: in the page,
and Chromium's whole run). A benchmark: it asserts no time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "tooling"))
import lockstep_browser as browser  # noqa: E402
import lockstep_terminal as terminal  # noqa: E402

BUNDLES = ROOT / "tests" / "fixtures" / "bundles"
# Real bundles that analyse cleanly; one host in every 500 gets the one with
# another ptxas, so the report has drifts to show.
BASE, ODD = "a100-mig", "a100-mig-ptxas-12.6"


def make_inventory(tmp: Path, count: int) -> Path:
    bundles = tmp / f"bundles-{count}"
    for index in range(count):
        source = BUNDLES / (ODD if index % 500 == 7 else BASE)
        shutil.copytree(source, bundles / f"gpu{index:05d}")
    hosts = {f"gpu{i:05d}": {"gpu_facts_from_dir": str(bundles / f"gpu{i:05d}")} for i in range(count)}
    inventory = tmp / f"hosts-{count}.json"
    inventory.write_text(json.dumps({
        "all": {"vars": {"ansible_connection": "local", "verify_reports_dir": str(tmp / f"reports-{count}"),
                         "verify_fail_on_drift": False}},
        "cluster": {"hosts": hosts},
        # No task runs per host of this group: verify.yml reads their bundles in one pass.
        "bundled": {"hosts": {name: {} for name in hosts}},
    }))
    return inventory


def run(inventory: Path) -> tuple[float, str]:
    env = dict(os.environ, ANSIBLE_CACHE_PLUGIN="memory", ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0",
               ANSIBLE_FORKS="20", ANSIBLE_STDOUT_CALLBACK="default", ANSIBLE_CALLBACK_RESULT_FORMAT="yaml")
    start = time.monotonic()
    result = subprocess.run(["ansible-playbook", "-i", str(inventory), "playbooks/verify.yml"], cwd=ROOT, env=env,
                            capture_output=True, text=True, check=False)
    seconds = time.monotonic() - start
    if result.returncode != 0:
        raise SystemExit(f"verify.yml failed on {inventory}:\n{result.stdout[-3000:]}{result.stderr[-2000:]}")
    return seconds, result.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs=2, default=[1000, 5000], metavar=("SMALL", "LARGE"))
    args = parser.parse_args()
    small, large = args.sizes
    tmp = Path(tempfile.mkdtemp(prefix="lockstep-verify-scale-"))
    try:
        results = {}
        for count in (small, large):
            seconds, output = run(make_inventory(tmp, count))
            report = json.loads((tmp / f"reports-{count}" / "drift.json").read_text())
            page = tmp / f"reports-{count}" / "drift.html"
            columns = page.read_text().count('<th scope="col" class="host')
            widest = max((len(line) for printed, _rows in terminal.tables(output, "yaml") for line in printed),
                         default=0)
            opened = browser.probe(page) if browser.chromium() else None
            results[count] = (seconds, len(report["drifts"]), widest, columns, opened)
            shutil.rmtree(tmp / f"bundles-{count}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\nverify.yml over saved bundles ({os.cpu_count()} CPU(s), forks 20)")
    for count, (seconds, drifts, widest, columns, opened) in results.items():
        print(f"  {count:6d} hosts: {seconds:7.1f} s, {1000 * seconds / count:6.1f} ms/host, {drifts} drift(s), "
              f"widest table line {widest} chars, HTML host columns {columns}")
        if opened:
            print(f"  {count:6d} hosts: the HTML report opens in headless Chromium in {opened['loaded_ms']:.0f} ms "
                  f"(goal < 2000 ms; parsed, styled, laid out; Chromium's whole run {opened['wall_s']:.1f} s)")
    ratio = results[large][0] / results[small][0]
    per_host = (results[large][0] / large) / (results[small][0] / small)
    print(f"  {large} / {small} hosts: {ratio:.2f}x the time (goal <= 6x for {large // small}x the hosts), "
          f"per-host cost {per_host:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
