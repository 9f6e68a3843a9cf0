# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Helpers shared by scripts/conda-lock (controller) and the conda_env module
(node): the canonical hash of one environment's lock entry, and the list of
what an installed environment must hold."""

from __future__ import annotations

import hashlib
import json

LOCK_FORMAT = 1


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
