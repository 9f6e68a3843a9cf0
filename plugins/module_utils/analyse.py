# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Analyse a support bundle into the ``gpu_facts`` dict.

:func:`analyse` parses every source of the bundle once (:class:`Sources`),
then builds each section of the facts with its own function. A source that
cannot be read lands in ``errors[<file name>]`` and turns the sections built
from it into ``{"error": "<file name>: <message>"}``; the other sections still
fill. See the gpu_facts module's RETURN for the layout. Standard library
only: this runs on managed nodes (Python 3.9+).
"""

from __future__ import annotations

import fnmatch
import re

from ansible_collections.lockstep.gpu.plugins.module_utils.bundle import (
    COLLECT_ERRORS,
    CONDA,
    CONTAINERD,
    CUDA_DEFAULT,
    CUDA_VERSION_FILE,
    DOCKER,
    DPKG,
    GPUSTACK,
    IBSTAT,
    LDCONFIG,
    NCCL_CONF,
    NCCL_H,
    NAMES,
    NET,
    NVCC,
    NVIDIA_CTK,
    NVIDIA_SMI,
    OS_RELEASE,
    PROC_DRIVER,
    PTXAS,
    RPM,
    SLURM,
    STORAGE,
    UNAME,
    printable,
)
from ansible_collections.lockstep.gpu.plugins.module_utils.conda import parse_conda_envs
from ansible_collections.lockstep.gpu.plugins.module_utils.gpustack import packages_sha256, parse_gpustack
from ansible_collections.lockstep.gpu.plugins.module_utils.nccl import parse_nccl_header
from ansible_collections.lockstep.gpu.plugins.module_utils.nccl_conf import parse_nccl_conf
from ansible_collections.lockstep.gpu.plugins.module_utils.nvidia import (
    parse_cuda_version_json,
    parse_nvcc_version,
    parse_nvidia_smi_xml,
    parse_proc_driver_version,
    parse_ptxas_version,
)
from ansible_collections.lockstep.gpu.plugins.module_utils.parsing import ParseError
from ansible_collections.lockstep.gpu.plugins.module_utils.rdma import parse_ibstat
from ansible_collections.lockstep.gpu.plugins.module_utils.slurm import parse_slurm
from ansible_collections.lockstep.gpu.plugins.module_utils.storage import parse_storage
from ansible_collections.lockstep.gpu.plugins.module_utils.system import (
    parse_collect_errors,
    parse_containerd_version,
    parse_cuda_default,
    parse_docker_info,
    parse_ldconfig,
    parse_names,
    parse_net_interfaces,
    parse_nvidia_ctk_version,
    parse_os_release,
    parse_package_list,
    parse_uname,
)

DRIVER_PACKAGES = (
    "nvidia-driver*",
    "cuda-drivers*",
    "libnvidia-compute*",
    "nvidia-kernel-*",
    "kmod-nvidia*",
    "nvidia-fabricmanager*",
    "nvidia-fabric-manager*",
    "nvidia-smi",
)
CUDA_PACKAGES = (
    "cuda",
    "cuda-[0-9]*",
    "cuda-toolkit*",
    "cuda-runtime*",
    "cuda-nvcc*",
    "cuda-cudart*",
    "cuda-compiler*",
    "cuda-libraries*",
    "cuda-command-line-tools*",
)
CUDNN_PACKAGES = ("libcudnn*", "cudnn*")
DOCKER_PACKAGES = (
    "docker-ce",
    "docker-ce-cli",
    "docker.io",
    "containerd",
    "containerd.io",
    "nvidia-container-toolkit*",
    "libnvidia-container*",
)
GPU_FIELDS = (
    "index",
    "minor_number",
    "name",
    "uuid",
    "serial",
    "pci_bus_id",
    "memory_total_mib",
    "persistence_mode",
    "ecc_mode",
    "mig_mode",
    "mig_devices",
    "vbios_version",
)
_CUDNN_RUNTIME = re.compile(r"^(lib)?cudnn\d*(-cuda-\d+)?$")
_DRIVER_VERSION = re.compile(r"^\d{3}\.\d+(\.\d+)?$")


def matching(packages, patterns) -> dict:
    """The packages whose names match any of the fnmatch ``patterns``."""
    return {
        name: version
        for name, version in sorted(packages.items())
        if any(fnmatch.fnmatchcase(name, p) for p in patterns)
    }


def upstream_version(pkg_version):
    """"1:535.54.03-0ubuntu1" -> "535.54.03" (epoch and revision dropped)."""
    if not pkg_version:
        return None
    version = pkg_version.split(":", 1)[1] if re.match(r"^\d+:", pkg_version) else pkg_version
    return version.rsplit("-", 1)[0] if "-" in version else version


def _sonames(libs, pattern):
    found = sorted(name for name in libs if re.match(pattern, name))
    return ", ".join(found) if found else None


def _join(values):
    values = [v for v in values if v]
    return ", ".join(values) if values else None


class Sources:
    """Every source of a bundle parsed once; unreadable ones in ``errors``."""

    def __init__(self, raw: dict):
        self.raw = raw
        self.texts = {k: printable(v) for k, v in raw.items() if v is not None}
        self.errors = {}
        if COLLECT_ERRORS in self.texts:
            try:
                for name, message in parse_collect_errors(self.texts[COLLECT_ERRORS], COLLECT_ERRORS).items():
                    self.errors[name] = f"{name}: {message}"
            except ParseError as exc:
                self.errors[COLLECT_ERRORS] = str(exc)
        self.pkgdb = DPKG if (DPKG in self.texts or DPKG in self.errors) else RPM
        self.cuda_files = sorted(
            {n for n in list(self.texts) + list(self.errors) if CUDA_VERSION_FILE.match(n)},
            key=lambda n: [int(x) for x in CUDA_VERSION_FILE.match(n).group(1).split(".")],
        )

    def parse(self, name, parser, exact=False):
        """The parsed source, or None when it is absent or unreadable."""
        if name in self.errors or name not in self.texts:
            return None
        try:
            return parser(self.raw[name] if exact else self.texts[name], name)
        except ParseError as exc:
            self.errors[name] = str(exc)
            return None
        # A parser's own bug on input it did not foresee makes this one source
        # unreadable, named, instead of failing the whole collection.
        except Exception as exc:  # pylint: disable=broad-exception-caught
            self.errors[name] = f"{name}: could not be parsed ({type(exc).__name__}: {exc})"
            return None

    def failed(self, sources):
        """``{"error": ...}`` of the first unreadable source among ``sources``."""
        for source in sources:
            if source in self.errors:
                return {"error": self.errors[source]}
        return None


def os_section(src, os_release, kernel):
    osr = os_release or {}
    name = osr.get("NAME")
    if name and name.endswith(" GNU/Linux"):
        name = name[: -len(" GNU/Linux")]
    return src.failed([OS_RELEASE, UNAME]) or {
        "distribution": name,
        "id": osr.get("ID"),
        "version": osr.get("VERSION_ID"),
        "pretty_name": osr.get("PRETTY_NAME"),
        "kernel": kernel,
    }


def driver_section(src, xml, proc, pkgs):
    driver_pkgs = matching(pkgs, DRIVER_PACKAGES)
    version = cuda_version = source = None
    if xml is not None:
        version, cuda_version, source = xml["driver_version"], xml["cuda_version"], "nvidia-smi"
    elif proc is not None:
        version, source = proc["driver_version"], "proc"
    else:
        # Driver installed but not loaded: the version its packages carry.
        for pattern in DRIVER_PACKAGES[:4]:
            for pkg_version in matching(pkgs, (pattern,)).values():
                upstream = upstream_version(pkg_version)
                if version is None and upstream and _DRIVER_VERSION.match(upstream):
                    version, source = upstream, "package"
    return src.failed([NVIDIA_SMI, PROC_DRIVER, src.pkgdb]) or {
        "present": bool(version or driver_pkgs),
        "loaded": xml is not None or proc is not None,
        "version": version,
        "cuda_version": cuda_version,
        "source": source,
        "kernel_module": proc["kernel_module"] if proc else None,
        "kernel_module_version": proc["driver_version"] if proc else None,
        "open_kernel_module": proc["open"] if proc else None,
        "packages": driver_pkgs,
    }


def gpus_section(src, xml):
    gpu_list = [{key: gpu[key] for key in GPU_FIELDS} for gpu in (xml or {}).get("gpus", [])]
    return src.failed([NVIDIA_SMI]) or {
        "present": xml is not None,
        "count": len(gpu_list),
        "models": sorted({g["name"] for g in gpu_list}),
        "list": gpu_list,
        "warnings": list((xml or {}).get("warnings", [])),
    }


def cuda_section(src, pkgs, libs):
    nvcc = src.parse(NVCC, parse_nvcc_version)
    ptxas = src.parse(PTXAS, parse_ptxas_version)
    default_path = src.parse(CUDA_DEFAULT, parse_cuda_default)
    toolkits = {}
    for name in src.cuda_files:
        parsed = src.parse(name, parse_cuda_version_json)
        if parsed is not None:
            toolkits[CUDA_VERSION_FILE.match(name).group(1)] = parsed["version"]
    default = None
    if default_path:
        match = re.search(r"cuda-(\d+\.\d+)$", default_path.rstrip("/"))
        default = match.group(1) if match else None
    cuda_pkgs = matching(pkgs, CUDA_PACKAGES)
    cudart = _sonames(libs, r"^libcudart\.so\.\d+$")
    return src.failed([CUDA_DEFAULT] + src.cuda_files + [NVCC, PTXAS, LDCONFIG, src.pkgdb]) or {
        "present": bool(default_path or toolkits or nvcc or ptxas or cuda_pkgs or cudart),
        "default": default,
        "default_path": default_path,
        "default_version": toolkits.get(default) if default else None,
        "toolkits": toolkits,
        "nvcc": nvcc["version"] if nvcc else None,
        "ptxas": ptxas["version"] if ptxas else None,
        "cudart_soname": cudart,
        "packages": cuda_pkgs,
    }


def nccl_section(src, pkgs, libs):
    header = src.parse(NCCL_H, parse_nccl_header)
    nccl_pkg = pkgs.get("libnccl2") or pkgs.get("libnccl")
    nccl_dev = pkgs.get("libnccl-dev") or pkgs.get("libnccl-devel")
    nccl_soname = _sonames(libs, r"^libnccl\.so\.\d+$")
    return src.failed([NCCL_H, LDCONFIG, src.pkgdb]) or {
        "present": bool(nccl_pkg or nccl_dev or header or nccl_soname),
        "package": nccl_pkg,
        "dev_package": nccl_dev,
        "header": header["version"] if header else None,
        "soname": nccl_soname,
    }


def cudnn_section(src, pkgs, libs):
    cudnn_pkgs = matching(pkgs, CUDNN_PACKAGES)
    cudnn_runtime = sorted({v for n, v in cudnn_pkgs.items() if _CUDNN_RUNTIME.match(n)})
    cudnn_soname = _sonames(libs, r"^libcudnn\.so\.\d+$")
    return src.failed([LDCONFIG, src.pkgdb]) or {
        "present": bool(cudnn_pkgs or cudnn_soname),
        "package": _join(cudnn_runtime),
        "packages": cudnn_pkgs,
        "soname": cudnn_soname,
    }


def docker_section(src, pkgs):
    docker = src.parse(DOCKER, parse_docker_info)
    containerd = src.parse(CONTAINERD, parse_containerd_version)
    ctk = src.parse(NVIDIA_CTK, parse_nvidia_ctk_version)
    facts = {
        "present": docker is not None,
        "server_version": None,
        "default_runtime": None,
        "runtimes": [],
        "cgroup_driver": None,
        "cgroup_version": None,
        "storage_driver": None,
        "registry_mirrors": [],
    }
    facts.update(docker or {})
    facts["containerd"] = containerd
    facts["nvidia_container_toolkit"] = ctk or upstream_version(pkgs.get("nvidia-container-toolkit"))
    facts["packages"] = matching(pkgs, DOCKER_PACKAGES)
    return src.failed([DOCKER, CONTAINERD, NVIDIA_CTK, src.pkgdb]) or facts


def network_section(src):
    net = src.parse(NET, parse_net_interfaces)
    ibstat = src.parse(IBSTAT, parse_ibstat)
    names = src.parse(NAMES, parse_names)
    section = {
        "interfaces": src.failed([NET]) or (net or {}),
        "rdma": src.failed([IBSTAT]) or (ibstat["cas"] if ibstat else []),
    }
    # Only where gpu_facts was asked to resolve names (verify.yml asks).
    if names is not None or src.failed([NAMES]):
        section["names"] = src.failed([NAMES]) or names
    return section


def nccl_conf_section(src):
    nccl_conf = src.parse(NCCL_CONF, parse_nccl_conf, exact=True)
    return src.failed([NCCL_CONF]) or {
        "present": nccl_conf is not None,
        "sha256": nccl_conf["sha256"] if nccl_conf else None,
        "settings": nccl_conf["settings"] if nccl_conf else {},
    }


def slurm_section(src):
    slurm = src.parse(SLURM, parse_slurm)
    return src.failed([SLURM]) or {
        "present": slurm is not None,
        "munge_key_sha256": slurm["munge_key_sha256"] if slurm else None,
        "conf_sha256": slurm["conf_sha256"] if slurm else None,
    }


def gpustack_section(src):
    gpustack = src.parse(GPUSTACK, parse_gpustack)
    return src.failed([GPUSTACK]) or {
        "present": gpustack is not None,
        "version": gpustack["version"] if gpustack else None,
        "venv": gpustack["venv"] if gpustack else None,
        "packages": len(gpustack["packages"]) if gpustack else None,
        "packages_sha256": packages_sha256(gpustack["packages"]) if gpustack else None,
    }


def storage_section(src):
    storage = src.parse(STORAGE, parse_storage)
    found = storage or {"mounts": {}, "exports": [], "server_running": False}
    return src.failed([STORAGE]) or dict(found, present=storage is not None)


def packages_section(src, pkgs, packages):
    wanted = {}
    for item in packages or ():
        if any(c in item for c in "*?["):
            wanted.update(matching(pkgs, (item,)))
        elif item in pkgs:
            wanted[item] = pkgs[item]
    return src.failed([src.pkgdb]) or wanted


def analyse(raw: dict, packages=()) -> dict:
    """Facts from raw bundle texts; see the gpu_facts module's RETURN for the layout."""
    src = Sources(raw)
    xml = src.parse(NVIDIA_SMI, parse_nvidia_smi_xml)
    proc = src.parse(PROC_DRIVER, parse_proc_driver_version)
    libs = src.parse(LDCONFIG, parse_ldconfig) or {}
    pkgs = src.parse(src.pkgdb, parse_package_list) or {}
    os_release = src.parse(OS_RELEASE, parse_os_release)
    kernel = src.parse(UNAME, parse_uname)
    conda = src.parse(CONDA, parse_conda_envs)
    facts = {
        "os": os_section(src, os_release, kernel),
        "driver": driver_section(src, xml, proc, pkgs),
        "gpus": gpus_section(src, xml),
        "cuda": cuda_section(src, pkgs, libs),
        "nccl": nccl_section(src, pkgs, libs),
        "cudnn": cudnn_section(src, pkgs, libs),
        "docker": docker_section(src, pkgs),
        "conda": src.failed([CONDA]) or {"envs": conda or {}},
        "network": network_section(src),
        "nccl_conf": nccl_conf_section(src),
        "slurm": slurm_section(src),
        "storage": storage_section(src),
        "gpustack": gpustack_section(src),
        "packages": packages_section(src, pkgs, packages),
    }
    facts["errors"] = dict(sorted(src.errors.items()))
    return facts
