"""Molecule scenarios run side by side (scripts/test, LOCKSTEP_MOLECULE_JOBS).

Podman container and network names are global on the machine: two scenarios
with a platform of the same name destroy each other's nodes when they run
at the same time, and so do two sharing a stand-in build folder (every
build has a new key).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = {p.parent.name: yaml.safe_load(p.read_text()) for p in sorted(ROOT.glob("molecule/*/molecule.yml"))}


def test_there_are_scenarios():
    assert {"cluster", "docker", "nvidia", "nccl"} <= set(SCENARIOS)


def test_platform_names_are_unique_across_scenarios():
    names = Counter(p["name"] for s in SCENARIOS.values() for p in s.get("platforms", []))
    assert [n for n, count in names.items() if count > 1] == []


def test_each_scenario_has_its_own_podman_network():
    owners = {}
    for scenario, spec in SCENARIOS.items():
        for platform in spec.get("platforms", []):
            owners.setdefault(platform.get("network"), set()).add(scenario)
    assert {net: s for net, s in owners.items() if len(s) > 1} == {}


def test_each_stand_in_build_folder_belongs_to_one_scenario():
    folders = Counter()
    for spec in SCENARIOS.values():
        command = (spec.get("dependency") or {}).get("command", "")
        folders.update(set(re.findall(r"\.cache/(standin-apt[\w-]*)", command)))
    assert [f for f, count in folders.items() if count > 1] == []
