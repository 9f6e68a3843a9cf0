"""Bad inventory input: the preflight play refuses it, naming the variable, and no node changes.

Each case is one ``ansible-playbook <playbook> -e @<case>.yml`` run on the
converged cluster; the extra-vars file is YAML as an admin would write it
(so ``cuda_versions: [12.10]`` is a YAML float). Each parametrized test
checks its own run: a failed run whose only play is the preflight's,
``changed=0`` for every node it ran on, the message naming the variable with
the value (or the values it allows), and no Jinja or loop error that names no
variable. ``test_no_node_changed`` compares all three nodes' state before and
after the whole batch: the checksums of every file the roles write, dpkg's
status, and every file under /etc, /usr, /opt and /var/lib/dpkg newer than a
mark set before the batch.

The rules of every role (plugins/plugin_utils/preflight/) are each tested without
nodes (their unit tests, and tests/tooling/test_preflight_cases.py with the
bad values this batch used to run one by one); these eight runs prove what
only real runs show. Two kinds of run:

- SITE_WIDE cases run ``site.yml`` on all three nodes, as a converge would:
  three roles' problems named in one report, what only the nodes can tell
  (their interfaces, NVIDIA's key as each node fetches it), the cluster-wide
  CUDA/driver contract and an unknown preflight role. site.yml stops in its
  first play, the preflight, no later play starts and no node changes.
- The others run the concern playbook of their role (playbooks/docker.yml,
  playbooks/conda.yml) with ``--limit dp1``: that playbook imports the same
  preflight play with preflight_roles naming its roles, so running one role
  alone checks that role the same way.

The runs use a static copy of the scenario's inventory (the same hosts,
groups and group_vars, each node's address written out, as in an admin's
hosts.yml, instead of molecule's template that re-reads molecule.yml for every
task on every node) and the jsonfile fact cache of ansible.cfg, filled by the
first case, which runs alone; the others, SITE_WIDE ones first, go through a
thread pool of WORKERS.
"""

from __future__ import annotations

import os
import re
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import yaml
from conftest import PROJECT, _addresses, ansible_playbook, node

NODES = ("dp1", "dp2", "dp3")
PREFLIGHT_PLAY = "PLAY [Check the whole inventory before any node changes]"
OTHER_FINGERPRINT = "0123456789ABCDEF0123456789ABCDEF01234567"
# Uncoloured output, whatever the environment (molecule forces colours).
# The stand-in repositories' key (inventories/demo/group_vars reads its fingerprint there).
PLAIN = {"ANSIBLE_FORCE_COLOR": "false", "ANSIBLE_NOCOLOR": "true",
         "LOCKSTEP_STANDIN_APT": os.environ.get("LOCKSTEP_STANDIN_APT", f"{PROJECT}/.cache/standin-apt-cluster")}
# Concurrent ansible-playbook runs.
WORKERS = 4
# The node the per-role cases run on (--limit).
ALONE_NODE = "dp1"
# Cases that run site.yml on every node (see the module's docstring).
SITE_WIDE = {
    "three-roles",                  # five roles' rules in one report; runs first, alone (fact cache)
    "mtu-missing-interface",        # network, each node's interfaces (the probe)
    "cuda-12.1-driver-525",         # the CUDA/driver contract, across the GPU nodes
    "nvidia-key-other-fingerprint",  # nvidia_repo, the key fetched on each node (its Jinja check)
    "preflight-unknown-role",       # preflight_roles itself
}


# The playbook that checks one role's variables when run alone: it imports playbooks/preflight.yml
# with preflight_roles naming its roles.
CONCERN_PLAYBOOK = {
    "docker": "playbooks/docker.yml",
    "conda": "playbooks/conda.yml",
}


def _playbook(case_id: str, role: str) -> str:
    return "site.yml" if case_id in SITE_WIDE else CONCERN_PLAYBOOK[role]


# (id, extra vars as YAML, fragments the output must hold, role): each case runs the concern
# playbook of its role on ALONE_NODE, or site.yml on every node when its id is in SITE_WIDE.
# Every rule of the roles checked in Python is tested without nodes, on the same inventory
# (tests/tooling/test_preflight_cases.py, plugins' unit tests); these runs prove what only a
# real run shows: the refused run changes nothing on any node, starts no other play, and the
# report names every problem of every node at once.
CASES = [
    # Issue 25's example: a partition naming a node the inventory lacks, a port out of range, an unknown
    # fabric (and two more roles' values): five problems of five roles, one report.
    ("three-roles", "{slurm_partitions: [{name: batch, nodes: [dp9]}], gpustack_port: 70000, nccl_fabric: omnipath,"
                    " cuda_versions: [12.10], base_timezone: Mars/Olympus}",
     ["5 problems in the inventory; no node was changed",
      "dp1: slurm_partitions[batch].nodes is '['dp9']': names dp9, not a compute node of the inventory",
      "dp1, dp2, dp3: gpustack_port is '70000': not a port of GPUStack server",
      "dp1, dp2, dp3: nccl_fabric is 'omnipath'", "dp1, dp2, dp3: cuda_versions is '[12.1]'",
      "dp1, dp2, dp3: base_timezone is 'Mars/Olympus'"], "preflight"),
    ("mtu-missing-interface", "network_mtu: {ib9: 9000}",
     ["network_mtu is 'ib9'", "has no interface ib9 (named in network_mtu or network_check_interfaces)"], "network"),
    ("cuda-12.1-driver-525", '{nvidia_driver_branch: "525", nvidia_driver_version: "525.85.12"}',
     ["no node was changed", "nvidia_driver_version is '525.85.12'", "needs NVIDIA driver >= 530.30.02"], "cuda"),
    ("nvidia-key-other-fingerprint", f"nvidia_repo_key_fingerprint: {OTHER_FINGERPRINT}",
     [OTHER_FINGERPRINT, "nvidia_repo_key_fingerprint"], "nvidia_repo"),
    ("preflight-unknown-role", "preflight_roles: [base, kubernetes-operator]",
     ["preflight_roles", "kubernetes-operator"], "preflight"),
    ("daemon-unknown-option", "docker_daemon_options: {no-such-option: true}",
     ["dp1: docker_daemon_options.no-such-option is 'True'", "is not a dockerd 20.10 configuration option"],
     "docker"),
    ("docker-toolkit-key-http", "docker_nvidia_repo_key_url: http://nvidia.github.io/libnvidia-container/gpgkey",
     ["key_url: 'http://nvidia.github.io/libnvidia-container/gpgkey' is plain http://", "docker_nvidia_repo_key_url"],
     "docker"),
    ("conda-without-lock", "conda_environments: [{name: train, python: '3.11'}]",
     ["dp1: conda_lock_file is '", "does not exist on the controller: solve the environments first"], "conda"),
]


