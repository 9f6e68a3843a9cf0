#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module gpu_facts: collect a node's GPU stack as facts."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpu_facts
short_description: Collect a GPU node's stack (driver, CUDA, NCCL, Docker, conda, network) as facts
description:
  - Gathers the raw outputs that describe a GPU node's software stack into a
    set of named texts, a I(support bundle), and analyses them into the
    C(gpu_facts) fact with Lockstep's parsers.
  - In live mode (the default) it runs the commands and reads the files listed
    below on the node. With O(from_dir) it reads a saved bundle instead, so the
    same analysis runs offline on a bundle fetched from a node (or on test data).
  - A component that is not installed is reported absent (C(present=false),
    values null); the module never fails because something is missing.
  - "A source that exists but cannot be read (a command that fails or times out,
    output that does not parse) is recorded in C(errors) under its bundle file
    name, and the sections built from it become C({\"error\": \"<file>: <message>\"});
    the other sections still fill."
  - "Bundle files (live source in brackets):
    C(nvidia-smi-q-x.xml) [C(nvidia-smi -q -x)];
    C(proc-driver-nvidia-version.txt) [C(/proc/driver/nvidia/version)];
    C(nvcc-version.txt) [C(nvcc --version), C(/usr/local/cuda/bin/nvcc) first, else nvcc on PATH];
    C(ptxas-version.txt) [C(ptxas --version), same lookup];
    C(cuda-default.txt) [target of the C(/usr/local/cuda) link, as C(readlink -f) prints it];
    C(cuda-version-<X.Y>.json) [C(/usr/local/cuda-X.Y/version.json) of every installed
    C(/usr/local/cuda-X.Y)];
    C(nccl.h) [first of C(/usr/include/nccl.h), C(/usr/local/cuda/include/nccl.h)];
    C(ldconfig-p.txt) [C(ldconfig -p)];
    C(dpkg-query.txt) [C(dpkg-query -W -f '${Package}\\t${Version}\\t${db:Status-Abbrev}\\n')]
    or, where there is no dpkg, C(rpm-qa.txt)
    [C(rpm -qa --qf '%{NAME}\\t%{EPOCH}:%{VERSION}-%{RELEASE}\\tii \\n')];
    C(os-release) [C(/etc/os-release), else C(/usr/lib/os-release)];
    C(uname-r.txt) [C(uname -r)];
    C(docker-info.json) [C(docker info --format '{{json .}}')];
    C(containerd-version.txt) [C(containerd --version)];
    C(nvidia-ctk-version.txt) [C(nvidia-ctk --version)];
    C(ibstat.txt) [C(ibstat), only when C(/sys/class/infiniband) lists a device];
    C(net-interfaces.json) [built from C(/sys/class/net/<if>/{mtu,speed,operstate,device})];
    C(names.json) [only with O(resolve): the node's resolver (C(getaddrinfo), as C(getent ahostsv4))
    for every name of O(resolve), and the node's own address];
    C(nccl.conf) [O(nccl_conf)];
    C(slurm.json) [SHA-256 digests of O(munge_key) and O(slurm_conf), never the key itself];
    C(gpustack.json) [the C(Version:) of C(<gpustack_venv>/lib/python3*/site-packages/gpustack-*.dist-info/METADATA)
    and every distribution's name and version from that site-packages' C(*.dist-info) directory names,
    only when O(gpustack_venv) exists];
    C(storage.json) [the NFS entries of C(/etc/fstab) and C(/proc/self/mounts), the NFS exports, whether an NFS server runs];
    C(conda-envs.json) [built from the environments under O(conda_envs_dirs)];
    C(collect-errors.json) [C({file: message}) for every source that was there but failed]."
  - "C(net-interfaces.json) is C({name: {mtu, speed_mbps, state, virtual}}); C(speed_mbps) is null
    when the kernel reports none (-1 or unreadable); C(virtual) is true without a C(device) link."
  - "C(names.json) is C({address, address_error, resolves: {name: [IPv4 address, ...] | {error}}}):
    C(address) is O(address) when given, else the source address of the node's IPv4 default route
    read now (what Ansible's C(default_ipv4) fact names); C(address_error) says why there is none."
  - "C(conda-envs.json) is C({env name: {prefix, python, torch, deepspeed, torch_cuda, torch_nccl,
    torch_cudnn, packages, packages_sha256, lock_sha256, unreadable_records}}) for every directory directly under
    O(conda_envs_dirs) that holds C(conda-meta/). C(python) comes from the C(conda-meta) record
    of C(python), else from the C(lib/pythonX.Y) directory name; C(torch) and C(deepspeed) from
    the C(Version:) of their C(site-packages/*.dist-info/METADATA), else from the conda record
    (C(pytorch)/C(torch), C(deepspeed)). C(torch_cuda) is C(torch.version.cuda), the CUDA build
    of that torch, read from C(torch/version.py) (null for a CPU build); C(torch_nccl) and
    C(torch_cudnn) the versions of the NCCL and cuDNN wheels torch loads
    (C(nvidia-nccl-cu12)/C(-cu11), C(nvidia-cudnn-cu12)/C(-cu11)). No interpreter is run. C(packages_sha256) is the
    SHA-256 of the sorted, de-duplicated lines C(name==version) (one per line, each ending in a
    newline; names normalised as in PEP 503) of every C(conda-meta/*.json) record and every
    C(site-packages/*.dist-info) directory. C(lock_sha256) is the first word of
    C(conda-meta/lockstep-lock.sha256) (written by Lockstep's conda role), null when that file
    is absent."
  - Every command runs with C(LC_ALL=C) through the coreutils C(timeout) binary when the node has
    one (O(command_timeout) seconds), so a hung C(nvidia-smi) or Docker daemon cannot hang the play.
author:
  - Lockstep contributors (@lockstep)
version_added: "0.1.0"
options:
  from_dir:
    description:
      - Analyse the support bundle in this directory (on the node the task runs on) instead of
        collecting live. Files with other names are ignored; a bundle file that is missing is an
        absent source.
    type: path
  save_to:
    description:
      - In live mode, also write the collected raw texts into this directory (created with mode
        0755; files mode 0644), so that a play can fetch them as a support bundle.
      - Reports C(changed) only when a file's content differs from what is there. For
        C(nvidia-smi-q-x.xml) and C(docker-info.json), which change on every call (timestamps,
        temperatures, counters), the parsed stack facts are compared rather than the bytes.
      - Bundle files whose source is now absent are removed from the directory; other files in it
        are never touched. In check mode nothing is written.
    type: path
  conda_envs_dirs:
    description:
      - Directories whose subdirectories holding C(conda-meta/) are conda environments.
    type: list
    elements: path
    default: [/opt/conda/envs]
  interfaces:
    description:
      - Network interfaces to report. Default all interfaces except C(lo). A listed interface
        that does not exist is left out.
    type: list
    elements: str
  packages:
    description:
      - Installed package names (dpkg or rpm) to report under C(packages). A name with C(*), C(?) or
        C([) is an fnmatch pattern.
    type: list
    elements: str
    default: []
  nccl_conf:
    description:
      - NCCL's configuration file. Facts keep only its SHA-256 and its C(KEY=VALUE) settings.
    type: path
    default: /etc/nccl.conf
  munge_key:
    description:
      - munge's key. Facts keep only its SHA-256 (C(slurm.munge_key_sha256)), so that a node whose key
        differs is found; the key never enters a bundle or the facts.
    type: path
    default: /etc/munge/munge.key
  slurm_conf:
    description:
      - Slurm's configuration file. Facts keep only its SHA-256 (C(slurm.conf_sha256)).
    type: path
    default: /etc/slurm/slurm.conf
  resolve:
    description:
      - Host names to resolve on the node now, with its own resolver (C(/etc/hosts), then DNS, as
        C(/etc/nsswitch.conf) says), IPv4 only. Written to C(names.json); C(verify.yml) passes
        every cluster node so that a stale address in any node's C(/etc/hosts) is found.
    type: list
    elements: str
    default: []
  address:
    description:
      - This node's cluster address (C(base_node_address)), recorded in C(names.json) with
        O(resolve). Default the source address of the IPv4 default route, read now.
    type: str
  gpustack_venv:
    description:
      - GPUStack's virtual environment (role gpustack's C(gpustack_venv)). When it exists, GPUStack's version
        is read from the C(Version:) of its C(gpustack-*.dist-info/METADATA) (no interpreter is run); when it
        does not, there is no C(gpustack) component. A venv without exactly one GPUStack in it is an error of
        C(gpustack.json).
    type: path
    default: /opt/gpustack/venv
  command_timeout:
    description:
      - Seconds each command may run before C(timeout) stops it (then recorded in C(errors)).
        C(0) runs commands without the C(timeout) wrapper.
    type: int
    default: 60
attributes:
  check_mode:
    support: full
    description: Collects and analyses as usual; O(save_to) writes nothing.
  diff_mode:
    support: none
    description: Changes nothing, so there is nothing to show as a difference.
  facts:
    support: full
    description: Returns everything it read as the fact C(gpu_facts) (C(ansible_facts.gpu_facts)).
notes:
  - Standard library only on the node; Python 3.9 or later.
  - Only the node is read; nothing is installed or started.
"""

EXAMPLES = r"""
- name: Collect the GPU stack
  lockstep.gpu.gpu_facts:

- name: Collect, and keep a support bundle on the node
  lockstep.gpu.gpu_facts:
    save_to: /var/tmp/lockstep-bundle
    packages: [libnccl2, "nvidia-driver-*"]
    interfaces: [ib0, eth0]

- name: List the bundle
  ansible.builtin.find:
    paths: /var/tmp/lockstep-bundle
  register: bundle

- name: Fetch it to the controller
  ansible.builtin.fetch:
    src: "{{ item.path }}"
    dest: "{{ playbook_dir }}/bundles/{{ inventory_hostname }}/"
    flat: true
  loop: "{{ bundle.files }}"

- name: Analyse a fetched bundle on the controller
  lockstep.gpu.gpu_facts:
    from_dir: "{{ playbook_dir }}/bundles/{{ inventory_hostname }}"
  delegate_to: localhost

- name: Compare all nodes
  ansible.builtin.debug:
    msg: >-
      {{ dict(ansible_play_hosts | zip(ansible_play_hosts
         | map('extract', hostvars, 'gpu_facts') | map('lockstep.gpu.components')))
         | lockstep.gpu.drift }}
  run_once: true
"""

RETURN = r"""
gpu_facts:
  description:
    - The facts (also set as the C(gpu_facts) host fact).
    - >-
      A section built from a source that could not be read is
      C({"error": "<bundle file>: <message>"}) instead of the dict described here.
  returned: always
  type: dict
  contains:
    os:
      description: >-
        C(distribution) (os-release NAME without " GNU/Linux"), C(id), C(version) (VERSION_ID),
        C(pretty_name), C(kernel) (uname -r).
      type: dict
      returned: always
      sample: {"distribution": "Debian", "id": "debian", "version": "12",
               "pretty_name": "Debian GNU/Linux 12 (bookworm)", "kernel": "6.1.0-18-amd64"}
    driver:
      description:
        - >-
          C(present); C(loaded) (nvidia-smi answered or /proc/driver/nvidia/version exists);
          C(version); C(cuda_version) (the CUDA version the driver supports, from nvidia-smi);
          C(source) (C(nvidia-smi), C(proc) or C(package), where C(version) came from, in that
          order of preference); C(kernel_module), C(kernel_module_version) and
          C(open_kernel_module) from /proc; C(packages) ({name: version} of the installed
          nvidia-driver*, cuda-drivers*, libnvidia-compute*, nvidia-kernel-*, kmod-nvidia*,
          nvidia-fabricmanager*, nvidia-fabric-manager*, nvidia-smi packages).
        - >-
          An error when nvidia-smi, /proc/driver/nvidia/version or the package list is
          unreadable.
      type: dict
      returned: always
      sample: {"present": true, "loaded": true, "version": "535.54.03", "cuda_version": "12.2",
               "source": "nvidia-smi", "kernel_module": null, "kernel_module_version": null,
               "open_kernel_module": null, "packages": {}}
    gpus:
      description: >-
        C(present) (nvidia-smi output was there), C(count), C(models) (sorted unique names),
        C(list) (per GPU C(index) (output order), C(minor_number), C(name), C(uuid), C(serial),
        C(pci_bus_id), C(memory_total_mib), C(persistence_mode), C(ecc_mode), C(mig_mode),
        C(mig_devices), C(vbios_version)), C(warnings) (e.g. a GPU UUID listed twice, attached_gpus disagreeing with
        the GPUs listed). An error when nvidia-smi output is unreadable.
      type: dict
      returned: always
    cuda:
      description: >-
        C(present); C(default) ("12.1", from the C(cuda-X.Y) directory /usr/local/cuda points
        to); C(default_path); C(default_version) (the default toolkit's full version from its
        version.json); C(toolkits) ({"12.1": "12.1.1"}, one per cuda-version-X.Y.json);
        C(nvcc) and C(ptxas) ("12.1.105"); C(cudart_soname) (libcudart.so.N sonames in the
        ldconfig cache, comma-joined); C(packages) (cuda, cuda-X-Y, cuda-toolkit*,
        cuda-runtime*, cuda-nvcc*, cuda-cudart*, cuda-compiler*, cuda-libraries*,
        cuda-command-line-tools*).
      type: dict
      returned: always
    nccl:
      description: >-
        C(present), C(package) (libnccl2 or libnccl version), C(dev_package) (libnccl-dev or
        libnccl-devel), C(header) (the version nccl.h defines, e.g. "2.18.1"), C(soname)
        (libnccl.so.N in the ldconfig cache).
      type: dict
      returned: always
    cudnn:
      description: >-
        C(present), C(package) (versions of the runtime packages libcudnnN, libcudnnN-cuda-M,
        cudnnN..., comma-joined), C(packages) (every libcudnn* and cudnn* package), C(soname)
        (libcudnn.so.N).
      type: dict
      returned: always
    docker:
      description: >-
        C(present) (the daemon answered docker info), C(server_version), C(default_runtime),
        C(runtimes) (sorted), C(cgroup_driver), C(cgroup_version), C(storage_driver),
        C(registry_mirrors) (in configured order), C(containerd) (containerd --version),
        C(nvidia_container_toolkit) (nvidia-ctk --version, else the upstream version of the
        nvidia-container-toolkit package), C(packages). A docker CLI whose daemon does not
        answer is an error of C(docker-info.json).
      type: dict
      returned: always
    conda:
      description: >-
        C(envs), {name: {python, torch, deepspeed, torch_cuda, torch_nccl, torch_cudnn, packages_sha256,
        lock_sha256, prefix,
        packages}}; see C(conda-envs.json) in the description.
      type: dict
      returned: always
    network:
      description: >-
        C(interfaces) ({name: {mtu, speed_mbps, state, virtual}}) and C(rdma) (the CAs ibstat
        lists, each with C(name), C(ca_type), C(firmware), C(hardware), GUIDs and C(ports),
        a list of {port, state, physical_state, rate, link_layer, ...}). Each of the two can be
        an error on its own. With O(resolve), also C(names): C({address, address_error, resolves}) as in
        C(names.json), or an error.
      type: dict
      returned: always
    nccl_conf:
      description: C(present), C(sha256) of the file's bytes, C(settings) ({KEY, VALUE}).
      type: dict
      returned: always
    slurm:
      description: >-
        C(present) (either file exists), C(munge_key_sha256) and C(conf_sha256): SHA-256 of the bytes of
        O(munge_key) and O(slurm_conf), null for a file that is absent.
      type: dict
      returned: always
    storage:
      description: >-
        NFS shared storage (C(storage.json)): C(present), C(mounts) ({mount point: {fstab, mounted}}, each
        null or {source, fstype, options}: the NFS entry of C(/etc/fstab) and the live mount of
        C(/proc/self/mounts)), C(exports) ([{path, server, clients}] from C(/etc/exports),
        C(/etc/exports.d/*.exports) and nfs-ganesha's C(/etc/ganesha/ganesha.conf); server
        C(nfs-kernel-server) or C(nfs-ganesha)) and C(server_running) (an nfsd or ganesha.nfsd process runs).
      type: dict
      returned: always
    gpustack:
      description: >-
        C(present) (O(gpustack_venv) exists and holds GPUStack), C(version) (its METADATA's C(Version:), e.g.
        C(2.3.0)), C(venv), C(packages) (how many distributions its site-packages holds) and
        C(packages_sha256) (the SHA-256 of their sorted lines C(name==version), each ending in a newline, names
        as PEP 503: GPUStack's whole closure, compared by verify as C(gpustack.packages_sha256); null for a
        bundle saved without the list); an error when the venv holds no or several GPUStack dist-info or its
        METADATA is unreadable.
      type: dict
      returned: always
      sample: {"present": true, "version": "2.3.0", "venv": "/opt/gpustack/venv", "packages": 152,
               "packages_sha256": "5c0d1f7e3b1f9d4c2e8a6b0f7d3c1e9a8b7f6e5d4c3b2a1908f7e6d5c4b3a291"}
    packages:
      description: >-
        {name: version} of the installed packages named in O(packages).
      type: dict
      returned: always
    errors:
      description: >-
        {bundle file name: message}; every message starts with the file name.
      type: dict
      returned: always
      sample: {"nvidia-smi-q-x.xml": "nvidia-smi-q-x.xml: malformed or truncated nvidia-smi XML
               (no element found: line 190, column 0)"}
ansible_facts:
  description: C(gpu_facts), the same dict as above.
  returned: always
  type: dict
bundle:
  description: >-
    With O(save_to): C(path), C(files) (every file the bundle holds), C(written) (files
    written, or that would be in check mode) and C(removed) (stale bundle files removed,
    or that would be).
  returned: when save_to is set
  type: dict
  sample: {"path": "/var/tmp/lockstep-bundle", "files": ["dpkg-query.txt", "os-release"],
           "written": ["os-release"], "removed": []}
"""

import os  # noqa: E402  (Ansible modules import after their documentation)

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.lockstep.gpu.plugins.module_utils.analyse import analyse  # noqa: E402
from ansible_collections.lockstep.gpu.plugins.module_utils.bundle import collect_from_dir, save_bundle  # noqa: E402
from ansible_collections.lockstep.gpu.plugins.module_utils.collect import Runner, collect_live  # noqa: E402


class ModuleRunner(Runner):
    """Runs commands through AnsibleModule (run_command, get_bin_path)."""

    def __init__(self, module):
        self.module = module

    def which(self, name, opt_dirs=()):
        return self.module.get_bin_path(name, opt_dirs=list(opt_dirs))

    def run(self, argv):
        return self.module.run_command(
            argv,
            environ_update={"LC_ALL": "C", "LANG": "C"},
            handle_exceptions=False,
        )


def main():
    module = AnsibleModule(
        argument_spec=dict(
            from_dir=dict(type="path"),
            save_to=dict(type="path"),
            conda_envs_dirs=dict(type="list", elements="path", default=["/opt/conda/envs"]),
            interfaces=dict(type="list", elements="str"),
            packages=dict(type="list", elements="str", default=[]),
            nccl_conf=dict(type="path", default="/etc/nccl.conf"),
            munge_key=dict(type="path", default="/etc/munge/munge.key", no_log=False),
            slurm_conf=dict(type="path", default="/etc/slurm/slurm.conf"),
            command_timeout=dict(type="int", default=60),
            resolve=dict(type="list", elements="str", default=[]),
            address=dict(type="str"),
            gpustack_venv=dict(type="path", default="/opt/gpustack/venv"),
        ),
        mutually_exclusive=[("from_dir", "save_to")],
        supports_check_mode=True,
    )
    params = module.params
    if params["command_timeout"] < 0:
        module.fail_json(msg="command_timeout must be 0 or more seconds")

    result = {"changed": False}
    if params["from_dir"]:
        if not os.path.isdir(params["from_dir"]):
            module.fail_json(msg=f"from_dir {params['from_dir']} is not a directory")
        try:
            raw = collect_from_dir(params["from_dir"])
        except OSError as exc:
            module.fail_json(msg=f"cannot read the bundle in {params['from_dir']}: {exc}")
    else:
        raw = collect_live(
            ModuleRunner(module),
            conda_envs_dirs=params["conda_envs_dirs"],
            interfaces=params["interfaces"],
            nccl_conf=params["nccl_conf"],
            munge_key=params["munge_key"],
            slurm_conf=params["slurm_conf"],
            timeout=params["command_timeout"],
            resolve=params["resolve"],
            address=params["address"],
            gpustack_venv=params["gpustack_venv"],
        )

    facts = analyse(raw, packages=params["packages"])

    if params["save_to"]:
        try:
            saved = save_bundle(raw, params["save_to"], check_mode=module.check_mode)
        except (OSError, ValueError) as exc:
            module.fail_json(msg=f"cannot save the bundle to {params['save_to']}: {exc}",
                             gpu_facts=facts)
        result["changed"] = saved["changed"]
        result["bundle"] = {
            "path": params["save_to"],
            "written": saved["written"],
            "removed": saved["removed"],
            "files": saved["files"],
        }

    result["gpu_facts"] = facts
    result["ansible_facts"] = {"gpu_facts": facts}
    module.exit_json(**result)


if __name__ == "__main__":
    main()
