"""lockstep.gpu.port_conflicts: two services of one node on one port, read
from the cluster contract's real service table (roles/cluster) as Ansible
templates it for a demo-like cluster (dp1 head and compute, dp2 and dp3
workers), with the inventory's values on top. Issue 29, finding 6:
slurm_srun_port_range 6000-7000 over slurmd's 6818; train_check_port 9090
over Prometheus' on the head.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar
from ansible_collections.lockstep.gpu.plugins.filter.ports import port_conflicts

ROOT = Path(__file__).resolve().parents[2]
NODES = ("dp1", "dp2", "dp3")
GROUPS = {"all": list(NODES), "cluster": list(NODES), "head": ["dp1"], "workers": ["dp2", "dp3"],
          "gpu": list(NODES), "ungrouped": []}
ON = {"slurm_enabled": True, "shared_storage_enabled": True, "monitoring_enabled": True, "gpustack_enabled": True,
      "firewall_enabled": True}


def services(**inventory) -> list[dict]:
    loader = DataLoader()
    values = dict(loader.load_from_file(str(ROOT / "roles/cluster/defaults/main.yml"), trusted_as_template=True))
    values.update(loader.load_from_file(str(ROOT / "roles/cluster/vars/main.yml"), trusted_as_template=True))
    values.update(groups=GROUPS, cluster_node_addresses={n: f"10.231.0.1{i}" for i, n in enumerate(NODES, 1)})
    values.update(ON, **inventory)
    return Templar(loader=loader, variables=values).template(values["cluster_services"])


@pytest.mark.parametrize("host", NODES)
def test_the_contracts_defaults_conflict_nowhere(host):
    assert port_conflicts(services(), host) == []


def test_an_srun_range_over_slurmd_is_named_on_every_node_with_both_and_slurmctld_on_the_controller():
    table = services(slurm_srun_port_range="6000-7000")
    tail = "each service of a node needs ports of its own"
    assert port_conflicts(table, "dp1") == [
        f"slurm_slurmctld_port is '6817' and slurm_srun_port_range is '6000-7000': both tcp on dp1; {tail}",
        f"slurm_slurmd_port is '6818' and slurm_srun_port_range is '6000-7000': both tcp on dp1; {tail}"]
    for host in ("dp2", "dp3"):
        assert port_conflicts(table, host) == [
            f"slurm_slurmd_port is '6818' and slurm_srun_port_range is '6000-7000': both tcp on {host}; {tail}"]


def test_a_rendezvous_on_prometheus_port_is_named_on_the_head_only():
    table = services(train_check_port=9090)
    assert port_conflicts(table, "dp1") == [
        "monitoring_prometheus_port is '9090' and train_check_port is '9090': both tcp on dp1; "
        "each service of a node needs ports of its own"]
    assert port_conflicts(table, "dp2") == []


def test_a_service_that_is_off_or_elsewhere_conflicts_with_nothing():
    assert port_conflicts(services(train_check_port=9090, monitoring_enabled=False), "dp1") == []
    # GPUStack's worker port on the server only (dp1 is no GPUStack worker here): nothing there to collide.
    assert port_conflicts(services(gpustack_port=10150), "dp1") == []


def test_the_ephemeral_range_and_bad_values_are_left_to_the_other_checks():
    table = [
        {"variable": "a_port", "port": 40000, "proto": "tcp", "enabled": True, "nodes": ["dp1"]},
        {"variable": "b_ports", "port": "32768-60999", "proto": "tcp", "enabled": True, "nodes": ["dp1"],
         "ephemeral": True},
        {"variable": "c_port", "port": "40000 accept", "proto": "tcp", "enabled": True, "nodes": ["dp1"]},
        {"variable": "d_port", "port": 40000, "proto": "udp", "enabled": True, "nodes": ["dp1"]},
    ]
    assert port_conflicts(table, "dp1") == []