def _sums(name: str) -> str:
    """What a converge writes on the node, and what installs or changes anything there."""
    return node(name).check_output(
        "cd / && md5sum etc/localtime etc/timezone etc/default/locale etc/hosts etc/apt/sources.list"
        " etc/apt/sources.list.d/* etc/apt/preferences.d/* etc/apt/keyrings/* etc/chrony/chrony.conf"
        " etc/sysctl.d/* etc/nccl.conf etc/docker/daemon.json etc/containerd/config.toml etc/profile.d/*"
        " etc/modprobe.d/* var/lib/dpkg/status 2>/dev/null; true")


def _static_inventory(folder) -> str:
    """The scenario's inventory with each node's address written out; returns its directory."""
    source = os.path.dirname(os.environ["MOLECULE_INVENTORY_FILE"])
    with open(os.environ["MOLECULE_INVENTORY_FILE"], encoding="utf-8") as handle:
        inventory = yaml.safe_load(handle)
    for group in inventory.values():
        for name, host in ((group or {}).get("hosts") or {}).items():
            if host is not None and "ansible_host" in host:
                host["ansible_host"] = _addresses()[name]
    target = folder / "inventory"
    target.mkdir()
    (target / "hosts.yml").write_text(yaml.safe_dump(inventory), encoding="utf-8")
    for linked in ("group_vars", "host_vars"):
        if os.path.exists(os.path.join(source, linked)):
            (target / linked).symlink_to(os.path.realpath(os.path.join(source, linked)))
    return str(target)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Every case's run, and every node's state before and after the batch."""
    folder = tmp_path_factory.mktemp("bad-input")
    inventory = _static_inventory(folder)
    before = {n: _sums(n) for n in NODES}
    for n in NODES:
        node(n).check_output("touch /tmp/.lockstep-bad-input-mark")

    # The facts gathered once for the batch, as ansible.cfg caches them for an admin (jsonfile).
    env = dict(PLAIN, ANSIBLE_CACHE_PLUGIN="jsonfile", ANSIBLE_CACHE_PLUGIN_CONNECTION=str(folder / "facts"))

    def run(case):
        case_id, extra, _, role = case
        playbook = _playbook(case_id, role)
        path = folder / f"{case_id}.yml"
        path.write_text(extra + "\n", encoding="utf-8")
        limit = [] if playbook == "site.yml" else ["--limit", ALONE_NODE]
        return case_id, ansible_playbook(playbook, "-e", f"@{path}", *limit, inventory=inventory, env=env)

    first, *others = sorted(CASES, key=lambda case: (case[0] != "three-roles", case[0] not in SITE_WIDE))
    start = time.monotonic()
    results = dict([run(first)])  # alone, on every node: it fills the fact cache the others read
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        results.update(pool.map(run, others))
    seconds = time.monotonic() - start
    (folder / "batch.txt").write_text(
        f"{len(CASES)} bad-input runs ({len(SITE_WIDE)} of site.yml) in {seconds:.0f} s,"
        f" {WORKERS} at a time, load average {os.getloadavg()[0]:.1f}\n", encoding="utf-8")
    after = {n: _sums(n) for n in NODES}
    newer = {n: node(n).check_output(
        "find /etc /usr /opt /var/lib/dpkg -xdev -newer /tmp/.lockstep-bad-input-mark -print 2>/dev/null; true")
        for n in NODES}
    return {"results": results, "before": before, "after": after, "newer": newer}


def test_no_node_changed(runs):
    assert runs["after"] == runs["before"]
    assert runs["newer"] == {n: "" for n in NODES}, runs["newer"]


@pytest.mark.parametrize("case_id, extra, fragments, role", CASES, ids=[case[0] for case in CASES])
def test_bad_input_fails_in_the_preflight_naming_the_variable(runs, case_id, extra, fragments, role):
    result = runs["results"][case_id]
    tail = result.output[-3000:]
    assert result.returncode != 0, tail
    for fragment in fragments:
        assert fragment in result.output, (fragment, tail)
    # The preflight play was the only play that started.
    assert re.findall(r"PLAY \[[^\]]*\]", result.output) == [PREFLIGHT_PLAY], tail
    recap = dict(re.findall(r"(dp\d) : ok=\d+ changed=(\d+)", result.output))
    assert recap == {n: "0" for n in (NODES if case_id in SITE_WIDE else (ALONE_NODE,))}, tail
    # Never a Jinja or loop error that names no variable.
    for generic in ("can only concatenate", "object has no attribute", "Invalid data passed to 'loop'",
                    "Error while resolving value"):
        assert generic not in result.output, (generic, tail)
