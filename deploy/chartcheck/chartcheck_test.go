package chartcheck

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

const chartDir = "../helm/joinery"

// valueSets are the values the chart is rendered, decoded, linted and
// job-checked with: the defaults and one with every option on.
var valueSets = []struct{ name, file string }{
	{"default", ""},
	{"full", "testdata/full-values.yaml"},
}

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	ch, err := LoadChart(chartDir)
	if err != nil {
		t.Fatalf("load chart: %v", err)
	}
	if ch.Schema == nil {
		t.Fatal("chart has no values.schema.json")
	}
	return ch
}

func readValues(t *testing.T, file string) map[string]any {
	t.Helper()
	if file == "" {
		return nil
	}
	v, err := chartutil.ReadValuesFile(file)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return v.AsMap()
}

func mustYAML(t *testing.T, s string) map[string]any {
	t.Helper()
	v, err := chartutil.ReadValues([]byte(s))
	if err != nil {
		t.Fatalf("values %q: %v", s, err)
	}
	return v.AsMap()
}

// fleet is a decoded render, indexed by kind.
type fleet struct {
	sts      *appsv1.StatefulSet
	cm       *corev1.ConfigMap
	services map[string]*corev1.Service
	pdb      *policyv1.PodDisruptionBudget
	sm       *ServiceMonitor
	rule     *PrometheusRule
	board    *corev1.ConfigMap // the Grafana dashboard's
	notes    string
}

func render(t *testing.T, ch *chart.Chart, vals map[string]any) fleet {
	t.Helper()
	out, err := Render(ch, vals)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	objs, err := Decode(out)
	if err != nil {
		t.Fatalf("strict decode:\n%v", err)
	}
	f := fleet{services: map[string]*corev1.Service{}, notes: out["joinery/templates/NOTES.txt"]}
	for _, o := range objs {
		switch x := o.Obj.(type) {
		case *appsv1.StatefulSet:
			if f.sts != nil {
				t.Fatalf("two StatefulSets")
			}
			f.sts = x
		case *corev1.ConfigMap:
			if strings.HasSuffix(o.Source, "grafana-dashboard.yaml") {
				if f.board != nil {
					t.Fatalf("two dashboard ConfigMaps")
				}
				f.board = x
				continue
			}
			if f.cm != nil {
				t.Fatalf("two ConfigMaps")
			}
			f.cm = x
		case *corev1.Service:
			f.services[x.Name] = x
		case *policyv1.PodDisruptionBudget:
			f.pdb = x
		case *ServiceMonitor:
			f.sm = x
		case *PrometheusRule:
			f.rule = x
		}
	}
	if f.sts == nil || f.cm == nil {
		t.Fatalf("render lacks the StatefulSet or the ConfigMap: %v", objs)
	}
	return f
}

// TestRenderStrict renders the chart with each value set, decodes every
// manifest strictly into its type and checks that the objects fit together.
func TestRenderStrict(t *testing.T) {
	ch := loadChart(t)
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			vals := readValues(t, vs.file)
			f := render(t, ch, vals)
			merged, err := chartutil.CoalesceValues(ch, vals)
			if err != nil {
				t.Fatal(err)
			}
			checkFleet(t, f, merged)
		})
	}
}

