"""The preflight engine run as the action runs it, without nodes: for the tests of bad input.

Run as a script (tests/tooling/test_preflight_cases.py starts it once): Ansible's collection
loader, which the roles' templates need for lockstep.gpu filters, must not be installed in the
pytest process the other tests share.

The cluster is the molecule ``cluster`` scenario's (dp1 head, dp2 and dp3
workers, all in gpu; the demo inventory's group_vars, which the scenario
links), each node's facts and probe answer the ones a real node of the
scenario's image gave (tests/fixtures/preflight/, SOURCES.md), and the
values are rendered by Ansible's own templar from the roles' real defaults
and vars (plugins/plugin_utils/preflight/render.py), with the case's extra
vars on top as ``-e @case.yml`` puts them.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections import ChainMap
from dataclasses import asdict
from pathlib import Path

from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import init_plugin_loader
from ansible.template import Templar

# Lockstep's filters (lockstep.gpu.*) in the roles' templates: the collection loader, before the imports below.
init_plugin_loader([str(Path(__file__).resolve().parents[2] / "collections")])

from ansible_collections.lockstep.gpu.plugins.plugin_utils.preflight import engine  # noqa: E402
from ansible_collections.lockstep.gpu.plugins.plugin_utils.preflight.render import layers, node_step  # noqa: E402
from ansible_collections.lockstep.gpu.plugins.plugin_utils.problems import Problem, report  # noqa: E402

PROJECT = Path(__file__).resolve().parents[2]
FIXTURES = PROJECT / "tests" / "fixtures" / "preflight"
HOSTS = ("dp1", "dp2", "dp3")
GROUPS = {"all": list(HOSTS), "ungrouped": [], "cluster": list(HOSTS), "head": ["dp1"],
          "workers": ["dp2", "dp3"], "gpu": list(HOSTS)}
# The addresses no node can reach (cases of a server that is not there).
UNREACHABLE = "192.0.2."
ALL_ROLES = ("base", "network", "nvidia_driver", "cuda", "nccl", "docker", "shared_storage", "conda", "slurm",
             "monitoring", "gpustack", "firewall", "train_check")


def _load(loader, text: str) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".yml") as handle:
        handle.write(text)
        handle.flush()
        return loader.load_from_file(handle.name, trusted_as_template=True) or {}


def _inventory(loader) -> dict:
    merged = {}
    for path in sorted((PROJECT / "inventories" / "demo" / "group_vars" / "all").glob("*.yml")):
        merged.update(loader.load_from_file(str(path), trusted_as_template=True) or {})
    return merged


def fake_probe(request: dict) -> dict:
    """The real node's answer, with what it was not asked answered as absent."""
    base = json.loads((FIXTURES / "probe-debian12-container.json").read_text())
    answer = {k: base[k] for k in ("interfaces", "hcas", "listening", "memory_mb", "virtualization", "markers")}
    answer["hcas_at"] = {root: {} for root in request.get("hca_roots", [])}
    answer["paths"] = {p: base["paths"].get(p, False) for p in request.get("paths", [])}
    answer["read"] = {p: base["read"].get(p) for p in request.get("read", [])}
    answer["resolved"] = {n: base["resolved"].get(n, []) for n in request.get("resolve", [])}
    answer["packages"] = {n: base["packages"].get(n, "") for n in request.get("packages", [])}
    answer["users"] = {n: base["users"].get(n, False) for n in request.get("users", [])}
    # TEST-NET-1 (RFC 5737, documentation only) answers nothing, as a server that is not there.
    answer["connect"] = {t: "timed out" if t.startswith(UNREACHABLE) else "" for t in request.get("connect", [])}
    return answer


def run(extra_yaml: str = "{}", roles=ALL_ROLES, gpu_group: str = "gpu") -> tuple[list[Problem], str]:
    """Every problem the preflight finds with these extra vars, and its one report."""
    loader = DataLoader()
    facts = json.loads((FIXTURES / "facts-debian12-container.json").read_text())
    extra, inventory = _load(loader, extra_yaml), _inventory(loader)
    contract_defaults, contract_vars = layers(loader, ["cluster"])
    task_vars = {}
    for host in HOSTS:
        task_vars[host] = ChainMap(extra, contract_vars, inventory, contract_defaults, {
            "inventory_hostname": host, "inventory_hostname_short": host,
            # An inventory folder without conda-lock.yml (the demo's is made by scripts/demo).
            "inventory_dir": str(FIXTURES), "groups": GROUPS,
            "group_names": [g for g, members in GROUPS.items() if host in members and g != "all"],
            # SSH_CLIENT: the demo's controller, as the preflight's setup (env, without become) reads it.
            "ansible_facts": dict(facts, hostname=host,
                                  env=dict(facts.get("env") or {}, SSH_CLIENT="10.231.0.1 50022 22")),
            "preflight_roles": list(roles)})
    for host in HOSTS:
        task_vars[host].maps[-1]["hostvars"] = task_vars
    nodes = {}
    for host in HOSTS:
        values, raw, found, request = node_step(Templar(loader=loader), loader, task_vars[host], roles, gpu_group)
        nodes[host] = {"values": values, "raw": raw, "probe": fake_probe(request),
                       "problems": [asdict(p) for p in found]}
    problems = engine.check_play(HOSTS, GROUPS, nodes, {h: task_vars[h]["ansible_facts"] for h in HOSTS},
                                 roles, gpu_group)
    return problems, report(problems)


def main() -> None:
    """{case id: extra vars} on stdin; {case id: {"problems": [[variable, node]], "report": str}} on stdout."""
    cases = json.load(sys.stdin)
    results = {}
    for case_id, extra in cases.items():
        problems, message = run(extra)
        results[case_id] = {"problems": [[p.variable, p.node] for p in problems], "report": message}
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
