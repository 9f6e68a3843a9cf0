"""The preflight rules of role network (plugins/plugin_utils/preflight/network.py).

Good values are the role's defaults as the molecule cluster scenario sees
them (dp1..dp3, containers on one bridge, eth0 and lo); every network case of
molecule/cluster/tests/test_bad_input.py that a rule (not the argument spec)
refuses is here, with the exact problem.
"""

from __future__ import annotations

import pytest

from ansible_collections.lockstep.gpu.plugins.plugin_utils.preflight import Context
from ansible_collections.lockstep.gpu.plugins.plugin_utils.preflight import network
from ansible_collections.lockstep.gpu.plugins.plugin_utils.problems import Problem

HOSTS = ["dp1", "dp2", "dp3"]

# roles/network/defaults/main.yml (molecule/cluster sets no network_* variable).
DEFAULTS = {
    "network_sysctl": {
        "net.core.rmem_max": 268435456,
        "net.core.wmem_max": 268435456,
        "net.core.netdev_max_backlog": 250000,
        "net.ipv4.tcp_rmem": "4096 87380 134217728",
        "net.ipv4.tcp_wmem": "4096 65536 134217728",
        "net.ipv4.tcp_mtu_probing": 1,
        "net.ipv4.tcp_slow_start_after_idle": 0,
        "net.ipv4.tcp_no_metrics_save": 1,
        "net.core.somaxconn": 4096,
    },
    "network_sysctl_overrides": {},
    "network_sysctl_file": "/etc/sysctl.d/90-lockstep-network.conf",
    "network_mtu": {},
    "network_mtu_udev_rule": "/etc/udev/rules.d/90-lockstep-mtu.rules",
    "network_check_interfaces": [],
    "network_min_speed_mbps": 100000,
    "network_unknown_speed": "fail",
    "network_check_links": True,
    "network_rdma": True,
    "network_rdma_packages": ["rdma-core", "ibverbs-utils", "infiniband-diags", "perftest"],
    "network_rdma_min_rate_gbps": 100.0,
    "network_rdma_sysfs": "/sys/class/infiniband",
}
ADDRESSES = {"dp1": "10.231.1.11", "dp2": "10.231.1.12", "dp3": "10.231.1.13"}

MTU_ALLOWED = "an MTU is a number from 576 to 65520 (9000 for jumbo Ethernet frames)"
SPEED_ALLOWED = "multi-node NCCL needs 10 GbE at the very least (10000), 100 GbE or InfiniBand preferred (100000)"
SYSCTL_ALLOWED = "not a sysctl key with a scalar value (a key such as net.core.rmem_max, a number or a string)"


def missing(name, have="eth0, lo"):
    return (f"the node has no interface {name} (named in network_mtu or network_check_interfaces); "
            f"it has: {have}")


def facts(host):
    return {"interfaces": ["lo", "eth0"], "default_ipv4": {"interface": "eth0", "address": ADDRESSES[host]},
            "virtualization_role": "guest", "virtualization_type": "podman"}


def probe(host):
    return {"interfaces": {"lo": {"mtu": 65536, "addresses": ["127.0.0.1"], "up": True, "speed": None},
                           "eth0": {"mtu": 1500, "addresses": [ADDRESSES[host]], "up": True, "speed": 10000}},
            "hcas": {}, "listening": [], "memory_mb": 15872, "virtualization": "container",
            "markers": {"/.dockerenv": False, "/run/.containerenv": True}}


def context(**values) -> Context:
    """The cluster scenario with these extra vars on every node (as -e sets them)."""
    merged = {**DEFAULTS, **values}
    return Context(hosts=list(HOSTS), groups={"all": list(HOSTS), "cluster": list(HOSTS), "gpu": list(HOSTS)},
                   values={h: dict(merged) for h in HOSTS}, raw={h: dict(merged) for h in HOSTS},
                   facts={h: facts(h) for h in HOSTS}, probes={h: probe(h) for h in HOSTS}, roles=("network",))


def problems(ctx) -> list[Problem]:
    return [problem for rule in network.RULES for problem in rule(ctx)]


def everywhere(variable, value, allowed) -> list[Problem]:
    return [Problem(variable, value, allowed, host) for host in HOSTS]


