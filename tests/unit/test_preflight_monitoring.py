# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The monitoring role's preflight rules (plugins/plugin_utils/preflight/monitoring.py) on hand-built contexts.

GOOD is what the demo inventory's nodes see (inventories/demo/group_vars/all/monitoring.yml sets only
monitoring_enabled: true): roles/monitoring/defaults/main.yml and the cluster contract's defaults
(roles/cluster/defaults/main.yml), dp1 head, dp2 and dp3 workers, all three in gpu, so every node runs the
DCGM exporter. Molecule has no bad-input case of role monitoring; the cases below are
tests/tooling/test_monitoring.py's (the Jinja preflight's) and one or more per rule.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from ansible_collections.lockstep.gpu.plugins.plugin_utils.preflight import Context
from ansible_collections.lockstep.gpu.plugins.plugin_utils.preflight import monitoring
from ansible_collections.lockstep.gpu.plugins.plugin_utils.problems import Problem

ROLES = Path(__file__).resolve().parents[2] / "roles"
NODES = ["dp1", "dp2", "dp3"]
GROUPS = {"all": NODES, "ungrouped": [], "cluster": NODES, "head": ["dp1"], "workers": ["dp2", "dp3"],
          "gpu": NODES}
COLLECTORS = [
    {"field": "DCGM_FI_DEV_GPU_UTIL", "type": "gauge", "help": "GPU utilization (in %)."},
    {"field": "DCGM_FI_DEV_FB_USED", "type": "gauge", "help": "Framebuffer memory used (in MiB)."},
    {"field": "DCGM_FI_DEV_FB_FREE", "type": "gauge", "help": "Framebuffer memory free (in MiB)."},
    {"field": "DCGM_FI_DEV_GPU_TEMP", "type": "gauge", "help": "GPU temperature (in C)."},
    {"field": "DCGM_FI_DEV_POWER_USAGE", "type": "gauge", "help": "Power draw (in W)."},
    {"field": "DCGM_FI_DEV_SM_CLOCK", "type": "gauge", "help": "SM clock frequency (in MHz)."},
    {"field": "DCGM_FI_DEV_MEM_CLOCK", "type": "gauge", "help": "Memory clock frequency (in MHz)."},
]
# The cluster contract's values the rules read.
CONTRACT = {
    "monitoring_enabled": True,
    "monitoring_server_group": "head",
    "monitoring_node_group": "cluster",
    "monitoring_gpu_group": "gpu",
    "monitoring_dcgm_exporter_enabled": True,
    "monitoring_node_exporter_port": 9100,
    "monitoring_dcgm_exporter_port": 9400,
    "monitoring_prometheus_port": 9090,
}
GOOD = CONTRACT | {
    "monitoring_node_exporter_listen_address": "",
    "monitoring_textfile_dir": "/var/lib/prometheus/node-exporter",
    "monitoring_prometheus_listen_address": "0.0.0.0",
    "monitoring_prometheus_retention": "15d",
    "monitoring_scrape_interval": "15s",
    "monitoring_evaluation_interval": "15s",
    "monitoring_lockstep_interval_minutes": 5,
    "monitoring_lockstep_stale_minutes": 15,
    "monitoring_lockstep_drift_for": "10m",
    "monitoring_lockstep_drift_ignore": [],
    "monitoring_lockstep_packages": [],
    "monitoring_lockstep_conda_envs_dirs": ["/opt/conda/envs"],
    "monitoring_lockstep_interfaces": [],
    "monitoring_lockstep_lib": "/usr/local/lib/lockstep-exporter",
    "monitoring_dcgm_exporter_version": "4.8.2-1",
    "monitoring_dcgm_exporter_listen_address": "",
    "monitoring_dcgm_exporter_collectors": COLLECTORS,
}


def context(groups=None, raw=None, **values) -> Context:
    """The demo's context, with values changed on dp1 (None removes one, as a refused value)."""
    per_host = {host: copy.deepcopy(GOOD) for host in NODES}
    for name, value in values.items():
        if value is None:
            per_host["dp1"].pop(name)
        else:
            per_host["dp1"][name] = value
    written = {host: copy.deepcopy(per_host[host]) for host in NODES}
    written["dp1"].update(raw or {})
    return Context(hosts=list(NODES), groups=groups or GROUPS, values=per_host, raw=written,
                   roles=("monitoring",))


