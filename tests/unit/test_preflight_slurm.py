"""The slurm role's preflight rules (plugins/plugin_utils/preflight/slurm.py) on hand-built contexts.

GOOD is what the demo inventory's nodes see (dp1 head, dp2 and dp3 workers, all in gpu):
roles/slurm/defaults/main.yml under inventories/demo/group_vars/all/slurm.yml (its partition of the head
and the workers rendered), the cluster contract's groups, switches and ports, and its derived
slurm_controller and slurm_compute_nodes. Facts and probe answers are those of the scenarios' Debian 12
container (24105 MiB, 2 vCPUs, slurm-client not installed). The e2e cases of molecule/slurm/tests/test_slurm.py
are here with the demo's node names; srun's range over slurmd's port is the cluster contract's rule.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from ansible_collections.lockstep.gpu.plugins.plugin_utils.preflight import Context
from ansible_collections.lockstep.gpu.plugins.plugin_utils.preflight import slurm
from ansible_collections.lockstep.gpu.plugins.plugin_utils.problems import Problem, report

ROLES = Path(__file__).resolve().parents[2] / "roles"
NODES = ["dp1", "dp2", "dp3"]
GROUPS = {"all": NODES, "ungrouped": [], "cluster": NODES, "head": ["dp1"], "workers": ["dp2", "dp3"], "gpu": NODES}
REASONS = ["Not responding", "Node unexpectedly rebooted", r"Low (RealMemory|CPUs|TmpDisk|socket\*core\*thread count)",
           r"gres/\S+ count reported lower than configured", "NO NETWORK ADDRESS FOUND"]
GOOD = {
    "slurm_cluster_name": "lockstep",
    "slurm_partitions": [{"name": "batch", "nodes": ["dp1", "dp2", "dp3"], "default": True, "max_time": "UNLIMITED"}],
    "slurm_memory_reserve_mb": 1024,
    "slurm_gpu_group": "gpu",
    "slurm_proctrack_type": "",
    "slurm_task_plugin": "",
    "slurm_cgroup_constrain_cores": True,
    "slurm_cgroup_constrain_ram_space": True,
    "slurm_cgroup_constrain_devices": True,
    "slurm_packages": ["munge", "slurm-client"],
    "slurm_wait_retries": 30,
    "slurm_wait_delay": 5,
    "slurm_slurmd_timeout": 300,
    "slurm_resume_reasons": REASONS,
    "slurm_drain_nodes": [],
    "slurm_drain_reason": "lockstep rolling upgrade",
    "slurm_drain_job_wait": 3600,
    # The cluster contract's options (roles/cluster/defaults/main.yml, the demo's groups).
    "slurm_enabled": True,
    "slurm_head_group": "head",
    "slurm_compute_group": "workers",
    "slurm_head_computes": True,
    "slurm_slurmctld_port": 6817,
    "slurm_slurmd_port": 6818,
    "slurm_srun_port_range": "60001-63000",
    "base_manage_etc_hosts": True,
    "base_etc_hosts_group": "cluster",
    # VARIABLES: roles/cluster/vars/main.yml as it renders on the demo.
    "slurm_controller": "dp1",
    "slurm_compute_nodes": ["dp1", "dp2", "dp3"],
}
FACTS = {"memtotal_mb": 24105, "processor_vcpus": 2, "distribution": "Debian", "distribution_major_version": "12"}
# What the probe answers to slurm.probe's request on a fresh node of the scenarios (names not asked: base writes them).
ANSWER = {"memory_mb": 24105, "virtualization": "container", "packages": {"slurm-client": ""}}

COMPUTE = "the compute nodes are dp1, dp2, dp3 (slurm_compute_group 'workers', and the head)"


def context(hosts=None, groups=None, facts=None, probes=None, roles=("base", "slurm"), **values) -> Context:
    """The demo with these extra vars on every node (as -e sets them; None: refused by the spec)."""
    hosts = list(hosts or NODES)
    per_host = {}
    for host in hosts:
        per_host[host] = copy.deepcopy(GOOD)
        for name, value in values.items():
            if value is None:
                per_host[host].pop(name, None)
            else:
                per_host[host][name] = copy.deepcopy(value)
    return Context(hosts=hosts, groups=groups or GROUPS, values=per_host,
                   raw=copy.deepcopy(per_host), facts={host: dict(FACTS) for host in hosts} | (facts or {}),
                   probes={host: copy.deepcopy(ANSWER) for host in hosts} | (probes or {}), roles=roles)


def problems(ctx) -> list[Problem]:
    return [problem for rule in slurm.RULES for problem in rule(ctx)]


def only(ctx) -> Problem:
    found = problems(ctx)
    assert len(found) == 1, [problem.line() for problem in found]
    return found[0]


def lines(ctx) -> list[str]:
    """The report's lines of the problems (the same problem on many nodes folded into one line)."""
    return report(problems(ctx)).splitlines()[1:]


