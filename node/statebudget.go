package node

import (
	"fmt"

	"github.com/joinery/joinery/persistence/embedded"
)

// StateOverBudgetError is why a node on the embedded store stopped
// reading its sources: the store keeps every key's state in memory, passivating a key
// frees none of it, so once the state held passes the memory budget the
// node refuses more input rather than grow until it is OOM-killed.
type StateOverBudgetError struct {
	HeldBytes   int64 // the embedded store's estimate of its snapshots' memory
	Keys        int   // keys stored
	BudgetBytes int64 // the node's memory budget
	From        string
}

func (e *StateOverBudgetError) Error() string {
	return fmt.Sprintf("embedded store holds %.1f MiB of key state (%d keys), over the node's memory budget of %.1f MiB (%s): "+
		"the embedded store keeps every key's state in memory, so passivation frees none of it; "+
		"raise state.memory_budget or the memory limit, or use state.store: redis",
		float64(e.HeldBytes)/(1<<20), e.Keys, float64(e.BudgetBytes)/(1<<20), e.From)
}

// checkStateBudget refreshes joinery_state_bytes and, on the embedded store
// with a memory budget, returns a *StateOverBudgetError once the state held
// is over it (and sets joinery_state_over_budget). The read loop (read.go) calls it
// before every read: one atomic load.
func (n *Node) checkStateBudget() error {
	st, ok := n.store.(*embedded.Store)
	if !ok {
		return nil
	}
	held := st.HeldBytes()
	n.metrics.StateBytes.WithLabelValues(n.spec.Name).Set(float64(held))
	if n.budgetBytes <= 0 || held <= n.budgetBytes {
		return nil
	}
	n.metrics.StateOverBudget.WithLabelValues(n.spec.Name).Set(1)
	err := &StateOverBudgetError{HeldBytes: held, Keys: st.StoredKeys(), BudgetBytes: n.budgetBytes, From: n.budgetFrom}
	n.log.Error("stopped reading sources: key state over the memory budget", "state_bytes", held, "budget_bytes", n.budgetBytes, "err", err)
	return err
}
