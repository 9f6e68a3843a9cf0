"""Role conda on three nodes, installed from one lock.

prepare.yml built the TEST STAND-IN channel (tests/standin/conda) and ran
scripts/conda-lock on the scenario inventory; converge installed the lock.
Tests that alter a node put it back (converge) before they end.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ansible_collections.lockstep.gpu.plugins.module_utils.conda import entry_sha256
from conftest import ansible_playbook, node

ROOT = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"])
INVENTORY = Path(os.environ["MOLECULE_INVENTORY_FILE"]).parent
LOCK = INVENTORY / "conda-lock.yml"
ENV = "lockstep"
PREFIX = f"/opt/conda/envs/{ENV}"
NODES = ("cd1", "cd2", "cd3")
PINNED = {"six": "1.17.0", "packaging": "24.2"}
STANDIN = "/var/tmp/lockstep-conda-standin"



def lock_entry() -> dict:
    return yaml.safe_load(LOCK.read_text())["environments"][ENV]


def declared() -> list[dict]:
    return yaml.safe_load((INVENTORY / "hosts").read_text())["all"]["hosts"]["cd1"]["conda_environments"]


def imported_version(host, pkg: str) -> str:
    return host.check_output(
        f"bash -lc 'conda activate {ENV} && python -c \"import {pkg}; print({pkg}.__version__)\"'")


@pytest.mark.parametrize("pkg", sorted(PINNED))
def test_login_shell_activates_env_with_pinned_versions(host, pkg):
    assert imported_version(host, pkg) == PINNED[pkg]


def test_env_carries_its_lock_hash(host):
    assert host.file(f"{PREFIX}/conda-meta/lockstep-lock.sha256").content_string.split()[0] == \
        lock_entry()["sha256"]
    assert host.check_output(f"bash -lc 'conda activate {ENV} && python -c \"import sys; print(sys.prefix)\"'") \
        == PREFIX


def test_nodes_identical_and_verify_passes():
    assert len({state(name) for name in NODES}) == 1
    result = ansible_playbook("playbooks/verify.yml")
    assert result.returncode == 0, result.output


def state(name: str) -> str:
    return node(name).check_output(f"cat {PREFIX}/conda-meta/lockstep-state.json")


def test_altered_envs_fail_verify_naming_node_and_env_then_converge_restores():
    # cd2: a different version of a locked pip package; cd3: an extra package.
    node("cd2").check_output(
        f"{PREFIX}/bin/python -m pip install -q --no-index --find-links {STANDIN}/wheels six==1.16.0")
    node("cd3").check_output(f"mkdir -p {PREFIX}/lib/python3.11/site-packages/intruder-1.0.dist-info")
    result = ansible_playbook("playbooks/verify.yml")
    assert result.returncode != 0
    for name in ("cd2", "cd3"):
        assert f"{name}: conda.{ENV}.packages_sha256" in result.output, result.output
    assert "cd1: conda." not in result.output
    result = ansible_playbook("playbooks/conda.yml")
    assert result.returncode == 0, result.output
    assert imported_version(node("cd2"), "six") == PINNED["six"]
    assert not node("cd3").file(f"{PREFIX}/lib/python3.11/site-packages/intruder-1.0.dist-info").exists
    assert len({state(name) for name in NODES}) == 1


def _lock(tmp_path, envs):
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(
        {"all": {"children": {"cluster": {"hosts": {"cd1": {}}, "vars": {"conda_environments": envs}}}}}))
    return subprocess.run([sys.executable, str(ROOT / "scripts/conda-lock"), str(tmp_path)],
                          capture_output=True, text=True, check=False)


def test_bad_spec_fails_at_lock_time_and_installs_nothing(tmp_path):
    envs = declared()
    for packages, message in (
        (["pip", "no-such-package"], "No candidates were found for no-such-package"),  # unknown
        (["packaging ==24.2", "packaging <24"], "No candidates were found for packaging <24"),  # conflict
    ):
        envs[0]["packages"] = packages
        result = _lock(tmp_path, envs)
        assert result.returncode == 1
        assert message in result.stderr and "nothing written" in result.stderr, result.stderr
        assert not (tmp_path / "conda-lock.yml").exists()
    # The role refuses a declaration its lock does not match: nothing changes on any node.
    (tmp_path / "vars.json").write_text(json.dumps({"conda_environments": envs}))
    before = {name: state(name) for name in NODES}
    play = ansible_playbook("playbooks/conda.yml", "-e", f"@{tmp_path / 'vars.json'}")
    assert play.returncode != 0
    assert f"does not lock conda_environments {ENV} as declared now" in play.output, play.output
    assert before == {name: state(name) for name in NODES}


DEAD = "http://127.0.0.1:9/channel"


def test_channel_not_answering_fails_at_lock_time_naming_it(tmp_path):
    envs = declared()
    envs[0]["channels"] = [DEAD]
    result = _lock(tmp_path, envs)
    assert result.returncode == 1
    assert f"channel {DEAD} does not answer" in result.stderr


def test_channel_not_answering_at_install_names_it_and_envs_keep_working(tmp_path):
    lock = yaml.safe_load(LOCK.read_text())
    broken = json.loads(json.dumps(lock["environments"][ENV]))
    broken["declared"] = dict(broken["declared"], name="broken", channels=[DEAD])
    broken["channels"] = [DEAD]
    for pkg in broken["conda"]:
        pkg["fn"] = "unreachable-" + pkg["fn"]
        pkg["channel"], pkg["url"] = DEAD, f"{DEAD}/{pkg['subdir']}/{pkg['fn']}"
    broken["sha256"] = entry_sha256(broken)
    lock["environments"]["broken"] = broken
    (tmp_path / "conda-lock.yml").write_text(yaml.safe_dump(lock))
    (tmp_path / "vars.json").write_text(json.dumps({
        "conda_environments": declared() + [broken["declared"]],
        "conda_lock_file": str(tmp_path / "conda-lock.yml")}))
    play = ansible_playbook("playbooks/conda.yml", "-e", f"@{tmp_path / 'vars.json'}")
    assert play.returncode != 0
    # Downloaded once per cluster: the controller's fetch into the cluster
    # cache fails, naming the URL, before any node changes.
    assert f"cannot fetch {DEAD}/linux-64/unreachable-" in play.output, play.output
    for name in NODES:
        assert imported_version(node(name), "six") == PINNED["six"]
        assert not node(name).file("/opt/conda/envs/broken").exists