def test_the_demo_passes():
    assert problems(context()) == []


def test_the_slurm_scenario_passes():
    # molecule/slurm/inventory.yml: its own cluster name and a 30 s SlurmdTimeout; slurm checked alone.
    assert problems(context(roles=("slurm",), slurm_cluster_name="lockstep-test", slurm_slurmd_timeout=30,
                            probes={h: ANSWER | {"resolved": {n: ["10.231.9.1"] for n in NODES}} for h in NODES})) == []


def test_good_is_the_roles_defaults_under_the_demo():
    defaults = yaml.safe_load((ROLES / "slurm" / "defaults" / "main.yml").read_text(encoding="utf-8"))
    demo_set = {"slurm_partitions", "slurm_head_group", "slurm_compute_group", "slurm_head_computes"}
    assert {k: v for k, v in defaults.items() if k not in demo_set} == {
        k: v for k, v in GOOD.items() if k in defaults and k not in demo_set}
    contract = yaml.safe_load((ROLES / "cluster" / "vars" / "main.yml").read_text(encoding="utf-8"))
    assert set(slurm.VARIABLES) <= set(contract)


def test_rules_are_named_after_their_checks():
    assert [rule.__name__ for rule in slurm.RULES] == [
        "_controller_exists", "_cluster_name", "_real_memory", "_real_memory_fits", "_memory_reserve",
        "_slurmd_timeout", "_partitions", "_resume_reasons", "_ports", "_one_default", "_facts_gathered",
        "_resolvable", "_one_version"]


# --- the controller -----------------------------------------------------------------------------


def test_a_head_group_without_nodes_is_refused_on_every_node():
    found = problems(context(slurm_head_group="nosuchgroup", slurm_controller="", slurm_compute_nodes=["dp2", "dp3"],
                             slurm_partitions=[{"name": "batch", "nodes": ["dp2", "dp3"], "default": True}]))
    assert found == [Problem("slurm_head_group", "nosuchgroup",
                             "has no node in the inventory: its first node runs slurmctld", host) for host in NODES]


def test_a_head_group_of_other_nodes_passes():
    groups = GROUPS | {"login": ["dp2"]}
    assert problems(context(groups=groups, slurm_head_group="login", slurm_controller="dp2")) == []


# --- slurm_cluster_name -------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["Lockstep", "1cluster", "lock stack", "a" * 41, "", "lockstep\n"])
def test_a_cluster_name_slurm_cannot_take_is_refused(name):
    found = problems(context(slurm_cluster_name=name))
    assert found == [Problem("slurm_cluster_name", name, slurm.CLUSTER_NAME, host) for host in NODES]
    assert found[0].line().startswith(f"dp1: slurm_cluster_name is '{name}'".replace("\n", "\\n"))


@pytest.mark.parametrize("name", ["lockstep-test", "a", "gpu_cluster-2", "a" * 40])
def test_cluster_names_slurm_takes_pass(name):
    assert problems(context(slurm_cluster_name=name)) == []


# --- slurm_real_memory --------------------------------------------------------------------------


def test_a_negative_real_memory_is_refused():
    # molecule/slurm: slurm_real_memory -512.
    found = problems(context(slurm_real_memory=-512))
    assert [problem.line() for problem in found] == [
        f"{host}: slurm_real_memory is '-512': it must be a whole number of MiB, 1 or more (RealMemory in slurm.conf), "
        "or unset to use the node's memory less slurm_memory_reserve_mb" for host in NODES]


