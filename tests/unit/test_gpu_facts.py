# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for the gpu_facts module and plugins/module_utils/lockstep_collect.py.

The bundles under tests/fixtures/bundles hold real outputs only (see their
README.md). Broken inputs are made here at run time by cutting real files.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
from pathlib import Path

import pytest
from ansible_collections.lockstep.gpu.plugins.module_utils.analyse import upstream_version
from ansible_collections.lockstep.gpu.plugins.module_utils.bundle import DPKG_FORMAT, empty_raw, is_bundle_file
from ansible_collections.lockstep.gpu.plugins.module_utils.collect import Runner, collect_live
from ansible_collections.lockstep.gpu.plugins.module_utils.conda import build_conda_envs
from ansible_collections.lockstep.gpu.plugins.module_utils.parsing import ParseError
from ansible_collections.lockstep.gpu.plugins.module_utils.system import (
    drop_stale_ldconfig, parse_docker_info, parse_ldconfig, parse_os_release, parse_package_list,
)
from ansible_collections.lockstep.gpu.plugins.module_utils.analyse import analyse
from ansible_collections.lockstep.gpu.plugins.module_utils.bundle import collect_from_dir, save_bundle

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
BUNDLES = FIXTURES / "bundles"

SECTIONS = ("os", "driver", "gpus", "cuda", "nccl", "cudnn", "docker", "conda",
            "network", "nccl_conf", "slurm", "storage", "gpustack", "packages", "errors")


def facts_of(name, **kwargs):
    return analyse(collect_from_dir(str(BUNDLES / name)), **kwargs)


def copy_bundle(name, tmp_path):
    dest = tmp_path / name
    shutil.copytree(BUNDLES / name, dest)
    return dest


# --------------------------------------------------------------------------
# analyse() over the bundles
# --------------------------------------------------------------------------


def test_every_bundle_has_only_bundle_file_names():
    for bundle in BUNDLES.iterdir():
        if bundle.is_dir():
            for f in bundle.iterdir():
                assert is_bundle_file(f.name), f"{bundle.name}/{f.name}"


def test_a100_mig_bundle():
    facts = facts_of("a100-mig")
    assert set(facts) == set(SECTIONS)
    assert facts["errors"] == {}
    driver = facts["driver"]
    assert driver["present"] is True and driver["loaded"] is True
    assert driver["version"] == "535.54.03"
    assert driver["cuda_version"] == "12.2"
    assert driver["source"] == "nvidia-smi"
    gpus = facts["gpus"]
    assert gpus["present"] is True
    assert gpus["count"] == 1
    assert gpus["models"] == ["NVIDIA A100-SXM4-80GB"]
    gpu = gpus["list"][0]
    assert gpu["mig_mode"] == "Enabled"
    assert gpu["mig_devices"] == 4
    assert gpu["memory_total_mib"] == 81920
    assert gpu["ecc_mode"] == "Enabled"
    assert gpu["vbios_version"] == "92.00.36.00.02"
    assert any("attached_gpus says 4" in w for w in gpus["warnings"])
    cuda = facts["cuda"]
    assert cuda["present"] is True
    assert cuda["ptxas"] == "12.1.105"
    assert cuda["nvcc"] is None and cuda["default"] is None and cuda["toolkits"] == {}
    nccl = facts["nccl"]
    assert nccl["present"] is True
    assert nccl["header"] == "2.18.1"
    assert nccl["package"] is None and nccl["soname"] is None
    # Not in the bundle: absent, not errors.
    assert facts["docker"]["present"] is False
    assert facts["cudnn"]["present"] is False
    assert facts["nccl_conf"] == {"present": False, "sha256": None, "settings": {}}
    assert facts["network"] == {"interfaces": {}, "rdma": []}
    assert facts["conda"] == {"envs": {}}


def test_p100_bundle():
    facts = facts_of("p100")
    assert facts["errors"] == {}
    assert facts["driver"]["version"] == "510.47.03"
    assert facts["driver"]["cuda_version"] == "11.6"
    assert facts["gpus"]["count"] == 1
    gpu = facts["gpus"]["list"][0]
    assert gpu["name"] == "Tesla P100-PCIE-16GB"
    assert gpu["mig_mode"] is None  # Pascal has no MIG
    assert gpu["uuid"].startswith("GPU-")
    assert facts["cuda"]["present"] is False
    assert facts["nccl"]["present"] is False


