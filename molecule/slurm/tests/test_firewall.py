"""Role firewall in the slurm scenario, applied last by converge.yml: every
node has nftables' default-deny inbound with exactly the ports of what it
runs open (sl1: slurmctld, slurmd, NFS, Prometheus; every node: slurmd, the
srun range, node exporter from the monitoring server only; SSH from the
nodes), and the controller reaches SSH through the rule for its own address
alone (firewall_ssh_sources names the nodes, not the controller).

This file runs before test_shared_storage.py and test_slurm.py (pytest takes
them in order): their NFS listings and Slurm jobs across the nodes run
through the firewall.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import shlex
import socket
import subprocess
import uuid

import pytest
from conftest import SSH_ARGS, _addresses, ansible_playbook, node

NODES = ("sl1", "sl2", "sl3")
HEAD = "sl1"
SRUN_RANGE = "60001-63000"

# A TCP connection from a node: open, refused, or the error's name.
PROBE = """
import socket, sys
try:
    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5).close()
    print("open")
except ConnectionRefusedError:
    print("refused")
except OSError as error:
    print(type(error).__name__)
"""
RULE = re.compile(r"^(?:ip6? saddr (\{[^}]*\}|\S+) )?(tcp|udp) dport (\S+) accept\b")


def ip(name: str) -> str:
    return _addresses()[name]


def probe(source: str, target: str, port: int) -> str:
    """Connect from node source (or "controller", this machine) to target's port."""
    if source == "controller":
        try:
            socket.create_connection((ip(target), port), timeout=5).close()
            return "open"
        except ConnectionRefusedError:
            return "refused"
        except OSError as error:
            return type(error).__name__
    return node(source).check_output(f"python3 -c {shlex.quote(PROBE)} {ip(target)} {port}")


def controller() -> str:
    """The controller's address as the nodes see it (SSH_CLIENT)."""
    return node(HEAD).check_output("echo $SSH_CLIENT").split()[0]


def input_chain(name: str) -> list[str]:
    """The rules of the loaded input chain, its type and policy line first."""
    out = node(name).check_output("nft list chain inet lockstep input")
    return [line.strip() for line in out.splitlines()
            if line.strip() and not line.strip().startswith(("#", "}")) and not line.strip().endswith("{")]


def addresses(text: str) -> frozenset:
    """A rule's source set as single addresses and networks (nft prints
    neighbouring addresses as a range a-b)."""
    found = set()
    for element in text.strip("{} ").split(","):
        first, _, last = element.strip().partition("-")
        if last:
            low, high = ipaddress.ip_address(first), ipaddress.ip_address(last)
            found |= {str(low + i) for i in range(int(high) - int(low) + 1)}
        else:
            found.add(first)
    return frozenset(found)


def accepted(name: str) -> set:
    """{(sources, proto, port)} of the loaded ruleset's accept rules on ports."""
    found = set()
    for line in input_chain(name):
        match = RULE.match(line)
        if match:
            sources = addresses(match.group(1)) if match.group(1) else frozenset({"any"})
            found.add((sources, match.group(2), match.group(3)))
    return found


@pytest.mark.parametrize("name", NODES)
def test_loaded_ruleset_opens_exactly_the_declared_ports(name):
    cluster = frozenset(ip(n) for n in NODES)
    expected = {
        (frozenset({controller()}), "tcp", "22"),
        (cluster, "tcp", "22"),
        (cluster, "tcp", "6818"),
        (cluster, "tcp", SRUN_RANGE),
        (frozenset({ip(HEAD)}), "tcp", "9100"),
        # torch.distributed (playbooks/train_check.yml): rendezvous, gloo/NCCL ephemeral ports.
        (cluster, "tcp", "29500"),
        (cluster, "tcp", "32768-60999"),
    }
    if name == HEAD:
        expected |= {(cluster, "tcp", "6817"), (cluster, "tcp", "2049"), (cluster, "tcp", "9090")}
    assert accepted(name) == expected
    chain = input_chain(name)
    assert chain[0] == "type filter hook input priority filter; policy drop;", chain
    # The controller's SSH rule before any other rule.
    assert RULE.match(chain[1]) and "SSH from the controller" in chain[1], chain
    assert chain[-1].startswith("reject with icmpx admin-prohibited"), chain
    # Slurm listens for srun in exactly the range the firewall opens.
    assert f"SrunPortRange={SRUN_RANGE}" in node(name).file("/etc/slurm/slurm.conf").content_string.splitlines()
    here = node(name)
    assert here.service("nftables").is_enabled
    assert here.check_output("nft -c -f /etc/nftables.conf && echo checked") == "checked"


def test_ssh_from_the_controller_and_the_nodes_after_apply():
    key = os.environ["LOCKSTEP_SSH_KEY"]
    for name in NODES:
        result = subprocess.run(["ssh", "-i", key, *SSH_ARGS.split(), "-o", "ConnectTimeout=10",
                                 f"root@{ip(name)}", "hostname"], capture_output=True, text=True, check=False)
        assert (result.returncode, result.stdout.strip()) == (0, name), result.stderr
    assert probe("sl3", "sl2", 22) == "open"
    # The controller is outside the cluster: slurmd (listening on sl2) refuses it.
    assert probe("sl2", "sl2", 6818) == "open"
    assert probe("controller", "sl2", 6818) == "refused"


