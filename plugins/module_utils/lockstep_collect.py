# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Collect a node's GPU stack as raw texts (a support bundle) and analyse them.

One collector, two sources, one analyser:

* :func:`collect_live` runs the commands and reads the files on the node;
  :func:`collect_from_dir` reads a support bundle (a directory of files with
  the same names). Both return ``{bundle file name: text or None}``; None
  means the source is absent (tool not installed, file not there), which is
  a fact, not an error.
* :func:`analyse` turns those texts into the ``gpu_facts`` dict with the
  parsers of ``lockstep_nvidia``, ``lockstep_nccl`` and ``lockstep_rdma``
  (and the small ones below). A source that cannot be read lands in
  ``errors[<file name>]`` and turns the sections built from it into
  ``{"error": "<file name>: <message>"}``; the other sections still fill.
* :func:`save_bundle` writes the raw texts into a directory (``save_to``).

A command that is installed but fails (non-zero exit, timeout) is recorded
by the live collector in the bundle file ``collect-errors.json``
(``{bundle file name: message}``), so that a bundle analysed offline gives
the same facts, errors included, as the live run that wrote it.

Standard library only: this runs on managed nodes (Python 3.9+).
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import re
import shlex
import tempfile

from ansible.module_utils.lockstep_errors import ParseError
from ansible.module_utils.lockstep_nccl import parse_nccl_header
from ansible.module_utils.lockstep_nvidia import (
    parse_cuda_version_json,
    parse_nvcc_version,
    parse_nvidia_smi_xml,
    parse_proc_driver_version,
    parse_ptxas_version,
)
from ansible.module_utils.lockstep_rdma import parse_ibstat

# --------------------------------------------------------------------------
# Bundle file names
# --------------------------------------------------------------------------

NVIDIA_SMI = "nvidia-smi-q-x.xml"
PROC_DRIVER = "proc-driver-nvidia-version.txt"
#: nvidia-smi's exit status when the kernel module is not loaded (nvidia-smi(1)).
NVIDIA_SMI_NOT_LOADED = 9
NVCC = "nvcc-version.txt"
PTXAS = "ptxas-version.txt"
CUDA_DEFAULT = "cuda-default.txt"
NCCL_H = "nccl.h"
LDCONFIG = "ldconfig-p.txt"
DPKG = "dpkg-query.txt"
RPM = "rpm-qa.txt"
OS_RELEASE = "os-release"
UNAME = "uname-r.txt"
DOCKER = "docker-info.json"
CONTAINERD = "containerd-version.txt"
NVIDIA_CTK = "nvidia-ctk-version.txt"
IBSTAT = "ibstat.txt"
NET = "net-interfaces.json"
NCCL_CONF = "nccl.conf"
CONDA = "conda-envs.json"
COLLECT_ERRORS = "collect-errors.json"

#: Every fixed bundle file name; ``cuda-version-<X.Y>.json`` come on top.
BUNDLE_FILES = (
    NVIDIA_SMI,
    PROC_DRIVER,
    NVCC,
    PTXAS,
    CUDA_DEFAULT,
    NCCL_H,
    LDCONFIG,
    DPKG,
    RPM,
    OS_RELEASE,
    UNAME,
    DOCKER,
    CONTAINERD,
    NVIDIA_CTK,
    IBSTAT,
    NET,
    NCCL_CONF,
    CONDA,
    COLLECT_ERRORS,
)
CUDA_VERSION_FILE = re.compile(r"^cuda-version-(\d+\.\d+)\.json$")

DPKG_FORMAT = "${Package}\t${Version}\t${db:Status-Abbrev}\n"
RPM_FORMAT = "%{NAME}\t%{EPOCH}:%{VERSION}-%{RELEASE}\tii \n"

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

_ENCODING = "utf-8"
_ERRORS = "surrogateescape"  # byte-exact round trip of whatever a file holds


def is_bundle_file(name: str) -> bool:
    """Whether ``name`` is a file name the collector writes."""
    return name in BUNDLE_FILES or CUDA_VERSION_FILE.match(name) is not None


def _decode(data: bytes) -> str:
    return data.decode(_ENCODING, _ERRORS)


def _encode(text: str) -> bytes:
    return text.encode(_ENCODING, _ERRORS)


