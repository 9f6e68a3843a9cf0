"""playbooks/preflight.yml only reads: on fresh nodes it changes nothing, writes no file, installs nothing.

The proof needs nodes that no converge has touched, so it is taken in the
scenario's prepare step (molecule/cluster/prepare.yml), which molecule runs
once, on the freshly created containers, before the converge. There each node
lists its installed packages and touches a mark in /tmp; the controller marks
the time and runs ``ansible-playbook --flush-cache -i <scenario inventory>
playbooks/preflight.yml`` with the project's ansible.cfg (as an admin would:
SSH, pipelining, the jsonfile fact cache, flushed so that the facts are
gathered from these nodes); then each node lists every file whose content or
metadata is newer than the mark - everywhere but /proc, /sys, /dev, /run,
/tmp, /var/log/journal and Ansible's remote temp dir - and its packages again,
and the controller lists its own new files (the project and ~/.ansible but
Ansible's temp and SSH control dirs, and the molecule logs scripts/test
writes; the test leaves out ~/.ansible/test, where ansible-test sanity of any
checkout on the machine writes at any time). The records are in <ephemeral directory>/preflight-fresh/; the tests
below read them.

sshd writes the login records of the preflight's SSH sessions (/var/log/wtmp,
/var/log/lastlog, /var/log/btmp): those are the only files a node may show,
and they are what any SSH login writes. On the controller the preflight
writes only Ansible's fact cache (ansible.cfg: jsonfile in .cache/ansible-facts,
one file per node).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

NODES = ("dp1", "dp2", "dp3")
LOGIN_RECORDS = {"/var/log/wtmp", "/var/log/lastlog", "/var/log/btmp"}
RECORD = Path(os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", "/nonexistent")) / "preflight-fresh"
PROJECT = Path(os.environ.get("MOLECULE_PROJECT_DIRECTORY", os.getcwd()))


def _read(name: str) -> dict:
    path = RECORD / f"{name}.json"
    assert path.is_file(), f"{path} is missing: the scenario's prepare step (prepare.yml) did not run"
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def controller():
    return _read("controller")


def test_preflight_passed_and_changed_nothing_on_any_node(controller):
    output = controller["output"]
    assert controller["rc"] == 0, output[-3000:]
    recap = dict(re.findall(r"(dp\d)\s+: ok=\d+\s+changed=(\d+)\s+unreachable=0\s+failed=0", output))
    assert recap == {n: "0" for n in NODES}, output[-3000:]
    assert re.findall(r"PLAY \[[^\]]*\]", output) == ["PLAY [Check the whole inventory before any node changes]"]


@pytest.mark.parametrize("name", NODES)
def test_the_nodes_were_fresh(name):
    """Nothing of the converge yet: no chrony, no Docker (site.yml installs both)."""
    packages = {line.split("=", 1)[0] for line in _read(name)["packages_before"]}
    assert packages and not packages & {"chrony", "docker.io", "containerd"}, sorted(packages)


@pytest.mark.parametrize("name", NODES)
def test_preflight_wrote_no_file_on_the_node(name):
    newer = set(_read(name)["newer"])
    assert newer <= LOGIN_RECORDS, sorted(newer - LOGIN_RECORDS)


@pytest.mark.parametrize("name", NODES)
def test_preflight_installed_nothing_on_the_node(name):
    record = _read(name)
    assert record["packages_after"] == record["packages_before"]


def test_preflight_writes_only_the_fact_cache_on_the_controller(controller):
    cache = PROJECT / ".cache" / "ansible-facts"
    # ansible-test's environments: `ansible-test sanity` of any checkout on this machine writes there at any time.
    elsewhere = Path.home() / ".ansible" / "test"
    # scripts/test's own outputs: lint and unit run beside molecule and write there meanwhile.
    suite = {PROJECT / ".cache" / name for name in ("unit.log", "lint+unit.log", "lint+unit.time", "junit",
                                                     "molecule-logs")}
    # On a fresh machine ansible-test creates ~/.ansible/test during the run: those two folders are newer too.
    made_by_it = {elsewhere, elsewhere.parent}
    newer = {Path(p) for p in controller["newer"]
             if elsewhere not in Path(p).parents and Path(p) not in made_by_it
             and not {Path(p), *Path(p).parents} & suite}
    files = {p for p in newer if p != cache and cache not in p.parents}
    assert files <= {cache.parent}, sorted(map(str, files))  # .cache itself, when the cache was created in it
    cached = {p.name for p in newer if p.parent == cache}
    assert {name.rsplit("_", 1)[-1] for name in cached} == set(NODES), sorted(cached)
