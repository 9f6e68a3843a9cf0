"""What only the thirteen roles side by side show: the cluster working through its firewall.

site.yml converges every role here and applies the firewall last; these
tests run after the idempotence run, so everything they see has lived
through the firewall's apply (twice). Issue 25 asked for four proofs: GPUStack's
workers ready, Prometheus with every target up, a Slurm job step on all
three nodes (this file), and verify.yml finding no drift
(test_base.py::test_verify_playbook_finds_the_nodes_identical).
"""

from __future__ import annotations

import base64
import json
import urllib.parse
import urllib.request

from conftest import _addresses, declared, node, wait_until

NODES = ("dp1", "dp2", "dp3")
HEAD, WORKERS = "dp1", ("dp2", "dp3")


def url(name: str, port: int, path: str) -> str:
    return f"http://{_addresses()[name]}:{port}{path}"


def ask(address: str, headers: dict | None = None) -> dict:
    """GET from the controller (this machine, a firewall_allowed_sources address), JSON answer."""
    request = urllib.request.Request(address, headers=headers or {})
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - the scenario's node
        return json.load(response)


def test_every_node_has_the_firewall_loaded_and_saved():
    worker_port = declared(HEAD)["gpustack_worker_port"]
    for name in NODES:
        here = node(name)
        assert here.service("nftables").is_enabled, name
        chain = here.check_output("nft list chain inet lockstep input")
        assert "policy drop" in chain, (name, chain)
        assert f"dport {worker_port} " in chain or name == HEAD, (name, chain)


def test_gpustack_lists_its_workers_ready_through_the_firewall():
    """The server's API from the controller (an allowed source), as the UI would ask it. The server
    checks each worker's own API every 15 s and marks one it cannot reach unreachable: ready, long after
    the firewall's apply, means the worker port is open to the server."""
    values = declared(HEAD)
    password = node(HEAD).check_output("cat /var/lib/gpustack/initial_admin_password")
    auth = {"Authorization": "Basic " + base64.b64encode(f"admin:{password}".encode()).decode()}
    address = url(HEAD, values["gpustack_port"], "/v2/workers?perPage=100")

    def ready():
        listed = {w["name"]: w["state"] for w in ask(address, auth)["items"]}
        return listed if listed == dict.fromkeys(WORKERS, "ready") else None

    wait_until("GPUStack's server listing dp2 and dp3 ready", ready, seconds=60)
    for name in WORKERS:  # and the worker's port from the server, through the worker's firewall
        answer = node(HEAD).check_output(
            "python3 -c 'import socket, sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), 5).close(); "
            f"print(\"open\")' {_addresses()[name]} {values['gpustack_worker_port']}")
        assert answer == "open", name


def test_prometheus_has_every_target_up_through_the_firewall():
    """Prometheus on the head scrapes every node's node exporter and DCGM exporter across the firewall."""
    values = declared(HEAD)
    want = {("prometheus", f"localhost:{values['monitoring_prometheus_port']}")} | {
        (job, name) for job in ("node", "dcgm") for name in NODES}
    address = url(HEAD, values["monitoring_prometheus_port"], "/api/v1/targets?" + urllib.parse.urlencode(
        {"state": "active"}))

    def all_up():
        targets = {(t["labels"]["job"], t["labels"]["instance"]): t["health"]
                   for t in ask(address)["data"]["activeTargets"]}
        return targets if set(targets) == want and set(targets.values()) == {"up"} else None

    wait_until("Prometheus on dp1 with every target up", all_up, seconds=90)


def test_one_job_step_runs_on_all_three_nodes():
    """srun from the head: slurmctld places one task per node, each slurmd starts it and srun gets every
    answer back on its SrunPortRange, all through the firewall."""
    out = node(HEAD).check_output("timeout 120 srun --nodes 3 --ntasks-per-node 1 --partition batch hostname")
    assert sorted(out.split()) == list(NODES), out
