package admin_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/joinery/joinery/admin"
)

// A node serves its Backend on the admin server; joinctl (or any program)
// reads it with a Client.
func ExampleNewServer() {
	srv := admin.NewServer(admin.ServerConfig{
		Addr:    "127.0.0.1:0", // a free port; Addr() tells which
		Token:   "s3cret",
		Backend: &fakeBackend{}, // a node in real life
		Metrics: admin.NewMetrics(),
		Logger:  slog.New(slog.DiscardHandler),
	})
	if err := srv.Start(); err != nil {
		panic(err)
	}
	defer srv.Shutdown(context.Background())

	c, err := admin.NewClient(srv.Addr(), "s3cret", nil)
	if err != nil {
		panic(err)
	}
	ms, err := c.Members(context.Background())
	if err != nil {
		panic(err)
	}
	for _, m := range ms {
		fmt.Println(m.Name, m.Status, m.Self)
	}
	// Output:
	// n1 alive true
	// n2 alive false
}
