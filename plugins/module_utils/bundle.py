# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Support bundles: the file names the collector writes, reading a bundle
directory (:func:`collect_from_dir`) and writing one (:func:`save_bundle`).

A bundle is ``{bundle file name: text or None}``; None means the source is
absent (tool not installed, file not there), which is a fact, not an error.
Texts keep undecodable bytes as surrogates, so a bundle round-trips byte for
byte. Standard library only: this runs on managed nodes (Python 3.9+).
"""

from __future__ import annotations

import json
import os
import re
import tempfile

from ansible_collections.lockstep.gpu.plugins.module_utils.nvidia import parse_nvidia_smi_xml
from ansible_collections.lockstep.gpu.plugins.module_utils.parsing import ParseError
from ansible_collections.lockstep.gpu.plugins.module_utils.system import parse_docker_info

# --------------------------------------------------------------------------
# Bundle file names
# --------------------------------------------------------------------------

NVIDIA_SMI = "nvidia-smi-q-x.xml"
PROC_DRIVER = "proc-driver-nvidia-version.txt"
#: nvidia-smi's exit status when the kernel module is not loaded (nvidia-smi(1)).
NVIDIA_SMI_NOT_LOADED = 9
NVCC = "nvcc-version.txt"
PTXAS = "ptxas-version.txt"
CUDA_DEFAULT = "cuda-default.txt"
NCCL_H = "nccl.h"
LDCONFIG = "ldconfig-p.txt"
DPKG = "dpkg-query.txt"
RPM = "rpm-qa.txt"
OS_RELEASE = "os-release"
UNAME = "uname-r.txt"
DOCKER = "docker-info.json"
CONTAINERD = "containerd-version.txt"
NVIDIA_CTK = "nvidia-ctk-version.txt"
IBSTAT = "ibstat.txt"
NET = "net-interfaces.json"
NAMES = "names.json"
NCCL_CONF = "nccl.conf"
SLURM = "slurm.json"
STORAGE = "storage.json"
GPUSTACK = "gpustack.json"
CONDA = "conda-envs.json"
COLLECT_ERRORS = "collect-errors.json"

#: Every fixed bundle file name; ``cuda-version-<X.Y>.json`` come on top.
BUNDLE_FILES = (
    NVIDIA_SMI,
    PROC_DRIVER,
    NVCC,
    PTXAS,
    CUDA_DEFAULT,
    NCCL_H,
    LDCONFIG,
    DPKG,
    RPM,
    OS_RELEASE,
    UNAME,
    DOCKER,
    CONTAINERD,
    NVIDIA_CTK,
    IBSTAT,
    NET,
    NAMES,
    NCCL_CONF,
    SLURM,
    STORAGE,
    GPUSTACK,
    CONDA,
    COLLECT_ERRORS,
)
CUDA_VERSION_FILE = re.compile(r"^cuda-version-(\d+\.\d+)\.json$")

DPKG_FORMAT = "${Package}\t${Version}\t${db:Status-Abbrev}\n"
RPM_FORMAT = "%{NAME}\t%{EPOCH}:%{VERSION}-%{RELEASE}\tii \n"

_ENCODING = "utf-8"
_ERRORS = "surrogateescape"  # byte-exact round trip of whatever a file holds


def is_bundle_file(name: str) -> bool:
    """Whether ``name`` is a file name the collector writes."""
    return name in BUNDLE_FILES or CUDA_VERSION_FILE.match(name) is not None


def decode(data: bytes) -> str:
    return data.decode(_ENCODING, _ERRORS)


def encode(text: str) -> bytes:
    return text.encode(_ENCODING, _ERRORS)


def printable(text: str) -> str:
    """Text safe to put into facts (undecodable bytes become U+FFFD)."""
    return encode(text).decode(_ENCODING, "replace")


def read_file(path: str):
    """Return the file's text, None when it does not exist; OSError otherwise."""
    try:
        with open(path, "rb") as handle:
            return decode(handle.read())
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return None


def read_short(path: str):
    """A small text file (sysfs, METADATA) stripped, or None when it cannot be read."""
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            return handle.read().strip()
    except OSError:
        return None


def empty_raw() -> dict:
    """A raw dict with every fixed bundle file absent."""
    return dict.fromkeys(BUNDLE_FILES)


def collect_from_dir(path: str) -> dict:
    """Read a support bundle: every known file name in ``path`` (others are
    ignored). Raises OSError when ``path`` cannot be listed."""
    raw = empty_raw()
    for name in sorted(os.listdir(path)):
        full = os.path.join(path, name)
        if is_bundle_file(name) and os.path.isfile(full):
            raw[name] = read_file(full)
    return raw


def stable_form(name: str, data: bytes):
    """What must change for a saved file to count as changed.

    nvidia-smi and docker print readings that change on every call
    (timestamps, temperatures, counters); for them the parsed stack facts
    are compared instead of the bytes.
    """
    parser = {NVIDIA_SMI: parse_nvidia_smi_xml, DOCKER: parse_docker_info}.get(name)
    if parser is None:
        return data
    try:
        return json.dumps(parser(decode(data), name), sort_keys=True)
    except ParseError:
        return data


def save_bundle(raw: dict, dest: str, check_mode: bool = False) -> dict:
    """Write the raw texts into ``dest`` (dir 0755, files 0644).

    A file whose stable content is unchanged is left alone; a bundle file
    whose source is now absent is removed (only bundle file names are ever
    touched). Returns ``{"changed", "written", "removed", "files"}`` (files:
    every file the bundle holds now); in check mode
    nothing is written and the lists say what would be.
    """
    written, removed = [], []
    changed = False
    if os.path.lexists(dest) and not os.path.isdir(dest):
        raise OSError(f"save_to {dest} exists and is not a directory")
    if not os.path.isdir(dest):
        changed = True
        if not check_mode:
            os.makedirs(dest, 0o755)
            os.chmod(dest, 0o755)
    elif os.stat(dest).st_mode & 0o7777 != 0o755:
        changed = True
        if not check_mode:
            os.chmod(dest, 0o755)

    existing = set(os.listdir(dest)) if os.path.isdir(dest) else set()
    stale = {n for n in existing if CUDA_VERSION_FILE.match(n) and raw.get(n) is None}
    for name in sorted(set(raw) | stale):
        if not is_bundle_file(name):
            raise ValueError(f"not a bundle file name: {name!r}")
        path = os.path.join(dest, name)
        text = raw.get(name)
        if text is None:
            if name in existing:
                removed.append(name)
                if not check_mode:
                    os.remove(path)
            continue
        data = encode(text)
        old = None
        if name in existing and os.path.isfile(path) and not os.path.islink(path):
            with open(path, "rb") as handle:
                old = handle.read()
        if old is not None and (old == data or stable_form(name, old) == stable_form(name, data)):
            if os.stat(path).st_mode & 0o7777 != 0o644:
                written.append(name)
                if not check_mode:
                    os.chmod(path, 0o644)
            continue
        written.append(name)
        if not check_mode:
            handle, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=dest)
            try:
                with os.fdopen(handle, "wb") as out:
                    out.write(data)
                os.chmod(tmp, 0o644)
                os.replace(tmp, path)
            except BaseException:
                if os.path.exists(tmp):
                    os.remove(tmp)
                raise
    files = sorted(name for name, text in raw.items() if text is not None)
    return {"changed": changed or bool(written or removed), "written": written,
            "removed": removed, "files": files}
