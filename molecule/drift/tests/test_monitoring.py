"""Role monitoring on the live three-node cluster (playbooks/monitoring.yml).

Prometheus runs on dr1 and is asked through its HTTP API, from the
controller, as an admin's dashboard would: every node's exporter is a target
and up, every node reports lockstep_component_info, and when one node's NCCL
package changes and its exporter runs (systemctl start, not waiting for the
timer), LockstepDrift becomes pending or firing for nccl.package. The nodes
are GPU nodes: each runs NVIDIA's DCGM exporter (the TEST STAND-IN package
of tests/standin/dcgm.yml, one pretended GPU per node), which Prometheus
scrapes (job dcgm). The scenario's inventory sets 5 s scrape and evaluation
intervals; waits are bounded.
"""

from __future__ import annotations

import hashlib
import json
import os
import urllib.parse
import urllib.request

import pytest
import yaml
from conftest import PROJECT, ansible_playbook, node, wait_until

NODES = ("dr1", "dr2", "dr3")
GOOD, OLD = "2.18.3-1+cuda12.1", "2.18.1-1+cuda12.1"
with open(os.environ["MOLECULE_FILE"], encoding="utf-8") as _handle:
    ADDRESSES = {p["name"]: p["ip"] for p in yaml.safe_load(_handle)["platforms"]}
PROMETHEUS = f"http://{ADDRESSES['dr1']}:9090"
WAIT = 120  # seconds, at most, for Prometheus to see what a node wrote


def api(path: str, **params) -> dict:
    url = f"{PROMETHEUS}/api/v1/{path}" + (f"?{urllib.parse.urlencode(params)}" if params else "")
    with urllib.request.urlopen(url, timeout=10) as response:  # noqa: S310 - the test node's address
        answer = json.load(response)
    assert answer["status"] == "success", answer
    return answer["data"]


def wait_for(what, check):
    """check() until it returns something true, at most WAIT seconds; fail naming what was awaited."""
    return wait_until(f"Prometheus on dr1 showing {what}", check, WAIT, every=2)


def node_targets() -> dict:
    return {t["labels"]["instance"]: t for t in api("targets", state="active")["activeTargets"]
            if t["labels"]["job"] == "node"}


def component(name: str) -> dict:
    """{instance: value} of lockstep_component_info for one component."""
    result = api("query", query=f'lockstep_component_info{{component="{name}"}}')["result"]
    return {r["metric"]["instance"]: r["metric"]["value"] for r in result}


def drift_alerts() -> list:
    return [a for a in api("alerts")["alerts"] if a["labels"]["alertname"] == "LockstepDrift"]


def collect_now(name: str) -> None:
    node(name).check_output("systemctl start lockstep-exporter.service")


def test_prometheus_runs_the_declared_settings():
    flags = api("status/flags")
    assert flags["web.listen-address"] == "0.0.0.0:9090"
    assert flags["storage.tsdb.retention.time"] == "15d"
    config = yaml.safe_load(api("status/config")["yaml"])
    assert config["global"]["scrape_interval"] == "5s" and config["global"]["evaluation_interval"] == "5s"
    rules = {r["name"]: r for g in api("rules")["groups"] for r in g["rules"]}
    assert set(rules) == {"LockstepDrift", "LockstepStale"}
    assert rules["LockstepStale"]["query"] == "time() - lockstep_collection_timestamp_seconds > 900"
    assert rules["LockstepDrift"]["duration"] == 10 and rules["LockstepDrift"]["health"] == "ok"


def test_every_node_exporter_is_a_target_and_up():
    def all_up():
        targets = node_targets()
        return targets if set(targets) == set(NODES) and all(t["health"] == "up" for t in targets.values()) else None

    targets = wait_for("every node exporter up", all_up)
    assert {n: t["scrapeUrl"] for n, t in targets.items()} == {
        n: f"http://{ADDRESSES[n]}:9100/metrics" for n in NODES}


DCGM_VERSION = "4.8.2-1"
# The role's default collectors (roles/monitoring/defaults/main.yml); the
# package's own default-counters.csv has DCGM_FI_DEV_XID_ERRORS on top, so
# serving exactly these shows the role's drop-in is what runs.
DCGM_FIELDS = {"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_GPU_TEMP",
               "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK"}


