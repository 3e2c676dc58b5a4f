"""The numpy reference for the neighbor ops: the dense mixing matrix W of a call.

Convention (Bluefog's and flock's): W[j][i] is the weight rank i gives to rank j's
value, so column i is rank i's combination. With the ranks' flattened inputs as
the rows of X, rank i's result is row i of W^T X.

W is built here from first principles, not from flock's own code paths:

- static topology (a flock.topology Graph, a networkx DiGraph or a square numpy
  W): the graph's own weights when the topology is weighted, else 1/(indeg+1)
  for the rank itself and each in-neighbour;
- the static topology with explicit self/src weights: unlisted in-neighbours 0;
- a dynamic call: every rank's (self_weight, src_weights, dst_weights), which
  every rank can recompute because the tests derive them from (seed, rank)
  alone: W[i][i] = self_weight_i, W[j][i] = src_weights_i[j] * dst_weight_{j->i};
- hierarchical: the machine means mixed by a machine-level W, the same on every
  rank of a machine.

Also the tolerance for weighted sums: relative to Σ|w|·|x|, the size of what
was summed, so cancellation near zero does not make the check meaningless.
"""

import networkx as nx
import numpy as np

# Allowed error of a weighted sum, relative to Σ_j |W[j][i]|·|x_j| (elementwise).
# float16/bfloat16 accumulate in float32 and round once at the end.
WEIGHTED_RTOL = {"float16": 1e-2, "bfloat16": 5e-2, "float32": 1e-5, "float64": 1e-12}


# ---- static topologies

def to_digraph(topology):
    """A networkx DiGraph with a 'weight' on every edge, from any topology form."""
    if isinstance(topology, np.ndarray):
        return nx.from_numpy_array(np.asarray(topology, dtype=np.float64),
                                   create_using=nx.DiGraph)
    if isinstance(topology, nx.DiGraph):
        return topology
    return topology.to_networkx()  # flock.topology.Graph


def in_neighbors(topology, rank):
    """Sorted in-neighbours of `rank`, itself excluded (in_neighbor_ranks())."""
    graph = to_digraph(topology)
    return sorted(j for j in graph.predecessors(rank) if j != rank)


def out_neighbors(topology, rank):
    graph = to_digraph(topology)
    return sorted(j for j in graph.successors(rank) if j != rank)


def static_mixing(topology, weighted):
    """W of neighbor_allreduce(t) with no weight arguments on this topology."""
    graph = to_digraph(topology)
    n = graph.number_of_nodes()
    if weighted:
        return nx.to_numpy_array(graph, nodelist=range(n), weight="weight", dtype=np.float64)
    w = np.zeros((n, n))
    for i in range(n):
        sources = in_neighbors(graph, i)
        uniform = 1.0 / (len(sources) + 1)
        w[i, i] = uniform
        for j in sources:
            w[j, i] = uniform
    return w


def recv_weights(w, rank):
    """(W[r][r], {j: W[j][r]}) over the nonzero in-weights: the arguments that
    reproduce column r of w (the same as flock.topology.GetRecvWeights)."""
    w = np.asarray(w)
    return float(w[rank, rank]), {j: float(w[j, rank]) for j in range(len(w))
                                  if j != rank and w[j, rank] != 0}


def static_weighted_mixing(topology, args):
    """W of neighbor_allreduce(t, self_weight, src_weights) on the static topology:
    args[i] = (self_weight, src_weights) of rank i; keys must be in-neighbours and
    in-neighbours not listed weigh 0."""
    n = len(args)
    w = np.zeros((n, n))
    for i, (self_weight, src_weights) in enumerate(args):
        allowed = set(in_neighbors(topology, i))
        if not set(src_weights) <= allowed:
            raise AssertionError("rank {}: src_weights keys {} are not in-neighbours {}".format(
                i, sorted(src_weights), sorted(allowed)))
        w[i, i] = self_weight
        for j, weight in src_weights.items():
            w[j, i] = weight
    return w


# ---- dynamic calls

def dst_weight(dst_weights, to_rank):
    """The scale a sender applies to its value for `to_rank` (None: not a destination)."""
    if isinstance(dst_weights, dict):
        return dst_weights.get(to_rank)
    return 1.0 if to_rank in dst_weights else None


def dynamic_mixing(args):
    """W of a dynamic neighbor_allreduce: args[i] = (self_weight, src_weights,
    dst_weights) of rank i, dst_weights a list of ranks (weight 1.0) or a dict.
    Raises if the pattern is inconsistent (a test bug: such a call would fail)."""
    n = len(args)
    w = np.zeros((n, n))
    for i, (self_weight, src_weights, _) in enumerate(args):
        w[i, i] = self_weight
        for j, weight in src_weights.items():
            scale = dst_weight(args[j][2], i)
            if scale is None:
                raise AssertionError(
                    "rank {} expects rank {}, which does not send to it".format(i, j))
            w[j, i] += weight * scale
    for j, (_, _, dst_weights) in enumerate(args):
        for i in dst_weights:
            if j not in args[i][1]:
                raise AssertionError(
                    "rank {} sends to rank {}, which does not expect it".format(j, i))
    return w


