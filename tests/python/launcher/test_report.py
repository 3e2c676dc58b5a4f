"""Unit tests of what flockrun reads in mpirun's messages and says at the end.

The boxes are OpenMPI 4.1.4's, as it printed them on this machine.
"""

import pytest

from flockrun.mpirun_messages import LaunchFailure, MpirunMessages, RankFailure
from flockrun.report import closing_lines, exit_status

EDGE = "-" * 74

MAP = """\
 Data for JOB [23948,1] offset 0 Total slots allocated 4

 ========================   JOB MAP   ========================

 Data for node: h1\tNum slots: 2\tMax slots: 0\tNum procs: 2
 \tProcess OMPI jobid: [23948,1] App: 0 Process rank: 0 Bound: N/A
 \tProcess OMPI jobid: [23948,1] App: 0 Process rank: 1 Bound: N/A

 Data for node: h2\tNum slots: 2\tMax slots: 0\tNum procs: 2
 \tProcess OMPI jobid: [23948,1] App: 0 Process rank: 2 Bound: N/A
 \tProcess OMPI jobid: [23948,1] App: 0 Process rank: 3 Bound: N/A

 =============================================================
"""

PRIMARY = f"""{EDGE}
Primary job  terminated normally, but 1 process returned
a non-zero exit code. Per user-direction, the job has been aborted.
{EDGE}
"""

FIRST_EXIT = f"""{EDGE}
mpirun detected that one or more processes exited with non-zero status, thus causing
the job to be terminated. The first process to do so was:

  Process name: [[18614,1],2]
  Exit code:    3
{EDGE}
"""

SIGNAL = f"""{EDGE}
mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9 (Killed).
{EDGE}
"""

IMPROPER = f"""{EDGE}
mpirun has exited due to process rank 1 with PID 0 on
node vm exiting improperly. There are three reasons this could occur:

1. this process did not call "init" before exiting, but others in
the job did.
{EDGE}
"""

ABORT = f"""{EDGE}
MPI_ABORT was invoked on rank 3 in communicator MPI_COMM_WORLD
with errorcode 1.
{EDGE}
"""

NOT_FOUND = f"""{EDGE}
mpirun was unable to find the specified executable file, and therefore
did not launch the job.  This error was first reported for process
rank 0; it may have occurred for other processes as well.

Node:       vm
Executable: nosuchcommand
{EDGE}
2 total processes failed to start
"""

NOT_EXECUTABLE = f"""{EDGE}
mpirun was unable to launch the specified application as it could not access
or execute an executable:

Executable: ./partial.py
Node: vm

while attempting to start process rank 0.
{EDGE}
"""


def read(text, verbose=False):
    """(MpirunMessages after text, the lines it showed)."""
    messages = MpirunMessages(verbose)
    shown = []
    for line in text.splitlines():
        shown += messages.add_line(line)
    return messages, shown + messages.finish()


def test_the_job_map_gives_each_ranks_host_and_is_hidden():
    messages, shown = read(MAP + "after the map\n")
    assert messages.facts.hosts == {0: "h1", 1: "h1", 2: "h2", 3: "h2"}
    assert shown == ["after the map"]


def test_the_job_map_is_shown_when_the_user_asked_for_it():
    messages = MpirunMessages(show_map=True)
    shown = [line for text in MAP.splitlines() for line in messages.add_line(text)]
    assert shown == MAP.splitlines() and messages.facts.hosts[3] == "h2"


@pytest.mark.parametrize("text, failure", [
    (PRIMARY + FIRST_EXIT, RankFailure(2, "exit", code=3)),
    (PRIMARY + SIGNAL, RankFailure(1, "signal", signal=9, host="vm")),
    (IMPROPER, RankFailure(1, "improper", host="vm")),
    (ABORT, RankFailure(3, "abort", code=1)),
    # A survivor's MPI_Abort before mpirun's verdict on the first failed rank.
    (ABORT + PRIMARY + FIRST_EXIT, RankFailure(2, "exit", code=3)),
], ids=["exit", "signal", "improper", "abort", "verdict-beats-abort"])
def test_failure_boxes_are_read_and_hidden(text, failure):
    messages, shown = read(text)
    assert messages.facts.failure == failure and shown == []
    assert read(text, verbose=True)[1] == text.splitlines()


