# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the nccl role and playbooks/nccl_health.yml.

- ``lockstep_nccl_conf_problems(settings, interfaces=None, hcas=None)``:
  messages for unknown NCCL_ keys, bad values, and interface or HCA names
  the node does not have (empty list: the settings are good).
- ``lockstep_nccl_hca_ports(paths)``: ``{hca: [ports]}`` from the sysfs
  paths ``.../<hca>/ports/<n>`` the role finds.
- ``lockstep_nccl_conf_render(settings, header='')``: the text of
  /etc/nccl.conf.
- ``lockstep_nccl_busbw(text, thresholds, source='')``: parse an
  all_reduce_perf output and compare its average bus bandwidth with the
  per-GPU-model thresholds (see lockstep_nccl.check_bus_bandwidth); a
  truncated or unreadable output raises an error naming what is missing.

The logic lives in plugins/module_utils (lockstep_nccl_conf, lockstep_nccl),
loaded here from the sibling directory as Ansible loads it for modules.
"""

from __future__ import annotations

import os
import re

import ansible.module_utils
from ansible.errors import AnsibleFilterError

_MODULE_UTILS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils")
if _MODULE_UTILS not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(_MODULE_UTILS)

from ansible.module_utils.lockstep_errors import ParseError  # noqa: E402
from ansible.module_utils import lockstep_nccl, lockstep_nccl_conf  # noqa: E402


def lockstep_nccl_conf_problems(settings, interfaces=None, hcas=None):
    if interfaces is not None:
        interfaces = list(interfaces)
    if hcas is not None:
        hcas = {str(k): [int(p) for p in v] for k, v in dict(hcas).items()}
    return lockstep_nccl_conf.check_settings(dict(settings or {}), interfaces, hcas)


def lockstep_nccl_hca_ports(paths):
    """``[".../mlx5_0/ports/1", ...]`` (sysfs) -> ``{"mlx5_0": [1, ...]}``."""
    hcas = {}
    for path in paths or []:
        match = re.search(r"([^/]+)/ports/(\d+)/?$", str(path))
        if match:
            hcas.setdefault(match.group(1), []).append(int(match.group(2)))
    return {name: sorted(set(ports)) for name, ports in hcas.items()}


def lockstep_nccl_conf_render(settings, header=""):
    return lockstep_nccl_conf.render(dict(settings or {}), header)


def lockstep_nccl_busbw(text, thresholds, source=""):
    try:
        result = lockstep_nccl.parse_all_reduce_perf(text, source or None)
        return lockstep_nccl.check_bus_bandwidth(result, list(thresholds or []), source or None)
    except ParseError as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule:
    def filters(self):
        return {
            "lockstep_nccl_conf_problems": lockstep_nccl_conf_problems,
            "lockstep_nccl_conf_render": lockstep_nccl_conf_render,
            "lockstep_nccl_hca_ports": lockstep_nccl_hca_ports,
            "lockstep_nccl_busbw": lockstep_nccl_busbw,
        }
