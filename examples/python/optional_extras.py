"""tqdm and matplotlib, optional: every example runs without them, and when one is
missing the progress bar or the plot is skipped with one line saying so.

(No flock import here: topology_consensus_plot.py uses it without torch.)
"""

import importlib
import sys


def import_optional(module, skipped, say=print):
    """The module, or None after one line saying what is skipped and why."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        missing = getattr(error, "name", None) or module  # e.g. tensorboard for torch.utils...
        say("{} skipped: {} is not installed ({})".format(skipped, missing.split(".")[0], error))
        return None


def pyplot_or_none(skipped, interactive=False, say=print):
    """matplotlib.pyplot (Agg backend unless interactive), or None with one line why."""
    matplotlib = import_optional("matplotlib", skipped, say)
    if matplotlib is None:
        return None
    if not interactive:
        matplotlib.use("Agg")  # no display needed to write a PNG
    return importlib.import_module("matplotlib.pyplot")


def progress_bar(total, description, enabled=True, say=print):
    """A tqdm bar on stderr, or None (disabled, or tqdm missing: one line why)."""
    if not enabled:
        return None
    tqdm = import_optional("tqdm", "progress bar", say)
    if tqdm is None:
        return None
    return tqdm.tqdm(total=total, desc=description, file=sys.stderr, mininterval=0.5,
                     dynamic_ncols=True, leave=False)
