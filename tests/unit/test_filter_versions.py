# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for plugin_utils/versions.py and cuda.py (filters lockstep.gpu.version_compare, cuda_driver_check, ...)."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.lockstep.gpu.plugins.filter import versions as version_filters
from ansible_collections.lockstep.gpu.plugins.plugin_utils import versions as lv
from ansible_collections.lockstep.gpu.plugins.plugin_utils.cuda import (
    LOCKSTEP_CUDA_MIN_DRIVER,
    cuda_driver_check,
    cuda_driver_compatible,
    cuda_min_driver,
)
from ansible_collections.lockstep.gpu.plugins.plugin_utils.versions import (
    pkg_cuda_tag,
    pkg_upstream,
    version_compare,
    version_parse,
)

# --------------------------------------------------------------------------- #
# debian
# --------------------------------------------------------------------------- #

# The comparison table of dpkg's own test-suite, scripts/t/Dpkg_Version.t
# (__DATA__ section: "a b result"), https://git.dpkg.org/cgit/dpkg/dpkg.git
DPKG_VERSION_T = """
1.0-1 2.0-2 -1
2.2~rc-4 2.2-1 -1
2.2-1 2.2~rc-4 1
1.0000-1 1.0-1 0
1 0:1 0
0 0:0-0 0
2:2.5 1:7.5 1
1:0foo 0foo 1
0:0foo 0foo 0
0foo 0foo 0
0foo- 0foo 0
0foo- 0foo-0 0
0foo 0fo 1
0foo- 0foo+ -1
0foo~1 0foo -1
0foo~foo+Bar 0foo~foo+bar -1
0foo~~ 0foo~ -1
1~ 1 -1
12345+that-really-is-some-ver-0 12345+that-really-is-some-ver-10 -1
0foo-0 0foo-01 -1
0foo.bar 0foobar 1
0foo.bar 0foo1bar 1
0foo.bar 0foo0bar 1
0foo1bar-1 0foobar-1 -1
0foo2.0 0foo2 1
0foo2.0.0 0foo2.10.0 -1
0foo2.0 0foo2.0.0 -1
0foo2.0 0foo2.10 -1
0foo2.1 0foo2.10 -1
1.09 1.9 0
1.0.8+nmu1 1.0.8 1
3.11 3.10+nmu1 1
0.9j-20080306-4 0.9i-20070324-2 1
1.2.0~b7-1 1.2.0~b6-1 1
1.011-1 1.06-2 1
0.0.9+dfsg1-1 0.0.8+dfsg1-3 1
4.6.99+svn6582-1 4.6.99+svn6496-1 1
53 52 1
0.9.9~pre122-1 0.9.9~pre111-1 1
2:2.3.2-2+lenny2 2:2.3.2-2 1
1:3.8.1-1 3.8.GA-1 1
1.0.1+gpl-1 1.0.1-2 1
1a 1000a -1
-0.6.5 0.9.1 -1
"""


def _cases(table):
    for line in table.strip().splitlines():
        a, b, res = line.split()
        yield a, b, int(res)


@pytest.mark.parametrize("a,b,expected", list(_cases(DPKG_VERSION_T)))
def test_debian_dpkg_testsuite(a, b, expected):
    assert version_compare(a, b, "debian") == expected
    assert version_compare(b, a, "debian") == -expected


def test_debian_policy_tilde_example():
    # Debian Policy 5.6.12 (Version): "~~, ~~a, ~, the empty part, a" sort in
    # this order. As upstream versions after a common "1.0":
    ordered = ["1.0~~", "1.0~~a", "1.0~", "1.0", "1.0a"]
    for lower, higher in zip(ordered, ordered[1:]):
        assert version_compare(lower, higher, "debian") == -1, (lower, higher)
        assert version_compare(higher, lower, "debian") == 1


def test_debian_letters_before_non_letters():
    assert version_compare("1.0a", "1.0+", "debian") == -1
    assert version_compare("1.0+", "1.0.", "debian") == -1  # '+' (43) < '.' (46)


