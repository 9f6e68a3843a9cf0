# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Conda environments, in one place: the canonical hash of an environment's
lock entry and its pip requirements (scripts/conda-lock on the controller,
the conda_env module on the node), scanning an installed environment
(gpu_facts, conda_env) and the collector's ``conda-envs.json``.
Standard library only: this runs on managed nodes."""

from __future__ import annotations

import hashlib
import json
import os
import re

from ansible_collections.lockstep.gpu.plugins.module_utils.bundle import read_short
from ansible_collections.lockstep.gpu.plugins.module_utils.system import parse_json_object
from ansible_collections.lockstep.gpu.plugins.module_utils.parsing import ParseError

# 2: pip packages are the resolved closure (an sdist-built wheel records its
# sdist); the lock pins the installer (py-rattler).
LOCK_FORMAT = 2
#: The file in ``<env>/conda-meta/`` that holds the sha256 of the lock entry
#: an environment was built from (written by the conda_env module).
LOCK_HASH_FILE = "lockstep-lock.sha256"


def entry_sha256(entry: dict) -> str:
    """sha256 of an environment's lock entry, without its own ``sha256`` key.

    The entry is serialised as canonical JSON (sorted keys, no spaces), so the
    controller and every node compute the same value. It is what the role
    writes to ``<env>/conda-meta/lockstep-lock.sha256``.
    """
    body = {k: v for k, v in entry.items() if k != "sha256"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def pip_requirements(entry: dict) -> str:
    """requirements.txt text of an entry's pip packages, with their hashes."""
    return "".join(
        f"{p['name']}=={p['version']} --hash=sha256:{p['sha256']}\n"
        for p in entry.get("pip", {}).get("packages", []))


_DIST_INFO = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+)\.dist-info$")


