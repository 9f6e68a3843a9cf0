#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fetch a conda lock's packages once into the cluster cache (on the controller)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: conda_cache
short_description: Fetch every package of a conda lock once into the cluster cache
description:
  - Makes the directory I(dir) hold every conda package and wheel that the environments
    I(environments) of the lock I(lock) install, plus the py-rattler wheel the nodes
    install with, each checked against the lock's sha256. Conda packages are fetched from
    their URL, wheels with C(pip download --require-hashes) from the environment's pip
    index; a wheel the lock step built from an sdist is built again from that sdist,
    reproducibly, and must give the lock's sha256.
  - "Meant to run once per cluster on the controller (C(delegate_to: localhost),
    C(run_once: true)); the conda role then copies the files to the nodes, which never
    download the environment themselves."
  - A file already in the cache is checked once; a marker in C(.sha256/) records the check.
version_added: "0.2.0"
author: Lockstep contributors (@lockstep)
options:
  dir:
    description: The cluster cache directory.
    type: path
    required: true
  lock:
    description: The lock file's content (scripts/conda-lock).
    type: dict
    required: true
  environments:
    description: Environments whose files are needed; all of the lock's when omitted.
    type: list
    elements: str
  timeout:
    description: Seconds a channel has to answer.
    type: int
    default: 30
notes:
  - Supports check mode (reports what would be fetched, fetches nothing).
"""

EXAMPLES = r"""
- name: Fetch the train environment once for the cluster
  lockstep.gpu.conda_cache:
    dir: "{{ inventory_dir }}/.conda-cache"
    lock: "{{ lookup('ansible.builtin.file', inventory_dir + '/conda-lock.yml') | from_yaml }}"
    environments: [train]
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
fetched:
  description: Files fetched (or built) now, relative to I(dir).
  type: list
  elements: str
  returned: always
bytes:
  description: Bytes fetched from outside now (channels, pip index).
  type: int
  returned: always
files:
  description: For each environment, the files it installs, relative to I(dir) (wheels under C(pip/)).
  type: dict
  returned: always
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.lockstep.gpu.plugins.module_utils.conda_cache import CacheError, cache_files, fill
from ansible_collections.lockstep.gpu.plugins.module_utils.redact import redact_urls


def main():
    module = AnsibleModule(
        argument_spec=dict(
            dir=dict(type="path", required=True),
            lock=dict(type="dict", required=True),
            environments=dict(type="list", elements="str"),
            timeout=dict(type="int", default=30),
        ),
        supports_check_mode=True,
    )
    p = module.params
    lock, names = p["lock"], p["environments"]
    unknown = sorted(set(names or []) - set(lock.get("environments", {})))
    if unknown:
        module.fail_json(msg="environments %s are not in the lock: run scripts/conda-lock" % ", ".join(unknown))
    files = {n: cache_files(lock, [n]) for n in sorted(lock.get("environments", {})) if names is None or n in names}
    if module.check_mode:
        missing = sorted({f for fs in files.values() for f in fs if not os.path.isfile(os.path.join(p["dir"], f))})
        module.exit_json(changed=bool(missing), fetched=missing, bytes=0, files=files)
    try:
        result = fill(p["dir"], lock, names, p["timeout"])
    except (CacheError, OSError) as exc:
        module.fail_json(msg="cluster cache %s: %s" % (p["dir"], redact_urls(str(exc))), fetched=[], bytes=0,
                         files=files)
    module.exit_json(changed=bool(result["fetched"]), **result)


if __name__ == "__main__":
    main()
