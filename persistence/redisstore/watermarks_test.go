package redisstore

import (
	"math"
	"testing"
	"time"

	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/persistence/storetest"
)

func TestStoreRedisWatermarks(t *testing.T) {
	storetest.RunWatermarks(t, func(t *testing.T) persistence.WatermarkStore {
		return newStore(t, testutil.StartRedis(t).Addr)
	})
}

func TestStoreRedisWatermarkEncoding(t *testing.T) {
	for _, w := range []persistence.NodeWatermark{
		{Node: "n", Watermark: math.MinInt64, Heartbeat: time.UnixMilli(0)},
		{Node: "n", Watermark: math.MaxInt64, Heartbeat: time.UnixMilli(1_700_000_000_000), Idle: true},
		{Node: "n", Watermark: -5, Heartbeat: time.UnixMilli(-1)},
	} {
		v := encodeWatermark(w)
		got, err := decodeWatermark("n", v)
		if err != nil || got.Watermark != w.Watermark || got.Idle != w.Idle || !got.Heartbeat.Equal(w.Heartbeat) {
			t.Errorf("%q decodes to %+v, %v; want %+v", v, got, err, w)
		}
	}
	for _, bad := range []string{"", "1", "1|2", "1|2|x", "x|2|0", "1|y|1", "1|2|0|3"} {
		if _, err := decodeWatermark("n", bad); err == nil {
			t.Errorf("%q decoded; want an error", bad)
		}
	}
}

func FuzzWatermarkDecode(f *testing.F) {
	f.Add("12|1700000000000|0")
	f.Add("-9223372036854775808|0|1")
	f.Fuzz(func(t *testing.T, v string) {
		w, err := decodeWatermark("n", v)
		if err != nil {
			return
		}
		again, err := decodeWatermark("n", encodeWatermark(w))
		if err != nil || again != w {
			t.Fatalf("%q: round trip %+v -> %+v, %v", v, w, again, err)
		}
	})
}
