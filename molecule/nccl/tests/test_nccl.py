"""State the network and nccl roles must leave on every node of the nccl scenario.

The nodes are unprivileged containers in their own user namespace (see
../molecule.yml); NCCL comes from the local TEST STAND-IN of NVIDIA's CUDA
repository (tests/standin/nccl.yml), which also offers a newer build the
pin must refuse. Declared values are read from the inventory
(../inventory.yml), so a role that did nothing - or wrote its defaults -
fails here. The tests without ``host`` run once and drive playbooks from the
controller, as an admin would: switching fabric profiles, a profile naming a
missing interface, a node whose MTU drifted, verify.yml and the NCCL health
check on nodes without GPU.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from ansible_collections.lockstep.gpu.plugins.filter.network import net_sysctl_plan
from conftest import ansible_playbook, node

ROOT = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"])
EPHEMERAL = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"])
NODES = ("nc1", "nc2", "nc3")
PINNED = "2.18.3-1+cuda12.1"
NEWER = "2.19.3-1+cuda12.3"  # offered by the stand-in repository, must not be installed
# prepare.yml's TEST STAND-IN of the sysfs RDMA device list and a topology file
STANDIN_SYSFS = "/srv/lockstep-standin-sysfs/infiniband"
STANDIN_TOPO = "/srv/lockstep-standin-sysfs/nccl-topo.xml"
HEADER = ("# Managed by Lockstep (role nccl): fabric profile {fabric}.\n"
          "# Set nccl_fabric / nccl_conf_overrides in the inventory; changes made here are overwritten.\n")



def playbook(name: str, *extra: str):
    return ansible_playbook(f"playbooks/{name}", *extra)


def extra_vars(values: dict) -> tuple[str, str]:
    return ("-e", json.dumps(values))


def conf(host) -> str:
    return host.file("/etc/nccl.conf").content_string


def network_defaults() -> tuple[dict, list]:
    defaults = yaml.safe_load((ROOT / "roles/network/defaults/main.yml").read_text())
    namespaced = yaml.safe_load((ROOT / "roles/network/vars/main.yml").read_text())["network_namespaced_sysctls"]
    return defaults["network_sysctl"], namespaced


# --------------------------------------------------------------------------
# Packages
# --------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["libnccl2", "libnccl-dev"])
def test_nccl_pinned_and_held(host, name):
    assert host.check_output(f"dpkg-query -W -f '${{Version}}' {name}") == PINNED
    assert host.check_output(f"dpkg-query -W -f '${{Status}}' {name}").startswith("hold ")
    # the repository offers a newer build: only the pin keeps it out
    policy = host.check_output(f"apt-cache policy {name}")
    assert f"Candidate: {NEWER}" in policy and f"Installed: {PINNED}" in policy


def test_nvidia_files_where_nvidias_packages_put_them(host):
    lib = host.file("/usr/lib/x86_64-linux-gnu/libnccl.so.2")
    assert lib.is_symlink and lib.linked_to == "/usr/lib/x86_64-linux-gnu/libnccl.so.2.18.3"
    assert host.file("/usr/lib/x86_64-linux-gnu/libnccl.so.2.18.3").size == 290328744
    assert host.file("/usr/lib/x86_64-linux-gnu/libnccl.so").linked_to.endswith("libnccl.so.2.18.3")
    header = host.file("/usr/include/nccl.h").content_string
    assert "#define NCCL_PATCH 3" in header and "#define NCCL_VERSION_CODE 21803" in header
    assert host.file("/usr/include/nccl_net.h").exists


# --------------------------------------------------------------------------
# nccl.conf (ethernet profile from the inventory)
# --------------------------------------------------------------------------
def test_nccl_conf_ethernet_profile(host, hostvars):
    assert hostvars["nccl_fabric"] == "ethernet"
    assert conf(host) == HEADER.format(fabric="ethernet") + (
        "NCCL_IB_DISABLE=1\nNCCL_NSOCKS_PERTHREAD=4\nNCCL_SOCKET_IFNAME==eth0\nNCCL_SOCKET_NTHREADS=4\n")
    assert host.file("/etc/nccl.conf").mode == 0o644


# --------------------------------------------------------------------------
# Network: sysctls live, MTU, RDMA stack
# --------------------------------------------------------------------------
def test_namespaced_sysctls_are_live(host):
    wanted, namespaced = network_defaults()
    plan = net_sysctl_plan(wanted, namespaced, True)
    assert len(plan["apply"]) >= 6 and "net.ipv4.tcp_rmem" in plan["apply"]
    for key, value in plan["apply"].items():
        live = host.file("/proc/sys/" + key.replace(".", "/")).content_string
        assert live.split() == value.split(), f"{key} is {live!r}, expected {value!r}"
    kept = host.file("/etc/sysctl.d/90-lockstep-network.conf").content_string
    for key, value in plan["apply"].items():
        assert f"{key}={value}" in kept.splitlines()


def test_global_sysctls_are_left_to_the_host(host):
    wanted, namespaced = network_defaults()
    skipped = net_sysctl_plan(wanted, namespaced, True)["skipped"]
    assert skipped == ["net.core.netdev_max_backlog", "net.core.rmem_max", "net.core.wmem_max"]
    kept = host.file("/etc/sysctl.d/90-lockstep-network.conf").content_string
    assert not any(line.startswith(key) for key in skipped for line in kept.splitlines())


def test_mtu_is_set(host, hostvars):
    assert hostvars["network_mtu"] == {"eth0": 1480}
    assert host.file("/sys/class/net/eth0/mtu").content_string.strip() == "1480"


@pytest.mark.parametrize("command", ["ibstat", "ibv_devinfo", "ib_write_bw"])
def test_rdma_stack_installed(host, command):
    assert host.exists(command)


# --------------------------------------------------------------------------
# Playbooks from the controller (run once)
# --------------------------------------------------------------------------
ROCE = {"nccl_fabric": "roce", "nccl_ib_hca": ["mlx5_0:1", "mlx5_1:1"], "nccl_ib_sysfs": STANDIN_SYSFS,
        "nccl_ib_gid_index": 3, "nccl_ib_tc": 106}
INFINIBAND = {"nccl_fabric": "infiniband", "nccl_ib_hca": ["mlx5_0", "mlx5_1"], "nccl_ib_sysfs": STANDIN_SYSFS,
              "nccl_net_gdr_level": "SYS", "nccl_topo_file": STANDIN_TOPO,
              "nccl_conf_overrides": {"NCCL_DEBUG": "WARN"}}
EXPECTED = {
    "roce": ("NCCL_IB_DISABLE=0\nNCCL_IB_GID_INDEX=3\nNCCL_IB_HCA==mlx5_0:1,mlx5_1:1\nNCCL_IB_TC=106\n"
             "NCCL_SOCKET_IFNAME==eth0\n"),
    "infiniband": ("NCCL_DEBUG=WARN\nNCCL_IB_DISABLE=0\nNCCL_IB_HCA==mlx5_0,mlx5_1\n"
                   "NCCL_IB_PCI_RELAXED_ORDERING=1\nNCCL_NET_GDR_LEVEL=SYS\nNCCL_SOCKET_IFNAME==eth0\n"
                   f"NCCL_TOPO_FILE={STANDIN_TOPO}\n"),
}


@pytest.fixture
def back_to_ethernet():
    yield
    result = playbook("nccl.yml")
    assert result.returncode == 0, result.output[-3000:]


def test_fabric_profiles_render_on_every_node(back_to_ethernet):
    for fabric, values in (("roce", ROCE), ("infiniband", INFINIBAND)):
        result = playbook("nccl.yml", *extra_vars(values))
        assert result.returncode == 0, result.output[-3000:]
        for name in NODES:
            assert conf(node(name)) == HEADER.format(fabric=fabric) + EXPECTED[fabric], (name, fabric)


@pytest.fixture
def nc3_mtu_changed():
    nc3 = node("nc3")
    nc3.check_output("ip link set dev eth0 mtu 1400")
    yield
    nc3.check_output("ip link set dev eth0 mtu 1480")


def test_mtu_drift_fails_naming_the_node(nc3_mtu_changed):
    result = playbook("network.yml", "--tags", "network_check")
    assert result.returncode != 0
    assert "nc3: eth0 MTU 1400, expected 1480 (network_mtu)" in result.output
    assert "nc1: eth0 MTU" not in result.output and "nc2: eth0 MTU" not in result.output
    # --tags network_check changes nothing: nc3 keeps its drifted MTU
    assert node("nc3").file("/sys/class/net/eth0/mtu").content_string.strip() == "1400"


def test_link_check_passes_and_rdma_is_skipped_without_hca():
    result = playbook("network.yml", "--tags", "network_check")
    assert result.returncode == 0, result.output[-3000:]
    assert "3 node(s): eth0 with the same MTU and speed (minimum 10000 Mb/s)" in result.output
    for name in NODES:
        assert f"{name} has no RDMA device in /sys/class/infiniband: RDMA port checks skipped." in result.output


@pytest.fixture
def nc2_conf_edited():
    node("nc2").check_output("echo NCCL_DEBUG=INFO >> /etc/nccl.conf")
    yield
    result = playbook("nccl.yml", "--limit", "nc2")  # the role writes it back
    assert result.returncode == 0, result.output[-3000:]


def test_verify_flags_a_node_whose_nccl_conf_differs(nc2_conf_edited):
    # nc2's file was edited by hand: verify.yml must name nc2 and nccl_conf.sha256 only
    result = playbook("verify.yml")
    assert result.returncode != 0
    assert "nc2: nccl_conf.sha256 expected" in result.output
    assert "nc1: nccl_conf" not in result.output and "nc3: nccl_conf" not in result.output
    report = json.loads((EPHEMERAL / "reports" / "drift.json").read_text())
    assert [d["host"] for d in report["drifts"]] == ["nc2"]
    assert report["by_component"]["nccl.package"]["expected"] == PINNED
    assert report["by_component"]["nccl.header"]["expected"] == "2.18.3"


def test_verify_passes_on_identical_nodes():
    result = playbook("verify.yml")
    assert result.returncode == 0, result.output[-3000:]
    report = json.loads((EPHEMERAL / "reports" / "drift.json").read_text())
    assert report["ok"] and report["drifts"] == []
    assert report["by_component"]["nccl_conf.sha256"]["deviating_hosts"] == []


def test_health_check_skips_nodes_without_gpu():
    result = playbook("nccl_health.yml")
    assert result.returncode == 0, result.output[-3000:]
    for name in NODES:
        assert f"{name} has no GPU" in result.output and "NCCL health check skipped" in result.output
        assert not node(name).file("/opt/lockstep/nccl-tests").exists
