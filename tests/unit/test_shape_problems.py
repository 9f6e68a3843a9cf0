"""lockstep.gpu.shape_problems: a string or a number where a role takes a list or a mapping."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.lockstep.gpu.plugins.filter.preflight import shape_problems

SPEC = {"options": {
    "cuda_versions": {"type": "list", "elements": "str"},
    "network_mtu": {"type": "dict"},
    "base_timezone": {"type": "str"},
    "conda_environments": {"type": "list", "elements": "dict", "options": {
        "name": {"type": "str"}, "packages": {"type": "list"}, "python": {"type": "str"}}},
}}


def test_values_of_the_right_shape_and_undefined_ones_pass():
    values = {"cuda_versions": ["12.1"], "network_mtu": {"eth0": 9000}, "base_timezone": 3,
              "conda_environments": [{"name": "train", "packages": ["numpy"]}], "unrelated": "x"}
    assert shape_problems(values, [SPEC]) == []
    assert shape_problems({}, SPEC) == []


@pytest.mark.parametrize("name, value, message", [
    ("cuda_versions", "12.1", "cuda_versions '12.1' is not a list (it is a string): write it as a YAML list, "
                              "e.g. cuda_versions: ['12.1']."),
    ("cuda_versions", 12.1, "cuda_versions '12.1' is not a list (it is a number)"),
    ("cuda_versions", {"12.1": 1}, "cuda_versions '{'12.1': 1}' is not a list (it is a mapping)"),
    ("network_mtu", "9000", "network_mtu '9000' is not a mapping (it is a string): write it as a YAML mapping, "
                            "e.g. network_mtu: {key: value}."),
    ("network_mtu", ["eth0"], "network_mtu '['eth0']' is not a mapping (it is a list)"),
    ("network_mtu", None, "network_mtu 'None' is not a mapping (it is null)"),
])
def test_a_value_of_another_shape_is_named_with_its_value(name, value, message):
    (problem,) = shape_problems({name: value}, [SPEC])
    assert problem.startswith(message), problem


def test_entries_of_a_list_of_mappings_are_checked():
    problems = shape_problems({"conda_environments": ["train", {"name": "x", "packages": "numpy"}]}, [SPEC])
    assert problems == [
        "conda_environments[0] 'train' is not a mapping (it is a string): each entry of conda_environments is a "
        "mapping of name, packages, python.",
        "conda_environments[1].packages 'numpy' is not a list (it is a string): write it as a YAML list, "
        "e.g. packages: ['numpy'].",
    ]


def test_a_long_value_is_shortened():
    (problem,) = shape_problems({"cuda_versions": "1" * 100_000}, [SPEC])
    assert len(problem) < 300 and "..." in problem


def test_a_variable_in_several_specs_is_named_once():
    assert len(shape_problems({"cuda_versions": "12.1"}, [SPEC, SPEC])) == 1


def test_not_a_mapping_of_variables_is_an_error():
    with pytest.raises(AnsibleFilterError, match="expects the node's variables"):
        shape_problems(["cuda_versions"], [SPEC])
