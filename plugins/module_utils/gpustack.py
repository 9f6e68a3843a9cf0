# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPUStack's version for gpu_facts: the bundle file ``gpustack.json`` built
from GPUStack's virtual environment (:func:`build_gpustack`, on the node) and
its parser (:func:`parse_gpustack`).

Role gpustack installs GPUStack with pip into a virtual environment
(``gpustack_venv``, default ``/opt/gpustack/venv``). Its version is the
``Version:`` header of ``<venv>/lib/python3*/site-packages/gpustack-*.dist-info/METADATA``,
read as a file: no interpreter is run. No venv: no GPUStack (absent).
Beside it, ``packages``: every distribution in that site-packages,
``{name: version}`` from its ``*.dist-info`` directory names (as pip writes
them; names as PEP 503), so that verify compares GPUStack's whole closure
(``gpustack.packages_sha256``), not just its own version: two nodes that
resolved GPUStack's ~150 dependencies a week apart differ there.
Standard library only: this runs on managed nodes (Python 3.9+).
"""

from __future__ import annotations

import glob
import json
import os
import re

from ansible_collections.lockstep.gpu.plugins.module_utils.conda import packages_digest, site_distributions
from ansible_collections.lockstep.gpu.plugins.module_utils.parsing import ParseError

#: Where role gpustack installs it (gpustack_venv's default).
GPUSTACK_VENV = "/opt/gpustack/venv"

_DIST_INFO = "lib/python3*/site-packages/gpustack-*.dist-info/METADATA"
_HEADER = re.compile(r"^(?P<key>[A-Za-z0-9-]+):[ \t]*(?P<value>.*?)\s*$")
_VERSION = re.compile(r"^[0-9A-Za-z][0-9A-Za-z.+!_-]*$")


def metadata_version(text: str, source=None) -> str:
    """The ``Version:`` of a core-metadata header (the lines before the first
    blank line); ParseError when it has none, or ``Name:`` is not gpustack."""
    headers = {}
    for line in text.splitlines():
        if not line.strip():
            break
        found = _HEADER.match(line)
        if found and found["key"].lower() not in headers:
            headers[found["key"].lower()] = found["value"]
    name = headers.get("name", "")
    if re.sub(r"[-_.]+", "-", name).lower() != "gpustack":
        raise ParseError(f"METADATA names {name or 'no package'!r}, not gpustack", source)
    version = headers.get("version", "")
    if not _VERSION.match(version):
        raise ParseError(f"METADATA has no usable Version: header ({version!r})", source)
    return version


def build_gpustack(venv: str = GPUSTACK_VENV):
    """``(text, problem)``: the JSON text ``{"venv", "metadata", "version", "packages"}``,
    None when ``venv`` does not exist (no GPUStack); ``problem`` says why a
    venv that exists gives no version (no dist-info, several, unreadable or
    not parseable METADATA)."""
    if not venv or not os.path.isdir(venv):
        return None, None
    found = sorted(glob.glob(os.path.join(venv, _DIST_INFO)))
    if not found:
        return None, f"{venv} holds no {_DIST_INFO}: GPUStack is not installed in it"
    if len(found) > 1:
        return None, f"{venv} holds more than one GPUStack: {', '.join(found)}"
    try:
        with open(found[0], encoding="utf-8", errors="replace") as handle:
            version = metadata_version(handle.read(), found[0])
    except OSError as exc:
        return None, f"cannot read {found[0]}: {exc.strerror or exc}"
    except ParseError as exc:
        return None, str(exc)
    packages = site_distributions(os.path.dirname(os.path.dirname(found[0])))
    data = {"venv": venv, "metadata": found[0], "version": version, "packages": packages}
    return json.dumps(data, indent=2, sort_keys=True) + "\n", None


def parse_gpustack(text: str, source=None) -> dict:
    """``gpustack.json``: ``{"venv", "metadata", "version"}``, all strings, and ``packages``
    ``{name: version}`` ({} in a bundle saved before it was collected)."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ParseError(f"not JSON ({exc})", source) from exc
    fields = ("metadata", "venv", "version")
    if not isinstance(data, dict) or set(data) - {"packages"} != set(fields):
        raise ParseError(f"expected an object with {', '.join(fields)} (and packages)", source)
    for field in fields:
        if not isinstance(data[field], str) or not data[field]:
            raise ParseError(f"{field} is {data[field]!r}, not a non-empty string", source)
    if not _VERSION.match(data["version"]):
        raise ParseError(f"version is {data['version']!r}, not a version", source)
    packages = data.get("packages", {})
    if not isinstance(packages, dict) or not all(
            isinstance(k, str) and k and isinstance(v, str) and v for k, v in packages.items()):
        raise ParseError("packages is not an object of package names and versions", source)
    return dict({field: data[field] for field in fields}, packages=packages)


def packages_sha256(packages: dict):
    """The hash verify compares (module_utils/conda.py's ``packages_digest`` of ``name==version``
    lines, as conda environments' ``packages_sha256``); None without packages (an older bundle)."""
    return packages_digest(f"{name}=={version}" for name, version in packages.items()) if packages else None