def test_k80_bundle_keeps_output_order_and_reads_ibstat():
    facts = facts_of("k80-ib")
    assert facts["errors"] == {}
    assert facts["driver"]["version"] == "430.26"
    assert facts["driver"]["cuda_version"] is None  # <cuda_version>Not Found</cuda_version>
    gpus = facts["gpus"]
    assert gpus["count"] == 4
    assert gpus["models"] == ["Tesla K80"]
    assert [g["minor_number"] for g in gpus["list"]] == [1, 2, 3, 0]
    assert [g["index"] for g in gpus["list"]] == [0, 1, 2, 3]
    assert facts["cuda"]["nvcc"] == "10.1.243"
    rdma = {ca["name"]: ca for ca in facts["network"]["rdma"]}
    assert len(rdma) == 12
    assert rdma["mlx5_0"]["firmware"] == "28.39.1002"
    assert rdma["mlx5_0"]["ports"][0]["rate"] == 400
    assert rdma["mlx5_2"]["ports"][0]["state"] == "Down"


def test_proc_only_bundle_reports_the_driver_from_proc():
    facts = facts_of("open-565-proc")
    driver = facts["driver"]
    assert driver["present"] is True
    assert driver["source"] == "proc"
    assert driver["version"] == "565.57.01"
    assert driver["open_kernel_module"] is True
    assert driver["kernel_module"] == "NVIDIA UNIX Open Kernel Module for x86_64"
    assert driver["cuda_version"] is None
    assert facts["gpus"] == {"present": False, "count": 0, "models": [], "list": [], "warnings": []}


def test_broken_xml_is_an_error_of_that_file_only():
    facts = facts_of("broken-xml")  # must not raise
    errors = facts["errors"]
    assert list(errors) == ["nvidia-smi-q-x.xml"]
    message = errors["nvidia-smi-q-x.xml"]
    assert message.startswith("nvidia-smi-q-x.xml: ")
    assert "truncated" in message
    assert facts["driver"] == {"error": message}
    assert facts["gpus"] == {"error": message}
    # Other sections still fill.
    assert facts["cuda"]["ptxas"] == "12.1.105"
    assert facts["nccl"]["header"] == "2.18.1"
    assert facts["docker"]["present"] is False


def test_empty_bundle_is_all_absent_and_no_errors(tmp_path):
    facts = analyse(collect_from_dir(str(tmp_path)))
    assert facts["errors"] == {}
    for section in ("driver", "gpus", "cuda", "nccl", "cudnn", "docker", "nccl_conf"):
        assert facts[section]["present"] is False, section
    assert facts["driver"]["version"] is None
    assert facts["gpus"]["count"] == 0
    assert facts["os"] == {"distribution": None, "id": None, "version": None,
                           "pretty_name": None, "kernel": None}
    assert facts["network"] == {"interfaces": {}, "rdma": []}
    assert facts["conda"] == {"envs": {}}
    assert facts["packages"] == {}


def test_analyse_of_an_empty_raw_dict():
    assert analyse({})["errors"] == {}
    assert analyse(empty_raw()) == analyse({})


