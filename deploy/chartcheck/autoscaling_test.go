package chartcheck

import (
	"strings"
	"testing"
)

// TestAutoscaling renders the chart's KEDA ScaledObject: none by default;
// with autoscaling on, one on the StatefulSet, its replicas capped at the
// job's shards, scale-down one pod per period, the trigger a Prometheus
// query of this release's joinery_source_lag_records averaged per replica;
// a minReplicas above the cap fails the render with a message naming it.
func TestAutoscaling(t *testing.T) {
	ch := loadChart(t)
	out, err := Render(ch, nil)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Decode(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if _, ok := o.Obj.(*ScaledObject); ok {
			t.Fatalf("a ScaledObject with the default values (%s)", o.Source)
		}
	}

	for _, tc := range []struct {
		name     string
		vals     string
		min, max int32
		query    string
	}{
		{"capped at the shards", "autoscaling: {enabled: true, maxReplicas: 40}", 2, 16,
			`sum(joinery_source_lag_records{namespace="stream", service="prod-joinery-metrics"}) or vector(0)`},
		{"below the shards", "autoscaling: {enabled: true, minReplicas: 1, maxReplicas: 6, prometheus: {query: sum(lag)}}", 1, 6, "sum(lag)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Render(ch, mustYAML(t, tc.vals))
			if err != nil {
				t.Fatal(err)
			}
			objs, err := Decode(out)
			if err != nil {
				t.Fatal(err)
			}
			var so *ScaledObject
			for _, o := range objs {
				if x, ok := o.Obj.(*ScaledObject); ok {
					so = x
				}
			}
			if so == nil {
				t.Fatal("no ScaledObject rendered")
			}
			sp := so.Spec
			if r := sp.ScaleTargetRef; r.Kind != "StatefulSet" || r.APIVersion != "apps/v1" || r.Name != "prod-joinery" {
				t.Errorf("scaleTargetRef = %+v, want the StatefulSet prod-joinery", r)
			}
			if sp.MinReplicaCount != tc.min || sp.MaxReplicaCount != tc.max {
				t.Errorf("replicas %d..%d, want %d..%d", sp.MinReplicaCount, sp.MaxReplicaCount, tc.min, tc.max)
			}
			down := sp.Advanced.HorizontalPodAutoscalerConfig.Behavior.ScaleDown
			if down == nil || len(down.Policies) != 1 || down.Policies[0].Type != "Pods" || down.Policies[0].Value != 1 {
				t.Errorf("scale-down behavior %+v, want one pod per period", down)
			}
			if len(sp.Triggers) != 1 {
				t.Fatalf("triggers %+v, want one", sp.Triggers)
			}
			tr := sp.Triggers[0]
			if tr.Type != "prometheus" || tr.MetricType != "AverageValue" || tr.Metadata["query"] != tc.query || tr.Metadata["threshold"] != "50000" || tr.Metadata["serverAddress"] == "" {
				t.Errorf("trigger %+v, want prometheus, AverageValue, query %q, threshold 50000", tr, tc.query)
			}
		})
	}

	_, err = Render(ch, mustYAML(t, "autoscaling: {enabled: true, minReplicas: 20, maxReplicas: 40}"))
	if err == nil || !strings.Contains(err.Error(), "autoscaling.minReplicas (20) is above the most replicas the job can use (16") {
		t.Errorf("minReplicas above the cap: render error %v", err)
	}
}
