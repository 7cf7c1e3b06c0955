package deploy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/ipvskit/ipvskit/kube/agent"
	"github.com/ipvskit/ipvskit/kube/internal/apiservertest"
)

// cases are the two deployments: the agent's manifest and its uninstall
// Job's.
var cases = []struct{ name, install, uninstall string }{
	{"take over kube-proxy", "takeover.yaml", "takeover-uninstall.yaml"},
	{"no kube-proxy, nftables", "nftables.yaml", "nftables-uninstall.yaml"},
}

// TestManifestsDryRun applies every object of every manifest to the test
// API server as a server-side dry run with strict field validation: a field
// the API does not know, a value it refuses or a missing required one fails
// the test. Nothing is stored.
func TestManifestsDryRun(t *testing.T) {
	srv := apiservertest.Start(t)
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(srv.Client().Discovery()))
	waitForNamespace(t, srv, "kube-system")
	for _, c := range cases {
		for _, file := range []string{c.install, c.uninstall} {
			for _, o := range objects(t, file) {
				what := file + ": " + o.GetKind() + " " + o.GetName() + o.GetGenerateName()
				gvk := o.GroupVersionKind()
				m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
				if err != nil {
					t.Errorf("%s: %v", what, err)
					continue
				}
				r := dyn.Resource(m.Resource).Namespace(o.GetNamespace())
				if o.GetName() == "" {
					// generateName (one Job per node): kubectl create.
					_, err = r.Create(ctx, o, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"})
				} else {
					_, err = r.Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: "ipvskit-deploy-test", DryRun: []string{metav1.DryRunAll}})
				}
				if err != nil {
					t.Errorf("%s: server-side dry run: %v", what, err)
				}
			}
		}
	}
	// A dry run stores nothing.
	if _, err := srv.Client().AppsV1().DaemonSets("kube-system").Get(ctx, "ipvskit-proxy", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after the dry runs, Get DaemonSet ipvskit-proxy: %v, want not found", err)
	}
}

// TestManifestsShape checks what the API cannot: each agent runs with
// resources and a metrics port, its uninstall Job runs the same flags plus
// --cleanup with the same volumes, and a ConfigMap's
// KubeProxyConfiguration is one the agent reads without ignoring a field.
func TestManifestsShape(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var ds *appsv1.DaemonSet
			for _, o := range objects(t, c.install) {
				switch o.GetKind() {
				case "DaemonSet":
					ds = new(appsv1.DaemonSet)
					convert(t, o, ds)
				case "ConfigMap":
					var cm corev1.ConfigMap
					convert(t, o, &cm)
					cfg, err := agent.LoadConfig(strings.NewReader(cm.Data["config.conf"]))
					if err != nil {
						t.Fatalf("ConfigMap %s: %v", cm.Name, err)
					}
					if len(cfg.Ignored)+len(cfg.Unknown) > 0 {
						t.Errorf("ConfigMap %s: ignored %v, unknown %v", cm.Name, cfg.Ignored, cfg.Unknown)
					}
				}
			}
			jobs := objects(t, c.uninstall)
			if ds == nil || len(jobs) != 1 || jobs[0].GetKind() != "Job" {
				t.Fatalf("want a DaemonSet in %s and one Job in %s", c.install, c.uninstall)
			}
			var job batchv1.Job
			convert(t, jobs[0], &job)
			a, u := ds.Spec.Template.Spec.Containers[0], job.Spec.Template.Spec.Containers[0]
			if want := append(slices.Clone(a.Args), "--cleanup"); !slices.Equal(u.Args, want) {
				t.Errorf("uninstall args %q, want the DaemonSet's plus --cleanup: %q", u.Args, want)
			}
			if u.Image != a.Image || !reflect.DeepEqual(u.VolumeMounts, a.VolumeMounts) {
				t.Errorf("uninstall image %s, mounts %v; want the DaemonSet's: %s, %v", u.Image, u.VolumeMounts, a.Image, a.VolumeMounts)
			}
			for _, k := range []corev1.Container{a, u} {
				if k.Resources.Requests.Memory().IsZero() || k.Resources.Limits.Memory().IsZero() || k.Resources.Requests.Cpu().IsZero() {
					t.Errorf("container %s: resources %v, want cpu and memory requests and a memory limit", k.Name, k.Resources)
				}
			}
			if !slices.ContainsFunc(a.Ports, func(p corev1.ContainerPort) bool { return p.Name == "metrics" && p.ContainerPort == 10249 }) {
				t.Errorf("agent ports %v, want metrics 10249", a.Ports)
			}
		})
	}
}

// objects reads every object of a manifest file.
func objects(t *testing.T, file string) []*unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	d := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var out []*unstructured.Unstructured
	for {
		o := &unstructured.Unstructured{}
		err := d.Decode(&o.Object)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if len(o.Object) > 0 {
			out = append(out, o)
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no objects", file)
	}
	return out
}

func convert(t *testing.T, o *unstructured.Unstructured, into any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, into, true); err != nil {
		t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
	}
}

// waitForNamespace waits for the API server's bootstrap to create ns.
func waitForNamespace(t *testing.T, srv *apiservertest.Server, ns string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		_, err := srv.Client().CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("namespace %s: %v", ns, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
