// Umbrella header of flock_topology: everything a user of the library needs.
//
//   graph.h                   Graph: weighted directed graph, W[i][j] = i -> j
//   generators.h              Bluefog's static generators (ExponentialGraph, ...)
//   analysis.h                stochasticity, connectivity, spectral gap, weights
//   consensus.h               average consensus simulated in-process
//   schedule.h                DynamicSchedule interface, uniform step weights
//   one_peer.h                DynamicOnePeer (GetDynamicOnePeerSendRecvRanks)
//   hierarchical_schedules.h  machine-level and inner/outer dynamic schedules
//   json_io.h                 topology files
//   errors.h                  TopologyError, the one error of this library
#pragma once

#include "flock/topology/analysis.h"
#include "flock/topology/consensus.h"
#include "flock/topology/errors.h"
#include "flock/topology/generators.h"
#include "flock/topology/graph.h"
#include "flock/topology/hierarchical_schedules.h"
#include "flock/topology/json_io.h"
#include "flock/topology/one_peer.h"
#include "flock/topology/schedule.h"
