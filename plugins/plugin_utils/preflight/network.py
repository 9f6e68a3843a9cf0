# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The preflight rules of role network (what roles/network/tasks/preflight.yml checked in Jinja).

The interfaces a node has come from the probe's answer (``interfaces``),
else from its facts; the container markers from the probe's ``markers``.
Types and ``choices`` (network_unknown_speed, network_mtu as a mapping...)
are the argument spec's, checked by the engine before these rules run.
"""

from __future__ import annotations

import re

from ansible_collections.lockstep.gpu.plugins.plugin_utils.problems import Problem

# No derived value of roles/network/vars/main.yml: the rules read the spec's options and the probe.
VARIABLES: tuple[str, ...] = ()

# tasks/preflight.yml: '^\d+$' and 576 <= MTU <= 65520 (ASCII digits: the value lands in a udev rule;
# at most 10, so that int() of a 200 kB string of digits never runs).
_MTU = re.compile(r"[0-9]{1,10}")
MTU_MIN, MTU_MAX = 576, 65520
# A sysctl key: a lower-case first word, then dotted words (interface names, '*' of patterns).
_SYSCTL_KEY = re.compile(r"[a-z0-9_]+(\.[A-Za-z0-9_*-]+)+")
MIN_SPEED_FLOOR = 10000


def _probe(ctx, host) -> dict:
    answer = ctx.probe(host)
    return answer if isinstance(answer, dict) else {}


def _min_speed(ctx):
    """'Refuse a minimum link speed below 10 GbE'."""
    for host in ctx.hosts:
        if not ctx.has(host, "network_min_speed_mbps"):
            continue
        value = ctx.var(host, "network_min_speed_mbps")
        # Jinja's '| int' made anything that is not a number 0: refused as well.
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= MIN_SPEED_FLOOR:
            continue
        yield Problem("network_min_speed_mbps", value,
                      "multi-node NCCL needs 10 GbE at the very least (10000), "
                      "100 GbE or InfiniBand preferred (100000)", host)


def _mtu_range(ctx):
    """'Refuse MTUs out of range': every value of network_mtu a number from 576 to 65520."""
    for host in ctx.hosts:
        mtus = ctx.var(host, "network_mtu")
        if not isinstance(mtus, dict):
            continue
        for name, value in mtus.items():
            text = str(value)
            if not isinstance(value, bool) and _MTU.fullmatch(text) and MTU_MIN <= int(text) <= MTU_MAX:
                continue
            yield Problem(f"network_mtu.{name}", value,
                          "an MTU is a number from 576 to 65520 (9000 for jumbo Ethernet frames)", host)


def _node_interfaces(ctx, host):
    """The node's interface names (the probe's, else the facts'), or None when neither is known."""
    probed = _probe(ctx, host).get("interfaces")
    if isinstance(probed, dict):
        return {str(name) for name in probed}
    facts = ctx.fact(host, "interfaces")
    if isinstance(facts, (list, tuple, dict)):
        return {str(name) for name in facts}
    return None


def _checked(ctx, host) -> list[tuple[str, str]]:
    """(variable, interface) for network_mtu's keys and network_interfaces_checked (vars/main.yml), unique."""
    mtus = ctx.var(host, "network_mtu")
    mtus = mtus if isinstance(mtus, dict) else {}
    listed = ctx.var(host, "network_check_interfaces")
    listed = listed if isinstance(listed, list) else []
    if listed:
        checked = [("network_check_interfaces", name) for name in listed]
    elif mtus:
        checked = []  # network_mtu's keys, named below already
    else:
        route = ctx.fact(host, "default_ipv4")
        name = route.get("interface") if isinstance(route, dict) else None
        checked = [("network_check_interfaces", name)] if name else []
    named, seen = [], set()
    for variable, name in [("network_mtu", key) for key in mtus] + checked:
        if str(name) not in seen:
            seen.add(str(name))
            named.append((variable, str(name)))
    return named


def _interfaces_exist(ctx):
    """'Refuse interfaces the node does not have' (network_mtu's and the checked ones)."""
    for host in ctx.hosts:
        have = _node_interfaces(ctx, host)
        if have is None:
            continue  # neither probe nor facts: nothing to compare with
        for variable, name in _checked(ctx, host):
            if name not in have:
                yield Problem(variable, name,
                              f"the node has no interface {name} (named in network_mtu or "
                              f"network_check_interfaces); it has: {', '.join(sorted(have))}", host)


def _sysctl_keys(ctx):
    """'Refuse sysctl keys that are not keys' in network_sysctl_wanted (network_sysctl | combine(overrides))."""
    for host in ctx.hosts:
        base, overrides = ctx.var(host, "network_sysctl"), ctx.var(host, "network_sysctl_overrides")
        wanted = {key: "network_sysctl" for key in (base if isinstance(base, dict) else {})}
        wanted.update({key: "network_sysctl_overrides" for key in (overrides if isinstance(overrides, dict) else {})})
        for key, variable in wanted.items():
            value = (overrides if variable == "network_sysctl_overrides" else base)[key]
            # Jinja's 'string or number' (a boolean is a number there; sysctl_plan writes it as 0/1).
            if isinstance(key, str) and _SYSCTL_KEY.fullmatch(key) and isinstance(value, (str, int, float)):
                continue
            yield Problem(variable, f"{key}: {value}",
                          "not a sysctl key with a scalar value (a key such as net.core.rmem_max, "
                          "a number or a string)", host)


RULES = (_min_speed, _mtu_range, _interfaces_exist, _sysctl_keys)
