"""plugin_utils/exporter.py: Lockstep's components as node-exporter textfile
metrics (label escaping and truncation, the textfile of a success and of a
failure, the atomic write, the subprocess runner)."""

from __future__ import annotations

import re
import stat
import sys

import pytest

from ansible_collections.lockstep.gpu.plugins.plugin_utils import exporter

# A sample line of the text exposition format: name{label="value",...} number.
LABEL = r'[a-z_]+="(?:[^"\\\n]|\\\\|\\"|\\n)*"'
SAMPLE = re.compile(r'^[a-z_]+(?:\{' + LABEL + r'(?:,' + LABEL + r')*\})? [0-9.e+-]+$')


def unescape(text: str) -> str:
    return re.sub(r'\\(.)', lambda m: {"n": "\n"}.get(m.group(1), m.group(1)), text)


@pytest.mark.parametrize("raw, escaped", [
    ("2.18.3-1+cuda12.1", "2.18.3-1+cuda12.1"),
    ('say "hi"', 'say \\"hi\\"'),
    ("C:\\path", "C:\\\\path"),
    ("two\nlines", "two\\nlines"),
    ('\\"\n', '\\\\\\"\\n'),
])
def test_label_values_are_escaped_as_the_exposition_format_says(raw, escaped):
    assert exporter.escape_label_value(raw) == escaped
    assert unescape(escaped) == raw


def test_values_become_label_text():
    assert exporter.label_value(True) == "true"
    assert exporter.label_value(False) == "false"
    assert exporter.label_value(8) == "8"
    assert exporter.label_value({"error": "nvidia-smi-q-x.xml: not XML"}) == "unreadable: nvidia-smi-q-x.xml: not XML"


def test_long_values_are_cut_to_the_limit():
    assert exporter.label_value("x" * 200) == "x" * 200
    cut = exporter.label_value("x" * 201)
    assert len(cut) == 200 and cut.endswith("...") and cut.startswith("x" * 197)
    assert exporter.label_value("abcdef", limit=5) == "ab..."


def test_a_success_renders_every_component_sorted_with_its_time():
    text = exporter.render({"nccl.package": "2.18.3-1+cuda12.1", "driver.loaded": True, "gpu.count": 8,
                            "os.release": 'Debian "12"'}, 1764770000.5)
    samples = [line for line in text.splitlines() if not line.startswith("#")]
    assert samples == [
        'lockstep_component_info{component="driver.loaded",value="true"} 1',
        'lockstep_component_info{component="gpu.count",value="8"} 1',
        'lockstep_component_info{component="nccl.package",value="2.18.3-1+cuda12.1"} 1',
        'lockstep_component_info{component="os.release",value="Debian \\"12\\""} 1',
        "lockstep_collection_timestamp_seconds 1764770000.5",
        "lockstep_collection_success 1",
    ]
    assert all(SAMPLE.match(line) for line in samples)
    assert text.endswith("\n")
    # One HELP and one TYPE per metric, before its samples.
    for name in ("lockstep_component_info", "lockstep_collection_timestamp_seconds", "lockstep_collection_success"):
        assert text.index(f"# HELP {name} ") < text.index(f"# TYPE {name} gauge\n") < text.index(f"\n{name}")


def test_a_value_with_a_newline_stays_on_one_line():
    text = exporter.render({"nccl_conf.sha256": "a\nb"}, 1.0)
    assert 'lockstep_component_info{component="nccl_conf.sha256",value="a\\nb"} 1\n' in text


def test_a_failure_keeps_the_last_values_and_their_time():
    previous = exporter.render({"nccl.package": "2.18.3-1+cuda12.1"}, 1764770000.0)
    text = exporter.render_failure(previous)
    samples = [line for line in text.splitlines() if not line.startswith("#")]
    assert samples == [
        'lockstep_component_info{component="nccl.package",value="2.18.3-1+cuda12.1"} 1',
        "lockstep_collection_timestamp_seconds 1764770000.0",
        "lockstep_collection_success 0",
    ]
    # A second failure keeps them still.
    assert exporter.render_failure(text) == text


def test_a_first_failure_has_only_the_success_gauge():
    assert [line for line in exporter.render_failure(None).splitlines() if not line.startswith("#")] == [
        "lockstep_collection_success 0"]


def test_the_textfile_is_replaced_whole_and_no_temporary_file_stays(tmp_path):
    path = tmp_path / "lockstep.prom"
    path.write_text("old\n")
    with open(path, encoding="utf-8") as reader:  # a reader of the old file keeps reading the old file
        exporter.write_atomically(str(path), "new\n")
        assert reader.read() == "old\n"
    assert path.read_text() == "new\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lockstep.prom"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary_file(tmp_path, monkeypatch):
    path = tmp_path / "lockstep.prom"
    path.write_text("old\n")

    def refuse(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(exporter.os, "replace", refuse)
    with pytest.raises(OSError):
        exporter.write_atomically(str(path), "new\n")
    assert path.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lockstep.prom"]


def test_main_writes_the_components_it_collected(tmp_path, monkeypatch):
    out = tmp_path / "lockstep.prom"
    seen = {}

    def fake_collect(args):
        seen["packages"] = args.package
        return {"nccl.package": "2.18.3-1+cuda12.1"}

    monkeypatch.setattr(exporter, "collect", fake_collect)
    assert exporter.main(["--output", str(out), "--package", "libnccl2"], now=lambda: 42.0) == 0
    assert seen["packages"] == ["libnccl2"]
    text = out.read_text()
    assert 'lockstep_component_info{component="nccl.package",value="2.18.3-1+cuda12.1"} 1\n' in text
    assert "\nlockstep_collection_timestamp_seconds 42.0\n" in text and "\nlockstep_collection_success 1\n" in text


def test_main_reports_a_failed_collection_as_success_0(tmp_path, monkeypatch, capsys):
    out = tmp_path / "lockstep.prom"
    out.write_text(exporter.render({"nccl.package": "2.18.3-1+cuda12.1"}, 42.0))

    def broken(args):
        raise RuntimeError("dpkg-query crashed")

    monkeypatch.setattr(exporter, "collect", broken)
    assert exporter.main(["--output", str(out)], now=lambda: 99.0) == 1
    text = out.read_text()
    assert "\nlockstep_collection_success 0\n" in text
    assert "\nlockstep_collection_timestamp_seconds 42.0\n" in text
    assert 'component="nccl.package",value="2.18.3-1+cuda12.1"' in text
    assert "dpkg-query crashed" in capsys.readouterr().err


def test_the_runner_finds_tools_in_opt_dirs_first_and_runs_them_in_the_c_locale(tmp_path):
    tool = tmp_path / "python3"
    tool.write_text("#!/bin/sh\nexit 0\n")
    tool.chmod(0o755)
    runner = exporter.SubprocessRunner()
    assert runner.which("python3", [str(tmp_path)]) == str(tool)
    assert runner.which("lockstep-no-such-tool") is None
    rc, out, err = runner.run([sys.executable, "-c",
                               "import os, sys; print(os.environ['LC_ALL']); print('oops', file=sys.stderr); sys.exit(3)"])
    assert (rc, out, err) == (3, "C\n", "oops\n")


def test_the_runner_searches_sbin_too(tmp_path, monkeypatch):
    """As AnsibleModule.get_bin_path does: ldconfig lives in /sbin, which a service's PATH may lack."""
    tool = tmp_path / "ldconfig"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(exporter.SubprocessRunner, "SBIN", (str(tmp_path),))
    assert exporter.SubprocessRunner().which("ldconfig") == str(tool)
