package cluster

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRestartSet checks which nodes of a fleet restart given who declared
// whom dead: the cut-off side, whichever way the declarations went, and
// never both nodes of a conflict staying.
func TestRestartSet(t *testing.T) {
	tests := []struct {
		name  string
		nodes []string
		lists []string // "a>b": a declared b dead (a's dead list holds b's ID)
		want  []string // the nodes that must restart
	}{
		{"no conflict", []string{"n1", "n2", "n3"}, nil, nil},
		{"minority declared dead by the majority", []string{"n1", "n2", "n3"}, []string{"n1>n2", "n3>n2"}, []string{"n2"}},
		{"minority and majority declared each other dead", []string{"n1", "n2", "n3"}, []string{"n1>n2", "n3>n2", "n2>n1", "n2>n3"}, []string{"n2"}},
		{"declared dead by one peer only, other peer unaware", []string{"n1", "n2", "n3"}, []string{"n3>n2"}, []string{"n2"}},
		{"two nodes, one declared the other dead", []string{"n2", "n3"}, []string{"n3>n2"}, []string{"n2"}},
		{"two nodes, the lower name declared dead by the higher", []string{"n2", "n3"}, []string{"n2>n3"}, []string{"n3"}},
		{"two nodes declared each other dead: lowest name stays", []string{"n2", "n3"}, []string{"n2>n3", "n3>n2"}, []string{"n3"}},
		{"a minority node declared the majority dead, unnoticed", []string{"n1", "n2", "n3", "n4", "n5"}, []string{"n5>n1", "n5>n2", "n5>n3", "n5>n4"}, []string{"n5"}},
		{"even split declared each other dead", []string{"n1", "n2", "n3", "n4"}, []string{"n1>n3", "n1>n4", "n2>n3", "n2>n4", "n3>n1", "n3>n2", "n4>n1", "n4>n2"}, []string{"n3", "n4"}},
		{"even split, one side declared the other dead", []string{"n1", "n2", "n3", "n4"}, []string{"n3>n1", "n3>n2", "n4>n1", "n4>n2"}, []string{"n1", "n2"}},
		{"a chain: n1 declared n2 dead, n2 declared n3 dead", []string{"n1", "n2", "n3"}, []string{"n1>n2", "n2>n3"}, []string{"n2"}},
		{"dead lists naming nodes that are gone are ignored", []string{"n1", "n2"}, []string{"n1>old", "n2>gone"}, nil},
		{"paused node back, its peers declared it dead", []string{"a", "b", "c"}, []string{"a>c", "b>c"}, []string{"c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lists := map[[2]string]bool{}
			declared := map[string][]string{}
			for _, l := range tt.lists {
				a, b, _ := strings.Cut(l, ">")
				lists[[2]string{a, b}] = true
				declared[a] = append(declared[a], b)
			}
			got := restartSet(tt.nodes, declared)
			if !slices.Equal(got, tt.want) {
				t.Errorf("restart %v, want %v", got, tt.want)
			}
			// Whatever the rule picks, no conflict may survive: of every
			// pair where one blocks the other, one restarts.
			for pair := range lists {
				if !slices.Contains(tt.nodes, pair[0]) || !slices.Contains(tt.nodes, pair[1]) {
					continue // not a live node: no conflict
				}
				if !slices.Contains(got, pair[0]) && !slices.Contains(got, pair[1]) {
					t.Errorf("%s declared %s dead and neither restarts: %s stays out of %s's placement for good", pair[0], pair[1], pair[1], pair[0])
				}
			}
		})
	}
}

