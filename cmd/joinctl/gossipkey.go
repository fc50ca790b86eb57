package main

import (
	"encoding/base64"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/joinery/joinery/admin"
)

// gossipKeyCmd lists and rotates the keys of the fleet's encrypted gossip.
func gossipKeyCmd(o *options) *cobra.Command {
	var nodes []string
	cmd := &cobra.Command{
		Use:   "gossip-key",
		Short: "List or rotate the gossip encryption keys (keyring) of nodes",
		Long: `gossip-key changes the keyring of each node it is pointed at (--server, or
every admin URL in --nodes, in order). A rotation runs each step on every node
before the next, so every node can always read every other:

  joinctl gossip-key install NEW --nodes n1:8081,n2:8081,n3:8081
  joinctl gossip-key use     NEW --nodes ...
  joinctl gossip-key remove  OLD --nodes ...

then put NEW in the job's secret_key (the Helm gossip Secret) so restarts use
it. KEY is base64 (16, 24 or 32 bytes), or - to read it from standard input.
Changes need the admin token; keys are listed by fingerprint only.`,
		Example: "  joinctl gossip-key list\n  head -c 32 /dev/urandom | base64 | JOINERY_TOKEN=s3cret joinctl gossip-key install - --nodes n1:8081,n2:8081",
	}
	cmd.PersistentFlags().StringSliceVar(&nodes, "nodes", nil, "admin URLs of the nodes to act on (default: --server)")
	clients := func() ([]string, []*admin.Client, error) {
		urls := nodes
		if len(urls) == 0 {
			urls = []string{o.server}
		}
		var cs []*admin.Client
		for _, u := range urls {
			c, err := admin.NewClient(u, o.token, nil)
			if err != nil {
				return nil, nil, usageErr("--nodes: %v", err)
			}
			cs = append(cs, c)
		}
		return urls, cs, nil
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List each node's gossip keys by fingerprint, the primary first",
		Args:  cobra.NoArgs,
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
			urls, cs, err := clients()
			if err != nil {
				return err
			}
			all := map[string][]admin.GossipKey{}
			for i, c := range cs {
				ctx, cancel := o.ctx(cmd)
				keys, err := c.GossipKeys(ctx)
				cancel()
				if err != nil {
					return fmt.Errorf("%s: %w", urls[i], err)
				}
				all[urls[i]] = keys
			}
			return render(cmd.OutOrStdout(), o.output, all, func(w io.Writer) {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NODE\tFINGERPRINT\tBITS\tPRIMARY")
				for _, u := range urls {
					for _, k := range all[u] {
						fmt.Fprintf(tw, "%s\t%s\t%d\t%v\n", u, k.Fingerprint, k.Bits, k.Primary)
					}
				}
				tw.Flush()
			})
		}),
	})
	for _, op := range []struct{ name, short string }{
		{"install", "Add a key to each node's keyring (accepted, not yet used to encrypt)"},
		{"use", "Make an installed key the one each node encrypts with"},
		{"remove", "Remove a key that is not the primary from each node's keyring"},
	} {
		cmd.AddCommand(&cobra.Command{
			Use:   op.name + " KEY",
			Short: op.short,
			Args:  cobra.ExactArgs(1),
			RunE: runE(func(cmd *cobra.Command, args []string) error {
				text := args[0]
				if text == "-" {
					b, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), 4096))
					if err != nil {
						return err
					}
					text = string(b)
				}
				key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(text))
				if err != nil {
					return usageErr("KEY: not base64: %v", err)
				}
				urls, cs, err := clients()
				if err != nil {
					return err
				}
				for i, c := range cs {
					ctx, cancel := o.ctx(cmd)
					err := c.ChangeGossipKey(ctx, op.name, key)
					cancel()
					if err != nil {
						return fmt.Errorf("%s: %w (nodes before it in the list were changed)", urls[i], err)
					}
					fmt.Fprintf(cmd.OutOrStdout(), "%s: %s done\n", urls[i], op.name)
				}
				return nil
			}),
		})
	}
	return cmd
}
