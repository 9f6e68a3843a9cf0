"""The HTML report of a 500-host cluster in a real browser (headless Chromium).

verify.yml reads 500 saved bundles (real ones: an A100's nvidia-smi, ptxas
and nccl.h; one host has NVIDIA's ptxas 12.6 instead of 12.1) and writes
reports/drift.html. Chromium opens it; a probe script, run by the browser
after the report's own, reads the DOM the browser built and clicks the
filters (lockstep_browser.py).

How fast the page opens (performance.now() once the whole report is parsed,
styled and laid out; 0.1-0.25 s here, against the goal of 2 s) is printed,
not asserted: this stage runs at nice 10 beside molecule, which has starved
it twelvefold, so a bound on it would read the load. The bench
(tests/bench/verify_scale.py, run alone) prints it for 1,000 and 5,000 hosts
beside the 2 s goal.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import limits
import lockstep_browser as browser
import pytest

ROOT = Path(__file__).resolve().parents[2]
BUNDLES = ROOT / "tests" / "fixtures" / "bundles"
PLAYBOOK = ROOT / ".venv" / "bin" / "ansible-playbook"
HOSTS, ODD = 500, 7

pytestmark = pytest.mark.skipif(browser.chromium() is None, reason="no Chromium (scripts/bootstrap installs it)")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    if not PLAYBOOK.exists():
        pytest.skip("no .venv/bin/ansible-playbook (scripts/bootstrap makes it)")
    tmp = tmp_path_factory.mktemp("browser")
    hosts = {}
    for index in range(HOSTS):
        name = f"gpu{index:05d}"
        shutil.copytree(BUNDLES / ("a100-mig-ptxas-12.6" if index == ODD else "a100-mig"), tmp / "bundles" / name)
        hosts[name] = {"gpu_facts_from_dir": str(tmp / "bundles" / name)}
    (tmp / "hosts.json").write_text(json.dumps({
        "all": {"vars": {"ansible_connection": "local", "verify_reports_dir": str(tmp / "reports"),
                         "verify_fail_on_drift": False}},
        "cluster": {"hosts": hosts},
        "bundled": {"hosts": {name: {} for name in hosts}},
    }))
    env = dict(os.environ, ANSIBLE_CACHE_PLUGIN="memory", ANSIBLE_NOCOLOR="1", ANSIBLE_FORKS="20")
    proc = limits.run([str(PLAYBOOK), "-i", str(tmp / "hosts.json"), "playbooks/verify.yml"], cwd=ROOT, env=env,
                      capture_output=True, text=True, cpu_s=600, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return tmp / "reports" / "drift.html"


@pytest.fixture(scope="module")
def page(report):
    return browser.probe(report)


def test_the_page_is_one_file_whose_script_runs(page):
    print(f"\n500-host report: {page['loaded_ms']:.0f} ms in the page (parse, style, layout); "
          f"Chromium's whole run {page['wall_s']:.2f} s")
    assert page["resources"] == []  # one self-contained file: nothing fetched
    assert page["filters_shown"]  # the page's own script ran


def test_identical_hosts_are_folded_into_one_column_with_a_count(page):
    columns = [(c["hosts"][0], c["count"], len(c["hosts"])) for c in page["columns"]]
    assert columns == [(f"gpu{ODD:05d}", 1, 1), ("gpu00000", HOSTS - 1, HOSTS - 1)]
    folded = page["columns"][1]
    assert "+498" in folded["text"] and "499 hosts" in folded["text"]
    assert folded["title"].startswith("gpu00000, gpu00001, gpu00002")
    # Every component has one cell per column, not per host.
    assert len(page["cells"]) == 2 * len(page["rows"])


def test_the_drifted_cell_is_marked_and_names_host_component_expected_actual(page):
    drifted = [c for c in page["cells"] if c["state"] != "ok"]
    assert [(c["host"], c["component"], c["state"]) for c in drifted] == [(f"gpu{ODD:05d}", "cuda.ptxas", "drift")]
    cell = drifted[0]
    assert "12.6.85" in cell["text"] and "expected 12.1.105" in cell["text"]
    assert cell["title"] == f"gpu{ODD:05d} \u00b7 cuda.ptxas: expected 12.1.105, actual 12.6.85 (differs)"
    ok = next(c for c in page["cells"] if c["component"] == "cuda.ptxas" and c["state"] == "ok")
    assert cell["background"] != ok["background"]  # coloured, as well as labelled
    assert cell["visible"]


def test_the_filters_work_in_the_browser(page):
    assert page["only_drifts"] == {"rows": ["cuda.ptxas"], "columns": [f"gpu{ODD:05d}"]}
    assert "cuda.ptxas" not in page["layers"]["cuda"] and "driver.version" in page["layers"]["cuda"]
    assert "driver.version" not in page["layers"]["gpu"]
    assert page["rows_after"] == page["rows"]  # every box back on: every row again
