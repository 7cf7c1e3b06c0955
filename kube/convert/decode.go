package convert

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"
)

// Decode reads Services and EndpointSlices as `kubectl get -o yaml` or
// `-o json` writes them: a List (kind List, ServiceList or
// EndpointSliceList) with items, several YAML documents separated by "---",
// a stream of JSON objects, or single objects. Objects of other kinds and
// versions are ignored, as are empty documents. Fields are matched
// case-sensitively and unknown fields are ignored, as the API machinery
// does. An object that does not parse is an error naming its document (from
// 0), its item in a List, and its kind.
func Decode(r io.Reader) ([]*corev1.Service, []*discoveryv1.EndpointSlice, error) {
	d := &decoder{}
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	for doc := 0; ; doc++ {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return d.svcs, d.slices, nil
		}
		if err != nil {
			return nil, nil, fmt.Errorf("convert: document %d: %w", doc, err)
		}
		if err := d.object(raw, fmt.Sprintf("document %d", doc), "", 0); err != nil {
			return nil, nil, err
		}
	}
}

type decoder struct {
	svcs   []*corev1.Service
	slices []*discoveryv1.EndpointSlice
}

// head is what an object says about itself before it is decoded whole.
type head struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// meta is an object's name, for errors.
type meta struct {
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
}

type list struct {
	Items []json.RawMessage `json:"items"`
}

// maxListDepth bounds Lists within Lists, which kubectl never writes.
const maxListDepth = 4

// object decodes one object at where; kind is the kind its List implies for
// an item that names none.
func (d *decoder) object(raw json.RawMessage, where, kind string, depth int) error {
	if string(raw) == "null" || len(raw) == 0 {
		return nil // an empty document
	}
	var h head
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, &h); err != nil {
		return fmt.Errorf("convert: %s is not a Kubernetes object: %w", where, err)
	}
	if h.Kind == "" {
		h.Kind = kind
	}
	fail := func(err error) error {
		name := h.Kind
		var m meta
		if sigsjson.UnmarshalCaseSensitivePreserveInts(raw, &m) == nil && m.Metadata.Name != "" {
			name += " " + m.Metadata.Namespace + "/" + m.Metadata.Name
		}
		return fmt.Errorf("convert: %s (%s): %w", where, name, err)
	}
	switch {
	case h.Kind == "List" || h.Kind == "ServiceList" || h.Kind == "EndpointSliceList":
		if depth >= maxListDepth {
			return fail(errors.New("lists nested too deep"))
		}
		var l list
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, &l); err != nil {
			return fail(err)
		}
		item := map[string]string{"ServiceList": "Service", "EndpointSliceList": "EndpointSlice"}[h.Kind]
		for i, it := range l.Items {
			if err := d.object(it, fmt.Sprintf("%s items[%d]", where, i), item, depth+1); err != nil {
				return err
			}
		}
	case h.Kind == "Service" && (h.APIVersion == "v1" || h.APIVersion == "" && kind == "Service"):
		s := &corev1.Service{}
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, s); err != nil {
			return fail(err)
		}
		d.svcs = append(d.svcs, s)
	case h.Kind == "EndpointSlice" && (h.APIVersion == discoveryv1.SchemeGroupVersion.String() || h.APIVersion == "" && kind == "EndpointSlice"):
		s := &discoveryv1.EndpointSlice{}
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, s); err != nil {
			return fail(err)
		}
		d.slices = append(d.slices, s)
	}
	return nil
}
