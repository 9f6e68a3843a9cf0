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

Two kinds of run, so that the batch stays cheap (a site.yml run checks every
role on three nodes; most cases need one role on one node):

- SITE_WIDE cases run ``site.yml`` on all three nodes, as a converge would:
  at least one per role (base, network, nvidia_driver, cuda, nvidia_repo,
  nccl, docker, conda), every case whose check reads other nodes or the whole
  play (the /etc/hosts group, the CUDA/driver contract, the conda lock
  looked up once), the list/mapping shape check that reads every role's
  argument spec, and the unknown preflight role. They prove that site.yml
  stops in its first play, the preflight with every role's checks, that no
  later play starts and that no node reports a change.
- Every other case is a per-node check of one role's variable (its argument
  spec or a rule of its tasks/preflight.yml). It runs the concern playbook of
  that role (playbooks/docker.yml...) with ``--limit dp1``: that playbook
  imports the same preflight play (playbooks/preflight.yml) with
  preflight_roles naming its own roles, so the same argument spec and the
  same preflight tasks refuse the value with the same message. The extra
  vars are the same on every node and dp1..dp3 are alike (all in the gpu
  group), so dp1's verdict is every node's; the SITE_WIDE cases show that
  site.yml, which runs every role's checks on every node, stops at such a
  refusal before any other play. The run asserts the same: it fails, its
  only play is the preflight's (the concern playbook's own plays never
  start), dp1 reports changed=0, and the batch-wide state comparison covers
  all three nodes.

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
HUGE = "A" * 200 * 1024  # a 200 kB "timezone"
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
    "timezone-unknown",             # base, a file looked up on each node; runs first, alone (fact cache)
    "etc-hosts-group-unknown",      # base, the inventory's groups
    "mtu-missing-interface",        # network, each node's interfaces
    "driver-source-ubuntu-on-debian",  # nvidia_driver, each node's distribution
    "cuda-12.10-unquoted",          # cuda
    "cuda-versions-string",         # the shape check over every role's argument spec
    "cuda-12.1-driver-525",         # the CUDA/driver contract, across the GPU nodes
    "nvidia-key-other-fingerprint",  # nvidia_repo, the key fetched on each node
    "nccl-missing-interface",       # nccl, each node's interfaces
    "daemon-unknown-option",        # docker
    "conda-without-lock",           # conda, the lock looked up once for the play
    "preflight-unknown-role",       # preflight_roles itself
}


# The playbook that checks one role's variables when run alone: it imports playbooks/preflight.yml
# with preflight_roles naming its roles (NVIDIA's repository is checked with the GPU roles').
CONCERN_PLAYBOOK = {
    "base": "playbooks/base.yml",
    "network": "playbooks/network.yml",
    "nvidia_driver": "playbooks/nvidia_driver.yml",
    "cuda": "playbooks/cuda.yml",
    "nvidia_repo": "playbooks/cuda.yml",
    "nccl": "playbooks/nccl.yml",
    "docker": "playbooks/docker.yml",
    "conda": "playbooks/conda.yml",
    "preflight": "site.yml",
}


def _role(role: str, cases: list) -> list:
    """The cases of one role's variables."""
    return [(case_id, extra, fragments, role) for case_id, extra, fragments in cases]


def _playbook(case_id: str, role: str) -> str:
    return "site.yml" if case_id in SITE_WIDE else CONCERN_PLAYBOOK[role]


