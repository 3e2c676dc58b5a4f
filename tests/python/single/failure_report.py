"""What a failure_job.py job printed, and the checks every failure-matrix case makes.

Shared by test_failure_matrix.py (one host) and
tests/python/cluster/test_failure_across_hosts.py (emulated hosts).
"""

import re
from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

from flockrun import processes

# FLOCK_STALL_SHUTDOWN_S of every job, and how long after the failure (or after the
# op started, if later) each surviving rank may take to get its error.
LIMIT_S = 2.0
DEADLINE_S = LIMIT_S + 1.5
# Failures every rank learns of at once (a shutdown, a goodbye) take far less.
PROMPT_S = 1.0

_LINE = re.compile(r"^fm (pid|fail|op|terminated|exiting) (.*)$", re.M)


@dataclass
class Op:
    start: float
    end: float
    outcome: str


@dataclass
class Report:
    pids: Dict[int, Tuple[processes.ProcessId, processes.ProcessId]] = field(default_factory=dict)
    hosts: Dict[int, str] = field(default_factory=dict)
    failed_at: Optional[float] = None
    ops: Dict[Tuple[int, str], Op] = field(default_factory=dict)
    terminated: Dict[int, float] = field(default_factory=dict)
    exiting: Dict[int, float] = field(default_factory=dict)

    def seconds(self, rank, op):
        """How long rank waited for op's outcome after the failure (or after it
        started the op, if later)."""
        got = self.ops[(rank, op)]
        return got.end - max(got.start, self.failed_at or got.start)


def parse(stdout):
    report = Report()
    for kind, rest in _LINE.findall(stdout):
        if kind == "pid":
            rank, pid, start, parent, parent_start, host = rest.split(" ")
            report.pids[int(rank)] = (processes.ProcessId(int(pid), int(start)),
                                      processes.ProcessId(int(parent), int(parent_start)))
            report.hosts[int(rank)] = host
        elif kind == "fail":
            report.failed_at = float(rest.split(" ")[2])
        elif kind == "op":
            rank, op, start, end, outcome = rest.split(" ", 4)  # the outcome has spaces
            report.ops[(int(rank), op)] = Op(float(start), float(end), outcome)
        else:
            rank, wall = rest.split(" ")
            ended = report.terminated if kind == "terminated" else report.exiting
            ended[int(rank)] = float(wall)
    return report


def names_rank_and_host(text, rank, host):
    """Does an error (flock's, with _rank_hosts' note) or flockrun's summary name both?"""
    note = re.search(r"\brank {} (is )?on host {}\b".format(rank, re.escape(host)), text)
    summary = re.search(r"\brank {} \(host {}\)".format(rank, re.escape(host)), text)
    return bool(note or summary)


def assert_nothing_left(report, leftovers):
    """No rank, no parent of a rank (mpirun, a daemon) and nothing else of the job's
    session is still running. Ends whatever is, so a failing test leaves nothing either."""
    started = {p for pair in report.pids.values() for p in pair}
    left = processes.wait_gone(started | set(leftovers), timeout=5.0)
    if left:
        processes.end_processes([left], grace=2.0)
    assert not left, "processes of the job still running after it ended: {}".format(left)


def describe(result, report):
    """The job's output for an assertion message: its last lines and its ops."""
    ops = "\n".join("{} {}: {:.2f}s {}".format(r, op, report.seconds(r, op), o.outcome)
                    for (r, op), o in sorted(report.ops.items()))
    return "rc {}\n{}\n--- stdout\n{}\n--- stderr\n{}".format(
        result.returncode, ops, result.stdout[-3000:], result.stderr[-3000:])
