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
import sys
from pathlib import Path

import limits
import pytest

HERE = Path(__file__).resolve().parent
HOSTS = ("dp1", "dp2", "dp3")

HUGE = "A" * 200 * 1024

# (id, extra vars as YAML, [(variable, fragment of what the report says of it[, the nodes it names: every
# node unless given])]).
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
    # The contract's port table (roles/cluster/vars/main.yml): srun's range over slurmctld's port on the head
    # and slurmd's on every compute node; train_check's rendezvous over Prometheus on the monitoring server.
    ("srun-range-over-slurmd", "slurm_srun_port_range: 6000-7000",
     [("slurm_srun_port_range", "overlaps slurm_slurmctld_port '6817' (tcp)", ("dp1",)),
      ("slurm_srun_port_range", "overlaps slurm_slurmd_port '6818' (tcp)")]),
    ("train-check-port-over-prometheus", "train_check_port: 9090",
     [("train_check_port", "overlaps monitoring_prometheus_port '9090' (tcp)", ("dp1",))]),
    # shared_storage (plugins/plugin_utils/preflight/shared_storage.py).
    ("shared-storage-path-relative", "shared_storage_path: shared",
     [("shared_storage_path", "shared_storage_path is 'shared': it must be an absolute path without spaces")]),
    ("shared-storage-export-dir-root", "shared_storage_export_dir: /",
     [("shared_storage_export_dir", "not / itself (e.g. /srv/shared)")]),
    ("shared-storage-mount-options-space", 'shared_storage_mount_options: "nfsvers=4.2, hard"',
     [("shared_storage_mount_options", "separated by commas, each one word without spaces")]),
    ("shared-storage-nas-without-path", "shared_storage_server: nas1",
     [("shared_storage_server", "it must name a NAS as host:/export")]),
    ("shared-storage-server-group-empty", "shared_storage_server_group: nfsservers",
     [("shared_storage_server_group", "a group with no node in the inventory")]),
    ("shared-storage-export-client-not-a-name", 'shared_storage_export_clients: ["nas one"]',
     [("shared_storage_export_clients", "an address, a network (10.0.0.0/24) or a host name")]),
    ("shared-storage-export-to-the-world", "shared_storage_export_clients: ['*']",
     [("shared_storage_export_clients", "need shared_storage_export_world: true"),
      ("shared_storage_export_clients", "the firewall would open this service to the world", ("dp1",))]),
    ("nfs-world-without-firewall-allow-world",
     "{shared_storage_export_world: true, shared_storage_export_clients: ['*']}",
     [("shared_storage_export_clients", "set firewall_allow_world: true to mean it", ("dp1",))]),
    # slurm (slurm.py): cluster-wide rules name the first Slurm node, where slurm.conf is rendered.
    ("slurm-partition-unknown-node", "slurm_partitions: [{name: gpu, nodes: [dp1, dp9], default: true}]",
     [("slurm_partitions[gpu].nodes", "names dp9, not a compute node of the inventory", ("dp1",))]),
    ("slurm-real-memory-negative", "slurm_real_memory: -512",
     [("slurm_real_memory", "it must be a whole number of MiB, 1 or more")]),
    ("slurm-real-memory-above-node", "slurm_real_memory: 99999999",
     [("slurm_real_memory", "99999999 MiB and the node has 24105 MiB")]),
    ("slurm-slurmd-timeout", "slurm_slurmd_timeout: 5",
     [("slurm_slurmd_timeout", "SlurmdTimeout is 0 (never set a node DOWN) or 10 to 65533 seconds")]),
    ("slurm-names-unresolvable", "base_etc_hosts_group: head",
     [("slurm_compute_nodes", "cannot resolve dp2, dp3 (getent hosts): Slurm reaches its nodes by their inventory")]),
    ("slurm-head-group-empty", "slurm_head_group: nosuchgroup",
     [("slurm_head_group", "has no node in the inventory: its first node runs slurmctld")]),
    ("slurm-cluster-name", "slurm_cluster_name: Lockstep", [("slurm_cluster_name", "not a Slurm cluster name")]),
    ("slurm-memory-reserve-above-node", "slurm_memory_reserve_mb: 30000",
     [("slurm_memory_reserve_mb", "the node has 24105 MiB: the reserve must be a whole number of MiB")]),
    ("slurm-partition-without-nodes", "slurm_partitions: [{name: batch, nodes: []}]",
     [("slurm_partitions[batch].nodes", "needs a non-empty list of nodes", ("dp1",))]),
    ("slurm-two-default-partitions",
     "slurm_partitions: [{name: a, nodes: [dp1], default: true}, {name: b, nodes: [dp2, dp3], default: true}]",
     [("slurm_partitions", "a, b are all marked default; one partition at most", ("dp1",))]),
    ("slurm-resume-reason-not-a-regex", 'slurm_resume_reasons: ["Low (RealMemory"]',
     [("slurm_resume_reasons", "not a Python regular expression", ("dp1",))]),
    ("slurm-srun-range-below-1024", 'slurm_srun_port_range: "1000-2000"',
     [("slurm_srun_port_range", "1024 <= first < last <= 65535")]),
    ("slurm-one-port-head-apart",
     "{slurm_head_computes: false, slurm_slurmd_port: 6817, slurm_partitions: [{name: batch, nodes: [dp2, dp3]}]}",
     [("slurm_slurmd_port", "slurmctld and slurmd need two different ports")]),
    # monitoring (monitoring.py).
    ("monitoring-server-group-empty", "monitoring_server_group: monitors",
     [("monitoring_server_group", "a group without a node in the inventory")]),
    ("prometheus-port-70000", "monitoring_prometheus_port: 70000",
     [("monitoring_prometheus_port", "not a port of Prometheus: a port is a whole number from 1 to 65535")]),
    ("prometheus-listen-with-port", 'monitoring_prometheus_listen_address: "0.0.0.0:9090"',
     [("monitoring_prometheus_listen_address", "no port (the port is its own variable)")]),
    ("scrape-interval-words", 'monitoring_scrape_interval: "15 seconds"',
     [("monitoring_scrape_interval", "it must be a Prometheus duration")]),
    ("retention-forever", "monitoring_prometheus_retention: forever",
     [("monitoring_prometheus_retention", "it must be a Prometheus duration")]),
    ("lockstep-interval-over-stale", "monitoring_lockstep_interval_minutes: 20",
     [("monitoring_lockstep_stale_minutes", "more than monitoring_lockstep_interval_minutes (20)")]),
    ("lockstep-interval-zero", "monitoring_lockstep_interval_minutes: 0",
     [("monitoring_lockstep_interval_minutes", "a whole number of minutes, 1 or more")]),
    ("lockstep-interval-word", "monitoring_lockstep_interval_minutes: five",
     [("monitoring_lockstep_interval_minutes", "cannot be converted to an int")]),
    ("textfile-dir-relative", "monitoring_textfile_dir: var/lib/node-exporter",
     [("monitoring_textfile_dir", "an absolute path without spaces or quotes")]),
    ("lockstep-lib-home", "monitoring_lockstep_lib: ~/lockstep",
     [("monitoring_lockstep_lib", "an absolute path without spaces or quotes")]),
    ("dcgm-exporter-version-latest", "monitoring_dcgm_exporter_version: latest",
     [("monitoring_dcgm_exporter_version", "a Debian package version of datacenter-gpu-manager-exporter")]),
    ("dcgm-collector-field", "monitoring_dcgm_exporter_collectors: [{field: GPU_UTIL, type: gauge, help: x}]",
     [("monitoring_dcgm_exporter_collectors[0].field", "not a DCGM field")]),
    ("dcgm-collector-type",
     "monitoring_dcgm_exporter_collectors: [{field: DCGM_FI_DEV_GPU_UTIL, type: histogram, help: x}]",
     [("monitoring_dcgm_exporter_collectors[0].type", "one of gauge, counter, label")]),
    ("dcgm-collectors-empty", "monitoring_dcgm_exporter_collectors: []",
     [("monitoring_dcgm_exporter_collectors", "a non-empty list of {field, type, help}")]),
    # A switch that is off silences its role: only the unrelated problem is named.
    ("dcgm-off-ignores-its-values",
     "{monitoring_dcgm_exporter_enabled: false, monitoring_dcgm_exporter_version: latest, base_timezone: Mars/Olympus}",
     [("base_timezone", "not a timezone known to tzdata")]),
    ("monitoring-disabled", "{monitoring_enabled: false, monitoring_server_group: monitors, "
     "monitoring_lockstep_interval_minutes: 20, monitoring_dcgm_exporter_version: latest, base_timezone: Mars/Olympus}",
     [("base_timezone", "not a timezone known to tzdata")]),
    ("monitoring-enabled-maybe", "monitoring_enabled: maybe", [("monitoring_enabled", "not a valid boolean")]),
    # gpustack and train_check (gpustack.py, train_check.py); their ports are the contract's (cluster.py).
    ("gpustack-worker-port-0", "gpustack_worker_port: 0",
     [("gpustack_worker_port", "not a port of GPUStack worker: a port is a whole number from 1 to 65535")]),
    ("gpustack-port-70000", "gpustack_port: 70000",
     [("gpustack_port", "not a port of GPUStack server: a port is a whole number from 1 to 65535")]),
    ("gpustack-worker-port-ssh", "gpustack_worker_port: 22",
     [("gpustack_worker_port", "another program listens there", ("dp2", "dp3")),
      ("gpustack_worker_port", "overlaps firewall_ssh_port '22' (tcp)", ("dp2", "dp3"))]),
    ("gpustack-server-unreachable", "gpustack_server_address: 192.0.2.99",
     [("gpustack_server_address", "cannot reach the GPUStack server at http://192.0.2.99:80", ("dp2", "dp3"))]),
    ("gpustack-token-quote-newline", 'gpustack_token: "Secret0123456789\\"\\nserver_url: http://10.9.9.9"',
     [("gpustack_token", "must be at least 16 characters"),
      ("gpustack_token", "no white space, newline, quote or backslash")]),
    ("gpustack-version-latest", "gpustack_version: latest",
     [("gpustack_version", "it must be a GPUStack release on PyPI, e.g. 2.3.0")]),
    ("gpustack-version-yaml-number", "gpustack_version: 2.3", [("gpustack_version", "it must be a GPUStack release")]),
    ("gpustack-data-dir-home", "gpustack_data_dir: ~/gpustack",
     [("gpustack_data_dir", "it must be an absolute path without spaces or quotes")]),
    ("gpustack-database-sqlite", "gpustack_database_url: sqlite:///var/lib/gpustack/db.sqlite",
     [("gpustack_database_url", "does not start with postgresql:// or mysql://")]),
    ("gpustack-tls-certfile", "gpustack_ssl_certfile: /etc/ssl/gpustack.pem",
     [("gpustack_ssl_certfile", "serves TLS (port 443) from its gateway")]),
    ("gpustack-server-group-empty", "gpustack_server_group: gpustack",
     [("gpustack_server_group", "the GPUStack server runs on its first node")]),
    ("train-check-port-0", "train_check_port: 0",
     [("train_check_port", "a port is a whole number from 1 to 65535")]),
    ("train-check-timeout-0", "train_check_timeout: 0", [("train_check_timeout", "a number of seconds above 0")]),
    ("train-check-env-space", "train_check_env: train env", [("train_check_env", "a conda environment name")]),
    ("train-check-backend-choice", "train_check_backend: mpi",
     [("train_check_backend", "must be one of: auto, gloo, nccl")]),
    # firewall (firewall.py).
    ("firewall-extra-port-70000", "firewall_extra_ports: [{port: 70000}]",
     [("firewall_extra_ports", "each entry needs port (1-65535, or a range first-last), proto tcp or udp")]),
    ("firewall-extra-port-backwards", 'firewall_extra_ports: [{port: "9000-8000"}]',
     [("firewall_extra_ports", "each entry needs port (1-65535, or a range first-last)")]),
    ("firewall-extra-port-why-quote", "firewall_extra_ports: [{port: 8080, why: 'say \"hi\"'}]",
     [("firewall_extra_ports", "why a note of at most 100 characters without quotes")]),
    ("firewall-extra-port-proto", "firewall_extra_ports: [{port: 8080, proto: icmp}]",
     [("firewall_extra_ports", "value of proto must be one of: tcp, udp, got: icmp")]),
    ("firewall-ssh-source-name", "firewall_ssh_sources: [login1]",
     [("firewall_ssh_sources", "every entry must be an IPv4 or IPv6 address or network")]),
    ("firewall-controller-source-star", "firewall_controller_sources: ['*']",
     [("firewall_controller_sources", "not a name")]),
    ("firewall-allowed-sources-world", "firewall_allowed_sources: [0.0.0.0/0]",
     [("firewall_allowed_sources", "every address: on dp1 it would open slurmctld 6817/tcp", ("dp1",)),
      ("firewall_allowed_sources", "every address: on dp2 it would open slurmd 6818/tcp", ("dp2",)),
      ("firewall_allowed_sources", "every address: on dp3 it would open slurmd 6818/tcp", ("dp3",))]),
    ("firewall-extra-rule-two-lines", 'firewall_extra_rules: ["iifname ib0 accept\\ntcp dport 1-65535 accept"]',
     [("firewall_extra_rules", "each entry is one nftables rule, one line")]),
    ("firewall-extra-rule-empty", "firewall_extra_rules: ['']",
     [("firewall_extra_rules", "one nftables rule, one line of text")]),
    # A bad port of the table (the contract names it) does not hide the world source on the other services.
    ("firewall-injected-range-and-world-source",
     '{train_check_ephemeral_ports: "32768-60999 accept; tcp dport 0-65535", firewall_allowed_sources: [0.0.0.0/0]}',
     [("train_check_ephemeral_ports", "not a port of torch.distributed gloo/NCCL ephemeral ports"),
      ("firewall_allowed_sources", "every address: on dp1 it would open slurmctld 6817/tcp", ("dp1",)),
      ("firewall_allowed_sources", "every address: on dp2 it would open slurmd 6818/tcp", ("dp2",)),
      ("firewall_allowed_sources", "every address: on dp3 it would open slurmd 6818/tcp", ("dp3",))]),
    ("firewall-ssh-port-70000", "firewall_ssh_port: 70000",
     [("firewall_ssh_port", "not a port of SSH: a port is a whole number from 1 to 65535")]),
]


