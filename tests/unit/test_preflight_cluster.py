# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster contract's preflight rules (plugins/plugin_utils/preflight/cluster.py) on hand-built contexts.

The service table is a part of roles/cluster/vars/main.yml as the demo inventory renders it on dp1
(the head: slurmctld, slurmd, Prometheus) and dp2 (a worker: slurmd); the real table's rendering
through the whole engine is tests/tooling/test_preflight_cases.py's.
"""

from __future__ import annotations

import copy

from ansible_collections.lockstep.gpu.plugins.plugin_utils.preflight import Context
from ansible_collections.lockstep.gpu.plugins.plugin_utils.preflight import cluster
from ansible_collections.lockstep.gpu.plugins.plugin_utils.problems import Problem

NODES = ["dp1", "dp2"]
SERVICES = [
    {"name": "SSH", "variable": "firewall_ssh_port", "port": 22, "proto": "tcp", "enabled": True,
     "nodes": NODES},
    {"name": "slurmctld", "variable": "slurm_slurmctld_port", "port": 6817, "proto": "tcp", "enabled": True,
     "nodes": ["dp1"]},
    {"name": "slurmd", "variable": "slurm_slurmd_port", "port": 6818, "proto": "tcp", "enabled": True,
     "nodes": NODES},
    {"name": "srun (SrunPortRange)", "variable": "slurm_srun_port_range", "port": "60001-63000", "proto": "tcp",
     "enabled": True, "nodes": NODES},
    {"name": "NFS (shared_storage)", "port": 2049, "proto": "tcp", "enabled": True, "nodes": ["dp1"]},
    {"name": "Prometheus", "variable": "monitoring_prometheus_port", "port": 9090, "proto": "tcp",
     "enabled": True, "nodes": ["dp1"]},
    {"name": "GPUStack server", "variable": "gpustack_port", "port": 80, "proto": "tcp", "enabled": False,
     "nodes": ["dp1"]},
    {"name": "torch.distributed ephemeral ports", "variable": "train_check_ephemeral_ports",
     "port": "32768-60999", "proto": "tcp", "enabled": True, "ephemeral": True, "nodes": NODES},
]


def _ctx(**changes) -> Context:
    """Both nodes with the table, one service's port changed per keyword (variable=port)."""
    services = copy.deepcopy(SERVICES)
    for service in services:
        if service.get("variable") in changes:
            service["port"] = changes[service["variable"]]
    return Context(hosts=list(NODES), groups={"all": NODES}, values={h: {"cluster_services": services} for h in NODES})


def _problems(ctx) -> list[Problem]:
    return [problem for rule in cluster.RULES for problem in rule(ctx)]


def test_the_demo_table_has_no_problem():
    assert not _problems(_ctx())


def test_a_port_out_of_range_is_named_on_every_node_even_when_its_service_is_off():
    found = list(cluster._ports(_ctx(gpustack_port=70000)))
    assert [(p.variable, p.value, p.node) for p in found] == [("gpustack_port", 70000, "dp1"),
                                                              ("gpustack_port", 70000, "dp2")]
    assert found[0].allowed == "not a port of GPUStack server: a port is a whole number from 1 to 65535"


def test_a_range_backwards_is_named_with_what_a_range_is():
    found = list(cluster._ports(_ctx(slurm_srun_port_range="7000-6000")))
    assert {p.variable for p in found} == {"slurm_srun_port_range"}
    assert "range first-last with 1 <= first <= last <= 65535" in found[0].allowed


def test_a_fixed_port_without_a_variable_is_not_judged():
    ctx = _ctx()
    for values in ctx.values.values():
        values["cluster_services"][4]["port"] = "nfs"
    assert not list(cluster._ports(ctx))


def test_srun_over_slurmd_is_named_where_both_run_and_over_slurmctld_on_the_head():
    found = list(cluster._port_overlaps(_ctx(slurm_srun_port_range="6000-7000")))
    assert [(p.variable, p.value, p.node, p.allowed.split(" on ")[0]) for p in found] == [
        ("slurm_srun_port_range", "6000-7000", "dp1", "overlaps slurm_slurmctld_port '6817' (tcp)"),
        ("slurm_srun_port_range", "6000-7000", "dp1", "overlaps slurm_slurmd_port '6818' (tcp)"),
        ("slurm_srun_port_range", "6000-7000", "dp2", "overlaps slurm_slurmd_port '6818' (tcp)"),
    ]


def test_a_service_that_is_off_or_ephemeral_conflicts_with_nothing():
    assert not list(cluster._port_overlaps(_ctx(gpustack_port=9090)))
    assert not list(cluster._port_overlaps(_ctx(train_check_ephemeral_ports="6000-7000")))


def test_a_table_that_is_not_a_list_gives_no_problem_and_no_error():
    ctx = Context(hosts=["dp1"], groups={}, values={"dp1": {"cluster_services": "oops"}})
    assert not _problems(ctx)
    assert not _problems(Context(hosts=["dp1"], groups={}, values={}))
