"""Lockstep's plugins as Ansible runs them from this clone: the gpu_facts
module by its FQCN (lockstep.gpu.gpu_facts) through `ansible`, its
documentation through `ansible-doc`, a filter in a template.

The clone is the collection: ansible.cfg's collections_path finds it through
collections/ansible_collections/lockstep/gpu. tests/unit holds the same
logic's unit tests; these check the wiring.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

from ansible_collections.lockstep.gpu.plugins.module_utils.analyse import analyse
from ansible_collections.lockstep.gpu.plugins.module_utils.bundle import collect_from_dir
from ansible_collections.lockstep.gpu.plugins.plugin_utils.components import components
import limits

ROOT = Path(__file__).resolve().parents[2]
BUNDLES = ROOT / "tests" / "fixtures" / "bundles"
ANSIBLE = ROOT / ".venv" / "bin" / "ansible"
ANSIBLE_DOC = ROOT / ".venv" / "bin" / "ansible-doc"
ENV = dict(
    os.environ,
    ANSIBLE_CACHE_PLUGIN="memory",  # keep ad-hoc runs out of the repo's fact cache
    ANSIBLE_DEPRECATION_WARNINGS="False",
    ANSIBLE_LOCALHOST_WARNING="False",
    ANSIBLE_NOCOLOR="1",
)
SECTIONS = ("os", "driver", "gpus", "cuda", "nccl", "cudnn", "docker", "conda",
            "network", "nccl_conf", "slurm", "storage", "gpustack", "packages", "errors")


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


# --------------------------------------------------------------------------
# The module, end to end
# --------------------------------------------------------------------------


def run_module(args, check=False):
    cmd = [str(ANSIBLE), "localhost", "-m", "lockstep.gpu.gpu_facts", "-a", args, "-o"]
    if check:
        cmd.append("--check")
    proc = limits.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, cpu_s=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    line = next(li for li in proc.stdout.splitlines() if li.startswith("localhost | "))
    status, _, payload = line.partition(" => ")
    return status.split(" | ")[1], json.loads(payload)


def test_module_from_dir():
    status, result = run_module(f"from_dir={BUNDLES / 'a100-mig'}")
    assert status == "SUCCESS"
    assert result["changed"] is False
    facts = result["gpu_facts"]
    assert result["ansible_facts"]["gpu_facts"] == facts
    assert facts["driver"]["version"] == "535.54.03"
    assert facts["gpus"]["list"][0]["mig_mode"] == "Enabled"
    assert facts["cuda"]["ptxas"] == "12.1.105"
    assert facts["nccl"]["header"] == "2.18.1"
    assert facts == analyse(collect_from_dir(str(BUNDLES / "a100-mig")))


def test_module_from_dir_broken_bundle_does_not_fail():
    status, result = run_module(f"from_dir={BUNDLES / 'broken-xml'}")
    assert status == "SUCCESS"
    assert "nvidia-smi-q-x.xml" in result["gpu_facts"]["errors"]
    assert result["gpu_facts"]["cuda"]["ptxas"] == "12.1.105"


def test_module_from_dir_that_does_not_exist(tmp_path):
    cmd = [str(ANSIBLE), "localhost", "-m", "lockstep.gpu.gpu_facts", "-a", f"from_dir={tmp_path / 'no'}", "-o"]
    proc = limits.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, cpu_s=300)
    assert proc.returncode != 0
    assert "is not a directory" in proc.stdout


def test_ansible_doc_renders():
    proc = limits.run([str(ANSIBLE_DOC), "-t", "module", "lockstep.gpu.gpu_facts"], cwd=ROOT, env=ENV,
                      capture_output=True, text=True, cpu_s=300)
    assert proc.returncode == 0, proc.stderr
    for name in ("nvidia-smi-q-x.xml", "cuda-version-<X.Y>.json", "conda-envs.json",
                 "collect-errors.json", "save_to", "from_dir"):
        assert name in proc.stdout


def test_module_live_on_this_machine_and_save_to(tmp_path):
    dest = tmp_path / "bundle"
    # lo only: the CI host's veth interfaces come and go with other containers.
    args = f"save_to={dest} interfaces=lo"
    status, result = run_module(args, check=True)
    assert status == "CHANGED" and not dest.exists()

    status, result = run_module(args)
    assert status == "CHANGED"
    facts = result["gpu_facts"]
    assert set(facts) == set(SECTIONS)
    if not os.path.exists("/proc/driver/nvidia/version") and not shutil.which("nvidia-smi"):
        assert facts["driver"]["present"] is False
        assert facts["gpus"]["present"] is False
    assert facts["network"]["interfaces"]["lo"]["mtu"] > 0
    assert facts["os"]["kernel"] == os.uname().release
    saved = sorted(p.name for p in dest.iterdir())
    assert "os-release" in saved and "uname-r.txt" in saved
    assert set(saved) == set(result["bundle"]["written"])
    assert all(_mode(dest / name) == 0o644 for name in saved)
    # The saved bundle analyses to the same facts.
    assert analyse(collect_from_dir(str(dest))) == facts

    status, result = run_module(args)
    assert status == "SUCCESS"
    assert result["changed"] is False
    assert result["bundle"]["written"] == [] and result["bundle"]["removed"] == []


def test_filters_load_in_ansible(tmp_path):
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps(analyse(collect_from_dir(str(BUNDLES / "a100-mig")))))
    env = dict(os.environ, ANSIBLE_CACHE_PLUGIN="memory", ANSIBLE_DEPRECATION_WARNINGS="False",
               ANSIBLE_LOCALHOST_WARNING="False", ANSIBLE_NOCOLOR="1")
    expr = "{{ lookup('file', '" + str(facts) + "') | from_json | lockstep.gpu.components | to_json }}"
    proc = limits.run(
        [str(ROOT / ".venv" / "bin" / "ansible"), "localhost", "-m", "debug", "-a",
         f"msg={expr}", "-o"],
        cwd=ROOT, env=env, capture_output=True, text=True, cpu_s=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    payload = json.loads(proc.stdout.split(" => ", 1)[1])
    assert json.loads(payload["msg"]) == components(analyse(collect_from_dir(str(BUNDLES / "a100-mig"))))
