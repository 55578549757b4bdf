// Package plugins holds what schedq adds to kube-scheduler's plugins, which
// kube/profile runs: the gang quorum of group attempts (GangScheduling,
// with its queueing hints), the room ledger that the queue's wake budgets
// read (RoomLedger), and the required pod-affinity match that narrows the
// move of an assigned pod's arrival (MatchesRequiredAffinity).
package plugins
