// What each op of the fake NCCL checks, sends, receives and finally writes.
// Collectives run over the same messages as send/recv: every rank sends its
// buffer to every peer that needs it, and reduces the contributions in rank
// order 0..n-1, so that every rank computes a bit-identical result. float16
// and bfloat16 are reduced in float and rounded after every step.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>
#include <type_traits>

#include "fake_cuda_internal.h"
#include "fake_nccl_internal.h"
#include "flock/common/half.h"

namespace flock::fake::nccl {
namespace {

bool Reduces(OpKind kind) {
  return kind == OpKind::kAllReduce || kind == OpKind::kReduce || kind == OpKind::kReduceScatter;
}
// Collectives of every rank, with no root or peer.
bool Symmetric(OpKind kind) {
  return kind == OpKind::kAllReduce || kind == OpKind::kAllGather || kind == OpKind::kReduceScatter;
}
bool Rooted(OpKind kind) {
  return kind == OpKind::kBroadcast || kind == OpKind::kReduce;
}

const char* KindName(int32_t kind) {
  switch (static_cast<OpKind>(kind)) {
    case OpKind::kSend: return "send/recv";
    case OpKind::kRecv: return "recv";
    case OpKind::kAllReduce: return "allreduce";
    case OpKind::kBroadcast: return "broadcast";
    case OpKind::kReduce: return "reduce";
    case OpKind::kAllGather: return "allgather";
    case OpKind::kReduceScatter: return "reducescatter";
  }
  return "unknown op";
}

const char* TypeName(int32_t dtype) {
  static const char* const names[] = {"int8",    "uint8",    "int32",      "uint32",
                                      "int64",   "uint64",   "float16",    "float32",
                                      "float64", "bfloat16", "float8e4m3", "float8e5m2"};
  return dtype >= 0 && dtype < ncclNumTypes ? names[dtype] : "unknown type";
}

const char* OpName(int32_t redop) {
  static const char* const names[] = {"sum", "prod", "max", "min", "avg"};
  return redop >= 0 && redop < ncclNumOps ? names[redop] : "unknown reduction";
}

// [p, p + bytes) must lie in one fake cudaMalloc of the comm's device.
ncclResult_t CheckBuffer(const Op& op, const char* name, const char* which, const void* p,
                         size_t bytes) {
  if (bytes == 0) return ncclSuccess;
  cudaPointerAttributes where{};
  char text[160];
  if (MemoryOf(p, bytes) != Memory::kDevice) {
    std::snprintf(text, sizeof(text), "%s: %s %p (%zu bytes) is not fake device memory", name,
                  which, p, bytes);
    return CallFailed(ncclInvalidArgument, text);
  }
  if (cudaPointerGetAttributes(&where, p) == cudaSuccess && where.device != op.comm->device) {
    std::snprintf(text, sizeof(text), "%s: %s %p is on fake device %d, the comm on device %d", name,
                  which, p, where.device, op.comm->device);
    return CallFailed(ncclInvalidArgument, text);
  }
  return ncclSuccess;
}

ncclResult_t CheckBuffers(const Op& op, const char* name, size_t bytes) {
  const int rank = op.comm->rank;
  const bool root = rank == op.peer;
  const bool reads = op.kind != OpKind::kRecv && (op.kind != OpKind::kBroadcast || root);
  const bool writes = op.kind != OpKind::kSend && (op.kind != OpKind::kReduce || root);
  const size_t written = op.kind == OpKind::kAllGather ? bytes * op.comm->nranks : bytes;
  const size_t read = op.kind == OpKind::kReduceScatter ? bytes * op.comm->nranks : bytes;
  if (reads) {
    if (ncclResult_t r = CheckBuffer(op, name, "sendbuff", op.send, read); r != ncclSuccess)
      return r;
  }
  if (writes) return CheckBuffer(op, name, "recvbuff", op.recv, written);
  return ncclSuccess;
}

// Storage type T, computed in C: halves in float, rounded back after each step.
template <class T>
struct Num {
  using C = T;
  static C Load(T v) { return v; }
  static T Store(C c) { return c; }
};
template <>
struct Num<Float16> {
  using C = float;
  static float Load(Float16 v) { return ToFloat(v); }
  static Float16 Store(float c) { return ToFloat16(c); }
};
template <>
struct Num<BFloat16> {
  using C = float;
  static float Load(BFloat16 v) { return ToFloat(v); }
  static BFloat16 Store(float c) { return ToBFloat16(c); }
};

// Integers wrap around like the GPU's, without C++'s signed overflow.
template <class C>
C Add(C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    using U = std::make_unsigned_t<C>;
    return static_cast<C>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}
template <class C>
C Multiply(C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    using U = std::make_unsigned_t<C>;
    return static_cast<C>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return a * b;
  }
}
template <class C>
C Average(C sum, int n) {
  if constexpr (std::is_integral_v<C>) {
    return static_cast<C>(sum / static_cast<C>(n));
  } else {
    return sum * (C{1} / static_cast<C>(n));
  }
}

template <class T, class F>
void ReduceWith(F combine, bool average, const std::vector<const void*>& in, void* out,
                size_t count) {
  using N = Num<T>;
  const int n = static_cast<int>(in.size());
  for (size_t i = 0; i < count; ++i) {
    T v;
    std::memcpy(&v, static_cast<const char*>(in[0]) + i * sizeof(T), sizeof(T));
    typename N::C acc = N::Load(v);
    for (int j = 1; j < n; ++j) {
      std::memcpy(&v, static_cast<const char*>(in[j]) + i * sizeof(T), sizeof(T));
      acc = N::Load(N::Store(combine(acc, N::Load(v))));
    }
    if (average) acc = Average(acc, n);
    v = N::Store(acc);
    std::memcpy(static_cast<char*>(out) + i * sizeof(T), &v, sizeof(T));
  }
}

template <class T>
void ReduceAs(ncclRedOp_t op, const std::vector<const void*>& in, void* out, size_t count) {
  using C = typename Num<T>::C;
  switch (op) {
    case ncclSum:
    case ncclAvg:
      return ReduceWith<T>([](C a, C b) { return Add(a, b); }, op == ncclAvg, in, out, count);
    case ncclProd:
      return ReduceWith<T>([](C a, C b) { return Multiply(a, b); }, false, in, out, count);
    case ncclMax:
      return ReduceWith<T>([](C a, C b) { return a < b ? b : a; }, false, in, out, count);
    case ncclMin:
      return ReduceWith<T>([](C a, C b) { return b < a ? b : a; }, false, in, out, count);
    default: return;  // Validate refused it
  }
}

// out[i] = in[0][i] op in[1][i] op ... (out may be one of the inputs).
void Reduce(ncclDataType_t dtype, ncclRedOp_t op, const std::vector<const void*>& in, void* out,
            size_t count) {
  switch (dtype) {
    case ncclInt8: return ReduceAs<int8_t>(op, in, out, count);
    case ncclUint8: return ReduceAs<uint8_t>(op, in, out, count);
    case ncclInt32: return ReduceAs<int32_t>(op, in, out, count);
    case ncclUint32: return ReduceAs<uint32_t>(op, in, out, count);
    case ncclInt64: return ReduceAs<int64_t>(op, in, out, count);
    case ncclUint64: return ReduceAs<uint64_t>(op, in, out, count);
    case ncclFloat16: return ReduceAs<Float16>(op, in, out, count);
    case ncclFloat32: return ReduceAs<float>(op, in, out, count);
    case ncclFloat64: return ReduceAs<double>(op, in, out, count);
    case ncclBfloat16: return ReduceAs<BFloat16>(op, in, out, count);
    default: return;  // Validate refused it
  }
}

void ReduceInto(const OpRun& run, void* out) {
  const Op& op = *run.op;
  std::vector<const void*> in(op.comm->nranks);
  for (int p = 0; p < op.comm->nranks; ++p)
    in[p] = p == op.comm->rank ? op.send : run.from[p].data();
  Reduce(op.dtype, op.redop, in, out, op.count);
}

// Reduce-scatter: this rank's block of every rank's send buffer, reduced.
void ReduceBlockInto(const OpRun& run, void* out) {
  const Op& op = *run.op;
  const size_t bytes = op.count * ElementSize(op.dtype);
  std::vector<const void*> in(op.comm->nranks);
  for (int p = 0; p < op.comm->nranks; ++p) {
    in[p] = p == op.comm->rank ? static_cast<const char*>(op.send) + op.comm->rank * bytes
                               : run.from[p].data();
  }
  Reduce(op.dtype, op.redop, in, out, op.count);
}

void CopyIfApart(void* to, const void* from, size_t bytes) {
  if (to != from && bytes > 0) std::memmove(to, from, bytes);
}

}  // namespace

