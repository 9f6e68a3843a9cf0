# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Sizing filters: GPU memory a model's weights need, and how many GPUs hold it.

Functions (filters lockstep.gpu.gpu_memory_gb and lockstep.gpu.gpus_needed)::

    gpu_memory_gb(params_billion, precision="fp16", overhead=0.0) -> float
    gpus_needed(params_billion, gpu_memory_gb, precision="fp16", overhead=0.2) -> int

Semantics
---------
- Units are GiB (2**30 bytes), the unit nvidia-smi reports (MiB / 1024), and
  what the project's seed notes call "GB".
- Memory = params_billion * 1e9 * bytes per parameter * (1 + overhead), where
  ``overhead`` is a fraction (0.2 = 20 % more).
- ``gpu_memory_gb`` defaults to ``overhead=0``: the weights alone.
  That is what the seed notes' anchors are: 7B at fp16 = 14e9 bytes
  = 13.04 GiB ("about 13 GB"); LLaMA-"33B" (32.5e9 parameters) = 60.5 GiB
  ("about 60 GB"). A nominal 33e9 parameters give 61.5 GiB.
- ``gpus_needed`` defaults to ``overhead=0.2``, a common rule of
  thumb for activations, KV cache and the CUDA context when serving; pass
  ``overhead=0`` for weights only. ``gpu_memory_gb`` is in the same GiB (an
  "80 GB" A100 has 80 GiB).

Bytes per parameter: fp32 4; fp16, bf16 2; fp8, int8 1; int4 0.5 (aliases
float32, float16, half, bfloat16 accepted, case-insensitive).
"""

from __future__ import annotations

import math

from ansible.errors import AnsibleFilterError

GIB = 2**30

#: precision -> bytes per parameter
LOCKSTEP_BYTES_PER_PARAM = {
    "fp32": 4.0,
    "float32": 4.0,
    "fp16": 2.0,
    "float16": 2.0,
    "half": 2.0,
    "bf16": 2.0,
    "bfloat16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5,
}

DEFAULT_OVERHEAD = 0.0
DEFAULT_SERVING_OVERHEAD = 0.2


def _number(value, what, positive=True, allow_zero=False):
    if isinstance(value, bool) or value is None:
        raise AnsibleFilterError(f"lockstep: {what} must be a number, got {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise AnsibleFilterError(f"lockstep: {what} must be a number, got {value!r}") from None
    if math.isnan(number) or math.isinf(number):
        raise AnsibleFilterError(f"lockstep: {what} must be a finite number, got {value!r}")
    if positive and (number < 0 or (number == 0 and not allow_zero)):
        bound = ">= 0" if allow_zero else "> 0"
        raise AnsibleFilterError(f"lockstep: {what} must be {bound}, got {value!r}")
    return number


def _bytes_per_param(precision):
    key = str(precision).strip().lower() if isinstance(precision, str) else None
    if key not in LOCKSTEP_BYTES_PER_PARAM:
        raise AnsibleFilterError(
            f"lockstep: unknown precision {precision!r}; allowed: "
            f"{', '.join(LOCKSTEP_BYTES_PER_PARAM)}"
        )
    return LOCKSTEP_BYTES_PER_PARAM[key]


def _memory_gib(params_billion, precision, overhead):
    params = _number(params_billion, "params_billion (parameters, in billions)")
    per_param = _bytes_per_param(precision)
    extra = _number(overhead, "overhead (a fraction, e.g. 0.2)", allow_zero=True)
    return params * 1e9 * per_param * (1.0 + extra) / GIB


def gpu_memory_gb(params_billion, precision="fp16", overhead=DEFAULT_OVERHEAD):
    """GiB of GPU memory for a model's weights (plus ``overhead``), rounded to 0.01."""
    return round(_memory_gib(params_billion, precision, overhead), 2)


def gpus_needed(
    params_billion, gpu_memory_gb, precision="fp16", overhead=DEFAULT_SERVING_OVERHEAD
):
    """GPUs of ``gpu_memory_gb`` GiB each needed to hold the model (at least 1)."""
    per_gpu = _number(gpu_memory_gb, "gpu_memory_gb (memory per GPU, GiB)")
    need = _memory_gib(params_billion, precision, overhead)
    # Guard against float noise turning an exact fit (e.g. 2.0000000001) into one GPU more.
    return max(1, math.ceil(need / per_gpu - 1e-9))