// TestRestartSetCovers checks on random fleets that restartSet ends every
// conflict between live nodes and restarts nobody who is in none.
func TestRestartSetCovers(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		nodes := []string{"n1", "n2", "n3", "n4", "n5", "n6"}[:1+r.IntN(6)]
		declared := map[string][]string{}
		inConflict := map[string]bool{}
		for _, a := range nodes {
			for _, b := range nodes {
				if a != b && r.IntN(5) == 0 {
					declared[a] = append(declared[a], b)
					inConflict[a], inConflict[b] = true, true
				}
			}
		}
		got := restartSet(nodes, declared)
		for a, bs := range declared {
			for _, b := range bs {
				if !slices.Contains(got, a) && !slices.Contains(got, b) {
					t.Fatalf("%v, declared %v: restart %v leaves %s blocking %s", nodes, declared, got, a, b)
				}
			}
		}
		for _, n := range got {
			if !inConflict[n] {
				t.Fatalf("%v, declared %v: restart %v includes %s, in no conflict", nodes, declared, got, n)
			}
		}
		if len(got) == len(nodes) && len(nodes) > 1 {
			t.Fatalf("%v, declared %v: every node restarts", nodes, declared)
		}
	}
}

// verdictProvider is a Provider with a hand-made view and no memberlist:
// self is "n<self>" and live lists every live node with the names of the
// nodes its gossiped dead list holds ("n3": "n2" means n3 declared n2; a
// name ending in "!" gossips that it is restarting, one ending in "~" left
// the fleet gracefully, one ending in "-" is dead in self's view).
// Member IDs are the names with an "id-" prefix.
func verdictProvider(t *testing.T, self string, live map[string][]string, confirm, minority time.Duration) *Provider {
	t.Helper()
	cfg := testConfig()
	cfg.RestartConfirm, cfg.MinorityConfirm = confirm, minority
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { close(p.stop); p.wg.Wait() })
	p.ownMeta = nodeMeta{ID: "id-" + self}
	p.mu.state = stateRunning
	p.mu.self = self
	setVerdictView(p, live)
	return p
}

// setVerdictView replaces p's view of the fleet (see verdictProvider) and
// lets the Provider check it, as a membership event would.
func setVerdictView(p *Provider, live map[string][]string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.nodes = map[string]*nodeView{}
	p.mu.deadIDs = map[string]time.Time{}
	for name, dead := range live {
		name, restarting := strings.CutSuffix(name, "!")
		name, gone := strings.CutSuffix(name, "~")
		name, failed := strings.CutSuffix(name, "-")
		var ids []string
		for _, d := range dead {
			ids = append(ids, "id-"+d)
		}
		if name == p.mu.self {
			for _, id := range ids {
				p.mu.deadIDs[id] = time.Now()
			}
			continue
		}
		status := StatusAlive
		switch {
		case gone:
			status = StatusLeft
		case failed:
			status = StatusDead
		}
		p.mu.nodes[name] = &nodeView{name: name, status: status, meta: nodeMeta{ID: "id-" + name, Dead: ids, Restarting: restarting}}
	}
	p.checkDeclaredDeadLocked()
}