def test_declared_ports_connect_within_the_cluster():
    assert probe("sl2", HEAD, 6817) == "open"   # slurmctld
    assert probe("sl3", HEAD, 2049) == "open"   # nfs-ganesha
    assert probe(HEAD, "sl3", 6818) == "open"   # slurmd


def test_undeclared_port_refused_and_exporter_port_only_from_the_monitoring_server():
    # Throwaway listeners on sl2: 8123 (declared nowhere) and 9100 (node
    # exporter's port, open from the monitoring server sl1 only).
    units = {port: f"fwtest-{port}-{uuid.uuid4().hex[:6]}" for port in (8123, 9100)}
    here = node("sl2")
    try:
        for port, unit in units.items():
            here.check_output(f"systemd-run --unit {unit} python3 -m http.server --bind 0.0.0.0 {port}")
        for port in units:
            for _ in range(50):  # the listener starts within a second or so
                if probe("sl2", "sl2", port) == "open":
                    break
            assert probe("sl2", "sl2", port) == "open"
        assert probe("sl3", "sl2", 8123) == "refused"
        assert probe(HEAD, "sl2", 8123) == "refused"
        assert probe(HEAD, "sl2", 9100) == "open"
        assert probe("sl3", "sl2", 9100) == "refused"
    finally:
        here.run("systemctl stop " + " ".join(units.values()))


def state():
    """Every node's loaded ruleset and the checksum of its /etc/nftables.conf."""
    return {name: (node(name).check_output("nft list ruleset"),
                   node(name).check_output("sha256sum /etc/nftables.conf")) for name in NODES}


def changed(result) -> dict:
    """{node: changed} of a run's recap."""
    plain = re.sub(r"\x1b\[[0-9;]*m", "", result.stdout)
    return {h: int(c) for h, c in re.findall(r"\b(sl\d)\s+:\s+ok=\d+\s+changed=(\d+)", plain)}


def test_ruleset_error_fails_before_anything_is_applied():
    before = state()
    result = ansible_playbook("playbooks/firewall.yml", "-e",
                              json.dumps({"firewall_extra_rules": ["tcp dport 8080 acept"]}))
    assert result.returncode != 0
    assert "Write the ruleset, checked by nft -c" in result.output, result.output
    assert "failed to validate" in result.output and "acept" in result.output, result.output
    assert changed(result) == dict.fromkeys(NODES, 0)
    assert state() == before


def test_an_injected_port_range_and_a_world_source_are_refused_with_nothing_changed():
    """Issue 29, findings 1 and 3: train_check_ephemeral_ports carrying a second rule, and 0.0.0.0/0 in
    firewall_allowed_sources, are refused naming both variables (and the ports the world would reach);
    no node's file or loaded ruleset changes, and nothing opens 0-65535 or to every address."""
    before = state()
    result = ansible_playbook("playbooks/firewall.yml", "-e", json.dumps({
        "train_check_ephemeral_ports": "32768-60999 accept; tcp dport 0-65535",
        "firewall_allowed_sources": ["0.0.0.0/0"]}))
    assert result.returncode != 0
    assert "train_check_ephemeral_ports is '32768-60999 accept; tcp dport 0-65535'" in result.output, result.output
    assert "firewall_allowed_sources is '0.0.0.0/0'" in result.output, result.output
    assert "firewall_allow_world" in result.output and "6818" in result.output, result.output
    assert set(changed(result).values()) <= {0}
    assert state() == before
    for name in NODES:
        ruleset = node(name).check_output("nft list ruleset")
        assert "0-65535" not in ruleset and "0.0.0.0/0" not in ruleset


def test_torch_s_ephemeral_range_is_opened_between_the_compute_nodes_only():
    """Issue 29, finding 9: with the controller among firewall_allowed_sources, every port open within the
    cluster takes it too, but not train_check's ephemeral range (32768-60999): only the compute nodes (all three
    here, the head computes), and only on them. Rendered in check mode: nothing is applied."""
    outside = controller()
    result = ansible_playbook("playbooks/firewall.yml", "--check", "--diff",
                              "-e", json.dumps({"firewall_allowed_sources": [outside]}))
    assert result.returncode == 0, result.output
    plain = re.sub(r"\x1b\[[0-9;]*m", "", result.stdout)
    added = [line for line in plain.splitlines() if line.startswith("+") and " dport " in line]
    assert any("tcp dport 6818 " in line and outside in line for line in added), added
    assert not any("32768-60999" in line for line in added), added
    for name in NODES:
        loaded = [rule for rule in accepted(name) if rule[2] == "32768-60999"]
        assert loaded == [(frozenset(ip(n) for n in NODES), "tcp", "32768-60999")]