def test_ci_host_bundle():
    """Real outputs of the Lockstep CI host: Debian 12, CUDA 13.0 from wheels,
    no GPU, docker CLI without a daemon."""
    facts = facts_of("ci-host", packages=["bash", "python3", "no-such-package", "libc6*"])
    text = (BUNDLES / "ci-host" / "dpkg-query.txt").read_text()
    bash = next(line.split("\t")[1] for line in text.splitlines() if line.startswith("bash\t"))
    assert facts["os"]["distribution"] == "Debian"
    assert facts["os"]["version"] == "12"
    assert facts["os"]["pretty_name"] == "Debian GNU/Linux 12 (bookworm)"
    assert facts["os"]["kernel"] == (BUNDLES / "ci-host" / "uname-r.txt").read_text().strip()
    assert facts["driver"]["present"] is False
    assert facts["driver"]["packages"] == {}
    assert facts["gpus"]["present"] is False
    cuda = facts["cuda"]
    assert cuda["default"] == "13.0"
    assert cuda["default_path"] == "/usr/local/cuda-13.0"
    assert cuda["nvcc"] == "13.0.88" and cuda["ptxas"] == "13.0.88"
    assert cuda["cudart_soname"] == "libcudart.so.13"
    assert facts["nccl"]["present"] is False
    assert facts["packages"]["bash"] == bash
    assert "python3" in facts["packages"]
    assert "no-such-package" not in facts["packages"]
    assert "libc6" in facts["packages"]  # from the pattern
    assert facts["network"]["interfaces"]["eth0"]["mtu"] == 1400
    # The daemon was down when the bundle was made: the live collector wrote
    # that to collect-errors.json, and the offline analysis repeats it.
    assert list(facts["errors"]) == ["docker-info.json"]
    assert "Cannot connect to the Docker daemon" in facts["errors"]["docker-info.json"]
    assert facts["docker"] == {"error": facts["errors"]["docker-info.json"]}


def test_collect_from_dir_ignores_other_files(tmp_path):
    bundle = copy_bundle("p100", tmp_path)
    (bundle / "README.md").write_text("not a bundle file\n")
    (bundle / "cuda-version-x.json").write_text("{}")
    raw = collect_from_dir(str(bundle))
    assert "README.md" not in raw and "cuda-version-x.json" not in raw
    assert raw["nvidia-smi-q-x.xml"] is not None
    assert raw["ptxas-version.txt"] is None


@pytest.mark.parametrize(
    "name, source, keep, section",
    [
        # ends inside "Built on ...", before the release line
        ("ptxas-version.txt", FIXTURES / "nvidia" / "ptxas-version_12.1.105.txt", 100, "cuda"),
        ("nvcc-version.txt", FIXTURES / "nvidia" / "nvcc-version_12.5.82.txt", 100, "cuda"),
        # "NVRM version: NVIDIA UNIX x86_64 Kernel": no version yet
        ("proc-driver-nvidia-version.txt",
         FIXTURES / "nvidia" / "proc-driver-nvidia-version_384.98.txt", 40, "driver"),
        # inside the quoted PRETTY_NAME value
        ("os-release", BUNDLES / "ci-host" / "os-release", 26, "os"),
        ("cuda-version-12.8.json", FIXTURES / "nvidia" / "cuda-version-json_12.8.2_windows.json",
         300, "cuda"),
        # after "#define NCCL_MAJOR 2", before NCCL_MINOR
        ("nccl.h", FIXTURES / "nccl" / "nccl_2.18.1_nvidia-nccl-cu12.h", 450, "nccl"),
    ],
)
def test_a_cut_source_is_an_error_of_its_file(tmp_path, name, source, keep, section):
    bundle = copy_bundle("a100-mig", tmp_path)
    (bundle / name).write_bytes(Path(source).read_bytes()[:keep])
    facts = analyse(collect_from_dir(str(bundle)))
    assert list(facts["errors"]) == [name]
    assert facts["errors"][name].startswith(name + ": ")
    assert facts[section] == {"error": facts["errors"][name]}
    if section != "driver":
        assert facts["driver"]["version"] == "535.54.03"


def test_a_whole_cuda_version_json_is_read(tmp_path):
    bundle = copy_bundle("a100-mig", tmp_path)
    shutil.copy(FIXTURES / "nvidia" / "cuda-version-json_12.8.2_windows.json",
                bundle / "cuda-version-12.8.json")
    facts = analyse(collect_from_dir(str(bundle)))
    assert facts["cuda"]["toolkits"] == {"12.8": "12.8.2"}


def test_cut_ibstat_marks_only_rdma(tmp_path):
    bundle = copy_bundle("k80-ib", tmp_path)
    data = (bundle / "ibstat.txt").read_bytes()
    (bundle / "ibstat.txt").write_bytes(data[: data.index(b"Port 1:") + 20])
    shutil.copy(BUNDLES / "ci-host" / "net-interfaces.json", bundle / "net-interfaces.json")
    facts = analyse(collect_from_dir(str(bundle)))
    assert list(facts["errors"]) == ["ibstat.txt"]
    assert facts["network"]["rdma"] == {"error": facts["errors"]["ibstat.txt"]}
    assert facts["network"]["interfaces"]["eth0"]["mtu"] == 1400
    assert facts["gpus"]["count"] == 4


