#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module preflight_probe: what the preflight's rules need from one node, read in one call."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: preflight_probe
short_description: Read what the preflight's rules need from a node, in one call, changing nothing
description:
  - The action M(lockstep.gpu.preflight) runs this module once per node with the merged requests of every
    checked role's rules (plugins/plugin_utils/preflight/<role>.py), instead of a stat, slurp or getent
    task per question.
  - Always answers the node's network interfaces (MTU, addresses, state, speed), RDMA devices and their
    ports, listening sockets, total memory, container markers and whether it runs in a container; then
    each requested path, file, name, package, user and TCP connection.
  - Only reads; supports check mode.
version_added: "0.1.0"
author:
  - Lockstep contributors (@lockstep)
options:
  paths:
    description: Paths whose existence is asked.
    type: list
    elements: str
    default: []
  hca_roots:
    description: Directories laid out as /sys/class/infiniband (a stand-in's) whose RDMA devices and ports are asked.
    type: list
    elements: str
    default: []
  read:
    description: Files whose text is asked (up to 1 MiB each; larger or absent ones are answered null).
    type: list
    elements: str
    default: []
  resolve:
    description: Names to resolve with the node's resolver.
    type: list
    elements: str
    default: []
  packages:
    description: Debian packages whose installed version is asked (dpkg's status only).
    type: list
    elements: str
    default: []
  users:
    description: User names whose existence is asked.
    type: list
    elements: str
    default: []
  connect:
    description: C(host:port) targets to open a TCP connection to (3 s timeout), and close.
    type: list
    elements: str
    default: []
attributes:
  check_mode:
    support: full
    description: It only reads, in check mode too.
  diff_mode:
    support: none
    description: Nothing changes, so there is no diff.
"""

EXAMPLES = r"""
- name: Read the node once for the preflight's rules
  lockstep.gpu.preflight_probe:
    paths: [/usr/share/zoneinfo/Europe/Berlin]
    read: [/usr/share/i18n/SUPPORTED]
    users: [alice]
  register: probe
"""

RETURN = r"""
interfaces:
  description: "The network interfaces: {name: {mtu, addresses, up, speed (Mb/s or null)}}."
  returned: always
  type: dict
hcas:
  description: "RDMA devices and their ports: {mlx5_0: ['1']}."
  returned: always
  type: dict
listening:
  description: Listening TCP and bound UDP sockets, each with proto, address, port and process ("" when unknown).
  returned: always
  type: list
  elements: dict
memory_mb:
  description: MemTotal in MiB.
  returned: always
  type: int
virtualization:
  description: C(container) when the node is a container (systemd-detect-virt -c), else empty.
  returned: always
  type: str
markers:
  description: Whether /.dockerenv and /run/.containerenv exist.
  returned: always
  type: dict
hcas_at:
  description: "{directory: {device: [ports]}} of the requested hca_roots."
  returned: always
  type: dict
paths:
  description: "{path: exists} of the requested paths."
  returned: always
  type: dict
read:
  description: "{path: text or null} of the requested files."
  returned: always
  type: dict
resolved:
  description: "{name: [addresses]} ([] when the name does not resolve)."
  returned: always
  type: dict
packages:
  description: "{package: installed version, or empty}."
  returned: always
  type: dict
users:
  description: "{user: exists}."
  returned: always
  type: dict
connect:
  description: "{host:port: empty when a connection succeeded, else the error}."
  returned: always
  type: dict
"""

import json

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.lockstep.gpu.plugins.module_utils.preflight_probe import answer

_LIST = {"type": "list", "elements": "str", "default": []}


def _ip_json(module):
    """`ip -j addr show` parsed, or None where iproute2 is missing or fails."""
    ip = module.get_bin_path("ip")
    if not ip:
        return None
    rc, out, _err = module.run_command([ip, "-j", "addr", "show"])
    try:
        return json.loads(out) if rc == 0 else None
    except ValueError:
        return None


def _virtualization(module) -> str:
    detect = module.get_bin_path("systemd-detect-virt")
    if not detect:
        return ""
    rc, out, _err = module.run_command([detect, "-c"])
    return "container" if rc == 0 and out.strip() not in ("", "none") else ""


def main():
    module = AnsibleModule(argument_spec={name: dict(_LIST) for name in
                                          ("paths", "read", "hca_roots", "resolve", "packages", "users", "connect")},
                           supports_check_mode=True)
    result = answer(module.params, _ip_json(module))
    result["virtualization"] = _virtualization(module)
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
