#!/usr/bin/env python3
"""The tests that did not run, and why: reads the JUnit files CTest wrote (ctest --output-junit)
and prints one line per skipped test with its reason, the text after "est-test-skipped: "
(tests/skip.h) in its output, else its output's last line. Files that do not exist are passed
over (a step that did not run). Usage: skip_report.py <junit.xml>..."""

import pathlib
import sys
import xml.etree.ElementTree as ElementTree

MARKER = "est-test-skipped: "


def reason(output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for line in lines:
        if MARKER in line:
            return line.split(MARKER, 1)[1]
    return lines[-1] if lines else "(no output)"


def main() -> int:
    skipped, ran = [], 0
    for name in sys.argv[1:]:
        path = pathlib.Path(name)
        if not path.exists():
            continue
        for case in ElementTree.parse(path).getroot().iter("testcase"):
            if case.find("skipped") is None:
                ran += 1
                continue
            output = case.findtext("system-out") or ""
            skipped.append((case.get("name", "?"), reason(output)))
    if not skipped:
        print(f"Skipped: none of the {ran} tests run")
        return 0
    print(f"Skipped: {len(skipped)} of {len(skipped) + ran} tests, each for want of what it names:")
    width = min(max(len(test) for test, _ in skipped), 60)
    for test, why in sorted(skipped):
        shown = test if len(test) <= width else test[:width - 1] + "…"
        print(f"  {shown:<{width}}  {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
