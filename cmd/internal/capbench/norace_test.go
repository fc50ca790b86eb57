//go:build !race

package capbench

// raceEnabled: see race_test.go.
const raceEnabled = false
