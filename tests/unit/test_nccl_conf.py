"""Tests of the nccl.conf checks (module_utils/lockstep_nccl_conf, filter lockstep_nccl_filters)."""

from __future__ import annotations

import pytest

from ansible_collections.lockstep.gpu.plugins.module_utils.nccl_conf import KNOWN, check_settings, normalize, render
from ansible_collections.lockstep.gpu.plugins.filter.nccl import nccl_conf_problems, nccl_conf_render

IFACES = ["lo", "eth0", "eth1", "ib0", "docker0"]
HCAS = {"mlx5_0": [1], "mlx5_1": [1], "mlx5_10": [1, 2]}

ETHERNET = {"NCCL_SOCKET_IFNAME": "=eth0", "NCCL_IB_DISABLE": 1, "NCCL_SOCKET_NTHREADS": 4,
            "NCCL_NSOCKS_PERTHREAD": 4}
ROCE = {"NCCL_SOCKET_IFNAME": "eth", "NCCL_IB_HCA": "=mlx5_0:1,mlx5_1:1", "NCCL_IB_GID_INDEX": 3,
        "NCCL_IB_TC": 106, "NCCL_IB_DISABLE": 0}
INFINIBAND = {"NCCL_SOCKET_IFNAME": "=ib0", "NCCL_IB_HCA": "mlx5", "NCCL_NET_GDR_LEVEL": "PHB",
              "NCCL_IB_PCI_RELAXED_ORDERING": 1, "NCCL_TOPO_FILE": "/etc/nccl/topo.xml"}


@pytest.mark.parametrize("profile", [ETHERNET, ROCE, INFINIBAND])
def test_profiles_are_accepted(profile):
    assert check_settings(profile, IFACES, HCAS) == []


def test_normalize_drops_empty_and_converts():
    assert normalize({"NCCL_IB_DISABLE": True, "NCCL_DEBUG": "", "NCCL_TOPO_FILE": None,
                      "NCCL_IB_TC": 106}) == {"NCCL_IB_DISABLE": "1", "NCCL_IB_TC": "106"}


def test_render_is_sorted_with_header():
    text = render({"NCCL_SOCKET_IFNAME": "=eth0", "NCCL_IB_DISABLE": True}, "Managed by Lockstep\n")
    assert text == "# Managed by Lockstep\nNCCL_IB_DISABLE=1\nNCCL_SOCKET_IFNAME==eth0\n"


def test_missing_interface_is_named():
    problems = check_settings({"NCCL_SOCKET_IFNAME": "=eth9"}, IFACES, HCAS)
    assert problems == ["NCCL_SOCKET_IFNAME==eth9: no interface named 'eth9' on this node "
                        "(it has: docker0, eth0, eth1, ib0, lo)"]


def test_interface_prefix_and_exclusion():
    assert check_settings({"NCCL_SOCKET_IFNAME": "eth,ib"}, IFACES) == []
    assert "starting with 'ens'" in check_settings({"NCCL_SOCKET_IFNAME": "eth,ens"}, IFACES)[0]
    # an exclusion list names interfaces NCCL must not use: they need not exist
    assert check_settings({"NCCL_SOCKET_IFNAME": "^docker,virbr"}, IFACES) == []


def test_missing_hca_and_port_are_named():
    problems = check_settings({"NCCL_IB_HCA": "=mlx5_0:1,mlx5_3:1,mlx5_1:2"}, IFACES, HCAS)
    assert problems == [
        "NCCL_IB_HCA==mlx5_0:1,mlx5_3:1,mlx5_1:2: no HCA named 'mlx5_3' on this node "
        "(it has: mlx5_0, mlx5_1, mlx5_10)",
        "NCCL_IB_HCA==mlx5_0:1,mlx5_3:1,mlx5_1:2: HCA mlx5_1 has no port 2 on this node (ports: 1)",
    ]


def test_node_without_hca():
    problems = check_settings({"NCCL_IB_HCA": "mlx5"}, IFACES, {})
    assert problems == ["NCCL_IB_HCA=mlx5: no HCA starting with 'mlx5' on this node (it has: none)"]


