# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gpustack role's preflight rules (plugins/plugin_utils/preflight/gpustack.py) on hand-built contexts.

DEMO is what the demo inventory's nodes see (inventories/demo/group_vars/all/gpustack.yml and hosts.yml:
GPUStack on, the server on dp1 at 10.231.0.11, dp2 and dp3 its workers, the wheelhouse without an index):
roles/gpustack/defaults/main.yml and the cluster contract's defaults under them, and the role's derived
gpustack_server_host as vars/main.yml renders it there. DOCKER is the cluster the molecule docker scenario had
when GPUStack was tested there (dk1 the server at 10.231.3.11 on gpustack_port 8080, dk2 and dk3 workers,
GPUStack installed and running): its four bad-input runs are the E2E tests below, with their wording.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from ansible_collections.lockstep.gpu.plugins.plugin_utils.preflight import Context, engine
from ansible_collections.lockstep.gpu.plugins.plugin_utils.preflight import gpustack
from ansible_collections.lockstep.gpu.plugins.plugin_utils.problems import Problem, report

ROLES = Path(__file__).resolve().parents[2] / "roles"
ROLE_DEFAULTS = {
    "gpustack_version": "2.3.0",
    "gpustack_pip_index_url": "",
    "gpustack_pip_find_links": "",
    "gpustack_pip_no_index": False,
    "gpustack_pip_extra_packages": ["fastfetch-bin==2.69.0"],
    "gpustack_pip_lock": "gpustack-{{ gpustack_version }}-requirements.txt",
    "gpustack_gguf_parser_file": "",
    "gpustack_tools_download_base_url": "",
    "gpustack_data_dir": "/var/lib/gpustack",
    "gpustack_config_dir": "/etc/gpustack",
    "gpustack_server_address": "",
    "gpustack_token": "",
    "gpustack_bootstrap_password": "",
    "gpustack_ssl_certfile": "",
    "gpustack_ssl_keyfile": "",
    "gpustack_wait_timeout": 240,
}
CONTRACT_DEFAULTS = {
    "gpustack_enabled": False,
    "gpustack_server_group": "head",
    "gpustack_worker_group": "workers",
    "gpustack_port": 80,
    "gpustack_worker_port": 10150,
    "gpustack_service_port_range": "40000-40063",
    "gpustack_venv": "/opt/gpustack/venv",
    "gpustack_database_url": "",
}
# inventories/demo: group_vars/all/gpustack.yml and the wheelhouse of hosts.yml.
DEMO = ROLE_DEFAULTS | CONTRACT_DEFAULTS | {
    "gpustack_enabled": True,
    "gpustack_pip_find_links": "/srv/gpustack-wheels",
    "gpustack_pip_no_index": True,
    "gpustack_gguf_parser_file": "/home/admin/lockstep/inventories/demo/../../tests/standin/gguf-parser",
    "gpustack_server_host": "10.231.0.11",
    # As Ansible templates the default for the node.
    "gpustack_pip_lock": "gpustack-2.3.0-requirements.txt",
}
DEMO_NODES = ["dp1", "dp2", "dp3"]
DEMO_GROUPS = {"all": DEMO_NODES, "ungrouped": [], "cluster": DEMO_NODES, "head": ["dp1"],
               "workers": ["dp2", "dp3"], "gpu": DEMO_NODES}
# As molecule/docker/host_vars set it then (one file for the three nodes).
DOCKER = DEMO | {"gpustack_port": 8080, "gpustack_server_host": "10.231.3.11"}
DOCKER_NODES = ["dk1", "dk2", "dk3"]
DOCKER_GROUPS = {"all": DOCKER_NODES, "ungrouped": [], "cluster": DOCKER_NODES, "head": ["dk1"],
                 "workers": ["dk2", "dk3"]}
SERVER_URL = "10.231.3.11:8080"
SECRET = 'Secret0123456789"\nserver_url: http://10.9.9.9'


