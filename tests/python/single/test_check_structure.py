"""tools/check_structure.py (ctest `structure`) reports each kind of violation: run on a
tiny tree with one of each, and with known violations present, gone or new."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
CHECK = ROOT / "tools" / "check_structure.py"
CLANG_FORMAT = shutil.which("clang-format-14") or shutil.which("clang-format")

LONG_CPP = "namespace flock {\n\nint Long() {\n  int x = 0;\n" + "  x += 1;\n" * 60 + \
    "  return x;\n}\n\n}  // namespace flock\n"
LONG_PY = "def long_function():\n    x = 0\n" + "    x += 1\n" * 60 + "    return x\n"

FILES = {
    "csrc/runtime/uses_mpi.cc": '#include <mpi.h>\n',
    "csrc/transport/mpi/fine.cc": '#include <mpi.h>\n#include "nccl.h"\n',
    "csrc/runtime/reads_env.cc": '#include <cstdlib>\n\nconst char* v = std::getenv("X");\n',
    "csrc/common/config.cc": '#include <cstdlib>\n\nconst char* v = std::getenv("X");\n',
    "csrc/common/comment_only.cc": "// getenv( in a comment is fine\n",
    "csrc/common/big.h": "// line\n" * 501,
    "csrc/common/long.cc": LONG_CPP,
    "tools/long.py": LONG_PY,
    "csrc/common/ugly.cc": "int  f( ){return 1;}\n",
    # A new violation (common may include nothing) and a known one (neighbor -> engine).
    "csrc/common/up.h": '#include "flock/engine/engine.h"\n',
    "csrc/neighbor/known.h": '#include "flock/engine/counters.h"\n',
    "csrc/unplaced/x.h": '#include "flock/common/status.h"\n',
}


KNOWN_LISTS_DRIVER = """
import sys
sys.path.insert(0, {tools!r})
import check_structure as check
check.KNOWN_VIOLATIONS = {{("neighbor", "engine"), ("requests", "neighbor")}}
check.KNOWN_LONG_FUNCTIONS = {{("csrc/engine/engine.cc", "Engine::Gone")}}
sys.exit(check.main(["--root", {tree!r}]))
"""


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    tree = tmp_path_factory.mktemp("tree")
    for path, text in FILES.items():
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_text(text)
    shutil.copy(ROOT / ".clang-format", tree / ".clang-format")
    # The known lists are the test's own: the real ones are empty, and should stay so.
    driver = KNOWN_LISTS_DRIVER.format(tools=str(CHECK.parent), tree=str(tree))
    result = subprocess.run([sys.executable, "-c", driver], capture_output=True, text=True)
    return result.returncode, result.stdout.splitlines()


def lines_with(report, *words):
    return [line for line in report[1] if all(word in line for word in words)]


def test_fails(report):
    assert report[0] == 1, report


def test_mpi_include_outside_transport(report):
    assert lines_with(report, "csrc/runtime/uses_mpi.cc:1", "mpi.h")
    assert not lines_with(report, "fine.cc")


def test_getenv_outside_the_settings_table(report):
    assert lines_with(report, "csrc/runtime/reads_env.cc:3", "getenv")
    assert not lines_with(report, "getenv: csrc/common/config.cc")
    assert not lines_with(report, "comment_only.cc")


def test_long_file(report):
    assert lines_with(report, "csrc/common/big.h", "501 lines")


def test_long_cpp_and_python_functions(report):
    assert lines_with(report, "csrc/common/long.cc:3", "Long", "64 lines")  # { to }
    assert lines_with(report, "tools/long.py:1", "long_function", "63 lines")  # def on


@pytest.mark.skipif(CLANG_FORMAT is None, reason="clang-format is not installed")
def test_unformatted_file(report):
    assert lines_with(report, "csrc/common/ugly.cc", "clang-format")
    assert not lines_with(report, "long.cc", "clang-format")


def test_include_direction(report):
    assert lines_with(report, "common includes engine", "csrc/common/up.h")
    assert not lines_with(report, "neighbor includes engine")  # known
    assert lines_with(report, "csrc/unplaced/x.h", "no place in ALLOWED_INCLUDES")


def test_known_violations_that_are_gone_must_leave_the_lists(report):
    assert lines_with(report, "KNOWN_VIOLATIONS", "('requests', 'neighbor')", "remove it")
    assert not lines_with(report, "KNOWN_VIOLATIONS", "('neighbor', 'engine')")
    assert lines_with(report, "KNOWN_LONG_FUNCTIONS", "Engine::Gone", "remove it")
