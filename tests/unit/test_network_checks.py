"""Cross-node link and RDMA port checks (module_utils/lockstep_net, filter lockstep_network_filters).

The RDMA checks run on real ibstat outputs (tests/fixtures/rdma/SOURCES.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.lockstep.gpu.plugins.plugin_utils.network import link_problems, rdma_problems
from ansible_collections.lockstep.gpu.plugins.module_utils.rdma import parse_ibstat
from ansible_collections.lockstep.gpu.plugins.filter.network import ibstat, net_links, net_rdma, node_addresses

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"

RDMA = FIXTURES / "rdma"
ALL_ACTIVE = "ibstat_h100_ndr_ib_all_active.txt"
SOME_DOWN = "ibstat_h100_ndr_ib_some_down.txt"


def link(mtu, speed):
    return {"mtu": mtu, "speed_mbps": speed}


def three(nc3):
    return {"nc1": {"eth0": link(9000, 100000)}, "nc2": {"eth0": link(9000, 100000)}, "nc3": {"eth0": nc3}}


def test_uniform_links_pass():
    assert link_problems(three(link(9000, 100000)), ["eth0"], {"eth0": 9000}, 100000) == {
        "problems": [], "warnings": []}


def test_mtu_against_the_declared_value_names_node_mtu_and_expected():
    result = link_problems(three(link(1500, 100000)), ["eth0"], {"eth0": 9000}, 10000)
    assert result["problems"] == ["nc3: eth0 MTU 1500, expected 9000 (network_mtu)"]


def test_mtu_against_the_majority_without_a_declaration():
    result = link_problems(three(link(1500, 100000)), ["eth0"], {}, 10000)
    assert result["problems"] == ["nc3: eth0 MTU 1500, expected 9000 (the MTU of 2 of 3 nodes)"]


def test_uniformly_wrong_mtu_fails_every_node():
    nodes = {h: {"eth0": link(1500, 100000)} for h in ("nc1", "nc2")}
    assert len(link_problems(nodes, ["eth0"], {"eth0": 9000})["problems"]) == 2


def test_slow_and_different_speed():
    result = link_problems(three(link(9000, 25000)), ["eth0"], {}, 100000)
    assert result["problems"] == [
        "nc3: eth0 link speed 25000 Mb/s is below the minimum 100000 Mb/s (network_min_speed_mbps)",
        "nc3: eth0 link speed 25000 Mb/s, expected 100000 Mb/s (the speed of 2 of 3 nodes on eth0)",
    ]


@pytest.mark.parametrize("speed", [None, -1, 0])
def test_unknown_speed_policies(speed):
    nodes = three(link(9000, speed))
    failed = link_problems(nodes, ["eth0"], {}, 10000, "fail")
    assert failed["problems"] == [
        "nc3: eth0 reports no link speed (unknown; virtual NICs such as veth often do); its speed "
        "cannot be checked against network_min_speed_mbps 10000"]
    warned = link_problems(nodes, ["eth0"], {}, 10000, "warn")
    assert warned["problems"] == [] and len(warned["warnings"]) == 1
    assert link_problems(nodes, ["eth0"], {}, 10000, "ignore") == {"problems": [], "warnings": []}


def test_missing_interface_and_per_host_names():
    nodes = {"a": {"eno1": link(9000, 100000)}, "b": {"ens1f0": link(9000, 100000)}, "c": {}}
    result = link_problems(nodes, {"a": ["eno1"], "b": ["ens1f0"], "c": ["ens1f0"]}, {})
    assert result["problems"] == ["c: interface ens1f0 does not exist"]


def test_bad_policy_is_refused():
    with pytest.raises(AnsibleFilterError, match="unknown_speed must be one of fail, warn, ignore"):
        net_links(three(link(9000, 1)), ["eth0"], {}, 0, "maybe")


def cas(name):
    return parse_ibstat((RDMA / name).read_text(), source=name)["cas"]


def test_all_active_ports_pass():
    nodes = {"gpu1": cas(ALL_ACTIVE), "gpu2": cas(ALL_ACTIVE)}
    result = rdma_problems(nodes, 100)
    assert result["problems"] == []
    assert result["ports"] == 2 * len(cas(ALL_ACTIVE))


def test_ports_down_are_named():
    result = rdma_problems({"gpu1": cas(ALL_ACTIVE), "gpu2": cas(SOME_DOWN)}, 0)
    down = [p for p in result["problems"] if "expected Active" in p]
    assert down and all(p.startswith("gpu2: mlx5_") for p in down)
    assert not any(p.startswith("gpu1") for p in result["problems"])


def test_minimum_rate_names_slow_ports():
    result = rdma_problems({"gpu1": cas(ALL_ACTIVE)}, 400)
    # the fixture's bonded Ethernet port runs at 200 Gb/s, the NDR ports at 400
    assert result["problems"] == [
        "gpu1: mlx5_bond_0 port 1 rate 200 Gb/s is below the minimum 400 Gb/s (network_rdma_min_rate_gbps)"]
    assert net_rdma({"gpu1": cas(ALL_ACTIVE)}, "400")["problems"] == result["problems"]


def test_filters_parse_ibstat():
    parsed = ibstat((RDMA / ALL_ACTIVE).read_text(), ALL_ACTIVE)
    assert parsed[0]["name"] == "mlx5_0" and parsed[0]["ports"][0]["rate"] == 400
    assert net_rdma({"gpu1": parsed}, 0)["problems"] == []
    text = (RDMA / ALL_ACTIVE).read_text()
    with pytest.raises(AnsibleFilterError, match="truncated"):
        ibstat(text[: text.index("Rate: 400")], ALL_ACTIVE)


def test_sysctl_plan_in_a_container_keeps_only_namespaced_keys():
    import yaml
    from ansible_collections.lockstep.gpu.plugins.filter.network import net_sysctl_plan

    defaults = yaml.safe_load((ROOT / "roles/network/defaults/main.yml").read_text())["network_sysctl"]
    namespaced = yaml.safe_load((ROOT / "roles/network/vars/main.yml").read_text())["network_namespaced_sysctls"]
    plan = net_sysctl_plan(defaults, namespaced, "True")
    assert plan["skipped"] == ["net.core.netdev_max_backlog", "net.core.rmem_max", "net.core.wmem_max"]
    assert plan["apply"]["net.ipv4.tcp_rmem"] == "4096 87380 134217728"
    assert "net.core.somaxconn" in plan["apply"]
    host = net_sysctl_plan(defaults, namespaced, False)
    assert host["skipped"] == [] and host["apply"]["net.core.rmem_max"] == "268435456"
    conf = net_sysctl_plan({"net.ipv4.conf.eth0.rp_filter": 2, "vm.swappiness": 10}, namespaced, True)
    assert conf == {"apply": {"net.ipv4.conf.eth0.rp_filter": "2"}, "skipped": ["vm.swappiness"]}


def test_link_facts_of_ansible_interfaces():
    from ansible_collections.lockstep.gpu.plugins.filter.network import net_link_facts
    facts = {"eth0": {"mtu": 1500, "speed": 10000, "active": True}, "ib_0": {"mtu": 4092, "speed": -1},
             "eth1": {"mtu": 9000}}
    assert net_link_facts(facts, ["eth0", "ib-0", "eth1", "eth9"]) == {
        "eth0": {"mtu": 1500, "speed_mbps": 10000},
        "ib-0": {"mtu": 4092, "speed_mbps": None},
        "eth1": {"mtu": 9000, "speed_mbps": None},
        "eth9": None,
    }


def test_node_addresses_declared_else_default_route_else_empty():
    hostvars = {
        "dp1": {"base_node_address": "192.168.50.11",
                "ansible_facts": {"default_ipv4": {"address": "10.0.0.11"}}},
        "dp2": {"ansible_facts": {"default_ipv4": {"address": "10.0.0.12"}}},
        "dp3": {"ansible_facts": {"default_ipv4": {}}},
        "dp4": {"base_node_address": ""},
    }
    assert node_addresses(["dp2", "dp1", "dp3", "dp4", "dp5"], hostvars) == {
        "dp2": "10.0.0.12", "dp1": "192.168.50.11", "dp3": "", "dp4": "", "dp5": ""}


def test_node_addresses_without_facts_fall_back_to_an_ansible_host_that_is_an_address():
    """A --limit run has no facts of the other nodes: their ansible_host keeps their address the same."""
    hostvars = {
        "dp1": {"ansible_host": "10.231.3.11"},
        "dp2": {"ansible_host": "dp2.example.com"},
        "dp3": {"ansible_host": "10.231.3.13", "ansible_facts": {"default_ipv4": {"address": "10.0.0.13"}}},
        "dp4": {"ansible_host": "fd00::4"},
    }
    assert node_addresses(["dp1", "dp2", "dp3", "dp4"], hostvars) == {
        "dp1": "10.231.3.11", "dp2": "", "dp3": "10.0.0.13", "dp4": "fd00::4"}
