# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster cache of conda environments, on the controller: every conda
package and wheel of a lock fetched ONCE from outside (channel, pip index),
sha256-checked, so that the nodes install from this copy and never each
download the environment themselves.

Used by scripts/conda-lock (which builds sdist-only pip packages into wheels
here) and by the conda_cache module (delegated to the controller by the conda
role). Standard library, ansible's open_url and the controller's pip only.

Layout of the cache directory::

    <dir>/<fn>                  conda packages (.conda, .tar.bz2), by file name
    <dir>/pip/<wheel>           wheels, the py-rattler installer's included
    <dir>/pip/sdist/<sdist>     sources of wheels built here (reproducibly)
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile

from ansible.module_utils.urls import ConnectionError as UrlError, open_url

# Wheel platform tags of a conda platform, for pip on a controller that is not
# the nodes' platform. manylinux_2_28 needs glibc >= 2.28 (RHEL 8, Debian 10+,
# Ubuntu 18.10+).
WHEEL_PLATFORMS = {
    "linux-64": ["manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64",
                 "manylinux2010_x86_64", "manylinux1_x86_64", "linux_x86_64"],
    "linux-aarch64": ["manylinux_2_28_aarch64", "manylinux_2_17_aarch64", "manylinux2014_aarch64",
                      "linux_aarch64"],
}
# A wheel built from an sdist is reproducible (same sha256 on every
# controller) only with these fixed: zip timestamps and set ordering.
REPRODUCIBLE_ENV = {"SOURCE_DATE_EPOCH": "315532800", "PYTHONHASHSEED": "0"}


class CacheError(Exception):
    """A package that cannot be had, or whose sha256 is not the lock's."""


def sha256_file(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def pip_target_args(python: str, platform: str) -> list[str]:
    """pip options that pick the nodes' wheels (Python, platform), not the controller's."""
    args = ["--only-binary=:all:", "--python-version", python, "--implementation", "cp"]
    for tag in WHEEL_PLATFORMS.get(platform, []):
        args += ["--platform", tag]
    return args


def pip_source_args(index_url: str, find_links: str) -> list[str]:
    args = ["--index-url", index_url] if index_url else ["--no-index"]
    return args + (["--find-links", find_links] if find_links else [])


def _pip(args: list[str], what: str, env=None) -> None:
    out = subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True,
                         env=dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1", **(env or {})), check=False)
    if out.returncode:
        raise CacheError(f"{what}: {(out.stderr or out.stdout).strip()[-2000:]}")


def _verified(path: str, sha256: str) -> bool:
    """Whether path holds sha256; a marker beside it spares re-hashing gigabytes on every run."""
    if not os.path.isfile(path):
        return False
    marker = os.path.join(os.path.dirname(path), ".sha256", os.path.basename(path))
    stamp = f"{sha256} {os.path.getsize(path)} {os.stat(path).st_mtime_ns}\n"
    try:
        with open(marker) as handle:
            if handle.read() == stamp:
                return True
    except OSError:
        pass
    if sha256_file(path) != sha256:
        return False
    os.makedirs(os.path.dirname(marker), exist_ok=True)
    with open(marker, "w") as handle:
        handle.write(stamp)
    return True


def build_wheel(sdist: str, outdir: str) -> str:
    """Build sdist (a file) into a wheel in outdir, reproducibly; the wheel's path."""
    with tempfile.TemporaryDirectory() as tmp:
        _pip(["wheel", "-q", "--no-deps", "--no-cache-dir", "-w", tmp, sdist],
             f"cannot build a wheel from {os.path.basename(sdist)}", env=REPRODUCIBLE_ENV)
        (wheel,) = os.listdir(tmp)
        os.makedirs(outdir, exist_ok=True)
        shutil.move(os.path.join(tmp, wheel), os.path.join(outdir, wheel))
    return os.path.join(outdir, wheel)


def cache_files(lock: dict, names=None) -> list[str]:
    """Paths, relative to the cache, of what environments ``names`` (default all) install."""
    files = []
    installer = lock.get("installer")
    if installer:
        files.append(f"pip/{installer['filename']}")
    for name, entry in sorted(lock.get("environments", {}).items()):
        if names is not None and name not in names:
            continue
        files += [pkg["fn"] for pkg in entry.get("conda", [])]
        files += [f"pip/{pkg['filename']}" for pkg in entry.get("pip", {}).get("packages", [])]
    return sorted(set(files))


def _fetch_url(url: str, dest: str, sha256: str, timeout: float) -> int:
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(dest), prefix=".fetch-")
    try:
        with os.fdopen(fd, "wb") as out:
            try:
                with open_url(url, timeout=timeout) as resp:
                    shutil.copyfileobj(resp, out, 1 << 20)
            except (OSError, ValueError, UrlError) as exc:
                raise CacheError(f"cannot fetch {url}: {getattr(exc, 'reason', exc)}") from exc
        got = sha256_file(tmp)
        if got != sha256:
            raise CacheError(f"{url} has sha256 {got}, the lock says {sha256}")
        size = os.path.getsize(tmp)
        os.replace(tmp, dest)
        return size
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _pip_wheels(wheels: list[dict], pipdir: str, python: str, platform: str, pip: dict) -> int:
    """pip download wheels (require-hashes) into pipdir; bytes fetched."""
    if not wheels:
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        req = os.path.join(tmp, "requirements.txt")
        with open(req, "w") as handle:
            handle.writelines(f"{w['name']}=={w['version']} --hash=sha256:{w['sha256']}\n" for w in wheels)
        got = os.path.join(tmp, "got")
        _pip(["download", "-q", "--no-deps", "--require-hashes", "-d", got, *pip_target_args(python, platform),
              *pip_source_args(pip.get("index_url", ""), pip.get("find_links", "")), "-r", req],
             f"pip cannot get {', '.join(w['filename'] for w in wheels)} from "
             f"{pip.get('index_url') or pip.get('find_links')}")
        size = 0
        for wheel in wheels:
            path = os.path.join(got, wheel["filename"])
            if not os.path.isfile(path):
                raise CacheError(f"pip got {sorted(os.listdir(got))}, not {wheel['filename']} (the lock's file)")
            size += os.path.getsize(path)
            os.replace(path, os.path.join(pipdir, wheel["filename"]))
    return size


