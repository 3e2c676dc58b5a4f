#!/usr/bin/env python3
"""flock's structure rules, checked on the source tree (ctest runs this as `structure`).

  - mpi.h and nccl.h are included only by transport implementations (and tests);
  - getenv is called only by the settings table (common/config.cc: docs/env.md);
  - source files have at most 500 lines, functions at most 60 (C++ in csrc/, Python);
  - csrc/ and tests/cpp/ are clang-format clean (skipped, with a note, without it);
  - csrc's folders include each other in one direction only (ALLOWED_INCLUDES).

Known violations are listed below: a new one fails the check, and so does a listed
one that is gone, so each list only shrinks as fixes land.

usage: check_structure.py [--root DIR]   (DIR: the repository; default: this one)
Prints one line per violation and exits 1 if there is any.
"""

import argparse
import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

MAX_FILE_LINES = 500
MAX_FUNCTION_LINES = 60
LENGTH_ROOTS = ("csrc", "topology", "python/flock", "launcher", "tests", "benchmarks", "tools")
CPP_FUNCTION_ROOTS = ("csrc", "topology")  # Python functions: every .py of LENGTH_ROOTS
CPP_SUFFIXES = (".h", ".hpp", ".cc", ".cpp", ".c", ".cu")
SOURCE_SUFFIXES = CPP_SUFFIXES + (".py", ".sh", ".cmake", ".in", "CMakeLists.txt")

# Tests may use MPI, and so may the benchmarks: the raw-MPI floor is what they compare with.
MPI_HEADERS = ("mpi.h", "nccl.h")
MPI_ROOTS = ("csrc", "topology", "examples")
MPI_ALLOWED = ("csrc/transport/",)
GETENV_ROOTS = ("csrc", "topology")
GETENV_ALLOWED = ("csrc/common/config.cc",)
FORMAT_ROOTS = ("csrc", "tests/cpp")


def _on(*below):
    """The folders a layer may include: those below it and what they may include."""
    return set(below).union(*(ALLOWED_INCLUDES[folder] for folder in below))


# The direction between csrc/<folder>s ("topology": the flock_topology library).
ALLOWED_INCLUDES = {"common": set()}
ALLOWED_INCLUDES.update(transport=_on("common"), topology=_on("common"))
# requests: an OpRequest names its CommGroup (transport.h).
ALLOWED_INCLUDES["requests"] = _on("transport")
ALLOWED_INCLUDES["collectives"] = _on("requests")
# neighbor_plan builds a call's plan from the topology's Graph, a bottom layer.
ALLOWED_INCLUDES["neighbor"] = _on("requests", "topology")
# window: a window's slots, locks and messages, served by the engine thread.
ALLOWED_INCLUDES["window"] = _on("requests")
ALLOWED_INCLUDES["engine"] = _on("neighbor", "collectives", "window")
ALLOWED_INCLUDES["runtime"] = _on("engine")
ALLOWED_INCLUDES["bindings"] = _on("runtime")

# (from, to): includes against the direction, each to be removed. None left.
KNOWN_VIOLATIONS = set()
# (path, name): functions allowed over MAX_FUNCTION_LINES. None: keep it so.
KNOWN_LONG_FUNCTIONS = set()
# paths over MAX_FILE_LINES.
KNOWN_LONG_FILES = set()


class Tree:
    """The repository's files, read once."""

    def __init__(self, root):
        self.root = Path(root)
        self._text = {}

    def files(self, roots, suffixes):
        for top in roots:
            for folder, dirs, names in os.walk(self.root / top):
                dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__pycache__")))
                for name in sorted(names):
                    if name.endswith(suffixes):
                        yield (Path(folder) / name).relative_to(self.root).as_posix()

    def text(self, path):
        if path not in self._text:
            self._text[path] = (self.root / path).read_text(errors="replace")
        return self._text[path]