size_t ElementSize(ncclDataType_t dtype) {
  switch (dtype) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2: return 1;
    case ncclFloat16:
    case ncclBfloat16: return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32: return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64: return 8;
    default: return 0;
  }
}

std::string Describe(const WireHeader& h) {
  std::string text = std::string(KindName(h.kind)) + " #" + std::to_string(h.seq) + " (" +
                     std::to_string(h.bytes) + " bytes of " + TypeName(h.dtype);
  if (h.redop >= 0) text += std::string(", ") + OpName(h.redop);
  if (h.root >= 0) text += ", root " + std::to_string(h.root);
  return text + ")";
}

ncclResult_t Validate(const Op& op, const char* name) {
  const size_t size = ElementSize(op.dtype);
  const int nranks = op.comm->nranks;
  if (size == 0)
    return CallFailed(ncclInvalidArgument, std::string(name) + ": unknown datatype " +
                                               std::to_string(static_cast<int>(op.dtype)));
  if (Reduces(op.kind) && (op.redop < 0 || op.redop >= ncclNumOps))
    return CallFailed(ncclInvalidArgument, std::string(name) + ": unknown reduction " +
                                               std::to_string(static_cast<int>(op.redop)));
  if (Reduces(op.kind) && size == 1 && op.dtype != ncclInt8 && op.dtype != ncclUint8)
    return CallFailed(ncclInvalidArgument, std::string(name) + ": the fake does not reduce fp8");
  if (!Symmetric(op.kind) && (op.peer < 0 || op.peer >= nranks))
    return CallFailed(ncclInvalidArgument, std::string(name) + ": peer/root " +
                                               std::to_string(op.peer) + " of " +
                                               std::to_string(nranks) + " ranks");
  if (op.count > SIZE_MAX / size / static_cast<size_t>(nranks))
    return CallFailed(ncclInvalidArgument, std::string(name) + ": count too large");
  return CheckBuffers(op, name, op.count * size);
}