def everywhere(**values) -> Context:
    """The demo's context with values changed on every node."""
    ctx = context()
    for host in NODES:
        ctx.values[host].update(values)
        ctx.raw[host].update(values)
    return ctx


def problems(ctx) -> list[Problem]:
    return [problem for rule in monitoring.RULES for problem in rule(ctx)]


def only(ctx) -> Problem:
    found = problems(ctx)
    assert len(found) == 1, [problem.line() for problem in found]
    return found[0]


def test_the_demo_passes():
    assert problems(context()) == []


def test_good_is_the_roles_defaults():
    defaults = yaml.safe_load((ROLES / "monitoring" / "defaults" / "main.yml").read_text(encoding="utf-8"))
    contract = yaml.safe_load((ROLES / "cluster" / "defaults" / "main.yml").read_text(encoding="utf-8"))
    # Templated there: conda_envs_dir's default, and the groups from the cluster's own.
    defaults["monitoring_lockstep_conda_envs_dirs"] = ["/opt/conda/envs"]
    assert {name: GOOD[name] for name in defaults} == defaults
    assert contract["cluster_head_group"] == GOOD["monitoring_server_group"]
    assert {name: contract[name] for name in CONTRACT if "group" not in name} == {
        name: value for name, value in CONTRACT.items() if "group" not in name}


def test_the_duration_pattern_is_the_roles():
    role_vars = yaml.safe_load((ROLES / "monitoring" / "vars" / "main.yml").read_text(encoding="utf-8"))
    assert "^" + monitoring.DURATION.pattern + "$" == role_vars["monitoring_duration_pattern"]
    assert set(monitoring.VARIABLES) <= set(role_vars)


def test_rules_are_named_after_their_checks():
    assert [rule.__name__ for rule in monitoring.RULES] == [
        "_server_group", "_listen_addresses", "_durations", "_minutes", "_paths", "_dcgm_version",
        "_dcgm_collectors"]


# --- monitoring_enabled -------------------------------------------------------------------------


BAD = {"monitoring_server_group": "monitors", "monitoring_prometheus_port": 70000,
       "monitoring_prometheus_listen_address": "0.0.0.0:9090", "monitoring_scrape_interval": "15 seconds",
       "monitoring_lockstep_interval_minutes": 20, "monitoring_textfile_dir": "relative",
       "monitoring_dcgm_exporter_version": "latest", "monitoring_dcgm_exporter_collectors": []}


def test_nothing_is_checked_where_monitoring_is_left_out():
    # test_monitoring.py: test_the_preflight_checks_nothing_where_monitoring_is_left_out.
    assert problems(context(monitoring_enabled=False, **BAD)) == []


def test_nothing_is_checked_where_monitoring_enabled_was_refused():
    assert problems(context(monitoring_enabled=None, **BAD)) == []
    # Not converted (the spec's bool would have made it True): judged as not enabled.
    assert problems(context(monitoring_enabled="yes", **BAD)) == []


def test_each_bad_value_is_named_where_monitoring_is_on():
    found = problems(context(**BAD))
    assert {(p.node, p.variable) for p in found} == {
        ("dp1", "monitoring_server_group"),
        ("dp1", "monitoring_prometheus_listen_address"), ("dp1", "monitoring_scrape_interval"),
        ("dp1", "monitoring_lockstep_stale_minutes"), ("dp1", "monitoring_textfile_dir"),
        ("dp1", "monitoring_dcgm_exporter_version"), ("dp1", "monitoring_dcgm_exporter_collectors")}


# --- monitoring_server_group --------------------------------------------------------------------


def test_a_server_group_without_a_node_is_refused_on_every_node():
    # test_monitoring.py: monitoring_server_group monitors.
    found = problems(everywhere(monitoring_server_group="monitors"))
    assert found == [Problem("monitoring_server_group", "monitors", monitoring.SERVER_GROUP, host) for host in NODES]
    assert found[0].line() == (
        "dp1: monitoring_server_group is 'monitors': a group without a node in the inventory, and Prometheus "
        "runs on its nodes: name a group with at least one node (default head)")


