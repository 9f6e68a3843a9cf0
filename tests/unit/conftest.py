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
inventories, molecule scenarios or scripts are not in that copy). What
they share comes as fixtures (``run_module_file``), which pytest hands them.
"""

from __future__ import annotations


import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture
def run_module_file(tmp_path):
    """``run(module, check=False, **args)``: the module file (an imported module of plugins/modules) run as
    Ansible runs it, with its arguments in a file and the collection on PYTHONPATH; its JSON result."""

    def run(module, check=False, **args):
        # The folder holding ansible_collections/: the repository's collections/ link, or ansible-test's copy.
        collections = str(Path(module.__file__).parents[5])
        payload = {"ANSIBLE_MODULE_ARGS": dict(args, _ansible_check_mode=check, _ansible_tmpdir=str(tmp_path))}
        args_file = tmp_path / "args.json"
        args_file.write_text(json.dumps(payload))
        done = subprocess.run([sys.executable, module.__file__, str(args_file)], capture_output=True, text=True,
                              env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "PYTHONPATH": os.pathsep.join(
                                  filter(None, [collections, os.environ.get("PYTHONPATH")]))}, check=False)
        return json.loads(done.stdout)

    return run