def test_cut_package_list_marks_the_sections_built_from_it(tmp_path):
    bundle = copy_bundle("ci-host", tmp_path)
    lines = (bundle / "dpkg-query.txt").read_text().splitlines(keepends=True)
    half = len(lines) // 2
    # cut inside a line, after the package name: "name<TAB>vers"
    cut = "".join(lines[:half]) + lines[half][: lines[half].index("\t") + 4]
    (bundle / "dpkg-query.txt").write_text(cut)
    facts = analyse(collect_from_dir(str(bundle)), packages=["bash"])
    message = facts["errors"]["dpkg-query.txt"]
    assert message.startswith(f"dpkg-query.txt: line {half + 1} ")
    for section in ("driver", "cuda", "nccl", "cudnn", "packages"):
        assert facts[section] == {"error": message}, section
    # docker names the first of its unreadable sources: docker-info.json here
    assert facts["docker"] == {"error": facts["errors"]["docker-info.json"]}
    assert facts["os"]["version"] == "12"
    assert facts["network"]["interfaces"]["eth0"]["mtu"] == 1400


def test_bad_collect_errors_json_is_itself_an_error(tmp_path):
    bundle = copy_bundle("p100", tmp_path)
    (bundle / "collect-errors.json").write_bytes(
        (BUNDLES / "ci-host" / "collect-errors.json").read_bytes()[:40]
    )
    facts = analyse(collect_from_dir(str(bundle)))
    assert list(facts["errors"]) == ["collect-errors.json"]
    assert facts["driver"]["version"] == "510.47.03"


# --------------------------------------------------------------------------
# Small parsers (real CI-host outputs; cut or edited copies made here)
# --------------------------------------------------------------------------


def test_parse_package_list_keeps_installed_only():
    text = (BUNDLES / "ci-host" / "dpkg-query.txt").read_text()
    pkgs = parse_package_list(text, "dpkg-query.txt")
    assert len(pkgs) == len({line.split("\t")[0] for line in text.splitlines()})
    # The same lines with a status dpkg prints for removed packages are dropped.
    removed = "".join(
        line.replace("\tii ", "\trc ") if line.startswith("bash\t") else line
        for line in text.splitlines(keepends=True)
    )
    assert "bash" in pkgs and "bash" not in parse_package_list(removed, "x")
    rpm_style = "kernel\t(none):5.14.0-362.el9\tii \n"  # rpm -qa --qf with no epoch
    assert parse_package_list(rpm_style) == {"kernel": "5.14.0-362.el9"}
    with pytest.raises(ParseError, match="^dpkg-query.txt: empty input"):
        parse_package_list("", "dpkg-query.txt")


def test_parse_ldconfig_of_the_ci_host():
    libs = parse_ldconfig((BUNDLES / "ci-host" / "ldconfig-p.txt").read_text(), "ldconfig-p.txt")
    assert libs["libcudart.so.13"] == ["/usr/local/cuda-13.0/lib/libcudart.so.13"]
    with pytest.raises(ParseError, match="not ldconfig -p output"):
        parse_ldconfig("hello\n", "ldconfig-p.txt")


def test_a_library_whose_file_is_gone_leaves_the_ldconfig_cache_it_was_read_from():
    """The ci-host's cache as if libcudart.so.13 had been removed by force: the soname is gone, the rest kept."""
    text = (BUNDLES / "ci-host" / "ldconfig-p.txt").read_text()
    gone = "/usr/local/cuda-13.0/lib/libcudart.so.13"
    cleaned = drop_stale_ldconfig(text, lambda path: path != gone)
    libs, before = parse_ldconfig(cleaned), parse_ldconfig(text)
    assert "libcudart.so.13" not in libs and set(before) - set(libs) == {"libcudart.so.13"}
    assert f"# stale ldconfig cache entry, file gone: libcudart.so.13 => {gone}" in cleaned.splitlines()
    assert drop_stale_ldconfig(text, lambda path: True) == text


