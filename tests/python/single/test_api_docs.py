"""docs/api.md names every public symbol of flock's Python modules (a new public name
without documentation fails here)."""

import re
import types
from pathlib import Path

import pytest

import flock
import flock.numpy as fnp
import flock.topology_util as topology_util
import flock.torch as bf

API_DOC = Path(__file__).resolve().parents[3] / "docs" / "api.md"


def _public_names(module):
    return sorted(n for n in dir(module) if not n.startswith("_")
                  and not isinstance(getattr(module, n), types.ModuleType))


@pytest.mark.parametrize("module", [bf, fnp, flock, topology_util], ids=lambda m: m.__name__)
def test_every_public_name_is_in_the_api_page(module):
    text = API_DOC.read_text()
    missing = [n for n in _public_names(module) if not re.search(r"\b{}\b".format(n), text)]
    assert not missing, "docs/api.md does not name {}".format(missing)


def test_flock_numpy_and_torch_share_one_list_of_basics():
    """flock.numpy and flock.torch export every name flock does (one shared list)."""
    shared = set(_public_names(flock))
    assert shared <= set(_public_names(fnp)), shared - set(_public_names(fnp))
    assert shared <= set(_public_names(bf)), shared - set(_public_names(bf))
    assert "nccl_built" in shared and "unified_mpi_window_model_supported" in shared
