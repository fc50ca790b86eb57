// Package replay is Joinery's deterministic replay mode, in the spirit of
// Kafka Streams' TopologyTestDriver: a join spec plus an arrival-ordered
// script of inputs and explicit watermarks in, the join's outputs out. Tests
// (joins/testdata golden scripts), users (joinery replay) and examples all
// use it.
//
// It owns the driving a key actor does for a whole job in one place: it keys
// each input (CDCSpec.Route for cdc, the side's key column for event-time
// joins), keeps one joins state machine per key, one timers.TimerService for
// their event-time timers, and the watermark. It does no I/O besides the
// reader and writer it is given, starts no goroutine, reads no clock and uses
// no randomness: the same spec and script give the same bytes out.
//
// The spec (YAML, see Spec), shorthand for a node job file's join: section
// (job.Join), to which it lowers and which the job package compiles (replay
// has no join compiler of its own):
//
//	type: window            # cdc, window, cogroup-outer, interval, time-bounded, unbounded, temporal, temporal-latest
//	mode: inner             # inner (default), left, right, full, as the type allows
//	left:  {name: orange, key: k, ts: ts}   # cdc: {name: users, pk: id, join_on: id}
//	right: {name: green,  key: k, ts: ts}
//	window: {assigner: tumbling, size: 2ms} # sliding: size, slide; session: gap; offset
//	allowed_lateness: 0
//	interval: {lower: -2ms, upper: 1ms, lower_exclusive: false, upper_exclusive: false}
//	project: [{name: o, from: orange.v}, {name: g, from: green.v}]
//	condition: 'orange.v < green.v'          # residual conditions (stream-stream joins): expr-lang
//	left_condition: 'orange.v != 0'          # over one side only
//	late: {rule: "ts<=wm"}                   # ts<wm (default), ts<=wm (Spark), none (Kafka Streams)
//	ttl: 1h                                  # unbounded joins: rows kept until the watermark passes ts + ttl
//	temporal: {semantics: flink}             # temporal joins: strict (default), Flink's TemporalRowTimeJoinOperator, or kafka
//	temporal: {semantics: kafka, grace: 2ms, history: 5m}  # type temporal: Kafka Streams' versioned-table join (KIP-914)
//	cdc: {kinds: flink, ts: max}             # cdc joins: -U/+U (update, default), Flink's row kinds or kafka (Change(new, old)); output times none or max
//
// The script, one JSON object per line, in arrival order:
//
//	{"comment":"ignored"}
//	{"side":"orange","row":{"k":"a","ts":0,"v":"o0"}}       event-time row; ts from the side's ts column
//	{"side":"rates","op":"d","row":{"k":"EUR","ts":7}}       temporal joins: the version at 7 is deleted
//	{"side":"users","op":"c","after":{"id":1,"name":"Egor"}}  cdc: a Debezium envelope (bare or wrapped) plus "side"
//	{"watermark":10}                                         fire due timers, then later lines see 10
//	{"snapshot":true}                                        snapshot and restore every key (a metamorphic check)
//
// Blank lines are skipped. Line n is at Position replay/0@n, which output
// ids derive from.
//
// The output, one line per output in the order the join makes them:
//
//	{"id":"window|replay/0@2|replay/0@3|2|0","op":"+I","pk":["replay/0@2","replay/0@3",2,0],"row":{…},"ts":1}
//	{"late":{"side":"green","key":"a","ts":0,"pos":"replay/0@9","row":{…}},"reason":"window-closed"}
//
// An output line is a formats/changelog Changelog line with "ts" (the event
// time) added for event-time joins; changelog.DecodeChangelog reads it back
// (dropping ts).
//
// Usage:
//
//	spec, err := replay.ParseSpec(yamlBytes)
//	sum, err := replay.Run(spec, scriptReader, os.Stdout)
//
// # The events mode
//
// RunEvents is the external contract of joinery replay --job JOB.yaml
// --input EVENTS.jsonl (docs/concepts/join-semantics.md has the whole format, every join
// type and the differences from Flink, Spark and Kafka Streams). ParseJob
// reads either a node job file (its join: section, plus an optional
// replay: {end_of_input: hold}) or a bare Spec (plus end_of_input); either
// way the join is a job.Join (Job.Join: a bare Spec is lowered to one),
// compiled by the job package as a node compiles it. Input
// lines carry their own key, time and value:
//
//	{"side":"left","key":"k","ts":5,"value":{"any":"json"}}
//	{"side":"right","key":"EUR","ts":7,"value":{"rate":1.1},"op":"+U"}   temporal versioned side: +I/+U, -U/-D end a version
//	{"side":"left","key":"EUR","ts":8,"value":{"n":1},"op":"-U"}         temporal probe side, semantics flink: kept on the output
//	{"side":"users","op":"u","before":{…},"after":{…}}                   cdc: c/r/u/d or +I/-U/+U/-D
//	{"watermark":10}
//
// and each output is the pair of matched input values, as given:
//
//	{"left":V|null,"right":V|null,"ts":T|null[,"op":"+I|-U|+U|-D"]}
//
// It runs on the same driver as Run: an event-time row is {"\x00ref": "n"},
// a reference to line n's value text, and a cdc row is the input object plus
// that column, so outputs show the inputs byte for byte (white space aside).
// Late and dropped inputs go to Options.Late; at the end the watermark goes
// to +infinity unless the job says hold.
//
//	jb, err := replay.ParseJob(yamlBytes)
//	sum, err := replay.RunEvents(jb, input, os.Stdout, replay.Options{Late: os.Stderr})
package replay