def test_existence_not_checked_when_unknown():
    assert check_settings({"NCCL_IB_HCA": "=mlx5_7:1", "NCCL_SOCKET_IFNAME": "=eth7"}) == []


def test_unknown_nccl_key_is_rejected():
    problems = check_settings({"NCCL_IB_HCAS": "mlx5_0", "NCCL_SOCKET_IFNAME": "eth"}, IFACES, HCAS)
    assert len(problems) == 1
    assert problems[0].startswith("NCCL_IB_HCAS is not an NCCL variable")


def test_other_keys_are_rejected():
    assert check_settings({"CUDA_VISIBLE_DEVICES": "0"}) == [
        "CUDA_VISIBLE_DEVICES: only NCCL_ variables belong in nccl.conf"]
    assert "not an environment variable name" in check_settings({"nccl_debug": "INFO"})[0]


@pytest.mark.parametrize("key, value, message", [
    ("NCCL_IB_DISABLE", "yes", "NCCL_IB_DISABLE=yes: must be 0 or 1"),
    ("NCCL_IB_GID_INDEX", "three", "NCCL_IB_GID_INDEX=three: must be an integer"),
    ("NCCL_IB_TC", 300, "NCCL_IB_TC=300: must be between 0 and 255"),
    ("NCCL_IB_TIMEOUT", 0, "NCCL_IB_TIMEOUT=0: must be between 1 and 31"),
    ("NCCL_NET_GDR_LEVEL", "NEAR", "NCCL_NET_GDR_LEVEL=NEAR: must be one of LOC, NVL, PIX, PXB, PHB, SYS or 0-5"),
    ("NCCL_DEBUG", "LOUD", "NCCL_DEBUG=LOUD: must be one of VERSION, WARN, INFO, TRACE"),
    ("NCCL_TOPO_FILE", "topo.xml", "NCCL_TOPO_FILE=topo.xml: must be an absolute path"),
    ("NCCL_IB_PCI_RELAXED_ORDERING", 3, "NCCL_IB_PCI_RELAXED_ORDERING=3: must be between 0 and 2"),
    ("NCCL_SOCKET_IFNAME", "eth 0", "NCCL_SOCKET_IFNAME=eth 0: 'eth 0' is not an interface name or prefix"),
])
def test_bad_values_are_named(key, value, message):
    assert check_settings({key: value}) == [message]


def test_gdr_level_accepts_numbers_and_lower_case():
    assert check_settings({"NCCL_NET_GDR_LEVEL": "phb", "NCCL_P2P_LEVEL": 5}) == []


def test_socket_product_limit():
    problems = check_settings({"NCCL_SOCKET_NTHREADS": 16, "NCCL_NSOCKS_PERTHREAD": 8})
    assert problems == ["NCCL_SOCKET_NTHREADS=16 x NCCL_NSOCKS_PERTHREAD=8 = 128: NCCL allows at most 64 sockets"]


def test_multiline_value_is_rejected():
    assert check_settings({"NCCL_ALGO": "Ring\nNCCL_PROTO=LL"}) == ["NCCL_ALGO: the value must be one line"]


def test_table_keys_are_nccl_names():
    assert all(k.startswith("NCCL_") and k == k.upper() for k in KNOWN)


def test_filters_wrap_the_functions():
    assert nccl_conf_problems({"NCCL_SOCKET_IFNAME": "=eth9"}, IFACES, {"mlx5_0": ["1"]})
    assert nccl_conf_problems(ETHERNET, IFACES, None) == []
    assert nccl_conf_render({"NCCL_IB_DISABLE": 1}) == "NCCL_IB_DISABLE=1\n"


def test_hca_ports_from_sysfs_paths():
    from ansible_collections.lockstep.gpu.plugins.filter.nccl import nccl_hca_ports
    paths = ["/sys/class/infiniband/mlx5_0/ports/1", "/sys/class/infiniband/mlx5_1/ports/2",
             "/sys/class/infiniband/mlx5_1/ports/1", "/sys/class/infiniband/mlx5_0/device/msi_irqs/12"]
    assert nccl_hca_ports(paths) == {"mlx5_0": [1], "mlx5_1": [1, 2]}
    assert nccl_hca_ports([]) == {}
