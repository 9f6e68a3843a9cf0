"""What verify.yml prints, as an operator sees it in a terminal of 120 columns.

verify.yml runs on a small inventory of saved support bundles (real ones,
tests/fixtures/bundles: a CI host's OS, CUDA and a Docker daemon that did
not answer, an A100's nvidia-smi, ptxas and nccl.h), on the controller,
under Ansible's default callback twice: with the repository's ansible.cfg
(callback_result_format = yaml) and with the JSON result format. Its table
must never be wrapped: no line longer than 120 characters and every row of
the table one component, whole (the YAML callback used to fold "Debian 12"
and long values across lines). Then two consecutive runs with one drift
introduced between them must report exactly that drift as new.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

from ansible_collections.lockstep.gpu.plugins.module_utils.conda import build_conda_envs
import limits
from lockstep_terminal import check_tables, tables
import pytest

ROOT = Path(__file__).resolve().parents[2]
BUNDLES = ROOT / "tests" / "fixtures" / "bundles"
PLAYBOOK = ROOT / ".venv" / "bin" / "ansible-playbook"
COLUMNS = 120
HOSTS = ("gpu1", "gpu2", "gpu3", "gpu4")


def _bundle(dest: Path, gpu: str) -> None:
    """ci-host's bundle with an A100's nvidia-smi, ptxas and nccl.h (``gpu``: a100-mig or a100-mig-ptxas-12.6)."""
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(BUNDLES / "ci-host", dest)
    for source in (BUNDLES / gpu).iterdir():
        shutil.copy(source, dest / source.name)


@pytest.fixture
def cluster(tmp_path):
    hosts = {}
    for name in HOSTS:
        _bundle(tmp_path / "bundles" / name, "a100-mig-ptxas-12.6" if name == "gpu4" else "a100-mig")
        hosts[name] = {"gpu_facts_from_dir": str(tmp_path / "bundles" / name)}
    inventory = tmp_path / "hosts.json"
    inventory.write_text(json.dumps({
        "all": {"vars": {"ansible_connection": "local", "verify_reports_dir": str(tmp_path / "reports"),
                         "verify_expected": {"os.release": "Debian 12", "gpu.models": "NVIDIA A100-SXM4-80GB"}}},
        "cluster": {"hosts": hosts},
        "bundled": {"hosts": {name: {} for name in hosts}},
    }))
    return tmp_path


def verify(cluster: Path, *args: str, result_format: str = "yaml"):
    if not PLAYBOOK.exists():
        pytest.skip("no .venv/bin/ansible-playbook (scripts/bootstrap makes it)")
    env = dict(os.environ, ANSIBLE_CACHE_PLUGIN="memory", ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0",
               ANSIBLE_STDOUT_CALLBACK="default", ANSIBLE_CALLBACK_RESULT_FORMAT=result_format,
               COLUMNS=str(COLUMNS))
    proc = limits.run([str(PLAYBOOK), "-i", str(cluster / "hosts.json"), "playbooks/verify.yml", *args],
                      cwd=ROOT, env=env, capture_output=True, text=True, cpu_s=600, check=False)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads((cluster / "reports" / "drift.json").read_text())
    return proc, report


@pytest.mark.parametrize("result_format", ["yaml", "json"])
def test_the_table_fits_120_columns_and_no_cell_is_wrapped(cluster, result_format):
    proc, report = verify(cluster, "-v", result_format=result_format)
    assert proc.returncode == 2, proc.stdout[-3000:]  # drifts fail the play
    drifted = sorted({d["component"] for d in report["drifts"]})
    assert "cuda.ptxas" in drifted and "docker.runtimes" in drifted
    everything = drifted + sorted(c for c in report["components"] if c not in drifted)
    # At -v: the drifts first, then the whole table, drifted components first.
    check_tables(proc.stdout, result_format, [drifted, everything])
    # "Debian 12" stays whole in its cells (expected and 4 hosts); long values end with an ellipsis.
    _printed, rows = tables(proc.stdout, result_format)[1]
    release = next(row for row in rows if row.startswith("os.release "))
    assert [cell.strip() for cell in re.split(r" {2,}", release)] == ["os.release"] + ["Debian 12"] * 5
    assert any("\u2026" in row for row in rows)
    summary = f"{len(report['drifts'])} drifts on 4 of 4 hosts, in {len(drifted)} of {len(report['components'])} components."
    assert summary in proc.stdout


def test_by_default_only_the_drifts_and_the_summary(cluster):
    for name in HOSTS:  # every node alike: no table at all
        _bundle(cluster / "bundles" / name, "a100-mig")
        shutil.rmtree(cluster / "bundles" / name / "ptxas-version.txt", ignore_errors=True)
    proc, report = verify(cluster, "-e", json.dumps({"verify_ignore": ["docker.*"]}))
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert tables(proc.stdout, "yaml") == []
    assert f"4 hosts agree on {len(report['components'])} components." in proc.stdout
    assert "First recorded run: nothing to compare with." in proc.stdout


def test_a_drift_introduced_between_two_runs_is_reported_as_new(cluster):
    _bundle(cluster / "bundles" / "gpu4", "a100-mig")  # every node on ptxas 12.1
    first, report = verify(cluster)
    assert "cuda.ptxas" not in {d["component"] for d in report["drifts"]}
    _bundle(cluster / "bundles" / "gpu3", "a100-mig-ptxas-12.6")
    second, report = verify(cluster)
    changes = report["changes"]
    assert [(d["host"], d["component"], d["actual"]) for d in changes["new"]] == [("gpu3", "cuda.ptxas", "12.6.85")]
    assert changes["resolved"] == [] and changes["changed"] == []
    assert changes["previous"] == json.loads(sorted((cluster / "reports" / "history").glob("*.json"))[0]
                                             .read_text())["run"]["time"]
    assert "  new: gpu3: cuda.ptxas expected 12.1.105, actual 12.6.85 (differs)" in second.stdout
    assert "1 new drift, 0 resolved." in second.stdout
    html = (cluster / "reports" / "drift.html").read_text()
    assert 'data-host="gpu3" data-component="cuda.ptxas"' in html and 'data-new="true"' in html
    # Back again: resolved; the history holds one report per run.
    _bundle(cluster / "bundles" / "gpu3", "a100-mig")
    third, report = verify(cluster)
    assert [(d["host"], d["component"]) for d in report["changes"]["resolved"]] == [("gpu3", "cuda.ptxas")]
    assert report["changes"]["new"] == []
    assert len(list((cluster / "reports" / "history").glob("*.json"))) == 3


def test_the_history_keeps_the_newest(cluster):
    history = cluster / "reports" / "history"
    history.mkdir(parents=True)
    for n in range(5):
        (history / f"2020010{n}T000000.000000Z.json").write_text("{}")
    proc, report = verify(cluster, "-e", "verify_history_keep=3")  # a string, as -e gives it
    assert proc.returncode == 2 and "Nodes differ" in proc.stdout, proc.stdout[-3000:]
    kept = sorted(p.name for p in history.glob("*.json"))
    assert len(kept) == 3 and kept[:2] == ["20200103T000000.000000Z.json", "20200104T000000.000000Z.json"]
    # The newest earlier file was not a report: named, and the run went on.
    assert "Not compared with the previous run: the previous report is not a drift report." in proc.stdout


def test_torch_built_for_cuda_12_1_on_a_510_driver_drifts_naming_both(cluster, tmp_path):
    """Every node holds environment train with the real torch 2.1.2 (CUDA 12.1) files; gpu4 runs a P100's
    driver 510.47.03, too old even with CUDA minor version compatibility."""
    from tests.unit.test_torch_checks import _train_env  # the same environment as the unit tests'
    envs_json = build_conda_envs([str(_train_env(tmp_path / "envs").parent)])
    for name in HOSTS:
        _bundle(cluster / "bundles" / name, "a100-mig")
        (cluster / "bundles" / name / "conda-envs.json").write_text(envs_json)
    shutil.copy(BUNDLES / "p100" / "nvidia-smi-q-x.xml", cluster / "bundles" / "gpu4" / "nvidia-smi-q-x.xml")
    proc, report = verify(cluster)
    drifted = {(d["host"], d["component"]): d for d in report["drifts"]}
    assert drifted[("gpu4", "conda.train.torch_driver")]["actual"] == (
        "torch built for CUDA 12.1 needs NVIDIA driver >= 525.60.13 (>= 530.30.02 without minor version "
        "compatibility); the driver is 510.47.03")
    assert not any(host != "gpu4" and c == "conda.train.torch_driver" for host, c in drifted)
    assert report["by_component"]["conda.train.torch_cuda"]["expected"] == "12.1"
    assert report["by_component"]["conda.train.torch_nccl"]["expected"] == "2.18.1"


def test_a_retaken_component_is_compared_by_majority_and_written_into_the_lock(cluster):
    """playbooks/add_node.yml's verify: with a stack lock, verify_lock_retake's components are compared by
    majority instead of with the lock, and a clean run writes the lock again with their new values only."""
    import yaml
    from ansible_collections.lockstep.gpu.plugins.plugin_utils.drift import stack_lock

    ignore = json.dumps({"verify_ignore": ["docker.*"]})
    _bundle(cluster / "bundles" / "gpu4", "a100-mig")  # every node on ptxas 12.1
    proc, report = verify(cluster, "-e", ignore)
    assert proc.returncode == 0, proc.stdout[-3000:]
    locked = stack_lock(report)
    assert locked["cuda.ptxas"] == "12.1.105" and "os.release" in locked
    lock_file = cluster / "stack-lock.yml"  # verify_lock_file: beside the reports' folder
    lock_file.write_text(yaml.safe_dump({"components": {**locked, "cuda.ptxas": "12.0.76"}}))
    # The lock wins: every node drifts on the component that moved alike.
    proc, report = verify(cluster, "-e", ignore)
    assert proc.returncode == 2 and sorted(d["host"] for d in report["drifts"]) == list(HOSTS), proc.stdout[-3000:]
    # Retaken: the nodes agree, the run passes, and only that component's value changes in the lock.
    retake = json.dumps({"verify_lock_retake": ["cuda.ptx*"]})
    proc, report = verify(cluster, "-e", ignore, "-e", retake)
    assert proc.returncode == 0 and report["locked"], proc.stdout[-3000:]
    assert report["retaken"] == ["cuda.ptxas"] and "cuda.ptxas" not in report["new"], report["new"]
    lock = yaml.safe_load(lock_file.read_text())
    assert lock["components"] == locked and sorted(lock["hosts"]) == list(HOSTS)
    # Retaken but not agreed on: gpu4 drifts from the majority, and the lock is left as it was.
    _bundle(cluster / "bundles" / "gpu4", "a100-mig-ptxas-12.6")
    before = lock_file.read_text()
    proc, report = verify(cluster, "-e", ignore, "-e", retake)
    assert proc.returncode == 2 and [(d["host"], d["component"]) for d in report["drifts"]] == [("gpu4", "cuda.ptxas")]
    assert lock_file.read_text() == before