// TestRestartVerdictMajority checks the evidence rule of confirmRestart on
// the views a healing partition shows: a node a strict majority of its live
// peers declared dead reports it after RestartConfirm; a verdict resting on
// a minority (the views of n3 when the cut-off n2's dead list arrived before
// n4's, or when n1 had left) waits MinorityConfirm and is dropped when the
// view converges meanwhile — the majority stays healthy.
func TestRestartVerdictMajority(t *testing.T) {
	const confirm, minority = 30 * time.Millisecond, 600 * time.Millisecond
	tests := []struct {
		name     string
		self     string
		live     map[string][]string // the view at first
		later    map[string][]string // the view after confirm, nil: unchanged
		majority bool                // the first verdict's evidence
		want     bool                // a DeadNotice in the end
	}{
		{"cut-off node, every peer declared it", "n2",
			map[string][]string{"n1": {"n2"}, "n2": {"n1", "n3", "n4"}, "n3": {"n2"}, "n4": {"n2"}}, nil, true, true},
		{"cut-off node, n1 left, both peers declared it", "n2",
			map[string][]string{"n2": {"n3"}, "n3": {"n2"}, "n4": {"n2"}}, nil, true, true},
		{"majority node, n2's dead list seen before n4's", "n3",
			map[string][]string{"n2": {"n3"}, "n3": {"n2"}, "n4": nil}, map[string][]string{"n2": {"n3"}, "n3": {"n2"}, "n4": {"n2"}}, false, false},
		{"majority node, one peer's declaration stays unseen", "n3",
			map[string][]string{"n2": {"n3"}, "n3": {"n2"}, "n4": nil}, nil, false, true},
		{"a node that alone declared a live peer dead", "n1",
			map[string][]string{"n1": {"n3"}, "n2": nil, "n3": nil}, nil, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := verdictProvider(t, tt.self, tt.live, confirm, minority)
			p.mu.Lock()
			v := p.restartVerdictLocked()
			p.mu.Unlock()
			if !v.restart || v.majority != tt.majority {
				t.Fatalf("verdict %+v, want restart with majority=%v", v, tt.majority)
			}
			time.Sleep(3 * confirm)
			if got := p.DeclaredDead() != nil; got != tt.majority {
				t.Fatalf("after %v: declared dead %v, want %v", 3*confirm, got, tt.majority)
			}
			if tt.later != nil {
				setVerdictView(p, tt.later)
			}
			deadline := time.Now().Add(minority + 20*confirm)
			for time.Now().Before(deadline) && p.DeclaredDead() == nil {
				time.Sleep(confirm)
			}
			if got := p.DeclaredDead() != nil; got != tt.want {
				t.Errorf("after %v: declared dead %v (%v), want %v", minority+20*confirm, got, p.DeclaredDead(), tt.want)
			}
		})
	}
}

// TestRestartVerdictIgnoresRestarting: once the cut-off side of a
// partition reported that it must restart (meta.Restarting), its dead list
// no longer counts. Two of five cut off, and the reading n1 left: the
// four live nodes are an even split, where restartSet's tie-break would
// restart n4 and n5, the majority side — unless n2 and n3 are on their way
// out.
func TestRestartVerdictIgnoresRestarting(t *testing.T) {
	split := map[string][]string{"n2": {"n4", "n5"}, "n3": {"n4", "n5"}, "n4": {"n2", "n3"}, "n5": {"n2", "n3"}}
	leaving := map[string][]string{"n2!": {"n4", "n5"}, "n3!": {"n4", "n5"}, "n4": {"n2", "n3"}, "n5": {"n2", "n3"}}
	for _, tt := range []struct {
		name string
		live map[string][]string
		want bool
	}{{"the pair still counts", split, true}, {"the pair is restarting", leaving, false}} {
		p := verdictProvider(t, "n4", tt.live, time.Hour, time.Hour)
		p.mu.Lock()
		v := p.restartVerdictLocked()
		p.mu.Unlock()
		if v.restart != tt.want {
			t.Errorf("%s: n4 restart verdict %+v, want restart=%v", tt.name, v, tt.want)
		}
	}
}

// TestRestartVerdictGainsMajority: the cut-off node's own view is in flux
// while a partition heals — its peers' dead lists arrive one by one. A
// verdict first resting on a minority takes the majority's short path as
// soon as a strict majority's declarations have arrived, instead of
// waiting out MinorityConfirm.
func TestRestartVerdictGainsMajority(t *testing.T) {
	const confirm, minority = 30 * time.Millisecond, time.Hour
	first := map[string][]string{"n1": nil, "n3": {"n2"}, "n4": {"n2"}, "n5": nil}
	p := verdictProvider(t, "n2", first, confirm, minority)
	p.mu.Lock()
	v := p.restartVerdictLocked()
	p.mu.Unlock()
	if !v.restart || v.majority {
		t.Fatalf("first verdict %+v, want a restart no majority stands behind", v)
	}
	time.Sleep(3 * confirm)
	if d := p.DeclaredDead(); d != nil {
		t.Fatalf("declared dead on a minority's word after %v: %v", 3*confirm, d)
	}
	setVerdictView(p, map[string][]string{"n1": nil, "n3": {"n2"}, "n4": {"n2"}, "n5": {"n2"}})
	start := time.Now()
	for p.DeclaredDead() == nil && time.Since(start) < 100*confirm {
		time.Sleep(confirm / 3)
	}
	if d := p.DeclaredDead(); d == nil || !slices.Equal(d.By, []string{"n3", "n4", "n5"}) {
		t.Fatalf("after the third declaration arrived: declared dead %v, want by n3, n4, n5 within %v", d, 100*confirm)
	}
	t.Logf("declared dead %v after the majority's declarations arrived", time.Since(start).Round(time.Millisecond))
}

