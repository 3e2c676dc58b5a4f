"""Print the lines of a failed test step's log that say why it failed.

scripts/test.sh calls this for each failed step after the totals, so the reason
is among the last lines of a long run (a CI log is often read from its end).
Kept: gtest and pytest failures, sanitizer reports, hangs, with a little context.
"""

import re
import sys

MARKERS = re.compile(
    r"(\[  FAILED  \]|: Failure$|^FAILED |^E   |^Traceback|==\d+==ERROR|runtime error:|"
    r"WARNING: ThreadSanitizer|SUMMARY: |Tracer caught|\*\*\*(Failed|Timeout|Exception)|"
    r"Timeout|timed out|HUNG|FAILED with|Segmentation fault|core dumped)"
)
CONTEXT_AFTER = 4
MOST_LINES = 80


def failure_lines(lines):
    """The indices of marker lines and the few lines after each, in order."""
    keep = []
    last_kept = -1
    for i, line in enumerate(lines):
        if MARKERS.search(line):
            for j in range(max(i, last_kept + 1), min(i + CONTEXT_AFTER + 1, len(lines))):
                keep.append(j)
                last_kept = j
    return keep


def main(path):
    with open(path, errors="replace") as log:
        lines = log.read().splitlines()
    keep = failure_lines(lines)
    print(f"---- why it failed ({path}, {len(keep)} lines) ----")
    if not keep:
        print("\n".join(lines[-20:]))  # no marker: the end says the most
        return
    if len(keep) > MOST_LINES:
        print(f"[the first {MOST_LINES // 2} and the last {MOST_LINES // 2} of them]")
        keep = keep[: MOST_LINES // 2] + keep[-MOST_LINES // 2 :]
    previous = None
    for i in keep:
        if previous is not None and i != previous + 1:
            print("  ...")
        print(lines[i])
        previous = i


if __name__ == "__main__":
    for argument in sys.argv[1:]:
        main(argument)
