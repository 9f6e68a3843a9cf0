"""tests/standin/cuda.yml: the TEST STAND-IN of NVIDIA's CUDA repository.

The roles nvidia_driver and cuda rely on NVIDIA's names, versions and
dependency structure; these tests pin that structure down, so that an edit
to the spec that would let the molecule scenario pass for the wrong reason
(a toolkit without the real ptxas, a driver meta-package whose parts have
other versions) fails here first.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.standin import build_apt_repo as bar

ROOT = Path(__file__).resolve().parents[2]

SPEC = bar.load_spec([ROOT / "tests" / "standin" / "cuda.yml"])
REPO = next(r for r in SPEC["repositories"] if r["name"] == "cuda")
PACKAGES = {p["name"]: p for p in REPO["packages"]}


def _closure(name: str) -> set[str]:
    """Every package reachable through Depends (within the stand-in)."""
    seen, todo = set(), [name]
    while todo:
        current = todo.pop()
        if current in seen or current not in PACKAGES:
            continue
        seen.add(current)
        for dep in PACKAGES[current].get("depends", []):
            todo.append(re.split(r"[\s(]", dep.strip())[0])
    return seen


def test_repository_stands_in_for_nvidias_debian12_repository():
    assert REPO["path"] == "compute/cuda/repos/debian12/x86_64"
    assert REPO["stands_in_for"] == "https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64"


def test_driver_meta_package_pins_its_parts_to_its_own_version():
    meta = PACKAGES["cuda-drivers-535"]
    assert meta["version"] == "535.261.03-1"
    for dep in meta["depends"]:
        assert dep.endswith("(= 535.261.03-1)"), dep
        assert PACKAGES[dep.split()[0]]["version"] == "535.261.03-1"
    assert PACKAGES["nvidia-fabricmanager-535"]["version"] == meta["version"]


def test_toolkit_12_1_brings_nvidias_real_ptxas_and_libcudart():
    assert PACKAGES["cuda-toolkit-12-1"]["version"] == "12.1.1-1"
    closure = _closure("cuda-toolkit-12-1")
    assert {"cuda-nvcc-12-1", "cuda-cudart-12-1", "cuda-toolkit-12-1-config-common",
            "cuda-toolkit-12-config-common", "cuda-toolkit-config-common"} <= closure
    files = {f["path"]: f for name in closure for f in PACKAGES[name].get("files", [])}
    ptxas = files["/usr/local/cuda-12.1/bin/ptxas"]
    assert (ptxas["wheel"], ptxas["member"]) == ("nvidia-cuda-nvcc-cu12", "nvidia/cuda_nvcc/bin/ptxas")
    cudart = files["/usr/local/cuda-12.1/targets/x86_64-linux/lib/libcudart.so.12.1.105"]
    assert cudart["member"] == "nvidia/cuda_runtime/lib/libcudart.so.12"
    assert SPEC["wheels"]["nvidia-cuda-nvcc-cu12"]["sha256"] == (
        "a0712a05ffd57d9f017580ffcc808b207f7f4ef7a5ca8ac1312318b153739a18")
    assert SPEC["wheels"]["nvidia-cuda-runtime-cu12"]["sha256"] == (
        "6e258468ddf5796e25f1dc591a31029fa317d97a0a94ed93468fc86301d61e40")


def test_version_json_parses_as_cuda_12_1_1():
    from ansible_collections.lockstep.gpu.plugins.module_utils.nvidia import parse_cuda_version_json

    files = {f["path"]: f for f in PACKAGES["cuda-toolkit-12-1"]["files"]}
    parsed = parse_cuda_version_json(files["/usr/local/cuda-12.1/version.json"]["content"])
    assert parsed["version"] == "12.1.1" and parsed["components"]["cuda_nvcc"] == "12.1.105"
