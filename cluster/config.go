package cluster

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/hashicorp/memberlist"
)

// Timing profiles select the memberlist preset that the zero-valued timing
// fields of Config fall back to.
const (
	// ProfileLAN is memberlist's DefaultLANConfig: the default for a fleet in
	// one data centre.
	ProfileLAN = "lan"
	// ProfileWAN is memberlist's DefaultWANConfig: slower probes, more
	// tolerant of latency.
	ProfileWAN = "wan"
	// ProfileLocal is memberlist's DefaultLocalConfig: fast timings for nodes
	// on one host (loopback tests, a laptop demo). Not for production.
	ProfileLocal = "local"
)

// Config configures a Provider. A zero field means "use the default"; see
// DefaultConfig for the effective values. New copies the Config, so the
// caller may reuse or change it afterwards; nothing is ever written back.
type Config struct {
	// NodeName is this node's memberlist name, unique within the fleet.
	// Default: "<hostname>-<actor system ID>", which is unique per process
	// start.
	NodeName string

	// BindAddr is the IP address memberlist listens on (UDP and TCP).
	// Default: "127.0.0.1".
	BindAddr string

	// BindPort is the port memberlist listens on (UDP and TCP).
	// 0 picks a free port; read it back with Provider.GossipAddr.
	BindPort int

	// AdvertiseAddr is the IP address other nodes should use to reach this
	// node's memberlist, when it differs from BindAddr (NAT, 0.0.0.0 binds).
	// Optional.
	AdvertiseAddr string

	// AdvertisePort is the port other nodes should use to reach this node's
	// memberlist, when it differs from BindPort. Optional; ignored when
	// BindPort is 0 (memberlist then advertises the port it picked).
	AdvertisePort int

	// Seeds are "host:port" gossip addresses of other nodes to join. A node
	// with no seeds starts a new fleet. Unreachable seeds do not fail
	// startup: the Provider keeps retrying in the background with backoff
	// until one answers. This node's own address is ignored if listed.
	Seeds []string

	// SecretKey, when set, encrypts all gossip with AES (16, 24 or 32 bytes
	// for AES-128/192/256). All nodes of a fleet must share the key.
	// Optional.
	SecretKey []byte

	// ExtraKeys are more gossip keys accepted for decryption, besides
	// SecretKey (which encrypts): the keys of a rotation in progress, so a
	// node restarted mid-rotation still reads its peers. Each 16, 24 or 32
	// bytes; only with SecretKey. Provider.ChangeGossipKey rotates keys at
	// run time. Optional.
	ExtraKeys [][]byte

	// Insecure allows gossip in the clear on a non-loopback BindAddr.
	// Without it, New refuses such a Config without SecretKey: anyone who
	// reaches an unencrypted gossip port joins the fleet, gets keys placed
	// on it and can gossip forged state. Loopback binds need no key.
	Insecure bool

	// Label is stamped on every gossip packet and stream; nodes with a
	// different label ignore them, so two fleets sharing a network never
	// merge. Optional, at most 255 bytes.
	Label string

	// Profile selects the memberlist timing preset: ProfileLAN (default),
	// ProfileWAN or ProfileLocal. The timing fields below override it.
	Profile string

	// GossipInterval is how often gossip messages are sent. 0 = from Profile.
	GossipInterval time.Duration
	// ProbeInterval is how often a random node is probed for failure
	// detection. 0 = from Profile.
	ProbeInterval time.Duration
	// ProbeTimeout is how long to wait for a probe ack. 0 = from Profile.
	ProbeTimeout time.Duration
	// PushPullInterval is how often full state is synced with a random node.
	// 0 = from Profile.
	PushPullInterval time.Duration
	// TCPTimeout bounds TCP connections (joins, push/pull). 0 = from Profile.
	TCPTimeout time.Duration
	// SuspicionMult scales how long a suspect node has to refute before it
	// is declared dead. 0 = from Profile.
	SuspicionMult int

	// JoinRetryMin is the first delay between attempts to join Seeds; it
	// doubles up to JoinRetryMax. Default: 100ms.
	JoinRetryMin time.Duration
	// JoinRetryMax caps the delay between join attempts. Default: 5s.
	JoinRetryMax time.Duration

	// LeaveTimeout bounds how long a graceful Shutdown waits for the leave
	// message to be gossiped. Default: 5s.
	LeaveTimeout time.Duration

	// DepartedRetention is how long Members keeps reporting nodes that left
	// or died (status "left"/"dead") after they departed. Default: 5m.
	DepartedRetention time.Duration

	// ReconnectInterval is how often the Provider tries to rejoin the
	// gossip addresses of members it saw die or leave (within
	// DepartedRetention), as serf's reconnect does: memberlist never
	// contacts a departed node again, so without it the two sides of a
	// healed partition would stay split, and so would a restarted node
	// whose only seed is itself. Rejoining merges the views, and a node that
	// finds it was declared dead learns it (see Provider.DeclaredDead).
	// Default: 10s.
	ReconnectInterval time.Duration

	// RestartConfirm is how long a node that finds it must restart (see
	// DeadNotice) waits, after syncing its view with every live peer, before
	// it decides again and, if the verdict holds, reports it. A verdict
	// taken while a partition heals can rest on a view still in flux.
	// Default: 2s.
	RestartConfirm time.Duration

	// MinorityConfirm is how long a restart verdict that no strict
	// majority of the live peers stands behind (only a minority declared
	// this node dead, or it alone declared live peers dead) must hold,
	// after a sync with every live peer, before the node reports it: a
	// view in flux while a partition heals can show such a verdict on a
	// healthy majority node (see Provider.confirmRestart). Default: 30s.
	MinorityConfirm time.Duration

	// OnDeclaredDead, when set, is called once when this node learns that
	// its live peers declared it dead (see DeadNotice). It runs with the
	// Provider's lock held: it must return at once and not call the
	// Provider. Optional; Provider.DeclaredDead can be polled instead.
	OnDeclaredDead func(DeadNotice)

	// OnRefused, when set, is called once when this node, joining its
	// seeds, was refused because a member speaks another protocol version
	// (a *ProtocolError, matching ErrIncompatible): the node stops trying to
	// join and should stop. It must return at once and not call the
	// Provider. Optional; Provider.Refused can be polled instead.
	OnRefused func(error)
	// Protocol is the protocol version this node speaks. Default (0):
	// Protocol. Tests set another to stand for a node of another version.
	Protocol int

	// KeysActive, when set, says how many key actors are activated on this
	// node: the Provider asks it every StatsInterval and gossips the count
	// in its node meta when it changed, so every member's
	// MemberInfo.KeysActive is known fleet-wide (joinctl members).
	// Optional; it must return at once.
	KeysActive func() int64
	// StatsInterval is how often KeysActive is asked for. Default: 5s.
	StatsInterval time.Duration

	// tune, when set (tests only), adjusts memberlist's Config before
	// memberlist starts: a test wraps the transport to cut and heal links.
	tune func(*memberlist.Config) error

	// Logger receives the provider's and memberlist's logs (memberlist's
	// [DEBUG]/[INFO]/[WARN]/[ERR] lines map to slog levels).
	// Default: the actor system's logger.
	Logger *slog.Logger
}

