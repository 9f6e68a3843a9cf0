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
    written by C(scripts/conda-lock). Every conda package is fetched from its URL
    (http, https or file) into I(pkgs_dir), its sha256 checked, and extracted
    (C(.tar.bz2); C(.conda) needs the Python module zstandard), with prefix
    placeholders and noarch python packages handled; then the pip packages are
    installed with C(pip install --require-hashes --no-deps).
  - Nothing is changed when the environment's C(conda-meta/lockstep-lock.sha256)
    equals the entry's sha256 and its packages are those recorded at install time.
    Otherwise the environment is rebuilt beside the old one and swapped in, so a
    channel that does not answer leaves the installed environment working.
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
  pkgs_dir:
    description: Package cache.
    type: path
    default: /opt/conda/pkgs
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
- name: Install the train environment from the lock
  lockstep.gpu.conda_env:
    name: train
    prefix: /opt/conda/envs/train
    lock: "{{ (lookup('ansible.builtin.file', 'conda-lock.yml') | from_yaml).environments.train }}"
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

import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import zipfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import open_url
from ansible_collections.lockstep.gpu.plugins.module_utils.conda import LOCK_HASH_FILE, entry_sha256, pip_requirements, scan_env
from ansible_collections.lockstep.gpu.plugins.module_utils.redact import redact_urls

STATE = "lockstep-state.json"


class InstallError(Exception):
    """A failed install; its message never carries a URL's credentials."""

    def __init__(self, message):
        super().__init__(redact_urls(message))


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch(pkg, pkgs_dir, timeout, env):
    """The package file in the cache, downloaded and sha256-checked if needed."""
    path = os.path.join(pkgs_dir, pkg["fn"])
    if os.path.isfile(path) and _sha256(path) == pkg["sha256"]:
        return path
    fd, tmp = tempfile.mkstemp(dir=pkgs_dir, prefix=".fetch-")
    try:
        with os.fdopen(fd, "wb") as out:
            try:
                with open_url(pkg["url"], timeout=timeout) as resp:
                    shutil.copyfileobj(resp, out)
            except Exception as exc:  # pylint: disable=broad-except
                raise InstallError(
                    "environment %s: channel %s does not answer: cannot fetch %s: %s"
                    % (env, pkg.get("channel", "?"), pkg["url"], getattr(exc, "reason", exc)))
        got = _sha256(tmp)
        if got != pkg["sha256"]:
            raise InstallError("environment %s: %s has sha256 %s, the lock says %s"
                               % (env, pkg["url"], got, pkg["sha256"]))
        os.rename(tmp, path)
        return path
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _tar_members(path):
    """(tarfile, member) pairs of a package, info/ first."""
    if path.endswith(".tar.bz2"):
        tar = tarfile.open(path, "r:bz2")
        yield from ((tar, m) for m in tar.getmembers())
        return
    if not path.endswith(".conda"):
        raise InstallError("%s: unknown package format" % path)
    try:
        import zstandard  # pylint: disable=import-outside-toplevel
    except ImportError:
        raise InstallError("%s is a .conda package: install python3-zstandard on the node "
                           "(conda_node_packages)" % path)
    with zipfile.ZipFile(path) as zf:
        names = sorted(zf.namelist(), key=lambda n: not n.startswith("info-"))
        for inner in names:
            if not inner.endswith(".tar.zst"):
                continue
            data = zstandard.ZstdDecompressor().decompressobj().decompress(zf.read(inner))
            tar = tarfile.open(fileobj=io.BytesIO(data), mode="r:")
            yield from ((tar, m) for m in tar.getmembers())


def _replace_prefix(path, placeholder, prefix, mode):
    with open(path, "rb") as handle:
        data = handle.read()
    old, new = placeholder.encode(), prefix.encode()
    if old not in data:
        return
    if mode == "binary":
        if len(new) > len(old):
            raise InstallError("%s: prefix %s is longer than the package's placeholder" % (path, prefix))

        def pad(match):
            text = match.group()
            return text.replace(old, new) + b"\0" * ((len(old) - len(new)) * text.count(old))
        data = re.sub(re.escape(old) + b"([^\0]*?)\0", pad, data)
    else:
        data = data.replace(old, new)
    st = os.lstat(path)
    with open(path, "wb") as handle:
        handle.write(data)
    os.chmod(path, st.st_mode & 0o7777)