def listener(port, address="0.0.0.0", process="", proto="tcp") -> dict:
    return {"proto": proto, "address": address, "port": port, "process": process}


def sshd(process="") -> list[dict]:
    """sshd on 22, IPv4 and IPv6 (the probe names no process today: process "")."""
    return [listener(22, "0.0.0.0", process), listener(22, "::", process)]


def answer(host, listening=None, installed=True, connect=None) -> dict:
    """The probe's answer: sshd, GPUStack on its port where installed, and the server reached."""
    port = {"dk1": 8080, "dp1": 80}.get(host, 10150)
    found = sshd() + ([listener(port, "0.0.0.0", "gpustack")] if installed else [])
    target = SERVER_URL if host.startswith("dk") else "10.231.0.11:80"
    reached = {} if host in ("dk1", "dp1") else {target: ""}
    return {"listening": found if listening is None else listening, "paths": {gpustack.UNIT: installed},
            "connect": reached if connect is None else connect}


def context(base=None, nodes=None, groups=None, probes=None, on=None, raw=None, **values) -> Context:
    """The demo's (or the docker scenario's) context, values changed on the nodes of on (default
    all; None removes one, as a refused value)."""
    nodes, base = nodes or DEMO_NODES, base or DEMO
    per_host = {host: copy.deepcopy(base) for host in nodes}
    for host in on or nodes:
        for name, value in values.items():
            if value is None:
                per_host[host].pop(name)
            else:
                per_host[host][name] = value
    written = {host: copy.deepcopy(per_host[host]) | (raw or {}) for host in nodes}
    return Context(hosts=list(nodes), groups=groups or DEMO_GROUPS, values=per_host, raw=written,
                   probes=probes if probes is not None else {}, roles=("gpustack",))


def docker(probes=None, on=None, **values) -> Context:
    """The molecule docker scenario, GPUStack installed and running on every node."""
    probes = probes if probes is not None else {host: answer(host) for host in DOCKER_NODES}
    return context(DOCKER, DOCKER_NODES, DOCKER_GROUPS, probes, on, **values)


def problems(ctx) -> list[Problem]:
    return [problem for rule in gpustack.RULES for problem in rule(ctx)]


def lines(ctx) -> str:
    """The report as the engine prints it, secrets redacted."""
    return report(engine.redact(problems(ctx), engine.secrets(["gpustack"])))


def every(variable, value, allowed, nodes=None) -> list[Problem]:
    return [Problem(variable, value, allowed, host) for host in nodes or DEMO_NODES]


# --- the scenarios' own values ------------------------------------------------------------------


def test_the_demo_passes_fresh_and_installed():
    assert problems(context()) == []
    assert problems(context(probes={host: answer(host, installed=False) for host in DEMO_NODES})) == []
    assert problems(context(probes={host: answer(host) for host in DEMO_NODES})) == []


def test_the_docker_scenario_passes():
    assert problems(docker()) == []


def test_the_values_are_the_roles_defaults():
    defaults = yaml.safe_load((ROLES / "gpustack" / "defaults" / "main.yml").read_text(encoding="utf-8"))
    contract = yaml.safe_load((ROLES / "cluster" / "defaults" / "main.yml").read_text(encoding="utf-8"))
    assert defaults == ROLE_DEFAULTS
    # The groups are the cluster's own, templated: head and workers.
    templated = {"gpustack_server_group": "{{ cluster_head_group }}",
                 "gpustack_worker_group": "{{ cluster_workers_group }}"}
    assert {name: contract[name] for name in CONTRACT_DEFAULTS} == CONTRACT_DEFAULTS | templated
    assert (contract["cluster_head_group"], contract["cluster_workers_group"]) == ("head", "workers")
    role_vars = yaml.safe_load((ROLES / "gpustack" / "vars" / "main.yml").read_text(encoding="utf-8"))
    assert set(gpustack.VARIABLES) <= set(role_vars)


