"""Shared setup of the collection's unit tests.

Tests import Lockstep's Python by its collection path,
``ansible_collections.lockstep.gpu.plugins...``: pytest finds it through
``pythonpath`` in pyproject.toml (``collections/``, where
ansible_collections/lockstep/gpu links back to the repository), and
``ansible-test units`` (scripts/ansible-test) through the copy of the
collection it runs in.

Tests do not import from this file: ``ansible-test units`` does not put
tests/unit on Python's import path, so each test module finds its fixtures from its
own path (``Path(__file__).resolve().parents[2] / "tests" / "fixtures"``),
which works in the repository and in ansible-test's copy alike. Nothing in
tests/unit may read files outside the collection (the repository's .venv,
inventories, molecule scenarios or scripts are not in that copy).
"""
