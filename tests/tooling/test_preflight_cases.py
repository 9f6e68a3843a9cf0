"""The bad inventory cases of the cluster scenario, through the Python preflight engine, without nodes.

Each case is the extra vars an admin would write (``-e @case.yml``) over the
cluster scenario's inventory (tests/tooling/preflight_run.py: the demo
group_vars, the roles' real defaults rendered by Ansible's templar, facts and
probe answer of a real node of the scenarios' image). The engine must find
exactly the problems the case is about, on every node, each naming the
variable, the value as written and what is allowed; the scenario's own
values must give none. Eight end-to-end runs in molecule/cluster
(test_bad_input.py) prove that a refused run changes nothing on any node.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
HOSTS = ("dp1", "dp2", "dp3")

HUGE = "A" * 200 * 1024

# (id, extra vars as YAML, [(variable, fragment of what the report says of it)]).
CASES = [
    ("timezone-unknown", "base_timezone: Mars/Olympus", [("base_timezone", "not a timezone known to tzdata")]),
    ("timezone-path", "base_timezone: ../../../etc/passwd", [("base_timezone", "not a timezone name")]),
    ("timezone-200kB", f"base_timezone: {HUGE}", [("base_timezone", "at most 64 characters")]),
    ("timezone-list", "base_timezone: [Etc/UTC]", [("base_timezone", "not a timezone name")]),
    ("locale-unknown", "base_locale: xx_XX.UTF-8", [("base_locale", "/usr/share/i18n/SUPPORTED")]),
    ("apt-mirror-no-scheme", "base_apt_mirror: mirrors.example.cn/debian",
     [("base_apt_mirror", "http://, https:// or file://")]),
    ("apt-security-mirror-ftp", "base_apt_security_mirror: ftp://ftp.example.cn/debian-security",
     [("base_apt_security_mirror", "not a usable apt mirror URL")]),
    ("manage-etc-hosts-maybe", "base_manage_etc_hosts: maybe", [("base_manage_etc_hosts", "not a valid boolean")]),
    ("apt-components-newline", 'base_apt_components: ["main\\nTrusted: yes"]',
     [("base_apt_components", "without spaces, newlines")]),
    ("ntp-servers-newline", 'base_ntp_servers: ["ntp.example.com\\nallow all"]',
     [("base_ntp_servers", "without spaces, newlines")]),
    ("ntp-servers-string", "base_ntp_servers: ntp.example.com", [("base_ntp_servers", "not a list (it is a string)")]),
    ("apt-components-string", "base_apt_components: main contrib non-free",
     [("base_apt_components", "not a list (it is a string)")]),
    ("extra-package-not-a-name", 'base_extra_packages: ["vim; reboot"]',
     [("base_extra_packages", "not a Debian package name")]),
    ("etc-hosts-group-unknown", "base_etc_hosts_group: computenodes",
     [("base_etc_hosts_group", "not a group of the inventory; allowed: all, cluster, gpu, head, workers")]),
    ("min-speed-1g", "network_min_speed_mbps: 1000", [("network_min_speed_mbps", "10 GbE at the very least")]),
    ("min-speed-word", "network_min_speed_mbps: fast", [("network_min_speed_mbps", "cannot be converted to an int")]),
    ("unknown-speed-choice", "network_unknown_speed: maybe",
     [("network_unknown_speed", "must be one of: fail, warn, ignore, got: maybe")]),
    ("mtu-too-small", "network_mtu: {eth0: 100}", [("network_mtu.eth0", "a number from 576 to 65520")]),
    ("mtu-missing-interface", "network_mtu: {ib9: 9000}", [("network_mtu", "has no interface ib9")]),
    ("mtu-string", 'network_mtu: "9000"', [("network_mtu", "not a mapping (it is a string)")]),
    ("sysctl-not-a-key", 'network_sysctl_overrides: {"net.core.rmem_max = 1; reboot": 1}',
     [("network_sysctl_overrides", "not a sysctl key")]),
    ("rdma-packages-string", "network_rdma_packages: rdma-core",
     [("network_rdma_packages", "not a list (it is a string)")]),
    ("driver-source-choice", "nvidia_driver_source: nouveau",
     [("nvidia_driver_source", "must be one of: cuda, ubuntu, debian, got: nouveau")]),
    ("driver-source-ubuntu-on-debian", "nvidia_driver_source: ubuntu",
     [("nvidia_driver_source", "not available on Debian-12")]),
    ("driver-branch", 'nvidia_driver_branch: "53x"', [("nvidia_driver_branch", "three digits such as 535")]),
    ("driver-version-other-branch", 'nvidia_driver_version: "545.29.06"',
     [("nvidia_driver_version", "a version of branch 535")]),
    ("driver-fabricmanager-debian", "{nvidia_driver_source: debian, nvidia_driver_fabricmanager: true}",
     [("nvidia_driver_fabricmanager", "has no fabric manager")]),
    ("driver-reboot-timeout", "nvidia_driver_reboot_timeout: soon",
     [("nvidia_driver_reboot_timeout", "cannot be converted to an int")]),
    ("cuda-12.10-unquoted", "cuda_versions: [12.10]", [("cuda_versions", "YAML reads 12.10 as 12.1")]),
    ("cuda-versions-string", 'cuda_versions: "12.1"', [("cuda_versions", "cuda_versions: ['12.1']")]),
    ("cuda-version-major-only", 'cuda_versions: ["12"]', [("cuda_versions", 'such as "12.1"')]),
    ("cuda-default-not-listed", 'cuda_default_version: "12.4"', [("cuda_default_version", "one of cuda_versions")]),
    ("cuda-package-other-release", 'cuda_package_versions: {"12.1": "12.2.0-1"}',
     [("cuda_package_versions['12.1']", "apt version of a CUDA 12.1 release")]),
    ("cuda-compat-choice", "cuda_driver_compat_mode: lenient",
     [("cuda_driver_compat_mode", "must be one of: toolkit, minor_compat, got: lenient")]),
    ("cuda-12.1-driver-525", '{nvidia_driver_branch: "525", nvidia_driver_version: "525.85.12"}',
     [("nvidia_driver_version", "needs NVIDIA driver >= 530.30.02")]),
    ("nccl-fabric-omnipath", "nccl_fabric: omnipath", [("nccl_fabric", "must be one of: ethernet, roce, infiniband")]),
    ("nccl-infiniband-without-hca", "nccl_fabric: infiniband", [("nccl_ib_hca", "nccl_fabric is infiniband")]),
    ("nccl-version", 'nccl_version: "2.18"', [("nccl_version", "must look like 2.18.3-1")]),
    ("nccl-unknown-variable", "nccl_conf_overrides: {NCCL_NO_SUCH_KNOB: 1}",
     [("nccl_conf_overrides.NCCL_NO_SUCH_KNOB", "not an NCCL variable")]),
    ("nccl-missing-interface", 'nccl_socket_ifname: "=eth9"', [("nccl_socket_ifname", "no interface named 'eth9'")]),
    ("nccl-socket-threads", "nccl_socket_nthreads: 32",
     [("nccl_socket_nthreads", "at most 64 sockets"), ("nccl_socket_nthreads", "between 1 and 16")]),
    ("nccl-relaxed-ordering-choice", "nccl_ib_pci_relaxed_ordering: 3",
     [("nccl_ib_pci_relaxed_ordering", "must be one of: 0, 1, 2")]),
    ("docker-source-snap", "docker_engine_source: snap", [("docker_engine_source", "must be one of: docker")]),
    ("daemon-unknown-option", "docker_daemon_options: {no-such-option: true}",
     [("docker_daemon_options.no-such-option", "not a dockerd 20.10 configuration option")]),
    ("daemon-option-type", 'docker_daemon_options: {max-concurrent-downloads: "3"}',
     [("docker_daemon_options.max-concurrent-downloads", "must be a JSON integer")]),
    ("daemon-option-with-variable", "docker_daemon_options: {data-root: /data/docker}",
     [("docker_daemon_options.data-root", "set it through docker_data_root")]),
    ("daemon-options-string", "docker_daemon_options: debug=true",
     [("docker_daemon_options", "not a mapping (it is a string)")]),
    ("docker-data-root-relative", "docker_data_root: var/lib/docker", [("docker_data_root", "not an absolute path")]),
    ("docker-mirror-with-path", "docker_registry_mirrors: [https://mirror.example.com/v2/library]",
     [("docker_registry_mirrors", "without path")]),
    ("docker-user-unknown", "docker_users: [nosuchuser]", [("docker_users", "no account on the node")]),
    ("docker-cgroup-driver-choice", "docker_cgroup_driver: openrc",
     [("docker_cgroup_driver", "must be one of: systemd, cgroupfs")]),
    ("docker-default-runtime-without-runtime", "{docker_nvidia_runtime: false, docker_nvidia_default_runtime: true}",
     [("docker_nvidia_default_runtime", "docker_nvidia_runtime is false")]),
    ("conda-env-name", "conda_environments: [{name: train env, python: '3.11'}]",
     [("conda_environments[0].name", "needs a name of letters, digits")]),
    ("conda-python-3.10-unquoted", "conda_environments: [{name: train, python: 3.10}]",
     [("conda_environments[train].python", "YAML reads 3.10 as 3.1")]),
    ("conda-default-env-unknown", "conda_default_env: train",
     [("conda_default_env", "one of the conda_environments names")]),
    ("conda-platform-choice", "conda_platform: win-64", [("conda_platform", "must be one of: linux-64")]),
    ("conda-environments-mapping", "conda_environments: {name: train, python: '3.11'}",
     [("conda_environments", "not a list (it is a mapping)")]),
    ("conda-without-lock", "conda_environments: [{name: train, python: '3.11'}]",
     [("conda_lock_file", "does not exist on the controller: solve the environments first with scripts/conda-lock")]),
]


THREE = "three-roles"
THREE_EXTRA = ("{slurm_partitions: [{name: batch, nodes: [dp9]}], nccl_fabric: omnipath, "
               "cuda_versions: [12.10], base_timezone: Mars/Olympus}")


@pytest.fixture(scope="module")
def results():
    """Every case through the engine in one run of preflight_run.py (see its docstring)."""
    cases = {case_id: extra for case_id, extra, _expected in CASES}
    cases.update({"none": "{}", THREE: THREE_EXTRA})
    run = subprocess.run([sys.executable, str(HERE / "preflight_run.py")], input=json.dumps(cases),
                         capture_output=True, text=True, check=False, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout)


def test_the_scenario_s_own_inventory_has_no_problem(results):
    assert results["none"]["problems"] == [], results["none"]["report"]


@pytest.mark.parametrize("case_id, expected", [pytest.param(case_id, expected, id=case_id)
                                               for case_id, _extra, expected in CASES])
def test_a_bad_value_is_named_on_every_node_with_what_is_allowed(results, case_id, expected):
    problems, message = results[case_id]["problems"], results[case_id]["report"]
    assert sorted({tuple(p) for p in problems}) == sorted(
        {(variable, host) for variable, _ in expected for host in HOSTS}), message
    lines = message.splitlines()
    assert lines[0].endswith("in the inventory; no node was changed:"), message
    for variable, fragment in expected:
        assert any(line.startswith(f"  - dp1, dp2, dp3: {variable} is '") and fragment in line
                   for line in lines), (variable, fragment, message)


def test_three_wrong_values_of_three_roles_are_named_in_one_report(results):
    variables = {variable for variable, _node in results[THREE]["problems"]}
    assert variables >= {"nccl_fabric", "cuda_versions", "base_timezone"}, results[THREE]["report"]
