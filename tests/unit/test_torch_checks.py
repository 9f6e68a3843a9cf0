"""torch in the conda environments against the node's own GPU stack:
gpu_facts' torch_cuda / torch_nccl / torch_cudnn on the real files of
PyPI's torch 2.1.2 wheels (tests/fixtures/torch/SOURCES.md), and the
torch/driver and torch-NCCL/system-NCCL checks (plugin_utils/torch_checks.py)
on real version strings."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.lockstep.gpu.plugins.module_utils.conda import build_conda_envs, torch_cuda
from ansible_collections.lockstep.gpu.plugins.plugin_utils.torch_checks import (
    OK, torch_check, torch_driver, torch_nccl_warning,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "torch"


def _train_env(base: Path) -> Path:
    """An environment 'train' laid out as conda and pip leave it, with the real torch 2.1.2 files."""
    prefix = base / "train"
    (prefix / "conda-meta").mkdir(parents=True)
    (prefix / "conda-meta" / "python-3.11.7-0.json").write_text(json.dumps({"name": "python", "version": "3.11.7"}))
    site = prefix / "lib" / "python3.11" / "site-packages"
    for name, version, fixture in (("torch", "2.1.2", "torch-2.1.2-METADATA"),
                                   ("nvidia_nccl_cu12", "2.18.1", "nvidia_nccl_cu12-2.18.1-METADATA"),
                                   ("nvidia_cudnn_cu12", "8.9.2.26", "nvidia_cudnn_cu12-8.9.2.26-METADATA")):
        info = site / f"{name}-{version}.dist-info"
        info.mkdir(parents=True)
        shutil.copy(FIXTURES / fixture, info / "METADATA")
    (site / "torch").mkdir()
    shutil.copy(FIXTURES / "torch-2.1.2-cu121-version.py", site / "torch" / "version.py")
    return prefix


def test_gpu_facts_reads_torch_its_cuda_build_and_the_nccl_and_cudnn_it_loads(tmp_path):
    _train_env(tmp_path / "envs")
    train = json.loads(build_conda_envs([str(tmp_path / "envs")]))["train"]
    assert (train["python"], train["torch"], train["torch_cuda"]) == ("3.11.7", "2.1.2", "12.1")
    assert (train["torch_nccl"], train["torch_cudnn"], train["deepspeed"]) == ("2.18.1", "8.9.2.26", None)


def test_torch_version_py_forms(tmp_path):
    assert torch_cuda(str(tmp_path)) is None  # no torch
    (tmp_path / "torch").mkdir()
    real = (FIXTURES / "torch-2.1.2-cu121-version.py").read_text()
    (tmp_path / "torch" / "version.py").write_text(real)
    assert torch_cuda(str(tmp_path)) == "12.1"
    # Later releases annotate it (cuda: Optional[str] = '12.1'); CPU builds have None.
    (tmp_path / "torch" / "version.py").write_text(real.replace("cuda = '12.1'", "cuda: Optional[str] = '12.4'"))
    assert torch_cuda(str(tmp_path)) == "12.4"
    (tmp_path / "torch" / "version.py").write_text(real.replace("cuda = '12.1'", "cuda = None"))
    assert torch_cuda(str(tmp_path)) is None


@pytest.mark.parametrize("driver, mode, result", [
    ("535.261.03", "minor_compat", OK),
    ("530.30.02", "toolkit", OK),
    ("525.85.12", "minor_compat", OK),  # CUDA 12 minor version compatibility
    ("525.60.13", "minor_compat", OK),
    ("525.85.12", "toolkit",
     "torch built for CUDA 12.1 needs NVIDIA driver >= 530.30.02; the driver is 525.85.12"),
    ("520.61.05", "minor_compat",
     "torch built for CUDA 12.1 needs NVIDIA driver >= 525.60.13 (>= 530.30.02 without minor version "
     "compatibility); the driver is 520.61.05"),
    ("535.261.03-1~deb12u1", "minor_compat", OK),  # a package version is read as its upstream
])
def test_torch_cuda_build_against_the_driver(driver, mode, result):
    assert torch_driver("12.1", driver, mode) == result


def test_an_unknown_cuda_build_is_named_not_a_crash():
    assert torch_driver("99.1", "535.261.03").startswith("torch's CUDA build 99.1 cannot be checked: ")
    with pytest.raises(AnsibleFilterError, match="mode must be one of"):
        torch_driver("12.1", "535.261.03", "loose")


def test_torch_nccl_against_the_system_libnccl2():
    assert torch_nccl_warning("dp1", "train", "2.18.1", "2.18.3-1+cuda12.1") is None
    warning = torch_nccl_warning("dp1", "train", "2.18.1", "2.19.3-1+cuda12.3")
    assert warning == (
        "dp1: environment train loads NCCL 2.18.1 (conda.train.torch_nccl, the wheel torch uses), the system has "
        "libnccl2 2.19.3-1+cuda12.3 (nccl.package, what /etc/nccl.conf tunes): NCCL 2.18 vs 2.19; pin "
        "nvidia-nccl-cu12 to 2.19.x in the environment, or libnccl2 to 2.18.x")


def test_torch_check_over_a_cluster():
    stack = {"driver.version": "535.261.03", "nccl.package": "2.18.3-1+cuda12.1", "conda.train.torch": "2.1.2",
             "conda.train.torch_cuda": "12.1", "conda.train.torch_nccl": "2.18.1"}
    facts = {"dp1": dict(stack), "dp2": dict(stack, **{"driver.version": "520.61.05"}),
             "dp3": dict(stack, **{"nccl.package": "2.19.3-1+cuda12.3"}),
             "cpu1": {"conda.train.torch_cuda": "12.1"},  # no driver: torch runs on the CPU there
             "gone": {"collect": {"error": "no facts"}}}
    result = torch_check(facts)
    assert result["expected"] == {"conda.train.torch_driver": OK}
    assert [result["components"][h].get("conda.train.torch_driver") for h in ("dp1", "dp3", "cpu1")] == [OK, OK, None]
    assert result["components"]["dp2"]["conda.train.torch_driver"].endswith("the driver is 520.61.05")
    assert result["components"]["gone"] == facts["gone"]
    assert len(result["warnings"]) == 1 and result["warnings"][0].startswith("dp3: environment train loads NCCL 2.18.1")
    with pytest.raises(AnsibleFilterError, match="not a mapping"):
        torch_check({"dp1": ["x"]})
