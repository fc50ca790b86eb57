package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/joinery/joinery/admin"
)

// Exit codes.
const (
	exitOK       = 0
	exitError    = 1 // talking to the server failed or the server answered an error
	exitUsage    = 2 // bad command line
	exitNotFound = 3 // unknown job or key
)

const (
	envServer        = "JOINERY_ADMIN"
	envToken         = "JOINERY_TOKEN"
	envRedisPassword = "JOINERY_REDIS_PASSWORD"
	defaultServer    = "http://" + admin.DefaultAddr
)

// run runs joinctl with args (without the program name) until it is done or
// interrupted (SIGINT, SIGTERM) and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runContext(ctx, args, stdout, stderr, os.Getenv)
}

// runContext is run with its context and environment given.
func runContext(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	root := newRoot(stdout, stderr, getenv)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "joinctl: %v\n", err)
	var ce *cmdError
	if !errors.As(err, &ce) {
		// cobra's own errors: unknown command or flag, wrong argument count.
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
		return exitUsage
	}
	if ce.code == exitUsage {
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
	return ce.code
}

// cmdError is an error of a command's own work, with its exit code. Errors
// that are not cmdErrors come from cobra's parsing: usage errors.
type cmdError struct {
	code int
	err  error
}

func (e *cmdError) Error() string { return e.err.Error() }
func (e *cmdError) Unwrap() error { return e.err }

// usageErr makes a usage error (exit 2) of a command's own checks.
func usageErr(format string, a ...any) error {
	return &cmdError{code: exitUsage, err: fmt.Errorf(format, a...)}
}

// classify gives err its exit code.
func classify(err error) error {
	var ce *cmdError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ce):
		return err
	case errors.Is(err, admin.ErrNotFound):
		return &cmdError{code: exitNotFound, err: err}
	default:
		return &cmdError{code: exitError, err: err}
	}
}

// runE wraps a command's work so its errors carry exit codes.
func runE(f func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error { return classify(f(cmd, args)) }
}

// options are the global flags.
type options struct {
	server    string
	token     string
	tokenFile string
	caFile    string
	certFile  string
	keyFile   string
	output    string
	timeout   time.Duration
}

func (o *options) client() (*admin.Client, error) {
	var hc *http.Client
	if o.caFile != "" || o.certFile != "" || o.keyFile != "" {
		tc, err := clientTLS(o.caFile, o.certFile, o.keyFile)
		if err != nil {
			return nil, usageErr("--ca-file/--cert-file/--key-file: %v", err)
		}
		hc = &http.Client{Transport: &http.Transport{TLSClientConfig: tc, Proxy: http.ProxyFromEnvironment}}
	}
	c, err := admin.NewClient(o.server, o.token, hc)
	if err != nil {
		return nil, usageErr("--server: %v", err)
	}
	return c, nil
}

// ctx bounds one request by --timeout.
func (o *options) ctx(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	return context.WithTimeout(cmd.Context(), o.timeout)
}

// newRoot builds the command tree writing to stdout and stderr.
func newRoot(stdout, stderr io.Writer, getenv func(string) string) *cobra.Command {
	o := &options{}
	root := &cobra.Command{
		Use:   "joinctl",
		Short: "Operate a Joinery fleet through a node's admin API",
		Long: `joinctl talks to the admin HTTP API of one Joinery node (any node answers for
the whole cluster): members, where a key lives and its state, watermarks, hot
keys, and key passivation or eviction.

Exit codes: 0 ok, 1 error talking to the server or server error, 2 usage
error, 3 job or key not found.`,
		Example: `  joinctl members
  joinctl --server http://node-1:8081 key inspect users-domains 42
  JOINERY_TOKEN=s3cret joinctl key passivate users-domains 42
  joinctl watermarks users-domains -w 2s
  joinctl hot users-domains -n 20 -o json`,
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			switch o.output {
			case "table", "json", "yaml":
			default:
				return usageErr("-o/--output: want table, json or yaml (got %q)", o.output)
			}
			if o.timeout <= 0 {
				return usageErr("--timeout: must be positive")
			}
			// From the environment after parsing, so --help never shows a token.
			if !cmd.Flags().Changed("server") {
				if s := getenv(envServer); s != "" {
					o.server = s
				}
			}
			switch {
			case cmd.Flags().Changed("token") && o.tokenFile != "":
				return usageErr("--token and --token-file exclude each other")
			case o.tokenFile != "":
				b, err := os.ReadFile(o.tokenFile)
				if err != nil {
					return usageErr("--token-file: %v", err)
				}
				o.token = strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
			case !cmd.Flags().Changed("token"):
				o.token = getenv(envToken)
			}
			return nil
		},
	}
	pf := root.PersistentFlags()
	pf.StringVar(&o.server, "server", defaultServer, "admin server URL (env "+envServer+")")
	pf.StringVar(&o.token, "token", "", "bearer token of the admin API (env "+envToken+"); reads need the read or admin token, passivate/evict the admin token")
	pf.StringVar(&o.tokenFile, "token-file", "", "read the bearer token from this file (one trailing newline trimmed)")
	pf.StringVar(&o.caFile, "ca-file", "", "PEM CA bundle that signs an https:// server's certificate (default: system roots)")
	pf.StringVar(&o.certFile, "cert-file", "", "client certificate (PEM) for a server that requires one, with --key-file")
	pf.StringVar(&o.keyFile, "key-file", "", "client key (PEM), with --cert-file")
	pf.StringVarP(&o.output, "output", "o", "table", "output format: table, json or yaml")
	pf.DurationVar(&o.timeout, "timeout", 30*time.Second, "timeout of one request")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return err }) // cobra's error: exit 2

	root.AddCommand(membersCmd(o), keyCmd(o, getenv), watermarksCmd(o), hotCmd(o), gossipKeyCmd(o))
	root.SetOut(stdout) // before InitDefaultCompletionCmd, which captures it
	root.SetErr(stderr)
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		c.Example = `  source <(joinctl completion bash)
  joinctl completion zsh > "${fpath[1]}/_joinctl"
  joinctl completion fish > ~/.config/fish/completions/joinctl.fish`
		for _, sh := range c.Commands() {
			sh.Example = fmt.Sprintf("  joinctl completion %s", sh.Name())
		}
	}
	for _, c := range root.Commands() {
		if c.HasSubCommands() && c.Run == nil && c.RunE == nil {
			c.RunE = groupRun
		}
	}
	return root
}

// groupRun runs a command that only groups others (key, completion): help
// without arguments, a usage error for an unknown subcommand.
func groupRun(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErr("unknown command %q for %q", args[0], cmd.CommandPath())
	}
	return cmd.Help()
}

// clientTLS builds a client TLS configuration: system roots or caFile, and
// an optional client certificate.
func clientTLS(caFile, certFile, keyFile string) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: no PEM certificate in it", caFile)
		}
		c.RootCAs = pool
	}
	switch {
	case certFile != "" && keyFile != "":
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, err
		}
		c.Certificates = []tls.Certificate{cert}
	case certFile != "" || keyFile != "":
		return nil, errors.New("--cert-file and --key-file go together")
	}
	return c, nil
}