def test_parse_os_release_rejects_a_cut_quote():
    text = (BUNDLES / "ci-host" / "os-release").read_text()
    assert parse_os_release(text)["PRETTY_NAME"] == "Debian GNU/Linux 12 (bookworm)"
    with pytest.raises(ParseError, match="^os-release: line 1"):
        parse_os_release(text[:20], "os-release")


def test_parse_docker_info_without_a_daemon():
    """What `docker info --format '{{json .}}'` printed on the CI host with the
    daemon down (exit status 1), abridged to the fields that matter."""
    printed = json.dumps({"ServerVersion": "", "Runtimes": None, "DefaultRuntime": "",
                          "ClientInfo": {"Version": "28.2.2"}})
    with pytest.raises(ParseError, match="no ServerVersion"):
        parse_docker_info(printed, "docker-info.json")


def test_upstream_version():
    assert upstream_version("1:535.54.03-0ubuntu1") == "535.54.03"
    assert upstream_version("2.18.3-1+cuda12.1") == "2.18.3"
    assert upstream_version("1.14.3") == "1.14.3"
    assert upstream_version(None) is None


def test_nccl_conf_digest_is_over_the_bytes():
    data = b"# Lockstep\nNCCL_SOCKET_IFNAME=eth0\nNCCL_IB_HCA = mlx5\nnot a setting\n\xff\n"
    raw = {"nccl.conf": data.decode("utf-8", "surrogateescape")}
    facts = analyse(raw)
    assert facts["nccl_conf"]["present"] is True
    assert facts["nccl_conf"]["sha256"] == hashlib.sha256(data).hexdigest()
    assert facts["nccl_conf"]["settings"] == {"NCCL_SOCKET_IFNAME": "eth0", "NCCL_IB_HCA": "mlx5"}


# --------------------------------------------------------------------------
# Live collector with a fake runner
# --------------------------------------------------------------------------


class FakeRunner(Runner):
    """Tools that exist, and what they print (real outputs from the fixtures)."""

    def __init__(self, outputs, with_timeout=True):
        self.outputs = outputs
        self.with_timeout = with_timeout
        self.calls = []

    def which(self, name, opt_dirs=()):
        if name == "timeout":
            return "/usr/bin/timeout" if self.with_timeout else None
        return f"/fake/bin/{name}" if name in self.outputs else None

    def run(self, argv):
        self.calls.append(argv)
        if argv[0] == "/usr/bin/timeout":
            assert argv[1:4] == ["-k", "5", "60"]
            argv = argv[4:]
        result = self.outputs[os.path.basename(argv[0])]
        if isinstance(result, Exception):
            raise result
        return result


def fake_paths(tmp_path, infiniband=True):
    cuda_root = tmp_path / "usr-local"
    (cuda_root / "cuda-12.8").mkdir(parents=True)
    shutil.copy(FIXTURES / "nvidia" / "cuda-version-json_12.8.2_windows.json",
                cuda_root / "cuda-12.8" / "version.json")
    (cuda_root / "cuda-11.0").mkdir()  # no version.json: not a bundle file
    (cuda_root / "cuda").symlink_to("cuda-12.8")
    (cuda_root / "cuda-12").symlink_to("cuda-12.8")  # deb alternatives link: skipped
    include = tmp_path / "include"
    include.mkdir()
    shutil.copy(FIXTURES / "nccl" / "nccl_2.18.1_nvidia-nccl-cu12.h", include / "nccl.h")
    net = tmp_path / "net"
    for name, mtu, speed, state, device in (
        ("lo", "65536", None, "unknown", False),
        ("ib0", "4092", "400000", "up", True),
        ("eth0", "1500", "-1", "down", True),
    ):
        (net / name).mkdir(parents=True)
        (net / name / "mtu").write_text(mtu + "\n")
        (net / name / "operstate").write_text(state + "\n")
        if speed is not None:
            (net / name / "speed").write_text(speed + "\n")
        if device:
            (net / name / "device").mkdir()
    ib = tmp_path / "infiniband"
    ib.mkdir()
    if infiniband:
        (ib / "mlx5_0").mkdir()
    return {
        "proc_driver": str(tmp_path / "proc-version-absent"),
        "cuda_link": str(cuda_root / "cuda"),
        "cuda_root": str(cuda_root),
        "nccl_headers": (str(tmp_path / "absent.h"), str(include / "nccl.h")),
        "os_release": (str(BUNDLES / "ci-host" / "os-release"),),
        "sys_class_net": str(net),
        "sys_class_infiniband": str(ib),
    }


