#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Install one conda environment from its lock entry (see scripts/conda-lock)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: conda_env
short_description: Install a conda environment exactly as its lock entry says
description:
  - Installs the environment I(name) at I(prefix) from one entry of the lock file
    written by C(scripts/conda-lock). Every conda package and wheel is taken from
    I(pkgs_dir) (conda packages) and I(pkgs_dir)C(/pip) (wheels) and checked against the
    lock's sha256. The conda role copies them there from the cluster cache
    (module conda_cache); with I(fetch=true) a missing file is fetched from its URL
    (conda) or the environment's pip index instead.
  - The conda packages are linked by py-rattler's installer (entry points, prefix
    replacement, noarch python, clobbering), from the wheel the lock pins (I(installer)),
    unpacked from I(pkgs_dir)C(/pip) and run in a child Python (3.10 or newer). Then the
    wheels are installed with the environment's pip, C(--require-hashes --no-deps --no-index).
  - Nothing is changed when the environment's C(conda-meta/lockstep-lock.sha256)
    equals the entry's sha256 and its packages are those recorded at install time.
    Otherwise the environment is rebuilt beside the old one and swapped in, so a
    missing package or a failed install leaves the installed environment working.
  - Writes C(conda-meta/lockstep-lock.sha256), which gpu_facts reports as lock_sha256.
version_added: "0.1.0"
author: Lockstep contributors (@lockstep)
options:
  name:
    description: Environment name (for messages).
    type: str
    required: true
  prefix:
    description: Where the environment is installed.
    type: path
    required: true
  lock:
    description: The environment's entry of the lock file.
    type: dict
    required: true
  installer:
    description: The lock file's C(installer) entry (the py-rattler wheel).
    type: dict
    required: true
  pkgs_dir:
    description: Package cache on the node; wheels are in its C(pip) folder.
    type: path
    default: /opt/conda/pkgs
  files_dir:
    description:
      - Where the package files are read, when not I(pkgs_dir) itself, e.g. the cluster cache
        mounted on every node (read only is enough); wheels in its C(pip) folder.
      - Nothing is fetched into it.
    type: path
  fetch:
    description:
      - Fetch a file missing from I(pkgs_dir) from its URL or pip index (no cluster cache).
      - When false, a missing file fails the task naming it.
    type: bool
    default: true
  timeout:
    description: Seconds a channel has to answer.
    type: int
    default: 30
notes:
  - Supports check mode.
  - "Credentials in a URL (C(user:password@), an C(/t/<token>/) path, a C(token=) or C(password=) query) are shown
    as C(***) in every failure message."
"""

EXAMPLES = r"""
- name: Install the train environment from the lock, from the copied cluster cache
  lockstep.gpu.conda_env:
    name: train
    prefix: /opt/conda/envs/train
    lock: "{{ conda_lock.environments.train }}"
    installer: "{{ conda_lock.installer }}"
    fetch: false
"""

RETURN = r"""
lock_sha256:
  description: sha256 of the lock entry, as written to conda-meta/lockstep-lock.sha256.
  type: str
  returned: always
packages_sha256:
  description: The installed packages' hash, as gpu_facts computes it.
  type: str
  returned: success
reason:
  description: Why the environment was (or would be) rebuilt; empty when it matched.
  type: str
  returned: always
"""

import json
import os
import shutil
import sys

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.lockstep.gpu.plugins.module_utils.conda import LOCK_HASH_FILE, entry_sha256, pip_requirements, scan_env
from ansible_collections.lockstep.gpu.plugins.module_utils.conda_install import (
    RATTLER_SCRIPT, InstallError, conda_file, installer_dir, missing_wheels, rattler_args)
from ansible_collections.lockstep.gpu.plugins.module_utils.redact import redact_urls

STATE = "lockstep-state.json"
# PYTHONPATH empty: the environment's Python must not see the module's.
PIP_ENV = {"PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1", "PIP_ROOT_USER_ACTION": "ignore",
           "PYTHONPATH": ""}


def run(module, cmd, what, env_name, data=None, environ=None):
    rc, out, err = module.run_command(cmd, data=data, binary_data=data is not None,
                                      environ_update=dict(PIP_ENV, **(environ or {})))
    if rc:
        raise InstallError("environment %s: %s failed: %s" % (env_name, what, (err or out).strip()[-3000:]))


def pip_fetch(module, name, entry, wheels, wheel_dir, timeout, fetch):
    """Put the environment's missing wheels in wheel_dir (pip download, require-hashes)."""
    pip = entry.get("pip") or {}
    missing = missing_wheels(pip.get("packages") or [], wheel_dir) + missing_wheels(wheels, wheel_dir)
    if not missing:
        return
    if not fetch:
        raise InstallError("environment %s: %s not in %s with the lock's sha256 (the conda role copies them "
                           "there from the cluster cache)"
                           % (name, ", ".join(w["filename"] for w in missing), wheel_dir))
    req = os.path.join(wheel_dir, ".lockstep-fetch-%s.txt" % name)
    with open(req, "w") as handle:
        handle.write(pip_requirements({"pip": {"packages": missing}}))
    source = ["--index-url", pip["index_url"]] if pip.get("index_url") else ["--no-index"]
    source += ["--find-links", pip["find_links"]] if pip.get("find_links") else []
    try:
        run(module, [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                     "--require-hashes", "--timeout", str(timeout), "-d", wheel_dir] + source + ["-r", req],
            "pip download from %s" % (pip.get("index_url") or pip.get("find_links")), name)
    finally:
        os.unlink(req)


