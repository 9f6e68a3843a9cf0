# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A pip lock: a requirements file in which every distribution of a closure
is pinned (``name==version``) with the sha256 of its wheel, as
``scripts/gpustack-lock`` writes GPUStack's and ``pip install
--require-hashes`` reads it. Role gpustack checks its lock against what it
declares with :func:`pip_lock` before it installs."""

from __future__ import annotations

import re

from ansible_collections.lockstep.gpu.plugins.module_utils.conda import normalize_package_name

_NAME = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!_-]+)$")
_HASH = re.compile(r"^--hash=sha256:[0-9a-f]{64}$")


def parse_pip_lock(text: str) -> tuple[dict, list]:
    """({canonical name: version}, [problem]) from a lock's text: comments and blank lines skipped; a line that
    is not 'name==version --hash=sha256:<64 hex>...' is a problem naming its line number."""
    pins, problems = {}, []
    for number, line in enumerate(str(text or "").splitlines(), start=1):
        words = line.split("#", 1)[0].split() if not line.lstrip().startswith("#") else []
        if not words:
            continue
        pin = _NAME.match(words[0])
        hashes = words[1:]
        if not pin or not hashes or not all(_HASH.match(h) for h in hashes):
            problems.append(f"line {number} is not 'name==version --hash=sha256:<64 hex digits>': {line.strip()!r}")
            continue
        name = normalize_package_name(pin.group(1))
        if name in pins:
            problems.append(f"line {number} pins {name} a second time")
        pins[name] = pin.group(2)
    return pins, problems


def pip_lock(text, requirements):
    """{pins: ['name==version', ...] sorted, problems: [...]}: the lock's pins, and every way it does not lock
    `requirements` (each 'name==version'): a requirement the lock lacks or pins at another version, a line
    that is not a hashed pin, an empty lock."""
    pins, problems = parse_pip_lock(text)
    if not pins and not problems:
        problems.append("it pins no distribution")
    for requirement in requirements or []:
        wanted = _NAME.match(str(requirement).strip())
        if not wanted:
            problems.append(f"requirement {requirement!r} is not pinned as name==version")
            continue
        name, version = normalize_package_name(wanted.group(1)), wanted.group(2)
        if name not in pins:
            problems.append(f"it has no {name} ({requirement} is required)")
        elif pins[name] != version:
            problems.append(f"it pins {name}=={pins[name]}, not {version}")
    return {"pins": [f"{name}=={version}" for name, version in sorted(pins.items())], "problems": problems}