THREE = "three-roles"
THREE_EXTRA = ("{slurm_partitions: [{name: batch, nodes: [dp9]}], gpustack_port: 70000, nccl_fabric: omnipath, "
               "cuda_versions: [12.10], base_timezone: Mars/Olympus}")


@pytest.fixture(scope="module")
def results():
    """Every case through the engine in one run of preflight_run.py (see its docstring)."""
    cases = {case_id: extra for case_id, extra, _expected in CASES}
    cases.update({"none": "{}", THREE: THREE_EXTRA})
    run = limits.run([sys.executable, str(HERE / "preflight_run.py")], input=json.dumps(cases),
                     capture_output=True, text=True, check=False, cpu_s=600)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout)


def test_the_scenario_s_own_inventory_has_no_problem(results):
    assert results["none"]["problems"] == [], results["none"]["report"]


def _where(expected) -> list[tuple[str, str, tuple[str, ...]]]:
    """(variable, fragment, nodes named) of each expected problem: every node unless the case says which."""
    return [(item[0], item[1], item[2] if len(item) > 2 else HOSTS) for item in expected]


@pytest.mark.parametrize("case_id, expected", [pytest.param(case_id, expected, id=case_id)
                                               for case_id, _extra, expected in CASES])
def test_a_bad_value_is_named_on_its_nodes_with_what_is_allowed(results, case_id, expected):
    problems, message = results[case_id]["problems"], results[case_id]["report"]
    assert sorted({tuple(p) for p in problems}) == sorted(
        {(variable, host) for variable, _, nodes in _where(expected) for host in nodes}), message
    lines = message.splitlines()
    assert lines[0].endswith("in the inventory; no node was changed:"), message
    for variable, fragment, nodes in _where(expected):
        named = ", ".join(nodes) or "inventory"
        assert any(line.startswith(f"  - {named}: {variable} is '") and fragment in line
                   for line in lines), (variable, fragment, message)


def test_wrong_values_of_five_roles_are_named_in_one_report(results):
    """Issue 25's example (a partition naming a node the inventory lacks, gpustack_port: 70000, nccl_fabric:
    omnipath) and two more: every one named, each once, on the nodes it is wrong on."""
    assert sorted({tuple(p) for p in results[THREE]["problems"]}) == sorted(
        [("slurm_partitions[batch].nodes", "dp1")] + [(variable, host) for host in HOSTS for variable in (
            "gpustack_port", "nccl_fabric", "cuda_versions", "base_timezone")]), results[THREE]["report"]
    assert results[THREE]["report"].startswith("5 problems in the inventory; no node was changed:")
