# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Slurm's shared files for gpu_facts: the bundle file ``slurm.json`` built
from the munge key and slurm.conf (:func:`build_slurm`, on the node) and its
parser (:func:`parse_slurm`).

Every node of a cluster must hold the same munge key (else munge refuses its
credentials and its slurmd cannot talk to slurmctld) and the same slurm.conf.
Only their SHA-256 digests go into the bundle: a support bundle or a report
never carries the key. Standard library only: this runs on managed nodes
(Python 3.9+).
"""

from __future__ import annotations

import hashlib
import json
import re

from ansible_collections.lockstep.gpu.plugins.module_utils.parsing import ParseError

#: Where gpu_facts looks by default (Debian's slurm-wlm and munge).
MUNGE_KEY = "/etc/munge/munge.key"
SLURM_CONF = "/etc/slurm/slurm.conf"

_FIELDS = {"munge_key_sha256": MUNGE_KEY, "conf_sha256": SLURM_CONF}
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def file_sha256(path: str):
    """``(hex digest, None)`` of the file's bytes, ``(None, None)`` when it does
    not exist, ``(None, reason)`` when it cannot be read."""
    try:
        with open(path, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest(), None
    except (FileNotFoundError, NotADirectoryError):
        return None, None
    except OSError as exc:
        return None, f"cannot read {path}: {exc.strerror or exc}"


def build_slurm(munge_key: str = MUNGE_KEY, slurm_conf: str = SLURM_CONF, digest=file_sha256):
    """``(text, problem)``: the JSON text ``{"munge_key_sha256", "conf_sha256"}``
    (null for a file that is absent), None when both are absent (no Slurm on
    the node); ``problem`` names every file that exists but cannot be read."""
    result, problems = {}, []
    for field, path in (("munge_key_sha256", munge_key), ("conf_sha256", slurm_conf)):
        value, problem = digest(path)
        result[field] = value
        if problem:
            problems.append(problem)
    if problems:
        return None, "; ".join(problems)
    if not any(result.values()):
        return None, None
    return json.dumps(result, indent=2, sort_keys=True) + "\n", None


def parse_slurm(text: str, source=None) -> dict:
    """``slurm.json``: ``{"munge_key_sha256", "conf_sha256"}``, each a
    lower-case hex SHA-256 or None."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ParseError(f"not JSON ({exc})", source) from exc
    if not isinstance(data, dict) or set(data) != set(_FIELDS):
        raise ParseError(f"expected an object with {', '.join(sorted(_FIELDS))}", source)
    for field, value in data.items():
        if value is not None and not (isinstance(value, str) and _SHA256.match(value)):
            raise ParseError(f"{field} is {value!r}, not a SHA-256 hex digest", source)
    return {field: data[field] for field in sorted(_FIELDS)}
