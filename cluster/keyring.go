package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"github.com/hashicorp/memberlist"
)

// ErrNoEncryption is returned by the gossip key operations of a Provider
// whose gossip is not encrypted (started without Config.SecretKey):
// memberlist only encrypts when a key is there from the start, so keys
// cannot be added to a plain fleet while it runs.
var ErrNoEncryption = errors.New("cluster: gossip is not encrypted (no secret_key at start): no keyring to change")

// Gossip key operations, for Provider.ChangeGossipKey.
const (
	KeyInstall = "install" // add a key: accepted for decryption, not yet used to encrypt
	KeyUse     = "use"     // make an installed key the primary: every message is encrypted with it
	KeyRemove  = "remove"  // drop a key that is not the primary
)

// GossipKey describes one key of a node's gossip keyring. The key itself
// never leaves the node: it is named by its fingerprint.
type GossipKey struct {
	// Fingerprint is the first 8 bytes of the key's SHA-256, in hex.
	Fingerprint string `json:"fingerprint"`
	// Primary is true for the key outgoing gossip is encrypted with.
	Primary bool `json:"primary"`
	// Bits is the AES key size: 128, 192 or 256.
	Bits int `json:"bits"`
}

// KeyFingerprint names a gossip key without revealing it.
func KeyFingerprint(key []byte) string {
	s := sha256.Sum256(key)
	return hex.EncodeToString(s[:8])
}

// newKeyring builds memberlist's keyring from the primary key and the
// extra keys accepted for decryption (a fleet in the middle of a key
// rotation). nil when there is no primary key: gossip is not encrypted.
func newKeyring(primary []byte, extra [][]byte) (*memberlist.Keyring, error) {
	if len(primary) == 0 {
		return nil, nil
	}
	kr, err := memberlist.NewKeyring(extra, primary)
	if err != nil {
		return nil, fmt.Errorf("cluster: gossip keyring: %w", err)
	}
	return kr, nil
}

// Encrypted reports whether this node's gossip is encrypted and verified:
// memberlist then drops every packet and stream not encrypted with a key
// of the keyring (GossipVerifyIncoming) and sends nothing in the clear
// (GossipVerifyOutgoing), so every member this node knows holds a key.
func (p *Provider) Encrypted() bool { return p.keyring != nil }

// GossipKeys lists this node's gossip keys, the primary first.
func (p *Provider) GossipKeys() ([]GossipKey, error) {
	if p.keyring == nil {
		return nil, ErrNoEncryption
	}
	primary := p.keyring.GetPrimaryKey()
	var out []GossipKey
	for _, k := range p.keyring.GetKeys() { // the primary is first
		out = append(out, GossipKey{Fingerprint: KeyFingerprint(k), Primary: slices.Equal(k, primary), Bits: 8 * len(k)})
	}
	return out, nil
}

// KeyError is a refused gossip key operation.
type KeyError struct {
	Op          string // KeyInstall, KeyUse or KeyRemove
	Fingerprint string // the key's, when it was readable
	Err         error
}

func (e *KeyError) Error() string {
	return fmt.Sprintf("cluster: gossip key %s %s: %v", e.Op, e.Fingerprint, e.Err)
}
func (e *KeyError) Unwrap() error { return e.Err }

// ChangeGossipKey changes this node's gossip keyring: op is KeyInstall,
// KeyUse or KeyRemove. It changes this node only; a rotation applies each
// step to every node before the next one (install everywhere, then use
// everywhere, then remove the old key everywhere), so that at every moment
// every node can read what every other node sends. Using a key that is not
// installed, or removing the primary, is refused.
func (p *Provider) ChangeGossipKey(op string, key []byte) error {
	if p.keyring == nil {
		return ErrNoEncryption
	}
	fp := ""
	if err := memberlist.ValidateKey(key); err != nil {
		return &KeyError{Op: op, Err: err}
	}
	fp = KeyFingerprint(key)
	var err error
	switch op {
	case KeyInstall:
		err = p.keyring.AddKey(key)
	case KeyUse:
		if !slices.ContainsFunc(p.keyring.GetKeys(), func(k []byte) bool { return slices.Equal(k, key) }) {
			err = errors.New("not installed: install it on every node first")
		} else {
			err = p.keyring.UseKey(key)
		}
	case KeyRemove:
		if !slices.ContainsFunc(p.keyring.GetKeys(), func(k []byte) bool { return slices.Equal(k, key) }) {
			err = errors.New("not installed")
		} else {
			err = p.keyring.RemoveKey(key)
		}
	default:
		err = fmt.Errorf("unknown operation %q, want %q, %q or %q", op, KeyInstall, KeyUse, KeyRemove)
	}
	if err != nil {
		return &KeyError{Op: op, Fingerprint: fp, Err: err}
	}
	p.logNow().Info("gossip keyring changed", "op", op, "fingerprint", fp)
	return nil
}
