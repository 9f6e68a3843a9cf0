"""Credentials out of module messages (module_utils/redact.py)."""

from __future__ import annotations

import pytest
from ansible_collections.lockstep.gpu.plugins.module_utils.redact import has_credentials, redact_urls


@pytest.mark.parametrize("text, shown", [
    ("pip download from https://alice:pa55@pypi.corp.example/simple failed",
     "pip download from https://***@pypi.corp.example/simple failed"),
    ("https://token@mirrors.example.cn/debian", "https://***@mirrors.example.cn/debian"),
    ("cannot fetch https://conda.example.com/t/abc-123/main/linux-64/x.conda: 404",
     "cannot fetch https://conda.example.com/t/***/main/linux-64/x.conda: 404"),
    ("key https://repo.example/key.asc?token=XYZ&arch=amd64", "key https://repo.example/key.asc?token=***&arch=amd64"),
    ("two: http://u:p@a/x and ftp://v@b/y", "two: http://***@a/x and ftp://***@b/y"),
    # Nothing to hide: unchanged (an e-mail address in a key's UID is no URL).
    ("https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/",
     "https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/"),
    ("Lockstep repo key <repo@example.invalid>", "Lockstep repo key <repo@example.invalid>"),
])
def test_redact_urls(text, shown):
    assert redact_urls(text) == shown


def test_redact_takes_any_object():
    assert redact_urls(OSError("http://u:p@h/")) == "http://***@h/"


@pytest.mark.parametrize("value, found", [
    ("https://alice:pa55@pypi.corp.example/simple", True),
    (["https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/", "file:///srv/mirror"], False),
    (["", None, ["https://mirror.example/debian", "https://c.example/t/tok/main"]], True),
    ({"url": "https://repo.example/key.asc?token=XYZ"}, True),
    ({"env": {"channels": ["https://conda.anaconda.org/conda-forge"]}}, False),
    ("", False),
    (None, False),
])
def test_has_credentials(value, found):
    assert has_credentials(value) is found
