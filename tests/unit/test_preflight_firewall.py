# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The firewall role's preflight rules (plugins/plugin_utils/preflight/firewall.py) on hand-built contexts.

GOOD is what the demo inventory's nodes see (inventories/demo/group_vars/all/firewall.yml: the firewall on,
the controller 10.231.0.1 inside the cluster; GPUStack on): roles/firewall/defaults/main.yml under it, the
cluster contract's switches and ports, and the VARIABLES as roles/firewall/vars/main.yml and
roles/cluster/vars/main.yml render them there (SSH_CLIENT of the run's connection from 10.231.0.1, each node
at its default route's address). Values pass the role's argument spec as the engine does it (a value it
refuses is absent). The e2e case of molecule/slurm/tests/test_slurm.py (firewall_extra_ports
[{port: 70000}]) is here with its exact line.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar
from ansible_collections.lockstep.gpu.plugins.plugin_utils.preflight import Context, engine
from ansible_collections.lockstep.gpu.plugins.plugin_utils.preflight import firewall
from ansible_collections.lockstep.gpu.plugins.plugin_utils.problems import Problem

ROLES = Path(__file__).resolve().parents[2] / "roles"
NODES = ["dp1", "dp2", "dp3"]
GROUPS = {"all": list(NODES), "ungrouped": [], "cluster": list(NODES), "head": ["dp1"], "workers": ["dp2", "dp3"],
          "gpu": list(NODES)}
ADDRESSES = {"dp1": "10.231.0.11", "dp2": "10.231.0.12", "dp3": "10.231.0.13"}
# The demo's inventory values that change the contract's table.
DEMO = {"gpustack_enabled": True, "shared_storage_implementation": "nfs-ganesha"}


def _service(name, owner, variable, port, nodes, sources, **more) -> dict:
    entry = {"name": name, "owner": owner, "variable": variable, "port": port, "proto": "tcp", "enabled": True,
             "nodes": nodes, **more, "sources": sources}
    return {k: v for k, v in entry.items() if v is not None}


# roles/cluster/vars/main.yml's cluster_services as the demo renders it (test_the_table_is_the_contract_s).
SERVICES = [
    _service("SSH", "firewall", "firewall_ssh_port", 22, NODES, "ssh"),
    _service("slurmctld", "slurm", "slurm_slurmctld_port", 6817, ["dp1"], "cluster", unit=["slurmctld", "munge"]),
    _service("slurmd", "slurm", "slurm_slurmd_port", 6818, NODES, "cluster", unit=["slurmd", "munge"]),
    _service("srun (SrunPortRange)", "slurm", "slurm_srun_port_range", "60001-63000", NODES, "cluster"),
    {"name": "NFS (shared_storage)", "owner": "shared_storage", "port": 2049, "proto": "tcp", "enabled": True,
     "nodes": ["dp1"], "unit": "nfs-ganesha", "sources": "cluster",
     "clients_variable": "shared_storage_export_clients", "clients": []},
    _service("node exporter, from the monitoring server", "monitoring", "monitoring_node_exporter_port", 9100,
             NODES, ["dp1"], unit="prometheus-node-exporter"),
    _service("DCGM exporter, from the monitoring server", "monitoring", "monitoring_dcgm_exporter_port", 9400,
             NODES, ["dp1"], unit="nvidia-dcgm-exporter"),
    _service("Prometheus", "monitoring", "monitoring_prometheus_port", 9090, ["dp1"], "cluster", unit="prometheus"),
    _service("GPUStack server", "gpustack", "gpustack_port", 80, ["dp1"], "cluster", unit=["gpustack", "postgresql"]),
    _service("GPUStack worker", "gpustack", "gpustack_worker_port", 10150, ["dp3", "dp2"], "cluster",
             unit="gpustack"),
    _service("GPUStack inference services", "gpustack", "gpustack_service_port_range", "40000-40063",
             ["dp3", "dp2"], "cluster"),
    _service("torch.distributed rendezvous (train_check)", "train_check", "train_check_port", 29500, NODES,
             "cluster"),
    _service("torch.distributed gloo/NCCL ephemeral ports (train_check)", "train_check",
             "train_check_ephemeral_ports", "32768-60999", NODES, list(NODES), ephemeral=True),
]
# roles/firewall/defaults/main.yml under the demo's group_vars; the contract's switch and SSH port.
OPTIONS = {
    "firewall_cluster_group": "cluster",
    "firewall_allowed_sources": ["10.231.0.1"],
    "firewall_allow_world": False,
    "firewall_ssh_sources": [],
    "firewall_controller_sources": [],
    "firewall_extra_ports": [],
    "firewall_extra_rules": [],
    "firewall_reject": True,
}
CONTRACT = {"firewall_enabled": True, "firewall_ssh_port": 22}
DERIVED = {"firewall_controller_addresses": ["10.231.0.1"], "firewall_node_addresses": dict(ADDRESSES),
           "cluster_services": SERVICES}


def context(derived=None, **values) -> Context:
    """The demo with these extra vars on every node, its firewall options through the role's spec."""
    written = {**OPTIONS, **CONTRACT, **copy.deepcopy(DERIVED), **(derived or {}), **values}
    options = engine.spec_options("firewall")
    converted, _refused = engine.validate("dp1", options, {k: v for k, v in written.items() if k in options})
    merged = {**{k: v for k, v in written.items() if k not in options}, **converted}
    return Context(hosts=list(NODES), groups=copy.deepcopy(GROUPS),
                   values={h: copy.deepcopy(merged) for h in NODES}, raw={h: copy.deepcopy(written) for h in NODES},
                   roles=("firewall",))


def problems(ctx) -> list[Problem]:
    return [problem for rule in firewall.RULES for problem in rule(ctx)]


def everywhere(variable, value, allowed) -> list[Problem]:
    return [Problem(variable, value, allowed, host) for host in NODES]


def lines(found) -> list[str]:
    return [problem.line() for problem in found]


def test_the_demo_passes():
    assert problems(context()) == []


def test_the_slurm_scenario_passes():
    """molecule/slurm/inventory.yml: SSH from the nodes only, nothing else inside the cluster."""
    assert problems(context(firewall_ssh_sources=["10.231.9.11", "10.231.9.12", "10.231.9.13"],
                            firewall_allowed_sources=[])) == []


def test_the_literal_values_are_the_roles():
    defaults = yaml.safe_load((ROLES / "firewall" / "defaults" / "main.yml").read_text(encoding="utf-8"))
    assert {**defaults, "firewall_allowed_sources": ["10.231.0.1"]} == OPTIONS
    contract = yaml.safe_load((ROLES / "cluster" / "defaults" / "main.yml").read_text(encoding="utf-8"))
    assert {k: contract[k] for k in CONTRACT} == {**CONTRACT, "firewall_enabled": False}
    role_vars = yaml.safe_load((ROLES / "firewall" / "vars" / "main.yml").read_text(encoding="utf-8"))
    assert {"firewall_controller_addresses", "firewall_node_addresses"} <= set(role_vars)
    assert set(firewall.VARIABLES) == set(DERIVED) | {"ansible_connection", "ansible_port"}


def test_the_table_is_the_contract_s():
    loader = DataLoader()
    values = dict(loader.load_from_file(str(ROLES / "cluster" / "defaults" / "main.yml"), trusted_as_template=True))
    values.update(loader.load_from_file(str(ROLES / "cluster" / "vars" / "main.yml"), trusted_as_template=True))
    values.update(DEMO, groups=GROUPS, cluster_node_addresses=dict(ADDRESSES))
    table = Templar(loader=loader, variables=values).template(values["cluster_services"])

    def unordered(services):
        # GPUStack's workers are Jinja's difference(), whose order is a set's.
        return [{**entry, "nodes": sorted(entry["nodes"])} for entry in services]
    assert unordered(table) == unordered(SERVICES)


def test_rules_are_named_after_their_checks():
    assert [rule.__name__ for rule in firewall.RULES] == [
        "_controller", "_sources", "_extra_ports", "_extra_rules", "_node_addresses", "_ruleset"]
    assert not hasattr(firewall, "probe")


def test_nothing_is_checked_while_the_firewall_is_off():
    bad = {"firewall_extra_ports": [{"port": 70000}], "firewall_ssh_sources": ["login1"],
           "firewall_allowed_sources": ["0.0.0.0/0"], "firewall_extra_rules": ["a\nb"]}
    ctx = context(derived={"firewall_controller_addresses": [], "firewall_node_addresses": {}}, **bad)
    for host in NODES:
        ctx.values[host]["firewall_enabled"] = False
    assert problems(ctx) == []


def test_a_firewall_off_on_one_node_is_checked_on_the_others():
    ctx = context(firewall_ssh_sources=["login1"])
    ctx.values["dp2"]["firewall_enabled"] = False
    assert [(p.node, p.variable) for p in problems(ctx)] == [("dp1", "firewall_ssh_sources"),
                                                             ("dp3", "firewall_ssh_sources")]


# --- the controller's address -------------------------------------------------------------------


def test_a_run_that_sees_no_ssh_client_is_refused():
    found = problems(context(derived={"firewall_controller_addresses": []}))
    assert found == everywhere("firewall_controller_sources", [], firewall.CONTROLLER)
    assert found[0].line() == (
        "dp1: firewall_controller_sources is '[]': empty, and the node sees no SSH_CLIENT on this run's "
        "connection, so the firewall cannot allow the controller first: set firewall_controller_sources to the "
        "controller's addresses")


def test_a_local_connection_or_named_controllers_need_no_ssh_client():
    for local in ("local", "ansible.builtin.local"):
        assert problems(context(derived={"firewall_controller_addresses": []}, ansible_connection=local)) == []
    assert len(problems(context(derived={"firewall_controller_addresses": []}, ansible_connection="ssh"))) == 3
    assert problems(context(derived={"firewall_controller_addresses": ["10.9.0.5"]},
                            firewall_controller_sources=["10.9.0.5"])) == []


def test_controller_addresses_that_did_not_render_are_not_judged():
    ctx = context()
    for host in NODES:
        del ctx.values[host]["firewall_controller_addresses"]
    assert problems(ctx) == []


# --- every node's address ------------------------------------------------------------------------


def test_a_cluster_node_without_an_address_is_named_once_on_that_node():
    found = problems(context(derived={"firewall_node_addresses": {"dp1": "10.231.0.11", "dp2": "10.231.0.12",
                                                                  "dp3": ""}}))
    assert found == [Problem("base_node_address", "", firewall.NO_ADDRESS.format(group="cluster"), "dp3")]
    assert found[0].line() == (
        "dp3: base_node_address is '': no address to allow (a node of firewall_cluster_group 'cluster'): gather "
        "its facts (run against it, not only with --limit) or set base_node_address in its host_vars")


def test_a_node_of_the_group_outside_the_play_needs_an_address_too():
    ctx = context(firewall_cluster_group="workers")
    ctx.hosts = ["dp2"]
    assert problems(ctx) == []
    ctx.values["dp2"]["firewall_node_addresses"] = {"dp2": "10.231.0.12"}
    assert [(p.node, p.variable) for p in problems(ctx)] == [("dp3", "base_node_address")]


# --- sources ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("variable", firewall.SOURCE_LISTS)
@pytest.mark.parametrize("value", ["login1", "*", "10.0.0.999", "10.0.0.0/24 ", 5])
def test_a_source_that_is_not_an_address_or_a_network_is_refused(variable, value):
    derived = {"firewall_controller_addresses": [str(value)]} if variable == "firewall_controller_sources" else None
    found = problems(context(derived=derived, **{variable: [value]}))
    assert found == everywhere(variable, value, firewall.SOURCE)


def test_the_e2e_like_source_line():
    assert problems(context(firewall_ssh_sources=["login1"]))[0].line() == (
        "dp1: firewall_ssh_sources is 'login1': every entry must be an IPv4 or IPv6 address or network "
        "(10.0.0.5, 10.0.0.0/24, fd00::/64), not a name")


def test_addresses_and_networks_of_both_families_pass():
    assert problems(context(firewall_ssh_sources=["10.0.0.5", "10.0.0.0/24", "fd00::/64", "fd00::5"],
                            firewall_allowed_sources=["10.231.0.0/24", "fd00:1::/48"])) == []


# --- firewall_extra_ports --------------------------------------------------------------------------


def test_the_e2e_case_an_extra_port_of_70000():
    found = problems(context(firewall_extra_ports=[{"port": 70000}]))
    assert found == everywhere("firewall_extra_ports", {"port": 70000}, firewall.EXTRA_PORT)
    assert found[0].line() == (
        "dp1: firewall_extra_ports is '{'port': 70000}': each entry needs port (1-65535, or a range first-last), "
        "proto tcp or udp (default tcp), sources a list of addresses or networks (default: within the cluster) or "
        "any, and why a note of at most 100 characters without quotes")


@pytest.mark.parametrize("entry", [
    {"port": 0}, {"port": "9000-8000"}, {"port": "80-"}, {"port": "http"}, {"port": True}, {"port": 80.5},
    {"port": 80, "sources": "all"}, {"port": 80, "sources": ["login1"]}, {"port": 80, "sources": "10.0.0.0/24"},
    {"port": 80, "why": 'say "hi"'}, {"port": 80, "why": "a\\b"}, {"port": 80, "why": "x" * 101},
    {"port": 80, "why": "two\nlines"},
])
def test_an_extra_port_the_role_cannot_write_is_refused(entry):
    found = problems(context(firewall_extra_ports=[entry]))
    assert found == everywhere("firewall_extra_ports", entry, firewall.EXTRA_PORT)


def test_extra_ports_of_every_allowed_form_pass():
    assert problems(context(firewall_extra_ports=[
        {"port": 8080}, {"port": "5000-5010", "proto": "udp"}, {"port": "443", "sources": "any", "why": "web"},
        {"port": 65535, "sources": ["10.0.0.0/24", "fd00::5"], "why": "x" * 100}])) == []


def test_an_extra_port_the_spec_refused_is_not_judged_again():
    ctx = context(firewall_extra_ports=[{"port": 70000, "proto": "icmp"}])
    assert not ctx.has("dp1", "firewall_extra_ports")
    assert problems(ctx) == []


# --- firewall_extra_rules --------------------------------------------------------------------------


@pytest.mark.parametrize("rule", ["iifname ib0 accept\ntcp dport 1-65535 accept", "iifname ib0 accept\r", 5,
                                  {"iifname": "ib0"}])
def test_an_extra_rule_that_is_not_one_line_of_text_is_refused(rule):
    found = problems(context(firewall_extra_rules=[rule]))
    assert found == everywhere("firewall_extra_rules", rule, firewall.EXTRA_RULE)


def test_one_line_rules_pass():
    rules = ["iifname ib0 accept", "ip saddr 10.9.0.0/16 tcp dport 8000 accept"]
    assert problems(context(firewall_extra_rules=rules)) == []


# --- the ruleset the role would write -------------------------------------------------------------


def test_a_source_of_every_address_names_the_ports_it_would_open_on_each_node():
    found = problems(context(firewall_allowed_sources=["0.0.0.0/0"]))
    assert [(p.node, p.variable, p.value) for p in found] == [(h, "firewall_allowed_sources", "0.0.0.0/0")
                                                              for h in NODES]
    assert found[1].line() == (
        "dp2: firewall_allowed_sources is '0.0.0.0/0': every address: on dp2 it would open slurmd 6818/tcp, "
        "srun (SrunPortRange) 60001-63000/tcp, GPUStack worker 10150/tcp, GPUStack inference services "
        "40000-40063/tcp, torch.distributed rendezvous (train_check) 29500/tcp to the world; set "
        "firewall_allow_world: true to mean it, or name the networks that need them")
    assert problems(context(firewall_allowed_sources=["0.0.0.0/0"], firewall_allow_world=True)) == []


def test_an_nfs_export_to_every_address_is_refused_on_the_server_only():
    services = copy.deepcopy(SERVICES)
    services[4]["clients"] = ["*"]
    found = problems(context(derived={"cluster_services": services}))
    assert lines(found) == [
        "dp1: shared_storage_export_clients is '*': every address: the firewall would open this service to the "
        "world; set firewall_allow_world: true to mean it, or list the clients' networks"]


def test_a_node_address_that_is_a_name_is_named_once():
    addresses = dict(ADDRESSES, dp2="dp2.example.com")
    found = problems(context(derived={"firewall_node_addresses": addresses}))
    assert {(p.node, p.variable, p.value) for p in found} == {("dp2", "base_node_address", "dp2.example.com")}
    assert found[0].allowed.endswith("(the address of dp2)")


def test_an_empty_extra_rule_is_the_ruleset_s():
    assert lines(problems(context(firewall_extra_rules=[" "]))) == [
        f"{h}: firewall_extra_rules is ' ': one nftables rule, one line of text" for h in NODES]


def test_the_controller_s_port_is_ansible_port_when_set():
    assert problems(context(ansible_port=2222)) == []
    found = problems(context(ansible_port=70000))
    assert [(p.node, p.variable) for p in found] == [(h, "firewall_ssh_port (or ansible_port)") for h in NODES]


def test_the_ruleset_is_not_computed_where_an_input_is_refused():
    assert len(problems(context(firewall_allowed_sources=["0.0.0.0/0"], firewall_ssh_sources=["login1"]))) == 3


def test_a_service_whose_port_is_the_contract_s_problem_is_left_out_and_the_rest_still_judged():
    services = copy.deepcopy(SERVICES)
    services[1]["port"] = 70000  # the contract's rules name it (cluster.py)
    found = problems(context(derived={"cluster_services": services}, firewall_allowed_sources=["0.0.0.0/0"]))
    assert [(p.node, p.variable) for p in found] == [(h, "firewall_allowed_sources") for h in NODES]
    assert all("70000" not in p.allowed for p in found)
    assert problems(context(derived={"cluster_services": services})) == []


def test_a_table_no_rule_foresaw_is_a_problem_not_an_error():
    services = copy.deepcopy(SERVICES)
    services[0]["nodes"] = 5
    found = problems(context(derived={"cluster_services": services}))
    assert [(p.node, p.variable) for p in found] == [(h, "cluster_services") for h in NODES]
    assert found[0].allowed.startswith("the firewall's rules could not be computed")
