# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for NVIDIA driver, GPU and CUDA toolkit version outputs.

Every parser takes the text a command printed (or a file's content) and an
optional ``source`` naming where it came from; it returns plain dicts of
strings and ints, and raises :class:`ParseError` (naming the source) when the
text does not hold what it needs.  Standard library only: this runs on
managed nodes.

Label changes handled
---------------------
Drivers from the R610 branch on deprecate "Driver Version" and "CUDA Version"
in favour of "KMD Version" (kernel-mode driver) and "CUDA UMD Version"
(user-mode driver):

* plain ``nvidia-smi`` prints ``KMD Version: 610.43.02     CUDA UMD Version: 13.3``
  in its header instead of ``Driver Version: ... CUDA Version: ...``;
* ``nvidia-smi -q`` prints both, the old ones suffixed with
  ``[Deprecated; will be removed in CUDA 14.0. Use KMD Version instead]``.

For ``nvidia-smi -q -x`` no public R610+ XML output could be found, so the tag
names are not confirmed.  The XML parser reads ``<kmd_version>`` and
``<cuda_umd_version>`` when present (the names NVIDIA's other renamed fields
follow, lower-cased with underscores) and falls back to ``<driver_version>``
and ``<cuda_version>``, stripping a ``[Deprecated ...]`` suffix from either.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

from ansible_collections.lockstep.gpu.plugins.module_utils.parsing import ParseError, int_or_none, require_text

__all__ = [
    "parse_nvidia_smi_xml",
    "parse_nvidia_smi_text_driver",
    "parse_proc_driver_version",
    "parse_nvcc_version",
    "parse_ptxas_version",
    "parse_cuda_version_json",
    "parse_cuda_version_txt",
]

# Values nvidia-smi prints when a field has no value on this GPU/driver.
_ABSENT = frozenset(
    (
        "",
        "n/a",
        "[n/a]",
        "not supported",
        "[not supported]",
        "not found",
        "unknown error",
        "[unknown error]",
        "insufficient permissions",
        "[insufficient permissions]",
        "requested functionality has been deprecated",
    )
)

_DEPRECATED_SUFFIX = re.compile(r"\s*\[deprecated[^\]]*\]\s*$", re.IGNORECASE)
_VERSION = r"\d+(?:\.\d+)+"
_MEMORY = re.compile(r"^(\d+)\s*(MiB|MB)$", re.IGNORECASE)


def _clean(value: str | None) -> str | None:
    """Strip a value; map nvidia-smi's 'no value' spellings to None."""
    if value is None:
        return None
    value = _DEPRECATED_SUFFIX.sub("", value.strip())
    if value.lower() in _ABSENT:
        return None
    return value


def _find(elem: ET.Element, path: str) -> str | None:
    found = elem.find(path)
    if found is None:
        return None
    return _clean(found.text)


def _mib(value: str | None, what: str, source: str | None) -> int | None:
    if value is None:
        return None
    match = _MEMORY.match(value)
    if not match:
        raise ParseError(f"cannot read {what} {value!r}: expected '<n> MiB'", source)
    return int(match.group(1))


# --------------------------------------------------------------------------
# nvidia-smi -q -x
# --------------------------------------------------------------------------


def _parse_gpu(gpu: ET.Element, index: int, source: str | None) -> dict:
    where = f"GPU {index} (<gpu id={gpu.get('id')!r}>)"
    name = _find(gpu, "product_name")
    uuid = _find(gpu, "uuid")
    if name is None:
        raise ParseError(f"{where} has no <product_name>", source)
    if uuid is None:
        raise ParseError(f"{where} has no <uuid>", source)
    pci_bus_id = _find(gpu, "pci/pci_bus_id") or _clean(gpu.get("id"))
    if pci_bus_id is None:
        raise ParseError(f"{where} has no PCI bus id", source)

    mig_details = []
    for mig in gpu.findall("mig_devices/mig_device"):
        mig_details.append(
            {
                "index": int_or_none(_find(mig, "index")),
                "gpu_instance_id": int_or_none(_find(mig, "gpu_instance_id")),
                "compute_instance_id": int_or_none(_find(mig, "compute_instance_id")),
                "memory_total_mib": _mib(
                    _find(mig, "fb_memory_usage/total"), f"{where} MIG memory", source
                ),
            }
        )

    fabric_state = _find(gpu, "fabric/state")
    fabric_status = _find(gpu, "fabric/status")
    return {
        "index": index,
        "minor_number": int_or_none(_find(gpu, "minor_number")),
        "name": name,
        "brand": _find(gpu, "product_brand"),
        "architecture": _find(gpu, "product_architecture"),
        "uuid": uuid,
        "serial": _find(gpu, "serial"),
        "pci_bus_id": pci_bus_id,
        "memory_total_mib": _mib(
            _find(gpu, "fb_memory_usage/total"), f"{where} memory", source
        ),
        "persistence_mode": _find(gpu, "persistence_mode"),
        "ecc_mode": _find(gpu, "ecc_mode/current_ecc"),
        "ecc_mode_pending": _find(gpu, "ecc_mode/pending_ecc"),
        "mig_mode": _find(gpu, "mig_mode/current_mig"),
        "mig_mode_pending": _find(gpu, "mig_mode/pending_mig"),
        "mig_devices": len(mig_details),
        "mig_device_details": mig_details,
        "compute_mode": _find(gpu, "compute_mode"),
        "vbios_version": _find(gpu, "vbios_version"),
        "gsp_firmware_version": _find(gpu, "gsp_firmware_version"),
        "fabric_state": fabric_state,
        "fabric_status": fabric_status,
    }


def parse_nvidia_smi_xml(text: str, source: str | None = None) -> dict:
    """Parse ``nvidia-smi -q -x`` output.

    Returns ``driver_version``, ``cuda_version`` (the CUDA version the driver
    supports; None when it prints none, e.g. 'Not Found' or before R410),
    ``gpu_count`` (the number of <gpu> elements), ``attached_gpus`` (the
    count the header claims, None if absent), ``gpus`` (one dict per <gpu>,
    in output order, ``index`` being that position), ``fabric_manager``
    (None unless a GPU reports a fabric state) and ``warnings`` (strings).
    """
    text = require_text(text, source, "nvidia-smi -q -x XML output")
    body = text.lstrip("\ufeff \t\r\n")
    if "<!ENTITY" in body:
        raise ParseError("refusing XML that declares entities; not nvidia-smi output", source)
    try:
        root = ET.fromstring(body)
    except ET.ParseError as exc:
        raise ParseError(
            f"malformed or truncated nvidia-smi XML ({exc})", source
        ) from None
    if root.tag != "nvidia_smi_log":
        raise ParseError(
            f"not nvidia-smi -q -x output: root element is <{root.tag}>, "
            "expected <nvidia_smi_log>",
            source,
        )

    # R610+ renamed the labels; prefer the new tags, fall back to the old.
    driver = _find(root, "kmd_version") or _find(root, "driver_version")
    if driver is None:
        raise ParseError(
            "nvidia-smi XML has no <driver_version> or <kmd_version> value", source
        )
    cuda = _find(root, "cuda_umd_version") or _find(root, "cuda_version")

    warnings = []
    gpus = [_parse_gpu(gpu, i, source) for i, gpu in enumerate(root.findall("gpu"))]
    attached = int_or_none(_find(root, "attached_gpus"))
    if attached is not None and attached != len(gpus):
        warnings.append(
            f"attached_gpus says {attached} but the output lists {len(gpus)} <gpu> "
            "element(s); counting the <gpu> elements"
        )
    # Anonymised support bundles give every GPU the same placeholder UUID:
    # an anomaly to flag, not a reason to drop the driver and every GPU.
    uuids = [gpu["uuid"] for gpu in gpus]
    for uuid in sorted({u for u in uuids if uuids.count(u) > 1}):
        warnings.append(
            f"GPU UUID {uuid} is listed {uuids.count(uuid)} times (an anonymised bundle?); "
            "counting the <gpu> elements"
        )

    fabric_states = sorted({g["fabric_state"] for g in gpus if g["fabric_state"]})
    fabric_manager = None
    if fabric_states:
        fabric_manager = {
            "states": fabric_states,
            "statuses": sorted({g["fabric_status"] for g in gpus if g["fabric_status"]}),
        }

    return {
        "driver_version": driver,
        "cuda_version": cuda,
        "gpu_count": len(gpus),
        "attached_gpus": attached,
        "gpus": gpus,
        "fabric_manager": fabric_manager,
        "warnings": warnings,
    }


# --------------------------------------------------------------------------
# nvidia-smi / nvidia-smi -q text
# --------------------------------------------------------------------------

# "Driver Version: 470.63.01" (table header) and
# "Driver Version          : 610.47 [Deprecated; ...]" (-q) alike.
_LABEL_VALUE = r"\s*:\s*(" + _VERSION + r"|N/A|Not Found)"
_KMD = re.compile(r"\bKMD Version" + _LABEL_VALUE, re.IGNORECASE)
_DRIVER = re.compile(r"\bDriver Version" + _LABEL_VALUE, re.IGNORECASE)
_CUDA_UMD = re.compile(r"\bCUDA UMD Version" + _LABEL_VALUE, re.IGNORECASE)
_CUDA = re.compile(r"\bCUDA Version" + _LABEL_VALUE, re.IGNORECASE)
_SMI = re.compile(r"\bNVIDIA-SMI(?: version)?\s*:?\s*(" + _VERSION + ")", re.IGNORECASE)


def parse_nvidia_smi_text_driver(text: str, source: str | None = None) -> dict:
    """Read the driver and CUDA versions from plain ``nvidia-smi`` or ``-q`` text.

    Understands the old "Driver Version"/"CUDA Version" labels and the R610+
    "KMD Version"/"CUDA UMD Version" ones (preferred when both appear).
    Returns ``driver_version``, ``cuda_version`` (None when not printed),
    ``nvidia_smi_version`` (None when not printed) and ``driver_label``
    (which label the driver version was read from).
    """
    text = require_text(text, source, "nvidia-smi output")
    driver_label = "KMD Version"
    match = _KMD.search(text)
    if match is None or _clean(match.group(1)) is None:
        driver_label = "Driver Version"
        match = _DRIVER.search(text)
    driver = _clean(match.group(1)) if match else None
    if driver is None:
        raise ParseError(
            "no 'Driver Version' or 'KMD Version' found in nvidia-smi output", source
        )
    cuda_match = _CUDA_UMD.search(text) or _CUDA.search(text)
    smi_match = _SMI.search(text)
    return {
        "driver_version": driver,
        "cuda_version": _clean(cuda_match.group(1)) if cuda_match else None,
        "nvidia_smi_version": smi_match.group(1) if smi_match else None,
        "driver_label": driver_label,
    }


# --------------------------------------------------------------------------
# /proc/driver/nvidia/version
# --------------------------------------------------------------------------

_NVRM = re.compile(
    r"^NVRM version:\s*(?P<module>NVIDIA\b.*?Kernel Module(?: for (?P<arch_for>\S+))?)"
    r"\s+(?P<version>" + _VERSION + r")\b",
    re.MULTILINE,
)
_PROPRIETARY_ARCH = re.compile(r"NVIDIA UNIX (\S+) Kernel Module")
_GCC = re.compile(r"^GCC version:\s*(?P<full>.*?)\s*$", re.MULTILINE)
_GCC_NUMBER = re.compile(r"gcc version (" + _VERSION + ")")


def parse_proc_driver_version(text: str, source: str | None = None) -> dict:
    """Parse ``/proc/driver/nvidia/version``.

    Returns ``driver_version``, ``kernel_module`` (e.g. "NVIDIA UNIX x86_64
    Kernel Module" or "NVIDIA UNIX Open Kernel Module for x86_64"), ``open``
    (True for the open GPU kernel modules), ``arch``, ``gcc`` (the version
    number of the compiler that built the module, None if absent) and
    ``gcc_full`` (the whole "gcc version ..." text).
    """
    text = require_text(text, source, "/proc/driver/nvidia/version content")
    match = _NVRM.search(text)
    if match is None:
        raise ParseError(
            "no 'NVRM version: ... Kernel Module <version>' line; "
            "not /proc/driver/nvidia/version",
            source,
        )
    module = match.group("module")
    arch = match.group("arch_for")
    if arch is None:
        arch_match = _PROPRIETARY_ARCH.search(module)
        arch = arch_match.group(1) if arch_match else None
    gcc_full = gcc = None
    gcc_match = _GCC.search(text)
    if gcc_match and gcc_match.group("full"):
        gcc_full = gcc_match.group("full")
        number = _GCC_NUMBER.search(gcc_full)
        gcc = number.group(1) if number else None
    return {
        "driver_version": match.group("version"),
        "kernel_module": module,
        "open": "Open Kernel Module" in module,
        "arch": arch,
        "gcc": gcc,
        "gcc_full": gcc_full,
    }


# --------------------------------------------------------------------------
# nvcc --version / ptxas --version
# --------------------------------------------------------------------------

_RELEASE = re.compile(
    r"Cuda compilation tools, release (?P<release>\d+\.\d+), V(?P<version>" + _VERSION + ")"
)
_BUILT_ON = re.compile(r"^Built on (\S+)\s*$", re.MULTILINE)
_BUILD = re.compile(r"^Build (\S+)\s*$", re.MULTILINE)


def _parse_cuda_tool(text, source, tool: str, banner: str) -> dict:
    text = require_text(text, source, f"{tool} --version output")
    if banner not in text:
        raise ParseError(f"not {tool} --version output: no '{banner}' line", source)
    match = _RELEASE.search(text)
    if match is None:
        raise ParseError(
            f"{tool} --version output has no 'Cuda compilation tools, release X.Y, VX.Y.Z' line",
            source,
        )
    release, version = match.group("release"), match.group("version")
    if not version.startswith(release + "."):
        raise ParseError(
            f"{tool} reports release {release} but version {version}", source
        )
    built_on = _BUILT_ON.search(text)
    build = _BUILD.search(text)
    return {
        "release": release,
        "version": version,
        "built_on": built_on.group(1) if built_on else None,
        "build": build.group(1) if build else None,
    }


def parse_nvcc_version(text: str, source: str | None = None) -> dict:
    """Parse ``nvcc --version``: ``release`` ("12.1"), ``version`` ("12.1.105"),
    ``built_on`` and ``build`` (None on toolkits that do not print them)."""
    return _parse_cuda_tool(text, source, "nvcc", "Cuda compiler driver")


def parse_ptxas_version(text: str, source: str | None = None) -> dict:
    """Parse ``ptxas --version``; same keys as :func:`parse_nvcc_version`."""
    return _parse_cuda_tool(text, source, "ptxas", "Ptx optimizing assembler")


# --------------------------------------------------------------------------
# CUDA toolkit version.json / version.txt
# --------------------------------------------------------------------------


def _release_of(version: str) -> str:
    return ".".join(version.split(".")[:2])


def parse_cuda_version_json(text: str, source: str | None = None) -> dict:
    """Parse a CUDA toolkit ``version.json`` (CUDA 11.1 and later).

    Returns ``version`` (the toolkit, e.g. "12.8.2"), ``release`` ("12.8") and
    ``components`` ({component key: version} for every other entry, e.g.
    "cuda_nvcc": "12.8.93").
    """
    text = require_text(text, source, "CUDA version.json content")
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ParseError(f"CUDA version.json is not valid JSON ({exc})", source) from None
    cuda = data.get("cuda") if isinstance(data, dict) else None
    version = cuda.get("version") if isinstance(cuda, dict) else None
    if not isinstance(version, str) or not re.match(_VERSION + "$", version.strip()):
        raise ParseError(
            "CUDA version.json has no '\"cuda\": {\"version\": ...}' entry", source=source
        )
    version = version.strip()
    components = {}
    for key, entry in data.items():
        if key == "cuda":
            continue
        if isinstance(entry, dict) and isinstance(entry.get("version"), str):
            components[key] = entry["version"].strip()
    return {"version": version, "release": _release_of(version), "components": components}


_VERSION_TXT = re.compile(r"^CUDA Version\s+(" + _VERSION + r")\s*$", re.MULTILINE)


def parse_cuda_version_txt(text: str, source: str | None = None) -> dict:
    """Parse the ``version.txt`` of CUDA toolkits up to 11.0 ("CUDA Version
    11.0.207"): ``version`` and ``release``."""
    text = require_text(text, source, "CUDA version.txt content")
    match = _VERSION_TXT.search(text)
    if match is None:
        raise ParseError("no 'CUDA Version X.Y.Z' line; not a CUDA version.txt", source)
    version = match.group(1)
    return {"version": version, "release": _release_of(version)}