def check_mpi_includes(tree):
    include = re.compile(r'^\s*#\s*include\s*[<"](?:\S*/)?({})[>"]'.format(
        "|".join(re.escape(h) for h in MPI_HEADERS)), re.M)
    for path in tree.files(MPI_ROOTS, CPP_SUFFIXES):
        if path.startswith(MPI_ALLOWED):
            continue
        for match in include.finditer(tree.text(path)):
            yield "{}:{}: includes {} outside transport/".format(
                path, _line_of(tree.text(path), match.start()), match.group(1))


def check_getenv(tree):
    for path in tree.files(GETENV_ROOTS, CPP_SUFFIXES):
        if path in GETENV_ALLOWED:
            continue
        code = strip_cpp(tree.text(path))
        for match in re.finditer(r"getenv\s*\(", code):
            yield "{}:{}: getenv outside the settings table ({})".format(
                path, _line_of(code, match.start()), ", ".join(GETENV_ALLOWED))


def check_file_lengths(tree):
    seen = set()
    for path in tree.files(LENGTH_ROOTS, SOURCE_SUFFIXES):
        lines = tree.text(path).count("\n")
        if lines > MAX_FILE_LINES:
            seen.add(path)
            if path not in KNOWN_LONG_FILES:
                yield "{}: {} lines (at most {})".format(path, lines, MAX_FILE_LINES)
    yield from _gone("KNOWN_LONG_FILES", KNOWN_LONG_FILES - seen)


def check_function_lengths(tree):
    seen = set()
    for path, name, first, last in _all_functions(tree):
        lines = last - first + 1
        if lines > MAX_FUNCTION_LINES:
            seen.add((path, name))
            if (path, name) not in KNOWN_LONG_FUNCTIONS:
                yield "{}:{}: function {} has {} lines (at most {})".format(
                    path, first, name, lines, MAX_FUNCTION_LINES)
    yield from _gone("KNOWN_LONG_FUNCTIONS", KNOWN_LONG_FUNCTIONS - seen)