def test_an_empty_server_group_is_refused():
    problem = only(context(groups=GROUPS | {"monitors": []}, monitoring_server_group="monitors"))
    assert (problem.node, problem.variable, problem.value) == ("dp1", "monitoring_server_group", "monitors")


def test_any_group_with_a_node_serves():
    assert problems(everywhere(monitoring_server_group="workers")) == []


# --- ports --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "value"), [("monitoring_prometheus_port", 70000),
                                             ("monitoring_node_exporter_port", 0),
                                             ("monitoring_dcgm_exporter_port", 99999)])
def test_the_ports_are_left_to_the_contract(name, value):
    # test_monitoring.py's port cases: the contract's rules (cluster.py) check every service's port.
    assert problems(context(**{name: value})) == []


# --- listen addresses ---------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "value"), [("monitoring_prometheus_listen_address", "0.0.0.0:9090"),
                                             ("monitoring_node_exporter_listen_address", "::"),
                                             ("monitoring_dcgm_exporter_listen_address", "localhost"),
                                             ("monitoring_prometheus_listen_address", "[10.0.0.5]")])
def test_a_listen_address_that_is_not_an_address_is_refused(name, value):
    problem = only(context(**{name: value}))
    assert problem.line() == (
        f"dp1: {name} is '{value}': it must be an IPv4 address (0.0.0.0 for every one), an IPv6 address in "
        "brackets ([::] for every one), or '' for every address; no port (the port is its own variable)")


def test_listen_addresses_pass():
    assert problems(context(monitoring_prometheus_listen_address="[::]",
                            monitoring_node_exporter_listen_address="10.0.0.5",
                            monitoring_dcgm_exporter_listen_address="[fd00::5]")) == []


# --- durations ----------------------------------------------------------------------------------


def test_a_scrape_interval_in_words_is_refused():
    # test_monitoring.py: monitoring_scrape_interval '15 seconds'.
    problem = only(context(monitoring_scrape_interval="15 seconds"))
    assert problem.line() == (
        "dp1: monitoring_scrape_interval is '15 seconds': it must be a Prometheus duration, a number and a unit "
        "(ms, s, m, h, d, w, y), e.g. 15s, 1m, 15d or 1h30m")


@pytest.mark.parametrize(("name", "value"), [("monitoring_prometheus_retention", "forever"),
                                             ("monitoring_evaluation_interval", "15"),
                                             ("monitoring_lockstep_drift_for", ""),
                                             ("monitoring_lockstep_drift_for", "10m\n"),
                                             ("monitoring_scrape_interval", "1.5m")])
def test_a_value_that_is_not_a_duration_is_refused(name, value):
    # test_monitoring.py: monitoring_prometheus_retention forever.
    assert only(context(**{name: value})) == Problem(name, value, monitoring.DURATION_ALLOWED, "dp1")


def test_durations_pass():
    assert problems(context(monitoring_prometheus_retention="4w", monitoring_scrape_interval="500ms",
                            monitoring_evaluation_interval="1m", monitoring_lockstep_drift_for="1h30m")) == []
    assert problems(context(monitoring_lockstep_drift_for="0s")) == []


# --- the exporter's minutes ---------------------------------------------------------------------


def test_an_interval_over_the_staleness_is_refused():
    # test_monitoring.py: monitoring_lockstep_interval_minutes 20 (stale 15).
    problem = only(context(monitoring_lockstep_interval_minutes=20))
    assert problem.line() == (
        "dp1: monitoring_lockstep_stale_minutes is '15': it must be a whole number of minutes, more than "
        "monitoring_lockstep_interval_minutes (20): a node is stale after it missed a collection")


def test_a_staleness_of_one_interval_is_refused():
    problem = only(context(monitoring_lockstep_stale_minutes=5))
    assert (problem.variable, problem.value) == ("monitoring_lockstep_stale_minutes", 5)


@pytest.mark.parametrize("value", [0, -5, True])
def test_an_interval_under_one_minute_is_refused(value):
    problem = only(context(monitoring_lockstep_interval_minutes=value))
    assert problem == Problem("monitoring_lockstep_interval_minutes", value, monitoring.INTERVAL, "dp1")


