# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The preflight rules of role slurm (what roles/slurm/tasks/preflight.yml checked in Jinja).

Only the nodes where the cluster runs Slurm (slurm_enabled) are checked:
playbooks/slurm.yml skips the others. The cluster-wide rules (partitions,
resume reasons, the nodes' facts, the installed versions) judge the values
of the first such node of the play, the one the role renders slurm.conf on
(run_once), and report once, on that node. The nodes' names are asked of
the resolver (probe ``resolve``), slurm-client's installed version of dpkg
(probe ``packages``). Each port being a port and two services of one node
on one port are the cluster contract's rules (preflight/cluster.py): here
only what Slurm adds (srun's range first-last from 1024).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ansible_collections.lockstep.gpu.plugins.filter.slurm_nodes import slurm_reason_problems
from ansible_collections.lockstep.gpu.plugins.plugin_utils.problems import Problem
from ansible_collections.lockstep.gpu.plugins.plugin_utils.validate import Invalid, port, port_range

# The cluster contract's derived values (roles/cluster/vars/main.yml): who runs slurmctld and slurmd.
# The /etc/hosts switch and group, the groups and the ports are options of the contract's spec.
VARIABLES: tuple[str, ...] = ("slurm_controller", "slurm_compute_nodes")

# ClusterName: what slurmctld takes (and keeps in its state files).
_CLUSTER_NAME = re.compile(r"[a-z][a-z0-9_-]{0,39}")
_PARTITION_NAME = re.compile(r"[A-Za-z0-9_-]+")
_RANGE = re.compile(r"[0-9]+-[0-9]+")
PACKAGE = "slurm-client"
# A Slurm version line lists at most this many nodes per version (500 nodes are not all named).
_NAMED = 8

CLUSTER_NAME = ("not a Slurm cluster name: lower case letters, digits, - and _, starting with a letter, "
                "at most 40 characters")
REAL_MEMORY = ("it must be a whole number of MiB, 1 or more (RealMemory in slurm.conf), or unset to use the "
               "node's memory less slurm_memory_reserve_mb")
TIMEOUT = "SlurmdTimeout is 0 (never set a node DOWN) or 10 to 65533 seconds"
SRUN_RANGE = "not a port range first-last with 1024 <= first < last <= 65535 (e.g. 60001-63000)"
NO_FACTS = ("a Slurm node, but this run has no facts of it: slurm.conf describes every node, so run against all "
            "of them (not only with --limit), or gather their facts first")
UNRESOLVED = ("cannot resolve {names} (getent hosts): Slurm reaches its nodes by their inventory names; let role "
              "base write them into /etc/hosts (base_manage_etc_hosts) or add them to DNS")


def _slurm_hosts(ctx) -> list[str]:
    """The play's nodes where the cluster runs Slurm (an invalid slurm_enabled is the spec's problem)."""
    return [host for host in ctx.hosts if ctx.var(host, "slurm_enabled") is True]


def _first(ctx) -> str:
    """The node whose values the cluster-wide rules judge (the role's run_once node), or ''."""
    hosts = _slurm_hosts(ctx)
    return hosts[0] if hosts else ""


def _some(names: list[str]) -> str:
    """'dp1, dp2', or the first few 'and 492 more' (500 nodes are not all named)."""
    more = f" and {len(names) - _NAMED} more" if len(names) > _NAMED else ""
    return ", ".join(names[:_NAMED]) + more


def _int(value) -> int | None:
    """value when it is a whole number (not a boolean), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _names(value) -> list[str]:
    """The strings of a list value, [] for anything else."""
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


def _controller(ctx, host) -> str:
    value = ctx.var(host, "slurm_controller")
    return value if isinstance(value, str) else ""


def _compute_nodes(ctx, host) -> list[str]:
    return _names(ctx.var(host, "slurm_compute_nodes"))


def _slurm_nodes(ctx, host) -> list[str]:
    """The controller and the compute nodes, once each, in that order."""
    nodes = [_controller(ctx, host)] + _compute_nodes(ctx, host)
    return [name for index, name in enumerate(nodes) if name and name not in nodes[:index]]


def _defined(ctx, host, name) -> bool:
    """Did the inventory set the variable (even to a value the spec refused)?"""
    return ctx.has(host, name) or name in ctx.raw.get(host, {})


def _memory(ctx, host) -> int | None:
    """The node's memory in MiB (ansible_memtotal_mb, what slurm.conf's RealMemory is computed from)."""
    facts = ctx.facts.get(host)
    return _int(facts.get("memtotal_mb")) if isinstance(facts, Mapping) else None


def _base_writes(ctx, host) -> set[str]:
    """The names role base writes into /etc/hosts in this run (not asked of the resolver)."""
    group = ctx.var(host, "base_etc_hosts_group")
    if "base" not in ctx.roles or ctx.var(host, "base_manage_etc_hosts") is not True or not isinstance(group, str):
        return set()
    return set(ctx.groups.get(group) or ())


def _base_undecided(ctx, host) -> bool:
    """Is base checked in this run with /etc/hosts inputs it refuses? (What it writes is unknown; base names them.)"""
    if "base" not in ctx.roles:
        return False
    if not ctx.has(host, "base_manage_etc_hosts") or not ctx.has(host, "base_etc_hosts_group"):
        return True
    return ctx.var(host, "base_manage_etc_hosts") is True and ctx.var(host, "base_etc_hosts_group") not in ctx.groups


def _to_resolve(ctx, host) -> list[str]:
    written = _base_writes(ctx, host)
    return [name for name in _slurm_nodes(ctx, host) if name not in written]


def probe(ctx, host) -> dict:
    """The Slurm nodes' names base does not write into /etc/hosts, and slurm-client's installed version."""
    if ctx.var(host, "slurm_enabled") is not True:
        return {}
    request = {"packages": [PACKAGE]}
    names = _to_resolve(ctx, host)
    if names:
        request["resolve"] = names
    return request


def _controller_exists(ctx):
    """'Refuse a cluster without a controller' (slurm_head_group's first node runs slurmctld)."""
    for host in _slurm_hosts(ctx):
        if ctx.has(host, "slurm_controller") and not _controller(ctx, host) and ctx.has(host, "slurm_head_group"):
            yield Problem("slurm_head_group", ctx.var(host, "slurm_head_group"),
                          "has no node in the inventory: its first node runs slurmctld", host)


def _cluster_name(ctx):
    """'Refuse a cluster name Slurm cannot take'."""
    for host in _slurm_hosts(ctx):
        name = ctx.var(host, "slurm_cluster_name")
        if ctx.has(host, "slurm_cluster_name") and not (isinstance(name, str) and _CLUSTER_NAME.fullmatch(name)):
            yield Problem("slurm_cluster_name", name, CLUSTER_NAME, host)


def _real_memory(ctx):
    """'Refuse a negative or non-numeric slurm_real_memory' (every node, as the Jinja did)."""
    for host in _slurm_hosts(ctx):
        value = ctx.var(host, "slurm_real_memory")
        if ctx.has(host, "slurm_real_memory") and (_int(value) is None or value < 1):
            yield Problem("slurm_real_memory", value, REAL_MEMORY, host)


def _real_memory_fits(ctx):
    """'Refuse a slurm_real_memory above the node's memory' (Slurm sets such a node INVAL, Low RealMemory)."""
    for host in _slurm_hosts(ctx):
        value, memory = _int(ctx.var(host, "slurm_real_memory")), _memory(ctx, host)
        if value is None or value < 1 or memory is None or host not in _compute_nodes(ctx, host):
            continue
        if value > memory:
            yield Problem("slurm_real_memory", value,
                          f"{value} MiB and the node has {memory} MiB: Slurm would set it INVAL (Low RealMemory) "
                          "and run nothing there; give at most the node's memory, or unset it to use the node's "
                          "memory less slurm_memory_reserve_mb", host)


def _memory_reserve(ctx):
    """'Refuse a memory reserve that leaves the node nothing' (compute nodes without slurm_real_memory)."""
    for host in _slurm_hosts(ctx):
        reserve, memory = _int(ctx.var(host, "slurm_memory_reserve_mb")), _memory(ctx, host)
        if (reserve is None or _defined(ctx, host, "slurm_real_memory")
                or host not in _compute_nodes(ctx, host)):
            continue
        if reserve < 0 or (memory is not None and memory - reserve <= 0):
            has = f"the node has {memory} MiB: " if memory is not None else ""
            yield Problem("slurm_memory_reserve_mb", reserve,
                          f"{has}the reserve must be a whole number of MiB (0 or more) below the node's memory "
                          "(or set slurm_real_memory for this node)", host)


def _slurmd_timeout(ctx):
    """'Refuse a SlurmdTimeout Slurm cannot take'."""
    for host in _slurm_hosts(ctx):
        value = ctx.var(host, "slurm_slurmd_timeout")
        if ctx.has(host, "slurm_slurmd_timeout") and (_int(value) is None or not (value == 0 or 10 <= value <= 65533)):
            yield Problem("slurm_slurmd_timeout", value, TIMEOUT, host)


def _compute_list(ctx, host) -> str:
    """'the compute nodes are ... (slurm_compute_group 'workers', and the head)'."""
    head = ", and the head" if ctx.var(host, "slurm_head_computes") is True else ""
    return (f"the compute nodes are {', '.join(_compute_nodes(ctx, host)) or '(none)'} "
            f"(slurm_compute_group '{ctx.var(host, 'slurm_compute_group')}'{head})")


def _partition_problems(ctx, host, index: int, partition: Mapping):
    """The problems of one partition: its name, and nodes that are not compute nodes."""
    name, nodes = partition.get("name"), partition.get("nodes")
    named = isinstance(name, str) and _PARTITION_NAME.fullmatch(name) is not None
    label = f"slurm_partitions[{name if named else index}]"
    if not named:
        yield Problem(f"{label}.name", name, "needs a name (letters, digits, - and _)", host)
    if not isinstance(nodes, list) or not nodes:
        yield Problem(f"{label}.nodes", nodes, f"needs a non-empty list of nodes; {_compute_list(ctx, host)}", host)
        return
    compute = _compute_nodes(ctx, host)
    strangers = [node for at, node in enumerate(nodes) if node not in compute and node not in nodes[:at]]
    if strangers:
        yield Problem(f"{label}.nodes", nodes, f"names {', '.join(map(str, strangers))}, not a compute node of the "
                      f"inventory; {_compute_list(ctx, host)}", host)


def _partitions(ctx):
    """'Refuse a partition without a name or nodes, or naming a node that is not a compute node' (run_once)."""
    host = _first(ctx)
    partitions = ctx.var(host, "slurm_partitions")
    if not host or not isinstance(partitions, list) or not ctx.has(host, "slurm_compute_nodes"):
        return
    for index, partition in enumerate(partitions):
        if isinstance(partition, Mapping):
            yield from _partition_problems(ctx, host, index, partition)


def _resume_reasons(ctx):
    """'Refuse a resume reason that is not a regular expression' (filter slurm_reason_problems; run_once)."""
    host = _first(ctx)
    for reason in _names(ctx.var(host, "slurm_resume_reasons")) if host else ():
        for message in slurm_reason_problems([reason]):
            # "slurm_resume_reasons has 'X', not a ...": the line names the variable and the value already.
            prefix = f"slurm_resume_reasons has '{reason}', "
            yield Problem("slurm_resume_reasons", reason, message[len(prefix):] if message.startswith(prefix)
                          else message, host)


def _ports(ctx):
    """'Refuse ... an srun port range that is not first-last', and slurmctld and slurmd on one port.

    Only what is Slurm's own: each port being a port, a range first <= last, and two services of one node
    on one port are the cluster contract's rules (plugins/plugin_utils/preflight/cluster.py), so a value
    they refuse is not named again here.
    """
    for host in _slurm_hosts(ctx):
        value = ctx.var(host, "slurm_srun_port_range")
        if ctx.has(host, "slurm_srun_port_range") and _a_range(value) and not _srun_range(value):
            yield Problem("slurm_srun_port_range", value, SRUN_RANGE, host)
        ctld, slurmd = ctx.var(host, "slurm_slurmctld_port"), ctx.var(host, "slurm_slurmd_port")
        # Where the controller computes, the contract's overlap rule names the shared port on it.
        if ctld == slurmd and _a_port(slurmd) and _controller(ctx, host) not in _compute_nodes(ctx, host):
            yield Problem("slurm_slurmd_port", slurmd, "the same as slurm_slurmctld_port: slurmctld and slurmd "
                          "need two different ports", host)


def _a_port(value) -> bool:
    try:
        port(value)
    except Invalid:
        return False
    return True


def _a_range(value) -> bool:
    """A port or range the contract takes (else the contract names it)."""
    try:
        port_range(value)
    except Invalid:
        return False
    return True


def _srun_range(value) -> bool:
    """first-last with 1024 <= first < last <= 65535 (SrunPortRange)."""
    if not isinstance(value, str) or not _RANGE.fullmatch(value):
        return False
    first, last = port_range(value)
    return 1024 <= first < last


def _one_default(ctx):
    """'Refuse more than one default partition' (run_once)."""
    host = _first(ctx)
    partitions = ctx.var(host, "slurm_partitions") if host else None
    if not isinstance(partitions, list):
        return
    defaults = [item.get("name") for item in partitions if isinstance(item, Mapping) and item.get("default") is True]
    if len(defaults) > 1:
        written = ctx.raw.get(host, {}).get("slurm_partitions", partitions)
        yield Problem("slurm_partitions", written, f"{', '.join(map(str, defaults))} are all marked default; "
                      "one partition at most", host)


def _facts_gathered(ctx):
    """'Refuse compute nodes whose facts this run did not gather' (slurm.conf describes every node; run_once)."""
    host = _first(ctx)
    for node in _slurm_nodes(ctx, host) if host else ():
        facts = ctx.facts.get(node)
        if not isinstance(facts, Mapping) or "processor_vcpus" not in facts:
            yield Problem("ansible_facts", "", NO_FACTS, node)


def _resolvable(ctx):
    """'Refuse a Slurm node name this node cannot resolve' (probe resolve; a name not asked is not judged)."""
    for host in _slurm_hosts(ctx):
        answer = ctx.probe(host)
        resolved = answer.get("resolved") if isinstance(answer, Mapping) else None
        if not isinstance(resolved, Mapping) or _base_undecided(ctx, host):
            continue
        names = [name for name in _to_resolve(ctx, host) if name in resolved and not resolved[name]]
        if names:
            # One problem per node, the same on every node that misses the same names (one line for all).
            variable = "slurm_controller" if names == [_controller(ctx, host)] else "slurm_compute_nodes"
            yield Problem(variable, ", ".join(names), UNRESOLVED.format(names=_some(names)), host)


def _installed(ctx, host) -> str | None:
    """slurm-client's installed version on host ('' when not installed), None when not probed."""
    answer = ctx.probe(host)
    packages = answer.get("packages") if isinstance(answer, Mapping) else None
    version = packages.get(PACKAGE) if isinstance(packages, Mapping) else None
    return version if isinstance(version, str) else None


def _listing(by_version: dict) -> str:
    """'22.05.8-4 on dp1, dp2; none (not installed yet) on dp3'."""
    return "; ".join(f"{version or 'none (not installed yet)'} on {_some(nodes)}"
                     for version, nodes in by_version.items())


def _one_version(ctx):
    """'Refuse nodes with different installed Slurm versions' (dpkg's, probe packages; run_once)."""
    by_version: dict[str, list[str]] = {}
    for host in _slurm_hosts(ctx):
        version = _installed(ctx, host)
        if version is not None:
            by_version.setdefault(version, []).append(host)
    installed = sorted(version for version in by_version if version)
    if len(installed) > 1:
        yield Problem(PACKAGE, ", ".join(installed),
                      "Slurm must be one version on every node (the installed package, dpkg); installed: "
                      f"{_listing(by_version)}. Slurm daemons of different versions may refuse each other: "
                      "upgrade or downgrade the odd nodes to one version", _first(ctx))


RULES = (_controller_exists, _cluster_name, _real_memory, _real_memory_fits, _memory_reserve, _slurmd_timeout,
         _partitions, _resume_reasons, _ports, _one_default, _facts_gathered, _resolvable, _one_version)
