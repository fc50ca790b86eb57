package redisstore

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
)

// DefaultKeyPrefix is the key prefix used when Config.KeyPrefix is empty.
const DefaultKeyPrefix = "joinery"

// Config says where the Redis server is and how to talk to it. The zero
// value of each optional field means its default. New never modifies the
// caller's Config (it clones TLS).
type Config struct {
	// Addr is the server's host:port. Required.
	Addr string
	// Username is the ACL user; empty means the default user.
	Username string
	// Password authenticates Username (or the default user); empty means no
	// AUTH.
	Password string
	// DB is the logical database to SELECT; 0 by default. Must be >= 0.
	DB int
	// TLS, when not nil, makes the connection use TLS with this
	// configuration.
	TLS *tls.Config
	// KeyPrefix starts every key the store writes; DefaultKeyPrefix when
	// empty. It must not contain "{" or "}", which would break the hash tag
	// that keeps a job's keys in one cluster slot.
	KeyPrefix string
}

// DefaultConfig returns the configuration of a Redis on localhost:6379 with
// the default key prefix.
func DefaultConfig() Config {
	return Config{Addr: "127.0.0.1:6379", KeyPrefix: DefaultKeyPrefix}
}

// Validate reports every problem of c at once, each naming its field.
func (c Config) Validate() error {
	var errs []error
	if c.Addr == "" {
		errs = append(errs, errors.New("redisstore: Config.Addr is required"))
	} else if host, port, err := net.SplitHostPort(c.Addr); err != nil || port == "" {
		errs = append(errs, fmt.Errorf("redisstore: Config.Addr %q is not host:port", c.Addr))
	} else if host == "" {
		errs = append(errs, fmt.Errorf("redisstore: Config.Addr %q has no host", c.Addr))
	}
	if c.DB < 0 {
		errs = append(errs, fmt.Errorf("redisstore: Config.DB %d is negative", c.DB))
	}
	if strings.ContainsAny(c.KeyPrefix, "{}") {
		errs = append(errs, fmt.Errorf("redisstore: Config.KeyPrefix %q contains a brace", c.KeyPrefix))
	}
	return errors.Join(errs...)
}

// String returns the configuration with the password redacted, for logs and
// config checks.
func (c Config) String() string {
	pw := ""
	if c.Password != "" {
		pw = "<redacted>"
	}
	return fmt.Sprintf("redisstore.Config{Addr: %q, Username: %q, Password: %q, DB: %d, TLS: %t, KeyPrefix: %q}",
		c.Addr, c.Username, pw, c.DB, c.TLS != nil, c.keyPrefix())
}

func (c Config) keyPrefix() string {
	if c.KeyPrefix == "" {
		return DefaultKeyPrefix
	}
	return c.KeyPrefix
}
