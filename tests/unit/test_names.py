"""Name resolution across nodes: gpu_facts' names.json (collect, parse,
components) and the filter name_check that verify.yml runs before drift.

The resolver and the default route are the node's; here they are the test
machine's own (localhost, a name that cannot exist) or fakes passed in.
"""

from __future__ import annotations

import json
import socket

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.lockstep.gpu.plugins.module_utils.analyse import analyse
from ansible_collections.lockstep.gpu.plugins.module_utils.bundle import NAMES, empty_raw, is_bundle_file
from ansible_collections.lockstep.gpu.plugins.module_utils.collect import build_names, default_route_address, resolve_ipv4
from ansible_collections.lockstep.gpu.plugins.module_utils.parsing import ParseError
from ansible_collections.lockstep.gpu.plugins.module_utils.system import parse_names
from ansible_collections.lockstep.gpu.plugins.plugin_utils.components import components
from ansible_collections.lockstep.gpu.plugins.plugin_utils.drift import drift
from ansible_collections.lockstep.gpu.plugins.plugin_utils.names import OK, name_check


def fake_resolver(table):
    def resolve(name, port, family, kind):
        assert (port, family, kind) == (None, socket.AF_INET, socket.SOCK_STREAM)
        if name not in table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [(family, kind, 6, "", (address, 0)) for address in table[name]]
    return resolve


def names_facts(address, resolves):
    raw = empty_raw()
    raw[NAMES] = build_names(list(resolves), address, resolver=fake_resolver(
        {n: a for n, a in resolves.items() if a is not None}))
    return analyse(raw)


def test_the_real_resolver_and_route_of_this_machine():
    assert resolve_ipv4("localhost") == ["127.0.0.1"]
    assert list(resolve_ipv4("no-such-node.invalid")) == ["error"]
    address, error = default_route_address()
    assert (address is None) != (error is None)
    if address:
        socket.inet_aton(address)


def test_no_route_is_named_not_raised():
    # The kernel refuses a UDP connect to the broadcast address (no SO_BROADCAST): the same path as no route.
    address, error = default_route_address(probe=("255.255.255.255", 9))
    assert address is None and error.startswith("no IPv4 default route (") and "set the node's address" in error
    text = build_names(["a"], None, route_address=lambda: (None, error), resolver=fake_resolver({"a": ["10.0.0.1"]}))
    assert json.loads(text) == {"address": None, "address_error": error, "resolves": {"a": ["10.0.0.1"]}}
    assert json.loads(build_names(["a"], "10.9.9.9", resolver=fake_resolver({})))["address"] == "10.9.9.9"


def test_names_json_round_trip_and_components():
    facts = names_facts("10.0.0.1", {"n2": ["10.0.0.2", "10.0.0.2", "10.0.0.9"], "n3": None})
    names = facts["network"]["names"]
    assert names["address"] == "10.0.0.1" and names["address_error"] is None
    assert names["resolves"]["n2"] == ["10.0.0.2", "10.0.0.9"]
    assert "Name or service not known" in names["resolves"]["n3"]["error"]
    comps = components(facts)
    assert comps["names.address"] == "10.0.0.1"
    assert comps["names.resolve.n2"] == "10.0.0.2, 10.0.0.9"
    assert comps["names.resolve.n3"]["error"]
    assert is_bundle_file(NAMES)


def test_without_resolve_there_is_no_names_section():
    facts = analyse(empty_raw())
    assert "names" not in facts["network"]
    assert not [c for c in components(facts) if c.startswith("names.")]


@pytest.mark.parametrize("text", [
    "[]", '{"resolves": []}', '{"resolves": {"a": "10.0.0.1"}}', '{"resolves": {"a": [1]}}',
    '{"resolves": {}, "address": 7}'])
def test_parse_names_refuses_what_the_collector_never_writes(text):
    with pytest.raises(ParseError):
        parse_names(text, NAMES)


def test_a_broken_names_json_is_an_error_of_that_file_only():
    raw = empty_raw()
    raw[NAMES] = "{"
    facts = analyse(raw)
    assert NAMES in facts["network"]["names"]["error"]
    assert components(facts)["names.address"]["error"]


def cluster(**views):
    """{host: components} for hosts n1..n3 at 10.0.0.<i>; views override what a host resolves."""
    out = {}
    for i, host in enumerate(("n1", "n2", "n3"), 1):
        comps = {"os.release": "Debian 12", "names.address": f"10.0.0.{i}"}
        for j, peer in enumerate(("n1", "n2", "n3"), 1):
            comps[f"names.resolve.{peer}"] = "127.0.1.1" if peer == host else f"10.0.0.{j}"
        comps.update(views.get(host, {}))
        out[host] = comps
    return out


def test_every_node_at_its_own_address():
    checked = name_check(cluster())
    assert checked["expected"] == {"net.names": OK}
    assert {h: c["net.names"] for h, c in checked["components"].items()} == {"n1": OK, "n2": OK, "n3": OK}
    assert not any(k.startswith("names.") for c in checked["components"].values() for k in c)


def test_a_moved_node_still_at_its_old_address_everywhere_drifts_on_every_other_node():
    # n3 came back at 10.0.0.8; n1 and n2 still resolve it to 10.0.0.3.
    facts = cluster(n3={"names.address": "10.0.0.8"})
    checked = name_check(facts)
    report = drift(checked["components"], checked["expected"])
    assert [(d["host"], d["component"], d["expected"], d["actual"]) for d in report["drifts"]] == [
        ("n1", "net.names", OK, "n3 -> 10.0.0.3 (n3 has 10.0.0.8)"),
        ("n2", "net.names", OK, "n3 -> 10.0.0.3 (n3 has 10.0.0.8)")]


def test_unresolved_and_ambiguous_names_are_named():
    facts = cluster(n1={"names.resolve.n2": {"error": "Name or service not known"},
                        "names.resolve.n3": "10.0.0.3, 10.0.0.7"})
    assert name_check(facts)["components"]["n1"]["net.names"] == (
        "n2 unresolved (Name or service not known); n3 -> 10.0.0.3, 10.0.0.7 (n3 has 10.0.0.3)")


def test_a_node_without_an_address_is_unreadable_for_names_and_not_a_truth():
    facts = cluster(n3={"names.address": {"error": "no IPv4 default route"}})
    comps = name_check(facts)["components"]
    assert comps["n3"]["net.names"] == {"error": "this node's address: no IPv4 default route"}
    assert comps["n1"]["net.names"] == OK  # n3's address unknown: not compared


def test_hosts_without_names_leave_the_expectation_undeclared():
    facts = cluster()
    facts["b1"] = {"os.release": "Debian 12"}  # a saved bundle without names.json
    facts["down"] = {"collect": {"error": "no facts"}}  # unreadable hosts do not count
    checked = name_check(facts)
    assert checked["expected"] == {} and "net.names" not in checked["components"]["b1"]
    del facts["b1"]
    assert name_check(facts)["expected"] == {"net.names": OK}
    only_bundles = {"b1": {"os.release": "Debian 12"}}
    assert name_check(only_bundles) == {"components": only_bundles, "expected": {}}


def test_name_check_refuses_what_is_not_components():
    with pytest.raises(AnsibleFilterError):
        name_check(["n1"])
    with pytest.raises(AnsibleFilterError):
        name_check({"n1": "Debian"})