def test_a_real_memory_of_0_is_refused_and_one_within_the_node_passes():
    assert {p.node for p in problems(context(slurm_real_memory=0))} == set(NODES)
    assert problems(context(slurm_real_memory=20000)) == []
    assert problems(context(slurm_real_memory=24105)) == []


def test_a_real_memory_above_the_node_s_is_refused():
    # molecule/slurm: slurm_real_memory 99999999 ("MiB and the node has").
    found = problems(context(slurm_real_memory=99999999))
    assert len(found) == 3
    assert found[0].line() == (
        "dp1: slurm_real_memory is '99999999': 99999999 MiB and the node has 24105 MiB: Slurm would set it INVAL "
        "(Low RealMemory) and run nothing there; give at most the node's memory, or unset it to use the node's "
        "memory less slurm_memory_reserve_mb")


def test_the_real_memory_of_a_node_that_runs_no_slurmd_or_without_facts_is_not_compared():
    # The head does not compute: its RealMemory is in no NodeName line.
    ctx = context(slurm_head_computes=False, slurm_compute_nodes=["dp2", "dp3"],
                  slurm_partitions=[{"name": "batch", "nodes": ["dp2", "dp3"], "default": True}])
    ctx.values["dp1"]["slurm_real_memory"] = 99999999
    assert problems(ctx) == []
    no_memory = {host: {"processor_vcpus": 2} for host in NODES}
    assert problems(context(facts=no_memory, slurm_real_memory=99999999)) == []


# --- slurm_memory_reserve_mb --------------------------------------------------------------------


@pytest.mark.parametrize("reserve", [24105, 30000])
def test_a_reserve_that_leaves_the_node_nothing_is_refused(reserve):
    found = problems(context(slurm_memory_reserve_mb=reserve))
    assert found == [Problem("slurm_memory_reserve_mb", reserve, "the node has 24105 MiB: the reserve must be a whole "
                             "number of MiB (0 or more) below the node's memory (or set slurm_real_memory for this "
                             "node)", host) for host in NODES]


def test_a_negative_reserve_is_refused_even_without_facts():
    found = problems(context(facts={host: {"processor_vcpus": 2} for host in NODES}, slurm_memory_reserve_mb=-1))
    assert [(p.node, p.variable, p.value) for p in found] == [(h, "slurm_memory_reserve_mb", -1) for h in NODES]
    assert found[0].allowed.startswith("the reserve must be a whole number of MiB (0 or more)")


def test_a_reserve_is_not_read_where_slurm_real_memory_is_set():
    assert problems(context(slurm_memory_reserve_mb=30000, slurm_real_memory=20000)) == []
    assert problems(context(slurm_memory_reserve_mb=0)) == []
    # slurm_real_memory set to a value the spec refused: still set, so the reserve is not the node's RealMemory.
    ctx = context(slurm_memory_reserve_mb=30000)
    for host in NODES:
        ctx.raw[host]["slurm_real_memory"] = "lots"
    assert problems(ctx) == []


# --- slurm_slurmd_timeout -----------------------------------------------------------------------


@pytest.mark.parametrize("timeout", [5, 9, 65534, -1])
def test_a_slurmd_timeout_slurm_cannot_take_is_refused(timeout):
    # molecule/slurm: slurm_slurmd_timeout 5.
    found = problems(context(slurm_slurmd_timeout=timeout))
    assert [problem.line() for problem in found] == [
        f"{host}: slurm_slurmd_timeout is '{timeout}': SlurmdTimeout is 0 (never set a node DOWN) or 10 to 65533 "
        "seconds" for host in NODES]


@pytest.mark.parametrize("timeout", [0, 10, 30, 65533])
def test_slurmd_timeouts_slurm_takes_pass(timeout):
    assert problems(context(slurm_slurmd_timeout=timeout)) == []


# --- slurm_partitions ---------------------------------------------------------------------------


def test_a_partition_naming_a_node_that_is_not_a_compute_node_is_refused_once():
    # molecule/slurm: partition gpu of sl1 and sl9 (here dp1 and dp9); cluster-wide: named on the first node.
    problem = only(context(slurm_partitions=[{"name": "gpu", "nodes": ["dp1", "dp9"], "default": True}]))
    assert problem.line() == (f"dp1: slurm_partitions[gpu].nodes is '['dp1', 'dp9']': names dp9, not a compute node "
                              f"of the inventory; {COMPUTE}")


