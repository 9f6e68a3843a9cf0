#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module venv_check: whether pip would still have work in a virtual environment."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: venv_check
short_description: Tell whether a virtual environment already holds its requirements, without starting pip
description:
  - Reads the installed distributions' metadata of a virtual environment in one pass and names every reason
    C(pip install) would still have work there - a requirement not installed at a version it allows - and every
    broken dependency C(pip check) would report (a dependency of an installed distribution missing or at a version
    it does not allow; markers evaluated with no extra, pre-releases allowed).
  - Changes nothing. A role runs pip only when RV(problems) is not empty, instead of letting pip resolve every
    dependency again on every converge (role gpustack; about 150 distributions).
  - Whatever it cannot judge is a problem too, so that pip decides - a requirement with extras, an environment made
    by another Python than the one running the module, no C(packaging) module on the node.
version_added: "0.1.0"
author:
  - Lockstep contributors (@lockstep)
requirements:
  - The Python that made the environment runs the module, with C(packaging) (Debian's C(python3-packaging)).
options:
  venv:
    description: The virtual environment's folder (the one with C(pyvenv.cfg)).
    type: path
    required: true
  requirements:
    description: The requirements pip would be given, such as V(gpustack==2.3.0).
    type: list
    elements: str
    required: true
attributes:
  check_mode:
    support: full
    description: Reads only, in every mode.
  diff_mode:
    support: none
    description: No diff.
  platform:
    support: full
    platforms: posix
    description: Any node with the environment's Python.
seealso:
  - module: ansible.builtin.pip
"""

EXAMPLES = r"""
- name: Check whether the pinned GPUStack and its dependencies are installed
  lockstep.gpu.venv_check:
    venv: /opt/gpustack/venv
    requirements: [gpustack==2.3.0]
  register: installed

- name: Install the pinned GPUStack
  ansible.builtin.pip:
    name: [gpustack==2.3.0]
    virtualenv: /opt/gpustack/venv
  when: installed.problems | length > 0
"""

RETURN = r"""
problems:
  description: Every reason pip would still have work, one line each; empty when the environment holds everything.
  returned: always
  type: list
  elements: str
  sample: ["gpustack==2.3.0: 2.2.0 installed", "fastapi 0.115.0 requires starlette<0.39,>=0.37.2: not installed"]
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.lockstep.gpu.plugins.module_utils.venv_check import venv_problems  # noqa: E402


def main():
    module = AnsibleModule(
        argument_spec=dict(
            venv=dict(type="path", required=True),
            requirements=dict(type="list", elements="str", required=True),
        ),
        supports_check_mode=True,
    )
    module.exit_json(changed=False, problems=venv_problems(module.params["venv"], module.params["requirements"]))


if __name__ == "__main__":
    main()
