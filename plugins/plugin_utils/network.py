# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Cross-node checks of the fabric: link MTU and speed, RDMA ports.

A multi-node NCCL job runs at the pace of its slowest link, and a node whose
MTU differs from its peers' drops or fragments jumbo frames. These functions
take what every node reports and return the problems as messages naming the
node, the interface or port, its value and the expected one. Standard
library only.
"""

from __future__ import annotations

import fnmatch
from collections import namedtuple

from ansible_collections.lockstep.gpu.plugins.module_utils.parsing import int_or_none

UNKNOWN_SPEED_POLICIES = ("fail", "warn", "ignore")

# One node's link in one slot of link_problems(); speed_mbps None when unknown.
_Link = namedtuple("_Link", "host name mtu speed_mbps")


def _majority(values):
    """The most common value (ties: the first seen); None when there is none."""
    counts = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    if not counts:
        return None, 0
    best = max(counts.values())
    return next(v for v in values if counts[v] == best), best


def link_problems(nodes, interfaces, expected_mtu=None, min_speed_mbps=0, unknown_speed="fail"):
    """Check that every node's links agree and are fast enough.

    ``nodes``: ``{host: {interface: {"mtu": int, "speed_mbps": int | None}}}``
    (a speed of None, 0 or below means the link reports no speed, as veth
    and many virtual NICs do). ``interfaces``: the interfaces to check
    (``{host: [names]}`` or one list for all nodes). ``expected_mtu``:
    ``{interface: mtu}`` declared in the inventory; an interface without an
    entry must agree with the majority of nodes. ``unknown_speed``: fail,
    warn or ignore a link that reports no speed.

    Returns ``{"problems": [...], "warnings": [...]}``.
    """
    if unknown_speed not in UNKNOWN_SPEED_POLICIES:
        raise ValueError("unknown_speed must be one of %s, not %r" % (", ".join(UNKNOWN_SPEED_POLICIES), unknown_speed))
    expected_mtu = expected_mtu or {}
    problems, warnings = [], []
    hosts = list(nodes)

    def wanted(host):
        if isinstance(interfaces, dict):
            return list(interfaces.get(host) or [])
        return list(interfaces or [])

    # Interfaces are compared by position in each node's list, so that nodes
    # whose NICs are named differently (eno1 / ens1f0) still line up.
    slots = max((len(wanted(h)) for h in hosts), default=0)
    for slot in range(slots):
        present = []
        for host in hosts:
            names = wanted(host)
            if slot >= len(names):
                continue
            name = names[slot]
            info = (nodes.get(host) or {}).get(name)
            if not info:
                problems.append("%s: interface %s does not exist" % (host, name))
                continue
            speed = int_or_none(info.get("speed_mbps"))
            present.append(_Link(host, name, int_or_none(info.get("mtu")), speed if speed and speed > 0 else None))
        if not present:
            continue
        label = "/".join(sorted({link.name for link in present}))

        declared = None
        for link in present:
            if link.name in expected_mtu:
                declared = int(expected_mtu[link.name])
                break
        if declared is not None:
            mtu_expected, why = declared, "network_mtu"
        else:
            mtu_expected, count = _majority([link.mtu for link in present])
            why = "the MTU of %d of %d nodes" % (count, len(present))
        for link in present:
            if link.mtu != mtu_expected:
                problems.append("%s: %s MTU %s, expected %s (%s)" % (link.host, link.name, link.mtu, mtu_expected, why))

        known = [(link.host, link.name, link.speed_mbps) for link in present if link.speed_mbps is not None]
        for link in present:
            if link.speed_mbps is None and unknown_speed != "ignore":
                message = (
                    "%s: %s reports no link speed (unknown; virtual NICs such as veth "
                    "often do); its speed cannot be checked against network_min_speed_mbps %s"
                    % (link.host, link.name, min_speed_mbps)
                )
                (problems if unknown_speed == "fail" else warnings).append(message)
        for host, name, speed in known:
            if min_speed_mbps and speed < int(min_speed_mbps):
                problems.append(
                    "%s: %s link speed %d Mb/s is below the minimum %d Mb/s (network_min_speed_mbps)"
                    % (host, name, speed, int(min_speed_mbps))
                )
        speed_expected, count = _majority([speed for _host, _name, speed in known])
        for host, name, speed in known:
            if speed != speed_expected:
                problems.append(
                    "%s: %s link speed %d Mb/s, expected %d Mb/s (the speed of %d of %d nodes on %s)"
                    % (host, name, speed, speed_expected, count, len(known), label)
                )
    return {"problems": problems, "warnings": warnings}


def rdma_problems(nodes, min_rate_gbps=0):
    """Check RDMA ports: every port Active and LinkUp, fast enough, same rate everywhere.

    ``nodes``: ``{host: cas}`` where ``cas`` is ``parse_ibstat(...)["cas"]``
    of lockstep_rdma. Returns ``{"problems": [...], "ports": N}``.
    """
    problems = []
    rates = []
    for host, cas in nodes.items():
        for ca in cas or []:
            for port in ca["ports"]:
                where = "%s: %s port %d" % (host, ca["name"], port["port"])
                if port["state"] != "Active":
                    problems.append("%s is %s, expected Active" % (where, port["state"]))
                if port["physical_state"] != "LinkUp":
                    problems.append("%s physical state is %s, expected LinkUp" % (where, port["physical_state"]))
                if min_rate_gbps and port["rate"] < min_rate_gbps:
                    problems.append(
                        "%s rate %g Gb/s is below the minimum %g Gb/s (network_rdma_min_rate_gbps)"
                        % (where, port["rate"], float(min_rate_gbps))
                    )
                if port["state"] == "Active":
                    rates.append((where, port["link_layer"], port["rate"]))
    for layer in sorted({link_layer for _where, link_layer, _rate in rates}):
        same = [(w, r) for w, lay, r in rates if lay == layer]
        expected, count = _majority([r for _w, r in same])
        for where, rate in same:
            if rate != expected:
                problems.append(
                    "%s rate %s Gb/s, expected %s Gb/s (the rate of %d of %d active %s ports)"
                    % (where, rate, expected, count, len(same), layer)
                )
    return {"problems": problems, "ports": sum(len(ca["ports"]) for cas in nodes.values() for ca in cas or [])}


def sysctl_plan(wanted, namespaced, in_container):
    """Which sysctl keys a node sets.

    ``wanted``: ``{key: value}``; ``namespaced``: shell patterns of the keys
    the kernel keeps per network namespace. On a host every key is applied;
    in a container only the namespaced ones, since any other write would
    change the host's kernel. Returns ``{"apply": {key: value as text},
    "skipped": [keys]}``; values are written as sysctl prints them (lists
    joined with a tab become single spaces here).
    """
    apply, skipped = {}, []
    for key in sorted(wanted):
        value = wanted[key]
        if isinstance(value, bool):
            value = int(value)
        text = " ".join(str(value).split())
        if in_container and not any(fnmatch.fnmatchcase(key, p) for p in namespaced):
            skipped.append(key)
        else:
            apply[key] = text
    return {"apply": apply, "skipped": skipped}
