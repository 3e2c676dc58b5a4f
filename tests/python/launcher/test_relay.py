"""Unit tests of the output relay: tag splitting, whole lines, what is shown.

No MPI: the input is what mpirun 4.1 writes with --tag-output (chunks start
with a tag, a line inside a chunk too; a chunk may end mid-line), fed in
pieces of every size.
"""

import random

import pytest

from flockrun.relay import PARTIAL_LINE_WAIT_S, OutputRelay
from flockrun.tagged_stream import LineJoiner, TagSplitter


def tagged(rank, text, stream="stdout"):
    """text as mpirun tags one chunk of it: a tag first and after each inner line end."""
    tag = b"[1,%d]<%s>:" % (rank, stream.encode())
    return tag + text.replace(b"\n", b"\n" + tag).removesuffix(tag)


class Capture:
    """A write(stream, bytes) that keeps what each stream got."""

    def __init__(self):
        self.data = {"stdout": b"", "stderr": b""}

    def __call__(self, stream, data):
        self.data[stream] += data

    def lines(self, stream="stdout"):
        return self.data[stream].decode().splitlines()


def feed_in_pieces(relay, stream, data, seed=0, now=0.0):
    rng = random.Random(seed)
    position = 0
    while position < len(data):
        step = rng.randint(1, 40)
        relay.feed(stream, data[position:position + step], now)
        position += step


# TagSplitter -------------------------------------------------------------------


def test_splitter_gives_each_fragment_its_rank_and_stream():
    data = b"[1,0]<stdout>:ab[1,1]<stderr>:cd\n[1,0]<stdout>:e\n"
    assert TagSplitter().feed(data) == [((0, "stdout"), b"ab"), ((1, "stderr"), b"cd\n"),
                                        ((0, "stdout"), b"e\n")]


def test_untagged_text_after_a_line_end_is_mpiruns():
    data = b"[1,2]<stdout>:x\n-----\nMPI_ABORT was invoked\n"
    assert TagSplitter().feed(data) == [((2, "stdout"), b"x\n"),
                                        (None, b"-----\nMPI_ABORT was invoked\n")]


def test_a_tag_cut_between_two_reads_is_held_until_complete():
    splitter = TagSplitter()
    assert splitter.feed(b"hello\n[1,1") == [(None, b"hello\n")]
    assert splitter.feed(b"2]<std") == []
    assert splitter.feed(b"out>:hi\n") == [((12, "stdout"), b"hi\n")]


def test_held_text_that_was_no_tag_comes_out_at_the_end():
    splitter = TagSplitter()
    assert splitter.feed(b"[1,0]<stdout>:list [1") == [((0, "stdout"), b"list ")]
    assert splitter.finish() == [((0, "stdout"), b"[1")]


def test_stddiag_counts_as_stderr():
    assert TagSplitter().feed(b"[1,3]<stddiag>:d\n") == [((3, "stderr"), b"d\n")]


# LineJoiner --------------------------------------------------------------------


def test_joiner_ends_segments_at_newline_and_carriage_return():
    joiner = LineJoiner()
    assert joiner.add("a", b"12") == []
    assert joiner.add("a", b"3\r45\n6") == [b"123\r", b"45\n"]
    assert joiner.partial("a") == b"6" and joiner.take_partial("a") == b"6"
    assert joiner.owners_with_partial() == []


# OutputRelay: whole lines --------------------------------------------------------


def test_fragments_of_many_ranks_come_out_as_whole_lines():
    # Four ranks write long lines in chunks cut at random places; mpirun
    # interleaves the chunks; the relay must give back every line whole.
    rng = random.Random(7)
    expected = {r: [(b"r%d-%d:" % (r, i)) + bytes([97 + r]) * rng.randint(0, 300)
                    for i in range(40)] for r in range(4)}
    pending = {r: b"\n".join(lines) + b"\n" for r, lines in expected.items()}
    stream = b""
    while any(pending.values()):
        rank = rng.choice([r for r in pending if pending[r]])
        cut = rng.randint(1, 250)
        stream += tagged(rank, pending[rank][:cut])
        pending[rank] = pending[rank][cut:]
    capture = Capture()
    relay = OutputRelay(capture)
    feed_in_pieces(relay, "stdout", stream)
    relay.finish()
    out = capture.data["stdout"].split(b"\n")[:-1]
    assert sorted(out) == sorted(line for lines in expected.values() for line in lines)
    for rank, lines in expected.items():  # each rank's lines keep their order
        assert [line for line in out if line.startswith(b"r%d-" % rank)] == lines