// DefaultConfig returns the Config with every default filled in.
// NodeName stays empty: it is derived from the actor system at start.
func DefaultConfig() Config {
	return Config{
		BindAddr:          "127.0.0.1",
		Profile:           ProfileLAN,
		JoinRetryMin:      100 * time.Millisecond,
		JoinRetryMax:      5 * time.Second,
		LeaveTimeout:      5 * time.Second,
		DepartedRetention: 5 * time.Minute,
		ReconnectInterval: 10 * time.Second,
		RestartConfirm:    2 * time.Second,
		MinorityConfirm:   30 * time.Second,
		StatsInterval:     5 * time.Second,
	}
}

// withDefaults returns a deep copy of c with zero fields set to defaults.
// protocol is the protocol version the node speaks.
func (c Config) protocol() int {
	if c.Protocol == 0 {
		return Protocol
	}
	return c.Protocol
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.BindAddr == "" {
		c.BindAddr = d.BindAddr
	}
	if c.Profile == "" {
		c.Profile = d.Profile
	}
	if c.JoinRetryMin == 0 {
		c.JoinRetryMin = d.JoinRetryMin
	}
	if c.JoinRetryMax == 0 {
		c.JoinRetryMax = max(d.JoinRetryMax, c.JoinRetryMin)
	}
	if c.LeaveTimeout == 0 {
		c.LeaveTimeout = d.LeaveTimeout
	}
	if c.DepartedRetention == 0 {
		c.DepartedRetention = d.DepartedRetention
	}
	if c.StatsInterval <= 0 {
		c.StatsInterval = d.StatsInterval
	}
	if c.ReconnectInterval == 0 {
		c.ReconnectInterval = d.ReconnectInterval
	}
	if c.RestartConfirm == 0 {
		c.RestartConfirm = d.RestartConfirm
	}
	if c.MinorityConfirm == 0 {
		c.MinorityConfirm = d.MinorityConfirm
	}
	c.Seeds = append([]string(nil), c.Seeds...)
	c.SecretKey = append([]byte(nil), c.SecretKey...)
	if len(c.SecretKey) == 0 {
		c.SecretKey = nil
	}
	extra := c.ExtraKeys
	c.ExtraKeys = nil
	for _, k := range extra {
		c.ExtraKeys = append(c.ExtraKeys, append([]byte(nil), k...))
	}
	return c
}

