"""A node restarted (issue 29, finding 8): podman rewrites the container's
/etc/hosts at every start, as cloud-init's manage_etc_hosts does on cloud
hosts at boot, and the cluster's names went with it: slurm_check.yml failed
with "No answer from sl2" until the next converge. Role base's
lockstep-hosts.service puts the block back before munge and Slurm start,
and Slurm (ReturnToService=2) takes the node back: the check passes without
a converge. Runs after test_slurm.py (file order) and leaves sl2 running.
"""

from __future__ import annotations

import subprocess

from conftest import _addresses, ansible_playbook, node, wait_until

NODES = ("sl1", "sl2", "sl3")
HEAD = "sl1"


def states() -> dict:
    out = node(HEAD).check_output("sinfo --noheader --Node --partition batch --format '%N %T'")
    return dict(line.split() for line in out.splitlines())


def test_a_restarted_node_keeps_the_cluster_names_and_answers_slurm_check_without_a_converge():
    assert ansible_playbook("playbooks/slurm_check.yml").returncode == 0
    subprocess.run(["podman", "restart", "-t", "10", "sl2"], check=True, capture_output=True)
    wait_until("sl2's systemd up", lambda: node("sl2").run("systemctl is-system-running --wait").stdout.strip()
               in ("running", "degraded"))
    hosts = node("sl2").file("/etc/hosts").content_string.splitlines()
    for name in NODES:
        assert f"{_addresses()[name]} {name}" in hosts, hosts
    assert node("sl2").service("lockstep-hosts").is_enabled
    assert node("sl2").service("slurmd").is_running and node("sl2").service("munge").is_running
    wait_until("every node idle again", lambda: states() == dict.fromkeys(NODES, "idle"))
    result = ansible_playbook("playbooks/slurm_check.yml")
    assert result.returncode == 0, result.output[-3000:]