func checkFleet(t *testing.T, f fleet, v chartutil.Values) {
	sts := f.sts
	pod := sts.Spec.Template
	podLabels := labels.Set(pod.Labels)
	sel, err := metav1LabelSelector(sts)
	if err != nil || !sel.Matches(podLabels) {
		t.Errorf("StatefulSet selector %v does not match pod labels %v (%v)", sts.Spec.Selector, pod.Labels, err)
	}
	replicas, _ := v.PathValue("replicaCount")
	if sts.Spec.Replicas == nil || float64(*sts.Spec.Replicas) != toFloat(replicas) {
		t.Errorf("replicas %v, values say %v", sts.Spec.Replicas, replicas)
	}
	if g := pod.Spec.TerminationGracePeriodSeconds; g == nil || *g < 35 {
		t.Errorf("terminationGracePeriodSeconds %v: must leave room for the node's 30s drain", g)
	}
	if pod.Annotations["checksum/config"] == "" {
		t.Error("no checksum/config annotation")
	}
	if ps := pod.Spec.SecurityContext; ps == nil || ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot {
		t.Error("pod securityContext must set runAsNonRoot")
	}
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("%d containers", len(pod.Spec.Containers))
	}
	c := pod.Spec.Containers[0]
	if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Error("container securityContext must be read-only and forbid privilege escalation")
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("container resources lack cpu/memory requests or a memory limit: %+v", c.Resources)
	}
	ports := map[string]corev1.ContainerPort{}
	for _, p := range c.Ports {
		ports[p.Name] = p
	}
	for _, pr := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe} {
		if pr == nil || pr.HTTPGet == nil {
			t.Fatal("liveness and readiness probes must be HTTP GETs")
		}
		if _, ok := ports[pr.HTTPGet.Port.String()]; !ok {
			t.Errorf("probe %s on port %q, which the container does not name", pr.HTTPGet.Path, pr.HTTPGet.Port.String())
		}
	}
	env := map[string]bool{}
	for _, e := range c.Env {
		env[e.Name] = true
		if e.Name == "JOINERY_EXPECT" && e.Value != fmt.Sprint(toFloat(replicas)) {
			t.Errorf("JOINERY_EXPECT %q, want the replica count %v", e.Value, replicas)
		}
	}
	for _, name := range []string{"JOINERY_NODE_NAME", "JOINERY_ADVERTISE_ADDR", "JOINERY_SEEDS", "JOINERY_EXPECT", "JOINERY_REDIS_ADDR", "JOINERY_ADMIN_ADDR"} {
		if !env[name] {
			t.Errorf("container env lacks %s", name)
		}
	}
	cmOK := false
	for _, vol := range pod.Spec.Volumes {
		if vol.ConfigMap != nil && vol.ConfigMap.Name == f.cm.Name {
			cmOK = true
		}
	}
	if !cmOK {
		t.Errorf("no volume mounts ConfigMap %s", f.cm.Name)
	}
	if _, ok := f.cm.Data["job.yaml"]; !ok {
		t.Error("ConfigMap has no job.yaml")
	}

	// Services select the pods and target named container ports.
	headless, ok := f.services[sts.Spec.ServiceName]
	if !ok || headless.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("serviceName %q is not a rendered headless Service", sts.Spec.ServiceName)
	}
	for name, svc := range f.services {
		if !labels.SelectorFromSet(svc.Spec.Selector).Matches(podLabels) || len(svc.Spec.Selector) == 0 {
			t.Errorf("Service %s selector %v does not match the pods", name, svc.Spec.Selector)
		}
		for _, p := range svc.Spec.Ports {
			cp, ok := ports[p.TargetPort.String()]
			if !ok || cp.Protocol != p.Protocol {
				t.Errorf("Service %s port %s targets %q/%s, not a container port", name, p.Name, p.TargetPort.String(), p.Protocol)
			}
		}
	}

	// PodDisruptionBudget whenever there is more than one node.
	if *sts.Spec.Replicas > 1 {
		if f.pdb == nil {
			t.Error("no PodDisruptionBudget")
		} else if s, err := metav1Selector(f.pdb.Spec.Selector); err != nil || !s.Matches(podLabels) {
			t.Errorf("PDB selector does not match the pods (%v)", err)
		}
	}

	// ServiceMonitor: on when asked for, selecting a Service with an admin port.
	smOn, _ := v.PathValue("metrics.serviceMonitor.enabled")
	if smOn == true {
		if f.sm == nil {
			t.Fatal("metrics.serviceMonitor.enabled but no ServiceMonitor")
		}
		s, err := metav1Selector(&f.sm.Spec.Selector)
		if err != nil {
			t.Fatal(err)
		}
		var hits []*corev1.Service
		for _, svc := range f.services {
			if s.Matches(labels.Set(svc.Labels)) {
				hits = append(hits, svc)
			}
		}
		if len(hits) != 1 {
			t.Fatalf("ServiceMonitor selects %d Services, want 1", len(hits))
		}
		if len(f.sm.Spec.Endpoints) != 1 {
			t.Fatalf("ServiceMonitor has %d endpoints", len(f.sm.Spec.Endpoints))
		}
		ep := f.sm.Spec.Endpoints[0]
		found := false
		for _, p := range hits[0].Spec.Ports {
			found = found || p.Name == ep.Port
		}
		if !found || ep.Port != "admin" || ep.Path != "/metrics" {
			t.Errorf("ServiceMonitor endpoint %+v: want port admin (on Service %s), path /metrics", ep, hits[0].Name)
		}
		if got := f.sm.Spec.NamespaceSelector.MatchNames; len(got) != 1 || got[0] != Release.Namespace {
			t.Errorf("ServiceMonitor namespaceSelector %v, want [%s]", got, Release.Namespace)
		}
	} else if f.sm != nil {
		t.Error("ServiceMonitor rendered while metrics.serviceMonitor.enabled is off")
	}

	checkMonitoring(t, f, v)

	for _, want := range []string{"port-forward pod/" + sts.Name + "-0 8081:admin", "joinctl --server http://127.0.0.1:8081 members"} {
		if !strings.Contains(f.notes, want) {
			t.Errorf("NOTES.txt lacks %q:\n%s", want, f.notes)
		}
	}
}