def test_the_defaults_of_the_cluster_scenario_pass():
    assert problems(context()) == []


# --- the cases of molecule/cluster/tests/test_bad_input.py that rules refuse ------------------------
# (min-speed-word, unknown-speed-choice, mtu-string and rdma-packages-string are the argument spec's.)

def test_min_speed_1g():
    found = problems(context(network_min_speed_mbps=1000))
    assert found == everywhere("network_min_speed_mbps", 1000, SPEED_ALLOWED)
    assert found[0].line() == (
        "dp1: network_min_speed_mbps is '1000': multi-node NCCL needs 10 GbE at the very least (10000), "
        "100 GbE or InfiniBand preferred (100000)")


def test_mtu_too_small():
    found = problems(context(network_mtu={"eth0": 100}))
    assert found == everywhere("network_mtu.eth0", 100, MTU_ALLOWED)
    assert found[0].line() == ("dp1: network_mtu.eth0 is '100': an MTU is a number from 576 to 65520 "
                               "(9000 for jumbo Ethernet frames)")


def test_mtu_missing_interface():
    found = problems(context(network_mtu={"ib9": 9000}))
    assert found == everywhere("network_mtu", "ib9", missing("ib9"))
    assert found[0].line() == ("dp1: network_mtu is 'ib9': the node has no interface ib9 (named in network_mtu "
                               "or network_check_interfaces); it has: eth0, lo")


def test_sysctl_not_a_key():
    found = problems(context(network_sysctl_overrides={"net.core.rmem_max = 1; reboot": 1}))
    assert found == everywhere("network_sysctl_overrides", "net.core.rmem_max = 1; reboot: 1", SYSCTL_ALLOWED)


# --- minimum speed --------------------------------------------------------------------------------

@pytest.mark.parametrize("value", [10000, 25000, 400000])
def test_min_speed_of_10gbe_or_more_passes(value):
    assert list(network._min_speed(context(network_min_speed_mbps=value))) == []


@pytest.mark.parametrize("value", [9999, 0, -1, True, "fast"])
def test_min_speed_below_10gbe_or_not_a_number_is_refused(value):
    assert list(network._min_speed(context(network_min_speed_mbps=value))) == everywhere(
        "network_min_speed_mbps", value, SPEED_ALLOWED)


def test_a_min_speed_the_spec_refused_is_skipped():
    ctx = context(network_min_speed_mbps=1000)
    del ctx.values["dp2"]["network_min_speed_mbps"]
    assert [p.node for p in network._min_speed(ctx)] == ["dp1", "dp3"]


# --- MTU range ------------------------------------------------------------------------------------

@pytest.mark.parametrize("value", [576, 1500, 9000, "9000", 65520])
def test_mtus_in_range_pass(value):
    assert list(network._mtu_range(context(network_mtu={"eth0": value}))) == []


@pytest.mark.parametrize("value", [575, 65521, 0, -9000, "9000 ", "9k", 9000.0, True, None, [9000], "9" * 200000])
def test_mtus_out_of_range_or_not_numbers_are_refused(value):
    assert list(network._mtu_range(context(network_mtu={"eth0": value}))) == everywhere(
        "network_mtu.eth0", value, MTU_ALLOWED)


def test_each_bad_mtu_is_named_by_its_interface():
    found = list(network._mtu_range(context(network_mtu={"eth0": 9000, "ib0": 70000, "ib1": 100})))
    assert [(p.node, p.variable, p.shown) for p in found if p.node == "dp1"] == [
        ("dp1", "network_mtu.ib0", "70000"), ("dp1", "network_mtu.ib1", "100")]


# --- interfaces the node has ----------------------------------------------------------------------

def test_a_missing_interface_of_network_check_interfaces_names_that_variable():
    found = list(network._interfaces_exist(context(network_check_interfaces=["eth0", "eth1"])))
    assert found == everywhere("network_check_interfaces", "eth1", missing("eth1"))


def test_an_interface_in_both_lists_is_named_once_by_network_mtu():
    found = list(network._interfaces_exist(context(network_mtu={"ib9": 9000}, network_check_interfaces=["ib9"])))
    assert found == everywhere("network_mtu", "ib9", missing("ib9"))