@pytest.mark.parametrize("value", [-1, True])
def test_a_staleness_that_is_not_whole_minutes_is_refused(value):
    problem = only(context(monitoring_lockstep_stale_minutes=value))
    assert problem == Problem("monitoring_lockstep_stale_minutes", value,
                              monitoring.STALE.format(interval=5), "dp1")


def test_an_interval_the_spec_refused_leaves_the_staleness_judged_alone():
    assert problems(context(monitoring_lockstep_interval_minutes=None)) == []
    problem = only(context(monitoring_lockstep_interval_minutes=None, monitoring_lockstep_stale_minutes=0))
    assert "(unknown)" in problem.allowed


def test_one_minute_and_two_pass():
    assert problems(context(monitoring_lockstep_interval_minutes=1, monitoring_lockstep_stale_minutes=2)) == []


# --- paths --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "value"), [("monitoring_textfile_dir", "var/lib/node-exporter"),
                                             ("monitoring_lockstep_lib", "/usr/local/lib/lockstep exporter"),
                                             ("monitoring_lockstep_lib", '/usr/"lib"'),
                                             ("monitoring_textfile_dir", "/var/lib/x\n"),
                                             ("monitoring_textfile_dir", "")])
def test_a_path_that_is_not_absolute_or_has_spaces_is_refused(name, value):
    problem = only(context(**{name: value}))
    assert problem == Problem(name, value, monitoring.PATH, "dp1")
    assert problem.allowed == "it must be an absolute path without spaces or quotes"


def test_a_path_is_judged_as_written_not_as_the_spec_expanded_it():
    # The path type expands ~ on the controller: /root/x there, '~/x' on the node.
    problem = only(context(raw={"monitoring_textfile_dir": "~/x"}, monitoring_textfile_dir="/root/x"))
    assert (problem.variable, problem.value) == ("monitoring_textfile_dir", "~/x")


def test_absolute_paths_pass():
    assert problems(context(monitoring_textfile_dir="/srv/textfile", monitoring_lockstep_lib="/opt/lockstep")) == []


# --- the DCGM exporter's version ----------------------------------------------------------------


@pytest.mark.parametrize("version", ["latest", "4.8.2", "", "4.8.2-1 4.8.3-1"])
def test_a_dcgm_version_that_is_not_a_package_version_is_refused(version):
    # test_monitoring.py: monitoring_dcgm_exporter_version latest.
    problem = only(context(monitoring_dcgm_exporter_version=version))
    assert problem == Problem("monitoring_dcgm_exporter_version", version, monitoring.VERSION, "dp1")


def test_the_dcgm_version_line():
    assert only(context(monitoring_dcgm_exporter_version="latest")).line() == (
        "dp1: monitoring_dcgm_exporter_version is 'latest': it must be a Debian package version of "
        "datacenter-gpu-manager-exporter with its revision, e.g. 4.8.2-1")


def test_an_epoch_version_passes():
    assert problems(context(monitoring_dcgm_exporter_version="1:4.8.2-1~bookworm")) == []


def test_the_dcgm_values_are_not_read_off_the_dcgm_nodes():
    bad = {"monitoring_dcgm_exporter_version": "latest", "monitoring_dcgm_exporter_collectors": []}
    assert problems(context(groups=GROUPS | {"gpu": ["dp2", "dp3"]}, **bad)) == []
    assert problems(context(monitoring_gpu_group="nogpu", **bad)) == []
    assert problems(context(monitoring_node_group="head", groups=GROUPS | {"head": ["dp2"]}, **bad)) == []
    assert problems(context(monitoring_dcgm_exporter_enabled=False, **bad)) == []
    assert problems(context(monitoring_dcgm_exporter_enabled=None, **bad)) == []


def test_is_dcgm_node_is_the_contract_s():
    ctx = context(groups=GROUPS | {"gpu": ["dp3"], "cluster": ["dp2", "dp3"]})
    assert [host for host in NODES if monitoring.is_dcgm_node(ctx, host)] == ["dp3"]


# --- the DCGM exporter's collectors -------------------------------------------------------------


