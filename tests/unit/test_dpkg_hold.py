"""dpkg_hold: one round trip for the holds of a whole package list.

Run as Ansible runs it, on this machine's real dpkg database, in check mode
(nothing is ever held here): a package already at the wanted selection is
left alone, one that differs is named, one that is not installed fails.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from ansible_collections.lockstep.gpu.plugins.modules import dpkg_hold

# The folder holding ansible_collections/: the repository's collections/ link, or
# the copy ansible-test units runs in.
COLLECTIONS = str(Path(dpkg_hold.__file__).parents[5])
pytestmark = pytest.mark.skipif(shutil.which("dpkg-query") is None, reason="needs dpkg (Debian or Ubuntu)")


def run(tmp_path, **args):
    payload = {"ANSIBLE_MODULE_ARGS": dict(args, _ansible_check_mode=True, _ansible_tmpdir=str(tmp_path))}
    args_file = tmp_path / "args.json"
    args_file.write_text(json.dumps(payload))
    done = subprocess.run([sys.executable, dpkg_hold.__file__, str(args_file)], capture_output=True, text=True,
                          env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "PYTHONPATH": os.pathsep.join(
                              filter(None, [COLLECTIONS, os.environ.get("PYTHONPATH")]))}, check=False)
    return json.loads(done.stdout)


def want(name):
    return subprocess.run(["dpkg-query", "-W", "-f", "${db:Status-Want}", name],
                          capture_output=True, text=True, check=True).stdout


def test_parse_selections_reads_dpkg_query_lines():
    out = subprocess.run(["dpkg-query", "-W", "-f", "${Package}\t${db:Status-Want}\t${db:Status-Status}\n", "bash"],
                         capture_output=True, text=True, check=True).stdout
    assert dpkg_hold.parse_selections(out) == {"bash": (want("bash"), "installed")}


def test_nothing_to_change_reports_no_change(tmp_path):
    result = run(tmp_path, names=["bash", "coreutils"], selection=want("bash"))
    assert result["changed"] is False and result["changed_packages"] == []


def test_a_differing_selection_is_named_and_check_mode_changes_nothing(tmp_path):
    other = "install" if want("bash") == "hold" else "hold"
    result = run(tmp_path, names=["bash"], selection=other)
    assert result["changed"] is True and result["changed_packages"] == ["bash"]
    assert want("bash") != other


def test_a_package_that_is_not_installed_fails_naming_it(tmp_path):
    result = run(tmp_path, names=["bash", "lockstep-no-such-package"])
    assert result["failed"] is True
    assert result["msg"] == "cannot hold packages that are not installed: lockstep-no-such-package"
