package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/joinery/joinery/internal/jsonenc"
	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/keycore"
	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/record"
)

// InspectOffline reads key's snapshot of job from store and decodes it with
// the CDC join of spec, without any node running: Left, Rights and Offsets
// are filled; Node is empty and Epoch, Timers, Late and DeadLettered are zero
// (a CDC snapshot does not hold them).
//
// spec must name the sides' primary keys (joins' Restore checks each row's
// primary key); the job file's join gives it (job.Spec.CDCSpec). It returns
// an error wrapping ErrNotFound (and persistence.ErrNotFound) when the key
// has no snapshot, and one wrapping joins.ErrBadSnapshot when the snapshot
// does not decode under spec.
//
// A nil spec means an event-time join: State holds the join's buffers as
// JSON, Timers and Watermark what the key persisted with them.
func InspectOffline(ctx context.Context, store persistence.Store, spec *joins.CDCSpec, job, key string) (KeyState, error) {
	snap, err := store.Load(ctx, job, record.Key(key))
	if errors.Is(err, persistence.ErrNotFound) {
		return KeyState{}, fmt.Errorf("%w: job %q key %q has no snapshot (%w)", ErrNotFound, job, key, err)
	}
	if err != nil {
		return KeyState{}, fmt.Errorf("admin: inspect offline: %w", err)
	}
	info, err := keycore.DecodeStateInfo(snap.State, spec)
	if err != nil {
		return KeyState{}, fmt.Errorf("admin: inspect offline: job %q key %q: %w", job, key, err)
	}
	ks := KeyState{Job: job, Key: key, Offsets: snap.Offsets.Map(), Outbox: info.Outbox, Watermark: math.MinInt64}
	if ks.Epoch, err = store.Epoch(ctx, job, record.Key(key)); err != nil {
		return KeyState{}, fmt.Errorf("admin: inspect offline: epoch: %w", err)
	}
	if spec == nil {
		ks.Timers, ks.Watermark = info.Timers, info.Watermark
		if j := info.Join; len(j) > 2 {
			if !json.Valid(j[2:]) {
				return KeyState{}, fmt.Errorf("admin: inspect offline: job %q key %q: event-time state is not JSON (a changelog job? pass its job file)", job, key)
			}
			ks.State = json.RawMessage(j[2:])
		}
		return ks, nil
	}
	cdc := joins.NewCDC(spec)
	if len(info.Join) > 0 {
		if err := cdc.Restore(info.Join); err != nil {
			return KeyState{}, fmt.Errorf("admin: inspect offline: job %q key %q: %w", job, key, err)
		}
	}
	// A left side of many rows: its first row as Left, the others first
	// among Rights.
	for i, l := range cdc.Lefts() {
		b, err := encodeRow(l)
		if err != nil {
			return KeyState{}, err
		}
		if i == 0 {
			ks.Left = b
			continue
		}
		ks.Rights = append(ks.Rights, b)
	}
	for _, r := range cdc.Rights() {
		b, err := encodeRow(r)
		if err != nil {
			return KeyState{}, err
		}
		ks.Rights = append(ks.Rights, b)
	}
	return ks, nil
}

// encodeRow encodes a row as compact JSON without HTML escaping.
func encodeRow(r record.Row) (json.RawMessage, error) {
	b, err := jsonenc.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("admin: encode row: %w", err)
	}
	return json.RawMessage(b), nil
}