@pytest.mark.parametrize(
    "a,b,expected",
    [
        ("1:2.6.2-4+deb12u1", "1:2.6.2-4", 1),
        ("1:2.6.2-4+deb12u1", "2.7.0-1", 1),  # the epoch wins
        ("2.18.3-1+cuda12.1", "2.18.3-1+cuda12.2", -1),
        ("2.18.3-1+cuda12.1", "2.18.1-1+cuda12.1", 1),
        ("535.261.03-1~deb12u1", "535.261.03-1", -1),  # backport sorts before
        ("535.261.03-1", "535.104.05-1", 1),
        ("12.1.1-1", "12.1.0-1", 1),
    ],
)
def test_debian_cluster_package_versions(a, b, expected):
    assert version_compare(a, b, "debian") == expected
    assert version_compare(a, b) == expected  # auto picks debian


# --------------------------------------------------------------------------- #
# rpm
# --------------------------------------------------------------------------- #

# rpm's test-suite, tests/rpmvercmp.at (RPMVERCMP(a, b, result) lines),
# https://github.com/rpm-software-management/rpm -- including the tilde and
# caret cases.
RPMVERCMP_AT = """
1.0 1.0 0
1.0 2.0 -1
2.0 1.0 1
2.0.1 2.0.1 0
2.0 2.0.1 -1
2.0.1 2.0 1
2.0.1a 2.0.1a 0
2.0.1a 2.0.1 1
2.0.1 2.0.1a -1
5.5p1 5.5p1 0
5.5p1 5.5p2 -1
5.5p2 5.5p1 1
5.5p10 5.5p10 0
5.5p1 5.5p10 -1
5.5p10 5.5p1 1
10xyz 10.1xyz -1
10.1xyz 10xyz 1
xyz10 xyz10 0
xyz10 xyz10.1 -1
xyz10.1 xyz10 1
xyz.4 xyz.4 0
xyz.4 8 -1
8 xyz.4 1
xyz.4 2 -1
2 xyz.4 1
5.5p2 5.6p1 -1
5.6p1 5.5p2 1
5.6p1 6.5p1 -1
6.5p1 5.6p1 1
6.0.rc1 6.0 1
6.0 6.0.rc1 -1
10b2 10a1 1
10a2 10b2 -1
1.0aa 1.0aa 0
1.0a 1.0aa -1
1.0aa 1.0a 1
10.0001 10.0001 0
10.0001 10.1 0
10.1 10.0001 0
10.0001 10.0039 -1
10.0039 10.0001 1
4.999.9 5.0 -1
5.0 4.999.9 1
20101121 20101121 0
20101121 20101122 -1
20101122 20101121 1
2_0 2_0 0
2.0 2_0 0
2_0 2.0 0
a a 0
a+ a+ 0
a+ a_ 0
a_ a+ 0
+a +a 0
+a _a 0
_a +a 0
+_ +_ 0
_+ +_ 0
_+ _+ 0
+ _ 0
_ + 0
1.0~rc1 1.0~rc1 0
1.0~rc1 1.0 -1
1.0 1.0~rc1 1
1.0~rc1 1.0~rc2 -1
1.0~rc2 1.0~rc1 1
1.0~rc1~git123 1.0~rc1~git123 0
1.0~rc1~git123 1.0~rc1 -1
1.0~rc1 1.0~rc1~git123 1
1.0^ 1.0^ 0
1.0^ 1.0 1
1.0 1.0^ -1
1.0^git1 1.0^git1 0
1.0^git1 1.0 1
1.0 1.0^git1 -1
1.0^git1 1.0^git2 -1
1.0^git2 1.0^git1 1
1.0^git1 1.01 -1
1.01 1.0^git1 1
1.0^20160101 1.0^20160101 0
1.0^20160101 1.0.1 -1
1.0.1 1.0^20160101 1
1.0^20160101^git1 1.0^20160101^git1 0
1.0^20160102 1.0^20160101^git1 1
1.0^20160101^git1 1.0^20160102 -1
1.0~rc1^git1 1.0~rc1^git1 0
1.0~rc1^git1 1.0~rc1 1
1.0~rc1 1.0~rc1^git1 -1
1.0^git1~pre 1.0^git1~pre 0
1.0^git1 1.0^git1~pre 1
1.0^git1~pre 1.0^git1 -1
"""