def test_every_gpu_node_runs_nvidias_dcgm_exporter_from_the_repository():
    for n in NODES:
        host = node(n)
        assert host.package("datacenter-gpu-manager-exporter").version == DCGM_VERSION, n
        policy = host.check_output("apt-cache policy datacenter-gpu-manager-exporter")
        assert "file:/srv/lockstep-standin/compute/cuda/repos/debian12/x86_64" in policy, policy
        unit = host.service("nvidia-dcgm-exporter")
        assert unit.is_enabled and unit.is_running, n
        assert "/usr/bin/dcgm-exporter -f /etc/dcgm-exporter/lockstep-counters.csv -a :9400" in host.check_output(
            "systemctl show -p ExecStart --value nvidia-dcgm-exporter")


def test_every_target_is_up_the_dcgm_exporters_included_and_their_metrics_reach_prometheus():
    want = {("prometheus", "localhost:9090")} | {(job, n) for job in ("node", "dcgm") for n in NODES}

    def all_up():
        targets = {(t["labels"]["job"], t["labels"]["instance"]): t
                   for t in api("targets", state="active")["activeTargets"]}
        return targets if set(targets) == want and all(t["health"] == "up" for t in targets.values()) else None

    targets = wait_for("every target up, the DCGM exporters included", all_up)
    assert {n: targets[("dcgm", n)]["scrapeUrl"] for n in NODES} == {
        n: f"http://{ADDRESSES[n]}:9400/metrics" for n in NODES}

    def one_series_per_gpu_node():
        result = api("query", query="DCGM_FI_DEV_GPU_UTIL")["result"]
        return result if sorted(r["metric"]["instance"] for r in result) == sorted(NODES) else None

    series = wait_for("DCGM_FI_DEV_GPU_UTIL of every GPU node", one_series_per_gpu_node)
    for r in series:
        n = r["metric"]["instance"]
        assert r["metric"]["job"] == "dcgm" and r["metric"]["gpu"] == "0", r
        assert r["metric"]["Hostname"] == node(n).check_output("hostname"), r
        assert r["value"][1] == "0", r
    fields = api("query", query='count by (__name__) ({job="dcgm", __name__=~"DCGM_FI_.*"})')["result"]
    assert {r["metric"]["__name__"] for r in fields} == DCGM_FIELDS
    assert all(r["value"][1] == str(len(NODES)) for r in fields)


def test_every_node_collects_on_a_timer_and_reports_its_components():
    for n in NODES:
        timer = node(n).service("lockstep-exporter.timer")
        assert timer.is_enabled and timer.is_running, n
    # The tests before this one changed dr3's package and put it back: collect now rather than wait for the timer.
    for n in NODES:
        collect_now(n)
    packages = {n: node(n).check_output("dpkg-query -W -f '${Version}' libnccl2") for n in NODES}
    assert packages == dict.fromkeys(NODES, GOOD)
    assert wait_for("nccl.package of every node", lambda: component("nccl.package") == packages)
    assert component("os.release") == dict.fromkeys(NODES, "Debian 12")
    success = api("query", query="lockstep_collection_success")["result"]
    assert {r["metric"]["instance"]: r["value"][1] for r in success} == dict.fromkeys(NODES, "1")
    # Collected recently (the handler and the timer), by the node's own clock.
    age = api("query", query="time() - lockstep_collection_timestamp_seconds")["result"]
    assert {r["metric"]["instance"] for r in age} == set(NODES)
    assert all(0 <= float(r["value"][1]) < 15 * 60 for r in age)
    # The node's textfile is what node exporter serves.
    textfile = node("dr2").file("/var/lib/prometheus/node-exporter/lockstep.prom")
    assert textfile.mode == 0o644
    assert f'lockstep_component_info{{component="nccl.package",value="{GOOD}"}} 1' in textfile.content_string


def install_nccl(name: str, version: str) -> None:
    node(name).check_output(f"dpkg -i /var/tmp/lockstep-standin/libnccl2_{version}.deb")


@pytest.fixture
def identical_nodes_collected():
    """Every node collected now, on 2.18.3, and no drift alert; dr3 put back afterwards whatever happens."""
    for n in NODES:
        collect_now(n)
    wait_for("no LockstepDrift on identical nodes",
             lambda: component("nccl.package") == dict.fromkeys(NODES, GOOD) and not drift_alerts())
    yield
    install_nccl("dr3", GOOD)
    collect_now("dr3")


