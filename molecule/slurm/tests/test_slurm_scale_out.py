"""Issue 27, part 3: nodes added to and replaced in the running three-node
cluster with playbooks/add_node.yml (with the scenario's own converge:
base, slurm, shared_storage, firewall). New machines are fresh containers of
the node image on the scenario's network, put in the inventory by an extra
source (the scenario's variables, groups cluster and workers).

A fourth node, sl4: the cluster is locked first (playbooks/lock.yml) and a
job runs on sl1 throughout. After the addition the run passed, verify.yml
checked sl4 against the lock (and wrote slurm.conf's new hash into it), a
job step answers from all four nodes, the job started before is still
running under the same id, and on the running nodes exactly the files that
name the nodes changed (checksums of every file under /etc, /usr/local and
/opt).

sl3 replaced: its container removed, a fresh one (no state) under the same
name at another address; add_node.yml brings it back with the cluster's
munge key and configuration, every node's /etc/hosts gives the new address,
and a job step answers from all four nodes again.

Runs last (file order); sl4 is removed at the end, and the scenario is
destroyed after it (the new sl3 with it: molecule removes containers by name).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import PROJECT, SSH_ARGS, ansible_playbook, node, wait_until

OLD = ("sl1", "sl2", "sl3")
NEW, NEW_ADDRESS, NETWORK = "sl4", "10.231.9.14", "lockstep-slurm"
# sl3's new machine.
REPLACED_ADDRESS = "10.231.9.23"
HEAD = "sl1"
# The files that name the nodes, per running node: base's /etc/hosts block
# (and its copy, which lockstep-hosts.service restores at boot), slurm.conf,
# the firewall's sources, and on the head the NFS export's clients.
NAMING = {"/etc/hosts", "/etc/lockstep/hosts.block", "/etc/slurm/slurm.conf", "/etc/nftables.conf"}
EXPORT = "/etc/ganesha/ganesha.conf"


def podman(*args: str) -> str:
    return subprocess.run(["podman", *args], check=True, capture_output=True, text=True).stdout


def checksums(name: str) -> dict:
    """{path: sha256} of every regular file under /etc, /usr/local and /opt on the node."""
    out = node(name).check_output("find /etc /usr/local /opt -xdev -type f -print0 | sort -z | xargs -0 sha256sum")
    return {path: digest for digest, path in (line.split(None, 1) for line in out.splitlines())}


def changed(before: dict, after: dict) -> set:
    return {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}


def job_state(job: str) -> str:
    return node(HEAD).check_output(f"squeue --noheader --jobs {job} --format %T").strip()


def start(name: str, address: str):
    """A fresh machine of the node image on the scenario's network, as molecule makes the others."""
    image = os.environ.get("LOCKSTEP_NODE_IMAGE", "localhost/lockstep-node:debian12")
    podman("run", "-d", "--name", name, "--hostname", name, f"--network={NETWORK}", "--ip", address,
           "--systemd=always", "--cap-add=NET_ADMIN", "-v", f"{os.environ['LOCKSTEP_SSH_KEY']}.pub:/root/.ssh/"
           "authorized_keys:ro", image, "/sbin/init")
    wait_until(f"sshd on {name}", lambda: node(HEAD).run(f"timeout 3 bash -c '</dev/tcp/{address}/22'").rc == 0)


@pytest.fixture(scope="module")
def extra_inventory(tmp_path_factory):
    """write({node: address}) -> the path of an inventory source that puts those nodes in groups cluster and
    workers at those addresses, with the scenario's variables; sl4 is removed at the end."""
    scenario = yaml.safe_load((Path(PROJECT) / "molecule/slurm/inventory.yml").read_text())
    path = tmp_path_factory.mktemp("inventory") / "added.yml"

    def write(addresses: dict) -> str:
        hosts = {name: {**scenario["all"]["hosts"][HEAD], "ansible_host": address, "ansible_user": "root",
                        "ansible_connection": "ssh", "ansible_ssh_private_key_file": os.environ["LOCKSTEP_SSH_KEY"],
                        "ansible_ssh_common_args": SSH_ARGS} for name, address in addresses.items()}
        members = {"hosts": dict.fromkeys(addresses, {})}
        path.write_text(yaml.safe_dump({"all": {"hosts": hosts, "children": {"cluster": members, "workers": members}}}))
        return str(path)

    try:
        yield write
    finally:
        subprocess.run(["podman", "rm", "-f", "-t", "5", NEW], check=False, capture_output=True)