// Validate reports every invalid field at once (errors.Join). Zero fields
// are valid: they mean "use the default".
func (c Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("cluster: config %s: "+format, append([]any{field}, args...)...))
	}
	if c.BindAddr != "" && net.ParseIP(c.BindAddr) == nil {
		bad("BindAddr", "%q is not an IP address", c.BindAddr)
	}
	if c.BindPort < 0 || c.BindPort > 65535 {
		bad("BindPort", "%d is out of range 0-65535", c.BindPort)
	}
	if c.AdvertiseAddr != "" && net.ParseIP(c.AdvertiseAddr) == nil {
		bad("AdvertiseAddr", "%q is not an IP address", c.AdvertiseAddr)
	}
	if c.AdvertisePort < 0 || c.AdvertisePort > 65535 {
		bad("AdvertisePort", "%d is out of range 0-65535", c.AdvertisePort)
	}
	for i, s := range c.Seeds {
		host, port, err := net.SplitHostPort(s)
		if err != nil {
			bad(fmt.Sprintf("Seeds[%d]", i), "%q is not host:port: %w", s, err)
			continue
		}
		if host == "" {
			bad(fmt.Sprintf("Seeds[%d]", i), "%q has no host", s)
		}
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			bad(fmt.Sprintf("Seeds[%d]", i), "%q has no valid port", s)
		}
	}
	switch len(c.SecretKey) {
	case 0, 16, 24, 32:
	default:
		bad("SecretKey", "length %d, want 16, 24 or 32 bytes", len(c.SecretKey))
	}
	for i, k := range c.ExtraKeys {
		switch len(k) {
		case 16, 24, 32:
		default:
			bad(fmt.Sprintf("ExtraKeys[%d]", i), "length %d, want 16, 24 or 32 bytes", len(k))
		}
	}
	if len(c.ExtraKeys) > 0 && len(c.SecretKey) == 0 {
		bad("ExtraKeys", "set without SecretKey: gossip is encrypted with SecretKey, the extra keys only decrypt")
	}
	if bind := cmp.Or(c.BindAddr, DefaultConfig().BindAddr); len(c.SecretKey) == 0 && !c.Insecure && !IsLoopback(bind) {
		errs = append(errs, &ExposureError{What: "gossip", Addr: c.BindAddr,
			Need: "a secret_key (gossip encryption), or insecure: true to run in the clear"})
	}
	if len(c.Label) > memberlist.LabelMaxSize {
		bad("Label", "length %d exceeds %d bytes", len(c.Label), memberlist.LabelMaxSize)
	}
	switch c.Profile {
	case "", ProfileLAN, ProfileWAN, ProfileLocal:
	default:
		bad("Profile", "%q, want %q, %q or %q", c.Profile, ProfileLAN, ProfileWAN, ProfileLocal)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"GossipInterval", c.GossipInterval},
		{"ProbeInterval", c.ProbeInterval},
		{"ProbeTimeout", c.ProbeTimeout},
		{"PushPullInterval", c.PushPullInterval},
		{"TCPTimeout", c.TCPTimeout},
		{"JoinRetryMin", c.JoinRetryMin},
		{"JoinRetryMax", c.JoinRetryMax},
		{"LeaveTimeout", c.LeaveTimeout},
		{"DepartedRetention", c.DepartedRetention},
		{"ReconnectInterval", c.ReconnectInterval},
		{"RestartConfirm", c.RestartConfirm},
		{"MinorityConfirm", c.MinorityConfirm},
	} {
		if d.v < 0 {
			bad(d.name, "%v is negative", d.v)
		}
	}
	if c.SuspicionMult < 0 {
		bad("SuspicionMult", "%d is negative", c.SuspicionMult)
	}
	if c.JoinRetryMin > 0 && c.JoinRetryMax > 0 && c.JoinRetryMin > c.JoinRetryMax {
		bad("JoinRetryMin", "%v exceeds JoinRetryMax %v", c.JoinRetryMin, c.JoinRetryMax)
	}
	if c.ProbeTimeout > 0 && c.ProbeInterval > 0 && c.ProbeTimeout > c.ProbeInterval {
		bad("ProbeTimeout", "%v exceeds ProbeInterval %v", c.ProbeTimeout, c.ProbeInterval)
	}
	return errors.Join(errs...)
}