def test_the_rules_read_variables_of_the_specs():
    options = set(engine.spec_options("gpustack")) | set(engine.spec_options("cluster"))
    assert set(gpustack.PORTS + gpustack.DIRECTORIES + gpustack.TLS) | {"gpustack_pip_lock"} <= options
    assert {"gpustack_token", "gpustack_database_url"} <= engine.secrets(["gpustack"])


def test_rules_are_named_after_their_checks():
    assert [rule.__name__ for rule in gpustack.RULES] == [
        "_server_group", "_version", "_lock", "_directories", "_token", "_database_url", "_tls", "_port_taken",
        "_server_reachable"]


def test_nothing_is_checked_or_probed_while_gpustack_is_off():
    ctx = context(gpustack_enabled=False, gpustack_worker_port=0, gpustack_token="short", gpustack_version="x",
                  gpustack_server_group="nosuch", probes={host: answer(host, sshd("sshd")) for host in DEMO_NODES})
    assert problems(ctx) == []
    assert [gpustack.probe(ctx, host) for host in DEMO_NODES] == [{}, {}, {}]


def test_an_invalid_switch_is_the_specs_problem_only():
    assert problems(context(gpustack_enabled=None, gpustack_version="x")) == []


# --- the probe -------------------------------------------------------------------------------------


def test_the_probe_asks_for_the_unit_and_a_worker_s_connection_to_the_server():
    ctx = docker()
    assert gpustack.probe(ctx, "dk1") == {"paths": [gpustack.UNIT]}
    assert gpustack.probe(ctx, "dk2") == {"paths": [gpustack.UNIT], "connect": [SERVER_URL]}


def test_the_probe_asks_nothing_of_a_node_that_runs_no_gpustack():
    groups = DEMO_GROUPS | {"cluster": DEMO_NODES + ["login1"], "all": DEMO_NODES + ["login1"]}
    ctx = context(nodes=DEMO_NODES + ["login1"], groups=groups)
    assert gpustack.probe(ctx, "login1") == {}


def test_the_probe_brackets_an_ipv6_server_address():
    ctx = docker(gpustack_server_host="fd00::11")
    assert gpustack.probe(ctx, "dk2")["connect"] == ["[fd00::11]:8080"]


def test_the_probe_asks_no_connection_without_a_valid_port_or_address():
    assert "connect" not in gpustack.probe(docker(gpustack_port=0), "dk2")
    assert "connect" not in gpustack.probe(docker(gpustack_port=None), "dk2")
    assert "connect" not in gpustack.probe(docker(gpustack_server_host=None), "dk2")


# --- Refuse a server group without a node -------------------------------------------------------------


def test_a_server_group_with_nodes_passes():
    assert problems(context(gpustack_server_group="cluster")) == []


@pytest.mark.parametrize("groups", [DEMO_GROUPS, DEMO_GROUPS | {"gpustack": []}])
def test_a_server_group_without_a_node_is_named_on_every_node(groups):
    assert problems(context(groups=groups, gpustack_server_group="gpustack")) == every(
        "gpustack_server_group", "gpustack", gpustack.SERVER_GROUP)


# --- Refuse a version that is not a release number -----------------------------------------------------


@pytest.mark.parametrize("version", ["2.3.0", "2.3.0rc1", "0.7.1post2"])
def test_a_release_passes(version, tmp_path):
    # With a lock of that release (the role carries 2.3.0's only).
    lock = tmp_path / "lock.txt"
    lock.write_text(f"gpustack=={version} --hash=sha256:{'0' * 64}\nfastfetch-bin==2.69.0 --hash=sha256:{'1' * 64}\n")
    assert problems(context(gpustack_version=version, gpustack_pip_lock=str(lock))) == []


@pytest.mark.parametrize("version", ["2.3", "latest", "2.3.0\n", "2.3.0 --pre", ">=2.3.0"])
def test_a_version_that_is_no_release_is_named(version):
    assert problems(context(gpustack_version=version)) == every("gpustack_version", version, gpustack.VERSION)


