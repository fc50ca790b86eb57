//go:build race

package bench

// raceEnabled: protoactor-go races in its remoting (see the Makefile's
// NORACE_PKGS), so node-level tests run only without -race.
const raceEnabled = true