def test_tag_output_prefixes_each_line_with_rank_and_stream():
    capture = Capture()
    relay = OutputRelay(capture, tag_output=True)
    relay.feed("stdout", tagged(0, b"a") + tagged(1, b"b\n") + tagged(0, b"c\n"), 0.0)
    relay.feed("stderr", tagged(1, b"oops\n", "stderr"), 0.0)
    relay.finish()
    assert capture.lines() == ["[1]<stdout>:b", "[0]<stdout>:ac"]
    assert capture.lines("stderr") == ["[1]<stderr>:oops"]


def test_unfinished_line_is_written_after_a_pause_and_others_start_a_new_line():
    capture = Capture()
    relay = OutputRelay(capture, tag_output=True)
    relay.feed("stdout", tagged(0, b"epoch 1 ..."), 0.0)
    relay.tick(PARTIAL_LINE_WAIT_S / 2)
    assert capture.data["stdout"] == b""  # still waiting for the line's end
    relay.tick(PARTIAL_LINE_WAIT_S)
    assert capture.data["stdout"] == b"[0]<stdout>:epoch 1 ..."
    relay.feed("stdout", tagged(0, b" done\n"), 5.0)  # the same line goes on
    relay.feed("stdout", tagged(0, b"epoch 2 ..."), 6.0)
    relay.tick(6.0 + PARTIAL_LINE_WAIT_S)
    relay.feed("stdout", tagged(1, b"rank 1 here\n"), 8.0)
    relay.feed("stdout", tagged(0, b" done\n"), 9.0)
    relay.finish()
    assert capture.lines() == ["[0]<stdout>:epoch 1 ... done", "[0]<stdout>:epoch 2 ...",
                               "[1]<stdout>:rank 1 here", "[0]<stdout>: done"]


def test_progress_bars_redraw_with_carriage_returns_untouched():
    capture = Capture()
    relay = OutputRelay(capture)
    relay.feed("stderr", tagged(0, b"\r10%\r50%", "stderr"), 0.0)
    assert capture.data["stderr"] == b"\r10%\r"  # "50%" may still grow
    relay.feed("stderr", tagged(0, b"\r100%\n", "stderr"), 0.1)
    assert capture.data["stderr"] == b"\r10%\r50%\r100%\n"


def test_last_lines_are_kept_per_rank_for_the_summary():
    relay = OutputRelay(Capture())
    relay.feed("stdout", tagged(1, b"".join(b"line %d\n" % i for i in range(30))), 0.0)
    relay.feed("stderr", tagged(1, b"the error\n", "stderr"), 0.0)
    relay.finish()
    assert relay.last_lines(1) == ["line %d" % i for i in range(21, 30)] + ["the error"]
    assert relay.last_lines(0) == []


# OutputRelay: what is hidden -------------------------------------------------------

ABORT_BOX = b"""\
--------------------------------------------------------------------------
MPI_ABORT was invoked on rank 1 in communicator MPI_COMM_WORLD
with errorcode 7.

NOTE: invoking MPI_ABORT causes Open MPI to kill all MPI processes.
--------------------------------------------------------------------------
[vm:12946] 2 more processes have sent help message help-mpi-api.txt / mpi-abort
[vm:12946] Set MCA parameter "orte_base_help_aggregate" to 0 to see all help / error messages
"""

TERMINATED = (b"flock: rank 0 ended by signal 15 (SIGTERM): the job is being terminated, "
              b"another rank failed or the job was interrupted\n")


@pytest.mark.parametrize("verbose", [False, True])
def test_known_boxes_and_terminated_ranks_are_hidden_unless_verbose(verbose):
    capture = Capture()
    relay = OutputRelay(capture, verbose=verbose)
    feed_in_pieces(relay, "stderr", tagged(1, b"Traceback\n", "stderr") + ABORT_BOX
                   + tagged(0, TERMINATED, "stderr"))
    relay.finish()
    shown = capture.lines("stderr")
    assert shown[0] == "Traceback"
    assert (len(shown) == 1) != verbose
    assert ("MPI_ABORT was invoked on rank 1 in communicator MPI_COMM_WORLD" in shown) == verbose
    assert relay.failure.rank == 1 and relay.failure.code == 7
    assert relay.terminated == (set() if verbose else {0})


def test_unknown_mpirun_boxes_and_lines_are_shown_as_they_are():
    box = (b"-" * 74 + b"\nWARNING: something mpirun wants you to know\n" + b"-" * 74
           + b"\nssh: Could not resolve hostname nodex\n")
    capture = Capture()
    relay = OutputRelay(capture)
    feed_in_pieces(relay, "stderr", box)
    relay.finish()
    assert capture.data["stderr"] == box
    assert relay.failure is None


