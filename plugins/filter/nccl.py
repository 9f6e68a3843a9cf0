# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the nccl role and the nccl_health role: lockstep.gpu.nccl_conf_problems,
nccl_conf_render, nccl_hca_ports, nccl_busbw. Each filter's documentation is
the YAML file of its name beside this one."""

from __future__ import annotations

import re

from ansible.errors import AnsibleFilterError
from ansible_collections.lockstep.gpu.plugins.module_utils import nccl, nccl_conf
from ansible_collections.lockstep.gpu.plugins.module_utils.parsing import ParseError
from ansible_collections.lockstep.gpu.plugins.plugin_utils.nccl_health import check_bus_bandwidth


def nccl_conf_problems(settings, interfaces=None, hcas=None):
    """Messages for unknown NCCL_ keys, bad values and missing interfaces or HCAs."""
    if interfaces is not None:
        interfaces = list(interfaces)
    if hcas is not None:
        hcas = {str(k): [int(p) for p in v] for k, v in dict(hcas).items()}
    return nccl_conf.check_settings(dict(settings or {}), interfaces, hcas)


def nccl_hca_ports(paths):
    """``[".../mlx5_0/ports/1", ...]`` (sysfs) -> ``{"mlx5_0": [1, ...]}``."""
    hcas = {}
    for path in paths or []:
        match = re.search(r"([^/]+)/ports/(\d+)/?$", str(path))
        if match:
            hcas.setdefault(match.group(1), []).append(int(match.group(2)))
    return {name: sorted(set(ports)) for name, ports in hcas.items()}


def nccl_conf_render(settings, header=""):
    """The text of /etc/nccl.conf."""
    return nccl_conf.render(dict(settings or {}), header)


def nccl_busbw(text, thresholds, source=""):
    """Parse an all_reduce_perf output and compare it with the bus bandwidth thresholds."""
    try:
        result = nccl.parse_all_reduce_perf(text, source or None)
        return check_bus_bandwidth(result, list(thresholds or []), source or None)
    except ParseError as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule:
    """nccl.conf checks and rendering, all_reduce_perf bus bandwidth."""

    def filters(self):
        return {
            "nccl_conf_problems": nccl_conf_problems,
            "nccl_conf_render": nccl_conf_render,
            "nccl_hca_ports": nccl_hca_ports,
            "nccl_busbw": nccl_busbw,
        }
