"""Shared fixtures of the collection's unit tests.

Tests import Lockstep's Python by its collection path,
``ansible_collections.lockstep.gpu.plugins...``: pytest finds it through
``pythonpath`` in pyproject.toml (``collections/``, where
ansible_collections/lockstep/gpu links back to the repository), and
``ansible-test units`` through the collection it runs in.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