def test_the_probe_wins_over_the_facts():
    ctx = context(network_mtu={"ib0": 9000})
    for host in HOSTS:
        ctx.probes[host]["interfaces"]["ib0"] = {"mtu": 2044, "addresses": [], "up": True, "speed": 200000}
    assert list(network._interfaces_exist(ctx)) == []
    ctx.probes["dp3"]["interfaces"].pop("ib0")
    assert list(network._interfaces_exist(ctx)) == [Problem("network_mtu", "ib0", missing("ib0"), "dp3")]


def test_the_facts_serve_where_there_is_no_probe_and_nothing_is_said_without_either():
    ctx = context(network_mtu={"ib0": 9000})
    ctx.probes = {"dp2": probe("dp2")}
    ctx.facts["dp3"] = {}
    assert list(network._interfaces_exist(ctx)) == [
        Problem("network_mtu", "ib0", missing("ib0"), "dp1"), Problem("network_mtu", "ib0", missing("ib0"), "dp2")]


def test_the_default_route_interface_is_checked_when_no_interface_is_named():
    ctx = context()
    del ctx.probes["dp1"]["interfaces"]["eth0"]
    assert list(network._interfaces_exist(ctx)) == [
        Problem("network_check_interfaces", "eth0", missing("eth0", "lo"), "dp1")]
    ctx.facts["dp1"].pop("default_ipv4")
    assert list(network._interfaces_exist(ctx)) == []


# --- sysctl keys ----------------------------------------------------------------------------------

@pytest.mark.parametrize("key, value", [
    ("net.ipv4.tcp_congestion_control", "bbr"),
    ("net.ipv4.conf.all.rp_filter", 2),
    ("net.ipv4.conf.ens1f0-v1.rp_filter", 0),
    ("net.ipv4.tcp_keepalive_*", 60),
    ("net.ipv4.tcp_timestamps", True),
    ("net.core.busy_poll", 0.5),
])
def test_sysctl_keys_with_scalar_values_pass(key, value):
    assert list(network._sysctl_keys(context(network_sysctl_overrides={key: value}))) == []


@pytest.mark.parametrize("key, value", [
    ("net", 1),
    ("Net.core.rmem_max", 1),
    ("net.core.rmem max", 1),
    ("net.core.rmem_max\nkernel.panic", 1),
    ("net.core.rmem_max", {"a": 1}),
    ("net.core.rmem_max", [1, 2]),
    ("net.core.rmem_max", None),
    (1.5, 1),
])
def test_sysctl_keys_that_are_not_keys_or_values_that_are_not_scalars_are_refused(key, value):
    assert list(network._sysctl_keys(context(network_sysctl_overrides={key: value}))) == everywhere(
        "network_sysctl_overrides", f"{key}: {value}", SYSCTL_ALLOWED)


def test_a_bad_key_of_network_sysctl_names_that_variable_and_an_override_replaces_a_bad_value():
    sysctl = {**DEFAULTS["network_sysctl"], "net.core.rmem_max": [1], "kernel..x": 1}
    ctx = context(network_sysctl=sysctl, network_sysctl_overrides={"net.core.rmem_max": 2})
    found = list(network._sysctl_keys(ctx))
    assert found == everywhere("network_sysctl", "kernel..x: 1", SYSCTL_ALLOWED)


def test_an_invalid_network_sysctl_leaves_the_overrides_checked():
    ctx = context(network_sysctl_overrides={"bad key": 1})
    for host in HOSTS:
        del ctx.values[host]["network_sysctl"]
    assert list(network._sysctl_keys(ctx)) == everywhere("network_sysctl_overrides", "bad key: 1", SYSCTL_ALLOWED)


# --- odd input never raises -----------------------------------------------------------------------

def test_odd_input_yields_problems_or_nothing_never_an_exception():
    ctx = context(network_mtu="9000", network_check_interfaces="eth0", network_sysctl=None,
                  network_sysctl_overrides=[1])
    ctx.facts = {"dp1": {"interfaces": None, "default_ipv4": "eth0"}}
    ctx.probes = {"dp1": None, "dp2": {"interfaces": [], "markers": ["/.dockerenv"]}}
    assert problems(ctx) == []
    empty = Context(hosts=["dp1"], groups={}, values={})
    assert problems(empty) == []
