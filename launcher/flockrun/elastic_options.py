"""flockrun's elastic options (``--elastic`` and the options that only it reads).

``add_elastic_arguments`` defines them; ``elastic_settings`` checks them against
-np and the host options and returns ElasticSettings, or None for an ordinary
job. Horovod's names where Horovod has the option (``--min-np``, ``--max-np``,
``--host-discovery-script``, ``--reset-limit``, ``--slots-per-host``,
``--elastic-timeout``).
"""

import argparse
import os
from dataclasses import dataclass
from typing import Optional

from flockrun.elastic_files import DEFAULT_DIR
from flockrun.errors import LaunchError

ELASTIC_VALUE_OPTIONS = ("--min-np", "--max-np", "--host-discovery-script", "--reset-limit",
                         "--slots-per-host", "--elastic-dir", "--elastic-timeout",
                         "--discovery-interval", "--removal-grace")
DEFAULT_RESET_LIMIT = 10
DEFAULT_ELASTIC_TIMEOUT_S = 600.0
DEFAULT_DISCOVERY_INTERVAL_S = 2.0
DEFAULT_REMOVAL_GRACE_S = 60.0


@dataclass(frozen=True)
class ElasticSettings:
    """What an elastic job may do; sizes are rank counts."""

    min_np: int
    max_np: int
    discovery_script: Optional[str]
    slots_per_host: int
    reset_limit: int
    directory: str
    timeout_s: float
    discovery_interval_s: float
    removal_grace_s: float


def add_elastic_arguments(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("--elastic", action="store_true",
        help="run an elastic job: relaunch it on the hosts available when a rank or "
        "host fails or hosts come and go (docs/elastic.md)")
    add("--min-np", type=int, metavar="A", help="elastic: fewest ranks to run on "
        "(default -np); below it flockrun waits for hosts")
    add("--max-np", type=int, metavar="B", help="elastic: most ranks to run on "
        "(default -np)")
    add("--host-discovery-script", metavar="S", help="elastic: executable printing "
        "the hosts available now, one host:slots a line; run every --discovery-interval")
    add("--slots-per-host", type=int, metavar="M", default=None,
        help="elastic: slots of a host that discovery lists without :slots (default 1)")
    add("--reset-limit", type=int, metavar="K", default=None,
        help=f"elastic: give up after K relaunches caused by failures "
        f"(default {DEFAULT_RESET_LIMIT})")
    add("--elastic-dir", metavar="D", default=None,
        help=f"elastic: directory of the commits (default ./{DEFAULT_DIR})")
    add("--elastic-timeout", type=float, metavar="S", default=None,
        help=f"elastic: how long to wait for --min-np slots before giving up "
        f"(default {DEFAULT_ELASTIC_TIMEOUT_S:.0f} s)")
    add("--discovery-interval", type=float, metavar="S", default=None,
        help=f"elastic: seconds between runs of the discovery script "
        f"(default {DEFAULT_DISCOVERY_INTERVAL_S:g})")
    add("--removal-grace", type=float, metavar="S", default=None,
        help=f"elastic: how long a job that loses a host may run on to its next commit "
        f"before flockrun stops it (default {DEFAULT_REMOVAL_GRACE_S:.0f} s)")


_ONLY_ELASTIC = ("min_np", "max_np", "host_discovery_script", "slots_per_host", "reset_limit",
                 "elastic_dir", "elastic_timeout", "discovery_interval", "removal_grace")


def elastic_settings(args: argparse.Namespace) -> Optional[ElasticSettings]:
    """ElasticSettings for --elastic (LaunchError when inconsistent), else None."""
    if not args.elastic:
        given = [name for name in _ONLY_ELASTIC if getattr(args, name) is not None]
        if given:
            option = "--" + given[0].replace("_", "-")
            raise LaunchError(f"{option} is an elastic option: add --elastic")
        return None
    min_np, max_np = _sizes(args)
    if args.host_discovery_script is not None and (args.host_spec or args.hostfile):
        raise LaunchError("give either --host-discovery-script or -H/--hostfile, not both")
    return ElasticSettings(
        min_np=min_np, max_np=max_np, discovery_script=args.host_discovery_script,
        slots_per_host=_int_at_least(args.slots_per_host, 1, 1, "--slots-per-host"),
        reset_limit=_int_at_least(args.reset_limit, DEFAULT_RESET_LIMIT, 0, "--reset-limit"),
        directory=os.path.abspath(args.elastic_dir or DEFAULT_DIR),
        timeout_s=_seconds(args.elastic_timeout, DEFAULT_ELASTIC_TIMEOUT_S,
                           "--elastic-timeout"),
        discovery_interval_s=_seconds(args.discovery_interval,
                                      DEFAULT_DISCOVERY_INTERVAL_S, "--discovery-interval"),
        removal_grace_s=_seconds(args.removal_grace, DEFAULT_REMOVAL_GRACE_S,
                                 "--removal-grace"))


def _sizes(args: argparse.Namespace):
    """(min_np, max_np): each defaults to -np; -np defaults to max_np."""
    start = args.num_proc
    min_np = args.min_np if args.min_np is not None else start
    max_np = args.max_np if args.max_np is not None else start
    if min_np is None or max_np is None:
        raise LaunchError("an elastic job needs -np N, or --min-np and --max-np")
    if min_np < 1:
        raise LaunchError(f"--min-np must be at least 1, got {min_np}")
    if max_np < min_np:
        raise LaunchError(f"--max-np {max_np} is below --min-np {min_np}")
    if start is not None and not min_np <= start <= max_np:
        raise LaunchError(f"-np {start} is outside --min-np {min_np} .. --max-np {max_np}")
    return min_np, max_np


def _int_at_least(value: Optional[int], default: int, minimum: int, option: str) -> int:
    if value is None:
        return default
    if value < minimum:
        raise LaunchError(f"{option} must be {minimum} or more, got {value}")
    return value


def _seconds(value: Optional[float], default: float, option: str) -> float:
    if value is None:
        return default
    if not value > 0:
        raise LaunchError(f"{option} must be a positive number of seconds, got {value}")
    return value
