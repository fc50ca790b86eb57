package redisstore

import (
	"strings"

	"github.com/joinery/joinery/record"
)

// tagEscaper makes a job name safe inside a hash tag; the mapping is
// injective because "%" itself is escaped.
var tagEscaper = strings.NewReplacer("%", "%25", "{", "%7B", "}", "%7D")

// jobPrefix returns "<prefix>:{<escaped job>}:", the start of every key of
// job.
func jobPrefix(prefix, job string) string {
	tag := "%" // the escape of a non-empty name is never "%" alone
	if job != "" {
		tag = tagEscaper.Replace(job)
	}
	return prefix + ":{" + tag + "}:"
}

func stateKey(jp string, key record.Key) string { return jp + "state:" + string(key) }
func keysKey(jp string) string                  { return jp + "keys" }
func offsetsKey(jp string) string               { return jp + "offsets" }
func timersKey(jp string) string                { return jp + "timers" }
func epochKey(jp string, key record.Key) string { return jp + "epoch:" + string(key) }
