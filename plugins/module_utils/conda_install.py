# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Installing a conda environment on a node (the conda_env module): the
package files, sha256-checked, from the node's package cache (where the
conda role copied the cluster cache) or, without a cluster cache, from their
URLs; conda packages linked by py-rattler's installer (entry points, prefix
replacement in text and binary files, noarch python, clobbering: what a
hand-written extractor gets wrong), its wheel unpacked from the same cache
and run in a child Python; then the pip wheels with pip itself."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import zipfile

from ansible.module_utils.urls import open_url

# Run by the node's Python with the py-rattler wheel on PYTHONPATH. A child
# process, and os._exit: py-rattler 0.28's runtime threads can crash an
# interpreter that finalizes after using it.
RATTLER_SCRIPT = r"""
import asyncio, json, os, sys
import rattler
args = json.loads(sys.stdin.read())
async def main():
    records = [await rattler.RepoDataRecord.from_package_archive(p) for p in args["paths"]]
    await rattler.install(records, target_prefix=args["staging"], cache_dir=args["cache"],
                          installed_packages=[], show_progress=False, execute_link_scripts=False,
                          alternative_target_prefix=args["prefix"])
code = 0
try:
    asyncio.run(main())
except Exception as exc:
    sys.stderr.write("%s: %s\n" % (type(exc).__name__, exc))
    code = 1
sys.stdout.flush(); sys.stderr.flush()
os._exit(code)
"""


class InstallError(Exception):
    """A failed install; the caller redacts credentials from its message."""


def sha256_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def conda_file(pkg, pkgs_dir, fetch, timeout, env):
    """The package file in pkgs_dir, sha256-checked; fetched from its URL when allowed."""
    path = os.path.join(pkgs_dir, pkg["fn"])
    if os.path.isfile(path) and sha256_file(path) == pkg["sha256"]:
        return path
    if not fetch:
        raise InstallError("environment %s: %s is not in %s with sha256 %s (the conda role copies it there "
                           "from the cluster cache)" % (env, pkg["fn"], pkgs_dir, pkg["sha256"]))
    fd, tmp = tempfile.mkstemp(dir=pkgs_dir, prefix=".fetch-")
    try:
        with os.fdopen(fd, "wb") as out:
            try:
                with open_url(pkg["url"], timeout=timeout) as resp:
                    shutil.copyfileobj(resp, out, 1 << 20)
            except Exception as exc:  # pylint: disable=broad-except
                raise InstallError("environment %s: channel %s does not answer: cannot fetch %s: %s"
                                   % (env, pkg.get("channel", "?"), pkg["url"], getattr(exc, "reason", exc)))
        got = sha256_file(tmp)
        if got != pkg["sha256"]:
            raise InstallError("environment %s: %s has sha256 %s, the lock says %s"
                               % (env, pkg["url"], got, pkg["sha256"]))
        os.rename(tmp, path)
        return path
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def missing_wheels(wheels, wheel_dir):
    """The wheels not in wheel_dir with their lock sha256."""
    return [w for w in wheels
            if not (os.path.isfile(os.path.join(wheel_dir, w["filename"]))
                    and sha256_file(os.path.join(wheel_dir, w["filename"])) == w["sha256"])]


def installer_dir(installer, wheel_dir, unpack_dir):
    """py-rattler's wheel (in wheel_dir) unpacked once under unpack_dir; the directory for PYTHONPATH."""
    wheel = os.path.join(wheel_dir, installer["filename"])
    target = os.path.join(unpack_dir, ".installer", "%s-%s" % (installer["name"], installer["version"]))
    stamp = os.path.join(target, ".lockstep-sha256")
    try:
        with open(stamp) as handle:
            if handle.read().strip() == installer["sha256"]:
                return target
    except OSError:
        pass
    if not os.path.isfile(wheel) or sha256_file(wheel) != installer["sha256"]:
        raise InstallError("the installer %s is not in %s with sha256 %s"
                           % (installer["filename"], wheel_dir, installer["sha256"]))
    if os.path.lexists(target):
        shutil.rmtree(target)
    with zipfile.ZipFile(wheel) as zf:
        for member in zf.namelist():
            if member.startswith("/") or ".." in member.split("/"):
                raise InstallError("%s: unsafe path %s" % (wheel, member))
        zf.extractall(target)
    with open(stamp, "w") as handle:
        handle.write(installer["sha256"] + "\n")
    return target


def rattler_args(paths, staging, prefix, cache):
    return json.dumps({"paths": paths, "staging": staging, "prefix": prefix, "cache": cache})
