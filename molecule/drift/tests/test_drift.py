"""verify.yml on a live three-node cluster and on saved bundles.

These tests run playbooks from the controller, as a cluster admin would,
and read the reports verify.yml writes. The nodes carry stand-in NCCL
packages (see ../prepare.yml) at 2.18.3; some tests move dr3 to 2.18.1.
The HTML report is opened in headless Chromium (tests/tooling/
lockstep_browser.py), which saves reports/drift.png; the terminal output is
read back at 120 columns under both result formats (lockstep_terminal.py).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
import yaml
from conftest import ansible_playbook, node

ROOT = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"])
sys.path.insert(0, str(ROOT / "tests" / "tooling"))
import lockstep_browser as browser  # noqa: E402
import lockstep_terminal as terminal  # noqa: E402

EPHEMERAL = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"])
REPORTS = EPHEMERAL / "reports"
NODES = ("dr1", "dr2", "dr3")
GOOD, OLD = "2.18.3-1+cuda12.1", "2.18.1-1+cuda12.1"
REAL_XML = ROOT / "tests/fixtures/nvidia/nvidia-smi-q-x_tesla-p100_510.47.03.xml"


# Where a copy of the browser's screenshot and the report stays after the
# scenario is destroyed (README's docs/drift-report.png comes from there).
KEEP = ROOT / ".cache" / "molecule-reports" / "drift"


def playbook(name: str, *extra: str, inventory: str | None = None, env: dict | None = None):
    return ansible_playbook(f"playbooks/{name}", *extra, inventory=inventory, env=env)


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
    assert 'data-state="drift" data-host="dr3" data-count="1" data-component="nccl.package"' in html and OLD in html
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


def test_a_drift_introduced_between_two_runs_is_reported_as_exactly_that_new_drift():
    before = playbook("verify.yml")
    assert before.returncode == 0, before.stdout[-3000:]
    install_nccl("dr3", OLD)
    try:
        after = playbook("verify.yml")
    finally:
        install_nccl("dr3", GOOD)
    rep = report()
    changes = rep["changes"]
    assert [(d["host"], d["component"], d["expected"], d["actual"], d["reason"]) for d in changes["new"]] == [
        ("dr3", "nccl.package", GOOD, OLD, "differs")]
    assert changes["resolved"] == [] and changes["changed"] == [] and changes["hosts_added"] == []
    assert f"new: dr3: nccl.package expected {GOOD}, actual {OLD} (differs)" in after.output
    assert "1 new drift, 0 resolved." in after.output
    # Each run is in the history; the newest is this report, the one before it the clean run.
    history = sorted((REPORTS / "history").glob("*.json"))
    assert json.loads(history[-1].read_text()) == rep
    previous = json.loads(history[-2].read_text())
    assert previous["drifts"] == [] and changes["previous"] == previous["run"]["time"]
    # Put back, the same drift is resolved.
    again = playbook("verify.yml")
    assert again.returncode == 0, again.stdout[-3000:]
    assert [(d["host"], d["component"]) for d in report()["changes"]["resolved"]] == [("dr3", "nccl.package")]


@pytest.mark.skipif(browser.chromium() is None, reason="no Chromium (scripts/bootstrap installs Debian's)")
def test_the_html_report_in_a_browser_marks_the_drifted_cell(dr3_on_old_nccl):
    assert playbook("verify.yml").returncode != 0
    page = REPORTS / "drift.html"
    found = browser.probe(page)
    assert found["resources"] == [] and found["filters_shown"]
    assert [c["hosts"] for c in found["columns"]] == [["dr1"], ["dr2"], ["dr3"]]
    # Through the DOM: the drifted cell is marked and names host, component, expected and actual.
    odd = [(c["host"], c["component"], c["state"], c["reason"]) for c in found["cells"] if c["state"] != "ok"]
    assert odd == [("dr3", "nccl.package", "drift", "differs")]
    cell = next(c for c in found["cells"] if c["state"] == "drift")
    assert OLD in cell["text"] and f"expected {GOOD}" in cell["text"] and "\u2717" in cell["text"]
    assert cell["title"] == f"dr3 \u00b7 nccl.package: expected {GOOD}, actual {OLD} (differs)"
    agreeing = next(c for c in found["cells"] if c["host"] == "dr1" and c["component"] == "nccl.package")
    assert agreeing["state"] == "ok" and cell["background"] != agreeing["background"]
    assert found["only_drifts"] == {"rows": ["nccl.package"], "columns": ["dr3"]}
    # The screenshot shows it: the drifted cell lies in the window, painted in its colour.
    png = REPORTS / "drift.png"
    seconds = browser.screenshot(page, png)
    left, top, width, height = cell["rect"]
    assert cell["visible"] and top + height < browser.WINDOW[1] and left + width < browser.WINDOW[0]
    size_w, size_h, rows = browser.png_pixels(png, upto=int(top + height) + 1)
    assert (size_w, size_h) == browser.WINDOW
    assert browser.colour_in(rows, cell["rect"]) == browser.css_rgb(cell["background"])
    assert browser.colour_in(rows, agreeing["rect"]) == browser.css_rgb(agreeing["background"])
    print(f"\nheadless Chromium: DOM probe {found['wall_s']:.2f} s (report laid out in {found['loaded_ms']:.0f} ms), "
          f"screenshot {seconds:.2f} s")
    KEEP.mkdir(parents=True, exist_ok=True)
    shutil.copy(png, KEEP / "drift.png")
    shutil.copy(page, KEEP / "drift.html")


@pytest.mark.parametrize("result_format", ["yaml", "json"])
def test_the_terminal_table_fits_120_columns_under_both_result_formats(dr3_on_old_nccl, result_format):
    result = playbook("verify.yml", "-v", env={"ANSIBLE_STDOUT_CALLBACK": "default", "ANSIBLE_FORCE_COLOR": "1",
                                               "ANSIBLE_CALLBACK_RESULT_FORMAT": result_format})
    assert result.returncode == 2, result.stdout[-3000:]
    rep = report()
    everything = ["nccl.package"] + [c for c in rep["components"] if c != "nccl.package"]
    # The drifts (by default), then the whole table (-v): one whole row per component.
    found = terminal.check_tables(result.stdout, result_format, [["nccl.package"], everything])
    release = next(row for row in found[1][1] if row.startswith("os.release "))
    assert release.split() == ["os.release"] + ["Debian", "12"] * 4  # expected and 3 hosts, on one row


# Issue 27: the stack lock. nccl.package is declared in this scenario; the
# tests declare os.release only, so that NCCL is compared by majority unless
# the lock records it.
LOCK = EPHEMERAL / "stack-lock.yml"  # verify_lock_file: beside verify_reports_dir
OS_ONLY = json.dumps({"verify_expected": {"os.release": "Debian 12"}})


@pytest.fixture
def every_node_on_old_nccl_and_a_lock():
    try:
        yield
    finally:
        for name in NODES:
            install_nccl(name, GOOD)
        LOCK.unlink(missing_ok=True)


def test_the_lock_makes_a_change_on_every_node_alike_a_drift_of_each(every_node_on_old_nccl_and_a_lock):
    result = playbook("lock.yml", "-e", OS_ONLY)
    assert result.returncode == 0, result.output[-3000:]
    lock = yaml.safe_load(LOCK.read_text())
    assert lock["hosts"] == list(NODES) and lock["components"]["nccl.package"] == GOOD
    assert lock["components"]["os.release"] == "Debian 12" and len(lock["components"]) == len(report()["components"])
    for name in NODES:
        install_nccl(name, OLD)
    # Without the lock, as before: the nodes agree with each other.
    assert playbook("verify.yml", "-e", OS_ONLY, "-e", "verify_use_lock=false").returncode == 0
    result = playbook("verify.yml", "-e", OS_ONLY)
    assert result.returncode != 0
    for name in NODES:
        assert f"{name}: nccl.package expected {GOOD}, actual {OLD} (differs)" in result.output, result.output[-3000:]
    assert drifts(report()) == [(name, "nccl.package", GOOD, OLD, "differs") for name in NODES]
    assert report()["by_component"]["nccl.package"]["source"] == "lock"
    assert 'data-component="nccl.package" data-source="lock"' in (REPORTS / "drift.html").read_text()
    # A cluster that drifts cannot be locked: lock.yml fails and leaves the lock as it was.
    install_nccl("dr3", GOOD)
    before = LOCK.read_text()
    result = playbook("lock.yml", "-e", OS_ONLY)
    assert result.returncode != 0 and "Write every component's value" not in result.output
    assert LOCK.read_text() == before
