# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for plugin_utils/components.py (filters lockstep.gpu.components, fact_summary) over analysed support bundles."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.lockstep.gpu.plugins.module_utils.analyse import analyse
from ansible_collections.lockstep.gpu.plugins.module_utils.bundle import collect_from_dir
from ansible_collections.lockstep.gpu.plugins.plugin_utils.drift import drift as drift_report
from ansible_collections.lockstep.gpu.plugins.filter.stack import FilterModule
from ansible_collections.lockstep.gpu.plugins.plugin_utils.components import components, fact_summary

ROOT = Path(__file__).resolve().parents[2]
BUNDLES = ROOT / "tests" / "fixtures" / "bundles"


def facts_of(name, **kwargs):
    return analyse(collect_from_dir(str(BUNDLES / name)), **kwargs)


def components_of(name, **kwargs):
    return components(facts_of(name))


def _drifts(report):
    return {(d["host"], d["component"], d["reason"]) for d in report["drifts"]}


def test_a100_mig_components():
    assert components_of("a100-mig") == {
        "driver.version": "535.54.03",
        "driver.cuda_version": "12.2",
        "driver.loaded": True,
        "gpu.count": 1,
        "gpu.models": "NVIDIA A100-SXM4-80GB",
        "gpu.persistence_mode": "Disabled",
        "gpu.ecc_mode": "Enabled",
        "gpu.mig_mode": "Enabled",
        "gpu.vbios": "92.00.36.00.02",
        "gpu.memory_total_mib": "81920",
        "cuda.ptxas": "12.1.105",
        "nccl.header": "2.18.1",
    }


def test_k80_components_join_per_gpu_values_and_read_rdma():
    comps = components_of("k80-ib")
    assert comps["gpu.count"] == 4
    assert comps["gpu.models"] == "Tesla K80"
    assert comps["gpu.vbios"] == "80.21.1F.00.05, 80.21.1F.00.06"
    assert "driver.cuda_version" not in comps  # nvidia-smi printed "Not Found"
    assert "gpu.mig_mode" not in comps  # Kepler: no MIG
    assert comps["rdma.mlx5_0.firmware"] == "28.39.1002"
    assert comps["rdma.mlx5_0.1.state"] == "Active"
    assert comps["rdma.mlx5_0.1.rate"] == 400
    assert comps["rdma.mlx5_0.1.link_layer"] == "InfiniBand"
    assert comps["rdma.mlx5_2.1.state"] == "Down"
    assert len([c for c in comps if c.startswith("rdma.") and c.endswith(".firmware")]) == 12


def test_proc_only_driver_components():
    assert components_of("open-565-proc") == {
        "driver.version": "565.57.01",
        "driver.loaded": True,
        "driver.kernel_module": "NVIDIA UNIX Open Kernel Module for x86_64",
        "driver.kernel_module_version": "565.57.01",
    }


def test_ci_host_components():
    facts = facts_of("ci-host", packages=["bash", "no-such-package"])
    comps = components(facts)
    assert comps["os.release"] == "Debian 12"
    assert comps["os.kernel"] == (BUNDLES / "ci-host" / "uname-r.txt").read_text().strip()
    assert comps["cuda.default"] == "13.0"
    assert comps["cuda.nvcc"] == comps["cuda.ptxas"] == "13.0.88"
    assert comps["cuda.cudart"] == "libcudart.so.13"
    assert comps["net.eth0.mtu"] == 1400
    assert comps["net.eth0.state"] == "up"
    assert "net.eth0.speed_mbps" not in comps  # the kernel reports no speed for it
    assert comps["pkg.bash"] == facts["packages"]["bash"]
    assert "pkg.no-such-package" not in comps
    assert not any(c.startswith(("driver.", "gpu.", "nccl.", "cudnn.")) for c in comps)
    # docker's daemon was down: every docker component names the file.
    docker = {c: v for c, v in comps.items() if c.startswith("docker.")}
    assert len(docker) == 7
    for value in docker.values():
        assert value == {"error": facts["errors"]["docker-info.json"]}
        assert value["error"].startswith("docker-info.json: ")
    # packages= picks names, and names unknown ones by omission only.
    only = components(facts, packages=["no-such-package"])
    assert not any(c.startswith("pkg.") for c in only)


def test_unreadable_section_yields_error_components():
    facts = facts_of("broken-xml")
    comps = components(facts)
    message = facts["errors"]["nvidia-smi-q-x.xml"]
    errors = {c for c, v in comps.items() if isinstance(v, dict)}
    assert errors == {
        "driver.version", "driver.cuda_version", "driver.loaded", "driver.kernel_module",
        "driver.kernel_module_version", "gpu.count", "gpu.models", "gpu.persistence_mode",
        "gpu.ecc_mode", "gpu.mig_mode", "gpu.vbios", "gpu.memory_total_mib",
    }
    for component in errors:
        assert comps[component] == {"error": message}
        assert comps[component]["error"].startswith("nvidia-smi-q-x.xml: ")
    assert comps["cuda.ptxas"] == "12.1.105"
    assert comps["nccl.header"] == "2.18.1"


