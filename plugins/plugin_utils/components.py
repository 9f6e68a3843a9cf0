# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Flatten ``gpu_facts`` (the gpu_facts module) for drift comparison.

Functions (filters lockstep.gpu.components and lockstep.gpu.fact_summary)::

    components(gpu_facts, packages=None) -> {component: value}
    fact_summary(gpu_facts)               -> str

``components`` keeps only what should be equal on every node of a
cluster, as scalars (lists joined with ", "), named ``<section>.<field>``:

- ``os.release`` ("Debian 12"), ``os.kernel``;
- ``driver.version``, ``driver.cuda_version``, ``driver.loaded``,
  ``driver.kernel_module``, ``driver.kernel_module_version``;
- ``gpu.count``, ``gpu.models``, ``gpu.persistence_mode``, ``gpu.ecc_mode``,
  ``gpu.mig_mode``, ``gpu.vbios``, ``gpu.memory_total_mib`` (the per-GPU
  values sorted, unique, joined);
- ``cuda.default``, ``cuda.toolkits`` (full versions, by release),
  ``cuda.nvcc``, ``cuda.ptxas``, ``cuda.cudart``;
- ``nccl.package``, ``nccl.dev_package``, ``nccl.header``, ``nccl.soname``;
- ``cudnn.package``, ``cudnn.soname``;
- ``docker.server_version``, ``docker.default_runtime``, ``docker.runtimes``,
  ``docker.cgroup_driver``, ``docker.registry_mirrors``, ``docker.containerd``,
  ``docker.nvidia_container_toolkit``;
- ``conda.<env>.python|torch|deepspeed|torch_cuda|torch_nccl|torch_cudnn|packages_sha256|lock_sha256``;
- ``net.<if>.mtu|speed_mbps|state``;
- ``names.address`` and ``names.resolve.<name>``, only when gpu_facts
  resolved names: the node's own address and what it resolves each name to.
  They differ from node to node by nature; lockstep.gpu.name_check (names.py)
  turns them into one comparable ``net.names`` before the drift analysis;
