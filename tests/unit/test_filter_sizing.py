# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for plugin_utils/sizing.py (filters lockstep.gpu.gpu_memory_gb, gpus_needed)."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.lockstep.gpu.plugins.filter import sizing as ls_filters
from ansible_collections.lockstep.gpu.plugins.plugin_utils.sizing import gpu_memory_gb, gpus_needed


def test_seed_note_anchor_7b_fp16():
    # 7e9 parameters x 2 bytes = 14e9 bytes = 13.04 GiB: "a 7B model is about 13 GB".
    assert gpu_memory_gb(7) == pytest.approx(13.04, abs=0.01)
    assert abs(gpu_memory_gb(7, "fp16") - 13) <= 1


def test_seed_note_anchor_33b_fp16():
    # "A 33B model is about 60 GB": LLaMA-33B has 32.5e9 parameters -> 60.54 GiB.
    assert abs(gpu_memory_gb(32.5, "fp16") - 60) <= 1
    # The nominal 33e9 is 66e9 bytes = 61.47 GiB (weights only, no overhead).
    assert gpu_memory_gb(33) == pytest.approx(61.47, abs=0.01)


@pytest.mark.parametrize(
    "precision,gib",
    [
        ("fp32", 26.08),
        ("float32", 26.08),
        ("fp16", 13.04),
        ("bf16", 13.04),
        ("BF16", 13.04),
        ("int8", 6.52),
        ("fp8", 6.52),
        ("int4", 3.26),
    ],
)
def test_bytes_per_precision(precision, gib):
    assert gpu_memory_gb(7, precision) == pytest.approx(gib, abs=0.01)


def test_overhead_is_a_fraction():
    assert gpu_memory_gb(7, "fp16", overhead=0.2) == pytest.approx(13.04 * 1.2, abs=0.01)
    assert gpu_memory_gb("70", "fp16", overhead=0) == pytest.approx(130.39, abs=0.01)


def test_gpus_needed():
    # 70B fp16 = 130.4 GiB, +20 % = 156.5 GiB -> 2 x 80 GiB.
    assert gpus_needed(70, 80) == 2
    assert gpus_needed(70, 80, overhead=0) == 2
    assert gpus_needed(70, 40, "fp16") == 4  # 156.5 / 40 = 3.9
    assert gpus_needed(7, 80) == 1
    assert gpus_needed(405, 80, "fp8") == 6  # 377.2 GiB * 1.2 = 452.6
    assert gpus_needed(405, 141, "bf16") == 7  # H200: 754.4 * 1.2 = 905.3


def test_gpus_needed_exact_fit_is_not_rounded_up():
    # 2**30 bytes of weights in fp32 = 0.268435456 B parameters = exactly 1 GiB.
    assert gpus_needed(0.268435456, 0.5, "fp32", overhead=0) == 2


def test_bad_precision_names_allowed_values():
    with pytest.raises(AnsibleFilterError) as err:
        gpu_memory_gb(7, "fp12")
    message = str(err.value)
    assert "'fp12'" in message
    for allowed in ("fp32", "fp16", "bf16", "int8", "int4"):
        assert allowed in message
    with pytest.raises(AnsibleFilterError, match="precision"):
        gpus_needed(7, 80, precision=None)


@pytest.mark.parametrize("bad", [0, -7, "seven", None, True, float("nan")])
def test_bad_params(bad):
    with pytest.raises(AnsibleFilterError, match="params_billion"):
        gpu_memory_gb(bad)


def test_bad_gpu_memory_and_overhead():
    with pytest.raises(AnsibleFilterError, match="gpu_memory_gb"):
        gpus_needed(7, 0)
    with pytest.raises(AnsibleFilterError, match="overhead"):
        gpu_memory_gb(7, overhead=-0.1)


def test_filter_module_exposes_filters():
    assert set(ls_filters.FilterModule().filters()) == {"gpu_memory_gb", "gpus_needed"}