def build(module, name, prefix, entry, installer, pkgs_dir, timeout, fetch, files_dir):
    wheel_dir = os.path.join(files_dir, "pip")
    for folder in (pkgs_dir, os.path.join(pkgs_dir, "pip")) + ((files_dir, wheel_dir) if fetch else ()):
        os.makedirs(folder, exist_ok=True)
    # Everything is fetched and checked before the old environment is touched.
    paths = [conda_file(pkg, files_dir, fetch, timeout, name) for pkg in entry["conda"]]
    pip_fetch(module, name, entry, [installer], wheel_dir, timeout, fetch)
    rattler = installer_dir(installer, wheel_dir, os.path.join(pkgs_dir, "pip"))
    staging, old = prefix + ".lockstep-new", prefix + ".lockstep-old"
    for stale in (staging, old):
        if os.path.lexists(stale):
            shutil.rmtree(stale)
    run(module, [sys.executable, "-c", RATTLER_SCRIPT], "py-rattler %s install" % installer["version"], name,
        data=rattler_args(paths, staging, prefix, os.path.join(pkgs_dir, ".rattler")),
        environ={"PYTHONPATH": rattler})
    pip = entry.get("pip") or {}
    if pip.get("packages"):
        req = os.path.join(staging, "conda-meta", "lockstep-pip-requirements.txt")
        with open(req, "w") as handle:
            handle.write(pip_requirements(entry))
    if os.path.lexists(prefix):
        os.rename(prefix, old)
    os.rename(staging, prefix)
    try:
        if pip.get("packages"):
            run(module, [os.path.join(prefix, "bin", "python"), "-m", "pip", "install", "-q", "--no-deps",
                         "--require-hashes", "--no-index", "--find-links", wheel_dir, "-r",
                         os.path.join(prefix, "conda-meta", "lockstep-pip-requirements.txt")], "pip install", name)
    except InstallError:
        shutil.rmtree(prefix)
        if os.path.lexists(old):
            os.rename(old, prefix)
        raise
    if os.path.lexists(old):
        shutil.rmtree(old)
    with open(os.path.join(prefix, "conda-meta", LOCK_HASH_FILE), "w") as handle:
        handle.write(entry["sha256"] + "\n")
    packages = scan_env(prefix)["packages_sha256"]
    with open(os.path.join(prefix, "conda-meta", STATE), "w") as handle:
        json.dump({"lock_sha256": entry["sha256"], "packages_sha256": packages}, handle)
    return packages


def current(prefix):
    """(lock hash, recorded packages hash, actual packages hash) of an installed env."""
    meta = os.path.join(prefix, "conda-meta")
    try:
        with open(os.path.join(meta, LOCK_HASH_FILE)) as handle:
            lock = handle.read().split()[0]
        with open(os.path.join(meta, STATE)) as handle:
            state = json.load(handle)
    except (OSError, ValueError, IndexError):
        return None
    return lock, state.get("packages_sha256"), scan_env(prefix)["packages_sha256"]


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type="str", required=True),
            prefix=dict(type="path", required=True),
            lock=dict(type="dict", required=True),
            installer=dict(type="dict", required=True),
            pkgs_dir=dict(type="path", default="/opt/conda/pkgs"),
            fetch=dict(type="bool", default=True),
            files_dir=dict(type="path"),
            timeout=dict(type="int", default=30),
        ),
        supports_check_mode=True,
    )
    p = module.params
    entry, name, prefix = p["lock"], p["name"], p["prefix"].rstrip("/")
    want = entry_sha256(entry)
    if entry.get("sha256") != want:
        module.fail_json(msg="environment %s: its lock entry was edited (sha256 %s, content %s): "
                             "run scripts/conda-lock again" % (name, entry.get("sha256"), want),
                         lock_sha256=want, reason="")
    have = current(prefix)
    if have is None:
        reason = "not installed" if not os.path.exists(prefix) else "not installed from a lock"
    elif have[0] != want:
        reason = "installed from lock %s, the lock is now %s" % (have[0], want)
    elif have[1] != have[2]:
        reason = "packages differ from the lock (packages_sha256 %s, installed as %s)" % (have[2], have[1])
    else:
        module.exit_json(changed=False, lock_sha256=want, packages_sha256=have[2], reason="")
    if module.check_mode:
        module.exit_json(changed=True, lock_sha256=want, reason=reason)
    try:
        packages = build(module, name, prefix, entry, p["installer"], p["pkgs_dir"], p["timeout"],
                         p["fetch"] and not p["files_dir"], p["files_dir"] or p["pkgs_dir"])
    except (InstallError, OSError, ValueError) as exc:
        module.fail_json(msg=redact_urls(exc), lock_sha256=want, reason=reason)
    module.exit_json(changed=True, lock_sha256=want, packages_sha256=packages, reason=reason)


if __name__ == "__main__":
    main()
