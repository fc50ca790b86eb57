package replay

import "github.com/joinery/joinery/job"

// join is the one join a replay drives, in the job package's dialect: a
// job file's join: section, or a replay spec lowered (Spec.lower). The
// driver reads its settings here (side names and columns, what kind of
// join); the machine is the job package's compile of it (built).
type join struct{ job.Join }

// eventTime reports whether the join is an event-time join (not cdc).
func (j *join) eventTime() bool { return j.Type != TypeCDC && j.Type != TypeCDCMulti }

// temporal reports whether the join is a temporal or temporal-latest join.
func (j *join) temporal() bool { return j.Type == TypeTemporal || j.Type == TypeTemporalLatest }

// changelogProbe reports whether the join is a temporal join whose probe
// side is a changelog (Flink's semantics): its outputs carry row kinds.
func (j *join) changelogProbe() bool { return j.temporal() && j.Temporal.Semantics == "flink" }

// semi reports whether the join is a left semi join: its outputs are the
// left row alone.
func (j *join) semi() bool { return j.Mode == "semi" }

// timedOutputs reports whether outputs carry a time: every event-time
// join's, and a cdc join's with cdc.ts max.
func (j *join) timedOutputs() bool { return j.eventTime() || j.CDC.Ts == "max" }