// TestStrictDecodeCatchesTypos: a misspelled field anywhere in a manifest
// fails, including in values the schema passes through free-form.
func TestStrictDecodeCatchesTypos(t *testing.T) {
	ch := loadChart(t)
	out, err := Render(ch, mustYAML(t, `extraEnv: [{name: X, valueFron: {fieldRef: {fieldPath: metadata.name}}}]`))
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	if _, err := Decode(out); err == nil || !strings.Contains(err.Error(), "valueFron") {
		t.Errorf("extraEnv typo: want an unknown-field error naming valueFron, got %v", err)
	}
	out, err = Render(ch, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range out {
		if strings.HasSuffix(name, "statefulset.yaml") {
			out[name] = strings.Replace(s, "terminationGracePeriodSeconds:", "terminationGracePeriodSecond:", 1)
		}
		if strings.HasSuffix(name, "service-headless.yaml") {
			out[name] = strings.Replace(s, "publishNotReadyAddresses:", "publishNotReadyAdresses:", 1)
		}
		if strings.HasSuffix(name, "pdb.yaml") {
			// Only the case is wrong: encoding/json would accept it.
			out[name] = strings.Replace(s, "maxUnavailable:", "maxunavailable:", 1)
		}
	}
	_, err = Decode(out)
	for _, want := range []string{"terminationGracePeriodSecond", "publishNotReadyAdresses", "maxunavailable"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want an unknown-field error naming %s, got %v", want, err)
		}
	}
	sm := "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata: {name: x}\nspec:\n  endpoints: [{port: admin, interval: 30s, honorLabel: true}]\n"
	if _, err := Decode(map[string]string{"x/templates/sm.yaml": sm}); err == nil || !strings.Contains(err.Error(), "honorLabel") {
		t.Errorf("ServiceMonitor typo: got %v", err)
	}
	if _, err := Decode(map[string]string{"x/templates/d.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n"}); err == nil {
		t.Error("a kind without a strict decoder must be an error")
	}
}

// TestSchemaRejects: Helm's own schema validation (chartutil.ToRenderValues,
// as in install/upgrade/template) refuses unknown keys at every level and
// bad values; free-form maps stay free.
func TestSchemaRejects(t *testing.T) {
	ch := loadChart(t)
	bad := map[string]string{
		"top-level typo":          "replicaCont: 3",
		"nested typo":             "redis: {adress: redis:6379}",
		"deep typo":               "metrics: {serviceMonitor: {enable: true}}",
		"secret ref typo":         "admin: {token: {existingSecret: s, keys: t}}",
		"image typo":              "image: {tags: v1}",
		"pdb typo":                "podDisruptionBudget: {minAvailable: 1}",
		"wrong type":              `replicaCount: "3"`,
		"zero replicas":           "replicaCount: 0",
		"grace below drain":       "terminationGracePeriodSeconds: 10",
		"bad port":                "admin: {port: 70000}",
		"bad pull policy":         "image: {pullPolicy: Sometimes}",
		"redis addr without port": "redis: {addr: redis}",
		"annotation not string":   "podAnnotations: {a: 1}",
		"bad interval":            "metrics: {serviceMonitor: {interval: 30}}",
	}
	for name, doc := range bad {
		t.Run(name, func(t *testing.T) {
			_, err := Render(ch, mustYAML(t, doc))
			if err == nil || !strings.Contains(err.Error(), "schema") {
				t.Errorf("values %q: want a schema error, got %v", doc, err)
			}
		})
	}
	good := []string{
		"resources: {requests: {cpu: 2, ephemeral-storage: 1Gi}, limits: {memory: 4Gi}}",
		"podAnnotations: {anything.example.com/x: \"z\"}",
		"extraEnv: [{name: A, value: b}]",
		"affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: a, operator: Exists}]}]}}}",
		"podDisruptionBudget: {maxUnavailable: 25%}",
		"metrics: {serviceMonitor: {enabled: true, labels: {release: prom}, interval: \"\"}}",
		"job: {name: other, dead_letter: /tmp/dead.jsonl}",
	}
	for _, doc := range good {
		if _, err := Render(ch, mustYAML(t, doc)); err != nil {
			t.Errorf("values %q: %v", doc, err)
		}
	}
	// The same file a user would pass with -f.
	if _, err := Render(ch, readValues(t, "testdata/unknown-key-values.yaml")); err == nil ||
		!strings.Contains(err.Error(), "additional properties 'serviceMonitr' not allowed") {
		t.Errorf("testdata/unknown-key-values.yaml: want the schema to name serviceMonitr, got %v", err)
	}
}

