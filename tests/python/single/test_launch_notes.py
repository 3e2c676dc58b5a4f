"""What a rank says about how it was started: the note of a launcher-less run."""

import io
import os
import subprocess
import sys
import textwrap

import pytest

from flock import _launch_notes

PROGRAM = textwrap.dedent("""
    import flock
    flock.init()
    flock.shutdown()
    flock.init()  # a second init() in the same process says nothing more
    print("size", flock.size())
""")


def run_script(tmp_path, env, *args):
    script = tmp_path / "train.py"
    script.write_text(PROGRAM)
    environ = {k: v for k, v in os.environ.items()
               if k != "FLOCK_QUIET" and not k.startswith(("OMPI_", "PMIX_", "PMI_"))}
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True,
                          timeout=120, env={**environ, **env}, cwd=tmp_path)


def test_a_run_without_launcher_says_once_how_to_start_n_ranks(tmp_path):
    result = run_script(tmp_path, {}, "--lr", "0.1")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "size 1\n"
    notes = [line for line in result.stderr.splitlines() if line.startswith("flock: running")]
    assert notes == [
        "flock: running as 1 rank (not started by flockrun or mpirun); to use N ranks: "
        "flockrun -np N {} {} --lr 0.1  (FLOCK_QUIET=1 hides this note)".format(
            sys.executable, tmp_path / "train.py")]


@pytest.mark.parametrize("value", ["1", "yes"])
def test_flock_quiet_hides_the_note(tmp_path, value):
    result = run_script(tmp_path, {"FLOCK_QUIET": value})
    assert result.returncode == 0 and "flock: running" not in result.stderr, result.stderr


def test_the_note_is_not_given_under_a_launcher_or_when_quiet_is_0():
    assert _launch_notes.started_by_launcher({"OMPI_COMM_WORLD_SIZE": "1"})
    assert not _launch_notes.started_by_launcher({})
    assert not _launch_notes.quiet({"FLOCK_QUIET": "0"})
    assert not _launch_notes.quiet({"FLOCK_QUIET": ""})


@pytest.mark.parametrize("argv, command", [
    (["python3", "train.py", "--lr", "1"], "flockrun -np N python3 train.py --lr 1"),
    (["python3", "-m", "pkg.train"], "flockrun -np N python3 -m pkg.train"),
    (["python3", "my dir/t.py"], "flockrun -np N python3 'my dir/t.py'"),
    (["python3", "-c", "import flock"], "flockrun -np N python YOUR_SCRIPT.py"),
    (["python3", "-uc", "import flock"], "flockrun -np N python YOUR_SCRIPT.py"),
    (["python", "train.py", "-c", "cfg"], "flockrun -np N python train.py -c cfg"),
    (["python3", "-u", "-X", "dev", "-W", "ignore", "t.py", "-m", "x"],
     "flockrun -np N python3 -u -X dev -W ignore t.py -m x"),
    (["python3", "-", "-c"], "flockrun -np N python YOUR_SCRIPT.py"),
    (["/usr/bin/python3", ""], "flockrun -np N python YOUR_SCRIPT.py"),  # 3.9: a REPL
    (["python3"], "flockrun -np N python YOUR_SCRIPT.py"),
    (["python3", "-m", "ipykernel_launcher", "-f", "k.json"],
     "flockrun -np N python YOUR_SCRIPT.py"),
    (None, "flockrun -np N python YOUR_SCRIPT.py"),
])
def test_suggested_command_repeats_the_program_when_it_can(argv, command):
    assert _launch_notes.suggested_command(argv) == command


def test_without_orig_argv_the_note_uses_the_executable_and_argv(monkeypatch):
    # Python 3.9 has no sys.orig_argv.
    monkeypatch.delattr(sys, "orig_argv", raising=False)
    monkeypatch.setattr(sys, "argv", ["train.py", "--lr", "0.1"])
    monkeypatch.setattr(_launch_notes, "_single_rank_noted", False)
    stream = io.StringIO()
    _launch_notes.note_single_rank(1, environ={}, stream=stream)
    assert "to use N ranks: flockrun -np N {} train.py --lr 0.1  (".format(
        sys.executable) in stream.getvalue()
