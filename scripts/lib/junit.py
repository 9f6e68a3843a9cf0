"""One line for pytest's JUnit XML results: passed, failed, skipped and why.

    python scripts/lib/junit.py DIR_OR_FILE...

scripts/test's unit stage writes the results of `pytest tests/tooling` and of
`scripts/ansible-test units` into .cache/junit/ and prints this line, e.g.
"1012 passed, 0 skipped" or "1005 passed, 7 skipped: no Chromium
(scripts/bootstrap installs it)", so that a green run that skipped a layer of
tests says so. Several reasons: "9 skipped: 7 no Chromium (...); 2 needs dpkg".
Exits 1 when there is no result file.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path


def outcomes(xml: str) -> list[tuple[str, str]]:
    """(outcome, reason) of each test case of one JUnit XML document.

    outcome: passed, failed, error, skipped or xfailed; reason: a skip's message.
    """
    found = []
    for case in ET.fromstring(xml).iter("testcase"):
        kinds = {child.tag: child for child in case}
        if "failure" in kinds:
            found.append(("failed", ""))
        elif "error" in kinds:
            found.append(("error", ""))
        elif "skipped" in kinds:
            skipped = kinds["skipped"]
            if skipped.get("type") == "pytest.xfail":
                found.append(("xfailed", ""))
            else:
                reason = (skipped.get("message") or "").strip().removeprefix("Skipped: ")
                found.append(("skipped", reason or "no reason given"))
        else:
            found.append(("passed", ""))
    return found


def summary(results: list[tuple[str, str]]) -> str:
    """'N passed, M skipped', with failures, errors and xfails when there are any and the skips' reasons."""
    counts = Counter(outcome for outcome, _ in results)
    parts = [f"{counts['passed']} passed"]
    parts += [f"{counts[k]} {k if k != 'error' else 'errors'}" for k in ("failed", "error", "xfailed") if counts[k]]
    text = ", ".join(parts) + f", {counts['skipped']} skipped"
    reasons = Counter(reason for outcome, reason in results if outcome == "skipped")
    if len(reasons) == 1:
        text += f": {next(iter(reasons))}"
    elif reasons:
        text += ": " + "; ".join(f"{n} {reason}" for reason, n in sorted(reasons.items(), key=lambda r: (-r[1], r[0])))
    return text


def main(argv: list[str]) -> int:
    files = [f for arg in argv for f in (sorted(Path(arg).glob("*.xml")) if Path(arg).is_dir() else [Path(arg)])]
    if not files:
        print(f"junit: no JUnit XML in {' '.join(argv) or '(nothing given)'}", file=sys.stderr)
        return 1
    print(summary([r for f in files for r in outcomes(f.read_text(encoding="utf-8"))]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
