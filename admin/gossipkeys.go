package admin

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
)

// Gossip key routes (the keyring of the node's encrypted gossip):
//
//	GET  /v1/gossip/keys   []GossipKey by fingerprint, never the keys (501 without GossipKeyring)
//	POST /v1/gossip/keys   {"op": "install"|"use"|"remove", "key": base64} → 204; needs the token
//
// A rotation applies each step to every node before the next: install the
// new key everywhere, use it everywhere, remove the old one everywhere.

// GossipKey is one key of a node's gossip keyring, named by fingerprint.
type GossipKey struct {
	Fingerprint string `json:"fingerprint"` // first 8 bytes of the key's SHA-256, hex
	Primary     bool   `json:"primary"`     // outgoing gossip is encrypted with it
	Bits        int    `json:"bits"`        // AES key size
}

// GossipKeyChange is the body of POST /v1/gossip/keys.
type GossipKeyChange struct {
	Op  string `json:"op"`  // install, use or remove
	Key string `json:"key"` // base64 (16, 24 or 32 bytes)
}

// ErrKeyRefused marks a gossip key change the node refused (a bad key,
// using a key not installed, removing the primary): a 400.
var ErrKeyRefused = errors.New("gossip key change refused")

// GossipKeyring is implemented by a Backend whose gossip is encrypted
// with a keyring. Without encryption both answer errors.ErrUnsupported.
type GossipKeyring interface {
	GossipKeys(ctx context.Context) ([]GossipKey, error)
	// ChangeGossipKey applies op to this node's keyring only; refusals
	// wrap ErrKeyRefused.
	ChangeGossipKey(ctx context.Context, op string, key []byte) error
}

func (s *Server) gossipKeyRoutes(mux *http.ServeMux) {
	mux.Handle("GET /v1/gossip/keys", s.read(func(ctx context.Context, b Backend, _ *http.Request) (any, error) {
		kr, ok := b.(GossipKeyring)
		if !ok {
			return nil, errUnimplemented{"gossip keys"}
		}
		keys, err := kr.GossipKeys(ctx)
		if keys == nil && err == nil {
			keys = []GossipKey{}
		}
		return keys, err
	}))
	change := s.authed(scopeAdmin, s.api(func(ctx context.Context, b Backend, r *http.Request) (any, error) {
		kr, ok := b.(GossipKeyring)
		if !ok {
			return nil, errUnimplemented{"gossip keys"}
		}
		var c GossipKeyChange
		if err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&c); err != nil {
			return nil, errBadRequest{"body: want {\"op\": \"install|use|remove\", \"key\": \"base64\"}: " + err.Error()}
		}
		key, err := base64.StdEncoding.DecodeString(c.Key)
		if err != nil {
			return nil, errBadRequest{"key: not base64: " + err.Error()}
		}
		err = kr.ChangeGossipKey(ctx, c.Op, key)
		lvl := slog.LevelInfo
		if err != nil {
			lvl = slog.LevelWarn
		}
		s.log.Log(ctx, lvl, "admin: gossip key change", "op", c.Op, "remote", r.RemoteAddr, "err", err)
		if errors.Is(err, ErrKeyRefused) {
			return nil, errBadRequest{err.Error()}
		}
		return nil, err
	}))
	mux.Handle("POST /v1/gossip/keys", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.Token == "" {
			writeError(w, http.StatusForbidden, "write actions are disabled: the server has no admin token configured")
			return
		}
		change.ServeHTTP(w, r)
	}))
}

// GossipKeys calls GET /v1/gossip/keys.
func (c *Client) GossipKeys(ctx context.Context) ([]GossipKey, error) {
	var keys []GossipKey
	return keys, c.do(ctx, http.MethodGet, "/v1/gossip/keys", nil, &keys)
}

// ChangeGossipKey calls POST /v1/gossip/keys with the key in the body (so
// it appears in no URL or access log).
func (c *Client) ChangeGossipKey(ctx context.Context, op string, key []byte) error {
	body, err := json.Marshal(GossipKeyChange{Op: op, Key: base64.StdEncoding.EncodeToString(key)})
	if err != nil {
		return err
	}
	u := *c.base
	u.Path += "/v1/gossip/keys"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		var eb ErrorBody
		msg := strings.TrimSpace(string(b))
		if json.Unmarshal(b, &eb) == nil && eb.Error != "" {
			msg = eb.Error
		}
		return &APIError{Status: resp.StatusCode, Message: msg}
	}
	return nil
}
