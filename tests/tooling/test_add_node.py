"""playbooks/add_node.yml refuses nodes it cannot add before any play touches a node.

Its first play runs on the controller only (no facts, no connection): the
nodes named in add_node_hosts must all be in the inventory's cluster group.
A wrong name fails there, naming the variable, the value and the nodes the
inventory has; the preflight and every later play never start. The hosts
here are unreachable on purpose (a connection would fail differently).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import limits
import pytest

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOK = ROOT / ".venv" / "bin" / "ansible-playbook"


def add_node(tmp_path: Path, *args: str) -> str:
    if not PLAYBOOK.exists():
        pytest.skip("no .venv/bin/ansible-playbook (scripts/bootstrap makes it)")
    inventory = tmp_path / "hosts.json"
    unreachable = {"ansible_host": "192.0.2.1", "ansible_connection": "ssh"}  # TEST-NET-1: never answers
    inventory.write_text(json.dumps({"all": {"children": {"cluster": {"children": {
        "head": {"hosts": {"dp1": unreachable}},
        "workers": {"hosts": {"dp2": unreachable, "dp3": unreachable}},
    }}}}}))
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0", ANSIBLE_STDOUT_CALLBACK="default")
    proc = limits.run([str(PLAYBOOK), "-i", str(inventory), "playbooks/add_node.yml", *args], cwd=ROOT, env=env,
                      capture_output=True, text=True, cpu_s=300, check=False)
    assert proc.returncode == 2, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "UNREACHABLE" not in proc.stdout and "Check every node before any node changes" not in proc.stdout
    return " ".join(proc.stdout.split())


def test_a_node_not_in_the_inventory_is_named_with_the_nodes_it_has(tmp_path):
    out = add_node(tmp_path, "-e", "add_node_hosts=dp3,dp9")
    assert ("add_node_hosts is 'dp3,dp9': not in the inventory group cluster: dp9. Allowed: the names of the nodes"
            " added, each already in group cluster (dp1, dp2, dp3)") in out, out


def test_no_node_named(tmp_path):
    out = add_node(tmp_path)
    assert "add_node_hosts is '': no node named." in out, out
