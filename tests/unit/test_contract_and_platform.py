"""The shared building blocks of the roles' preflights: the CUDA/driver
contract (filter lockstep.gpu.cuda_driver_check with a branch and a list of
CUDA versions), the one OS-release helper (lockstep.gpu.os_release) and the
daemon.json check the docker role's preflight runs before Docker exists
(lockstep.gpu.docker_daemon_problems).

Minimum drivers are NVIDIA's (CUDA Toolkit release notes, table 3); the
CUDA 12.2 Update 2 row needs 535.104.05, 12.1 needs 530.30.02.
"""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.lockstep.gpu.plugins.filter.docker import docker_daemon_problems
from ansible_collections.lockstep.gpu.plugins.plugin_utils.cuda import cuda_driver_check
from ansible_collections.lockstep.gpu.plugins.plugin_utils.os_facts import os_release


def test_branch_runs_every_cuda_of_its_major():
    result = cuda_driver_check("535", ["12.1", "12.2"])
    assert result["compatible"] is True
    assert result["required"] == "535.54.03"
    assert [c["cuda"] for c in result["checks"]] == ["12.1", "12.2"]


def test_branch_below_the_requirement_is_named_as_a_branch():
    result = cuda_driver_check("525", "12.1")
    assert result["compatible"] is False
    assert result["message"] == "CUDA 12.1 needs NVIDIA driver >= 530.30.02; the inventory asks for branch 525"


def test_the_branch_of_the_requirement_itself_is_enough():
    assert cuda_driver_check("530", "12.1")["compatible"] is True


def test_a_list_names_only_the_versions_that_fail():
    result = cuda_driver_check("535.54.03", ["12.1", "12.2.2"])
    assert result["compatible"] is False
    assert result["required"] == "535.104.05"
    assert result["message"] == "CUDA 12.2.2 needs NVIDIA driver >= 535.104.05; the inventory asks for 535.54.03"


def test_a_package_version_of_the_driver_is_read_as_its_upstream():
    assert cuda_driver_check("535.261.03-1", ["12.1.1"])["compatible"] is True


def test_minor_compat_mode_uses_the_floor_of_the_major():
    assert cuda_driver_check("525.85.12", ["12.1"], "minor_compat")["compatible"] is True
    assert cuda_driver_check("525.85.12", ["12.1"])["compatible"] is False


def test_contract_errors_name_the_bad_value():
    with pytest.raises(AnsibleFilterError, match="at least one CUDA version"):
        cuda_driver_check("535", [])
    with pytest.raises(AnsibleFilterError, match="unknown CUDA compatibility mode 'forward'"):
        cuda_driver_check("535", ["12.1"], "forward")
    with pytest.raises(AnsibleFilterError, match="unknown CUDA version '9.9'"):
        cuda_driver_check("535", ["9.9"])


# Keys and values as Ansible's setup module reports them (distribution,
# distribution_major_version, distribution_version, distribution_release,
# os_family, architecture).
DEBIAN_12 = {"distribution": "Debian", "distribution_major_version": "12", "distribution_version": "12.8",
             "distribution_release": "bookworm", "os_family": "Debian", "architecture": "x86_64"}
UBUNTU_2204_ARM = {"distribution": "Ubuntu", "distribution_major_version": "22", "distribution_version": "22.04",
                   "distribution_release": "jammy", "os_family": "Debian", "architecture": "aarch64"}


def test_os_release_names_debian_as_nvidia_and_debian_do():
    assert os_release(DEBIAN_12) == {
        "name": "Debian-12", "distribution": "Debian", "version": "12", "codename": "bookworm",
        "family": "Debian", "supported": True, "deb_arch": "amd64", "nvidia_repo": "debian12",
        "nvidia_arch": "x86_64",
    }


def test_os_release_names_ubuntu_on_arm_servers():
    platform = os_release(UBUNTU_2204_ARM)
    assert (platform["name"], platform["nvidia_repo"], platform["nvidia_arch"], platform["deb_arch"]) == \
        ("Ubuntu-22.04", "ubuntu2204", "sbsa", "arm64")


def test_os_release_of_an_unsupported_platform():
    rocky = {"distribution": "Rocky", "distribution_major_version": "9", "distribution_version": "9.3",
             "os_family": "RedHat", "architecture": "x86_64"}
    assert os_release(rocky)["supported"] is False
    with pytest.raises(AnsibleFilterError, match="gather facts first"):
        os_release({})


def test_daemon_problems_on_debian_docker_io_use_the_20_10_rules():
    settings = {"data-root": "/var/lib/docker", "max-concurrent-downloads": "3", "log-driver": "json-file",
                "log-opts": {"max-size": "100m", "max-file": "3"}}
    problems = docker_daemon_problems(settings, "20.10")
    assert problems == ["daemon.json option 'max-concurrent-downloads': must be a JSON integer, got the string \"3\""]


def test_daemon_problems_without_the_20_10_rules_still_check_every_engine():
    settings = {"data-root": "var/lib/docker", "max-concurrent-downloads": "3"}
    problems = docker_daemon_problems(settings, "26.1.4")
    assert problems == ["daemon.json option 'data-root': 'var/lib/docker' must be an absolute path"]


def test_daemon_problems_accept_the_role_defaults():
    settings = {"data-root": "/var/lib/docker", "registry-mirrors": [], "log-driver": "json-file",
                "log-opts": {"max-size": "100m", "max-file": "3"}, "live-restore": True, "default-runtime": "nvidia",
                "runtimes": {"nvidia": {"path": "/usr/bin/nvidia-container-runtime", "runtimeArgs": []}},
                "exec-opts": ["native.cgroupdriver=systemd"]}
    assert docker_daemon_problems(settings, "20.10") == []