def test_a_yaml_number_version_is_named_as_written():
    found = problems(context(gpustack_version="2.3", raw={"gpustack_version": 2.3}))
    assert found == every("gpustack_version", 2.3, gpustack.VERSION)


# --- Ports: whether each is a port is the contract's rule (cluster.py, tests/unit/test_preflight_cluster.py) ---


@pytest.mark.parametrize("name", ["gpustack_port", "gpustack_worker_port"])
@pytest.mark.parametrize("port", [0, 70000])
def test_a_port_out_of_range_is_left_to_the_contract(name, port):
    assert problems(context(probes={}, **{name: port})) == []


@pytest.mark.parametrize("port", [1, 8080, 65535])
def test_a_port_in_range_passes(port):
    assert problems(context(gpustack_port=port, gpustack_worker_port=port)) == []


# --- Refuse a directory that is not an absolute path ---------------------------------------------------


@pytest.mark.parametrize("name", gpustack.DIRECTORIES)
@pytest.mark.parametrize("path", ["var/lib/gpustack", "/opt/my gpustack", '/opt/"gpustack"', "/opt/gpustack\n"])
def test_a_directory_that_is_no_absolute_path_is_named(name, path):
    assert problems(context(**{name: path})) == every(name, path, gpustack.DIRECTORY)


def test_a_home_directory_is_named_as_written_not_as_the_spec_expanded_it():
    found = problems(context(gpustack_data_dir="/root/gpustack", raw={"gpustack_data_dir": "~/gpustack"}))
    assert found == every("gpustack_data_dir", "~/gpustack", gpustack.DIRECTORY)


def test_absolute_directories_pass():
    assert problems(context(gpustack_venv="/srv/gpustack/venv", gpustack_data_dir="/data/gpustack")) == []


# --- Refuse a registration token that cannot be written into a config file ------------------------------


@pytest.mark.parametrize("token", ["", "0123456789abcdef", "A.b_c~d+e/f=g:h@i%j-k0123"])
def test_an_empty_or_plain_token_passes(token):
    assert problems(context(gpustack_token=token)) == []


def test_e2e_a_token_with_a_quote_and_a_newline_is_named_and_never_shown():
    ctx = docker(on=["dk2"], gpustack_token=SECRET)
    assert problems(ctx) == [Problem("gpustack_token", SECRET, gpustack.TOKEN, "dk2")]
    text = lines(ctx)
    assert "dk2: gpustack_token is '(not shown)': must be at least 16 characters" in text
    assert "no white space, newline, quote or backslash" in text
    assert "Secret0123456789" not in text and "10.9.9.9" not in text


@pytest.mark.parametrize("token", ["short", "0123456789abcde", "0123456789abcdef\n", "0123456789 abcdef",
                                   "0123456789abcdef\\"])
def test_a_short_or_unquotable_token_is_named(token):
    assert problems(context(gpustack_token=token)) == every("gpustack_token", token, gpustack.TOKEN)


# --- Refuse a database URL GPUStack cannot use ----------------------------------------------------------


@pytest.mark.parametrize("url", ["", "postgresql://gpustack:pw@db1:5432/gpustack", "mysql://gpustack:pw@db1/gpustack"])
def test_an_empty_or_postgresql_or_mysql_url_passes(url):
    assert problems(context(gpustack_database_url=url)) == []


@pytest.mark.parametrize("url", ["sqlite:///var/lib/gpustack/db.sqlite", "postgres://u:pw@db1/gs", " mysql://db1"])
def test_another_database_url_is_named_and_never_shown(url):
    ctx = context(gpustack_database_url=url)
    assert problems(ctx) == every("gpustack_database_url", url, gpustack.DATABASE)
    assert url.strip() not in lines(ctx)


# --- Refuse TLS files ------------------------------------------------------------------------------------


