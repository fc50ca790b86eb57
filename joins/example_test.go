package joins_test

import (
	"encoding/json"
	"fmt"

	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/record"
)

// A left outer join of users and domains: one CDC per join key, fed by Route.
func Example() {
	spec := &joins.CDCSpec{
		Type:  joins.LeftOuter,
		Left:  joins.SideSpec{Name: "users", PK: "id", JoinOn: "id"},
		Right: joins.SideSpec{Name: "domains", PK: "id", JoinOn: "user_id"},
		Project: []joins.Column{
			{Name: "user", Side: record.Left, Field: "name"},
			{Name: "reason", Side: record.Right, Field: "reason"},
		},
	}
	if err := spec.Validate(); err != nil {
		panic(err)
	}
	keys := map[record.Key]*joins.CDC{}
	apply := func(side record.Side, c record.Change) {
		evs, err := spec.Route(side, c)
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, e := range evs {
			if keys[e.Key] == nil {
				keys[e.Key] = joins.NewCDC(spec)
			}
			for _, o := range keys[e.Key].OnEvent(e, nil) {
				fmt.Println(o.Kind, o.PK, o.Row["user"], o.Row["reason"])
			}
		}
	}
	one, three := json.Number("1"), json.Number("3")
	apply(record.Left, record.Change{Op: record.OpCreate, After: record.Row{"id": one, "name": "Egor Myasnik"}})
	apply(record.Left, record.Change{Op: record.OpCreate, After: record.Row{"id": three, "name": "Mitya Volk"}})
	d := record.Row{"id": json.Number("3"), "user_id": one, "reason": "Stoppage"}
	apply(record.Right, record.Change{Op: record.OpCreate, After: d})
	moved := record.Row{"id": json.Number("3"), "user_id": three, "reason": "Stoppage"}
	apply(record.Right, record.Change{Op: record.OpUpdate, Before: d, After: moved})
	apply(record.Right, record.Change{Op: record.OpDelete, Before: record.Row{"id": json.Number("3")}})
	// Output:
	// +I [1,null] Egor Myasnik <nil>
	// +I [3,null] Mitya Volk <nil>
	// -D [1,null] Egor Myasnik <nil>
	// +I [1,3] Egor Myasnik Stoppage
	// -D [1,3] Egor Myasnik Stoppage
	// +I [1,null] Egor Myasnik <nil>
	// -D [3,null] Mitya Volk <nil>
	// +I [3,3] Mitya Volk Stoppage
	// joins: cannot route right change op "d" at /0@0: unroutable-delete (before.user_id): a before row holding only the primary key cannot be routed to its join key; capture full before images (e.g. REPLICA IDENTITY FULL)
}