def test_error_components_of_named_sections():
    facts = analyse({"conda-envs.json": "[]", "net-interfaces.json": "{", "ibstat.txt": "x\n",
                     "dpkg-query.txt": "bash\n"})
    comps = components(facts)
    assert comps["conda"]["error"].startswith("conda-envs.json: ")
    assert comps["net"]["error"].startswith("net-interfaces.json: ")
    assert comps["rdma"]["error"].startswith("ibstat.txt: ")
    assert comps["pkg"]["error"].startswith("dpkg-query.txt: ")
    named = components(facts, packages=["libnccl2", "bash"])
    assert "pkg" not in named
    assert named["pkg.libnccl2"] == named["pkg.bash"] == comps["pkg"]


def test_conda_components():
    facts = analyse({"conda-envs.json": json.dumps({"train": {
        "python": "3.10.13", "torch": "2.1.0", "deepspeed": None,
        "packages_sha256": "a" * 64, "lock_sha256": None, "prefix": "/opt/conda/envs/train",
        "packages": 3}})})
    assert components(facts) == {
        "conda.train.python": "3.10.13",
        "conda.train.torch": "2.1.0",
        "conda.train.packages_sha256": "a" * 64,
    }


def test_no_identities_in_components():
    for bundle in sorted(p.name for p in BUNDLES.iterdir() if p.is_dir()):
        facts = facts_of(bundle)
        comps = components(facts)
        text = json.dumps(comps)
        gpus = facts["gpus"].get("list", []) if "error" not in facts["gpus"] else []
        for gpu in gpus:
            for field in ("uuid", "serial", "pci_bus_id"):
                if gpu[field]:
                    assert gpu[field] not in text, (bundle, field)
        assert "GPU-" not in text
        for ca in facts["network"]["rdma"] if isinstance(facts["network"]["rdma"], list) else []:
            assert ca["node_guid"] not in text
            for port in ca["ports"]:
                assert port["port_guid"] not in text
        assert not any(k.split(".")[-1] in ("uuid", "serial", "pci_bus_id", "hostname")
                       for k in comps)
        for value in comps.values():
            assert isinstance(value, (str, int, bool)) or set(value) == {"error"}


def test_drift_reports_exactly_the_differing_component():
    facts = {
        "gpu01": components(facts_of("a100-mig")),
        "gpu02": components(facts_of("a100-mig")),
        "gpu03": components(facts_of("a100-mig-ptxas-12.6")),
    }
    report = drift_report(facts)
    assert _drifts(report) == {("gpu03", "cuda.ptxas", "differs")}
    assert report["drifts"][0]["expected"] == "12.1.105"
    assert report["drifts"][0]["actual"] == "12.6.85"


def test_drift_between_two_different_nodes():
    facts = {
        "a1": components(facts_of("a100-mig")),
        "a2": components(facts_of("a100-mig")),
        "p1": components(facts_of("p100")),
    }
    report = drift_report(facts)
    assert _drifts(report) == {
        ("p1", "driver.version", "differs"),
        ("p1", "driver.cuda_version", "differs"),
        ("p1", "gpu.models", "differs"),
        ("p1", "gpu.vbios", "differs"),
        ("p1", "gpu.memory_total_mib", "differs"),
        ("p1", "gpu.mig_mode", "missing"),
        ("p1", "cuda.ptxas", "missing"),
        ("p1", "nccl.header", "missing"),
    }
    # Same count, persistence and ECC mode: not reported.
    assert report["by_component"]["gpu.count"]["deviating_hosts"] == []


def test_drift_names_the_unreadable_file():
    facts = {
        "a1": components(facts_of("a100-mig")),
        "a2": components(facts_of("a100-mig")),
        "b1": components(facts_of("broken-xml")),
    }
    report = drift_report(facts)
    assert {d["host"] for d in report["drifts"]} == {"b1"}
    assert {d["reason"] for d in report["drifts"]} == {"unreadable"}
    for drift in report["drifts"]:
        assert drift["component"].startswith(("driver.", "gpu."))
        assert drift["actual"]["error"].startswith("nvidia-smi-q-x.xml: ")


def test_summary():
    assert fact_summary(facts_of("a100-mig")) == (
        "driver 535.54.03 (CUDA 12.2), CUDA 12.1.105, NCCL 2.18.1, 1× NVIDIA A100-SXM4-80GB"
    )
    assert fact_summary(facts_of("broken-xml")) == (
        "driver unreadable, CUDA 12.1.105, NCCL 2.18.1, GPUs unreadable "
        "(1 unreadable: nvidia-smi-q-x.xml)"
    )
    empty = analyse({})
    assert fact_summary(empty) == "driver absent, CUDA absent, NCCL absent, no nvidia-smi"
    assert fact_summary({"gpu_facts": facts_of("p100")}).startswith("driver 510.47.03")


def test_accepts_ansible_facts_and_rejects_junk():
    facts = facts_of("p100")
    assert components({"gpu_facts": facts}) == components(facts)
    with pytest.raises(AnsibleFilterError):
        components("nope")
    with pytest.raises(AnsibleFilterError):
        components(facts, packages="bash")
    assert set(FilterModule().filters()) == {"components", "fact_summary", "os_release"}
