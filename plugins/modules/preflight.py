#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Documentation of the action plugin lockstep.gpu.preflight (plugins/action/preflight.py)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: preflight
short_description: Check the whole inventory with the roles' Python rules, naming every problem in one failure
description:
  - "Runs on the controller. O(phase=node), on every node: renders the checked roles' values for the node as
    the roles would see them (their defaults and vars under the inventory and extra vars), validates them
    against each role's argument spec (entry point C(preflight)) and the cluster contract's, and runs
    M(lockstep.gpu.preflight_probe) ONCE on the node with what every role's rules need read there. It never
    fails on a bad value: it returns the values, the problems and the probe's answer."
  - "O(phase=cluster), once (C(run_once)): reads every node's O(phase=node) result from
    C(hostvars[node][result]), runs every role's rules (plugins/plugin_utils/preflight/<role>.py) over the
    whole play and fails once with one report naming node, variable, value and what is allowed for every
    problem."
  - Changes nothing on any node.
version_added: "0.1.0"
author:
  - Lockstep contributors (@lockstep)
options:
  phase:
    description: Which step (see above).
    type: str
    choices: [node, cluster]
    default: node
  roles:
    description: The roles whose values and rules are checked (role preflight's C(preflight_roles)).
    type: list
    elements: str
    required: true
  gpu_group:
    description: The GPU roles (nvidia_driver, cuda, nccl) are checked on this group's nodes only.
    type: str
    default: gpu
  result:
    description: With O(phase=cluster), the variable each node registered its O(phase=node) result in.
    type: str
    default: preflight_node
attributes:
  check_mode:
    support: full
    description: It only reads, in check mode too.
  diff_mode:
    support: none
    description: Nothing changes, so there is no diff.
"""

EXAMPLES = r"""
- name: Read each node's values and state (one probe per node)
  lockstep.gpu.preflight:
    phase: node
    roles: [base, nccl]
  register: preflight_node

- name: Check the whole inventory, naming every problem at once
  lockstep.gpu.preflight:
    phase: cluster
    roles: [base, nccl]
    result: preflight_node
  run_once: true
"""

RETURN = r"""
values:
  description: With O(phase=node), the node's valid values, converted to the argument specs' types.
  returned: phase node
  type: dict
problems:
  description: With O(phase=node), the node's argument-spec problems (variable, value, allowed, node).
  returned: phase node
  type: list
  elements: dict
probe:
  description: With O(phase=node), M(lockstep.gpu.preflight_probe)'s answer.
  returned: phase node
  type: dict
msg:
  description: With O(phase=cluster), the report of every problem, or how many nodes were checked.
  returned: phase cluster
  type: str
"""