def _built_wheel(wheel: dict, pipdir: str, pip: dict) -> int:
    """A wheel the lock step built from an sdist: fetch the sdist, build, check; bytes fetched."""
    sdist = wheel["sdist"]
    srcdir = os.path.join(pipdir, "sdist")
    os.makedirs(srcdir, exist_ok=True)
    path, size = os.path.join(srcdir, sdist["filename"]), 0
    if not _verified(path, sdist["sha256"]):
        with tempfile.TemporaryDirectory() as tmp:
            req = os.path.join(tmp, "requirements.txt")
            with open(req, "w") as handle:
                handle.write(f"{wheel['name']}=={wheel['version']} --hash=sha256:{sdist['sha256']}\n")
            _pip(["download", "-q", "--no-deps", "--no-binary=:all:", "--require-hashes", "-d", tmp,
                  *pip_source_args(pip.get("index_url", ""), pip.get("find_links", "")), "-r", req],
                 f"pip cannot get the sdist {sdist['filename']}")
            size = os.path.getsize(os.path.join(tmp, sdist["filename"]))
            os.replace(os.path.join(tmp, sdist["filename"]), path)
    built = build_wheel(path, os.path.join(pipdir, ".built"))
    got = sha256_file(built)
    if got != wheel["sha256"]:
        os.unlink(built)
        raise CacheError(f"{wheel['filename']} built from {sdist['filename']} has sha256 {got}, the lock says "
                         f"{wheel['sha256']} (another build toolchain?): run scripts/conda-lock again")
    os.replace(built, os.path.join(pipdir, wheel["filename"]))
    return size


def fill(cache_dir: str, lock: dict, names=None, timeout: float = 30) -> dict:
    """Make the cache hold every file of environments ``names`` (default all).

    Returns ``{"fetched": [relative paths], "bytes": bytes fetched from outside,
    "files": {env: [relative paths]}}``.
    """
    pipdir = os.path.join(cache_dir, "pip")
    os.makedirs(pipdir, exist_ok=True)
    fetched, size = [], 0
    envs = {n: e for n, e in sorted(lock.get("environments", {}).items()) if names is None or n in names}
    for entry in envs.values():
        for pkg in entry.get("conda", []):
            dest = os.path.join(cache_dir, pkg["fn"])
            if not _verified(dest, pkg["sha256"]):
                size += _fetch_url(pkg["url"], dest, pkg["sha256"], timeout)
                fetched.append(pkg["fn"])
                _verified(dest, pkg["sha256"])  # its marker, as for wheels: the next run hashes nothing
    groups = {}  # (python, platform, index, find_links) -> wheels
    for entry in envs.values():
        pip = entry.get("pip", {})
        for wheel in pip.get("packages", []):
            # A wheel two environments share is fetched (and counted) once.
            if f"pip/{wheel['filename']}" in fetched or \
                    _verified(os.path.join(pipdir, wheel["filename"]), wheel["sha256"]):
                continue
            if wheel.get("sdist"):
                size += _built_wheel(wheel, pipdir, pip)
            else:
                key = (entry["python"], entry.get("platform", "linux-64"), pip.get("index_url", ""),
                       pip.get("find_links", ""))
                groups.setdefault(key, []).append(wheel)
            fetched.append(f"pip/{wheel['filename']}")
    installer = lock.get("installer")
    if installer and envs and not _verified(os.path.join(pipdir, installer["filename"]), installer["sha256"]):
        key = (installer["python"], installer["platform"], installer.get("index_url", ""),
               installer.get("find_links", ""))
        groups.setdefault(key, []).append(installer)
        fetched.append(f"pip/{installer['filename']}")
    for (python, platform, index_url, find_links), wheels in groups.items():
        size += _pip_wheels(wheels, pipdir, python, platform, {"index_url": index_url, "find_links": find_links})
    for rel in fetched:  # record the markers now: the next run checks nothing again
        if rel.startswith("pip/"):
            name = rel[len("pip/"):]
            want = next((w["sha256"] for e in envs.values() for w in e.get("pip", {}).get("packages", [])
                         if w["filename"] == name), installer["sha256"] if installer else None)
            if not _verified(os.path.join(pipdir, name), want):
                raise CacheError(f"{rel} in the cache does not have the lock's sha256 {want}")
    return {"fetched": fetched, "bytes": size,
            "files": {name: cache_files(lock, [name]) for name in envs}}