def test_the_demo_partition_names_the_head_that_does_not_compute():
    problem = only(context(slurm_head_computes=False, slurm_compute_nodes=["dp2", "dp3"]))
    assert problem.line() == ("dp1: slurm_partitions[batch].nodes is '['dp1', 'dp2', 'dp3']': names dp1, not a "
                              "compute node of the inventory; the compute nodes are dp2, dp3 (slurm_compute_group "
                              "'workers')")


def test_a_partition_without_a_usable_name_or_nodes_is_refused():
    found = problems(context(slurm_partitions=[{"name": "x y", "nodes": [], "default": False}]))
    assert found == [Problem("slurm_partitions[0].name", "x y", "needs a name (letters, digits, - and _)", "dp1"),
                     Problem("slurm_partitions[0].nodes", [], f"needs a non-empty list of nodes; {COMPUTE}", "dp1")]


def test_partitions_of_compute_nodes_and_none_pass():
    parts = [{"name": "gpu", "nodes": ["dp2", "dp3"], "default": True}, {"name": "all-nodes", "nodes": NODES}]
    assert problems(context(slurm_partitions=parts)) == []
    assert problems(context(slurm_partitions=[])) == []


def test_more_than_one_default_partition_is_refused_once():
    parts = [{"name": "a", "nodes": ["dp1"], "default": True}, {"name": "b", "nodes": ["dp2"], "default": True},
             {"name": "c", "nodes": ["dp3"], "default": False}]
    problem = only(context(slurm_partitions=parts))
    assert (problem.node, problem.variable, problem.value) == ("dp1", "slurm_partitions", parts)
    assert problem.allowed == "a, b are all marked default; one partition at most"


# --- slurm_resume_reasons -----------------------------------------------------------------------


def test_a_resume_reason_that_is_not_a_regular_expression_is_refused_once():
    problem = only(context(slurm_resume_reasons=["Not responding", "Low (RealMemory"]))
    assert problem.line() == (
        "dp1: slurm_resume_reasons is 'Low (RealMemory': not a Python regular expression (missing ), unterminated "
        "subpattern at position 4): write each reason's start, with characters such as * ( [ escaped by a backslash")


def test_regular_expressions_and_no_reasons_pass():
    assert problems(context(slurm_resume_reasons=[r"Low \(RealMemory", "Kill task failed"])) == []
    assert problems(context(slurm_resume_reasons=[])) == []


# --- the ports ----------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["1000-2000", "61000", "61000-61000"])
def test_an_srun_range_slurm_cannot_take_is_refused(value):
    found = problems(context(slurm_srun_port_range=value))
    assert found == [Problem("slurm_srun_port_range", value, slurm.SRUN_RANGE, host) for host in NODES]


@pytest.mark.parametrize("value", ["63000-60001", "70000-70001", "6000-7000", "1024-1025"])
def test_what_the_contract_names_or_slurm_takes_is_not_named_here(value):
    # Not a range (the contract's _ports), over slurmd's port (the contract's overlaps), or fine.
    assert problems(context(slurm_srun_port_range=value)) == []


def test_one_port_for_slurmctld_and_slurmd_is_refused_where_no_node_runs_both():
    ctx = context(slurm_slurmd_port=6817, slurm_head_computes=False, slurm_compute_nodes=["dp2", "dp3"],
                  slurm_partitions=[{"name": "batch", "nodes": ["dp2", "dp3"], "default": True}])
    assert problems(ctx) == [Problem("slurm_slurmd_port", 6817, "the same as slurm_slurmctld_port: slurmctld and "
                                     "slurmd need two different ports", host) for host in NODES]


def test_one_port_on_the_computing_head_is_the_contract_s_overlap():
    assert problems(context(slurm_slurmd_port=6817)) == []
    assert problems(context(slurm_slurmd_port=7000, slurm_slurmctld_port=7001)) == []


# --- the nodes' facts ---------------------------------------------------------------------------