- ``rdma.<ca>.firmware``, ``rdma.<ca>.<port>.state|rate|link_layer``;
- ``nccl_conf.sha256``;
- ``slurm.munge_key_sha256``, ``slurm.conf_sha256`` (digests of the munge key and slurm.conf);
- ``gpustack.version`` (GPUStack's version in its virtual environment, module_utils/gpustack.py) and
  ``gpustack.packages_sha256`` (a digest of every distribution in that environment: its whole closure);
- ``storage.<mount point>.mounted|fstype|server|fstab`` for each NFS mount
  point in /etc/fstab or /proc/self/mounts (module_utils/storage.py);
- ``pkg.<name>`` for each package fact (or each name in ``packages``).

Never UUIDs, serial numbers, PCI bus ids, GUIDs, LIDs or host names.

Absent
    A value that is absent (not installed, not reported) is left out: the
    key is omitted, not set to None. ``drift`` then reports a node
    that lacks what the others have as ``missing`` and a node that has what
    the others lack as ``unexpected``, and an inventory can require absence
    with ``{absent: true}``. (A None value would instead read as a value
    that ``differs``.)

Unreadable
    A section the module marked ``{"error": "<file>: <message>"}`` yields
    each of its components with that same error dict, so the drift report
    names the file (``unreadable``). Sections whose components are named
    after what they hold (conda environments, interfaces, RDMA CAs, package
    facts without ``packages``) yield one component ``conda``, ``net``,
    ``rdma`` or ``pkg`` carrying the error.
"""

from __future__ import annotations

from collections.abc import Mapping

try:
    from ansible.errors import AnsibleFilterError
except ImportError:  # on a node without Ansible: Lockstep's exporter (plugin_utils/exporter.py)
    class AnsibleFilterError(ValueError):
        """What the filter raises on input it cannot flatten."""
from ansible_collections.lockstep.gpu.plugins.module_utils.storage import storage_components

_SECTION_COMPONENTS = {
    "os": ("os.release", "os.kernel"),
    "driver": (
        "driver.version",
        "driver.cuda_version",
        "driver.loaded",
        "driver.kernel_module",
        "driver.kernel_module_version",
    ),
    "gpus": (
        "gpu.count",
        "gpu.models",
        "gpu.persistence_mode",
        "gpu.ecc_mode",
        "gpu.mig_mode",
        "gpu.vbios",
        "gpu.memory_total_mib",
    ),
    "cuda": ("cuda.default", "cuda.toolkits", "cuda.nvcc", "cuda.ptxas", "cuda.cudart"),
    "nccl": ("nccl.package", "nccl.dev_package", "nccl.header", "nccl.soname"),
    "cudnn": ("cudnn.package", "cudnn.soname"),
    "docker": (
        "docker.server_version",
        "docker.default_runtime",
        "docker.runtimes",
        "docker.cgroup_driver",
        "docker.registry_mirrors",
        "docker.containerd",
        "docker.nvidia_container_toolkit",
    ),
    "nccl_conf": ("nccl_conf.sha256",),
    "slurm": ("slurm.munge_key_sha256", "slurm.conf_sha256"),
    "gpustack": ("gpustack.version", "gpustack.packages_sha256"),
}
_CONDA_FIELDS = ("python", "torch", "deepspeed", "torch_cuda", "torch_nccl", "torch_cudnn", "packages_sha256",
                 "lock_sha256")


def is_error(value):
    """Whether a fact value is the ``{"error": message}`` of an unreadable source."""
    return isinstance(value, Mapping) and "error" in value and len(value) == 1


def _section(facts, name):
    value = facts.get(name)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise AnsibleFilterError(
            f"components: gpu_facts.{name} must be a mapping, got {value!r}"
        )
    return value


def _join(values, sort=True):
    items = [str(v) for v in values if v is not None and v != ""]
    if sort:
        items = sorted(set(items))
    return ", ".join(items) if items else None


def _release_key(release):
    return [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in str(release).split(".")]


def _unwrap(gpu_facts):
    if not isinstance(gpu_facts, Mapping):
        raise AnsibleFilterError(
            f"components: expected the gpu_facts dict, got {type(gpu_facts).__name__}"
        )
    # Accept ansible_facts (or a module result) holding gpu_facts too.
    if "gpu_facts" in gpu_facts and isinstance(gpu_facts["gpu_facts"], Mapping):
        return gpu_facts["gpu_facts"]
    return gpu_facts


def components(gpu_facts, packages=None):
    """Flatten gpu_facts into ``{component: scalar}``; see the module docstring.

    ``packages``: None reports every package fact as ``pkg.<name>``; a list
    reports only those names (and names them when the package list was
    unreadable).
    """
    facts = _unwrap(gpu_facts)
    if packages is not None and (
        isinstance(packages, (str, bytes)) or not isinstance(packages, (list, tuple, set))
    ):
        raise AnsibleFilterError(
            f"components: packages must be a list of names, got {packages!r}"
        )
    out = {}

    def put(key, value):
        if value is not None:
            out[key] = value

    def error_of(name):
        value = facts.get(name)
        if is_error(value):
            error = {"error": str(value["error"])}
            for key in _SECTION_COMPONENTS[name]:
                out[key] = dict(error)
            return True
        return False

    if not error_of("os"):
        osf = _section(facts, "os")
        dist, version = osf.get("distribution"), osf.get("version")
        release = f"{dist} {version}" if dist and version else (osf.get("pretty_name") or dist)
        put("os.release", release)
        put("os.kernel", osf.get("kernel"))

    if not error_of("driver"):
        driver = _section(facts, "driver")
        if driver.get("present"):
            put("driver.version", driver.get("version"))
            put("driver.cuda_version", driver.get("cuda_version"))
            put("driver.loaded", driver.get("loaded"))
            put("driver.kernel_module", driver.get("kernel_module"))
            put("driver.kernel_module_version", driver.get("kernel_module_version"))

    if not error_of("gpus"):
        gpus = _section(facts, "gpus")
        if gpus.get("present"):
            listed = [g for g in gpus.get("list") or [] if isinstance(g, Mapping)]
            put("gpu.count", gpus.get("count", len(listed)))
            put("gpu.models", _join(gpus.get("models") or [g.get("name") for g in listed]))
            for field, key in (
                ("persistence_mode", "gpu.persistence_mode"),
                ("ecc_mode", "gpu.ecc_mode"),
                ("mig_mode", "gpu.mig_mode"),
                ("vbios_version", "gpu.vbios"),
            ):
                put(key, _join(g.get(field) for g in listed))
            sizes = sorted({g["memory_total_mib"] for g in listed if g.get("memory_total_mib")})
            put("gpu.memory_total_mib", _join(sizes, sort=False))

    if not error_of("cuda"):
        cuda = _section(facts, "cuda")
        toolkits = cuda.get("toolkits") or {}
        ordered = sorted(toolkits, key=_release_key)
        put("cuda.default", cuda.get("default"))
        put("cuda.toolkits", _join([toolkits[r] or r for r in ordered], sort=False))
        put("cuda.nvcc", cuda.get("nvcc"))
        put("cuda.ptxas", cuda.get("ptxas"))
        put("cuda.cudart", cuda.get("cudart_soname"))

    if not error_of("nccl"):
        nccl = _section(facts, "nccl")
        put("nccl.package", nccl.get("package"))
        put("nccl.dev_package", nccl.get("dev_package"))
        put("nccl.header", nccl.get("header"))
        put("nccl.soname", nccl.get("soname"))

    if not error_of("cudnn"):
        cudnn = _section(facts, "cudnn")
        put("cudnn.package", cudnn.get("package"))
        put("cudnn.soname", cudnn.get("soname"))

    if not error_of("docker"):
        docker = _section(facts, "docker")
        if docker.get("present"):
            put("docker.server_version", docker.get("server_version"))
            put("docker.default_runtime", docker.get("default_runtime"))
            put("docker.runtimes", _join(docker.get("runtimes") or []))
            put("docker.cgroup_driver", docker.get("cgroup_driver"))
            put("docker.registry_mirrors", _join(docker.get("registry_mirrors") or [], sort=False))
        put("docker.containerd", docker.get("containerd"))
        put("docker.nvidia_container_toolkit", docker.get("nvidia_container_toolkit"))

    conda = facts.get("conda")
    if is_error(conda):
        out["conda"] = {"error": str(conda["error"])}
    elif conda:
        envs = _section(facts, "conda").get("envs") or {}
        for env in sorted(envs):
            info = envs[env] if isinstance(envs[env], Mapping) else {}
            for field in _CONDA_FIELDS:
                put(f"conda.{env}.{field}", info.get(field))

    network = _section(facts, "network")
    interfaces = network.get("interfaces") or {}
    if is_error(interfaces):
        out["net"] = {"error": str(interfaces["error"])}
    else:
        for name in sorted(interfaces):
            info = interfaces[name] if isinstance(interfaces[name], Mapping) else {}
            for field in ("mtu", "speed_mbps", "state"):
                put(f"net.{name}.{field}", info.get(field))
    names = network.get("names")
    if is_error(names):
        out["names.address"] = {"error": str(names["error"])}
    elif isinstance(names, Mapping):
        out["names.address"] = names.get("address") or {"error": names.get("address_error") or "no address"}
        for name, found in sorted((names.get("resolves") or {}).items()):
            out[f"names.resolve.{name}"] = {"error": str(found["error"])} if is_error(found) else (
                _join(found) or {"error": "no IPv4 address"})
    rdma = network.get("rdma") or []
    if is_error(rdma):
        out["rdma"] = {"error": str(rdma["error"])}
    else:
        for ca in rdma:
            if not isinstance(ca, Mapping) or not ca.get("name"):
                continue
            put(f"rdma.{ca['name']}.firmware", ca.get("firmware"))
            for port in ca.get("ports") or []:
                for field in ("state", "rate", "link_layer"):
                    put(f"rdma.{ca['name']}.{port.get('port')}.{field}", port.get(field))

    if not error_of("nccl_conf"):
        put("nccl_conf.sha256", _section(facts, "nccl_conf").get("sha256"))
    if not error_of("slurm"):
        slurm = _section(facts, "slurm")
        put("slurm.munge_key_sha256", slurm.get("munge_key_sha256"))
        put("slurm.conf_sha256", slurm.get("conf_sha256"))
    if not error_of("gpustack"):
        put("gpustack.version", _section(facts, "gpustack").get("version"))
        put("gpustack.packages_sha256", _section(facts, "gpustack").get("packages_sha256"))
    storage = facts.get("storage")
    if is_error(storage):
        out["storage"] = {"error": str(storage["error"])}
    elif storage:
        for name, value in storage_components(_section(facts, "storage")).items():
            put(name, value)

    pkgs = facts.get("packages") or {}
    if is_error(pkgs):
        error = {"error": str(pkgs["error"])}
        if packages is None:
            out["pkg"] = error
        for name in packages or ():
            out[f"pkg.{name}"] = dict(error)
    else:
        names = sorted(pkgs) if packages is None else list(packages)
        for name in names:
            put(f"pkg.{name}", pkgs.get(name))
    return out


def fact_summary(gpu_facts):
    """One line: driver, CUDA, NCCL and GPUs (plus unreadable sources)."""
    facts = _unwrap(gpu_facts)

    def part(name, render):
        value = facts.get(name)
        if is_error(value):
            return None
        return render(_section(facts, name))

    def driver(d):
        if not d.get("present"):
            return "driver absent"
        text = f"driver {d.get('version') or 'unknown version'}"
        return text + (f" (CUDA {d['cuda_version']})" if d.get("cuda_version") else "")

    def cuda(c):
        if not c.get("present"):
            return "CUDA absent"
        version = c.get("default") or c.get("nvcc") or c.get("ptxas")
        version = version or _join(c.get("toolkits") or [])
        return f"CUDA {version}" if version else "CUDA present"

    def nccl(n):
        if not n.get("present"):
            return "NCCL absent"
        version = n.get("header") or n.get("package") or n.get("soname")
        return f"NCCL {version}"

    def gpus(g):
        if not g.get("present"):
            return "no nvidia-smi"
        models = g.get("models") or []
        return f"{g.get('count', 0)}× {', '.join(models)}" if models else "0 GPUs"

    parts = []
    for name, label, render in (
        ("driver", "driver", driver),
        ("cuda", "CUDA", cuda),
        ("nccl", "NCCL", nccl),
        ("gpus", "GPUs", gpus),
    ):
        text = part(name, render)
        parts.append(text if text is not None else f"{label} unreadable")
    line = ", ".join(parts)
    errors = facts.get("errors") or {}
    if errors:
        line += f" ({len(errors)} unreadable: {', '.join(sorted(errors))})"
    return line
