"""Which host each rank runs on, added to the errors that report a failed rank.

When a rank stops, dies or shuts down early, the others' errors name it
("... waiting for ranks [2]", "flock was shut down on rank 2"). Across
machines the rank number alone does not say where to look, so the bindings
pass every such message through ``with_hosts`` before raising it, which adds
the host of each rank it names: "... [rank 2 is on host h2]".

The host names are gathered once by init() (every rank's gethostname(), in
the runtime's start-up allgather) and kept here, so an error raised after
shutdown() — or while another thread shuts down — still gets them without
touching the runtime. This rank's own host is left out: the user knows it.
"""

import re

_hosts = ()
_own_rank = -1

# "rank 2", "ranks 2, 3", "ranks [2, 3]", "ranks 2 and 3": the ways flock's
# messages name ranks.
_RANKS = re.compile(r"\branks? \[?(\d+(?:(?:, | and )\d+)*)")


def remember(hosts, own_rank):
    """Called by init(): ``hosts[r]`` is rank r's host name."""
    global _hosts, _own_rank
    _hosts = tuple(hosts)
    _own_rank = own_rank


def named_ranks(message):
    """The rank numbers ``message`` names, in order of first mention."""
    found = []
    for match in _RANKS.finditer(message):
        for number in re.split(r", | and ", match.group(1)):
            rank = int(number)
            if rank not in found:
                found.append(rank)
    return found


def with_hosts(message):
    """``message`` with the host of every other rank it names appended."""
    others = [r for r in named_ranks(message) if r != _own_rank and 0 <= r < len(_hosts)]
    if not others:
        return message
    first, rest = others[0], others[1:]
    where = ["rank {} is on host {}".format(first, _hosts[first])]
    where += ["rank {} on host {}".format(r, _hosts[r]) for r in rest]
    return "{} [{}]".format(message, ", ".join(where))