def _printable(text: str) -> str:
    """Text safe to put into facts (undecodable bytes become U+FFFD)."""
    return _encode(text).decode(_ENCODING, "replace")


def _read_file(path: str):
    """Return the file's text, None when it does not exist; OSError otherwise."""
    try:
        with open(path, "rb") as handle:
            return _decode(handle.read())
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return None


# --------------------------------------------------------------------------
# Offline: a support bundle
# --------------------------------------------------------------------------


def empty_raw() -> dict:
    """A raw dict with every fixed bundle file absent."""
    return dict.fromkeys(BUNDLE_FILES)


def collect_from_dir(path: str) -> dict:
    """Read a support bundle: every known file name in ``path`` (others are
    ignored). Raises OSError when ``path`` cannot be listed."""
    raw = empty_raw()
    for name in sorted(os.listdir(path)):
        full = os.path.join(path, name)
        if is_bundle_file(name) and os.path.isfile(full):
            raw[name] = _read_file(full)
    return raw


# --------------------------------------------------------------------------
# Live: commands and files on the node
# --------------------------------------------------------------------------


class Runner:
    """What :func:`collect_live` needs from its caller (the module adapts
    AnsibleModule to it; tests pass a fake)."""

    def which(self, name: str, opt_dirs=()):  # pragma: no cover - interface
        """Absolute path of executable ``name`` (``opt_dirs`` first), or None."""
        raise NotImplementedError

    def run(self, argv: list):  # pragma: no cover - interface
        """Run ``argv`` (no shell); return ``(rc, stdout, stderr)``."""
        raise NotImplementedError


def _first_line(*texts) -> str:
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
            problems[name] = f"`{shown}` exited with status {rc}: {_first_line(err, out)}"
        else:
            raw[name] = out

    def read(name, candidates):
        if isinstance(candidates, str):
            candidates = (candidates,)
        for path in candidates:
            try:
                text = _read_file(path)
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
    read(NCCL_CONF, nccl_conf)
    raw[CONDA] = build_conda_envs(conda_envs_dirs)

    if problems:
        raw[COLLECT_ERRORS] = json.dumps(problems, indent=2, sort_keys=True) + "\n"
    return raw


def _read_sys(path: str):
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            return handle.read().strip()
    except OSError:
        return None


def _int_or_none(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


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
        speed = _int_or_none(_read_sys(os.path.join(base, "speed")))
        result[name] = {
            "mtu": _int_or_none(_read_sys(os.path.join(base, "mtu"))),
            "speed_mbps": speed if speed is not None and speed > 0 else None,
            "state": _read_sys(os.path.join(base, "operstate")),
            "virtual": not os.path.exists(os.path.join(base, "device")),
        }
    return json.dumps(result, indent=2, sort_keys=True) + "\n"


_DIST_INFO = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+)\.dist-info$")


