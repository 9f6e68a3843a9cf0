# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Live collection: run the commands and read the files that describe a
node's GPU stack, into a support bundle (``{bundle file name: text or None}``).

A command that is installed but fails (non-zero exit, timeout) is recorded in
the bundle file ``collect-errors.json`` (``{bundle file name: message}``), so
that a bundle analysed offline gives the same facts, errors included, as the
live run that wrote it. :mod:`analyse` turns a bundle into facts.
Standard library only: this runs on managed nodes (Python 3.9+).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import socket

from ansible_collections.lockstep.gpu.plugins.module_utils.bundle import (
    COLLECT_ERRORS,
    CONDA,
    CONTAINERD,
    CUDA_DEFAULT,
    DOCKER,
    DPKG,
    DPKG_FORMAT,
    GPUSTACK,
    IBSTAT,
    LDCONFIG,
    NAMES,
    NCCL_CONF,
    NCCL_H,
    NET,
    NVCC,
    NVIDIA_CTK,
    NVIDIA_SMI,
    NVIDIA_SMI_NOT_LOADED,
    OS_RELEASE,
    PROC_DRIVER,
    PTXAS,
    RPM,
    RPM_FORMAT,
    SLURM,
    STORAGE,
    UNAME,
    empty_raw,
    read_file,
    read_short,
)
from ansible_collections.lockstep.gpu.plugins.module_utils.conda import build_conda_envs
from ansible_collections.lockstep.gpu.plugins.module_utils.gpustack import GPUSTACK_VENV, build_gpustack
from ansible_collections.lockstep.gpu.plugins.module_utils.parsing import int_or_none
from ansible_collections.lockstep.gpu.plugins.module_utils.slurm import MUNGE_KEY, SLURM_CONF, build_slurm
from ansible_collections.lockstep.gpu.plugins.module_utils.storage import build_storage
from ansible_collections.lockstep.gpu.plugins.module_utils.system import drop_stale_ldconfig

#: Where the live collector looks; tests point these elsewhere.
DEFAULT_PATHS = {
    "proc_driver": "/proc/driver/nvidia/version",
    "cuda_link": "/usr/local/cuda",
    "cuda_root": "/usr/local",
    "nccl_headers": ("/usr/include/nccl.h", "/usr/local/cuda/include/nccl.h"),
    "os_release": ("/etc/os-release", "/usr/lib/os-release"),
    "sys_class_net": "/sys/class/net",
    "sys_class_infiniband": "/sys/class/infiniband",
}


class Runner:
    """What :func:`collect_live` needs from its caller (the module adapts
    AnsibleModule to it; tests pass a fake)."""

    def which(self, name: str, opt_dirs=()):  # pragma: no cover - interface
        """Absolute path of executable ``name`` (``opt_dirs`` first), or None."""
        raise NotImplementedError

    def run(self, argv: list):  # pragma: no cover - interface
        """Run ``argv`` (no shell); return ``(rc, stdout, stderr)``."""
        raise NotImplementedError


def first_line(*texts) -> str:
    for text in texts:
        for line in (text or "").splitlines():
            if line.strip():
                return line.strip()
    return "no output"


