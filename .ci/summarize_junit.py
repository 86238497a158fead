"""Print one closing line summing every tox environment's JUnit report: 'N passed, N failed, N skipped'."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def main(report_dir: str) -> int:
    passed = failed = skipped = 0
    reports = sorted(Path(report_dir).glob("*-junit.xml"))
    for report in reports:
        root = ET.parse(report).getroot()
        suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
        for suite in suites:
            tests = int(suite.get("tests", 0))
            bad = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
            skip = int(suite.get("skipped", 0))
            failed += bad
            skipped += skip
            passed += tests - bad - skip
        print(f"{report.name}: read", file=sys.stderr)
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 0 if reports else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else ".tox"))
