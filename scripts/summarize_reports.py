"""Adds up the JUnit reports of a test run and prints one closing line:
``total: N passed, M failed, K skipped``."""

import glob
import os
import sys
import xml.etree.ElementTree as ET


def count(path):
    passed = failed = skipped = 0
    for case in ET.parse(path).getroot().iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        elif case.find("skipped") is not None or case.get("status") in ("notrun", "disabled"):
            skipped += 1
        else:
            passed += 1
    return passed, failed, skipped


def main(report_dir):
    totals = [0, 0, 0]
    for path in sorted(glob.glob(os.path.join(report_dir, "**", "*.xml"), recursive=True)):
        p, f, s = count(path)
        print("  {:<28} {} passed, {} failed, {} skipped".format(os.path.basename(path), p, f, s))
        totals = [a + b for a, b in zip(totals, (p, f, s))]
    print("total: {} passed, {} failed, {} skipped".format(*totals))


if __name__ == "__main__":
    main(sys.argv[1])
