"""verify.yml on a live three-node cluster and on saved bundles.

These tests run playbooks from the controller, as a cluster admin would,
and read the reports verify.yml writes. The nodes carry stand-in NCCL
packages (see ../prepare.yml) at 2.18.3; one test moves dr3 to 2.18.1.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import ansible_playbook, node

ROOT = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"])
EPHEMERAL = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"])
REPORTS = EPHEMERAL / "reports"
NODES = ("dr1", "dr2", "dr3")
GOOD, OLD = "2.18.3-1+cuda12.1", "2.18.1-1+cuda12.1"
REAL_XML = ROOT / "tests/fixtures/nvidia/nvidia-smi-q-x_tesla-p100_510.47.03.xml"


def playbook(name: str, *extra: str, inventory: str | None = None):
    return ansible_playbook(f"playbooks/{name}", *extra, inventory=inventory)


def report() -> dict:
    return json.loads((REPORTS / "drift.json").read_text())


def drifts(rep: dict) -> list[tuple[str, str, str, str]]:
    return sorted((d["host"], d["component"], str(d["expected"]), str(d["actual"]), d["reason"])
                  for d in rep["drifts"])


def install_nccl(name: str, version: str) -> None:
    node(name).check_output(
        "dpkg -i /var/tmp/lockstep-standin/libnccl2_%s.deb" % version)


@pytest.fixture
def dr3_on_old_nccl():
    install_nccl("dr3", OLD)
    yield
    install_nccl("dr3", GOOD)


def bundle_inventory(tmp_path: Path, bundles: Path) -> str:
    """An inventory of the same nodes, each read from its saved bundle only."""
    hosts = {n: {"gpu_facts_from_dir": str(bundles / n)} for n in NODES}
    inv = {"all": {"children": {"cluster": {"hosts": hosts}},
                   "vars": {"verify_expected": {"os.release": "Debian 12",
                                                "nccl.package": GOOD, "nccl.header": "2.18.1"},
                            "verify_reports_dir": str(REPORTS)}}}
    path = tmp_path / "bundles.yml"
    path.write_text(json.dumps(inv))
    return str(path)


def test_identical_nodes_pass():
    result = playbook("verify.yml")
    assert result.returncode == 0, result.stdout[-3000:]
    rep = report()
    assert rep["ok"] and rep["drifts"] == []
    assert rep["hosts"] == list(NODES)
    # The declared values were really read from every node, not assumed.
    assert rep["by_component"]["nccl.package"]["expected"] == GOOD
    assert rep["by_component"]["nccl.header"]["expected"] == "2.18.1"
    assert rep["by_component"]["os.release"]["deviating_hosts"] == []


def test_one_node_with_another_nccl_fails_naming_it(dr3_on_old_nccl):
    result = playbook("verify.yml")
    assert result.returncode != 0
    assert f"dr3: nccl.package expected {GOOD}, actual {OLD} (differs)" in result.output
    rep = report()
    assert not rep["ok"]
    assert drifts(rep) == [("dr3", "nccl.package", GOOD, OLD, "differs")]
    html = (REPORTS / "drift.html").read_text()
    assert "dr3" in html and OLD in html and 'class="drift"' in html
    assert f"| dr3 | nccl.package | {GOOD} | {OLD} | differs |" in (REPORTS / "drift.md").read_text()


def test_uniformly_wrong_cluster_fails_on_every_node():
    expected = json.dumps({"verify_expected": {"nccl.package": "2.19.3-1+cuda12.2"}})
    result = playbook("verify.yml", "-e", expected)
    assert result.returncode != 0
    assert drifts(report()) == [
        (n, "nccl.package", "2.19.3-1+cuda12.2", GOOD, "differs") for n in NODES]


def test_bundles_give_the_same_verdicts(tmp_path, dr3_on_old_nccl):
    live = playbook("verify.yml")
    live_drifts = drifts(report())
    bundles = tmp_path / "bundles"
    collected = playbook("collect_bundles.yml", "-e", f"lockstep_bundles_dir={bundles}")
    assert collected.returncode == 0, collected.stdout[-3000:]
    for n in NODES:
        assert (bundles / n / "dpkg-query.txt").is_file()
        assert (bundles / n / "nccl.h").is_file()
    offline = playbook("verify.yml", inventory=bundle_inventory(tmp_path, bundles))
    assert live.returncode != 0 and offline.returncode != 0
    assert drifts(report()) == live_drifts == [("dr3", "nccl.package", GOOD, OLD, "differs")]


def test_broken_nvidia_smi_xml_in_a_bundle_is_reported_not_a_crash(tmp_path):
    bundles = tmp_path / "bundles"
    assert playbook("collect_bundles.yml", "-e", f"lockstep_bundles_dir={bundles}").returncode == 0
    # Give every node the same real nvidia-smi output, then cut dr2's in half.
    xml = REAL_XML.read_text()
    for n in NODES:
        (bundles / n / "nvidia-smi-q-x.xml").write_text(xml)
    (bundles / "dr2" / "nvidia-smi-q-x.xml").write_text(xml[: len(xml) // 2])
    result = playbook("verify.yml", inventory=bundle_inventory(tmp_path, bundles))
    assert result.returncode == 2, result.stdout[-3000:]  # a failed play, not a crash
    assert "Traceback" not in result.stdout + result.stderr
    rep = report()
    unreadable = [d for d in rep["drifts"] if d["reason"] == "unreadable"]
    assert unreadable and {d["host"] for d in unreadable} == {"dr2"}
    assert all("nvidia-smi-q-x.xml" in str(d["actual"]) for d in unreadable)
    assert "driver.version" in {d["component"] for d in unreadable}
    # The two readable nodes agree on the real P100's driver.
    assert rep["by_component"]["driver.version"]["expected"] == "510.47.03"
    shutil.rmtree(bundles)
