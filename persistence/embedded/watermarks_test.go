package embedded

import (
	"testing"

	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/persistence/storetest"
)

func TestStoreEmbeddedWatermarks(t *testing.T) {
	storetest.RunWatermarks(t, func(t *testing.T) persistence.WatermarkStore {
		s, err := New(Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
