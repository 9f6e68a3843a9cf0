#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Documentation of the action plugin lockstep.gpu.apt (plugins/action/apt.py)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: apt
short_description: ansible.builtin.apt that waits for the dpkg lock, a bounded number of times
description:
  - Runs M(ansible.builtin.apt) with the same options. Its O(ansible.builtin.apt#module:lock_timeout) is
    the variable C(apt_repo_lock_timeout) (seconds, default 120) unless the task sets it.
  - While another process holds the dpkg or apt lock (C(/var/lib/dpkg/lock-frontend), C(/var/lib/dpkg/lock),
    C(/var/lib/apt/lists/lock); unattended-upgrades at a node's first boot, an admin's C(apt)), it runs
    M(ansible.builtin.apt) again, up to C(apt_repo_lock_retries) more times (default 2), each waiting
    C(apt_repo_lock_timeout) seconds.
  - When the lock is still held it fails saying so, with the lock, the process holding it as apt names it,
    the node, and the variables to raise; M(ansible.builtin.apt)'s own message follows.
  - Both variables are the cluster contract's (the internal role C(lockstep.gpu.cluster), which every Lockstep role
    depends on, C(roles/cluster/defaults/main.yml)), read from the task's variables; every apt task of Lockstep's
    roles runs through this action. Without them (a play with neither that role nor a Lockstep role) it fails
    naming them.
version_added: "0.1.0"
author:
  - Lockstep contributors (@lockstep)
options:
  name:
    description: Packages, as M(ansible.builtin.apt) takes them (C(name=version) pins a version).
    type: list
    elements: str
    aliases: [package, pkg]
  state:
    description: As M(ansible.builtin.apt).
    type: str
  update_cache:
    description: As M(ansible.builtin.apt).
    type: bool
  lock_timeout:
    description:
      - Seconds apt waits for the lock on each try; the variable C(apt_repo_lock_timeout) when not set.
    type: int
  install_recommends:
    description: As M(ansible.builtin.apt).
    type: bool
  allow_downgrade:
    description: As M(ansible.builtin.apt).
    type: bool
  allow_change_held_packages:
    description: As M(ansible.builtin.apt).
    type: bool
notes:
  - Every other option of M(ansible.builtin.apt) is passed through as it is.
attributes:
  check_mode:
    support: full
    description: As M(ansible.builtin.apt).
  diff_mode:
    support: full
    description: As M(ansible.builtin.apt).
  platform:
    support: full
    platforms: debian
    description: Debian and Ubuntu.
seealso:
  - module: ansible.builtin.apt
"""

EXAMPLES = r"""
- name: Install the base packages, waiting for unattended-upgrades if it holds the dpkg lock
  lockstep.gpu.apt:
    name: [git, curl]
    state: present
    install_recommends: false
"""

RETURN = r"""
msg:
  description: M(ansible.builtin.apt)'s message; on a lock still held, which lock, its holder, the node and the variables to raise.
  returned: always
  type: str
"""
