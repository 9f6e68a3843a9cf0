# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the network role: lockstep.gpu.net_links, net_link_facts,
net_sysctl_plan, ibstat, net_rdma, and node_addresses, the one rule every role
uses for a node's cluster address (cross-node logic in plugin_utils/network.py,
parsers in module_utils/rdma.py). Each filter's documentation is the YAML file
of its name beside this one."""

from __future__ import annotations

import ipaddress

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean
from ansible_collections.lockstep.gpu.plugins.module_utils import rdma
from ansible_collections.lockstep.gpu.plugins.module_utils.parsing import ParseError, int_or_none
from ansible_collections.lockstep.gpu.plugins.plugin_utils import network


def net_links(nodes, interfaces, expected_mtu=None, min_speed_mbps=0, unknown_speed="fail"):
    """Problems and warnings of the nodes' links (MTU and speed across nodes)."""
    try:
        return network.link_problems(
            dict(nodes), interfaces, dict(expected_mtu or {}), int(min_speed_mbps or 0), unknown_speed
        )
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def net_link_facts(facts, names):
    """Ansible facts + interface names -> ``{name: {"mtu", "speed_mbps"}}``.

    The speed is None where the link reports none (Ansible leaves ``speed``
    out, or it is -1); an interface without facts maps to None.
    """
    links = {}
    for name in names or []:
        info = (facts or {}).get(str(name).replace("-", "_"))
        if not isinstance(info, dict):
            links[name] = None
            continue
        speed = int_or_none(info.get("speed"))
        links[name] = {"mtu": int_or_none(info.get("mtu")),
                       "speed_mbps": speed if speed is not None and speed > 0 else None}
    return links


def net_sysctl_plan(wanted, namespaced, in_container=False):
    """The sysctl keys a node applies and those left to the host."""
    return network.sysctl_plan(dict(wanted or {}), list(namespaced or []), boolean(in_container, strict=False))


def ibstat(text, source=""):
    """ibstat output -> its CAs; a truncated output raises an error."""
    try:
        return rdma.parse_ibstat(text, source or None)["cas"]
    except ParseError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def net_rdma(nodes, min_rate_gbps=0):
    """Problems of the nodes' RDMA ports (state, rate, agreement across nodes)."""
    return network.rdma_problems(dict(nodes), float(min_rate_gbps or 0))


def node_addresses(nodes, hostvars):
    """Inventory names -> ``{name: address}``, each node's cluster address.

    A node's ``base_node_address`` where it is set, else the IPv4 address of
    its default route from its facts (``ansible_facts.default_ipv4``), else
    its ``ansible_host`` when that is an IP address (a run with ``--limit``
    has no facts of the other nodes: without this, a worker's server URL
    would turn into the server's name and its configuration would change),
    else ``""``: callers decide what a missing one means.
    """
    addresses = {}
    for name in nodes or []:
        node = hostvars[name] if name in hostvars else {}
        declared = node.get("base_node_address")
        if declared:
            addresses[name] = str(declared)
            continue
        route = ((node.get("ansible_facts") or {}).get("default_ipv4") or {}).get("address")
        addresses[name] = str(route) if route else _ip_or_empty(node.get("ansible_host"))
    return addresses


def _ip_or_empty(value) -> str:
    try:
        return str(ipaddress.ip_address(str(value))) if value else ""
    except ValueError:
        return ""


class FilterModule:
    """Link and RDMA checks across nodes, sysctl planning."""

    def filters(self):
        return {
            "net_links": net_links,
            "net_link_facts": net_link_facts,
            "net_sysctl_plan": net_sysctl_plan,
            "ibstat": ibstat,
            "net_rdma": net_rdma,
            "node_addresses": node_addresses,
        }
