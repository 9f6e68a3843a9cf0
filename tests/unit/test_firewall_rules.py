"""lockstep.gpu.firewall_rules: one node's nftables rules from the cluster
contract's service table, every port and source checked.

The table is the real one (roles/cluster/vars/main.yml with the contract's
defaults), templated by Ansible for a cluster like the demo's: dp1 the head
(Slurm controller that computes too, the NFS server, Prometheus, the GPUStack
server), dp2 and dp3 workers, all three GPU nodes, the controller at
10.231.0.1 and an admin network. The injection and world-open cases are
issue 29's findings 1, 3 and 9.
"""

from __future__ import annotations

from pathlib import Path

import jinja2
import pytest
from ansible.errors import AnsibleFilterError
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar
from ansible_collections.lockstep.gpu.plugins.filter.firewall import firewall_rules
from ansible_collections.lockstep.gpu.plugins.plugin_utils.firewall import Refused, ruleset

ROOT = Path(__file__).resolve().parents[2]
NODES = ("dp1", "dp2", "dp3")
ADDRESSES = {"dp1": "10.231.0.11", "dp2": "10.231.0.12", "dp3": "10.231.0.13"}
CLUSTER = ["10.231.0.11", "10.231.0.12", "10.231.0.13"]
GROUPS = {"all": list(NODES), "cluster": list(NODES), "head": ["dp1"], "workers": ["dp2", "dp3"],
          "gpu": list(NODES), "ungrouped": []}
INJECTION = "32768-60999 accept; tcp dport 0-65535"


def services(**inventory) -> list[dict]:
    """cluster_services as Ansible templates it for this inventory (the contract's defaults below it)."""
    loader = DataLoader()
    values = dict(loader.load_from_file(str(ROOT / "roles/cluster/defaults/main.yml"), trusted_as_template=True))
    values.update(loader.load_from_file(str(ROOT / "roles/cluster/vars/main.yml"), trusted_as_template=True))
    values.update(groups=GROUPS, cluster_node_addresses=dict(ADDRESSES))
    values.update(inventory)
    return Templar(loader=loader, variables=values).template(values["cluster_services"])


def rules(host: str, table=None, **options) -> dict:
    options.setdefault("controller_sources", ["10.231.0.1"])
    return ruleset(services() if table is None else table, host, ADDRESSES, list(NODES), **options)


def lines(result: dict) -> list[tuple]:
    """(why, match, sources) of every rule: sources 'any', or the IPv4 then IPv6 ones."""
    return [(r["why"], r["match"], "any" if r["any"] else r["v4"] + r["v6"]) for r in result["rules"]]


def sources(result: dict) -> dict:
    """{why: sources} of every rule."""
    return {why: found for why, match, found in lines(result)}


def whys(result: dict) -> list[str]:
    return [rule["why"] for rule in result["rules"]]


def test_the_head_that_computes_opens_every_service_it_runs():
    result = rules("dp1", services(gpustack_enabled=True), allowed_sources=["10.231.0.1"])
    within = ["10.231.0.1"] + CLUSTER
    assert result["controller"] == {"why": "SSH from the controller", "match": "tcp dport 22", "any": False,
                                    "v4": ["10.231.0.1"], "v6": []}
    assert lines(result) == [
        ("SSH", "tcp dport 22", "any"),
        ("slurmctld", "tcp dport 6817", within),
        ("slurmd", "tcp dport 6818", within),
        ("srun (SrunPortRange)", "tcp dport 60001-63000", within),
        ("NFS (shared_storage)", "tcp dport 2049", within),
        ("node exporter, from the monitoring server", "tcp dport 9100", ["10.231.0.11"]),
        ("DCGM exporter, from the monitoring server", "tcp dport 9400", ["10.231.0.11"]),
        ("Prometheus", "tcp dport 9090", within),
        ("GPUStack server", "tcp dport 80", within),
        ("torch.distributed rendezvous (train_check)", "tcp dport 29500", within),
        # Finding 9: between the compute nodes only, not the controller nor firewall_allowed_sources.
        ("torch.distributed gloo/NCCL ephemeral ports (train_check)", "tcp dport 32768-60999", CLUSTER),
    ]
    assert result["extra_rules"] == []


def test_a_worker_opens_slurmd_srun_gpustack_s_worker_ports_and_the_exporters():
    result = rules("dp2", services(gpustack_enabled=True))
    assert [(rule["why"], rule["match"]) for rule in result["rules"]] == [
        ("SSH", "tcp dport 22"),
        ("slurmd", "tcp dport 6818"),
        ("srun (SrunPortRange)", "tcp dport 60001-63000"),
        ("node exporter, from the monitoring server", "tcp dport 9100"),
        ("DCGM exporter, from the monitoring server", "tcp dport 9400"),
        ("GPUStack worker", "tcp dport 10150"),
        ("GPUStack inference services", "tcp dport 40000-40063"),
        ("torch.distributed rendezvous (train_check)", "tcp dport 29500"),
        ("torch.distributed gloo/NCCL ephemeral ports (train_check)", "tcp dport 32768-60999"),
    ]


