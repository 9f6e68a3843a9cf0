"""Lockstep as an installed artefact: the tarball `ansible-galaxy collection
build` makes from this clone, installed with `ansible-galaxy collection
install`, used from a directory outside the clone as a site would use it.

Galaxy is unreachable here, so the install runs with --offline: the tarball
is a local file, and the collection's dependencies (ansible.posix,
community.general) are already installed with the `ansible` package on PyPI
(site-packages/ansible_collections), where --offline finds them and checks
their versions against galaxy.yml; without --offline the resolver would ask
Galaxy for them. (--no-deps would skip that check altogether.)

Nothing of the clone may leak into the runs: no ansible.cfg of the clone
(ANSIBLE_CONFIG points at an empty file in the temporary directory), no
collections/ link (ANSIBLE_COLLECTIONS_PATH is the install directory only,
PYTHONPATH is dropped since Ansible also finds collections on sys.path), and
the working directory is the temporary directory.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import limits
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
BUNDLES = ROOT / "tests" / "fixtures" / "bundles"
BIN = Path(sys.executable).parent
CPU_S = 120


def _tool(name: str) -> str:
    path = BIN / name
    return str(path) if path.exists() else (shutil.which(name) or name)


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_") and k != "PYTHONPATH"}
    env.update(ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0", ANSIBLE_DEPRECATION_WARNINGS="False",
               ANSIBLE_LOCALHOST_WARNING="False", ANSIBLE_INVENTORY_UNPARSED_WARNING="False",
               PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    env.update(extra)
    return env


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return limits.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, cpu_s=CPU_S)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """Build, install, and lay out a site directory outside the clone."""
    tmp = tmp_path_factory.mktemp("installed")
    assert not str(tmp.resolve()).startswith(str(ROOT) + os.sep)
    cfg = tmp / "ansible.cfg"
    cfg.write_text("[defaults]\n")

    build = _run([_tool("ansible-galaxy"), "collection", "build", "--output-path", str(tmp / "dist"), str(ROOT)],
                 cwd=ROOT, env=_clean_env(ANSIBLE_CONFIG=str(cfg)))
    assert build.returncode == 0, build.stdout + build.stderr
    tarballs = list((tmp / "dist").glob("lockstep-gpu-*.tar.gz"))
    assert len(tarballs) == 1, tarballs

    collections = tmp / "collections"
    install = _run([_tool("ansible-galaxy"), "collection", "install", "--offline", str(tarballs[0]),
                    "-p", str(collections)],
                   cwd=tmp, env=_clean_env(ANSIBLE_CONFIG=str(cfg), ANSIBLE_COLLECTIONS_PATH=str(collections)))
    assert install.returncode == 0, install.stdout + install.stderr
    installed = collections / "ansible_collections" / "lockstep" / "gpu"
    assert (installed / "MANIFEST.json").is_file(), install.stdout

    # One inventory folder per cluster, as a site keeps them.
    inventory = tmp / "inventories" / "tiny" / "hosts.yml"
    inventory.parent.mkdir(parents=True)
    node = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    # Two saved bundles that differ in ptxas only (see tests/unit/test_filter_facts.py).
    hosts = {
        "gpu01": dict(node, gpu_facts_from_dir=str(BUNDLES / "a100-mig")),
        "gpu02": dict(node, gpu_facts_from_dir=str(BUNDLES / "a100-mig-ptxas-12.6")),
    }
    inventory.write_text(yaml.safe_dump({"all": {"children": {"cluster": {"hosts": hosts}}}}))

    env = _clean_env(ANSIBLE_CONFIG=str(cfg), ANSIBLE_COLLECTIONS_PATH=str(collections))
    return {"tmp": tmp, "tarball": tarballs[0], "installed": installed, "inventory": inventory, "env": env}


def test_tarball_holds_the_collection_and_nothing_else(site):
    with tarfile.open(site["tarball"]) as tar:
        names = [n.removeprefix("./") for n in tar.getnames()]
    for wanted in ("roles/", "plugins/", "playbooks/"):
        assert any(n.startswith(wanted) for n in names), wanted
    for wanted in ("meta/runtime.yml", "MANIFEST.json", "playbooks/site.yml", "playbooks/verify.yml",
                   "roles/nccl_health/tasks/main.yml", "plugins/modules/gpu_facts.py"):
        assert wanted in names, wanted
    for unwanted in ("inventories", "molecule", "tests/standin", "scripts", ".cache", "collections",
                     "reports", "bundles", ".venv", ".git"):
        leaked = [n for n in names if n == unwanted or n.startswith(unwanted + "/")]
        assert leaked == [], leaked[:5]


def test_only_the_installed_copy_is_visible(site):
    proc = _run([_tool("ansible-galaxy"), "collection", "list", "lockstep.gpu", "--format", "json"],
                cwd=site["tmp"], env=site["env"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = json.loads(proc.stdout)
    assert list(found) == [str(site["installed"].parents[1])], found


def test_module_and_filters_report_the_drift(site):
    """gpu_facts from two saved bundles, through components and drift."""
    playbook = site["tmp"] / "drift.yml"
    # Three lines: the module on every host, then once the drift of all of them.
    playbook.write_text(
        "- hosts: all\n"
        "  gather_facts: false\n"
        "  tasks: [{lockstep.gpu.gpu_facts: {from_dir: '{{ gpu_facts_from_dir }}'}}, {run_once: true, ansible.builtin.debug: {msg: \""
        "{{ (dict(ansible_play_hosts | zip(ansible_play_hosts | map('extract', hostvars, ['ansible_facts', 'gpu_facts'])"
        " | map('lockstep.gpu.components'))) | lockstep.gpu.drift).drifts | map('lockstep.gpu.drift_line') | list }}\"}}]\n"
    )
    assert len(playbook.read_text().splitlines()) == 3
    proc = _run([_tool("ansible-playbook"), "-i", str(site["inventory"]), str(playbook)],
                cwd=site["tmp"], env=site["env"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    match = re.search(r'"msg": \[(.*?)\]', proc.stdout, re.S)
    assert match, proc.stdout
    lines = json.loads("[" + match.group(1) + "]")
    assert lines == ["gpu02: cuda.ptxas expected 12.1.105, actual 12.6.85 (differs)"], proc.stdout


def test_verify_playbook_by_fqcn_writes_its_reports_beside_the_inventory(site):
    """lockstep.gpu.verify on the bundles: reports in inventories/tiny/reports/, not in the collection."""
    proc = _run([_tool("ansible-playbook"), "lockstep.gpu.verify", "-i", str(site["inventory"])],
                cwd=site["tmp"], env=site["env"])
    assert proc.returncode == 2, proc.stdout + proc.stderr  # a failed play: the nodes differ
    assert "gpu02: cuda.ptxas expected 12.1.105, actual 12.6.85 (differs)" in proc.stdout, proc.stdout
    reports = site["inventory"].parent / "reports"
    report = json.loads((reports / "drift.json").read_text())
    assert [(d["host"], d["component"], d["expected"], d["actual"]) for d in report["drifts"]] == [
        ("gpu02", "cuda.ptxas", "12.1.105", "12.6.85")]
    assert (reports / "drift.md").is_file() and (reports / "drift.html").is_file()
    assert not list(site["installed"].parent.parent.parent.rglob("drift.json"))


@pytest.mark.parametrize("playbook", ["site", "verify", "nccl_health", "collect_bundles", "preflight"])
def test_collection_playbooks_by_fqcn(site, playbook):
    proc = _run([_tool("ansible-playbook"), f"lockstep.gpu.{playbook}", "--syntax-check",
                 "-i", str(site["inventory"])], cwd=site["tmp"], env=site["env"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # The installed copy's file, not the clone's.
    assert f"playbook: {site['installed'] / 'playbooks' / playbook}.yml" in proc.stdout, proc.stdout