@pytest.mark.parametrize("a,b,expected", list(_cases(RPMVERCMP_AT)))
def test_rpmvercmp_testsuite(a, b, expected):
    assert lv.rpmvercmp(a, b) == expected
    assert version_compare(a, b, "rpm") == expected


@pytest.mark.parametrize(
    "a,b,expected",
    [
        ("3:530.30.02-1.el8", "530.30.02-1.el8", 1),  # epoch
        ("3:530.30.02-1.el8", "3:535.54.03-1.el8", -1),
        ("2.18.3-1.cuda12.1", "2.18.3-1.cuda12.2", -1),
        ("2.18.3-1.cuda12.1", "2.18.3-2.cuda12.1", -1),
        ("2.18.3-1.cuda12.1", "2.18.3", 0),  # release compared only when both have one
        ("0:1.0-1", "1.0-1", 0),  # missing epoch is 0
    ],
)
def test_rpm_evr(a, b, expected):
    assert version_compare(a, b, "rpm") == expected
    assert version_compare(b, a, "rpm") == -expected


# --------------------------------------------------------------------------- #
# nvidia / auto
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize(
    "a,b,expected",
    [
        ("530.30.02", "525.60.13", 1),
        ("525.60.13", "530.30.02", -1),
        ("535.261.03", "535.54.03", 1),  # 261 > 54 numerically, not as text
        ("535.104.05", "535.86.09", 1),
        ("12.1.105", "12.1.55", 1),
        ("530.30.02", "530.30.2", 0),
        ("580", "580.0.0", 0),
        ("580", "580.65.06", -1),
        ("570.26", "570.124.06", -1),
    ],
)
def test_nvidia_dotted(a, b, expected):
    assert version_compare(a, b, "nvidia") == expected
    assert version_compare(a, b) == expected


def test_auto_mixes_dotted_and_debian():
    # dpkg: an absent revision is "", which sorts before "1~deb12u1".
    assert version_compare("535.261.03", "535.261.03-1~deb12u1") == -1
    assert version_compare("535.261.03", "535.54.03-1") == 1
    assert version_compare("1:2.6.2-4", "3.0") == 1


def test_numbers_are_accepted():
    assert version_compare(12.2, "12.1") == 1
    assert version_compare(13, "12.9") == 1


def test_convenience_predicates():
    assert lv.version_ge("530.30.02", "525.60.13")
    assert lv.version_gt("530.30.02", "525.60.13")
    assert lv.version_le("1.0~rc1", "1.0")
    assert lv.version_lt("1.0~rc1", "1.0")
    assert lv.version_eq("1.0000-1", "1.0-1")


def test_compare_errors():
    with pytest.raises(AnsibleFilterError, match="530.x"):
        version_compare("530.x", "1.0", "nvidia")
    with pytest.raises(AnsibleFilterError, match="'semver'"):
        version_compare("1", "2", "semver")
    with pytest.raises(AnsibleFilterError, match="empty"):
        version_compare("", "1")
    with pytest.raises(AnsibleFilterError, match="None"):
        version_compare(None, "1")
    with pytest.raises(AnsibleFilterError, match="'a'"):
        version_compare("a:1.0", "1.0", "debian")


# --------------------------------------------------------------------------- #
# parse / package helpers
# --------------------------------------------------------------------------- #


def test_parse_debian():
    assert version_parse("1:2.6.2-4+deb12u1", "debian") == {
        "scheme": "debian",
        "version": "1:2.6.2-4+deb12u1",
        "epoch": 1,
        "upstream": "2.6.2",
        "revision": "4+deb12u1",
    }
    parsed = version_parse("2.18.3-1+cuda12.1")
    assert (parsed["scheme"], parsed["epoch"], parsed["upstream"], parsed["revision"]) == (
        "debian",
        0,
        "2.18.3",
        "1+cuda12.1",
    )
    assert version_parse("12345+that-really-is-some-ver-0", "debian")["upstream"] == (
        "12345+that-really-is-some-ver"
    )