def _read(path):
    return Path(path).read_text()


def test_collect_live_with_fake_tools(tmp_path):
    outputs = {
        "nvidia-smi": (0, _read(BUNDLES / "a100-mig" / "nvidia-smi-q-x.xml"), ""),
        "ptxas": (0, _read(FIXTURES / "nvidia" / "ptxas-version_12.1.105.txt"), ""),
        "ldconfig": (0, _read(BUNDLES / "ci-host" / "ldconfig-p.txt"), ""),
        "dpkg-query": (0, _read(BUNDLES / "ci-host" / "dpkg-query.txt"), ""),
        "docker": (1, "{}", "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. "
                   "Is the docker daemon running?\n"),
        "containerd": (124, "", ""),
        "ibstat": (0, _read(FIXTURES / "rdma" / "ibstat_h100_ndr_ib_all_active.txt"), ""),
    }
    runner = FakeRunner(outputs)
    raw = collect_live(runner, conda_envs_dirs=[str(tmp_path / "no-conda")],
                       nccl_conf=str(tmp_path / "nccl.conf"), paths=fake_paths(tmp_path))
    assert raw["nvidia-smi-q-x.xml"] == outputs["nvidia-smi"][1]
    assert raw["nvcc-version.txt"] is None  # not installed
    assert raw["cuda-default.txt"] == str(tmp_path / "usr-local" / "cuda-12.8") + "\n"
    assert sorted(n for n in raw if n.startswith("cuda-version-")) == ["cuda-version-12.8.json"]
    assert raw["nccl.h"].startswith("/*")
    assert raw["rpm-qa.txt"] is None
    assert raw["docker-info.json"] is None and raw["containerd-version.txt"] is None
    assert raw["nccl.conf"] is None and raw["conda-envs.json"] is None
    problems = json.loads(raw["collect-errors.json"])
    assert set(problems) == {"docker-info.json", "containerd-version.txt"}
    assert "exited with status 1: Cannot connect" in problems["docker-info.json"]
    assert "did not finish within 60 s" in problems["containerd-version.txt"]
    assert json.loads(raw["net-interfaces.json"]) == {
        "eth0": {"mtu": 1500, "speed_mbps": None, "state": "down", "virtual": False},
        "ib0": {"mtu": 4092, "speed_mbps": 400000, "state": "up", "virtual": False},
    }
    assert ["/usr/bin/timeout", "-k", "5", "60", "/fake/bin/nvidia-smi", "-q", "-x"] in runner.calls
    assert ["/usr/bin/timeout", "-k", "5", "60", "/fake/bin/dpkg-query", "-W", "-f",
            DPKG_FORMAT] in runner.calls

    facts = analyse(raw)
    assert facts["driver"]["version"] == "535.54.03"
    assert facts["cuda"]["default"] == "12.8"
    assert facts["cuda"]["default_version"] == "12.8.2"
    assert facts["cuda"]["toolkits"] == {"12.8": "12.8.2"}
    assert facts["nccl"]["header"] == "2.18.1"
    assert len(facts["network"]["rdma"]) == 9
    assert facts["docker"] == {"error": facts["errors"]["docker-info.json"]}
    assert facts["errors"]["containerd-version.txt"].startswith("containerd-version.txt: ")

    # The same texts saved and read back as a bundle give the same facts.
    save_bundle(raw, str(tmp_path / "bundle"))
    assert analyse(collect_from_dir(str(tmp_path / "bundle"))) == facts


def test_collect_live_without_anything(tmp_path):
    runner = FakeRunner({}, with_timeout=False)
    paths = fake_paths(tmp_path, infiniband=False)
    paths.update(cuda_link=str(tmp_path / "x"), cuda_root=str(tmp_path / "x"),
                 nccl_headers=(), sys_class_net=str(tmp_path / "x"))
    raw = collect_live(runner, conda_envs_dirs=[], paths=paths)
    assert runner.calls == []
    present = {name for name, text in raw.items() if text is not None}
    assert present == {"os-release", "uname-r.txt"}
    assert analyse(raw)["errors"] == {}


