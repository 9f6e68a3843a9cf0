"""A repository URL with credentials never reaches Ansible's output.

Role apt_repo's preflight check (tasks/check.yml, what every role's
preflight runs for NVIDIA's and Docker's repositories) is run on this
controller in check mode with a mirror URL holding user:password@ and a key
URL holding a token, at -vvv. Nothing listens there, so the check fails: the
failure must name the repository and the inventory variables, show the URL
as *** where the secret was, and never the password or the token.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, ANSIBLE_CACHE_PLUGIN="memory", ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="False")


def test_a_failing_repository_check_hides_the_password_and_the_token(tmp_path):
    play = [{"name": "Check a repository reached with credentials", "hosts": "localhost", "connection": "local",
             "gather_facts": False,
             "tasks": [{"ansible.builtin.include_role": {"name": "lockstep.gpu.apt_repo", "tasks_from": "check"},
                        "vars": {"apt_repo_name": "credtest",
                                 "apt_repo_url": "https://alice:s3cretpw@127.0.0.1:9/debian",
                                 "apt_repo_key_url": "https://127.0.0.1:9/key.asc?token=t0kenval",
                                 "apt_repo_key_fingerprint": "C95B321B61E88C1809C4F759DDCAE044F796ECB0"}}]}]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play, sort_keys=False))
    result = subprocess.run([str(ROOT / ".venv" / "bin" / "ansible-playbook"), "-vvv", str(tmp_path / "play.yml")],
                            capture_output=True, text=True, cwd=ROOT, env=ENV, check=False)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "repository credtest: apt_repo_url, apt_repo_key_url and apt_repo_key_fingerprint" in output, output[-3000:]
    assert "key.asc?token=***" in output
    assert "s3cretpw" not in output and "t0kenval" not in output
