//go:build !race

package cluster

// raceEnabled: see fullStack in cluster_test.go.
const raceEnabled = false