def uniform_args(send_ranks, recv_ranks, self_weight=None):
    """(self_weight, src_weights, dst_weights) for a (send_ranks, recv_ranks) step of
    a dynamic schedule: 1/(len(recv)+1) for self and each source, dst weight 1.0."""
    uniform = 1.0 / (len(recv_ranks) + 1)
    return (uniform if self_weight is None else self_weight,
            {j: uniform for j in recv_ranks}, list(send_ranks))


def args_from_destinations(destinations, self_weight=None):
    """Every rank's uniform arguments given only where each rank sends:
    destinations[j] = the list (or {rank: scale} dict) rank j sends to."""
    n = len(destinations)
    sources = [[j for j in range(n) if i in destinations[j]] for i in range(n)]
    args = []
    for i in range(n):
        sw, src, _ = uniform_args([], sources[i], self_weight)
        args.append((sw, src, destinations[i]))
    return args


# ---- applying W

def flatten_inputs(inputs):
    return np.stack([np.asarray(x, dtype=np.float64).reshape(-1) for x in inputs])


def mix(w, inputs):
    """Every rank's result (float64, each with its rank's input shape): rows of W^T X."""
    x = flatten_inputs(inputs)
    out = np.asarray(w, dtype=np.float64).T @ x
    return [out[i].reshape(np.shape(inputs[i])) for i in range(len(inputs))]


def mix_bound(w, inputs):
    """Σ_j |W[j][i]|·|x_j| per rank: the scale of the rounding error of the sum."""
    x = np.abs(flatten_inputs(inputs))
    out = np.abs(np.asarray(w, dtype=np.float64)).T @ x
    return [out[i].reshape(np.shape(inputs[i])) for i in range(len(inputs))]


def mixed(w, inputs, rank):
    """Rank `rank`'s result alone: Σ_j W[j][rank]·x_j (no n-by-elements matrix built)."""
    out = np.zeros(np.shape(inputs[rank]))
    for j, x in enumerate(inputs):
        if w[j][rank] != 0:
            out = out + float(w[j][rank]) * np.asarray(x, dtype=np.float64)
    return out


def mixed_bound(w, inputs, rank):
    out = np.zeros(np.shape(inputs[rank]))
    for j, x in enumerate(inputs):
        if w[j][rank] != 0:
            out = out + abs(float(w[j][rank])) * np.abs(np.asarray(x, dtype=np.float64))
    return out


def assert_weighted_close(got, expected, bound, dtype, what=""):
    """|got - expected| <= rtol(dtype) * max(bound, 1e-3), elementwise; shapes equal."""
    got = np.asarray(got, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    assert got.shape == expected.shape, "{}: shape {} != expected {}".format(
        what, got.shape, expected.shape)
    if got.size == 0:
        return
    allowed = WEIGHTED_RTOL[dtype] * np.maximum(np.asarray(bound, dtype=np.float64), 1e-3)
    error = np.abs(got - expected)
    bad = ~(error <= allowed)  # NaN counts as bad
    if bad.any():
        k = int(np.flatnonzero(bad.reshape(-1))[0])
        raise AssertionError(
            "{} ({}): {} of {} elements off; first at flat index {}: got {!r}, expected {!r}, "
            "allowed error {!r}".format(what, dtype, int(bad.sum()), got.size, k,
                                        got.reshape(-1)[k], expected.reshape(-1)[k],
                                        allowed.reshape(-1)[k]))


# ---- neighbor_allgather

def gather(inputs, order, trailing_shape):
    """The ranks' tensors of `order` concatenated on dim 0 (a 0-d tensor is one row)."""
    parts = [np.asarray(inputs[j]).reshape((-1,) + tuple(trailing_shape)) for j in order]
    if not parts:
        dtype = np.asarray(inputs[0]).dtype if len(inputs) else np.float64
        return np.zeros((0,) + tuple(trailing_shape), dtype=dtype)
    return np.concatenate(parts)


# ---- hierarchical

def machine_means(inputs, local_size):
    """(machines, elements) array: the mean of each machine's ranks (ranks laid out by machine)."""
    x = flatten_inputs(inputs)
    n = x.shape[0]
    assert n % local_size == 0, "homogeneous machines only"
    return x.reshape(n // local_size, local_size, -1).mean(axis=1)


def hierarchical(inputs, local_size, machine_w):
    """Every rank's result of hierarchical_neighbor_allreduce: machine means mixed by
    the machine-level W, broadcast to every rank of the machine."""
    means = machine_means(inputs, local_size)
    mixed = np.asarray(machine_w, dtype=np.float64).T @ means
    return [mixed[r // local_size].reshape(np.shape(inputs[r])) for r in range(len(inputs))]


def hierarchical_bound(inputs, local_size, machine_w):
    abs_means = machine_means([np.abs(np.asarray(x, dtype=np.float64)) for x in inputs],
                              local_size)
    mixed = np.abs(np.asarray(machine_w, dtype=np.float64)).T @ abs_means
    return [mixed[r // local_size].reshape(np.shape(inputs[r])) for r in range(len(inputs))]
