"""Checking that the program to run exists before mpirun is started.

mpirun reports a missing program in a box per failure, and a missing Python
script only as every rank's "can't open file" plus a box. flockrun checks
first, on this machine, the way the ranks will look for them: the command on
the ranks' PATH (or as a path, relative to the ranks' working directory: mpirun's
``-wdir``/``-wd`` when given, else flockrun's), and for a Python interpreter, its
script. The statuses follow the shell's: 127 for "not
found", 126 for "found but cannot be run".

Pure: the file-system questions come in as functions.
"""

import os
import posixpath
import re
from typing import Callable, Optional, Sequence

from flockrun.errors import LaunchError

NOT_EXECUTABLE_STATUS = 126
NOT_FOUND_STATUS = 127

_PYTHON_RE = re.compile(r"^python[0-9.]*$")

# mpirun's options setting the ranks' working directory (one dash or two, as mpirun takes).
_WDIR_OPTIONS = ("-wdir", "--wdir", "-wd", "--wd")


class ProgramError(LaunchError):
    """The program or its script cannot be started; ``status`` is flockrun's exit status."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def python_script(args: Sequence[str]) -> Optional[str]:
    """The script a Python interpreter would run with args, or None (-c, -m, stdin)."""
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            return args[i] if i < len(args) else None
        if arg == "-":
            return None
        if not arg.startswith("-"):
            return arg
        if arg.startswith("--"):
            i += 1 if arg == "--check-hash-based-pycs" else 0
            continue
        for position, letter in enumerate(arg[1:], start=1):  # -u, -OO, -uc CODE, -Wignore
            if letter in "cm":
                return None
            if letter in "WX":
                i += 1 if position == len(arg) - 1 else 0  # its value is the next word
                break
    return None


def ranks_directory(user_mpi_args: Sequence[str], cwd: str) -> str:
    """Where the ranks start on this machine: the user's -wdir/-wd (relative to cwd, as
    mpirun takes it; the last one wins), else cwd."""
    directory = cwd
    for option, value in zip(user_mpi_args, user_mpi_args[1:]):
        if option in _WDIR_OPTIONS:
            directory = posixpath.normpath(posixpath.join(cwd, value))
    return directory


def check_program(command: Sequence[str], path: str, cwd: str,
                  which: Callable[..., Optional[str]],
                  isfile: Callable[[str], bool] = os.path.isfile,
                  executable: Callable[[str], bool] = lambda p: os.access(p, os.X_OK)
                  ) -> None:
    """Raise ProgramError when command[0], or a Python interpreter's script, is missing."""
    program = command[0]
    if "/" in program:
        full = posixpath.normpath(posixpath.join(cwd, program))
        if not isfile(full):
            raise ProgramError(f"{program}: no such file", NOT_FOUND_STATUS)
        if not executable(full):
            raise ProgramError(f"{program}: not executable (chmod +x {program}, or run it "
                               "with its interpreter)", NOT_EXECUTABLE_STATUS)
    elif which(program, path=path) is None:  # the ranks get this PATH too
        raise ProgramError(f"{program}: command not found on PATH", NOT_FOUND_STATUS)
    if _PYTHON_RE.match(posixpath.basename(program)):
        script = python_script(command[1:])
        if script is not None and not isfile(posixpath.normpath(posixpath.join(cwd, script))):
            raise ProgramError(f"{program}: can't open file {script!r}: no such file "
                               f"(in {cwd})", NOT_FOUND_STATUS)