def test_collect_live_interface_list_and_no_ibstat_without_devices(tmp_path):
    outputs = {"ibstat": (1, "", "ibpanic: [1] main: can't list IB device names\n")}
    runner = FakeRunner(outputs)
    raw = collect_live(runner, interfaces=["lo", "ib9"], conda_envs_dirs=[],
                       paths=fake_paths(tmp_path, infiniband=False))
    assert raw["ibstat.txt"] is None and raw["collect-errors.json"] is None
    assert list(json.loads(raw["net-interfaces.json"])) == ["lo"]


def test_collect_live_records_a_tool_that_cannot_start(tmp_path):
    runner = FakeRunner({"nvidia-smi": PermissionError(13, "Permission denied")})
    raw = collect_live(runner, conda_envs_dirs=[], paths=fake_paths(tmp_path))
    problems = json.loads(raw["collect-errors.json"])
    assert "could not be run" in problems["nvidia-smi-q-x.xml"]
    facts = analyse(raw)
    assert facts["driver"] == {"error": facts["errors"]["nvidia-smi-q-x.xml"]}


# --------------------------------------------------------------------------
# conda environments
# --------------------------------------------------------------------------


def _env(base, name, records, dist_infos, python_dir="python3.10", lock=None):
    """A conda environment laid out as conda does: records in conda-meta,
    wheels' dist-info directories in site-packages."""
    prefix = base / name
    meta = prefix / "conda-meta"
    meta.mkdir(parents=True)
    (meta / "history").write_text("")
    for rec_name, version in records:
        (meta / f"{rec_name}-{version}-0.json").write_text(
            json.dumps({"name": rec_name, "version": version, "files": []})
        )
    site = prefix / "lib" / python_dir / "site-packages"
    site.mkdir(parents=True)
    for dist_name, version in dist_infos:
        info = site / f"{dist_name}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {dist_name}\nVersion: {version}\n"
        )
    if lock is not None:
        (meta / "lockstep-lock.sha256").write_text(lock)
    return prefix


def test_conda_envs(tmp_path):
    envs_dir = tmp_path / "envs"
    _env(envs_dir, "train", [("python", "3.10.13"), ("pytorch", "2.1.0"), ("numpy", "1.26.0")],
         [("torch", "2.1.0+cu121"), ("deepspeed", "0.12.3"), ("numpy", "1.26.0"),
          ("typing_extensions", "4.8.0")],
         lock="ab" * 32 + "  conda-lock.yml\n")
    _env(envs_dir, "bare", [("openssl", "3.0.12")], [], python_dir="python3.11")
    (envs_dir / "not-an-env").mkdir()
    raw_text = build_conda_envs([str(envs_dir), str(tmp_path / "missing")])
    envs = json.loads(raw_text)
    assert sorted(envs) == ["bare", "train"]
    train = envs["train"]
    assert train["python"] == "3.10.13"
    assert train["torch"] == "2.1.0+cu121"  # the wheel Python imports wins over the record
    assert train["deepspeed"] == "0.12.3"
    assert train["lock_sha256"] == "ab" * 32
    lines = sorted({"python==3.10.13", "pytorch==2.1.0", "numpy==1.26.0", "torch==2.1.0+cu121",
                    "deepspeed==0.12.3", "typing-extensions==4.8.0"})
    assert train["packages"] == 6
    assert train["packages_sha256"] == hashlib.sha256(
        "".join(line + "\n" for line in lines).encode()
    ).hexdigest()
    bare = envs["bare"]
    assert bare["python"] == "3.11" and bare["torch"] is None and bare["lock_sha256"] is None

    facts = analyse({"conda-envs.json": raw_text})
    assert facts["conda"]["envs"]["train"]["python"] == "3.10.13"
    assert build_conda_envs([str(tmp_path / "missing")]) is None


def test_conda_envs_json_that_is_not_an_object_is_an_error():
    facts = analyse({"conda-envs.json": "[]\n"})
    assert facts["conda"] == {"error": "conda-envs.json: conda-envs JSON is not a JSON object"}