def add_node(extra: str, names: str, reports: Path):
    """playbooks/add_node.yml with the scenario's own converge (base, slurm, shared_storage, firewall)."""
    result = ansible_playbook(
        "playbooks/add_node.yml", "-i", extra, "-e", f"add_node_hosts={names}",
        "-e", f"add_node_playbook={PROJECT}/molecule/slurm/converge.yml", "-e", f"verify_reports_dir={reports}",
        inventory=os.path.dirname(os.environ["MOLECULE_INVENTORY_FILE"]))
    return result


def reports_dir() -> Path:
    return Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "reports"


def test_a_fourth_node_joins_the_running_cluster(extra_inventory):
    reports = reports_dir()
    start(NEW, NEW_ADDRESS)
    extra = extra_inventory({NEW: NEW_ADDRESS})
    locked = ansible_playbook("playbooks/lock.yml", "-e", f"verify_reports_dir={reports}")
    assert locked.returncode == 0, locked.output[-3000:]
    before = {name: checksums(name) for name in OLD}
    job = node(HEAD).check_output("sbatch --parsable --nodelist sl1 --mem=16 --job-name before-add"
                                  " --wrap 'sleep 1200'").strip()
    try:
        wait_until("the job before the addition running", lambda: job_state(job) == "RUNNING")
        result = add_node(extra, NEW, reports)
        assert result.returncode == 0, result.output[-4000:]
        # verify.yml compared every node with the lock, sl4 included, and found no drift.
        report = json.loads((reports / "drift.json").read_text())
        assert report["locked"] and NEW in report["hosts"] and not report["drifts"], report["drifts"]
        assert [c for c, v in report["by_component"].items() if v["source"] == "lock"], report["by_component"]
        # slurm.conf names sl4 now: its hash on every node is the lock's, which add_node.yml rewrote.
        lock = yaml.safe_load((reports.parent / "stack-lock.yml").read_text())
        conf = node(HEAD).check_output("sha256sum /etc/slurm/slurm.conf").split()[0]
        assert lock["components"]["slurm.conf_sha256"] == conf and NEW in lock["hosts"], lock["hosts"]
        assert job_state(job) == "RUNNING", f"job {job} before the addition: {job_state(job)!r}"
        answered = node(HEAD).check_output("srun --nodes=4 --ntasks-per-node=1 --mem=16 --immediate=60 hostname")
        assert sorted(answered.split()) == sorted(OLD + (NEW,)), answered
        for name in OLD:
            expected = NAMING | ({EXPORT} if name == HEAD else set())
            assert changed(before[name], checksums(name)) == expected, name
    finally:
        node(HEAD).run(f"scancel {job}")


def test_a_node_replaced_by_a_new_machine_at_a_new_address(extra_inventory):
    """sl3's machine is gone; a fresh one (no state) takes its name at another address."""
    reports = reports_dir()
    subprocess.run(["podman", "rm", "-f", "-t", "5", "sl3"], check=True, capture_output=True)
    start("sl3", REPLACED_ADDRESS)
    extra = extra_inventory({NEW: NEW_ADDRESS, "sl3": REPLACED_ADDRESS})
    result = add_node(extra, "sl3", reports)
    assert result.returncode == 0, result.output[-4000:]
    report = json.loads((reports / "drift.json").read_text())
    assert report["locked"] and not report["drifts"], report["drifts"]
    assert node(HEAD).check_output("getent hosts sl3").split()[0] == REPLACED_ADDRESS
    answered = node(HEAD).check_output("srun --nodes=4 --ntasks-per-node=1 --mem=16 --immediate=60 hostname")
    assert sorted(answered.split()) == ["sl1", "sl2", "sl3", NEW], answered