def collect_live(
    runner,
    conda_envs_dirs=("/opt/conda/envs",),
    interfaces=None,
    nccl_conf="/etc/nccl.conf",
    timeout=60,
    paths=None,
    resolve=(),
    address=None,
    munge_key=MUNGE_KEY,
    slurm_conf=SLURM_CONF,
    gpustack_venv=GPUSTACK_VENV,
) -> dict:
    """Gather the raw texts on this node; see the module documentation for
    what each bundle file holds."""
    where = dict(DEFAULT_PATHS)
    where.update(paths or {})
    raw = empty_raw()
    problems = {}
    timeout_bin = runner.which("timeout") if timeout else None

    def command(name, tool, args, opt_dirs=(), absent_rc=()):
        exe = runner.which(tool, opt_dirs)
        if not exe:
            return
        shown = " ".join([tool] + [shlex.quote(a) for a in args])
        argv = [exe] + list(args)
        if timeout_bin:
            argv = [timeout_bin, "-k", "5", str(timeout)] + argv
        try:
            rc, out, err = runner.run(argv)
        except OSError as exc:
            problems[name] = f"`{shown}` could not be run: {exc}"
            return
        if timeout_bin and rc in (124, 137):
            problems[name] = f"`{shown}` did not finish within {timeout} s and was killed"
        elif rc in absent_rc:
            return
        elif rc != 0:
            problems[name] = f"`{shown}` exited with status {rc}: {first_line(err, out)}"
        else:
            raw[name] = out

    def read(name, candidates):
        if isinstance(candidates, str):
            candidates = (candidates,)
        for path in candidates:
            try:
                text = read_file(path)
            except OSError as exc:
                problems[name] = f"cannot read {path}: {exc.strerror or exc}"
                return
            if text is not None:
                raw[name] = text
                return

    # nvidia-smi(1): exit status 9 = "NVIDIA driver is not loaded" (installed,
    # module not loaded: before the reboot, or in a container). That is no
    # unreadable source: the driver reads as not loaded, its version comes
    # from the packages.
    command(NVIDIA_SMI, "nvidia-smi", ["-q", "-x"], absent_rc=(NVIDIA_SMI_NOT_LOADED,))
    read(PROC_DRIVER, where["proc_driver"])

    cuda_bin = os.path.join(where["cuda_link"], "bin")
    command(NVCC, "nvcc", ["--version"], (cuda_bin,))
    command(PTXAS, "ptxas", ["--version"], (cuda_bin,))
    if os.path.exists(where["cuda_link"]):
        raw[CUDA_DEFAULT] = os.path.realpath(where["cuda_link"]) + "\n"
    try:
        entries = sorted(os.listdir(where["cuda_root"]))
    except OSError:
        entries = []
    for entry in entries:
        match = re.match(r"^cuda-(\d+\.\d+)$", entry)
        if match and os.path.isdir(os.path.join(where["cuda_root"], entry)):
            name = f"cuda-version-{match.group(1)}.json"
            read(name, os.path.join(where["cuda_root"], entry, "version.json"))
    read(NCCL_H, where["nccl_headers"])
    command(LDCONFIG, "ldconfig", ["-p"])
    if raw.get(LDCONFIG):
        raw[LDCONFIG] = drop_stale_ldconfig(raw[LDCONFIG], os.path.exists)

    if runner.which("dpkg-query"):
        command(DPKG, "dpkg-query", ["-W", "-f", DPKG_FORMAT])
    else:
        command(RPM, "rpm", ["-qa", "--qf", RPM_FORMAT])

    read(OS_RELEASE, where["os_release"])
    raw[UNAME] = os.uname().release + "\n"

    command(DOCKER, "docker", ["info", "--format", "{{json .}}"])
    command(CONTAINERD, "containerd", ["--version"])
    command(NVIDIA_CTK, "nvidia-ctk", ["--version"])
    # ibstat fails when the node has no RDMA device; ask it only when the
    # kernel lists one, so that "no InfiniBand" reads as absent.
    try:
        has_rdma = bool(os.listdir(where["sys_class_infiniband"]))
    except OSError:
        has_rdma = False
    if has_rdma:
        command(IBSTAT, "ibstat", [])

    raw[NET] = build_net_interfaces(where["sys_class_net"], interfaces)
    if resolve:
        raw[NAMES] = build_names(resolve, address)
    read(NCCL_CONF, nccl_conf)
    # Digests only: the munge key itself never enters a bundle.
    raw[SLURM], problem = build_slurm(munge_key, slurm_conf)
    if problem:
        problems[SLURM] = problem
    raw[STORAGE], problem = build_storage(**where.get("storage", {}))
    if problem:
        problems[STORAGE] = problem
    raw[GPUSTACK], problem = build_gpustack(gpustack_venv)
    if problem:
        problems[GPUSTACK] = problem
    raw[CONDA] = build_conda_envs(conda_envs_dirs)

    if problems:
        raw[COLLECT_ERRORS] = json.dumps(problems, indent=2, sort_keys=True) + "\n"
    return raw


#: The destination Ansible's default_ipv4 fact asks the kernel about
#: (`ip -4 route get 8.8.8.8`): connecting a UDP socket to it sends nothing
#: and makes the kernel pick the same source address, the one /etc/hosts names.
_ROUTE_PROBE = ("8.8.8.8", 53)


def default_route_address(probe=_ROUTE_PROBE):
    """``(address, None)`` of the default route's source, or ``(None, reason)``."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sock.connect(probe)
        return sock.getsockname()[0], None
    except OSError as exc:
        return None, f"no IPv4 default route ({exc.strerror or exc}): set the node's address"
    finally:
        sock.close()


def resolve_ipv4(name, resolver=socket.getaddrinfo):
    """Sorted IPv4 addresses the node's resolver (nsswitch: /etc/hosts, DNS)
    gives for ``name``, or ``{"error": reason}``."""
    try:
        found = resolver(name, None, socket.AF_INET, socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        return {"error": str(getattr(exc, "strerror", None) or exc)}
    return sorted({entry[4][0] for entry in found})


def build_names(resolve, address=None, route_address=default_route_address, resolver=socket.getaddrinfo):
    """JSON text ``{"address", "address_error", "resolves": {name: [ipv4] | {"error"}}}``.

    ``address`` is this node's cluster address as declared (base_node_address);
    without it, the source address of the default route, read now.
    """
    error = None
    if not address:
        address, error = route_address()
    result = {
        "address": address,
        "address_error": error,
        "resolves": {name: resolve_ipv4(name, resolver) for name in sorted(set(resolve))},
    }
    return json.dumps(result, indent=2, sort_keys=True) + "\n"


def build_net_interfaces(sys_class_net: str, interfaces=None):
    """JSON text ``{name: {mtu, speed_mbps, state, virtual}}`` from sysfs.

    ``interfaces`` None means every interface except ``lo``; a listed
    interface that does not exist is left out. ``speed_mbps`` is null when
    the kernel cannot say (virtual or down links print -1 or fail);
    ``virtual`` is true when the interface has no backing device.
    """
    try:
        present = sorted(os.listdir(sys_class_net))
    except OSError:
        return None
    names = [n for n in present if n != "lo"] if interfaces is None else [
        n for n in interfaces if n in present
    ]
    result = {}
    for name in names:
        base = os.path.join(sys_class_net, name)
        speed = int_or_none(read_short(os.path.join(base, "speed")))
        result[name] = {
            "mtu": int_or_none(read_short(os.path.join(base, "mtu"))),
            "speed_mbps": speed if speed is not None and speed > 0 else None,
            "state": read_short(os.path.join(base, "operstate")),
            "virtual": not os.path.exists(os.path.join(base, "device")),
        }
    return json.dumps(result, indent=2, sort_keys=True) + "\n"
