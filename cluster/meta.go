package cluster

import (
	"encoding/json"
	"fmt"

	"github.com/hashicorp/memberlist"
)

// metaVersion is the version of the nodeMeta encoding. Bump it on an
// incompatible change; decodeMeta rejects versions it does not know.
const metaVersion = 1

// nodeMeta is what a node gossips about itself in memberlist's node meta:
// enough for every other node to build the protoactor cluster.Member.
type nodeMeta struct {
	V      int      `json:"v"`
	ID     string   `json:"id"`              // actor system ID (protoactor member ID)
	Host   string   `json:"host"`            // protoactor remote host
	Port   int      `json:"port"`            // protoactor remote port
	Kinds  []string `json:"kinds,omitempty"` // cluster kinds hosted
	Client bool     `json:"client,omitempty"`
	// Leaving is set by a graceful Shutdown just before the node leaves,
	// so peers drop it from placement at once and can later tell a leave
	// from a failure (memberlist's Node.State cannot: nodeState shadows
	// it and memberlist never updates Node.State).
	Leaving bool `json:"leaving,omitempty"`
	// Dead lists the member IDs this node saw declared dead (failed, not
	// left) within Config.DepartedRetention, newest first. protoactor
	// blocks such an ID for good, so a node that finds its own ID here,
	// gossiped by most of its live peers, knows they will never place a key
	// on it again (Provider.DeclaredDead). encodeMeta drops the oldest
	// entries that do not fit memberlist's meta limit.
	Dead []string `json:"dead,omitempty"`
	// Restarting is set once this node reported that it must restart
	// (Provider.DeclaredDead): it is on its way out, so its dead list no
	// longer counts against anyone (restartVerdictLocked) — the other
	// side of a conflict it is in need not restart too.
	Restarting bool `json:"restarting,omitempty"`
	// Started is when the node's Provider started, in Unix milliseconds
	// (0: an older node that does not say).
	Started int64 `json:"started,omitempty"`
	// Proto is the protocol version the node speaks (Protocol; 0: a node
	// that does not say, which speaks protocol 1).
	Proto int `json:"proto,omitempty"`
	// Keys is how many key actors the node has activated, as of its last
	// regossip (Config.KeysActive); nil when it does not say.
	Keys *int64 `json:"keys,omitempty"`
}

func encodeMeta(m nodeMeta) ([]byte, error) {
	m.V = metaVersion
	b, err := json.Marshal(m)
	for err == nil && len(b) > memberlist.MetaMaxSize && len(m.Dead) > 0 {
		m.Dead = m.Dead[:len(m.Dead)-1]
		b, err = json.Marshal(m)
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: encode node meta: %w", err)
	}
	if len(b) > memberlist.MetaMaxSize {
		return nil, fmt.Errorf("cluster: node meta is %d bytes, over memberlist's %d-byte limit (too many or too long kind names?)",
			len(b), memberlist.MetaMaxSize)
	}
	return b, nil
}

func decodeMeta(b []byte) (nodeMeta, error) {
	var m nodeMeta
	if err := json.Unmarshal(b, &m); err != nil {
		return nodeMeta{}, fmt.Errorf("cluster: decode node meta: %w", err)
	}
	if m.V != metaVersion {
		return nodeMeta{}, fmt.Errorf("cluster: node meta version %d, want %d", m.V, metaVersion)
	}
	if m.ID == "" || m.Host == "" || m.Port <= 0 || m.Port > 65535 {
		return nodeMeta{}, fmt.Errorf("cluster: node meta incomplete: id=%q host=%q port=%d", m.ID, m.Host, m.Port)
	}
	return m, nil
}