def normalize_package_name(name: str) -> str:
    """PEP 503 name: lower case, runs of ``-_.`` as one ``-``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def site_distributions(site: str) -> dict:
    """{PEP 503 name: version} of every ``*.dist-info`` directory in ``site`` (a site-packages);
    {} when it cannot be listed. Read from the directory names, as pip writes them."""
    try:
        entries = os.listdir(site)
    except OSError:
        return {}
    found = {}
    for entry in entries:
        match = _DIST_INFO.match(entry)
        if match:
            found[normalize_package_name(match.group("name"))] = match.group("version")
    return found


def packages_digest(lines) -> str:
    """SHA-256 of the sorted, de-duplicated lines ``name==version``, each ending in a newline."""
    return hashlib.sha256("".join(f"{line}\n" for line in sorted(set(lines))).encode("utf-8")).hexdigest()


def _metadata_version(dist_info: str):
    text = read_short(os.path.join(dist_info, "METADATA"))
    if text:
        match = re.search(r"^Version:\s*(\S+)", text, re.MULTILINE)
        if match:
            return match.group(1)
    return None


# The CUDA build a torch wheel was made for: torch/version.py, written by
# torch's setup ("cuda = '12.1'", "cuda: Optional[str] = '12.1'" in newer
# releases, None for CPU builds). Read as text: importing torch on every node
# would take seconds and need its libraries.
_TORCH_CUDA = re.compile(r"^cuda(?:\s*:[^=]*)?\s*=\s*(?:'([^']*)'|\"([^\"]*)\"|None)\s*$", re.MULTILINE)
# The NCCL and cuDNN that torch loads: PyPI's CUDA builds of torch depend on
# these NVIDIA wheels (nvidia-nccl-cu12==2.18.1 for torch 2.1.2).
_TORCH_LIBS = {"torch_nccl": ("nvidia-nccl-cu12", "nvidia-nccl-cu11"),
               "torch_cudnn": ("nvidia-cudnn-cu12", "nvidia-cudnn-cu11")}


def torch_cuda(site: str):
    """``torch.version.cuda`` of the torch in ``site`` (site-packages), read from torch/version.py; None if absent."""
    text = read_short(os.path.join(site, "torch", "version.py"))
    match = _TORCH_CUDA.search(text or "")
    if not match:
        return None
    return match.group(1) or match.group(2) or None


def scan_env(prefix: str) -> dict:
    """What an environment holds: Python, torch, deepspeed, package hash, lock hash."""
    meta = os.path.join(prefix, "conda-meta")
    lines = set()
    conda = {}
    unreadable = []
    for entry in sorted(os.listdir(meta)):
        if not entry.endswith(".json"):
            continue
        try:
            with open(os.path.join(meta, entry), "rb") as handle:
                record = json.loads(handle.read().decode("utf-8", "replace"))
            name, version = record["name"], record["version"]
        except (OSError, ValueError, KeyError, TypeError):
            unreadable.append(entry)
            continue
        conda[normalize_package_name(name)] = version
        lines.add(f"{normalize_package_name(name)}=={version}")

    python = conda.get("python")
    pip = {}
    lib = os.path.join(prefix, "lib")
    try:
        pythons = sorted(d for d in os.listdir(lib) if re.match(r"^python\d+\.\d+$", d))
    except OSError:
        pythons = []
    for pydir in pythons:
        site = os.path.join(lib, pydir, "site-packages")
        try:
            entries = sorted(os.listdir(site))
        except OSError:
            continue
        if python is None:
            python = pydir[len("python"):]
        for entry in entries:
            match = _DIST_INFO.match(entry)
            if not match:
                continue
            name = normalize_package_name(match.group("name"))
            version = match.group("version")
            lines.add(f"{name}=={version}")
            if name in ("torch", "deepspeed") or any(name in names for names in _TORCH_LIBS.values()):
                pip[name] = _metadata_version(os.path.join(site, entry)) or version
            if name == "torch":
                pip["torch_cuda"] = torch_cuda(site)

    lock = read_short(os.path.join(meta, LOCK_HASH_FILE))
    return {
        "prefix": prefix,
        "python": python,
        "torch": pip.get("torch") or conda.get("pytorch") or conda.get("torch"),
        "deepspeed": pip.get("deepspeed") or conda.get("deepspeed"),
        "torch_cuda": pip.get("torch_cuda"),
        **{key: next((pip[n] for n in names if n in pip), None) for key, names in _TORCH_LIBS.items()},
        "packages": len(lines),
        "packages_sha256": packages_digest(lines),
        "lock_sha256": lock.split()[0] if lock else None,
        "unreadable_records": unreadable,
    }


def build_conda_envs(dirs):
    """JSON text ``{env name: {...}}`` for every conda environment (a
    directory holding ``conda-meta/``) directly under one of ``dirs``; None
    when there is none. See the module documentation for the keys."""
    envs = {}
    for base in dirs or ():
        try:
            entries = sorted(os.listdir(base))
        except OSError:
            continue
        for entry in entries:
            prefix = os.path.join(base, entry)
            if not os.path.isdir(os.path.join(prefix, "conda-meta")):
                continue
            key = entry if entry not in envs else prefix
            try:
                envs[key] = scan_env(prefix)
            except OSError as exc:
                envs[key] = {"prefix": prefix, "error": f"cannot read {prefix}: {exc}"}
    if not envs:
        return None
    return json.dumps(envs, indent=2, sort_keys=True) + "\n"


_CONDA_KEYS = ("python", "torch", "deepspeed", "torch_cuda", "torch_nccl", "torch_cudnn", "packages_sha256",
               "lock_sha256")


def parse_conda_envs(text: str, source=None) -> dict:
    """The collector's ``conda-envs.json``."""
    data = parse_json_object(text, source, "conda-envs JSON")
    envs = {}
    for name, info in data.items():
        if not isinstance(info, dict):
            raise ParseError(f"environment {name!r} is not an object", source)
        if info.get("error"):
            raise ParseError(f"environment {name!r}: {info['error']}", source)
        env = {key: info.get(key) for key in _CONDA_KEYS}
        env["prefix"] = info.get("prefix")
        env["packages"] = info.get("packages")
        envs[name] = env
    return envs
