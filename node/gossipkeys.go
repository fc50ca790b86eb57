package node

import (
	"context"
	"errors"
	"fmt"

	"github.com/joinery/joinery/admin"
	"github.com/joinery/joinery/cluster"
)

var _ admin.GossipKeyring = backend{}

// GossipKeys lists the node's gossip keyring for the admin API.
func (b backend) GossipKeys(context.Context) ([]admin.GossipKey, error) {
	keys, err := b.n.provider.GossipKeys()
	if err != nil {
		return nil, gossipKeyErr(err)
	}
	out := make([]admin.GossipKey, 0, len(keys))
	for _, k := range keys {
		out = append(out, admin.GossipKey{Fingerprint: k.Fingerprint, Primary: k.Primary, Bits: k.Bits})
	}
	return out, nil
}

// ChangeGossipKey installs, uses or removes a gossip key on this node.
func (b backend) ChangeGossipKey(_ context.Context, op string, key []byte) error {
	return gossipKeyErr(b.n.provider.ChangeGossipKey(op, key))
}

func gossipKeyErr(err error) error {
	var ke *cluster.KeyError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, cluster.ErrNoEncryption):
		return fmt.Errorf("%w: %w", errors.ErrUnsupported, err)
	case errors.As(err, &ke):
		return fmt.Errorf("%w: %w", admin.ErrKeyRefused, err)
	}
	return err
}