def test_parse_nvidia():
    parsed = version_parse("530.30.02")
    assert parsed["scheme"] == "nvidia"
    assert parsed["parts"] == [530, 30, 2]
    assert (parsed["major"], parsed["minor"], parsed["patch"]) == (530, 30, 2)
    short = version_parse("570.26", "nvidia")
    assert (short["major"], short["minor"], short["patch"]) == (570, 26, None)


def test_parse_rpm():
    parsed = version_parse("3:530.30.02-1.el8", "rpm")
    assert (parsed["epoch"], parsed["version_part"], parsed["release"]) == (3, "530.30.02", "1.el8")
    plain = version_parse("2.18.3", "rpm")
    assert (plain["epoch"], plain["release"]) == (None, None)


@pytest.mark.parametrize(
    "pkg,upstream,tag",
    [
        ("2.18.3-1+cuda12.1", "2.18.3", "12.1"),
        ("2.18.3-1.cuda12.1", "2.18.3", "12.1"),
        ("2.21.5-1+cuda12.4", "2.21.5", "12.4"),
        ("1:2.6.2-4+deb12u1", "2.6.2", None),
        ("3:530.30.02-1.el8", "530.30.02", None),
        ("535.261.03-1~deb12u1", "535.261.03", None),
        ("535.261.03", "535.261.03", None),
        ("2.1.0+cu121", "2.1.0+cu121", "12.1"),
        ("2.7.0+cu118", "2.7.0+cu118", "11.8"),
    ],
)
def test_pkg_upstream_and_cuda_tag(pkg, upstream, tag):
    assert pkg_upstream(pkg) == upstream
    assert pkg_cuda_tag(pkg) == tag


def test_pkg_upstream_errors():
    with pytest.raises(AnsibleFilterError, match="package version"):
        pkg_upstream("")


# --------------------------------------------------------------------------- #
# CUDA -> driver
# --------------------------------------------------------------------------- #


def test_cuda_table_rows():
    # Spot checks against NVIDIA's release notes, Table 3.
    assert LOCKSTEP_CUDA_MIN_DRIVER["12.1.0"] == "530.30.02"
    assert LOCKSTEP_CUDA_MIN_DRIVER["12.1.1"] == "530.30.02"
    assert LOCKSTEP_CUDA_MIN_DRIVER["12.0.0"] == "525.60.13"
    assert LOCKSTEP_CUDA_MIN_DRIVER["12.0.1"] == "525.85.12"
    assert LOCKSTEP_CUDA_MIN_DRIVER["11.8.0"] == "520.61.05"
    assert LOCKSTEP_CUDA_MIN_DRIVER["12.2.0"] == "535.54.03"
    assert LOCKSTEP_CUDA_MIN_DRIVER["12.8.0"] == "570.26"
    assert LOCKSTEP_CUDA_MIN_DRIVER["13.0.0"] == "580.65.06"
    assert LOCKSTEP_CUDA_MIN_DRIVER["11.0.2"] == "450.51.05"


def test_cuda_table_is_complete_and_monotonic():
    minors = {".".join(v.split(".")[:2]) for v in LOCKSTEP_CUDA_MIN_DRIVER}
    for minor in ["11.%d" % i for i in range(9)] + [
        "12.%d" % i for i in (0, 1, 2, 3, 4, 5, 6, 8, 9)
    ]:
        assert minor in minors
    assert "12.7" not in minors  # there was no CUDA 12.7
    # A later toolkit never needs an older driver.
    ordered = sorted(LOCKSTEP_CUDA_MIN_DRIVER, key=lambda v: [int(p) for p in v.split(".")])
    for older, newer in zip(ordered, ordered[1:]):
        assert (
            version_compare(
                LOCKSTEP_CUDA_MIN_DRIVER[newer], LOCKSTEP_CUDA_MIN_DRIVER[older], "nvidia"
            )
            >= 0
        ), (older, newer)


