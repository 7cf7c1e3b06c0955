package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// loadFile reads Services and EndpointSlices from a YAML or JSON file: a
// List, single objects, or several documents.
func loadFile(name string) (objects, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return objects{}, err
	}
	o := objects{services: map[string]*v1.Service{}, slices: map[string]*discovery.EndpointSlice{}}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for doc := 0; ; doc++ {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return o, nil
			}
			return objects{}, fmt.Errorf("%s: document %d: %w", name, doc, err)
		}
		if u.Object == nil {
			continue
		}
		if err := o.add(&u); err != nil {
			return objects{}, fmt.Errorf("%s: document %d: %w", name, doc, err)
		}
	}
}

func (o *objects) add(u *unstructured.Unstructured) error {
	conv := runtime.DefaultUnstructuredConverter
	switch u.GetKind() {
	case "List", "ServiceList", "EndpointSliceList":
		items, ok := u.Object["items"].([]any)
		if !ok && u.Object["items"] != nil {
			return fmt.Errorf("%s: items is not a list", u.GetKind())
		}
		for i, it := range items {
			m, ok := it.(map[string]any)
			if !ok {
				return fmt.Errorf("%s: item %d is not an object", u.GetKind(), i)
			}
			if err := o.add(&unstructured.Unstructured{Object: m}); err != nil {
				return fmt.Errorf("item %d: %w", i, err)
			}
		}
	case "Service":
		s := &v1.Service{}
		if err := conv.FromUnstructured(u.Object, s); err != nil {
			return fmt.Errorf("Service %s/%s: %w", u.GetNamespace(), u.GetName(), err)
		}
		o.services[s.Namespace+"/"+s.Name] = s
	case "EndpointSlice":
		s := &discovery.EndpointSlice{}
		if err := conv.FromUnstructured(u.Object, s); err != nil {
			return fmt.Errorf("EndpointSlice %s/%s: %w", u.GetNamespace(), u.GetName(), err)
		}
		o.slices[s.Namespace+"/"+s.Name] = s
	}
	return nil
}