def test_a_collector_that_is_not_a_dcgm_field_is_refused():
    # test_monitoring.py: field GPU_UTIL.
    problem = only(context(monitoring_dcgm_exporter_collectors=[{"field": "GPU_UTIL", "type": "gauge", "help": "x"}]))
    assert problem.line() == (
        "dp1: monitoring_dcgm_exporter_collectors[0].field is 'GPU_UTIL': not a DCGM field: DCGM_FI_ and "
        "capitals, digits, underscores, e.g. DCGM_FI_DEV_GPU_UTIL (each collector needs one)")


def test_a_collector_type_that_is_not_a_prometheus_one_is_refused():
    # test_monitoring.py: type histogram.
    collectors = COLLECTORS + [{"field": "DCGM_FI_DEV_GPU_UTIL", "type": "histogram", "help": "x"}]
    problem = only(context(monitoring_dcgm_exporter_collectors=collectors))
    assert problem.line() == ("dp1: monitoring_dcgm_exporter_collectors[7].type is 'histogram': "
                              "not a collector type: the type is one of gauge, counter, label")


@pytest.mark.parametrize("text", ["utilization, in %", "two\nlines", ""])
def test_a_help_that_is_not_one_csv_cell_is_refused(text):
    collectors = [{"field": "DCGM_FI_DEV_GPU_UTIL", "type": "gauge", "help": text}]
    problem = only(context(monitoring_dcgm_exporter_collectors=collectors))
    assert problem == Problem("monitoring_dcgm_exporter_collectors[0].help", text, monitoring.HELP, "dp1")


def test_a_collector_without_its_keys_names_each():
    found = problems(context(monitoring_dcgm_exporter_collectors=[{"name": "DCGM_FI_DEV_GPU_UTIL"}]))
    assert [(p.variable, p.value) for p in found] == [("monitoring_dcgm_exporter_collectors[0].field", ""),
                                                      ("monitoring_dcgm_exporter_collectors[0].type", ""),
                                                      ("monitoring_dcgm_exporter_collectors[0].help", "")]


def test_no_collector_is_refused():
    problem = only(context(monitoring_dcgm_exporter_collectors=[]))
    assert problem.line() == ("dp1: monitoring_dcgm_exporter_collectors is '[]': it must be a non-empty list of "
                              "{field, type, help}, field a DCGM field (e.g. DCGM_FI_DEV_GPU_UTIL)")


def test_counters_and_labels_pass():
    collectors = [{"field": "DCGM_FI_DEV_XID_ERRORS", "type": "counter", "help": "XID errors."},
                  {"field": "DCGM_FI_DRIVER_VERSION", "type": "label", "help": "Driver version."}]
    assert problems(context(monitoring_dcgm_exporter_collectors=collectors)) == []


# --- odd input ----------------------------------------------------------------------------------


def test_refused_values_are_skipped():
    assert problems(context(**dict.fromkeys(GOOD))) == []


def test_odd_values_never_raise():
    ctx = context(monitoring_server_group=["head"], monitoring_prometheus_port="x",
                  monitoring_prometheus_listen_address=5, monitoring_scrape_interval=15,
                  monitoring_lockstep_interval_minutes="5", monitoring_lockstep_stale_minutes=None,
                  monitoring_textfile_dir=["/x"], monitoring_dcgm_exporter_version=4.8,
                  monitoring_dcgm_exporter_collectors=["x", {"field": 1, "type": None, "help": ["a", "b"]}],
                  raw={"monitoring_textfile_dir": ["/x"]})
    found = problems(ctx)
    assert [p.variable for p in found] == [
        "monitoring_server_group", "monitoring_prometheus_listen_address",
        "monitoring_scrape_interval", "monitoring_lockstep_interval_minutes", "monitoring_textfile_dir",
        "monitoring_dcgm_exporter_version", "monitoring_dcgm_exporter_collectors[0]",
        "monitoring_dcgm_exporter_collectors[1].field", "monitoring_dcgm_exporter_collectors[1].type",
        "monitoring_dcgm_exporter_collectors[1].help"]
    assert problems(context(monitoring_dcgm_exporter_collectors={"field": "x"}))[0].variable == (
        "monitoring_dcgm_exporter_collectors")


def test_a_context_without_raw_values_or_groups_never_raises():
    ctx = Context(hosts=["dp1"], groups={}, values={"dp1": dict(GOOD)})
    assert [p.variable for p in problems(ctx)] == ["monitoring_server_group"]