def test_exporter_ports_open_to_the_prometheus_servers_only_and_dcgm_s_on_gpu_nodes_only():
    table = services(groups=dict(GROUPS, gpu=["dp3"]), monitoring_server_group="workers")
    for host in NODES:
        found = sources(rules(host, table, allowed_sources=["10.9.0.0/16"]))
        assert found["node exporter, from the monitoring server"] == ["10.231.0.12", "10.231.0.13"]
        assert ("DCGM exporter, from the monitoring server" in found) == (host == "dp3")
        assert ("Prometheus" in found) == (host != "dp1")
    assert "DCGM exporter, from the monitoring server" not in whys(
        rules("dp3", services(monitoring_dcgm_exporter_enabled=False)))


def test_switched_off_roles_open_nothing():
    table = services(slurm_enabled=False, shared_storage_enabled=False, monitoring_enabled=False)
    assert whys(rules("dp1", table)) == [
        "SSH", "torch.distributed rendezvous (train_check)", "torch.distributed gloo/NCCL ephemeral ports (train_check)"]


def test_a_head_that_does_not_compute_takes_no_torch_ports_and_is_no_source_of_them():
    table = services(slurm_head_computes=False)
    assert not [why for why in whys(rules("dp1", table)) if "train_check" in why]
    found = sources(rules("dp2", table, allowed_sources=["10.231.0.1"]))
    assert found["torch.distributed gloo/NCCL ephemeral ports (train_check)"] == ["10.231.0.12", "10.231.0.13"]
    assert found["slurmd"] == ["10.231.0.1"] + CLUSTER


def test_the_injection_of_finding_1_is_refused_naming_the_variable_and_the_value():
    with pytest.raises(Refused) as refused:
        rules("dp2", services(train_check_ephemeral_ports=INJECTION))
    assert str(refused.value) == (
        "The firewall of dp2 is not written (its ruleset and the loaded rules stay as they are): 1 problem:\n"
        "  - dp2: train_check_ephemeral_ports is '32768-60999 accept; tcp dport 0-65535': a port (1 to 65535) or a "
        "range first-last with 1 <= first <= last <= 65535, e.g. 60001-63000")


@pytest.mark.parametrize("variable, value", [
    ("slurm_srun_port_range", "63000-60001"),
    ("slurm_slurmd_port", 70000),
    ("monitoring_prometheus_port", "9090 accept"),
    ("gpustack_service_port_range", "40000-40063,22"),
])
def test_every_port_of_the_table_is_checked(variable, value):
    with pytest.raises(Refused, match=rf"dp1: {variable} is '{value}': a port"):
        rules("dp1", services(**{variable: value, "gpustack_enabled": True}))


def test_every_address_in_firewall_allowed_sources_is_refused_naming_the_ports_it_would_open():
    with pytest.raises(Refused) as refused:
        rules("dp2", allowed_sources=["10.231.0.1", "0.0.0.0/0"], extra_ports=[{"port": 8080}])
    assert refused.value.problems[0].variable == "firewall_allowed_sources"
    assert str(refused.value).endswith(
        "dp2: firewall_allowed_sources is '0.0.0.0/0': every address: on dp2 it would open slurmd 6818/tcp, "
        "srun (SrunPortRange) 60001-63000/tcp, torch.distributed rendezvous (train_check) 29500/tcp, "
        "firewall_extra_ports 8080/tcp to the world; set firewall_allow_world: true to mean it, or name the networks "
        "that need them")
    with pytest.raises(Refused, match="firewall_allowed_sources is '::/0': every address: on dp1 it would open "
                                      "slurmctld 6817/tcp"):
        rules("dp1", allowed_sources=["::/0"])


def test_the_world_with_firewall_allow_world_is_what_the_site_asked_for():
    found = sources(rules("dp2", allowed_sources=["0.0.0.0/0"], allow_world=True))
    assert found["slurmd"] == ["0.0.0.0/0"] + CLUSTER
    # Still only the compute nodes for torch's ephemeral range, and the monitoring server for the exporter.
    assert found["torch.distributed gloo/NCCL ephemeral ports (train_check)"] == CLUSTER
    assert found["node exporter, from the monitoring server"] == ["10.231.0.11"]


def test_an_ipv6_source_gets_an_ip6_rule_and_addresses_are_written_canonically():
    result = rules("dp1", allowed_sources=["FD00:0::/64", "10.231.7.9/24", "10.0.0.5/32"])
    slurmctld = next(r for r in result["rules"] if r["why"] == "slurmctld")
    assert slurmctld["v4"] == ["10.0.0.5", "10.231.0.11", "10.231.0.12", "10.231.0.13", "10.231.7.0/24"]
    assert slurmctld["v6"] == ["fd00::/64"]


