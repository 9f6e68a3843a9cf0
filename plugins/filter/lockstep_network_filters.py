# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the network role.

- ``lockstep_net_links(nodes, interfaces, expected_mtu, min_speed_mbps,
  unknown_speed)``: problems and warnings of the nodes' links (MTU the same
  everywhere or as declared, speed the same everywhere and at least the
  minimum), see lockstep_net.link_problems.
- ``lockstep_net_link_facts(ansible_facts, names)``: ``{name: {"mtu",
  "speed_mbps"}}`` of the named interfaces (speed None where the link
  reports none).
- ``lockstep_net_sysctl_plan(wanted, namespaced, in_container)``: the
  sysctl keys a node applies and those left to the host (in a container only
  the per-network-namespace keys are applied).
- ``lockstep_ibstat(text, source='')``: ibstat output parsed by
  lockstep_rdma.parse_ibstat (its CAs); a truncated output raises an error.
- ``lockstep_net_rdma(nodes, min_rate_gbps)``: problems of the nodes' RDMA
  ports, see lockstep_net.rdma_problems.
"""

from __future__ import annotations

import os

import ansible.module_utils
from ansible.errors import AnsibleFilterError

_MODULE_UTILS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils")
if _MODULE_UTILS not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(_MODULE_UTILS)

from ansible.module_utils.lockstep_errors import ParseError  # noqa: E402
from ansible.module_utils import lockstep_net, lockstep_rdma  # noqa: E402


def lockstep_net_links(nodes, interfaces, expected_mtu=None, min_speed_mbps=0, unknown_speed="fail"):
    try:
        return lockstep_net.link_problems(
            dict(nodes), interfaces, dict(expected_mtu or {}), int(min_speed_mbps or 0), unknown_speed
        )
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def lockstep_net_link_facts(facts, names):
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
        speed = lockstep_net._int_or_none(info.get("speed"))
        links[name] = {"mtu": lockstep_net._int_or_none(info.get("mtu")),
                       "speed_mbps": speed if speed is not None and speed > 0 else None}
    return links


def lockstep_net_sysctl_plan(wanted, namespaced, in_container=False):
    from ansible.module_utils.parsing.convert_bool import boolean

    return lockstep_net.sysctl_plan(dict(wanted or {}), list(namespaced or []), boolean(in_container, strict=False))


def lockstep_ibstat(text, source=""):
    try:
        return lockstep_rdma.parse_ibstat(text, source or None)["cas"]
    except ParseError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def lockstep_net_rdma(nodes, min_rate_gbps=0):
    return lockstep_net.rdma_problems(dict(nodes), float(min_rate_gbps or 0))


class FilterModule:
    def filters(self):
        return {
            "lockstep_net_links": lockstep_net_links,
            "lockstep_ibstat": lockstep_ibstat,
            "lockstep_net_link_facts": lockstep_net_link_facts,
            "lockstep_net_sysctl_plan": lockstep_net_sysctl_plan,
            "lockstep_net_rdma": lockstep_net_rdma,
        }
