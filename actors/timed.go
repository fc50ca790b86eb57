package actors

import "github.com/joinery/joinery/keycore"

// FirePart is the name under which a sender reports, in Apply.committed, the
// watermark of its last completed fire (keycore.FirePart).
const FirePart = keycore.FirePart
