"""Role shared_storage in the slurm scenario: sl1 exports /srv/shared with
nfs-ganesha (a userspace NFS server), every node has the fstab entry for
/shared, and sl2 and sl3 reach the store with libnfs's userspace NFS client
(nfs-ls, nfs-cp, nfs-cat): the kernel of this machine has no NFS client
(nor nfsd), so nothing here is kernel-mounted, and the tests say so.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import uuid

import pytest
from conftest import _addresses, ansible_playbook, node

NODES = ("sl1", "sl2", "sl3")
WORKERS = ("sl2", "sl3")
HEAD = "sl1"
EXPORT = "/srv/shared"
URL = f"nfs://{HEAD}{EXPORT}"
FSTAB_LINE = f"{HEAD}:{EXPORT} /shared nfs nfsvers=4.2,hard 0 0"
LAYOUT = {"models": (0o2775, "root", "users"), "datasets": (0o2775, "root", "users"),
          "cache": (0o755, "root", "root"), "cache/pip": (0o1777, "root", "root"),
          "cache/conda-pkgs": (0o755, "root", "root")}


def nfs(path: str) -> str:
    """libnfs URL of a path on the store (NFSv4, as ganesha serves it)."""
    return f"{URL}/{path}?version=4"


def test_ganesha_serves_the_export_on_2049():
    head = node(HEAD)
    assert head.service("nfs-ganesha").is_running and head.service("nfs-ganesha").is_enabled
    listening = head.check_output("ss -Htlnp 'sport = :2049'")
    assert "ganesha.nfsd" in listening, listening
    conf = head.file("/etc/ganesha/ganesha.conf").content_string
    assert re.search(rf'^\s*Path = "{EXPORT}";$', conf, re.M), conf
    # Every node's address (its platform's ip in molecule.yml), and no one else.
    addresses = sorted(_addresses()[n] for n in NODES)
    clients = re.search(r"^\s*Clients = (.*);$", conf, re.M).group(1)
    assert sorted(clients.split(", ")) == addresses
    for path, (mode, user, group) in LAYOUT.items():
        entry = head.file(f"{EXPORT}/{path}")
        assert entry.is_directory and (entry.mode, entry.user, entry.group) == (mode, user, group), path


@pytest.mark.parametrize("name", NODES)
def test_fstab_entry_and_pip_cache_on_every_node(name):
    here = node(name)
    lines = [line for line in here.file("/etc/fstab").content_string.splitlines() if " /shared " in line]
    assert lines == [FSTAB_LINE]
    # Nothing is kernel-mounted here (shared_storage_mount: false): no NFS client in this kernel.
    assert "nfs" not in here.check_output("cat /proc/filesystems").split()
    assert not [m for m in here.check_output("cat /proc/self/mounts").splitlines() if m.split()[1] == "/shared"]
    pip_conf = here.file("/etc/pip.conf").content_string
    assert re.search(r"^\[global\]$", pip_conf, re.M) and re.search(r"^cache-dir = /shared/cache/pip$", pip_conf, re.M)


@pytest.mark.parametrize("name", WORKERS)
def test_worker_lists_writes_and_reads_through_nfs(name):
    here = node(name)
    listing = here.check_output("nfs-ls %s", nfs(""))
    assert {"models", "datasets", "cache"} <= {line.split()[-1] for line in listing.splitlines()}, listing
    token = f"{name}-{uuid.uuid4().hex}"
    here.check_output(f"echo {token} > /tmp/nfs-probe")
    here.check_output("nfs-cp /tmp/nfs-probe %s", nfs(f"models/{token}"))
    try:
        # The server holds it, and the other worker reads it back over NFS.
        assert node(HEAD).file(f"{EXPORT}/models/{token}").content_string.strip() == token
        other = node(WORKERS[1] if name == WORKERS[0] else WORKERS[0])
        assert other.check_output("nfs-cat %s", nfs(f"models/{token}")).strip() == token
    finally:
        node(HEAD).check_output(f"rm -f {EXPORT}/models/{token}")


def test_sbatch_job_writes_the_store_and_every_other_node_reads_it():
    token = uuid.uuid4().hex
    target = f"datasets/job-{token}"
    # The job's shell (on sl2) writes its host name; nfs-cp writes it to the store over NFS.
    script = f"echo {token} $(hostname) > /tmp/job-{token} && nfs-cp /tmp/job-{token} '{nfs(target)}'"
    out = node(HEAD).check_output(
        f"sbatch --wait --nodelist=sl2 --nodes=1 --output=/dev/null --wrap {shlex.quote(script)}")
    assert re.match(r"Submitted batch job \d+", out), out
    try:
        for name in ("sl1", "sl3"):
            assert node(name).check_output("nfs-cat %s", nfs(target)).split() == [token, "sl2"], name
        assert node(HEAD).file(f"{EXPORT}/{target}").content_string.split() == [token, "sl2"]
    finally:
        node(HEAD).check_output(f"rm -f {EXPORT}/{target}")


def test_kernel_mount_fails_naming_server_and_export():
    before = node("sl3").file("/etc/fstab").content_string
    result = ansible_playbook("playbooks/shared_storage.yml", "--limit", "sl3", "-e", '{"shared_storage_mount": true}')
    assert result.returncode != 0
    assert ("sl3 could not mount sl1:/srv/shared (server sl1, export /srv/shared) at /shared:" in result.output
            and "This node's kernel has no NFS client (no nfs or nfs4 in /proc/filesystems)" in result.output), \
        result.output
    result = ansible_playbook("playbooks/shared_storage.yml", "--limit", "sl3")
    assert result.returncode == 0, result.output
    assert node("sl3").file("/etc/fstab").content_string == before


# Issue 29, finding 2: a client carrying a second EXPORT block (that exported
# /etc read-write to everyone), and '*' without shared_storage_export_world.
INJECTED = ("10.231.9.0/24; }; EXPORT { Export_Id = 2; Path = /etc; Pseudo = /etc; Access_Type = RW; "
            "Squash = No_Root_Squash; Clients = *; FSAL { Name = VFS; } } #")


def test_an_injected_or_world_export_client_is_refused_and_the_export_stays():
    conf = "/etc/ganesha/ganesha.conf"
    before = node(HEAD).file(conf).content_string
    result = ansible_playbook("playbooks/shared_storage.yml", "-e",
                              json.dumps({"shared_storage_export_clients": ["10.231.9.0/24", INJECTED, "*"]}))
    assert result.returncode != 0
    assert "2 problems in the inventory; no node was changed" in result.output, result.output[-3000:]
    assert "sl1, sl2, sl3: shared_storage_export_clients is '10.231.9.0/24; }; EXPORT" in result.output, \
        result.output[-3000:]
    assert ("shared_storage_export_clients is '*': an address, a network (10.0.0.0/24) or a host name; '*' and /0 "
            "export to every address and need shared_storage_export_world: true") in result.output
    assert "Shared storage on every cluster node" not in result.output
    # The file and the live export are what they were: /etc is not exported, the store still is.
    assert node(HEAD).file(conf).content_string == before
    assert "Path = /etc" not in before
    assert node("sl2").run("nfs-ls %s", f"nfs://{HEAD}/etc?version=4").rc != 0
    listing = node("sl2").check_output("nfs-ls %s", nfs(""))
    assert "models" in listing.split(), listing


def gpu_facts(name: str) -> dict:
    inventory = os.path.dirname(os.environ["MOLECULE_INVENTORY_FILE"])
    # Plain one-line output (molecule's verifier forces colours on).
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    out = subprocess.run(["ansible", name, "-i", inventory, "-m", "lockstep.gpu.gpu_facts", "-o"],
                         capture_output=True, text=True, check=True, env=env).stdout
    return json.loads(out.split(" => ", 1)[1])["ansible_facts"]["gpu_facts"]


def test_head_export_is_a_fact():
    storage = gpu_facts(HEAD)["storage"]
    assert storage["exports"][0]["path"] == EXPORT and storage["exports"][0]["server"] == "nfs-ganesha"
    assert storage["server_running"] is True
    assert storage["mounts"]["/shared"] == {
        "fstab": {"source": f"{HEAD}:{EXPORT}", "fstype": "nfs", "options": "nfsvers=4.2,hard"}, "mounted": None}
    assert gpu_facts("sl2")["storage"]["exports"] == []


def test_verify_reports_storage_and_names_a_worker_without_the_mount():
    result = ansible_playbook("playbooks/verify.yml")
    assert result.returncode == 0, result.output
    report = json.loads(open(os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "reports", "drift.json"),
                             encoding="utf-8").read())
    values = report["by_component"]
    assert values["storage./shared.mounted"]["values"] == [{"value": False, "hosts": list(NODES)}]
    assert values["storage./shared.fstab"]["values"] == [
        {"value": f"{HEAD}:{EXPORT} nfs nfsvers=4.2,hard", "hosts": list(NODES)}]
    node("sl3").check_output("sed -i '\\# /shared nfs #d' /etc/fstab")
    try:
        result = ansible_playbook("playbooks/verify.yml")
        assert result.returncode != 0
        assert "sl3: storage./shared.mounted" in result.output, result.output
        assert "sl2: storage./shared" not in result.output and "sl1: storage./shared" not in result.output
    finally:
        result = ansible_playbook("playbooks/shared_storage.yml")
    assert result.returncode == 0, result.output
    assert ansible_playbook("playbooks/verify.yml").returncode == 0
