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

import fcntl
import ipaddress
import os
import re
import shutil
import signal
from typing import Dict, List, Mapping, Optional

import netns

SUBNET = ipaddress.ip_network("10.77.0.0/24")
BRIDGE = "flock-br"
NAMESPACE_PREFIX = "flock-"  # the rsh agent maps host hN to namespace flock-hN
MAX_HOSTS = 64
LOCK_PATH = "/run/lock/flock-cluster.lock"
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
    """Namespaces, links and /etc/netns entries of a cluster that exist now."""
    found = [n for n in netns.namespaces() if n.startswith(NAMESPACE_PREFIX)]
    found += [f"link {n}" for n in netns.links() if n.startswith(NAMESPACE_PREFIX)]
    found += [f"{netns.NETNS_CONFIG_DIR}/{n}" for n in netns.config_entries()
              if n.startswith(NAMESPACE_PREFIX)]
    return found


def in_use() -> bool:
    """Does a running process hold a cluster (a `with` block, `run`)?"""
    try:
        with _ClusterLock():
            return False
    except ClusterError:
        return True


def tear_down() -> None:
    """Remove every emulated host, link and name file; safe to call twice.

    The root ends of the veth pairs are deleted explicitly: the kernel
    frees a namespace (and the veth in it) only once nothing uses it, which
    a process forking at the wrong moment can delay.
    """
    for namespace in netns.namespaces():
        if namespace.startswith(NAMESPACE_PREFIX):
            netns.kill_processes(namespace)
            netns.delete_namespace(namespace)
    for link in netns.links():
        if link.startswith(NAMESPACE_PREFIX):
            netns.delete_link(link)
    for entry in netns.config_entries():
        if entry.startswith(NAMESPACE_PREFIX):
            netns.delete_config(entry)
    if os.path.isdir(netns.NETNS_CONFIG_DIR) and \
            not os.listdir(netns.NETNS_CONFIG_DIR):
        os.rmdir(netns.NETNS_CONFIG_DIR)


def namespaces_supported() -> Optional[str]:
    """None when this machine lets us build a cluster, else the reason."""
    if os.geteuid() != 0:
        return "creating network namespaces needs root"
    for tool in ("ip", "tc", "unshare"):
        if shutil.which(tool) is None:
            return f"'{tool}' is not installed (Debian: iproute2, util-linux)"
    probe = f"flockprobe-{os.getpid()}"  # outside the cluster's names
    try:
        netns.run(["ip", "netns", "add", probe])
    except netns.NetnsError as exc:
        return f"cannot create a network namespace: {exc}"
    netns.run(["ip", "netns", "delete", probe], check=False)
    return None


class _ClusterLock:
    """An exclusive lock a process holds while its cluster is up, so that
    a second user (a test run during a benchmark) is refused instead of
    tearing the first one's hosts down."""

    def __init__(self):
        self._file = None

    def __enter__(self) -> "_ClusterLock":
        os.makedirs(os.path.dirname(LOCK_PATH), exist_ok=True)
        self._file = open(LOCK_PATH, "w", encoding="ascii")
        try:
            fcntl.flock(self._file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._file.close()
            self._file = None
            raise ClusterError("the emulated cluster is in use by a running "
                               f"process (it holds {LOCK_PATH})") from None
        return self

    def __exit__(self, *_exc) -> None:
        if self._file is not None:
            self._file.close()  # closing releases the lock
            self._file = None


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
        self._lock = _ClusterLock()

    # -- building ---------------------------------------------------------
    def up(self) -> "EmulatedCluster":
        """Build the bridge and the hosts; on any failure undo it all.

        The lock is held until down(): by this process's `with` block, or
        released at exit after `tools/cluster up`.
        """
        self._lock.__enter__()
        stale = leftovers()
        if stale:
            self._lock.__exit__()
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
            self.down()
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
        """Tear down; a second Ctrl-C or SIGTERM meanwhile cannot cut it short."""
        previous = {s: signal.signal(s, signal.SIG_IGN)
                    for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            tear_down()
        finally:
            self._lock.__exit__()
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def __enter__(self) -> "EmulatedCluster":
        # SIGTERM (a CI timeout) would otherwise end the process without
        # running __exit__ and leave the namespaces behind.
        self._previous_sigterm = signal.signal(signal.SIGTERM, _raise_exit)
        try:
            return self.up()
        except BaseException:
            signal.signal(signal.SIGTERM, self._previous_sigterm)
            raise

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
