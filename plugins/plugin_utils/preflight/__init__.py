# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The preflight's rules, one module per role, and what they read.

The action lockstep.gpu.preflight (plugins/action/preflight.py) builds one
:class:`Context` for the whole play and calls every checked role's rules
with it. A role's module here (``base.py``, ``slurm.py``...) defines:

``RULES``
    a tuple of functions ``rule(ctx) -> iterable of Problem`` (problems.py),
    each one rule across variables and nodes that fits on a screen. They run
    after the role's argument spec has been validated, so ``ctx.var`` gives
    values of the spec's types (an invalid value is already reported and is
    absent from ``ctx.values``: a rule must not assume a variable is there).

``probe(ctx, host) -> dict`` (optional)
    what the role's rules need read on ``host``: a request in the form of
    the probe module's options (``resolve``, ``paths``, ``packages``,
    ``users``, ``connect``, ...). The action merges every role's request and
    runs lockstep.gpu.preflight_probe ONCE per node; ``ctx.probes[host]``
    holds its answer. Every answer also carries, unasked:

    - ``interfaces``: {name: {"mtu": int, "addresses": [str], "up": bool,
      "speed": int or None (Mb/s)}}
    - ``hcas``: {RDMA device name: [its port numbers]} (/sys/class/infiniband)
    - ``markers``: {"/.dockerenv": bool, "/run/.containerenv": bool}
    - ``listening``: [{"proto": "tcp"|"udp", "address": str, "port": int,
      "process": str ("" when unknown)}]
    - ``memory_mb``: int (MemTotal)
    - ``virtualization``: "container" or "" (systemd-detect-virt -c)

    and for each request key the answer of the same name:
    ``resolved`` {name: [addresses], [] when unresolvable},
    ``hcas_at`` (for ``hca_roots``) {directory: {device: [ports]}},
    ``paths`` {path: bool}, ``read`` {path: text, None when absent or
    over 1 MiB}, ``packages`` {name: installed version or ""}
    (dpkg only: nothing is written to apt's cache), ``users`` {name: bool},
    ``connect`` {"host:port": "" when a TCP connection succeeded, else the
    error}.

Problems name the node, the variable, the value as written and what is
allowed (Problem(variable, value, allowed, node)).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Context:
    """Everything the rules may read: no rule reads anything else."""

    # The play's nodes, in inventory order.
    hosts: list[str]
    # The inventory's groups ({name: [hosts]}), 'all' included.
    groups: dict[str, list[str]]
    # {host: {variable: value}}: the inventory's value, else the role
    # defaults' (templated for that host), checked against the roles'
    # argument specs and converted to the spec's type.
    values: dict[str, dict[str, Any]]
    # {host: {variable: value}} as the inventory wrote it, before the spec's
    # conversion (a YAML number where a version string is meant: 12.10 is 12.1).
    raw: dict[str, dict[str, Any]] = field(default_factory=dict)
    # {host: ansible_facts} of this run ({} when not gathered).
    facts: dict[str, dict] = field(default_factory=dict)
    # {host: the probe module's answer} ({} before the probe ran).
    probes: dict[str, dict] = field(default_factory=dict)
    # The roles being checked (preflight_roles).
    roles: tuple[str, ...] = ()

    def var(self, host: str, name: str, default: Any = None) -> Any:
        """host's value of a variable, or default when unset or invalid."""
        return self.values.get(host, {}).get(name, default)

    def has(self, host: str, name: str) -> bool:
        """Does host have a (valid) value of this variable?"""
        return name in self.values.get(host, {})

    def group(self, name: str) -> list[str]:
        """The nodes of an inventory group that are in the play, in inventory order."""
        members = set(self.groups.get(name, ()))
        return [h for h in self.hosts if h in members]

    def first(self, name: str) -> str:
        """The first node of an inventory group (in the inventory, not only the play), or ''."""
        members = self.groups.get(name, ())
        return members[0] if members else ""

    def probe(self, host: str) -> dict:
        return self.probes.get(host, {})

    def fact(self, host: str, name: str, default: Any = None) -> Any:
        return self.facts.get(host, {}).get(name, default)


def unsupported_release(ctx: Context, role: str, hosts=None):
    """A problem for each node (of hosts, else ctx.hosts) whose release the role does not support.

    NVIDIA's and Docker's repositories and the roles' package tables exist for
    os_facts.SUPPORTED only. A node without usable facts is not judged.
    """
    # Imported here: os_facts and problems do not need this package, and rules import it first.
    from ansible.errors import AnsibleFilterError

    from ansible_collections.lockstep.gpu.plugins.plugin_utils.os_facts import SUPPORTED, os_release
    from ansible_collections.lockstep.gpu.plugins.plugin_utils.problems import Problem

    for host in ctx.hosts if hosts is None else hosts:
        try:
            platform = os_release(ctx.facts.get(host, {}))
        except AnsibleFilterError:  # facts not gathered (or not a mapping)
            continue
        if not platform["supported"]:
            yield Problem("ansible_distribution", platform["name"],
                          f"not a release the {role} role supports: {', '.join(SUPPORTED)}", host)


def where_enabled(switch: str, checks) -> tuple:
    """Rules that run each per-node check ``check(ctx, host)`` on the play's nodes where the contract's switch
    (``gpustack_enabled``...) is true: an invalid switch is the argument spec's problem, false checks nothing."""
    def rule_of(check):
        def rule(ctx):
            for host in ctx.hosts:
                if ctx.var(host, switch) is True:
                    yield from check(ctx, host)
        rule.__name__ = rule.__qualname__ = check.__name__
        rule.__doc__ = check.__doc__
        return rule
    return tuple(rule_of(check) for check in checks)
