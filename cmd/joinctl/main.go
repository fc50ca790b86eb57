// Command joinctl is the Joinery admin CLI: it asks a node's admin server
// (package admin) for cluster members, key locations and state, watermarks
// and hot keys, passivates or evicts keys, and inspects a key's snapshot
// straight from Redis when no node runs.
package main

import "os"

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }
