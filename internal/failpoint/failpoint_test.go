package failpoint

import "testing"

func TestParse(t *testing.T) {
	if n, err := parse("exit-after-state-write:7"); err != nil || n != 7 {
		t.Errorf("parse = %d, %v; want 7, nil", n, err)
	}
	for _, bad := range []string{"exit-after-state-write:0", "exit-after-state-write:x", "exit-after-state-write:", "crash:3"} {
		if _, err := parse(bad); err == nil {
			t.Errorf("parse(%q) = nil error, want one", bad)
		}
	}
}

func TestStateWrittenOff(t *testing.T) {
	old := exitAfter
	exitAfter = 0 // whatever this test's environment says
	defer func() { exitAfter = old }()
	for range 3 {
		StateWritten() // unset: never exits
	}
	if writes.Load() != 0 {
		t.Errorf("writes counted with the failpoint off: %d", writes.Load())
	}
}