# (id, extra vars as YAML, fragments the output must hold, role): each case runs the concern
# playbook of its role on ALONE_NODE, or site.yml on every node when its id is in SITE_WIDE.
CASES = [
    # --- base ------------------------------------------------------------------------------------
    *_role("base", [
        ("timezone-unknown", "base_timezone: Mars/Olympus",
         ["base_timezone 'Mars/Olympus' is not a timezone known to tzdata"]),
        ("timezone-path", "base_timezone: ../../../etc/passwd",
         ["base_timezone '../../../etc/passwd' is not a timezone name"]),
        ("timezone-200kB", f"base_timezone: {HUGE}",
         [f"base_timezone '{HUGE[:20]}", "is not a timezone name", "at most 64 characters"]),
        ("timezone-list", "base_timezone: [Etc/UTC]",
         ["base_timezone", "is not a timezone name"]),
        ("locale-unknown", "base_locale: xx_XX.UTF-8",
         ["base_locale 'xx_XX.UTF-8' is not in /usr/share/i18n/SUPPORTED"]),
        ("apt-mirror-no-scheme", "base_apt_mirror: mirrors.example.cn/debian",
         ["base_apt_mirror 'mirrors.example.cn/debian' is not a usable apt mirror URL", "http://, https:// or file://"]),
        ("apt-security-mirror-ftp", "base_apt_security_mirror: ftp://ftp.example.cn/debian-security",
         ["base_apt_security_mirror 'ftp://ftp.example.cn/debian-security' is not a usable apt mirror URL"]),
        ("manage-etc-hosts-maybe", "base_manage_etc_hosts: maybe",
         ["base_manage_etc_hosts", "maybe", "not a valid boolean"]),
        ("apt-components-newline", 'base_apt_components: ["main\\nTrusted: yes"]',
         ["base_apt_components and base_ntp_servers take single words", "Trusted: yes"]),
        ("ntp-servers-newline", 'base_ntp_servers: ["ntp.example.com\\nallow all"]',
         ["base_apt_components and base_ntp_servers take single words", "allow all"]),
        ("ntp-servers-string", "base_ntp_servers: ntp.example.com",
         ["base_ntp_servers 'ntp.example.com' is not a list (it is a string)"]),
        ("apt-components-string", "base_apt_components: main contrib non-free",
         ["base_apt_components 'main contrib non-free' is not a list (it is a string)"]),
        ("extra-package-not-a-name", 'base_extra_packages: ["vim; reboot"]',
         ["base_extra_packages", "'vim; reboot' is not a Debian package name"]),
        ("etc-hosts-group-unknown", "base_etc_hosts_group: computenodes",
         ["base_etc_hosts_group 'computenodes' is not a group of the inventory"]),
    ]),
    # --- network ---------------------------------------------------------------------------------
    *_role("network", [
        ("min-speed-1g", "network_min_speed_mbps: 1000",
         ["network_min_speed_mbps is 1000", "10 GbE at the very least (10000)"]),
        ("min-speed-word", "network_min_speed_mbps: fast",
         ["network_min_speed_mbps", "fast", "int"]),
        ("unknown-speed-choice", "network_unknown_speed: maybe",
         ["value of network_unknown_speed must be one of: fail, warn, ignore, got: maybe"]),
        ("mtu-too-small", "network_mtu: {eth0: 100}",
         ["network_mtu.eth0 is 100: an MTU is a number from 576 to 65520"]),
        ("mtu-missing-interface", "network_mtu: {ib9: 9000}",
         ["has no interface ib9 (named in network_mtu or network_check_interfaces)"]),
        ("mtu-string", 'network_mtu: "9000"',
         ["network_mtu '9000' is not a mapping (it is a string)"]),
        ("sysctl-not-a-key", 'network_sysctl_overrides: {"net.core.rmem_max = 1; reboot": 1}',
         ["network_sysctl / network_sysctl_overrides: 'net.core.rmem_max = 1; reboot: 1' is not a sysctl key"]),
        ("rdma-packages-string", "network_rdma_packages: rdma-core",
         ["network_rdma_packages 'rdma-core' is not a list (it is a string)"]),
    ]),
    # --- nvidia_driver ---------------------------------------------------------------------------
    *_role("nvidia_driver", [
        ("driver-source-choice", "nvidia_driver_source: nouveau",
         ["value of nvidia_driver_source must be one of: cuda, ubuntu, debian, got: nouveau"]),
        ("driver-source-ubuntu-on-debian", "nvidia_driver_source: ubuntu",
         ["nvidia_driver_source 'ubuntu' is not available on dp1"]),
        ("driver-branch", 'nvidia_driver_branch: "53x"',
         ["nvidia_driver_branch '53x' must be a branch such as 535"]),
        ("driver-version-other-branch", 'nvidia_driver_version: "545.29.06"',
         ["nvidia_driver_version '545.29.06' empty or a version of that branch"]),
        ("driver-fabricmanager-debian", "{nvidia_driver_source: debian, nvidia_driver_fabricmanager: true}",
         ["nvidia_driver_fabricmanager is true on dp1 but Debian's archive has no fabric manager"]),
        ("driver-reboot-timeout", "nvidia_driver_reboot_timeout: soon",
         ["nvidia_driver_reboot_timeout", "soon", "int"]),
    ]),
    # --- cuda and the CUDA/driver contract -------------------------------------------------------
    *_role("cuda", [
        ("cuda-12.10-unquoted", "cuda_versions: [12.10]",
         ["cuda_versions holds 12.1 as a YAML number: quote it", "YAML reads 12.10 as 12.1"]),
        ("cuda-versions-string", 'cuda_versions: "12.1"',
         ["cuda_versions '12.1' is not a list (it is a string)", "cuda_versions: ['12.1']"]),
        ("cuda-version-major-only", 'cuda_versions: ["12"]',
         ["cuda_versions ['12'] must list CUDA releases such as \"12.1\""]),
        ("cuda-default-not-listed", 'cuda_default_version: "12.4"',
         ["cuda_default_version '12.4' must be one of them"]),
        ("cuda-package-other-release", 'cuda_package_versions: {"12.1": "12.2.0-1"}',
         ["cuda_package_versions['12.1'] is '12.2.0-1'"]),
        ("cuda-compat-choice", "cuda_driver_compat_mode: lenient",
         ["value of cuda_driver_compat_mode must be one of: toolkit, minor_compat, got: lenient"]),
        ("cuda-12.1-driver-525", '{nvidia_driver_branch: "525", nvidia_driver_version: "525.85.12"}',
         ["No node was changed", "525.85.12", "530.30.02", "nvidia_driver_version"]),
    ]),
    # --- nvidia_repo -----------------------------------------------------------------------------
    *_role("nvidia_repo", [
        ("nvidia-key-http", "nvidia_repo_key_url: http://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/3bf863cc.pub",
         ["key_url: 'http://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/3bf863cc.pub' is plain http://",
          "nvidia_repo_key_url"]),
        ("nvidia-key-other-fingerprint", f"nvidia_repo_key_fingerprint: {OTHER_FINGERPRINT}",
         [OTHER_FINGERPRINT, "nvidia_repo_key_fingerprint"]),
        ("nvidia-repo-url-ftp", "nvidia_repo_url: ftp://mirror.example.com/cuda",
         ["'ftp://mirror.example.com/cuda' is not an http://, https:// or file: URL", "nvidia_repo_url"]),
    ]),
    # --- nccl ------------------------------------------------------------------------------------
    *_role("nccl", [
        ("nccl-fabric-omnipath", "nccl_fabric: omnipath",
         ["value of nccl_fabric must be one of: ethernet, roce, infiniband, got: omnipath"]),
        ("nccl-infiniband-without-hca", "nccl_fabric: infiniband",
         ["nccl_fabric is infiniband on dp1 but nccl_ib_hca is empty"]),
        ("nccl-version", 'nccl_version: "2.18"',
         ["nccl_version '2.18' must look like 2.18.3-1"]),
        ("nccl-unknown-variable", "nccl_conf_overrides: {NCCL_NO_SUCH_KNOB: 1}",
         ["was not written; fix nccl_conf_overrides:", "NCCL_NO_SUCH_KNOB is not an NCCL variable Lockstep knows"]),
        ("nccl-missing-interface", 'nccl_socket_ifname: "=eth9"',
         ["was not written; fix nccl_socket_ifname:", "NCCL_SOCKET_IFNAME==eth9: no interface named 'eth9'"]),
        ("nccl-socket-threads", "nccl_socket_nthreads: 32",
         ["was not written; fix nccl_socket_nthreads", "NCCL_SOCKET_NTHREADS"]),
        ("nccl-relaxed-ordering-choice", "nccl_ib_pci_relaxed_ordering: 3",
         ["value of nccl_ib_pci_relaxed_ordering must be one of: 0, 1, 2, got: 3"]),
    ]),
    # --- docker ----------------------------------------------------------------------------------
    *_role("docker", [
        ("docker-source-snap", "docker_engine_source: snap",
         ["value of docker_engine_source must be one of: docker, distribution, got: snap"]),
        ("daemon-unknown-option", "docker_daemon_options: {no-such-option: true}",
         ["'no-such-option'", "is not a dockerd 20.10 configuration option", "docker_daemon_options"]),
        ("daemon-option-type", 'docker_daemon_options: {max-concurrent-downloads: "3"}',
         ["daemon.json option 'max-concurrent-downloads': must be a JSON integer"]),
        ("daemon-option-with-variable", "docker_daemon_options: {data-root: /data/docker}",
         ["docker_daemon_options sets 'data-root'; set it through docker_data_root instead"]),
        ("daemon-options-string", 'docker_daemon_options: "debug=true"',
         ["docker_daemon_options 'debug=true' is not a mapping (it is a string)"]),
        ("docker-data-root-relative", "docker_data_root: var/lib/docker",
         ["docker_data_root 'var/lib/docker' must be an absolute path"]),
        ("docker-mirror-with-path", "docker_registry_mirrors: [https://mirror.example.com/v2/library]",
         ["docker_registry_mirrors entry 'https://mirror.example.com/v2/library' must be a registry's root URL"]),
        ("docker-user-unknown", "docker_users: [nosuchuser]",
         ["docker_users names 'nosuchuser', who has no account on dp1"]),
        ("docker-cgroup-driver-choice", "docker_cgroup_driver: openrc",
         ["value of docker_cgroup_driver must be one of: systemd, cgroupfs, , got: openrc"]),
        ("docker-default-runtime-without-runtime", "{docker_nvidia_runtime: false, docker_nvidia_default_runtime: true}",
         ["docker_nvidia_default_runtime is true on dp1 but docker_nvidia_runtime is false"]),
        ("docker-toolkit-key-http", "docker_nvidia_repo_key_url: http://nvidia.github.io/libnvidia-container/gpgkey",
         ["key_url: 'http://nvidia.github.io/libnvidia-container/gpgkey' is plain http://", "docker_nvidia_repo_key_url"]),
        ("docker-toolkit-other-fingerprint", f"docker_nvidia_repo_key_fingerprint: {OTHER_FINGERPRINT}",
         [OTHER_FINGERPRINT, "docker_nvidia_repo_key_fingerprint"]),
    ]),
    # --- conda -----------------------------------------------------------------------------------
    *_role("conda", [
        ("conda-env-name", 'conda_environments: [{name: "train env", python: "3.11"}]',
         ["conda_environments: train env needs a name"]),
        ("conda-python-3.10-unquoted", "conda_environments: [{name: train, python: 3.10}]",
         ["conda_environments train: python holds 3.1 as a YAML number: quote it", "YAML reads 3.10 as 3.1"]),
        ("conda-default-env-unknown", "conda_default_env: train",
         ["conda_default_env (train) must be one of them"]),
        ("conda-platform-choice", "conda_platform: win-64",
         ["value of conda_platform must be one of: linux-64, linux-aarch64, linux-ppc64le, got: win-64"]),
        ("conda-environments-mapping", "conda_environments: {name: train, python: '3.11'}",
         ["conda_environments", "is not a list (it is a mapping)"]),
        ("conda-without-lock", "conda_environments: [{name: train, python: '3.11'}]",
         ["conda_lock_file", "conda-lock.yml does not exist: solve the environments first"]),
    ]),
    # --- preflight -------------------------------------------------------------------------------
    *_role("preflight", [
        ("preflight-unknown-role", "preflight_roles: [base, kubernetes-operator]",
         ["preflight_roles", "kubernetes-operator"]),
    ]),
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

    first, *others = sorted(CASES, key=lambda case: (case[0] != "timezone-unknown", case[0] not in SITE_WIDE))
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


def test_every_role_has_a_site_wide_case():
    """Each role's variables are refused at least once by site.yml on every node."""
    assert SITE_WIDE <= {case_id for case_id, *_ in CASES}
    assert {role for case_id, _, _, role in CASES if case_id in SITE_WIDE} == set(CONCERN_PLAYBOOK)


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
    # Never a Jinja or loop error that names no variable, nor the 200 kB value echoed back.
    for generic in ("can only concatenate", "object has no attribute", "Invalid data passed to 'loop'",
                    "Error while resolving value", "A" * 1000):
        assert generic not in result.output, (generic, tail)