def test_a_slurm_node_without_facts_is_refused():
    found = problems(context(facts={"dp2": {"memtotal_mb": 24105}, "dp3": {}}))
    assert found == [Problem("ansible_facts", "", slurm.NO_FACTS, "dp2"), Problem("ansible_facts", "", slurm.NO_FACTS,
                                                                                  "dp3")]
    assert lines(context(facts={"dp2": {}, "dp3": {}})) == [
        "  - dp2, dp3: ansible_facts is '': a Slurm node, but this run has no facts of it: slurm.conf describes every "
        "node, so run against all of them (not only with --limit), or gather their facts first"]


def test_a_slurm_node_outside_the_play_has_no_facts():
    # --limit dp1,dp2: dp3 is still a compute node of slurm.conf.
    ctx = context(hosts=["dp1", "dp2"])
    assert problems(ctx) == [Problem("ansible_facts", "", slurm.NO_FACTS, "dp3")]


def test_a_node_that_runs_no_slurm_needs_no_facts():
    groups = GROUPS | {"cluster": NODES + ["nas"], "all": NODES + ["nas"]}
    assert problems(context(groups=groups)) == []


# --- the nodes' names ---------------------------------------------------------------------------


def test_the_probe_asks_for_the_names_base_does_not_write_and_slurm_client():
    assert slurm.probe(context(), "dp1") == {"packages": ["slurm-client"]}
    assert slurm.probe(context(roles=("slurm",)), "dp1") == {"packages": ["slurm-client"], "resolve": NODES}
    assert slurm.probe(context(base_etc_hosts_group="head"), "dp2") == {"packages": ["slurm-client"],
                                                                        "resolve": ["dp2", "dp3"]}
    assert slurm.probe(context(base_manage_etc_hosts=False), "dp1")["resolve"] == NODES
    assert slurm.probe(context(slurm_enabled=False), "dp1") == {}


def test_a_name_no_node_can_resolve_is_refused_on_every_node():
    # molecule/slurm: a fourth worker sl4 in no /etc/hosts (here dp4); slurm checked alone, base writes nothing.
    nodes = NODES + ["dp4"]
    groups = GROUPS | {"all": nodes, "cluster": nodes, "workers": ["dp2", "dp3", "dp4"]}
    answer = ANSWER | {"resolved": {"dp1": ["10.231.0.11"], "dp2": ["10.231.0.12"], "dp3": ["10.231.0.13"], "dp4": []}}
    ctx = context(hosts=nodes, groups=groups, roles=("slurm",), probes={h: answer for h in nodes},
                  slurm_compute_nodes=nodes, slurm_partitions=[{"name": "batch", "nodes": nodes, "default": True}])
    assert lines(ctx) == [
        "  - dp1, dp2, dp3, dp4: slurm_compute_nodes is 'dp4': cannot resolve dp4 (getent hosts): Slurm reaches its "
        "nodes by their inventory names; let role base write them into /etc/hosts (base_manage_etc_hosts) or add "
        "them to DNS"]


def test_an_unresolvable_controller_is_named_as_such():
    answer = ANSWER | {"resolved": {"dp1": [], "dp2": ["10.0.0.2"], "dp3": ["10.0.0.3"]}}
    found = problems(context(roles=("slurm",), probes={"dp3": answer}))
    assert found == [Problem("slurm_controller", "dp1", slurm.UNRESOLVED.format(names="dp1"), "dp3")]


def test_names_base_writes_resolved_ones_and_unasked_ones_pass():
    unresolved = ANSWER | {"resolved": dict.fromkeys(NODES, [])}
    # base writes them in this run: what the resolver says now does not count.
    assert problems(context(probes=dict.fromkeys(NODES, unresolved))) == []
    assert problems(context(roles=("slurm",), probes={"dp1": ANSWER | {"resolved": dict.fromkeys(NODES, ["x"])}})) == []
    assert problems(context(roles=("slurm",))) == []


# --- the installed versions ---------------------------------------------------------------------


def _installed(**versions) -> dict:
    return {host: ANSWER | {"packages": {"slurm-client": version}} for host, version in versions.items()}