# --------------------------------------------------------------------------
# save_bundle
# --------------------------------------------------------------------------


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_save_bundle_is_idempotent_and_removes_only_stale_bundle_files(tmp_path):
    raw = collect_from_dir(str(BUNDLES / "a100-mig"))
    dest = tmp_path / "out" / "bundle"
    check = save_bundle(raw, str(dest), check_mode=True)
    assert check["changed"] is True and not dest.exists()

    first = save_bundle(raw, str(dest))
    assert first["changed"] is True
    assert sorted(first["written"]) == ["nccl.h", "nvidia-smi-q-x.xml", "ptxas-version.txt"]
    assert _mode(dest) == 0o755
    for name in first["written"]:
        assert _mode(dest / name) == 0o644
        assert (dest / name).read_bytes() == (BUNDLES / "a100-mig" / name).read_bytes()
    assert save_bundle(raw, str(dest)) == {
        "changed": False, "written": [], "removed": [],
        "files": ["nccl.h", "nvidia-smi-q-x.xml", "ptxas-version.txt"]}

    (dest / "notes.txt").write_text("mine\n")
    (dest / "cuda-version-11.8.json").write_text("{}")
    raw2 = dict(raw, **{"nccl.h": None})
    check = save_bundle(raw2, str(dest), check_mode=True)
    assert check == {"changed": True, "written": [],
                     "removed": ["cuda-version-11.8.json", "nccl.h"],
                     "files": ["nvidia-smi-q-x.xml", "ptxas-version.txt"]}
    assert (dest / "nccl.h").exists()
    assert save_bundle(raw2, str(dest))["removed"] == ["cuda-version-11.8.json", "nccl.h"]
    assert sorted(p.name for p in dest.iterdir()) == ["notes.txt", "nvidia-smi-q-x.xml",
                                                      "ptxas-version.txt"]


def test_save_bundle_ignores_volatile_nvidia_smi_readings(tmp_path):
    raw = collect_from_dir(str(BUNDLES / "a100-mig"))
    save_bundle(raw, str(tmp_path))
    xml = raw["nvidia-smi-q-x.xml"]
    assert "<timestamp>" in xml
    start = xml.index("<timestamp>") + len("<timestamp>")
    later = xml[:start] + "Mon Jan  1 00:00:00 2024" + xml[xml.index("</timestamp>"):]
    result = save_bundle(dict(raw, **{"nvidia-smi-q-x.xml": later}), str(tmp_path))
    assert result["changed"] is False
    other = xml.replace("535.54.03", "535.54.04")
    result = save_bundle(dict(raw, **{"nvidia-smi-q-x.xml": other}), str(tmp_path))
    assert result["written"] == ["nvidia-smi-q-x.xml"]


def test_save_bundle_fixes_modes_and_refuses_a_file_as_directory(tmp_path):
    raw = collect_from_dir(str(BUNDLES / "p100"))
    save_bundle(raw, str(tmp_path / "b"))
    os.chmod(tmp_path / "b" / "nvidia-smi-q-x.xml", 0o600)
    assert save_bundle(raw, str(tmp_path / "b"))["written"] == ["nvidia-smi-q-x.xml"]
    assert _mode(tmp_path / "b" / "nvidia-smi-q-x.xml") == 0o644
    (tmp_path / "f").write_text("")
    with pytest.raises(OSError, match="not a directory"):
        save_bundle(raw, str(tmp_path / "f"))


def test_an_unexpected_parser_error_makes_only_that_source_unreadable(monkeypatch):
    from ansible_collections.lockstep.gpu.plugins.module_utils import analyse as analyse_module

    def broken(text, source=None):
        raise KeyError("a field the parser did not foresee")

    monkeypatch.setattr(analyse_module, "parse_nccl_header", broken)
    facts = analyse_module.analyse(collect_from_dir(str(BUNDLES / "a100-mig")))
    assert facts["errors"] == {"nccl.h": "nccl.h: could not be parsed (KeyError: 'a field the parser did not foresee')"}
    assert facts["nccl"] == {"error": facts["errors"]["nccl.h"]}
    assert facts["driver"]["version"] == "535.54.03" and facts["cuda"]["ptxas"] == "12.1.105"