def normalize_package_name(name: str) -> str:
    """PEP 503 name: lower case, runs of ``-_.`` as one ``-``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _metadata_version(dist_info: str):
    text = _read_sys(os.path.join(dist_info, "METADATA"))
    if text:
        match = re.search(r"^Version:\s*(\S+)", text, re.MULTILINE)
        if match:
            return match.group(1)
    return None


def _conda_env(prefix: str) -> dict:
    meta = os.path.join(prefix, "conda-meta")
    lines = set()
    conda = {}
    unreadable = []
    for entry in sorted(os.listdir(meta)):
        if not entry.endswith(".json"):
            continue
        try:
            with open(os.path.join(meta, entry), "rb") as handle:
                record = json.loads(handle.read().decode("utf-8", "replace"))
            name, version = record["name"], record["version"]
        except (OSError, ValueError, KeyError, TypeError):
            unreadable.append(entry)
            continue
        conda[normalize_package_name(name)] = version
        lines.add(f"{normalize_package_name(name)}=={version}")

    python = conda.get("python")
    pip = {}
    lib = os.path.join(prefix, "lib")
    try:
        pythons = sorted(d for d in os.listdir(lib) if re.match(r"^python\d+\.\d+$", d))
    except OSError:
        pythons = []
    for pydir in pythons:
        site = os.path.join(lib, pydir, "site-packages")
        try:
            entries = sorted(os.listdir(site))
        except OSError:
            continue
        if python is None:
            python = pydir[len("python"):]
        for entry in entries:
            match = _DIST_INFO.match(entry)
            if not match:
                continue
            name = normalize_package_name(match.group("name"))
            version = match.group("version")
            lines.add(f"{name}=={version}")
            if name in ("torch", "deepspeed"):
                pip[name] = _metadata_version(os.path.join(site, entry)) or version

    lock = _read_sys(os.path.join(meta, "lockstep-lock.sha256"))
    digest = hashlib.sha256("".join(f"{line}\n" for line in sorted(lines)).encode("utf-8"))
    return {
        "prefix": prefix,
        "python": python,
        "torch": pip.get("torch") or conda.get("pytorch") or conda.get("torch"),
        "deepspeed": pip.get("deepspeed") or conda.get("deepspeed"),
        "packages": len(lines),
        "packages_sha256": digest.hexdigest(),
        "lock_sha256": lock.split()[0] if lock else None,
        "unreadable_records": unreadable,
    }


def build_conda_envs(dirs):
    """JSON text ``{env name: {...}}`` for every conda environment (a
    directory holding ``conda-meta/``) directly under one of ``dirs``; None
    when there is none. See the module documentation for the keys."""
    envs = {}
    for base in dirs or ():
        try:
            entries = sorted(os.listdir(base))
        except OSError:
            continue
        for entry in entries:
            prefix = os.path.join(base, entry)
            if not os.path.isdir(os.path.join(prefix, "conda-meta")):
                continue
            key = entry if entry not in envs else prefix
            try:
                envs[key] = _conda_env(prefix)
            except OSError as exc:
                envs[key] = {"prefix": prefix, "error": f"cannot read {prefix}: {exc}"}
    if not envs:
        return None
    return json.dumps(envs, indent=2, sort_keys=True) + "\n"


# --------------------------------------------------------------------------
# Small parsers for the sources the parser modules do not cover
# --------------------------------------------------------------------------


def _need_text(text, what, source):
    if text is None or not text.strip():
        raise ParseError(f"empty input, expected {what}", source)
    return text


def parse_os_release(text: str, source=None) -> dict:
    """``/etc/os-release``: ``{KEY: value}`` with shell quoting undone."""
    text = _need_text(text, "os-release KEY=VALUE lines", source)
    values = {}
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        match = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", stripped)
        if not match:
            raise ParseError(f"line {number} is not KEY=VALUE: {stripped!r}", source)
        try:
            words = shlex.split(match.group(2))
        except ValueError as exc:
            raise ParseError(f"line {number}: {exc}: {stripped!r}", source) from None
        values[match.group(1)] = " ".join(words)
    if not values:
        raise ParseError("no KEY=VALUE line; not an os-release file", source)
    return values


def parse_uname(text: str, source=None) -> str:
    """``uname -r``: the kernel release."""
    text = _need_text(text, "uname -r output", source).strip()
    if len(text.split()) != 1:
        raise ParseError(f"expected one kernel release, got {text[:80]!r}", source)
    return text


def parse_package_list(text: str, source=None) -> dict:
    """``dpkg-query -W -f '${Package}\\t${Version}\\t${db:Status-Abbrev}\\n'``
    (or the rpm equivalent): ``{name: version}`` of installed packages.

    dpkg lists known but not installed packages too (status ``un``, ``rc``);
    only those whose second status letter says installed (``i``, or
    ``W``/``t`` for pending triggers) are kept. rpm's ``(none):`` epoch is
    dropped. A name listed twice (multi-arch) with two versions keeps both,
    joined with ", ".
    """
    text = _need_text(text, "package list", source)
    packages = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) < 3 or not fields[0] or not fields[2].strip():
            raise ParseError(
                f"line {number} is not 'name<TAB>version<TAB>status': {line[:120]!r}", source
            )
        name, version, status = fields[0].strip(), fields[1].strip(), fields[2]
        if len(status) < 2 or status[1] not in "iWt":
            continue
        if version.startswith("(none):"):
            version = version[len("(none):"):]
        old = packages.get(name)
        if old is not None and version not in old.split(", "):
            version = ", ".join(sorted(old.split(", ") + [version]))
        packages[name] = version
    return packages


_LDCONFIG_LINE = re.compile(r"^\s*(\S+)\s+\(([^)]*)\)\s+=>\s+(\S.*?)\s*$")


def parse_ldconfig(text: str, source=None) -> dict:
    """``ldconfig -p``: ``{soname: [paths]}``."""
    text = _need_text(text, "ldconfig -p output", source)
    libs = {}
    header = False
    for line in text.splitlines():
        if re.match(r"^\d+ libs found in cache", line.strip()):
            header = True
            continue
        match = _LDCONFIG_LINE.match(line)
        if match:
            libs.setdefault(match.group(1), []).append(match.group(3))
    if not libs and not header:
        raise ParseError("no 'name (flags) => path' line; not ldconfig -p output", source)
    return libs


def parse_cuda_default(text: str, source=None) -> str:
    """The resolved /usr/local/cuda path."""
    text = _need_text(text, "the path /usr/local/cuda points to", source).strip()
    if not text.startswith("/") or "\n" in text:
        raise ParseError(f"expected one absolute path, got {text[:80]!r}", source)
    return text


def parse_docker_info(text: str, source=None) -> dict:
    """``docker info --format '{{json .}}'``."""
    text = _need_text(text, "docker info JSON", source)
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ParseError(f"docker info output is not JSON ({exc})", source) from None
    if not isinstance(data, dict):
        raise ParseError("docker info JSON is not an object", source)
    server_errors = data.get("ServerErrors")
    if server_errors:
        raise ParseError(f"docker info reports server errors: {server_errors}", source)
    server = data.get("ServerVersion")
    if not isinstance(server, str) or not server.strip():
        raise ParseError(
            "docker info has no ServerVersion (the daemon did not answer)", source
        )
    runtimes = data.get("Runtimes")
    registry = data.get("RegistryConfig")
    mirrors = registry.get("Mirrors") if isinstance(registry, dict) else None
    return {
        "server_version": server.strip(),
        "default_runtime": data.get("DefaultRuntime") or None,
        "runtimes": sorted(runtimes) if isinstance(runtimes, dict) else [],
        "cgroup_driver": data.get("CgroupDriver") or None,
        "cgroup_version": data.get("CgroupVersion") or None,
        "storage_driver": data.get("Driver") or None,
        "registry_mirrors": [str(m) for m in mirrors] if isinstance(mirrors, list) else [],
    }


def parse_containerd_version(text: str, source=None) -> str:
    """``containerd --version``: "containerd <package> <version> <commit>"."""
    text = _need_text(text, "containerd --version output", source)
    match = re.search(r"^containerd\s+\S+\s+v?(\d\S*)", text, re.MULTILINE)
    if match is None:
        raise ParseError("no 'containerd <package> <version>' line", source)
    return match.group(1)


def parse_nvidia_ctk_version(text: str, source=None) -> str:
    """``nvidia-ctk --version``: "NVIDIA Container Toolkit CLI version X.Y.Z"."""
    text = _need_text(text, "nvidia-ctk --version output", source)
    match = re.search(r"\bversion\s+v?(\d+\.\d+\S*)", text)
    if match is None:
        raise ParseError("no 'NVIDIA Container Toolkit CLI version X.Y.Z' line", source)
    return match.group(1)


def parse_nccl_conf(text: str, source=None) -> dict:
    """``/etc/nccl.conf``: ``sha256`` of the bytes and ``settings``, the
    ``KEY=VALUE`` lines (comments and lines without '=' skipped, as NCCL
    does). ``text`` may carry undecodable bytes as surrogates (see
    :func:`collect_from_dir`); the digest is over the original bytes."""
    if text is None:
        raise ParseError("no input, expected nccl.conf", source)
    settings = {}
    for line in _printable(text).splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or "=" not in stripped:
            continue
        key, value = stripped.split("=", 1)
        settings[key.strip()] = value.strip()
    return {"sha256": hashlib.sha256(_encode(text)).hexdigest(), "settings": settings}


def _parse_json_object(text, source, what):
    text = _need_text(text, what, source)
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ParseError(f"{what} is not JSON ({exc})", source) from None
    if not isinstance(data, dict):
        raise ParseError(f"{what} is not a JSON object", source)
    return data


def parse_net_interfaces(text: str, source=None) -> dict:
    """The collector's ``net-interfaces.json``."""
    data = _parse_json_object(text, source, "net-interfaces JSON")
    result = {}
    for name, info in data.items():
        if not isinstance(info, dict):
            raise ParseError(f"interface {name!r} is not an object", source)
        result[name] = {
            "mtu": _int_or_none(info.get("mtu")),
            "speed_mbps": _int_or_none(info.get("speed_mbps")),
            "state": info.get("state"),
            "virtual": bool(info.get("virtual", False)),
        }
    return result