// TestLint runs Helm's linter (what `helm lint --strict` runs) with each
// value set; warnings fail too.
func TestLint(t *testing.T) {
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			l := lint.AllWithKubeVersion(chartDir, readValues(t, vs.file), Release.Namespace, nil)
			for _, m := range l.Messages {
				if m.Severity >= support.WarningSev {
					t.Error(m.Error())
				} else {
					t.Log(m.Error())
				}
			}
		})
	}
	l := lint.AllWithKubeVersion(chartDir, readValues(t, "testdata/unknown-key-values.yaml"), Release.Namespace, nil)
	if l.HighestSeverity < support.ErrorSev {
		t.Errorf("lint passed values with an unknown key: %v", l.Messages)
	}
}

var (
	nodeOnce sync.Once
	nodeBin  string
	nodeErr  error
)

// nodeBinary builds the main module's node binary once per test run.
func nodeBinary(t *testing.T) string {
	t.Helper()
	nodeOnce.Do(func() {
		dir, err := os.MkdirTemp("", "chartcheck-node")
		if err != nil {
			nodeErr = err
			return
		}
		nodeBin = filepath.Join(dir, "joinery")
		cmd := exec.Command("go", "build", "-C", "../..", "-o", nodeBin, "./cmd/node")
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly -buildvcs=false")
		if out, err := cmd.CombinedOutput(); err != nil {
			nodeErr = err
			t.Logf("go build ./cmd/node:\n%s", out)
		}
	})
	if nodeErr != nil {
		t.Fatalf("build node: %v", nodeErr)
	}
	return nodeBin
}

// podEnv is the environment a pod of the StatefulSet gets: literal values,
// field references resolved as for pod 0, and stand-ins for Secrets.
func podEnv(t *testing.T, sts *appsv1.StatefulSet) []string {
	t.Helper()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for _, e := range sts.Spec.Template.Spec.Containers[0].Env {
		val := e.Value
		switch {
		case e.ValueFrom == nil:
		case e.ValueFrom.FieldRef != nil:
			switch e.ValueFrom.FieldRef.FieldPath {
			case "metadata.name":
				val = sts.Name + "-0"
			case "metadata.namespace":
				val = Release.Namespace
			case "status.podIP":
				val = "10.42.0.7"
			default:
				t.Fatalf("env %s: unexpected fieldRef %s", e.Name, e.ValueFrom.FieldRef.FieldPath)
			}
		case e.ValueFrom.SecretKeyRef != nil:
			val = "c2VjcmV0LXNlY3JldC0xNg==" // base64 of 16 bytes ("secret-secret-16"): also a valid gossip key (check decodes it as run does)
		default:
			t.Fatalf("env %s: unexpected valueFrom", e.Name)
		}
		env = append(env, e.Name+"="+val)
	}
	return env
}

