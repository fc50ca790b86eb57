package chartcheck

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"slices"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// TestSecurityRender: every render encrypts gossip and runs remoting over
// mutual TLS — from the named Secrets, or from ones the chart generates (a
// 32-byte gossip key; a CA and a certificate it signed for server and
// client auth) — and a NetworkPolicy admits gossip and remoting only from
// the release's own pods.
func TestSecurityRender(t *testing.T) {
	ch := loadChart(t)
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			vals := readValues(t, vs.file)
			out, err := Render(ch, vals)
			if err != nil {
				t.Fatal(err)
			}
			objs, err := Decode(out)
			if err != nil {
				t.Fatal(err)
			}
			f := render(t, ch, vals)
			merged, _ := chartutil.CoalesceValues(ch, vals)
			secrets := map[string]*corev1.Secret{}
			var np *networkingv1.NetworkPolicy
			for _, o := range objs {
				switch x := o.Obj.(type) {
				case *corev1.Secret:
					secrets[x.Name] = x
				case *networkingv1.NetworkPolicy:
					np = x
				}
			}
			pod := f.sts.Spec.Template
			c := pod.Spec.Containers[0]

			// The gossip key: JOINERY_GOSSIP_KEY from a Secret, always.
			var ref *corev1.SecretKeySelector
			for _, e := range c.Env {
				if e.Name == "JOINERY_GOSSIP_KEY" && e.ValueFrom != nil {
					ref = e.ValueFrom.SecretKeyRef
				}
			}
			if ref == nil {
				t.Fatal("no JOINERY_GOSSIP_KEY from a Secret: gossip would run in the clear")
			}
			given, _ := merged.PathValue("cluster.secretKey.existingSecret")
			if given == "" {
				s, ok := secrets[ref.Name]
				if !ok {
					t.Fatalf("JOINERY_GOSSIP_KEY names Secret %s, which the chart does not render", ref.Name)
				}
				key, err := base64.StdEncoding.DecodeString(string(s.Data[ref.Key]))
				if err != nil || len(key) != 32 {
					t.Errorf("generated gossip key: %d bytes (%v), want base64 of 32", len(key), err)
				}
				if s.Annotations["helm.sh/resource-policy"] != "keep" {
					t.Error("generated gossip Secret is not kept")
				}
			} else if ref.Name != given {
				t.Errorf("JOINERY_GOSSIP_KEY from %s, values name %v", ref.Name, given)
			}

			// Remoting TLS: a Secret volume at /etc/joinery-tls, named by the job.
			var vol *corev1.Volume
			for i := range pod.Spec.Volumes {
				if pod.Spec.Volumes[i].Name == "remoting-tls" {
					vol = &pod.Spec.Volumes[i]
				}
			}
			if vol == nil || vol.Secret == nil || !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
				return m.Name == "remoting-tls" && m.MountPath == "/etc/joinery-tls" && m.ReadOnly
			}) {
				t.Fatal("no read-only remoting-tls Secret volume at /etc/joinery-tls")
			}
			if given, _ := merged.PathValue("cluster.tls.existingSecret"); given == "" {
				s, ok := secrets[vol.Secret.SecretName]
				if !ok {
					t.Fatalf("remoting-tls names Secret %s, which the chart does not render", vol.Secret.SecretName)
				}
				checkGeneratedTLS(t, s)
			} else if vol.Secret.SecretName != given || len(vol.Secret.Items) != 3 {
				t.Errorf("remoting-tls from %s (%d items), values name %v", vol.Secret.SecretName, len(vol.Secret.Items), given)
			}
			spec, err := checkJob(t, f)
			if err != nil {
				t.Fatal(err)
			}
			for path, want := range map[string]string{
				"cluster.tls.ca_file":   "/etc/joinery-tls/ca.crt",
				"cluster.tls.cert_file": "/etc/joinery-tls/tls.crt",
				"cluster.tls.key_file":  "/etc/joinery-tls/tls.key",
			} {
				if got, _ := chartutil.Values(spec).PathValue(path); got != want {
					t.Errorf("job %s = %v, want %s", path, got, want)
				}
			}
			if got, _ := chartutil.Values(spec).PathValue("cluster.insecure"); got == true {
				t.Error("the chart's job runs insecure")
			}

			// NetworkPolicy: gossip and remoting from the release's pods only.
			if np == nil {
				t.Fatal("no NetworkPolicy")
			}
			podLabels := labels.Set(pod.Labels)
			if s, err := metav1Selector(&np.Spec.PodSelector); err != nil || !s.Matches(podLabels) {
				t.Fatalf("NetworkPolicy does not select the pods (%v)", err)
			}
			for _, port := range []string{"gossip", "gossip-udp", "remoting"} {
				for _, rule := range np.Spec.Ingress {
					if !slices.ContainsFunc(rule.Ports, func(p networkingv1.NetworkPolicyPort) bool { return p.Port != nil && p.Port.String() == port }) {
						continue
					}
					if len(rule.From) == 0 {
						t.Errorf("port %s is open to anyone", port)
					}
					for _, peer := range rule.From {
						s, err := metav1Selector(peer.PodSelector)
						if err != nil || peer.NamespaceSelector != nil || peer.IPBlock != nil || !s.Matches(podLabels) || s.Empty() {
							t.Errorf("port %s admits %+v, not only the release's pods", port, peer)
						}
					}
				}
			}
		})
	}
}

func checkGeneratedTLS(t *testing.T, s *corev1.Secret) {
	t.Helper()
	if s.Annotations["helm.sh/resource-policy"] != "keep" {
		t.Error("generated remoting TLS Secret is not kept")
	}
	parse := func(k string) *x509.Certificate {
		b, _ := pem.Decode(s.Data[k])
		if b == nil {
			t.Fatalf("%s: no PEM", k)
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		return c
	}
	ca, cert := parse("ca.crt"), parse("tls.crt")
	if b, _ := pem.Decode(s.Data["tls.key"]); b == nil {
		t.Fatal("tls.key: no PEM")
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	for _, u := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{u}}); err != nil {
			t.Errorf("generated certificate for usage %v: %v", u, err)
		}
	}
}
