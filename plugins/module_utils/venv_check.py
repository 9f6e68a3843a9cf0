# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What pip would still do in a virtual environment, read from the
environment's installed metadata in one pass, without starting pip.

:func:`venv_problems` names every requirement that is not installed at a
version it allows, and every installed distribution's dependency that is
missing or at a version it does not allow: what ``pip install`` would fix
and what ``pip check`` reports (markers evaluated as pip check does, with no
extra; pre-releases allowed). An empty list means pip would change nothing.
Anything it cannot judge is a problem too (a requirement with extras, an
environment made by another Python than the one running this, an
unreadable metadata file), so that the caller lets pip decide.

Runs on managed nodes under the Python that made the environment; needs
``packaging`` (Debian's python3-packaging, which role gpustack installs).
"""

from __future__ import annotations

import glob
import os
import sys
from importlib import metadata

try:
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name
except ImportError:  # the caller lets pip decide (venv_problems)
    Requirement = None


def venv_site_packages(venv: str) -> list:
    """The environment's site-packages folders (one for a venv made by ``python3 -m venv``)."""
    return sorted(glob.glob(os.path.join(venv, "lib", "python3*", "site-packages")))


def venv_version(venv: str) -> str:
    """``major.minor`` of the Python that made the environment, from its pyvenv.cfg ('' when unknown)."""
    try:
        with open(os.path.join(venv, "pyvenv.cfg"), encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return ""
    for line in lines:
        key, sep, value = line.partition("=")
        if sep and key.strip() in ("version", "version_info"):
            return ".".join(value.strip().split(".")[:2])
    return ""


def installed(dists) -> dict:
    """{canonical name: version} of the distributions."""
    found = {}
    for dist in dists:
        name = dist.metadata["Name"]
        if name:
            found.setdefault(canonicalize_name(name), dist.version)
    return found


def _unmet(requirement, versions: dict) -> str:
    """Why versions does not satisfy requirement ('' when it does)."""
    have = versions.get(canonicalize_name(requirement.name))
    if have is None:
        return "not installed"
    if not requirement.specifier.contains(have, prereleases=True):
        return f"{have} installed"
    return ""


def dependency_problems(dists, versions: dict) -> list:
    """What ``pip check`` reports for the distributions, one line each."""
    problems = []
    for dist in dists:
        for text in dist.requires or ():
            try:
                requirement = Requirement(text)
            except InvalidRequirement:
                problems.append(f"{dist.metadata['Name']} {dist.version}: unreadable requirement {text!r}")
                continue
            if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
                continue
            why = _unmet(requirement, versions)
            if why:
                problems.append(f"{dist.metadata['Name']} {dist.version} requires {requirement}: {why}")
    return sorted(problems)


def venv_problems(venv: str, requirements) -> list:
    """Every reason pip would still have work in venv for requirements (see the module docstring)."""
    paths = venv_site_packages(venv)
    if not paths:
        return [f"no environment at {venv}"]
    running = f"{sys.version_info[0]}.{sys.version_info[1]}"
    made_by = venv_version(venv)
    if made_by != running:
        return [f"{venv} was made by Python {made_by or 'unknown'}, this check runs Python {running}"]
    if Requirement is None:
        return ["no packaging module to read requirements with (python3-packaging)"]
    dists = list(metadata.distributions(path=paths))  # read once, for both checks
    versions = installed(dists)
    problems = []
    for text in requirements:
        try:
            requirement = Requirement(text)
        except InvalidRequirement as error:
            problems.append(f"{text}: {error}")
            continue
        why = "has extras, which pip resolves" if requirement.extras else _unmet(requirement, versions)
        if why:
            problems.append(f"{text}: {why}")
    return problems + dependency_problems(dists, versions)
