# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the train_check role: lockstep.gpu.train_check and
train_check_srun. Each filter's documentation is the YAML file of its name
beside this one."""

from __future__ import annotations

from ansible_collections.lockstep.gpu.plugins.module_utils import train_check as reader


def train_check(results):
    """{node: torchrun's command result} -> {ok, message, table, world_size, broken, waited}."""
    return reader.summarize({str(node): dict(result or {}) for node, result in dict(results or {}).items()})


def train_check_srun(stdout, stderr=""):
    """srun --label output of the job -> {node: {rc, stdout, stderr}}."""
    return reader.split_srun(stdout, stderr)


class FilterModule:
    """torchrun results of the train_check job."""

    def filters(self):
        return {"train_check": train_check, "train_check_srun": train_check_srun}
