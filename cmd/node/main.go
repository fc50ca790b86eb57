// Command node is the joinery binary (make build writes bin/joinery): `joinery run --config job.yaml` runs the job
// until its sources end or the process is signalled, then drains and exits.
// `joinery check --config job.yaml` validates the job file and prints it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/joinery/joinery/internal/gctune"
	"github.com/joinery/joinery/internal/tableprint"
	"github.com/joinery/joinery/job"
	"github.com/joinery/joinery/node"
	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/replay"
)

const usage = `usage:
  joinery run    --config job.yaml [--log-format text|json] [--log-level info] [--source-lag-every 15s]
  joinery check  --config job.yaml
  joinery replay --job job.yaml --input events.jsonl [--late late.jsonl] [--end-of-input flush|hold] [--ops auto|always]
  joinery replay --spec spec.yaml --script script.jsonl

run    runs the job until its sources end (files) or SIGINT/SIGTERM, then
       drains: pending state writes are flushed and the node leaves the cluster.
check  validates the job file as run does (secrets, gossip key, TLS files,
       admin and ingest access), prints the effective spec with every secret
       redacted and exits.
replay runs one join deterministically over an arrival-ordered file of
       inputs and explicit watermarks and prints its outputs. --job takes a
       node job file (its join: section) or a bare replay spec; the input is
       {"side","key","ts","value"} lines (docs/guides/replay.md). --spec/--script is
       the older script format of the golden tests (replay/doc.go).
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "replay" {
		return replayCmd(args[1:], stdout, stderr)
	}
	if len(args) == 0 || (args[0] != "run" && args[0] != "check") {
		fmt.Fprint(stderr, usage)
		return 2
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "", "job file (YAML)")
	logFormat := fs.String("log-format", "text", "log format: text or json")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn, error")
	lagEvery := fs.Duration("source-lag-every", 0, "how often each Redis stream and Kafka source's lag is read for joinery_source_lag_records, the autoscaling signal (0: 15s)")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if *config == "" {
		fmt.Fprintln(stderr, "--config is required")
		return 2
	}
	plan, err := job.LoadPlan(*config)
	if err != nil {
		fmt.Fprintf(stderr, "invalid job file:\n%v\n", err)
		return 2
	}
	if args[0] == "check" {
		if err := node.CheckExposure(plan); err != nil {
			fmt.Fprintf(stderr, "invalid job file:\n%v\n", err)
			return 2
		}
		// Secrets are redacted: check output lands in CI logs and terminals.
		b, _ := yaml.Marshal(plan.Spec.Redacted())
		fmt.Fprintf(stdout, "%s: ok\n%s", *config, b)
		writeKept(stdout, plan)
		return 0
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(stderr, "--log-level: %v\n", err)
		return 2
	}
	hopts := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewTextHandler(stderr, hopts)
	if *logFormat == "json" {
		h = slog.NewJSONHandler(stderr, hopts)
	}
	log := slog.New(h)

	gc := gctune.Apply(plan.Spec.Runtime.GCPercent, plan.MemoryLimit)
	log.Debug("garbage collector", "gc_percent", gc.Percent, "from", gc.PercentFrom, "memory_limit", gc.Limit, "limit_from", gc.LimitFrom)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	n, err := node.StartPlan(ctx, plan, node.Options{Logger: log, Stdout: stdout, SourceLagEvery: *lagEvery})
	if err != nil {
		log.Error("start failed", "err", err)
		return 1
	}
	log.Info("node started", "address", n.Address(), "gossip", n.GossipAddr())
	runErr := n.Run(ctx)
	if len(plan.Spec.Sources) == 0 && runErr == nil {
		runErr = n.Wait(ctx) // a node without sources hosts key actors until signalled (or refused by its fleet)
	}
	closeCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	closeErr := n.Close(closeCtx)
	st := n.Stats()
	log.Info("node stopped", "records_in", st.In.Load(), "events", st.Events.Load(), "outputs", st.Out.Load(),
		"replayed_skipped", st.Skipped.Load(), "tombstones", st.Tombs.Load(), "rejected", st.Bad())
	if rows := n.Table(); rows != nil {
		tableprint.Print(stdout, rows, n.Columns())
	}
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		log.Error("run failed", "err", runErr)
		return 1
	}
	if closeErr != nil {
		log.Error("close failed", "err", closeErr)
		return 1
	}
	return 0
}

func replayCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	specPath := fs.String("spec", "", "join spec (YAML, see replay.Spec), with --script")
	scriptPath := fs.String("script", "-", "script of inputs and watermarks (JSON lines, replay/doc.go); - is stdin")
	jobPath := fs.String("job", "", "node job file or bare replay spec (YAML), with --input")
	inputPath := fs.String("input", "-", `events (JSON lines: {"side","key","ts","value"}, {"watermark"}); - is stdin`)
	latePath := fs.String("late", "", "write late and dropped inputs here (JSON lines) instead of stderr")
	endOfInput := fs.String("end-of-input", "", "flush (watermark to +inf at the end; default) or hold; overrides the job")
	ops := fs.String("ops", replay.OpsAuto, `auto ("op" on changelog outputs only) or always`)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "replay: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case set["job"] && (set["spec"] || set["script"]):
		fmt.Fprintln(stderr, "replay: use --job with --input, or --spec with --script, not both")
		return 2
	case set["spec"] && (set["input"] || set["late"] || set["end-of-input"] || set["ops"]):
		fmt.Fprintln(stderr, "replay: --input, --late, --end-of-input and --ops go with --job")
		return 2
	case set["job"]:
		return replayEvents(*jobPath, *inputPath, *latePath, *endOfInput, *ops, stdout, stderr)
	case !set["spec"]:
		fmt.Fprintln(stderr, "replay: --job (or --spec) is required")
		return 2
	}
	b, err := os.ReadFile(*specPath)
	if err != nil {
		fmt.Fprintf(stderr, "--spec: %v\n", err)
		return 2
	}
	spec, err := replay.ParseSpec(b)
	if err != nil {
		fmt.Fprintf(stderr, "invalid spec:\n%v\n", err)
		return 2
	}
	var in io.Reader = os.Stdin
	if *scriptPath != "-" {
		f, err := os.Open(*scriptPath)
		if err != nil {
			fmt.Fprintf(stderr, "--script: %v\n", err)
			return 2
		}
		defer f.Close()
		in = f
	}
	sum, err := replay.Run(spec, in, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "replay: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "replay: %+v\n", sum)
	return 0
}

// replayEvents is replay --job --input: outputs to stdout, late and dropped
// inputs to --late (or stderr), then a summary line on stderr.
func replayEvents(jobPath, inputPath, latePath, end, ops string, stdout, stderr io.Writer) int {
	b, err := os.ReadFile(jobPath)
	if err != nil {
		fmt.Fprintf(stderr, "--job: %v\n", err)
		return 2
	}
	jb, err := replay.ParseJob(b)
	if err != nil {
		fmt.Fprintf(stderr, "invalid job file %s:\n%v\n", jobPath, err)
		return 2
	}
	switch end {
	case "", replay.EndFlush, replay.EndHold:
	default:
		fmt.Fprintf(stderr, "--end-of-input: must be flush or hold (got %q)\n", end)
		return 2
	}
	switch ops {
	case replay.OpsAuto, replay.OpsAlways:
	default:
		fmt.Fprintf(stderr, "--ops: must be auto or always (got %q)\n", ops)
		return 2
	}
	var in io.Reader = os.Stdin
	if inputPath != "-" {
		f, err := os.Open(inputPath)
		if err != nil {
			fmt.Fprintf(stderr, "--input: %v\n", err)
			return 2
		}
		defer f.Close()
		in = f
	}
	late := stderr
	switch latePath {
	case "", "/dev/stderr":
	case "-", "/dev/stdout":
		late = stdout // interleaved with the outputs, in order
	default:
		f, err := os.Create(latePath)
		if err != nil {
			fmt.Fprintf(stderr, "--late: %v\n", err)
			return 2
		}
		defer f.Close()
		late = f
	}
	sum, err := replay.RunEvents(jb, in, stdout, replay.Options{Late: late, EndOfInput: end, Ops: ops})
	if err != nil {
		fmt.Fprintf(stderr, "%v (--input %s)\n", err, inputPath)
		return 1
	}
	line, _ := json.Marshal(map[string]any{"summary": sum})
	fmt.Fprintf(stderr, "%s\n", line)
	return 0
}

// writeKept prints, per join side, the columns the key state keeps of its
// rows (projection pushdown: joins.CDCSpec.Kept, joins.ReadColumns).
func writeKept(w io.Writer, plan *job.Plan) {
	line := func(name string, cols []string, all bool) {
		if all {
			fmt.Fprintf(w, "# state keeps %s: every column\n", name)
			return
		}
		fmt.Fprintf(w, "# state keeps %s: %s\n", name, strings.Join(cols, ", "))
	}
	switch {
	case plan.Multi != nil:
		for i, t := range plan.Multi.Tables {
			cols, all := plan.Multi.Kept(i)
			line(t.Name, cols, all)
		}
	case plan.CDC != nil:
		cols, all := plan.CDC.Kept(record.Left)
		line(plan.CDC.Left.Name, cols, all)
		cols, all = plan.CDC.Kept(record.Right)
		line(plan.CDC.Right.Name, cols, all)
	case plan.NewTimed != nil && plan.Spec != nil:
		for side, name := range []string{plan.Spec.Join.Left.Name, plan.Spec.Join.Right.Name} {
			cols := plan.TimedKept[side]
			line(name, cols, cols == nil)
		}
	}
}
