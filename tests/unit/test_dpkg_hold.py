"""dpkg_hold: one round trip for the holds of a whole package list.

Run as Ansible runs it, on this machine's real dpkg database, in check mode
(nothing is ever held here): a package already at the wanted selection is
left alone, one that differs is named, one that is not installed fails.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest
from ansible_collections.lockstep.gpu.plugins.modules import dpkg_hold

pytestmark = pytest.mark.skipif(shutil.which("dpkg-query") is None, reason="needs dpkg (Debian or Ubuntu)")


@pytest.fixture
def run(run_module_file):
    """dpkg_hold in check mode: nothing is ever held here."""
    return lambda tmp_path, **args: run_module_file(dpkg_hold, True, **args)


def want(name):
    return subprocess.run(["dpkg-query", "-W", "-f", "${db:Status-Want}", name],
                          capture_output=True, text=True, check=True).stdout


def test_parse_selections_reads_dpkg_query_lines():
    out = subprocess.run(["dpkg-query", "-W", "-f", "${Package}\t${db:Status-Want}\t${db:Status-Status}\n", "bash"],
                         capture_output=True, text=True, check=True).stdout
    assert dpkg_hold.parse_selections(out) == {"bash": (want("bash"), "installed")}


def test_nothing_to_change_reports_no_change(run, tmp_path):
    result = run(tmp_path, names=["bash", "coreutils"], selection=want("bash"))
    assert result["changed"] is False and result["changed_packages"] == []


def test_a_differing_selection_is_named_and_check_mode_changes_nothing(run, tmp_path):
    other = "install" if want("bash") == "hold" else "hold"
    result = run(tmp_path, names=["bash"], selection=other)
    assert result["changed"] is True and result["changed_packages"] == ["bash"]
    assert want("bash") != other


def test_a_package_that_is_not_installed_fails_naming_it(run, tmp_path):
    result = run(tmp_path, names=["bash", "lockstep-no-such-package"])
    assert result["failed"] is True
    assert result["msg"] == "cannot hold packages that are not installed: lockstep-no-such-package"
