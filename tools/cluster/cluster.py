"""An emulated multi-host cluster on one machine, for tests and benchmarks.

Each host hN is a network namespace flock-hN with one veth link into a
bridge (flock-br) in the root namespace, on the private subnet
10.77.0.0/24: the bridge is 10.77.0.1, host N is 10.77.0.(10+N). OpenMPI
treats ranks on one host as one machine (shared memory between them) and
talks TCP between hosts, over the veth links, which can be rate-limited.

    with EmulatedCluster(hosts=2, rate="1gbit") as cluster:
        subprocess.run(["flockrun", "-np", "4", "-H", cluster.host_list(2),
                        "python", "train.py"], env=cluster.environment())

The cluster is torn down when the block ends, also on an exception, Ctrl-C
or SIGTERM; `python3 tools/cluster down` removes a cluster a killed
process left behind.
"""

import ipaddress
import os
import re
import signal
from typing import Dict, List, Mapping, Optional

import netns

SUBNET = ipaddress.ip_network("10.77.0.0/24")
BRIDGE = "flock-br"
NAMESPACE_PREFIX = "flock-"  # the rsh agent maps host hN to namespace flock-hN
MAX_HOSTS = 64
AGENT = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                     "rsh_agent.sh")

_RATE_RE = re.compile(r"^(\d+(?:\.\d+)?)(bit|kbit|mbit|gbit)$")
_RATE_UNITS = {"bit": 1, "kbit": 10**3, "mbit": 10**6, "gbit": 10**9}


class ClusterError(RuntimeError):
    """The cluster cannot be built, or one is already there."""


def host_name(index: int) -> str:
    """Name of host `index` (1-based): h1, h2, ..."""
    return f"h{index}"


def host_address(index: int) -> str:
    """IPv4 address of host `index` on the test subnet."""
    return str(SUBNET.network_address + 10 + index)


def rate_bits_per_second(rate: str) -> float:
    """'1gbit' -> 1e9; raises ClusterError for anything tc would misread."""
    match = _RATE_RE.match(rate.lower())
    if not match:
        raise ClusterError(f"bad link rate {rate!r}: use a number with bit, "
                           "kbit, mbit or gbit, e.g. 1gbit")
    return float(match.group(1)) * _RATE_UNITS[match.group(2)]


def burst_bytes(rate: str) -> int:
    """Token-bucket depth: at least 128 KiB (a TSO frame is up to 64 KiB,
    and a bucket smaller than a frame drops it) and 1 ms of traffic."""
    return max(128 * 1024, int(rate_bits_per_second(rate) / 8 / 1000))


def leftovers() -> List[str]:
    """Namespaces and links of an earlier cluster that still exist."""
    found = [n for n in netns.namespaces() if n.startswith(NAMESPACE_PREFIX)]
    if netns.link_exists(BRIDGE):
        found.append(BRIDGE)
    return found


def tear_down() -> None:
    """Remove every emulated host and the bridge; safe to call twice."""
    for namespace in netns.namespaces():
        if namespace.startswith(NAMESPACE_PREFIX):
            netns.kill_processes(namespace)
            netns.delete_namespace(namespace)
    netns.delete_link(BRIDGE)
    if os.path.isdir(netns.NETNS_CONFIG_DIR) and \
            not os.listdir(netns.NETNS_CONFIG_DIR):
        os.rmdir(netns.NETNS_CONFIG_DIR)


def namespaces_supported() -> Optional[str]:
    """None when this machine lets us build a cluster, else the reason."""
    if os.geteuid() != 0:
        return "creating network namespaces needs root"
    probe = NAMESPACE_PREFIX + "probe"
    try:
        netns.run(["ip", "netns", "add", probe])
    except (netns.NetnsError, FileNotFoundError) as exc:
        return f"cannot create a network namespace: {exc}"
    finally:
        netns.run(["ip", "netns", "delete", probe], check=False)
    return None