def extract(path, pkg, staging, prefix, python):
    """Unpack one package into staging; return its conda-meta record."""
    info, files = {}, []
    site = "lib/python%s/site-packages/" % python
    members = list(_tar_members(path))
    for tar, member in members:
        if member.isfile() and member.name in ("info/index.json", "info/has_prefix",
                                               "info/paths.json", "info/link.json"):
            info[member.name] = tar.extractfile(member).read().decode("utf-8")
    noarch = json.loads(info.get("info/index.json", "{}")).get("noarch") == "python"
    for tar, member in members:
        name = member.name
        if name.startswith("/") or ".." in name.split("/"):
            raise InstallError("%s: unsafe path %s" % (path, name))
        if name.startswith("info/"):
            continue
        if noarch and name.startswith("site-packages/"):
            name = site + name[len("site-packages/"):]
        elif noarch and name.startswith("python-scripts/"):
            name = "bin/" + name[len("python-scripts/"):]
        member.name = name
        if member.isdir():
            os.makedirs(os.path.join(staging, name), exist_ok=True)
            continue
        target = os.path.join(staging, name)
        if os.path.lexists(target):
            os.unlink(target)
        tar.extract(member, staging, set_attrs=not member.issym())
        files.append(name)
    index = json.loads(info.get("info/index.json", "{}"))
    placeholders = []
    for line in info.get("info/has_prefix", "").splitlines():
        parts = line.strip().split()
        if len(parts) == 3:
            placeholders.append((parts[0].strip("\"'"), parts[1], parts[2].strip("\"'")))
        elif len(parts) == 1:
            placeholders.append(("/opt/anaconda1anaconda2anaconda3", "text", parts[0]))
    if not placeholders and "info/paths.json" in info:
        for entry in json.loads(info["info/paths.json"]).get("paths", []):
            if entry.get("prefix_placeholder"):
                placeholders.append((entry["prefix_placeholder"], entry.get("file_mode", "text"),
                                     entry["_path"]))
    for placeholder, mode, rel in placeholders:
        full = os.path.join(staging, rel)
        if os.path.isfile(full) and not os.path.islink(full):
            _replace_prefix(full, placeholder, prefix, mode)
    if index.get("noarch") == "python" and "info/link.json" in info:
        points = json.loads(info["info/link.json"]).get("noarch", {}).get("entry_points", [])
        for point in points:
            cmd, target = [s.strip() for s in point.split("=", 1)]
            module, func = target.split(":")
            script = os.path.join(staging, "bin", cmd)
            os.makedirs(os.path.dirname(script), exist_ok=True)
            with open(script, "w") as handle:
                handle.write("#!%s/bin/python\nimport sys\nfrom %s import %s\nsys.exit(%s())\n"
                             % (prefix, module, func.split(".")[0], func))
            os.chmod(script, 0o755)
            files.append("bin/" + cmd)
    record = dict(index, url=pkg["url"], sha256=pkg["sha256"], fn=pkg["fn"],
                  channel=pkg.get("channel"), files=sorted(files))
    return record


def pip_env():
    env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1",
               PIP_ROOT_USER_ACTION="ignore")
    env.pop("PYTHONPATH", None)
    return env


def run(cmd, what, env_name):
    out = subprocess.run(cmd, capture_output=True, text=True, env=pip_env(), check=False)
    if out.returncode:
        raise InstallError("environment %s: %s failed: %s" % (env_name, what, (out.stderr or out.stdout).strip()))


def build(module, name, prefix, entry, pkgs_dir, timeout):
    os.makedirs(pkgs_dir, exist_ok=True)
    paths = [fetch(pkg, pkgs_dir, timeout, name) for pkg in entry["conda"]]
    staging, old = prefix + ".lockstep-new", prefix + ".lockstep-old"
    for stale in (staging, old):
        if os.path.lexists(stale):
            shutil.rmtree(stale)
    os.makedirs(os.path.join(staging, "conda-meta"))
    for pkg, path in zip(entry["conda"], paths):
        record = extract(path, pkg, staging, prefix, entry["python"])
        with open(os.path.join(staging, "conda-meta", "%s-%s-%s.json"
                               % (pkg["name"], pkg["version"], pkg["build"])), "w") as handle:
            json.dump(record, handle, indent=1, sort_keys=True)
    pip = entry.get("pip") or {}
    req = os.path.join(staging, "conda-meta", "lockstep-pip-requirements.txt")
    wheels = os.path.join(pkgs_dir, "pip")
    if pip.get("packages"):
        with open(req, "w") as handle:
            handle.write(pip_requirements(entry))
        source = ["--index-url", pip["index_url"]] if pip.get("index_url") else ["--no-index"]
        source += ["--find-links", pip["find_links"]] if pip.get("find_links") else []
        # Everything is fetched before the old environment is touched.
        run([os.path.join(staging, "bin", "python"), "-m", "pip", "download", "-q", "--no-deps",
             "--only-binary=:all:", "--require-hashes", "--timeout", str(timeout), "-d", wheels]
            + source + ["-r", req], "pip download from %s" % (pip.get("index_url") or pip.get("find_links")),
            name)
    if os.path.lexists(prefix):
        os.rename(prefix, old)
    os.rename(staging, prefix)
    try:
        if pip.get("packages"):
            run([os.path.join(prefix, "bin", "python"), "-m", "pip", "install", "-q", "--no-deps",
                 "--require-hashes", "--no-index", "--find-links", wheels, "-r",
                 os.path.join(prefix, "conda-meta", "lockstep-pip-requirements.txt")],
                "pip install", name)
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
            pkgs_dir=dict(type="path", default="/opt/conda/pkgs"),
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
        packages = build(module, name, prefix, entry, p["pkgs_dir"], p["timeout"])
    except (InstallError, OSError, tarfile.TarError) as exc:
        module.fail_json(msg=redact_urls(exc), lock_sha256=want, reason=reason)
    module.exit_json(changed=True, lock_sha256=want, packages_sha256=packages, reason=reason)


if __name__ == "__main__":
    main()