def test_tls_files_are_named_each():
    ctx = context(gpustack_ssl_certfile="/etc/ssl/gs.pem", gpustack_ssl_keyfile="/etc/ssl/gs.key")
    assert problems(ctx) == [Problem(name, value, gpustack.TLS_ALLOWED, host) for host in DEMO_NODES
                             for name, value in (("gpustack_ssl_certfile", "/etc/ssl/gs.pem"),
                                                 ("gpustack_ssl_keyfile", "/etc/ssl/gs.key"))]


def test_a_key_file_alone_is_named():
    assert problems(context(gpustack_ssl_keyfile="/etc/ssl/gs.key")) == every(
        "gpustack_ssl_keyfile", "/etc/ssl/gs.key", gpustack.TLS_ALLOWED)


# --- Refuse a port another program holds ---------------------------------------------------------------


def test_e2e_a_worker_port_sshd_holds_is_named_on_that_worker():
    probes = {host: answer(host, sshd("sshd") + [listener(10150, "0.0.0.0", "gpustack")]) for host in DOCKER_NODES}
    ctx = docker(probes, on=["dk3"], gpustack_worker_port=22)
    allowed = gpustack.LISTENER.format(who="sshd on 0.0.0.0 and ::")
    assert problems(ctx) == [Problem("gpustack_worker_port", 22, allowed, "dk3")]
    assert "dk3: gpustack_worker_port is '22': another program listens there (sshd on 0.0.0.0 and ::)" in lines(ctx)


def test_a_port_an_unnamed_program_holds_is_named_where_gpustack_is_not_installed():
    probes = {host: answer(host, installed=False) for host in DEMO_NODES}
    ctx = context(probes=probes, gpustack_worker_port=22)
    allowed = gpustack.LISTENER.format(who="a program on 0.0.0.0 and ::")
    assert problems(ctx) == every("gpustack_worker_port", 22, allowed, ["dp2", "dp3"])


def test_an_unnamed_listener_where_gpustack_is_installed_may_be_gpustack_and_is_not_judged():
    # The probe names no process today: GPUStack's own listener must not fail a second run.
    probes = {host: answer(host, [listener(8080), listener(10150)]) for host in DOCKER_NODES}
    assert problems(docker(probes)) == []


def test_the_server_s_port_is_gpustack_port():
    probes = {host: answer(host) for host in DOCKER_NODES}
    probes["dk1"]["listening"] = sshd("sshd") + [listener(8080, "127.0.0.1", "nginx")]
    allowed = gpustack.LISTENER.format(who="nginx on 127.0.0.1")
    assert problems(docker(probes)) == [Problem("gpustack_port", 8080, allowed, "dk1")]


def test_gpustack_itself_a_udp_socket_or_another_port_is_no_problem():
    probes = {host: answer(host, sshd("sshd") + [listener(8080, process="gpustack"), listener(10150, proto="udp"),
                                                 listener(10150, process="gpustack"), listener(10151, process="x")])
              for host in DOCKER_NODES}
    assert problems(docker(probes)) == []


def test_a_node_outside_gpustack_s_groups_is_not_looked_at():
    groups = DEMO_GROUPS | {"cluster": DEMO_NODES + ["login1"], "all": DEMO_NODES + ["login1"]}
    probes = {"login1": answer("login1", [listener(10150, process="nginx")], installed=False)}
    assert problems(context(nodes=DEMO_NODES + ["login1"], groups=groups, probes=probes)) == []


# --- Refuse a server URL the worker cannot reach --------------------------------------------------------


def test_e2e_a_server_address_the_workers_cannot_reach_is_named_on_each():
    target = "10.231.3.99:8080"
    probes = {host: answer(host, connect={target: "timed out"}) for host in DOCKER_NODES}
    ctx = docker(probes, on=["dk2", "dk3"], gpustack_server_address="10.231.3.99",
                 gpustack_server_host="10.231.3.99")
    allowed = gpustack.UNREACHABLE.format(url="http://10.231.3.99:8080", error="timed out")
    assert problems(ctx) == [Problem("gpustack_server_address", "10.231.3.99", allowed, host)
                             for host in ("dk2", "dk3")]
    text = lines(ctx)
    assert "dk2, dk3: gpustack_server_address is '10.231.3.99': cannot reach the GPUStack server at " \
           "http://10.231.3.99:8080 (timed out)" in text