@pytest.mark.parametrize(
    "cuda,driver",
    [
        ("12.1", "530.30.02"),
        ("12.1.0", "530.30.02"),
        ("12.1.1", "530.30.02"),
        ("12.1.105", "530.30.02"),  # cudart component version of 12.1 Update 1
        ("12.0", "525.60.13"),
        ("12.0.1", "525.85.12"),
        ("12.0.146", "525.85.12"),  # build number -> newest 12.0 row, the strictest
        ("12.2", "535.54.03"),
        ("12.2.2", "535.104.05"),
        ("12.3.2", "545.23.08"),  # not in NVIDIA's table -> newest listed 12.3 row
        ("11.8", "520.61.05"),
        ("11.0", "450.51.05"),  # 11.0 GA is 11.0.2
        ("13.0", "580.65.06"),
        (12.4, "550.54.14"),
    ],
)
def test_cuda_min_driver_toolkit(cuda, driver):
    assert cuda_min_driver(cuda) == driver


@pytest.mark.parametrize(
    "cuda,driver",
    [
        ("12.1", "525.60.13"),
        ("12.9.1", "525.60.13"),
        ("11.8", "450.80.02"),
        ("13.2", "580"),
        ("12.0", "525.60.13"),
    ],
)
def test_cuda_min_driver_minor_compat(cuda, driver):
    assert cuda_min_driver(cuda, mode="minor_compat") == driver


def test_minor_compat_never_above_toolkit():
    # 11.0 shipped with a driver older than the 11.x minor-compat floor.
    assert cuda_min_driver("11.0", "minor_compat") == "450.51.05"


def test_cuda_driver_compatible():
    assert cuda_driver_compatible("530.30.02", "12.1")
    assert cuda_driver_compatible("535.261.03", "12.1.105")
    assert not cuda_driver_compatible("525.85.12", "12.1")
    assert cuda_driver_compatible("525.85.12", "12.1", mode="minor_compat")
    assert not cuda_driver_compatible("520.61.05", "12.1", mode="minor_compat")
    # A package version is reduced to its upstream part.
    assert cuda_driver_compatible("535.261.03-1~deb12u1", "12.2")
    assert cuda_driver_compatible("580.65.06", "13.0", mode="minor_compat")


def test_cuda_driver_check_incompatible_message():
    result = cuda_driver_check("525.85.12", "12.1")
    assert result["compatible"] is False
    assert result["required"] == "530.30.02"
    assert result["driver"] == "525.85.12"
    assert result["cuda"] == "12.1"
    assert result["message"] == (
        "CUDA 12.1 needs NVIDIA driver >= 530.30.02; the inventory asks for 525.85.12"
    )


def test_cuda_driver_check_compatible_message():
    result = cuda_driver_check("535.261.03", "12.2.2")
    assert result["compatible"] is True
    assert result["required"] == "535.104.05"
    assert "535.261.03" in result["message"] and "12.2.2" in result["message"]


def test_unknown_cuda_version_lists_known():
    for bad in ("12.7", "10.2", "14.0", "12"):
        with pytest.raises(AnsibleFilterError) as err:
            cuda_min_driver(bad)
        assert repr(bad) in str(err.value)
        assert "11.8" in str(err.value) and "12.1" in str(err.value)


def test_cuda_bad_inputs():
    with pytest.raises(AnsibleFilterError, match="12.x"):
        cuda_min_driver("12.x")
    with pytest.raises(AnsibleFilterError, match="'forward'"):
        cuda_min_driver("12.1", mode="forward")
    with pytest.raises(AnsibleFilterError, match="banana"):
        cuda_driver_check("banana", "12.1")


def test_filter_module_exposes_filters():
    filters = version_filters.FilterModule().filters()
    assert set(filters) == {"version_compare", "pkg_upstream", "cuda_min_driver", "cuda_driver_check"}
    assert filters["cuda_driver_check"]("535.261.03", ["12.1", "12.2"])["compatible"] is True
