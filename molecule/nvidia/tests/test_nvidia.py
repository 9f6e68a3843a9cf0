"""State the nvidia_driver and cuda roles must leave on every node of the nvidia scenario.

The nodes install from the local TEST STAND-IN of NVIDIA's CUDA repository
(tests/standin/cuda.yml): NVIDIA's package names and versions, NVIDIA's
real ptxas 12.1.105 and libcudart.so.12 from PyPI wheels. The declared
values come from the inventory (host_vars/nv1.yml), so a role that did
nothing - or wrote its defaults - fails here. The last tests run playbooks
from the controller, as an admin would: an incompatible CUDA/driver pair,
a repository that does not answer and a key that does not match must fail
naming what is wrong, and change nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import zipfile
from pathlib import Path

import pytest
from conftest import ansible_playbook, node

ROOT = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"])
EPHEMERAL = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"])
STANDIN = ROOT / ".cache" / "standin-apt-nvidia"
NODES = ("nv1", "nv2", "nv3")
DRIVER_DEB = "535.261.03-1"
DRIVER_PACKAGES = ["cuda-drivers-535", "nvidia-kernel-dkms", "nvidia-smi", "libcuda1", "libnvidia-ml1",
                   "nvidia-persistenced", "nvidia-fabricmanager-535"]
PTXAS_WHEEL = ROOT / ".cache" / "standin-wheels" / "nvidia_cuda_nvcc_cu12-12.1.105-py3-none-manylinux1_x86_64.whl"
# Molecule forces colour on; the playbooks the tests run print plain text.
os.environ.update(ANSIBLE_FORCE_COLOR="0", ANSIBLE_NOCOLOR="1")


def installed(host, name: str) -> str:
    return host.check_output("dpkg-query -W -f='${Version}' %s", name)


def held(host) -> set[str]:
    return set(host.check_output("apt-mark showhold").split())


# --------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------
@pytest.mark.parametrize("name", DRIVER_PACKAGES)
def test_driver_packages_have_the_declared_version_and_are_held(host, hostvars, name):
    assert installed(host, name) == hostvars["nvidia_driver_version"] + "-1"
    assert name in held(host), f"{name} is not held"


def test_driver_packages_are_pinned(host, hostvars):
    pins = host.file("/etc/apt/preferences.d/lockstep-nvidia-driver").content_string
    assert f"Pin: version {hostvars['nvidia_driver_version']}-*" in pins
    assert "Pin-Priority: 1001" in pins
    policy = host.check_output("apt-cache policy cuda-drivers-535")
    assert f"Installed: {DRIVER_DEB}" in policy and f"*** {DRIVER_DEB} 1001" in policy, policy


def test_distribution_packages_of_the_same_names_are_pinned_away(host):
    # Debian 12's non-free archive has libcuda1 535.261.03-1 too (other
    # dependencies): with source cuda the node must get NVIDIA's.
    pins = host.file("/etc/apt/preferences.d/lockstep-nvidia-driver").content_string
    assert "Pin: release o=Debian\nPin-Priority: -1" in pins
    assert "(Lockstep TEST STAND-IN)" in host.check_output("dpkg-query -W -f='${Description}' libcuda1")


def test_fabric_manager_is_exactly_the_driver_version(host):
    assert installed(host, "nvidia-fabricmanager-535") == installed(host, "cuda-drivers-535")


def test_nouveau_is_blacklisted(host):
    conf = host.file("/etc/modprobe.d/lockstep-blacklist-nouveau.conf")
    lines = conf.content_string.splitlines()
    assert "blacklist nouveau" in lines and "options nouveau modeset=0" in lines


@pytest.mark.parametrize("service", ["nvidia-persistenced", "nvidia-fabricmanager"])
def test_driver_services_are_enabled(host, service):
    assert host.service(service).is_enabled


def test_kernel_steps_are_skipped_in_containers(host):
    # Headers, dkms and the initramfs belong to the host's kernel.
    assert not host.package("dkms").is_installed
    assert host.run("dpkg-query -W 'linux-headers-*'").rc != 0
    assert not host.file("/boot/initrd.img-" + host.check_output("uname -r")).exists


def test_nvidia_repository_is_signed_by_its_keyring(host):
    sources = host.file("/etc/apt/sources.list.d/lockstep-nvidia-cuda.sources").content_string
    assert "URIs: file:///srv/lockstep-standin/compute/cuda/repos/debian12/x86_64" in sources
    assert "Signed-By: /etc/apt/keyrings/lockstep-nvidia-cuda.gpg" in sources
    assert "trusted" not in sources.lower()
    # The keyring holds exactly the declared key: gpg lists one primary key
    # with the fingerprint the inventory declares.
    listing = host.check_output("gpg --show-keys --with-colons /etc/apt/keyrings/lockstep-nvidia-cuda.gpg")
    primaries = [line for line in listing.splitlines() if line.startswith("pub:")]
    fingerprints = [line.split(":")[9] for line in listing.splitlines() if line.startswith("fpr:")]
    declared = (STANDIN / "lockstep-standin.fpr").read_text().strip()  # what host_vars/nv1.yml reads
    assert len(primaries) == 1 and fingerprints[0] == declared


# --------------------------------------------------------------------------
# CUDA
# --------------------------------------------------------------------------
@pytest.mark.parametrize("release", ["12.1", "12.2"])
def test_toolkits_side_by_side_pinned_and_held(host, hostvars, release):
    package = "cuda-toolkit-" + release.replace(".", "-")
    assert installed(host, package) == hostvars["cuda_package_versions"][release]
    assert package in held(host)
    pins = host.file("/etc/apt/preferences.d/lockstep-cuda").content_string
    assert f"Package: {package}\nPin: version {hostvars['cuda_package_versions'][release]}\nPin-Priority: 1001" in pins
    assert host.file(f"/usr/local/cuda-{release}/version.json").exists


def test_usr_local_cuda_points_to_the_default_toolkit(host, hostvars):
    default = hostvars["cuda_default_version"]
    assert host.check_output("readlink -f /usr/local/cuda") == f"/usr/local/cuda-{default}"
    assert host.check_output("readlink -f /usr/local/cuda-12") == f"/usr/local/cuda-{default}"
    # 12.2's packages register a higher priority: the default is set by hand.
    query = host.check_output("update-alternatives --query cuda")
    assert "Status: manual" in query and f"Value: /usr/local/cuda-{default}" in query, query


def test_login_shell_environment(host):
    out = host.check_output("env -i HOME=/root bash -lc %s",
                            'echo "$CUDA_HOME|$PATH|$LD_LIBRARY_PATH|$(command -v ptxas)"')
    cuda_home, path, ld_path, ptxas = out.split("|")
    assert cuda_home == "/usr/local/cuda"
    assert path.split(":")[0] == "/usr/local/cuda/bin"
    assert ld_path.split(":")[0] == "/usr/local/cuda/lib64"
    assert ptxas == "/usr/local/cuda/bin/ptxas"


def test_interactive_shell_environment_through_bashrc(host):
    out = host.check_output("env -i HOME=/root bash -ic %s 2>/dev/null", 'echo "$CUDA_HOME"')
    assert out.splitlines()[-1] == "/usr/local/cuda"


def test_real_ptxas_reports_release_12_1(host):
    out = host.check_output("bash -lc 'ptxas --version'")
    assert "Cuda compilation tools, release 12.1, V12.1.105" in out, out
    with zipfile.ZipFile(PTXAS_WHEEL) as wheel:
        real = hashlib.sha256(wheel.read("nvidia/cuda_nvcc/bin/ptxas")).hexdigest()
    assert host.check_output("sha256sum /usr/local/cuda-12.1/bin/ptxas").split()[0] == real


def test_libcudart_is_in_the_loader_cache(host):
    cache = host.check_output("ldconfig -p")
    assert re.search(r"libcudart\.so\.12 .*=> /usr/local/cuda/targets/x86_64-linux/lib/libcudart\.so\.12", cache), cache


# --------------------------------------------------------------------------
# From the controller: verify.yml, preflight, broken repository
# --------------------------------------------------------------------------
def _recap_unchanged(output: str) -> bool:
    return all(re.search(rf"{name} : ok=\d+ changed=0 ", output) for name in NODES)


def _snapshot() -> dict:
    return {name: node(name).check_output(
        "dpkg-query -W -f='${Package}=${Version} ' 'cuda-*' 'nvidia-*' libcuda1 libnvidia-ml1;"
        " cat /etc/apt/sources.list.d/lockstep-nvidia-cuda.sources /etc/apt/preferences.d/lockstep-*"
        " | sha256sum") for name in NODES}


def test_verify_passes_and_reports_driver_and_cuda():
    result = ansible_playbook("playbooks/verify.yml", "-v")  # -v: the whole table, not only the drifts
    assert result.returncode == 0, result.output[-4000:]
    report = json.loads((EPHEMERAL / "reports" / "drift.json").read_text())
    by_component = report["by_component"]
    assert by_component["driver.version"]["expected"] == "535.261.03"
    assert by_component["cuda.default"]["expected"] == "12.1"
    assert by_component["cuda.ptxas"]["expected"] == "12.1.105"
    assert report["drifts"] == []
    assert "535.261.03" in result.output and "12.1.105" in result.output


def test_repository_that_does_not_answer_fails_naming_it():
    before = _snapshot()
    url = "http://127.0.0.1:9/compute/cuda/repos/debian12/x86_64"
    result = ansible_playbook("playbooks/cuda.yml", "-e", f"nvidia_repo_url={url}")
    assert result.returncode != 0
    assert f"the repository {url} with the key from" in result.output, result.output[-3000:]
    assert "failed the trial apt-get update" in result.output
    assert "The node's apt configuration was not changed" in result.output
    assert "nvidia_repo_url" in result.output
    assert _snapshot() == before
    assert node("nv1").run("bash -lc 'ptxas --version'").rc == 0


def test_key_that_does_not_match_fails_naming_its_url():
    before = _snapshot()
    result = ansible_playbook("playbooks/nvidia_driver.yml", "-e",
                              "nvidia_repo_key_fingerprint=EB693B3035CD5710E231E123A4B469963BF863CC")
    assert result.returncode != 0
    assert ("key_url file:///srv/lockstep-standin/lockstep-standin.asc does not provide the declared "
            "key_fingerprint EB693B3035CD5710E231E123A4B469963BF863CC" in result.output), result.output[-3000:]
    assert "nvidia_repo_key_fingerprint" in result.output
    assert _snapshot() == before
