"""Molecule scenarios run side by side (scripts/test, LOCKSTEP_MOLECULE_JOBS).

Podman container and network names are global on the machine: two scenarios
with a platform of the same name destroy each other's nodes when they run
at the same time, and so do two sharing a stand-in build folder (every
build has a new key). Nodes are reached over SSH at fixed addresses, so each
scenario's network (created by molecule/scenario-deps with a fixed subnet)
and every address must be its own too.
"""

from __future__ import annotations

import ipaddress
import re
from collections import Counter
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = {p.parent.name: yaml.safe_load(p.read_text()) for p in sorted(ROOT.glob("molecule/*/molecule.yml"))}


def test_there_are_scenarios():
    assert {"cluster", "nvidia", "nccl", "slurm", "faults"} <= set(SCENARIOS)


def test_platform_names_are_unique_across_scenarios():
    names = Counter(p["name"] for s in SCENARIOS.values() for p in s.get("platforms", []))
    assert [n for n, count in names.items() if count > 1] == []


def _network(platform):
    found = [o.split("=", 1)[1] for o in platform.get("extra_opts", []) if o.startswith("--network=")]
    return found[0] if found else platform.get("network")


def _deps(spec):
    """(network, subnet) the scenario's dependency step makes with molecule/scenario-deps."""
    command = (spec.get("dependency") or {}).get("command", "")
    match = re.search(r"molecule/scenario-deps\s+(\S+)\s+(\S+)", command)
    return (match.group(1), ipaddress.ip_network(match.group(2))) if match else (None, None)


def test_each_scenario_has_its_own_podman_network_and_subnet():
    owners, subnets = {}, {}
    for scenario, spec in SCENARIOS.items():
        network, subnet = _deps(spec)
        assert network is not None, f"{scenario}: dependency step does not run molecule/scenario-deps"
        subnets[scenario] = subnet
        for platform in spec.get("platforms", []):
            assert _network(platform) == network, f"{scenario}/{platform['name']} is not on {network}"
            owners.setdefault(network, set()).add(scenario)
    assert {net: s for net, s in owners.items() if len(s) > 1} == {}
    pairs = [(a, b) for a in subnets for b in subnets if a < b and subnets[a].overlaps(subnets[b])]
    assert pairs == []


def test_every_node_has_its_own_address_in_its_scenario_subnet():
    seen = Counter()
    for scenario, spec in SCENARIOS.items():
        _network_name, subnet = _deps(spec)
        for platform in spec.get("platforms", []):
            address = ipaddress.ip_address(platform["ip"])
            assert address in subnet, f"{scenario}/{platform['name']}: {address} not in {subnet}"
            seen[address] += 1
    assert [a for a, count in seen.items() if count > 1] == []


def test_each_stand_in_build_folder_belongs_to_one_scenario():
    folders = Counter()
    for spec in SCENARIOS.values():
        command = (spec.get("dependency") or {}).get("command", "")
        folders.update(set(re.findall(r"\.cache/(standin-apt[\w-]*)", command)))
    assert [f for f, count in folders.items() if count > 1] == []


def test_no_scenario_subnet_overlaps_the_demo_or_a_benchmark():
    """scripts/demo and the benchmarks that start nodes make podman networks of their own, with fixed subnets."""
    others = {
        "scripts/demo": re.search(r"^subnet=(\S+)$", (ROOT / "scripts/demo").read_text(), re.M),
        **{bench: re.search(r'^SUBNET = "(\S+)"$', (ROOT / bench).read_text(), re.M)
           for bench in ("tests/bench/converge.py", "tests/bench/conda_download.py")},
    }
    assert all(others.values()), others
    overlaps = [(scenario, where) for scenario, spec in SCENARIOS.items() for where, found in others.items()
                if _deps(spec)[1].overlaps(ipaddress.ip_network(found.group(1)))]
    assert overlaps == []