def test_a_rank_line_not_by_flock_is_never_hidden():
    capture = Capture()
    relay = OutputRelay(capture)
    lie = TERMINATED.replace(b"rank 0", b"rank 5")  # rank 0 says rank 5 ended: shown
    relay.feed("stderr", tagged(0, lie, "stderr"), 0.0)
    relay.finish()
    assert capture.data["stderr"] == lie and relay.terminated == set()


def test_flocks_own_ending_line_stands_in_for_a_lost_abort_box():
    relay = OutputRelay(Capture())
    relay.feed("stderr", tagged(2, b"flock: rank 2 exits with status 3; ending every rank of "
                                   b"the job\n", "stderr"), 0.0)
    relay.finish()
    assert (relay.failure.rank, relay.failure.how, relay.failure.code) == (2, "abort", 3)


def test_the_engines_own_abort_line_is_a_failure_of_its_rank_only():
    relay = OutputRelay(Capture())
    relay.feed("stderr", tagged(1, b"[flock 0 transport ERROR] aborting the job with exit "
                                   b"code 5\n", "stderr"), 0.0)  # not rank 1's own line
    assert relay.failure is None
    relay.feed("stderr", tagged(1, b"[flock 1 transport ERROR] aborting the job with exit "
                                   b"code 4\n", "stderr"), 0.0)
    relay.finish()
    assert (relay.failure.rank, relay.failure.how, relay.failure.code) == (1, "abort", 4)


# OutputRelay: mpirun's own text left without a line end ------------------------------


@pytest.mark.parametrize("tag_output", [False, True])
def test_mpiruns_unfinished_text_is_written_as_its_line_at_the_end(tag_output):
    capture = Capture()
    relay = OutputRelay(capture, tag_output=tag_output)
    relay.feed("stdout", tagged(0, b"hi\n"), 0.0)
    relay.feed("stderr", b"mpirun: text", 0.0)
    relay.finish()
    assert capture.data["stderr"] == b"mpirun: text\n"  # untagged: it is no rank's


@pytest.mark.parametrize("tag_output", [False, True])
def test_mpiruns_unfinished_text_is_written_after_the_wait(tag_output):
    capture = Capture()
    relay = OutputRelay(capture, tag_output=tag_output)
    relay.feed("stderr", b"mpirun: text", 0.0)
    relay.tick(PARTIAL_LINE_WAIT_S / 2)
    assert capture.data["stderr"] == b""
    relay.tick(PARTIAL_LINE_WAIT_S)
    assert capture.data["stderr"] == b"mpirun: text\n"
    relay.finish()
    assert capture.data["stderr"] == b"mpirun: text\n"


@pytest.mark.parametrize("at", ["finish", "tick"])
def test_mpiruns_unfinished_text_goes_through_its_filter(at):
    note = b"[vm:12946] 2 more processes have sent help message help-mpi-api.txt / mpi-abort"
    capture = Capture()
    relay = OutputRelay(capture)
    relay.feed("stderr", note, 0.0)
    if at == "tick":
        relay.tick(PARTIAL_LINE_WAIT_S)
    relay.finish()
    assert capture.data == {"stdout": b"", "stderr": b""}


def test_a_box_open_on_one_stream_does_not_swallow_the_other_streams_lines():
    # mpirun writes the job map on stdout and its boxes on stderr; each stream
    # has its own boxes, so a map line read while a stderr box is open is a map line.
    job_map = (b" Data for JOB [23948,1] offset 0 Total slots allocated 2\n"
               b" ========================   JOB MAP   ========================\n"
               b" Data for node: h2\tNum slots: 2\tMax slots: 0\tNum procs: 2\n"
               b" \tProcess OMPI jobid: [23948,1] App: 0 Process rank: 1 Bound: N/A\n"
               b" =============================================================\n")
    box_start, box_end = ABORT_BOX.split(b"\nNOTE:")
    capture = Capture()
    relay = OutputRelay(capture)
    relay.feed("stderr", box_start + b"\n", 0.0)
    relay.feed("stdout", job_map + b"mpirun's words on stdout\n", 0.0)
    relay.feed("stderr", b"NOTE:" + box_end, 0.0)
    relay.finish()
    assert relay.facts.hosts == {1: "h2"}
    assert capture.lines() == ["mpirun's words on stdout"]
    assert capture.data["stderr"] == b"" and relay.failure.rank == 1