// memberlistConfig builds memberlist's own Config from c (already defaulted).
// memberlist writes into the Config it is given (BindPort, AdvertisePort,
// Keyring), so it always gets a fresh one.
func (c Config) memberlistConfig(name string) *memberlist.Config {
	var mc *memberlist.Config
	switch c.Profile {
	case ProfileWAN:
		mc = memberlist.DefaultWANConfig()
	case ProfileLocal:
		mc = memberlist.DefaultLocalConfig()
	default:
		mc = memberlist.DefaultLANConfig()
	}
	mc.Name = name
	mc.BindAddr = c.BindAddr
	mc.BindPort = c.BindPort
	mc.AdvertiseAddr = c.AdvertiseAddr
	mc.AdvertisePort = c.AdvertisePort
	if c.AdvertisePort == 0 {
		mc.AdvertisePort = c.BindPort
	}
	mc.Label = c.Label
	// Encryption and its keys come from the Provider's keyring (see
	// createMemberlist); whenever it is set, every packet and stream must
	// be encrypted both ways.
	mc.SecretKey = nil
	mc.GossipVerifyIncoming = true
	mc.GossipVerifyOutgoing = true
	if c.GossipInterval > 0 {
		mc.GossipInterval = c.GossipInterval
	}
	if c.ProbeInterval > 0 {
		mc.ProbeInterval = c.ProbeInterval
	}
	if c.ProbeTimeout > 0 {
		mc.ProbeTimeout = c.ProbeTimeout
	}
	if c.PushPullInterval > 0 {
		mc.PushPullInterval = c.PushPullInterval
	}
	if c.TCPTimeout > 0 {
		mc.TCPTimeout = c.TCPTimeout
	}
	if c.SuspicionMult > 0 {
		mc.SuspicionMult = c.SuspicionMult
	}
	return mc
}

// defaultNodeName derives a fleet-unique memberlist name for a process.
func defaultNodeName(memberID string) string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "node"
	}
	return host + "-" + memberID
}