WireHeader HeaderOf(const Op& op) {
  WireHeader h{};
  h.seq = op.seq;
  h.bytes = op.count * ElementSize(op.dtype);
  h.kind = static_cast<int32_t>(op.kind == OpKind::kRecv ? OpKind::kSend : op.kind);
  h.dtype = op.dtype;
  h.redop = Reduces(op.kind) ? op.redop : -1;
  h.root = Rooted(op.kind) ? op.peer : -1;
  return h;
}

void PlanOp(OpRun& run, Exchange& exchange) {
  const Op& op = *run.op;
  CommState* comm = op.comm.get();
  const int rank = comm->rank;
  const WireHeader h = HeaderOf(op);
  run.from.assign(comm->nranks, {});
  auto expect = [&](int peer) {
    run.from[peer].resize(h.bytes);
    exchange.Receive(comm, peer, h, run.from[peer].data());
  };
  auto each_peer = [&](auto f) {
    for (int peer = 0; peer < comm->nranks; ++peer) {
      if (peer != rank) f(peer);
    }
  };
  switch (op.kind) {
    case OpKind::kSend: exchange.Send(comm, op.peer, h, op.send); break;
    case OpKind::kRecv: expect(op.peer); break;
    case OpKind::kAllReduce:
    case OpKind::kAllGather:
      each_peer([&](int peer) { exchange.Send(comm, peer, h, op.send); });
      each_peer(expect);
      break;
    case OpKind::kReduceScatter:  // each peer gets its own block only
      each_peer([&](int peer) {
        exchange.Send(comm, peer, h, static_cast<const char*>(op.send) + peer * h.bytes);
      });
      each_peer(expect);
      break;
    case OpKind::kBroadcast:
      if (rank == op.peer)
        each_peer([&](int peer) { exchange.Send(comm, peer, h, op.send); });
      else
        expect(op.peer);
      break;
    case OpKind::kReduce:
      if (rank == op.peer)
        each_peer(expect);
      else
        exchange.Send(comm, op.peer, h, op.send);
      break;
  }
}

void FinishOp(const OpRun& run) {
  const Op& op = *run.op;
  const int rank = op.comm->rank;
  const size_t bytes = op.count * ElementSize(op.dtype);
  switch (op.kind) {
    case OpKind::kSend: break;
    case OpKind::kRecv: CopyIfApart(op.recv, run.from[op.peer].data(), bytes); break;
    case OpKind::kAllReduce: ReduceInto(run, op.recv); break;
    case OpKind::kReduceScatter: ReduceBlockInto(run, op.recv); break;
    case OpKind::kReduce:
      if (rank == op.peer) ReduceInto(run, op.recv);
      break;
    case OpKind::kBroadcast:
      CopyIfApart(op.recv, rank == op.peer ? op.send : run.from[op.peer].data(), bytes);
      break;
    case OpKind::kAllGather:
      for (int p = 0; p < op.comm->nranks; ++p) {
        char* slot = static_cast<char*>(op.recv) + p * bytes;
        CopyIfApart(slot, p == rank ? op.send : run.from[p].data(), bytes);
      }
      break;
  }
}

}  // namespace flock::fake::nccl
