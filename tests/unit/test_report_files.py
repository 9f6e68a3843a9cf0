"""report_files: a run's report files in one module run (role verify's reports and history).

Run as Ansible runs it (the module file with its arguments), on files under tmp_path.
"""

from __future__ import annotations

import stat

import pytest
from ansible_collections.lockstep.gpu.plugins.modules import report_files


@pytest.fixture
def run(run_module_file):
    return lambda tmp_path, check=False, **args: run_module_file(report_files, check, **args)


def history(tmp_path, *names):
    folder = tmp_path / "reports" / "history"
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).write_text("{}\n")
    return folder


def test_the_files_and_their_folders_are_written_with_the_mode(run, tmp_path):
    report, old = tmp_path / "reports" / "drift.json", tmp_path / "reports" / "history" / "20261207T101500Z.json"
    result = run(tmp_path, files={str(report): '{"ok": true}\n', str(old): "{}\n"})
    assert result["changed"] is True and result["written"] == [str(report), str(old)] and result["removed"] == []
    assert report.read_text() == '{"ok": true}\n' and old.read_text() == "{}\n"
    assert stat.S_IMODE(report.stat().st_mode) == 0o644
    assert stat.S_IMODE(report.parent.stat().st_mode) == 0o755
    assert not [p for p in report.parent.iterdir() if p.name.startswith(".lockstep-")]


def test_a_file_already_right_is_not_written_again(run, tmp_path):
    report = tmp_path / "drift.md"
    report.write_text("# Drift\n")
    report.chmod(0o600)
    before = report.stat().st_ino
    result = run(tmp_path, files={str(report): "# Drift\n", str(tmp_path / "drift.html"): "<html>"})
    assert result["written"] == [str(tmp_path / "drift.html")]
    assert report.stat().st_ino == before and stat.S_IMODE(report.stat().st_mode) == 0o600
    again = run(tmp_path, files={str(report): "# Drift\n"})
    assert again["changed"] is False and again["written"] == [] and again["removed"] == []


def test_the_history_keeps_its_newest_files_counting_the_one_written_now(run, tmp_path):
    folder = history(tmp_path, "20261201T000000Z.json", "20261202T000000Z.json", "20261203T000000Z.json", "notes.txt")
    new = folder / "20261204T000000Z.json"
    result = run(tmp_path, files={str(new): "{}\n"}, prune={"path": str(folder), "keep": 2})
    assert result["removed"] == [str(folder / "20261201T000000Z.json"), str(folder / "20261202T000000Z.json")]
    assert sorted(p.name for p in folder.iterdir()) == ["20261203T000000Z.json", "20261204T000000Z.json", "notes.txt"]


def test_keep_0_keeps_the_whole_history(run, tmp_path):
    folder = history(tmp_path, "a.json", "b.json")
    result = run(tmp_path, files={str(folder / "c.json"): "{}\n"}, prune={"path": str(folder), "keep": 0})
    assert result["removed"] == [] and len(list(folder.iterdir())) == 3


def test_check_mode_names_what_it_would_do_and_changes_nothing(run, tmp_path):
    folder = history(tmp_path, "a.json", "b.json")
    new = folder / "c.json"
    result = run(tmp_path, check=True, files={str(new): "{}\n"}, prune={"path": str(folder), "keep": 1})
    assert result["changed"] is True and result["written"] == [str(new)]
    assert result["removed"] == [str(folder / "a.json"), str(folder / "b.json")]
    assert sorted(p.name for p in folder.iterdir()) == ["a.json", "b.json"]


def test_a_relative_path_or_a_bad_mode_fails_and_writes_nothing(run, tmp_path):
    result = run(tmp_path, files={"drift.json": "{}", str(tmp_path / "x.json"): "{}"})
    assert result["failed"] is True and result["msg"] == "files must be absolute paths: drift.json"
    result = run(tmp_path, files={str(tmp_path / "x.json"): "{}"}, mode="rw-r--r--")
    assert result["failed"] is True and "an octal mode such as 0644" in result["msg"]
    assert not (tmp_path / "x.json").exists()


def test_a_folder_that_cannot_be_written_fails_naming_the_file(run, tmp_path):
    blocker = tmp_path / "reports"
    blocker.write_text("a file where the folder should be")
    result = run(tmp_path, files={str(blocker / "drift.json"): "{}"})
    assert result["failed"] is True and result["msg"].startswith(f"cannot write {blocker}")
