package bindaddr

import "testing"

func TestLoopback(t *testing.T) {
	for _, tc := range []struct {
		addr string
		want bool
	}{
		{"127.0.0.1:8081", true},
		{"127.1.2.3:0", true},
		{"localhost:8081", true},
		{"LOCALHOST:1", true},
		{"[::1]:8081", true},
		{"[::ffff:127.0.0.1]:1", true},
		{":8081", false},
		{"0.0.0.0:8081", false},
		{"[::]:8081", false},
		{"10.0.0.5:8081", false},
		{"admin.example.com:8081", false},
		{"localhost.evil.com:1", false},
		{"127.0.0.1", false}, // no port: not an address net.Listen takes
		{"", false},
	} {
		if got := Loopback(tc.addr); got != tc.want {
			t.Errorf("Loopback(%q) = %v, want %v", tc.addr, got, tc.want)
		}
	}
}
