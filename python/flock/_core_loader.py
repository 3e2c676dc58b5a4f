"""Imports the compiled extension with an error that says how to build it."""

try:
    from flock import _core  # noqa: F401  (re-exported)
except ImportError as error:  # pragma: no cover - only on broken installs
    raise ImportError(
        "flock's compiled module flock._core could not be loaded ({}). Build and install "
        "flock with scripts/setup.sh (or `pip install --no-build-isolation .` in a venv "
        "that sees Debian's packages).".format(error)
    ) from error

core = _core