@pytest.mark.parametrize("text, launch", [
    (NOT_FOUND, LaunchFailure("nosuchcommand", "vm", "not found", True)),
    (NOT_EXECUTABLE, LaunchFailure("./partial.py", "vm", "not an executable file, or not "
                                   "allowed to run it", False)),
])
def test_launch_failures_are_read_and_hidden(text, launch):
    messages, shown = read(text)
    assert messages.facts.launch_failure == launch and shown == []


@pytest.mark.parametrize("race", ["Data unpack would read past end of buffer", "Out of resource"])
def test_openmpis_show_help_race_while_aborting_is_hidden(race):
    line = f"[vm:29475] [[8157,0],0] ORTE_ERROR_LOG: {race} in file ../../../orte/util/" \
           "show_help.c at line 501"
    assert read(line + "\nsomething else\n")[1] == ["something else"]


def test_a_failure_mpirun_does_not_attribute_is_still_noticed():
    # What mpirun 4.1 says when a rank exits non-zero before every rank has started.
    messages, shown = read(PRIMARY)
    assert messages.facts.failure is None and messages.facts.some_rank_failed and shown == []
    assert closing_lines(3, None, None, None, None, 6, [], some_rank_failed=True) == [
        "flockrun: a rank exited with status 3 (mpirun did not say which: it does not when a "
        "rank ends before all have started); mpirun stopped the other ranks"]


def test_an_unclosed_box_is_shown_at_the_end():
    messages, shown = read(f"{EDGE}\nsomething unexpected\n")
    assert shown == [EDGE, "something unexpected"] and messages.facts.failure is None


# report ----------------------------------------------------------------------------


def test_summary_names_rank_host_status_and_last_lines():
    lines = closing_lines(3, RankFailure(2, "exit", code=3), None, None, "h2", 4,
                          ["Traceback (most recent call last):", "ValueError: boom"])
    assert lines == [
        "flockrun: rank 2 (host h2) exited with status 3; mpirun stopped the other ranks",
        "flockrun: last lines of rank 2:",
        "    Traceback (most recent call last):",
        "    ValueError: boom"]


@pytest.mark.parametrize("failure, words", [
    (RankFailure(1, "signal", signal=9), "rank 1 was killed by signal 9 (SIGKILL)"),
    (RankFailure(1, "abort", code=1), "rank 1 ended the job with MPI_Abort (code 1)"),
    (RankFailure(1, "improper"), "rank 1 exited without finalizing MPI"),
])
def test_summary_says_how_the_rank_ended(failure, words):
    lines = closing_lines(1, failure, None, None, None, 1, [])
    assert lines[0].startswith(f"flockrun: {words}")
    assert "mpirun stopped" not in lines[0]  # a one-rank job has no other ranks
    assert lines[1:] == ["flockrun: rank 1 printed nothing"]


def test_closing_lines_for_a_signal_a_launch_failure_and_an_unknown_failure():
    assert closing_lines(1, None, None, 2, None, 4, []) == [
        "flockrun: stopped by SIGINT; mpirun ended the ranks"]
    launch = LaunchFailure("nosuchcommand", "vm", "not found", True)
    assert closing_lines(134, None, launch, None, None, 2, []) == [
        "flockrun: error: cannot start 'nosuchcommand' on host vm: not found"]
    assert closing_lines(1, None, None, None, None, 2, []) == [
        "flockrun: mpirun exited with status 1"]
    assert closing_lines(0, None, None, None, None, 2, []) == []


@pytest.mark.parametrize("args, status", [
    ((0, None, None, None), 0),
    ((3, RankFailure(2, "exit", code=3), None, None), 3),
    ((1, RankFailure(1, "signal", signal=9), None, None), 137),
    ((1, None, None, 2), 130),
    ((134, None, LaunchFailure("x", "vm", "not found", True), None), 127),
    ((131, None, LaunchFailure("x", "vm", "Permission denied", False), None), 126),
    ((1, None, None, None), 1),
])
def test_exit_status(args, status):
    assert exit_status(*args) == status