// checkJob runs `node check` on the rendered job.yaml with the pod's env and
// returns the effective spec it prints.
func checkJob(t *testing.T, f fleet) (map[string]any, error) {
	t.Helper()
	bin := nodeBinary(t)
	path := filepath.Join(t.TempDir(), "job.yaml")
	if err := os.WriteFile(path, []byte(f.cm.Data["job.yaml"]), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "check", "--config", path)
	cmd.Env = podEnv(t, f.sts)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, &checkError{err: err, out: string(out)}
	}
	first, rest, _ := strings.Cut(string(out), "\n")
	if first != path+": ok" {
		t.Fatalf("node check printed %q", first)
	}
	var spec map[string]any
	if err := yaml.Unmarshal([]byte(rest), &spec); err != nil {
		t.Fatalf("node check output: %v\n%s", err, rest)
	}
	return spec, nil
}

type checkError struct {
	err error
	out string
}

func (e *checkError) Error() string { return e.err.Error() + ": " + e.out }

// TestJobFileValid: the ConfigMap's job.yaml passes the node's own
// validation with the pod environment, and the JOINERY_* overrides land.
func TestJobFileValid(t *testing.T) {
	ch := loadChart(t)
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			f := render(t, ch, readValues(t, vs.file))
			spec, err := checkJob(t, f)
			if err != nil {
				t.Fatalf("node check rejected the rendered job.yaml:\n%v\n%s", err, f.cm.Data["job.yaml"])
			}
			get := func(path string) any {
				v, _ := chartutil.Values(spec).PathValue(path)
				return v
			}
			merged, _ := chartutil.CoalesceValues(ch, readValues(t, vs.file))
			redisAddr, _ := merged.PathValue("redis.addr")
			for path, want := range map[string]any{
				"state.store":       "redis",
				"state.redis.addr":  redisAddr,
				"cluster.node_name": f.sts.Name + "-0",
				"cluster.advertise": "10.42.0.7",
				"cluster.gossip":    "0.0.0.0:7946",
				"cluster.remote":    "0.0.0.0:8090",
				"admin.addr":        "0.0.0.0:8081",
			} {
				if got := get(path); got != want {
					t.Errorf("%s = %v, want %v", path, got, want)
				}
			}
			if vs.name == "default" {
				// The default job ingests on every pod: shard streams.
				srcs, _ := get("sources").([]any)
				if len(srcs) != 1 {
					t.Fatalf("sources = %v, want one", srcs)
				}
				if src, _ := srcs[0].(map[string]any); fmt.Sprintf("%v %v", src["type"], src["shards"]) != "redis-stream 16" {
					t.Errorf("default source = %v, want a redis-stream source of 16 shards", src)
				}
			}
			seeds, _ := get("cluster.seeds").([]any)
			want := 3 // seedCount 3 (default and full), replicaCount 3
			if len(seeds) != want || !strings.HasPrefix(seeds[0].(string), f.sts.Name+"-0."+f.sts.Spec.ServiceName+":") {
				t.Errorf("cluster.seeds = %v, want %d seeds starting at pod 0", seeds, want)
			}
		})
	}
	t.Run("invalid job is caught", func(t *testing.T) {
		f := render(t, ch, mustYAML(t, "job: {join: {mode: sideways}}"))
		if _, err := checkJob(t, f); err == nil || !strings.Contains(err.Error(), "join.mode") {
			t.Errorf("want node check to reject join.mode, got %v", err)
		}
	})
	t.Run("string job used verbatim", func(t *testing.T) {
		job := `name: verbatim
join: {type: cdc, left: {name: a, pk: id, join_on: id}, right: {name: b, pk: id, join_on: a_id}}
state: {store: redis, redis: {addr: "placeholder:6379"}}
cluster: {gossip: "0.0.0.0:7946", remote: "0.0.0.0:8090", secret_key: "${JOINERY_GOSSIP_KEY}", insecure: true}
`
		// (insecure: the chart's remoting TLS files are not on this machine,
		// and check, like run, refuses remoting in the clear off loopback.)
		f := render(t, ch, map[string]any{"job": job})
		if strings.TrimSpace(f.cm.Data["job.yaml"]) != strings.TrimSpace(job) {
			t.Errorf("string job not verbatim: %q", f.cm.Data["job.yaml"])
		}
		spec, err := checkJob(t, f)
		if err != nil {
			t.Fatal(err)
		}
		if v, _ := chartutil.Values(spec).PathValue("state.redis.addr"); v != "redis-master:6379" {
			t.Errorf("JOINERY_REDIS_ADDR did not override state.redis.addr: %v", v)
		}
	})
}
