#!/usr/bin/env python3
"""Group a CPU profile of cmd/bench by stage: each sample goes to the first
stage (in the order below) whose pattern matches a frame of its stack, and
the stages are printed in µs per event.

Usage: go tool pprof -traces BIN PROF | python3 scripts/profile-stages.py EVENTS

docs/performance/2026-12-07-node-profile.md shows it in use."""
import re, sys, collections
stages = [
    ("(harness: raw baseline)", r"bench\.\(\*cdcJob\)\.baseline|bench\.\(\*q20Job\)\.baseline|baseline"),
    ("(harness: generator, checksum)", r"cdcgen|checksumFile|nexmark\.Gen|bench\.measure$"),
    ("GC", r"^runtime\.(gcBgMarkWorker|gcAssistAlloc|bgsweep|bgscavenge|gcDrain|markroot|scanobject|sweepone|gcStart|wbBufFlush)"),
    ("key core Step", r"keycore\.\(\*Core\)\.Step|keycore\.\(\*Core\)\.Write|keycore\.\(\*Core\)"),
    ("decoding", r"debezium|decoder|rowcodec\.Decode|jsondec|go-json|sonic|json\.Unmarshal|connectors/.*[Dd]ecode"),
    ("protoactor, mailboxes, key actor shell", r"asynkron/protoactor-go|joinery/actors\.\(\*keyActor\)|joinery/actors\.\(\*batchActor\)|joinery/actors\.\(\*keyMailbox\)|joinery/actors\.\(\*mpsc|joinery/actors\.\(\*warmDispatcher\)|joinery/actors\.\(\*deadLetterInvoker\)|joinery/actors\.\(\*activator|joinery/actors\.\(\*loader"),
    ("Writer + store Save", r"joinery/actors\.\(\*Writer\)|persistence/embedded|persistence/redisstore|go-redis"),
    ("sendCalls", r"node\.\(\*[a-zA-Z]+\)\.sendCalls|sendCalls"),
    ("dispatch (reader)", r"joinery/node\.\(\*reader\)|joinery/node/sendstate|dispatch|route"),
    ("collector + sink", r"[Cc]ollect|sinks/|jsonl|node\.\(\*sink|node\.\(\*output"),
    ("scheduler", r"^runtime\.(schedule|findRunnable|mcall|park_m|goexit0|futex|notesleep|stopm|netpoll|usleep|osyield)"),
]
total = 0
by = collections.Counter()
other = collections.Counter()
val = 0
stack = []
def unit(s):
    m = re.match(r"([\d.]+)(ms|s|us|µs|ns)", s)
    v = float(m.group(1)); u = m.group(2)
    return v * {"s": 1e6, "ms": 1e3, "us": 1, "µs": 1, "ns": 1e-3}[u]
def flush():
    global stack, val, total
    if not stack: return
    total += val
    for name, pat in stages:
        if any(re.search(pat, f) for f in stack):
            by[name] += val; break
    else:
        by["other"] += val; other[stack[0]] += val
    stack = []; val = 0
for line in sys.stdin:
    if line.startswith("-----"):
        flush(); continue
    m = re.match(r"^\s+([\d.]+(?:ms|s|us|µs|ns))\s+(\S.*)$", line)
    if m:
        flush(); val = unit(m.group(1)); stack = [m.group(2).strip()]; continue
    m = re.match(r"^\s+(\S.*)$", line)
    if m and stack is not None and val:
        stack.append(m.group(1).strip())
flush()
events = float(sys.argv[1]) if len(sys.argv) > 1 else 1
print(f"total {total/1e6:.2f} s CPU, {total/events:.2f} µs/event over {events:.0f} events")
for name, _ in stages + [("other", "")]:
    print(f"{name:32s} {by[name]/events:6.2f} µs/event  {100*by[name]/total:5.1f}%")
print("top 'other' leaves:")
for f, v in other.most_common(12):
    print(f"   {v/events:6.3f} µs  {f}")
