//go:build race

package capbench

// raceEnabled: protoactor-go races in its remoting (see the Makefile's
// NORACE_PKGS, which runs this package without -race), so the node's run
// is skipped under -race.
const raceEnabled = true