class EmulatedCluster:
    """N emulated hosts; a context manager that always tears them down."""

    def __init__(self, hosts: int, rate: Optional[str] = None):
        if not 1 <= hosts <= MAX_HOSTS:
            raise ClusterError(f"hosts must be 1..{MAX_HOSTS}, got {hosts}")
        if rate is not None:
            rate_bits_per_second(rate)  # validate before building anything
        self.hosts = hosts
        self.rate = rate
        self._previous_sigterm = None

    # -- building ---------------------------------------------------------
    def up(self) -> "EmulatedCluster":
        """Build the bridge and the hosts; on any failure undo it all."""
        stale = leftovers()
        if stale:
            raise ClusterError(
                "an emulated cluster is already up (" + ", ".join(stale) +
                "); remove it with: python3 tools/cluster down")
        try:
            netns.add_bridge(BRIDGE, f"{SUBNET.network_address + 1}/"
                                     f"{SUBNET.prefixlen}")
            entries = [f"{SUBNET.network_address + 1} flock-root"] + [
                f"{host_address(i)} {host_name(i)}"
                for i in range(1, self.hosts + 1)]
            for i in range(1, self.hosts + 1):
                self._add_host(i, entries)
        except BaseException:
            tear_down()
            raise
        return self

    def _add_host(self, index: int, hosts_entries: List[str]) -> None:
        netns.add_host(self.namespace(index), self.link(index), BRIDGE,
                       f"{host_address(index)}/{SUBNET.prefixlen}")
        netns.write_hosts_file(self.namespace(index), hosts_entries)
        self._shape_host(index)

    def set_rate(self, rate: Optional[str]) -> None:
        """Change every link's rate (None: unshaped) on a running cluster."""
        if rate is not None:
            rate_bits_per_second(rate)
        self.rate = rate
        for index in range(1, self.hosts + 1):
            self._shape_host(index)

    def _shape_host(self, index: int) -> None:
        namespace, link = self.namespace(index), self.link(index)
        if self.rate is None:
            netns.unshape(link)
            netns.unshape("eth0", namespace)
            return
        burst = burst_bytes(self.rate)
        netns.shape(link, self.rate, burst)  # towards the host
        netns.shape("eth0", self.rate, burst, namespace)  # from the host

    def down(self) -> None:
        tear_down()

    def __enter__(self) -> "EmulatedCluster":
        # SIGTERM (a CI timeout) would otherwise end the process without
        # running __exit__ and leave the namespaces behind.
        self._previous_sigterm = signal.signal(signal.SIGTERM, _raise_exit)
        return self.up()

    def __exit__(self, *_exc) -> None:
        try:
            self.down()
        finally:
            signal.signal(signal.SIGTERM, self._previous_sigterm)

    # -- using ------------------------------------------------------------
    @staticmethod
    def namespace(index: int) -> str:
        return NAMESPACE_PREFIX + host_name(index)

    @staticmethod
    def link(index: int) -> str:
        """Root-namespace end of host `index`'s veth pair (its switch port)."""
        return NAMESPACE_PREFIX + host_name(index)

    def host_list(self, slots: int) -> str:
        """flockrun -H value placing `slots` ranks on every host."""
        return ",".join(f"{host_name(i)}:{slots}"
                        for i in range(1, self.hosts + 1))

    def environment(self, base: Optional[Mapping[str, str]] = None
                    ) -> Dict[str, str]:
        """The environment under which flockrun launches onto the cluster.

        FLOCK_RSH_AGENT makes mpirun start its daemons inside the hosts'
        namespaces; FLOCK_NETWORK_INTERFACE keeps MPI on the test subnet;
        mpi_yield_when_idle because the emulated hosts share this
        machine's cores, which flockrun cannot tell from the host names.
        """
        env = dict(os.environ if base is None else base)
        env["FLOCK_RSH_AGENT"] = AGENT
        env["FLOCK_NETWORK_INTERFACE"] = str(SUBNET)
        env["OMPI_MCA_mpi_yield_when_idle"] = "1"
        return env

    def link_bytes(self, index: int) -> Dict[str, int]:
        """Bytes that crossed host `index`'s link: sent and received by it.

        Read at the switch end, where the kernel's tx is what the host
        received.
        """
        counters = netns.link_counters(self.link(index))
        return {"sent": counters["rx_bytes"], "received": counters["tx_bytes"]}


def _raise_exit(signum, _frame):
    raise SystemExit(128 + signum)