def test_a_package_changed_on_one_node_raises_lockstep_drift_until_it_is_put_back(identical_nodes_collected):
    install_nccl("dr3", OLD)
    collect_now("dr3")
    values = wait_for("dr3's new NCCL package",
                      lambda: (lambda found: found if found.get("dr3") == OLD else None)(component("nccl.package")))
    assert values == {"dr1": GOOD, "dr2": GOOD, "dr3": OLD}
    alerts = wait_for("LockstepDrift pending or firing", drift_alerts)
    assert [(a["labels"]["component"], a["state"] in ("pending", "firing")) for a in alerts] == [
        ("nccl.package", True)]
    assert alerts[0]["annotations"]["summary"] == "Nodes differ in nccl.package"
    assert alerts[0]["annotations"]["description"].startswith("nccl.package has 2 different values across the nodes")
    # Put back and collected: the alert goes away.
    install_nccl("dr3", GOOD)
    collect_now("dr3")
    assert wait_for("LockstepDrift resolved",
                    lambda: component("nccl.package") == dict.fromkeys(NODES, GOOD) and not drift_alerts())


# Issue 28, part 2: one find reads the exporter's code on a node and only the
# files that differ are copied; a file edited, removed or given another mode
# behind Ansible's back is still put back, on that node only.
CODE = "/usr/local/lib/lockstep-exporter/ansible_collections/lockstep/gpu/plugins"


def copied_by(output: str) -> str:
    """What the role's copy task printed (the lines after its header, up to the next task)."""
    at = output.find("Copy the collection's code the exporter runs, where the node's copy differs")
    return output[at:output.find("TASK [", at + 1)] if at >= 0 else ""


def test_the_exporters_code_edited_removed_or_chmoded_on_a_node_is_put_back_by_the_converge():
    node("dr2").check_output(f"echo '# edited' >>{CODE}/module_utils/collect.py && rm {CODE}/module_utils/nccl.py"
                             f" && chmod 0600 {CODE}/plugin_utils/exporter.py")
    result = ansible_playbook("playbooks/monitoring.yml")
    assert result.returncode == 0, result.output[-3000:]
    copied = copied_by(result.output)
    assert copied.count("changed: [dr2]") == 3 and "changed: [dr1]" not in copied and "changed: [dr3]" not in copied, \
        copied
    for name in ("module_utils/collect.py", "module_utils/nccl.py", "plugin_utils/exporter.py"):
        with open(os.path.join(PROJECT, "plugins", name), "rb") as handle:
            want = hashlib.sha256(handle.read()).hexdigest()
        for n in NODES:
            assert node(n).file(f"{CODE}/{name}").sha256sum == want, (n, name)
            assert node(n).file(f"{CODE}/{name}").mode == 0o644, (n, name)
    assert node("dr2").service("lockstep-exporter.timer").is_running


# Issue 29, finding 4: a port where an address belongs is refused before
# anything changes; a Prometheus that systemd starts but that dies at once
# fails the run naming it, its settings and its own log line, and the next
# converge with good settings brings it back.
def test_a_listen_address_with_a_port_is_refused_with_nothing_changed():
    before = node("dr1").file("/etc/default/prometheus").content_string
    result = ansible_playbook("playbooks/monitoring.yml", "-e", "monitoring_prometheus_listen_address=0.0.0.0:9090")
    assert result.returncode != 0
    assert "monitoring_prometheus_listen_address is '0.0.0.0:9090': it must be an IPv4 address" in result.output, \
        result.output[-3000:]
    assert node("dr1").file("/etc/default/prometheus").content_string == before
    assert node("dr1").service("prometheus").is_running


def test_a_prometheus_that_cannot_start_fails_the_run_naming_it_and_a_good_converge_brings_it_back():
    # A valid address that is not the node's: Prometheus cannot bind it and exits.
    try:
        result = ansible_playbook("playbooks/monitoring.yml", "-e", "monitoring_prometheus_listen_address=10.99.99.99")
        assert result.returncode != 0
        assert ("Prometheus on dr1 does not answer on 10.99.99.99:9090 (service prometheus:" in result.output
                and "monitoring_prometheus_listen_address is '10.99.99.99'" in result.output), result.output[-3000:]
        assert "cannot assign requested address" in result.output, result.output[-3000:]
    finally:
        result = ansible_playbook("playbooks/monitoring.yml")
    assert result.returncode == 0, result.output[-3000:]
    assert wait_for("every node exporter up again",
                    lambda: {i: t["health"] for i, t in node_targets().items()} == dict.fromkeys(NODES, "up"))