_CONDA_KEYS = ("python", "torch", "deepspeed", "packages_sha256", "lock_sha256")


def parse_conda_envs(text: str, source=None) -> dict:
    """The collector's ``conda-envs.json``."""
    data = _parse_json_object(text, source, "conda-envs JSON")
    envs = {}
    for name, info in data.items():
        if not isinstance(info, dict):
            raise ParseError(f"environment {name!r} is not an object", source)
        if info.get("error"):
            raise ParseError(f"environment {name!r}: {info['error']}", source)
        env = {key: info.get(key) for key in _CONDA_KEYS}
        env["prefix"] = info.get("prefix")
        env["packages"] = info.get("packages")
        envs[name] = env
    return envs


def _parse_collect_errors(text, source):
    data = _parse_json_object(text, source, "collect-errors JSON")
    return {str(k): str(v) for k, v in data.items()}


# --------------------------------------------------------------------------
# Analysis
# --------------------------------------------------------------------------

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
_CUDNN_RUNTIME = re.compile(r"^(lib)?cudnn\d*(-cuda-\d+)?$")
_DRIVER_VERSION = re.compile(r"^\d{3}\.\d+(\.\d+)?$")


def _matching(packages, patterns) -> dict:
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


def analyse(raw: dict, packages=()) -> dict:
    """Facts from raw bundle texts; see the module's RETURN for the layout."""
    texts = {k: _printable(v) for k, v in raw.items() if v is not None}
    errors = {}
    if COLLECT_ERRORS in texts:
        try:
            failures = _parse_collect_errors(texts[COLLECT_ERRORS], COLLECT_ERRORS)
            for name, message in failures.items():
                errors[name] = f"{name}: {message}"
        except ParseError as exc:
            errors[COLLECT_ERRORS] = str(exc)

    def parse(name, parser, exact=False):
        if name in errors or name not in texts:
            return None
        try:
            return parser(raw[name] if exact else texts[name], name)
        except ParseError as exc:
            errors[name] = str(exc)
            return None

    def failed(sources):
        for source in sources:
            if source in errors:
                return {"error": errors[source]}
        return None

    xml = parse(NVIDIA_SMI, parse_nvidia_smi_xml)
    proc = parse(PROC_DRIVER, parse_proc_driver_version)
    nvcc = parse(NVCC, parse_nvcc_version)
    ptxas = parse(PTXAS, parse_ptxas_version)
    default_path = parse(CUDA_DEFAULT, parse_cuda_default)
    cuda_files = sorted(
        {n for n in list(texts) + list(errors) if CUDA_VERSION_FILE.match(n)},
        key=lambda n: [int(x) for x in CUDA_VERSION_FILE.match(n).group(1).split(".")],
    )
    toolkits = {}
    for name in cuda_files:
        parsed = parse(name, parse_cuda_version_json)
        if parsed is not None:
            toolkits[CUDA_VERSION_FILE.match(name).group(1)] = parsed["version"]
    header = parse(NCCL_H, parse_nccl_header)
    libs = parse(LDCONFIG, parse_ldconfig) or {}
    pkgdb = DPKG if (DPKG in texts or DPKG in errors) else RPM
    pkgs = parse(pkgdb, parse_package_list) or {}
    os_release = parse(OS_RELEASE, parse_os_release)
    kernel = parse(UNAME, parse_uname)
    docker = parse(DOCKER, parse_docker_info)
    containerd = parse(CONTAINERD, parse_containerd_version)
    ctk = parse(NVIDIA_CTK, parse_nvidia_ctk_version)
    ibstat = parse(IBSTAT, parse_ibstat)
    net = parse(NET, parse_net_interfaces)
    nccl_conf = parse(NCCL_CONF, parse_nccl_conf, exact=True)
    conda = parse(CONDA, parse_conda_envs)

    facts = {}

    # os ------------------------------------------------------------------
    osr = os_release or {}
    name = osr.get("NAME")
    if name and name.endswith(" GNU/Linux"):
        name = name[: -len(" GNU/Linux")]
    facts["os"] = failed([OS_RELEASE, UNAME]) or {
        "distribution": name,
        "id": osr.get("ID"),
        "version": osr.get("VERSION_ID"),
        "pretty_name": osr.get("PRETTY_NAME"),
        "kernel": kernel,
    }

    # driver and gpus -------------------------------------------------------
    driver_pkgs = _matching(pkgs, DRIVER_PACKAGES)
    version = cuda_version = source = None
    if xml is not None:
        version, cuda_version, source = xml["driver_version"], xml["cuda_version"], "nvidia-smi"
    elif proc is not None:
        version, source = proc["driver_version"], "proc"
    else:
        # Driver installed but not loaded: the version its packages carry.
        for pattern in DRIVER_PACKAGES[:4]:
            for pkg_version in _matching(pkgs, (pattern,)).values():
                upstream = upstream_version(pkg_version)
                if version is None and upstream and _DRIVER_VERSION.match(upstream):
                    version, source = upstream, "package"
    facts["driver"] = failed([NVIDIA_SMI, PROC_DRIVER, pkgdb]) or {
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

    gpu_list = []
    for gpu in (xml or {}).get("gpus", []):
        gpu_list.append(
            {
                key: gpu[key]
                for key in (
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
            }
        )
    facts["gpus"] = failed([NVIDIA_SMI]) or {
        "present": xml is not None,
        "count": len(gpu_list),
        "models": sorted({g["name"] for g in gpu_list}),
        "list": gpu_list,
        "warnings": list((xml or {}).get("warnings", [])),
    }

    # cuda ------------------------------------------------------------------
    default = None
    if default_path:
        match = re.search(r"cuda-(\d+\.\d+)$", default_path.rstrip("/"))
        default = match.group(1) if match else None
    cuda_pkgs = _matching(pkgs, CUDA_PACKAGES)
    cudart = _sonames(libs, r"^libcudart\.so\.\d+$")
    facts["cuda"] = failed(
        [CUDA_DEFAULT] + cuda_files + [NVCC, PTXAS, LDCONFIG, pkgdb]
    ) or {
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

    # nccl / cudnn ------------------------------------------------------------
    nccl_pkg = pkgs.get("libnccl2") or pkgs.get("libnccl")
    nccl_dev = pkgs.get("libnccl-dev") or pkgs.get("libnccl-devel")
    nccl_soname = _sonames(libs, r"^libnccl\.so\.\d+$")
    facts["nccl"] = failed([NCCL_H, LDCONFIG, pkgdb]) or {
        "present": bool(nccl_pkg or nccl_dev or header or nccl_soname),
        "package": nccl_pkg,
        "dev_package": nccl_dev,
        "header": header["version"] if header else None,
        "soname": nccl_soname,
    }
    cudnn_pkgs = _matching(pkgs, CUDNN_PACKAGES)
    cudnn_runtime = sorted({v for n, v in cudnn_pkgs.items() if _CUDNN_RUNTIME.match(n)})
    cudnn_soname = _sonames(libs, r"^libcudnn\.so\.\d+$")
    facts["cudnn"] = failed([LDCONFIG, pkgdb]) or {
        "present": bool(cudnn_pkgs or cudnn_soname),
        "package": _join(cudnn_runtime),
        "packages": cudnn_pkgs,
        "soname": cudnn_soname,
    }

    # docker ------------------------------------------------------------------
    docker_pkgs = _matching(pkgs, DOCKER_PACKAGES)
    toolkit = ctk or upstream_version(pkgs.get("nvidia-container-toolkit"))
    docker_facts = {
        "present": docker is not None,
        "server_version": None,
        "default_runtime": None,
        "runtimes": [],
        "cgroup_driver": None,
        "cgroup_version": None,
        "storage_driver": None,
        "registry_mirrors": [],
    }
    docker_facts.update(docker or {})
    docker_facts["containerd"] = containerd
    docker_facts["nvidia_container_toolkit"] = toolkit
    docker_facts["packages"] = docker_pkgs
    facts["docker"] = failed([DOCKER, CONTAINERD, NVIDIA_CTK, pkgdb]) or docker_facts

    # conda, network, nccl.conf, packages ------------------------------------
    facts["conda"] = failed([CONDA]) or {"envs": conda or {}}
    facts["network"] = {
        "interfaces": failed([NET]) or (net or {}),
        "rdma": failed([IBSTAT]) or (ibstat["cas"] if ibstat else []),
    }
    facts["nccl_conf"] = failed([NCCL_CONF]) or {
        "present": nccl_conf is not None,
        "sha256": nccl_conf["sha256"] if nccl_conf else None,
        "settings": nccl_conf["settings"] if nccl_conf else {},
    }
    wanted = {}
    for item in packages or ():
        if any(c in item for c in "*?["):
            wanted.update(_matching(pkgs, (item,)))
        elif item in pkgs:
            wanted[item] = pkgs[item]
    facts["packages"] = failed([pkgdb]) or wanted
    facts["errors"] = dict(sorted(errors.items()))
    return facts


# --------------------------------------------------------------------------
# save_to
# --------------------------------------------------------------------------


def _stable_form(name: str, data: bytes):
    """What must change for a saved file to count as changed.

    nvidia-smi and docker print readings that change on every call
    (timestamps, temperatures, counters); for them the parsed stack facts
    are compared instead of the bytes.
    """
    parser = {NVIDIA_SMI: parse_nvidia_smi_xml, DOCKER: parse_docker_info}.get(name)
    if parser is None:
        return data
    try:
        return json.dumps(parser(_decode(data), name), sort_keys=True)
    except ParseError:
        return data


def save_bundle(raw: dict, dest: str, check_mode: bool = False) -> dict:
    """Write the raw texts into ``dest`` (dir 0755, files 0644).

    A file whose stable content is unchanged is left alone; a bundle file
    whose source is now absent is removed (only bundle file names are ever
    touched). Returns ``{"changed", "written", "removed", "files"}`` (files:
    every file the bundle holds now); in check mode
    nothing is written and the lists say what would be.
    """
    written, removed = [], []
    changed = False
    if os.path.lexists(dest) and not os.path.isdir(dest):
        raise OSError(f"save_to {dest} exists and is not a directory")
    if not os.path.isdir(dest):
        changed = True
        if not check_mode:
            os.makedirs(dest, 0o755)
            os.chmod(dest, 0o755)
    elif os.stat(dest).st_mode & 0o7777 != 0o755:
        changed = True
        if not check_mode:
            os.chmod(dest, 0o755)

    existing = set(os.listdir(dest)) if os.path.isdir(dest) else set()
    stale = {n for n in existing if CUDA_VERSION_FILE.match(n) and raw.get(n) is None}
    for name in sorted(set(raw) | stale):
        if not is_bundle_file(name):
            raise ValueError(f"not a bundle file name: {name!r}")
        path = os.path.join(dest, name)
        text = raw.get(name)
        if text is None:
            if name in existing:
                removed.append(name)
                if not check_mode:
                    os.remove(path)
            continue
        data = _encode(text)
        old = None
        if name in existing and os.path.isfile(path) and not os.path.islink(path):
            with open(path, "rb") as handle:
                old = handle.read()
        if old is not None and (old == data or _stable_form(name, old) == _stable_form(name, data)):
            if os.stat(path).st_mode & 0o7777 != 0o644:
                written.append(name)
                if not check_mode:
                    os.chmod(path, 0o644)
            continue
        written.append(name)
        if not check_mode:
            handle, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=dest)
            try:
                with os.fdopen(handle, "wb") as out:
                    out.write(data)
                os.chmod(tmp, 0o644)
                os.replace(tmp, path)
            except BaseException:
                if os.path.exists(tmp):
                    os.remove(tmp)
                raise
    files = sorted(name for name, text in raw.items() if text is not None)
    return {"changed": changed or bool(written or removed), "written": written,
            "removed": removed, "files": files}