// TestRestartVerdictCountsLeftVoters: two of five (n2, n3) were cut off
// and declared only n4 dead before the heal; n1, which had declared both,
// finished and left. On the healed view the live nodes are an even split,
// but n1's word still counts: the cut-off pair restarts, n4 and n5 stay
// (seen in TestChaosPartitionTwoOfFive before: n4 and n5 restarted).
func TestRestartVerdictCountsLeftVoters(t *testing.T) {
	view := map[string][]string{"n1~": {"n2", "n3"}, "n2": {"n4"}, "n3": {"n4"}, "n4": {"n2", "n3"}, "n5": {"n2", "n3"}}
	for self, want := range map[string]restartVerdict{
		"n2": {restart: true, majority: true}, "n3": {restart: true, majority: true}, "n4": {}, "n5": {},
	} {
		p := verdictProvider(t, self, view, time.Hour, time.Hour)
		p.mu.Lock()
		v := p.restartVerdictLocked()
		p.mu.Unlock()
		if v.restart != want.restart || v.majority != want.majority {
			t.Errorf("%s: verdict %+v, want restart=%v majority=%v", self, v, want.restart, want.majority)
		}
	}
}

// TestRestartVerdictInfersDeadVoters: two of five (n2, n3) were cut off
// and declared the other three dead; n1, which had declared both, then
// finished and left. n4 and n5 saw it leave and count its dead list; n2
// and n3 hold it dead (memberlist ignores the leave of a member it holds
// dead) and infer its vote from who declared it: n2 and n3, not n4 and n5,
// so it stood with n4 and n5. Both views then agree that the pair restarts
// (without the inference the pair's view was an even split whose tie-break
// restarts n4 and n5, so no one restarted: TestChaosPartitionTwoOfFive).
// A member every live node declared dead failed and casts no vote.
func TestRestartVerdictInfersDeadVoters(t *testing.T) {
	pair := map[string][]string{"n1-": nil, "n2": {"n1", "n4", "n5"}, "n3": {"n1", "n4", "n5"}, "n4": {"n2", "n3"}, "n5": {"n2", "n3"}}
	majority := map[string][]string{"n1~": {"n2", "n3"}, "n2": {"n1", "n4", "n5"}, "n3": {"n1", "n4", "n5"}, "n4": {"n2", "n3"}, "n5": {"n2", "n3"}}
	crashed := map[string][]string{"n1-": nil, "n2": {"n1"}, "n3": {"n1"}, "n4": {"n1"}}
	for _, tt := range []struct {
		name string
		self string
		view map[string][]string
		want restartVerdict
	}{
		{"cut-off n2", "n2", pair, restartVerdict{restart: true, majority: true, by: []string{"n1", "n4", "n5"}}},
		{"cut-off n3", "n3", pair, restartVerdict{restart: true, majority: true, by: []string{"n1", "n4", "n5"}}},
		{"majority n4", "n4", majority, restartVerdict{}},
		{"majority n5", "n5", majority, restartVerdict{}},
		{"n1 crashed: no vote, no conflict", "n2", crashed, restartVerdict{}},
	} {
		p := verdictProvider(t, tt.self, tt.view, time.Hour, time.Hour)
		p.mu.Lock()
		v := p.restartVerdictLocked()
		p.mu.Unlock()
		if v.restart != tt.want.restart || v.majority != tt.want.majority || !slices.Equal(v.by, tt.want.by) {
			t.Errorf("%s: verdict %+v, want restart=%v majority=%v by %v", tt.name, v, tt.want.restart, tt.want.majority, tt.want.by)
		}
	}
}
