// Package chartcheck renders the Joinery Helm chart (deploy/helm/joinery)
// with Helm's own libraries and decodes every rendered manifest strictly
// into its Kubernetes type, so that a misspelled or misplaced field fails
// instead of being dropped by the API server. Its tests are the chart's CI
// check (`make chart-check`); it is a separate module so the main module
// does not depend on Helm and client-go.
package chartcheck

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Release is the release the chart is rendered as.
var Release = chartutil.ReleaseOptions{Name: "prod", Namespace: "stream", Revision: 1, IsInstall: true}

// LoadChart loads the chart directory.
func LoadChart(dir string) (*chart.Chart, error) { return loader.Load(dir) }

// Render renders ch with user values vals (nil: the chart's defaults) the way
// `helm template` does, schema validation included. It returns the rendered
// files by name (NOTES.txt included, partials and empty files left out).
func Render(ch *chart.Chart, vals map[string]any) (map[string]string, error) {
	rv, err := chartutil.ToRenderValues(ch, vals, Release, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	out, err := engine.Render(ch, rv)
	if err != nil {
		return nil, err
	}
	for name, s := range out {
		if strings.TrimSpace(s) == "" {
			delete(out, name)
		}
	}
	return out, nil
}

// Object is one rendered manifest decoded into its type: *appsv1.StatefulSet,
// *corev1.Service, *corev1.ConfigMap, *policyv1.PodDisruptionBudget,
// *ServiceMonitor, *PrometheusRule or *ScaledObject.
type Object struct {
	Source string // template file
	Kind   string
	Name   string
	Obj    any
}

// kinds maps apiVersion/kind to a new typed object. Anything else the chart
// renders is an error, so a new kind gets a strict decoder here first.
var kinds = map[string]func() any{
	"apps/v1/StatefulSet":                     func() any { return &appsv1.StatefulSet{} },
	"v1/Service":                              func() any { return &corev1.Service{} },
	"v1/ConfigMap":                            func() any { return &corev1.ConfigMap{} },
	"v1/Secret":                               func() any { return &corev1.Secret{} },
	"networking.k8s.io/v1/NetworkPolicy":      func() any { return &networkingv1.NetworkPolicy{} },
	"policy/v1/PodDisruptionBudget":           func() any { return &policyv1.PodDisruptionBudget{} },
	"monitoring.coreos.com/v1/ServiceMonitor": func() any { return &ServiceMonitor{} },
	"monitoring.coreos.com/v1/PrometheusRule": func() any { return &PrometheusRule{} },
	"keda.sh/v1alpha1/ScaledObject":           func() any { return &ScaledObject{} },
}

// Decode splits every rendered template (not NOTES.txt) into documents and
// decodes each strictly: unknown or duplicate fields are errors.
func Decode(rendered map[string]string) ([]Object, error) {
	names := make([]string, 0, len(rendered))
	for name := range rendered {
		names = append(names, name)
	}
	sort.Strings(names)
	var objs []Object
	var errs []string
	for _, name := range names {
		if strings.HasSuffix(name, "NOTES.txt") {
			continue
		}
		docs := releaseutil.SplitManifests(rendered[name])
		keys := make([]string, 0, len(docs))
		for k := range docs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			doc := docs[k]
			var head struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
				Metadata   struct {
					Name string `json:"name"`
				} `json:"metadata"`
			}
			if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
				errs = append(errs, fmt.Sprintf("%s: not YAML: %v", name, err))
				continue
			}
			if head.APIVersion == "" && head.Kind == "" {
				continue // comments only
			}
			gvk := head.APIVersion + "/" + head.Kind
			mk, ok := kinds[gvk]
			if !ok {
				errs = append(errs, fmt.Sprintf("%s: no strict decoder for %s", name, gvk))
				continue
			}
			obj := mk()
			if err := UnmarshalStrict([]byte(doc), obj); err != nil {
				errs = append(errs, fmt.Sprintf("%s: %s %s: %v", name, head.Kind, head.Metadata.Name, err))
				continue
			}
			objs = append(objs, Object{Source: name, Kind: head.Kind, Name: head.Metadata.Name, Obj: obj})
		}
	}
	if len(errs) > 0 {
		return objs, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return objs, nil
}

// UnmarshalStrict converts YAML to JSON (duplicate keys are errors) and
// decodes it into obj the way the API server does, with sigs.k8s.io/json:
// field names match case-sensitively, and unknown or duplicate fields at any
// depth are errors. (encoding/json's DisallowUnknownFields alone is not
// enough: it matches names case-insensitively, so `readonly:` would pass for
// `readOnly:` and then be dropped by the API server.) A value of the wrong
// type fails too.
func UnmarshalStrict(doc []byte, obj any) error {
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	strict, err := kjson.UnmarshalStrict(j, obj)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

// ServiceMonitor is the part of monitoring.coreos.com/v1 ServiceMonitor the
// chart uses; the chart must not render fields outside it (there is no
// Kubernetes Go type for it without importing the Prometheus Operator).
type ServiceMonitor struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       struct {
		JobLabel          string `json:"jobLabel,omitempty"`
		NamespaceSelector struct {
			Any        bool     `json:"any,omitempty"`
			MatchNames []string `json:"matchNames,omitempty"`
		} `json:"namespaceSelector"`
		Selector  metav1.LabelSelector `json:"selector"`
		Endpoints []struct {
			Port          string `json:"port"`
			Path          string `json:"path,omitempty"`
			Scheme        string `json:"scheme,omitempty"`
			Interval      string `json:"interval,omitempty"`
			ScrapeTimeout string `json:"scrapeTimeout,omitempty"`
		} `json:"endpoints"`
	} `json:"spec"`
}

// PrometheusRule is the part of monitoring.coreos.com/v1 PrometheusRule the
// chart uses. Its spec is a Prometheus rules file's content (groups).
type PrometheusRule struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       RulesFile         `json:"spec"`
}

// RulesFile is a Prometheus rules file (rule_files:), as far as the chart's
// rules use it.
type RulesFile struct {
	Groups []RuleGroup `json:"groups"`
}

// RuleGroup is one group of a rules file.
type RuleGroup struct {
	Name     string `json:"name"`
	Interval string `json:"interval,omitempty"`
	Rules    []Rule `json:"rules"`
}

// Rule is an alerting or a recording rule.
type Rule struct {
	Alert       string            `json:"alert,omitempty"`
	Record      string            `json:"record,omitempty"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ScaledObject is the part of KEDA's keda.sh/v1alpha1 ScaledObject the
// chart uses (KEDA's Go types are not imported); its HPA behavior is the
// Kubernetes type, so a misspelled policy field fails too.
type ScaledObject struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       struct {
		ScaleTargetRef struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Name       string `json:"name"`
		} `json:"scaleTargetRef"`
		MinReplicaCount int32 `json:"minReplicaCount"`
		MaxReplicaCount int32 `json:"maxReplicaCount"`
		PollingInterval int32 `json:"pollingInterval"`
		CooldownPeriod  int32 `json:"cooldownPeriod"`
		Advanced        struct {
			HorizontalPodAutoscalerConfig struct {
				Behavior autoscalingv2.HorizontalPodAutoscalerBehavior `json:"behavior"`
			} `json:"horizontalPodAutoscalerConfig"`
		} `json:"advanced"`
		Triggers []struct {
			Type       string            `json:"type"`
			MetricType string            `json:"metricType,omitempty"`
			Metadata   map[string]string `json:"metadata"`
		} `json:"triggers"`
	} `json:"spec"`
}