def test_different_installed_versions_are_refused_once():
    problem = only(context(probes=_installed(dp1="22.05.8-4", dp2="", dp3="23.02.1-1")))
    assert problem.line() == (
        "dp1: slurm-client is '22.05.8-4, 23.02.1-1': Slurm must be one version on every node (the installed "
        "package, dpkg); installed: 22.05.8-4 on dp1; none (not installed yet) on dp2; 23.02.1-1 on dp3. Slurm "
        "daemons of different versions may refuse each other: upgrade or downgrade the odd nodes to one version")


def test_one_version_or_none_passes():
    assert problems(context(probes=_installed(dp1="22.05.8-4", dp2="", dp3="22.05.8-4"))) == []
    assert problems(context(probes={h: {} for h in NODES})) == []


def test_many_nodes_are_not_all_named():
    nodes = [f"n{i:02}" for i in range(12)]
    groups = {"all": nodes, "cluster": nodes, "head": nodes[:1], "workers": nodes[1:], "gpu": []}
    versions = {host: "22.05.8-4" if i < 10 else "23.02.1-1" for i, host in enumerate(nodes)}
    ctx = context(hosts=nodes, groups=groups, probes=_installed(**versions), slurm_controller="n00",
                  slurm_compute_nodes=nodes, slurm_partitions=[])
    assert "22.05.8-4 on n00, n01, n02, n03, n04, n05, n06, n07 and 2 more; 23.02.1-1 on n10, n11." in only(ctx).allowed


# --- slurm_enabled and odd input ----------------------------------------------------------------


def test_a_cluster_without_slurm_checks_nothing():
    bad = {"slurm_cluster_name": "Bad Name", "slurm_slurmd_timeout": 5, "slurm_real_memory": -1,
           "slurm_controller": "", "slurm_partitions": [{"name": "gpu", "nodes": ["dp9"]}]}
    ctx = context(slurm_enabled=False, facts={h: {} for h in NODES}, probes=_installed(dp1="1", dp2="2"), **bad)
    assert problems(ctx) == []


def test_only_the_nodes_that_run_slurm_are_checked():
    ctx = context(slurm_slurmd_timeout=5)
    ctx.values["dp1"]["slurm_enabled"] = False
    assert [p.node for p in problems(ctx)] == ["dp2", "dp3"]


def test_refused_values_are_skipped():
    # What the argument spec refused is absent from the values (and its derived values with it).
    names = [name for name in GOOD if name.startswith("slurm_")]
    assert problems(context(**dict.fromkeys(names))) == []


def test_odd_values_never_raise():
    found = problems(context(
        slurm_partitions=["batch", {"name": 5, "nodes": "dp1"}, {"nodes": [None, "dp1"]}],
        slurm_compute_nodes="dp1", slurm_controller=None, slurm_resume_reasons="(", slurm_real_memory=True,
        slurm_slurmd_timeout="300", slurm_memory_reserve_mb=None, slurm_srun_port_range=60001,
        slurm_slurmctld_port="x", slurm_slurmd_port="x", base_etc_hosts_group=None,
        facts={"dp1": None}, probes={"dp1": {"resolved": None, "packages": []}, "dp2": None, "dp3": {"resolved": []}}))
    assert {problem.variable for problem in found} == {
        "slurm_real_memory", "slurm_slurmd_timeout", "slurm_srun_port_range", "slurm_partitions[1].name",
        "slurm_partitions[1].nodes", "slurm_partitions[2].name", "slurm_partitions[2].nodes"}


@pytest.mark.parametrize("base_values", [{"base_manage_etc_hosts": None}, {"base_etc_hosts_group": "computenodes"}])
def test_names_are_not_judged_while_base_refuses_its_etc_hosts_inputs(base_values):
    """base names its own bad input; what it would write is unknown, so no name is called unresolvable."""
    unresolved = {"resolved": {name: [] for name in NODES}}
    ctx = context(probes={host: ANSWER | unresolved for host in NODES}, **base_values)
    assert list(slurm._resolvable(ctx)) == []
    # The same answer with base's inputs valid but not writing /etc/hosts: every name is named.
    assert list(slurm._resolvable(context(probes={host: ANSWER | unresolved for host in NODES},
                                          base_manage_etc_hosts=False)))