@pytest.mark.parametrize("reply", ["", "[Errno 111] Connection refused"])
def test_a_server_that_answers_or_refuses_is_reached(reply):
    # Before the first install nothing listens on the server's port: refused still proves the address.
    probes = {host: answer(host, connect={SERVER_URL: reply}) for host in DOCKER_NODES}
    assert problems(docker(probes)) == []


def test_the_cluster_address_the_workers_cannot_reach_names_the_empty_server_address():
    probes = {host: answer(host, connect={SERVER_URL: "[Errno 113] No route to host"}) for host in DOCKER_NODES}
    allowed = gpustack.UNREACHABLE.format(url="http://10.231.3.11:8080", error="[Errno 113] No route to host")
    assert problems(docker(probes)) == [Problem("gpustack_server_address", "", allowed, host)
                                        for host in ("dk2", "dk3")]


def test_a_connection_not_asked_or_not_answered_is_not_judged():
    probes = {host: answer(host, connect={"10.9.9.9:8080": "timed out"}) for host in DOCKER_NODES}
    assert problems(docker(probes)) == []
    assert problems(docker({})) == []


# --- odd input never raises --------------------------------------------------------------------------


@pytest.mark.parametrize("odd", [
    {"gpustack_server_group": 5}, {"gpustack_worker_group": ["workers"]}, {"gpustack_server_host": 7},
    {"gpustack_version": 2.3}, {"gpustack_token": 1234567890123456789}, {"gpustack_database_url": None},
    {"gpustack_venv": None}, {"gpustack_port": "80"}, {"gpustack_worker_port": None}])
def test_odd_values_give_problems_or_nothing(odd):
    for value in problems(context(**{k: v for k, v in odd.items() if v is not None},
                                  **{k: None for k, v in odd.items() if v is None})):
        assert isinstance(value, Problem)


@pytest.mark.parametrize("reply", [None, [], "x", {"listening": "x", "paths": [], "connect": []},
                                   {"listening": [None, 5, {"port": "22"}], "paths": {gpustack.UNIT: False},
                                    "connect": {SERVER_URL: 5}}])
def test_odd_probe_answers_give_nothing(reply):
    assert problems(docker({host: reply for host in DOCKER_NODES})) == []


# Issue 30, part 4: the closure's lock, the role's own or a file the site made.
def test_a_lock_for_another_version_is_named_with_what_it_pins():
    found = problems(context(gpustack_version="2.4.0"))
    assert [(p.node, p.variable, p.value) for p in found] == [
        (n, "gpustack_pip_lock", "gpustack-2.3.0-requirements.txt") for n in DEMO_NODES]
    assert "it pins gpustack==2.3.0, not 2.4.0" in found[0].allowed
    assert "scripts/gpustack-lock" in found[0].allowed


def test_a_site_lock_without_an_extra_package_or_missing_is_named(tmp_path):
    lock = tmp_path / "site.txt"
    lock.write_text("gpustack==2.3.0 --hash=sha256:" + "0" * 64 + "\n")
    found = problems(context(gpustack_pip_lock=str(lock)))
    assert {p.variable for p in found} == {"gpustack_pip_lock"} and len(found) == 3
    assert "it has no fastfetch-bin" in found[0].allowed
    missing = problems(context(gpustack_pip_lock=str(tmp_path / "none.txt")))
    assert len(missing) == 3 and "cannot read" in missing[0].allowed
    assert problems(context(gpustack_pip_lock=str(lock), gpustack_pip_extra_packages=[])) == []