def _all_functions(tree):
    for path in tree.files(CPP_FUNCTION_ROOTS, CPP_SUFFIXES):
        for name, first, last in cpp_functions(tree.text(path)):
            yield path, name, first, last
    for path in tree.files(LENGTH_ROOTS, (".py",)):
        for node in ast.walk(ast.parse(tree.text(path), path)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield path, node.name, node.lineno, node.end_lineno


def check_include_direction(tree):
    include = re.compile(r'^\s*#\s*include\s*[<"]flock/(\w+)/', re.M)
    found = {}  # (from, to) -> files
    for path in tree.files(("csrc", "topology"), CPP_SUFFIXES):
        here = _layer_of(path)
        if here not in ALLOWED_INCLUDES:
            yield "{}: folder {} has no place in ALLOWED_INCLUDES".format(path, here)
            continue
        for to in include.findall(tree.text(path)):
            if to != here and to not in ALLOWED_INCLUDES[here]:
                found.setdefault((here, to), []).append(path)
    for (here, to), paths in sorted(found.items()):
        if (here, to) not in KNOWN_VIOLATIONS:
            yield "{} includes {} against the layers' direction: {}".format(
                here, to, ", ".join(sorted(set(paths))))
    yield from _gone("KNOWN_VIOLATIONS", KNOWN_VIOLATIONS - set(found))


def _layer_of(path):
    parts = path.split("/")
    return parts[1] if parts[0] == "csrc" else parts[0]


def check_format(tree):
    binary = next(filter(None, map(shutil.which, ("clang-format-14", "clang-format"))), None)
    paths = list(tree.files(FORMAT_ROOTS, CPP_SUFFIXES))
    if binary is None:
        print("check_structure: clang-format not found, formatting not checked")
        return
    if not paths:
        return  # clang-format without files would read standard input
    result = subprocess.run([binary, "--dry-run", "--Werror", "--style=file"] + paths,
                            cwd=tree.root, capture_output=True, text=True)
    unformatted = sorted({line.split(":", 1)[0] for line in result.stderr.splitlines()
                          if "[-Wclang-format-violations]" in line})
    for path in unformatted:
        yield "{}: not clang-format clean (run {} -i {})".format(path, Path(binary).name, path)
    if result.returncode != 0 and not unformatted:
        yield "clang-format failed: {}".format(result.stderr.strip()[:500])


def _gone(list_name, entries):
    for entry in sorted(entries):
        yield "{} lists {}, which is no longer found: remove it from the list".format(list_name, entry)


def _line_of(text, offset):
    return text.count("\n", 0, offset) + 1


# ---- C++ reading: enough of the language to find function bodies ----

def strip_cpp(text):
    """``text`` with comments, literals and preprocessor lines blanked, lines kept."""
    out, i = [], 0
    while i < len(text):
        if text.startswith("//", i):
            end = _find(text, "\n", i)
        elif text.startswith("/*", i):
            end = _find(text, "*/", i) + 2
        elif text[i] in "\"'":
            end = _end_of_literal(text, i)
        else:
            out.append(text[i])
            i += 1
            continue
        out.append(re.sub(r"[^\n]", " ", text[i:end]))
        i = end
    lines, continued = "".join(out).split("\n"), False
    for k, line in enumerate(lines):
        directive = continued or line.lstrip().startswith("#")
        continued = directive and line.rstrip().endswith("\\")
        lines[k] = "" if directive else line
    return "\n".join(lines)


def _find(text, what, start):
    found = text.find(what, start)
    return len(text) if found < 0 else found


def _end_of_literal(text, start):
    i = start + 1
    while i < len(text) and text[i] not in (text[start], "\n"):
        i += 2 if text[i] == "\\" else 1
    return min(i + 1, len(text))


def cpp_functions(text):
    """(name, first line, last line) of each function body outside other functions."""
    code = strip_cpp(text)
    functions, header, i = [], "", 0
    while i < len(code):
        char = code[i]
        if char == "{":
            kind = _block_kind(header)
            if kind in ("function", "other"):
                end = _matching_brace(code, i)
                if kind == "function":
                    functions.append((_function_name(header), _line_of(code, i),
                                      _line_of(code, end)))
                header = "" if kind == "function" else header + "{}"
                i = end + 1
                continue
            header = ""  # a namespace or class: its members follow at their own scope
        elif char in ";}":
            header = ""
        else:
            header += char
        i += 1
    return functions


_QUALIFIERS = r"\s*(?:(?:const|noexcept|override|final|mutable|volatile|try|&&?)\s*)*"


def _block_kind(header):
    """What a `{` opens, from the text before it: function, namespace, class or other."""
    if re.search(r"\bnamespace\b|^\s*extern\s*$", header):  # extern "C" (literal blanked)
        return "namespace"
    after_params = header.rsplit(")", 1)[-1] if ")" in header else None
    if after_params is not None and (re.fullmatch(_QUALIFIERS + r"(->[^;]*)?", after_params)
                                     or re.search(r"\)\s*:.*\}\s*$", header, re.S)):
        return "function"  # a signature, or a constructor's list of initializers
    if re.search(r"\b(class|struct|union)\b", header) and not re.search(r"\benum\b", header):
        return "class"
    return "other"  # enum, braced initializer


def _matching_brace(code, start):
    depth = 0
    for i in range(start, len(code)):
        depth += {"{": 1, "}": -1}.get(code[i], 0)
        if depth == 0:
            return i
    return len(code) - 1


def _function_name(header):
    match = re.search(r"((?:[\w~]+::)*(?:operator\s*(?:\(\)|[^\s(]+)|~?\w+))\s*\(", header)
    return match.group(1) if match else "<lambda>"


CHECKS = (("mpi.h/nccl.h", check_mpi_includes), ("getenv", check_getenv),
          ("file length", check_file_lengths), ("function length", check_function_lengths),
          ("include direction", check_include_direction), ("clang-format", check_format))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=Path(__file__).resolve().parents[1])
    tree = Tree(parser.parse_args(argv).root)
    failures = 0
    for title, check in CHECKS:
        for problem in check(tree):
            print("{}: {}".format(title, problem))
            failures += 1
    print("check_structure: {} problem(s)".format(failures) if failures else "check_structure: ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
