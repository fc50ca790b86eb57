package chartcheck

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

func metav1Selector(s *metav1.LabelSelector) (labels.Selector, error) {
	if s == nil {
		return nil, fmt.Errorf("no selector")
	}
	return metav1.LabelSelectorAsSelector(s)
}

func metav1LabelSelector(sts *appsv1.StatefulSet) (labels.Selector, error) {
	return metav1Selector(sts.Spec.Selector)
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case float64:
		return x
	}
	return -1
}
