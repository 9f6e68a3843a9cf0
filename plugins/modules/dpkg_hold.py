#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module dpkg_hold: hold (or release) several packages in one round trip."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: dpkg_hold
short_description: Hold or release several Debian packages at once
description:
  - Sets dpkg's selection of every package of O(names) to C(hold) (unattended upgrades and C(apt upgrade)
    leave them alone) or back to C(install).
  - Reads the current selections with one C(dpkg-query) and changes only the packages whose selection
    differs, with one C(apt-mark) call; reports C(changed) only then. One task for a whole list, where
    M(ansible.builtin.dpkg_selections) takes one package per task.
  - A package that is not installed fails the task, naming it (a hold on a package that is not there
    would protect nothing).
version_added: "0.1.0"
author:
  - Lockstep contributors (@lockstep)
options:
  names:
    description: The packages.
    type: list
    elements: str
    required: true
  selection:
    description: C(hold) to hold them, C(install) to release them.
    type: str
    choices: [hold, install]
    default: hold
attributes:
  check_mode:
    support: full
    description: Reports what would change and changes nothing.
  diff_mode:
    support: none
    description: No diff.
  platform:
    support: full
    platforms: debian
    description: Debian and Ubuntu (dpkg and apt-mark).
seealso:
  - module: ansible.builtin.dpkg_selections
"""

EXAMPLES = r"""
- name: Hold the driver packages
  lockstep.gpu.dpkg_hold:
    names: [cuda-drivers-535, nvidia-kernel-dkms, libcuda1]

- name: Release NCCL
  lockstep.gpu.dpkg_hold:
    names: [libnccl2, libnccl-dev]
    selection: install
"""

RETURN = r"""
changed_packages:
  description: The packages whose selection was (or, in check mode, would be) changed.
  returned: always
  type: list
  elements: str
  sample: [libnccl2]
selections:
  description: Every package's selection before the task.
  returned: always
  type: dict
  sample: {libnccl2: install, libnccl-dev: hold}
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402


def parse_selections(text: str) -> dict:
    """``dpkg-query -W -f '${Package}\\t${db:Status-Want}\\t${db:Status-Status}\\n'`` -> {name: (want, status)}."""
    found = {}
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) == 3 and fields[0]:
            found[fields[0]] = (fields[1], fields[2])
    return found


def main():
    module = AnsibleModule(
        argument_spec=dict(
            names=dict(type="list", elements="str", required=True),
            selection=dict(type="str", choices=["hold", "install"], default="hold"),
        ),
        supports_check_mode=True,
    )
    names = module.params["names"]
    wanted = module.params["selection"]
    if not names:
        module.exit_json(changed=False, changed_packages=[], selections={})
    query = module.get_bin_path("dpkg-query", required=True)
    rc, out, err = module.run_command(
        [query, "-W", "-f", "${Package}\t${db:Status-Want}\t${db:Status-Status}\n"] + names)
    found = parse_selections(out)
    missing = [n for n in names if n not in found or found[n][1] != "installed"]
    if missing:
        module.fail_json(msg=f"cannot {'hold' if wanted == 'hold' else 'release'} packages that are not installed: "
                             f"{', '.join(missing)}", selections={n: w for n, (w, _s) in found.items()})
    selections = {n: found[n][0] for n in names}
    change = [n for n in names if selections[n] != wanted]
    if change and not module.check_mode:
        mark = module.get_bin_path("apt-mark", required=True)
        module.run_command([mark, "hold" if wanted == "hold" else "unhold"] + change, check_rc=True)
    module.exit_json(changed=bool(change), changed_packages=change, selections=selections)


if __name__ == "__main__":
    main()
