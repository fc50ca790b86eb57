package cluster

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"testing"

	protocluster "github.com/asynkron/protoactor-go/cluster"
)

// hrwRef is an independent highest-random-weight reference: the member
// maximising FNV-1a-32(key ‖ member); ties go to the greater member string.
func hrwRef(key string, members []string) string {
	var best string
	var bestScore uint32
	found := false
	for _, m := range members {
		h := fnv.New32a()
		h.Write([]byte(key))
		h.Write([]byte(m))
		s := h.Sum32()
		if !found || s > bestScore || (s == bestScore && m > best) {
			best, bestScore, found = m, s, true
		}
	}
	return best
}

func TestOwnerTable(t *testing.T) {
	three := []string{"10.0.0.1:8090", "10.0.0.2:8090", "10.0.0.3:8090"}
	tests := []struct {
		name    string
		key     string
		members []string
		want    string
	}{
		{"no members", "k", nil, ""},
		{"only invalid members", "k", []string{"node-a", "host:", "host:port", ":80x"}, ""},
		{"single member", "k", []string{"10.0.0.1:8090"}, "10.0.0.1:8090"},
		{"invalid entries ignored", "k", []string{"bogus", "10.0.0.1:8090", "h:007"}, "10.0.0.1:8090"},
		{"ipv6 address", "k", []string{"[::1]:8090"}, "[::1]:8090"},
	}
	for i := range 8 {
		key := fmt.Sprintf("user-%d", i)
		tests = append(tests, struct {
			name    string
			key     string
			members []string
			want    string
		}{"three members " + key, key, three, hrwRef(key, three)})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Owner(tc.key, tc.members); got != tc.want {
				t.Fatalf("Owner(%q, %q) = %q, want %q", tc.key, tc.members, got, tc.want)
			}
		})
	}
}

func randomAddrs(r *rand.Rand, n int) []string {
	seen := map[string]bool{}
	var out []string
	for len(out) < n {
		a := fmt.Sprintf("10.%d.%d.%d:%d", r.IntN(256), r.IntN(256), r.IntN(256), 1024+r.IntN(60000))
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	return out
}

func TestOwnerProperties(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	const keys = 3000
	for round := range 20 {
		n := 2 + r.IntN(7)
		members := randomAddrs(r, n)
		owners := make([]string, keys)
		count := map[string]int{}
		for k := range keys {
			key := fmt.Sprintf("key-%d-%d", round, k)
			owners[k] = Owner(key, members)
			count[owners[k]]++
			// Matches the reference and is independent of member order.
			if want := hrwRef(key, members); owners[k] != want {
				t.Fatalf("seed %d: Owner(%q) = %q, reference %q", seed, key, owners[k], want)
			}
			shuffled := slices.Clone(members)
			r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			if got := Owner(key, shuffled); got != owners[k] {
				t.Fatalf("seed %d: Owner(%q) depends on member order: %q vs %q", seed, key, got, owners[k])
			}
		}
		// Spread: every member gets a fair share (within 50% of even).
		for _, m := range members {
			if c, even := count[m], keys/n; c < even/2 || c > even*3/2 {
				t.Fatalf("seed %d: member %s owns %d of %d keys over %d members", seed, m, c, keys, n)
			}
		}
		// Removing a member moves only its keys; re-adding moves them back.
		gone := members[r.IntN(n)]
		rest := slices.DeleteFunc(slices.Clone(members), func(m string) bool { return m == gone })
		for k := range keys {
			key := fmt.Sprintf("key-%d-%d", round, k)
			after := Owner(key, rest)
			if owners[k] != gone && after != owners[k] {
				t.Fatalf("seed %d: removing %s moved %q from %s to %s", seed, gone, key, owners[k], after)
			}
			if after == gone {
				t.Fatalf("seed %d: %q still on removed member", seed, key)
			}
		}
	}
}

// TestOwnerAgreesWithProtoactor checks Owner against the Rendezvous that
// protoactor's disthash identity lookup uses, built as disthash builds it:
// from members with their own IDs and several kinds.
func TestOwnerAgreesWithProtoactor(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	for round := range 20 {
		addrs := randomAddrs(r, 1+r.IntN(8))
		var ms protocluster.Members
		var echo []string
		for i, a := range addrs {
			m, _ := memberFromAddress(a)
			m.Id = fmt.Sprintf("id-%d-%d", round, r.IntN(1_000_000)+i)
			m.Kinds = []string{"other"}
			if i == 0 || r.IntN(3) > 0 {
				m.Kinds = append(m.Kinds, "echo")
				echo = append(echo, a)
			}
			ms = append(ms, m)
		}
		rdv := protocluster.NewRendezvous()
		rdv.UpdateMembers(ms)
		for k := range 500 {
			key := fmt.Sprintf("id-%d", k)
			want := rdv.GetByClusterIdentity(protocluster.NewClusterIdentity(key, "echo"))
			if got := Owner(key, echo); got != want {
				t.Fatalf("seed %d: Owner(%q, %q) = %q, protoactor places it on %q", seed, key, echo, got, want)
			}
			if got := ownerOf("echo", key, ms); got != want {
				t.Fatalf("seed %d: ownerOf(%q) = %q, protoactor %q", seed, key, got, want)
			}
		}
	}
}
