"""The whole stack site.yml leaves on every node, and verify.yml's view of it.

The role scenarios (molecule/nvidia, nccl, conda) and tests/test_docker.py test each role's
behaviours; here the roles run together, in site.yml's order, on one cluster.
"""

from __future__ import annotations

import json

import pytest
from conftest import ansible_playbook, node

NODES = ("dp1", "dp2", "dp3")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("reports")
    result = ansible_playbook("playbooks/verify.yml", "-e", f"verify_reports_dir={out}")
    assert result.returncode == 0, result.stdout[-3000:]
    return json.loads((out / "drift.json").read_text())


def test_verify_reports_one_docker_stack_on_every_node(report, host):
    by_component = report["by_component"]
    version = json.loads(host.check_output("docker version --format '{{json .Server}}'"))["Version"]
    assert by_component["docker.server_version"]["expected"] == version
    assert by_component["docker.default_runtime"]["expected"] == "nvidia"
    for component in ("docker.server_version", "docker.default_runtime", "docker.nvidia_container_toolkit"):
        assert by_component[component]["deviating_hosts"] == [], component
        values = by_component[component]["values"]
        assert len(values) == 1 and sorted(values[0]["hosts"]) == list(NODES), (component, values)


def test_verify_reports_the_declared_gpu_stack_on_every_node(report, hostvars):
    """Driver, CUDA and NCCL as the inventory declares them, read from NVIDIA's own files."""
    by_component = report["by_component"]
    expected = {
        "driver.version": hostvars["nvidia_driver_version"],
        "cuda.default": hostvars["cuda_default_version"],
        "cuda.ptxas": "12.1.105",
        "nccl.package": f"{hostvars['nccl_version']}+cuda{hostvars['nccl_cuda_version']}",
        "nccl.header": "2.18.3",
    }
    for component, value in expected.items():
        assert by_component[component]["expected"] == value, component
        assert by_component[component]["source"] == "declared", component
        assert by_component[component]["deviating_hosts"] == [], component


def test_slurm_has_every_node_idle_in_the_default_partition():
    """site.yml ends with Slurm: slurmctld on dp1 (the head), slurmd on all three (the head computes),
    every node idle in the demo inventory's default partition batch, as sinfo on the controller reads it."""
    head = node("dp1")
    assert head.service("slurmctld").is_running
    states = dict(line.split() for line in
                  head.check_output("sinfo --noheader --Node --partition batch --format '%N %T'").splitlines())
    assert states == dict.fromkeys(NODES, "idle"), states
    assert "Default=YES" in head.check_output("scontrol show partition batch")
    for name in NODES:
        assert node(name).service("slurmd").is_running, name
    assert not node("dp2").service("slurmctld").is_running


def test_verify_reports_one_slurm_configuration_and_munge_key(report):
    """slurm.conf and the munge key are one file on every node (their digests, never the key)."""
    by_component = report["by_component"]
    conf = node("dp1").check_output("sha256sum /etc/slurm/slurm.conf").split()[0]
    assert by_component["slurm.conf_sha256"]["expected"] == conf
    for component in ("slurm.conf_sha256", "slurm.munge_key_sha256"):
        values = by_component[component]["values"]
        assert len(values) == 1 and sorted(values[0]["hosts"]) == list(NODES), (component, values)