def test_nfs_opens_to_the_export_s_addresses_and_networks_not_its_names_and_not_the_world():
    found = sources(rules("dp1", services(
        shared_storage_export_clients=["10.231.0.0/24", "login1.example.com", "10.5.5.5"])))
    assert found["NFS (shared_storage)"] == ["10.231.0.0/24"] + CLUSTER + ["10.5.5.5"]
    with pytest.raises(Refused, match=r"dp1: shared_storage_export_clients is '\*': every address: the firewall "
                                      "would open this service to the world; set firewall_allow_world: true"):
        rules("dp1", services(shared_storage_export_clients=["*"]))
    assert "NFS (shared_storage)" not in whys(rules("dp1", services(shared_storage_server="nas1:/export")))


def test_every_problem_of_the_node_is_named_at_once():
    with pytest.raises(Refused) as refused:
        rules("dp2", services(train_check_port="29500; accept"), allowed_sources=["10.0.0.0/8 ; accept", "dp9"],
              ssh_sources="10.0.0.1", extra_ports=[{"port": 0}, {"port": 8080, "why": 'a "quote'}, {"prot": 1}],
              extra_rules=["tcp dport 1 accept\ntcp dport 2 accept"], controller_sources=["10.231.0.1%eth0"])
    assert sorted({p.variable for p in refused.value.problems}) == [
        "firewall_allowed_sources", "firewall_controller_sources (empty: the address of SSH_CLIENT)",
        "firewall_extra_ports", "firewall_extra_rules", "firewall_ssh_sources", "train_check_port"]
    assert len(refused.value.problems) == 9


def test_a_node_address_that_is_no_address_is_named_with_its_node():
    with pytest.raises(Refused, match=r"dp3: base_node_address is 'dp3.example': an IPv4 or IPv6 address"):
        ruleset(services(), "dp1", dict(ADDRESSES, dp3="dp3.example"), list(NODES))


def test_a_node_without_an_address_is_left_out():
    result = ruleset(services(), "dp1", dict(ADDRESSES, dp3=""), list(NODES))
    assert next(r for r in result["rules"] if r["why"] == "slurmctld")["v4"] == ["10.231.0.11", "10.231.0.12"]


def test_extra_ports_take_their_own_sources_or_the_cluster_and_extra_rules_stay_last():
    result = rules("dp3", extra_ports=[{"port": 8080}, {"port": "9000-9010", "proto": "udp", "sources": "any",
                                                        "why": "my app"},
                                       {"port": 443, "sources": ["10.1.1.1", "fd01::1"]}],
                   extra_rules=["iifname ib0 accept"])
    assert lines(result)[-3:] == [
        ("firewall_extra_ports", "tcp dport 8080", CLUSTER),
        ("my app", "udp dport 9000-9010", "any"),
        ("firewall_extra_ports", "tcp dport 443", ["10.1.1.1", "fd01::1"]),
    ]
    assert result["extra_rules"] == ["iifname ib0 accept"]


def test_ssh_from_its_sources_or_anywhere():
    assert lines(rules("dp1", ssh_sources=["10.9.0.0/16", "fd01::1"]))[0] == (
        "SSH", "tcp dport 22", ["10.9.0.0/16", "fd01::1"])


def test_the_filter_raises_ansible_s_error_with_the_same_message():
    with pytest.raises(AnsibleFilterError, match="train_check_ephemeral_ports is '32768-60999 accept; tcp dport"):
        firewall_rules(services(train_check_ephemeral_ports=INJECTION), "dp1", ADDRESSES, list(NODES))
    assert firewall_rules(services(), "dp1", ADDRESSES, list(NODES))["controller"] is None


def test_the_template_writes_the_checked_rules_and_nothing_else():
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(ROOT / "roles/firewall/templates")),
                             trim_blocks=True, undefined=jinja2.StrictUndefined)
    text = env.get_template("nftables.conf.j2").render(
        firewall_ruleset=rules("dp2", allowed_sources=["fd00::/64"], extra_rules=["iifname ib0 accept"]),
        firewall_reject=True, inventory_hostname="dp2", ansible_managed="Ansible managed")
    chain = [line.strip() for line in text.splitlines()
             if ("accept" in line or "reject" in line) and not line.lstrip().startswith("#")]
    assert chain[0] == 'ip saddr { 10.231.0.1 } tcp dport 22 accept comment "SSH from the controller"'
    assert 'ip saddr { 10.231.0.11, 10.231.0.12, 10.231.0.13 } tcp dport 6818 accept comment "slurmd"' in chain
    assert 'ip6 saddr { fd00::/64 } tcp dport 6818 accept comment "slurmd"' in chain
    assert ('ip saddr { 10.231.0.11, 10.231.0.12, 10.231.0.13 } tcp dport 32768-60999 accept comment '
            '"torch.distributed gloo/NCCL ephemeral ports (train_check)"') in chain
    assert not any("32768-60999" in line and "fd00" in line for line in chain)
    assert chain[-3:] == ["iifname ib0 accept", 'meta l4proto tcp reject with tcp reset comment "refused"',
                          'reject with icmpx type admin-prohibited comment "refused"']
