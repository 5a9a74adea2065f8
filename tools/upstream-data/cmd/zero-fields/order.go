package main

import (
	"bufio"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

const orderCommand = "go run ./cmd/zero-fields -order-o ../../crates/apimachinery/data/go-member-order.tsv"

const orderHeader = `# The order in which Go's encoding/json writes the members of every struct
# of the built-in kinds (a struct's fields in declaration order, embedded
# structs' fields in their place), which is the order of kube-apiserver's
# JSON. kubext keeps objects as JSON maps (members sorted by name) and
# writes each built-in object's members in this order.
# Rows:
#   kind  <apiVersion>  <Kind>  <type>      an object's root type
#   type  <type>  <member> <member>...      a struct's members, in order
# A member is its JSON name, followed by ":" and the type of its value when
# that holds structs: the struct's type, after "[]" for every item of an
# array and "{}" for every value of a map (` + "`containers:[]core/v1.Container`" + `).
# Scalars, and types with their own marshaller (Time, Quantity,
# IntOrString, RawExtension, JSON), have no type: a map's keys are sorted,
# as Go sorts them. A type is named <package's last two elements>.<Name>.
# A root type's members start with kind and apiVersion (TypeMeta's).
# Kinds: every kind of k8s.io/client-go's scheme plus apiextensions.k8s.io
# and apiregistration.k8s.io (lists, *Options and meta/v1 kinds left out).
# Generated from k8s.io/api v0.37.2 (and apiextensions-apiserver,
# kube-aggregator v0.37.2) by tools/upstream-data:
#   cd tools/upstream-data && ` + orderCommand + `
`

// typeName names a struct type by its package's last two path elements
// (core/v1.Container, meta/v1.ObjectMeta).
func typeName(t reflect.Type) string {
	parts := strings.Split(t.PkgPath(), "/")
	if len(parts) > 2 {
		parts = parts[len(parts)-2:]
	}
	return strings.Join(parts, "/") + "." + t.Name()
}

// orderTable collects the member order of struct types.
type orderTable struct {
	// members of each type, by name.
	types map[string][]string
	// byName catches two Go types given one name.
	byName map[string]reflect.Type
}

// valueType returns the type reference of a value of type t: "" when it
// holds no struct encoding/json walks, else its struct's name behind "[]"
// and "{}" wrappers; it records every struct met.
func (o *orderTable) valueType(t reflect.Type) (string, error) {
	prefix := ""
	for {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if hasCustomMarshaler(t) {
			return "", nil
		}
		switch t.Kind() {
		case reflect.Slice, reflect.Array:
			if t.Elem().Kind() == reflect.Uint8 {
				return "", nil // []byte: a base64 string
			}
			prefix += "[]"
			t = t.Elem()
			continue
		case reflect.Map:
			prefix += "{}"
			t = t.Elem()
			continue
		case reflect.Struct:
			name, err := o.add(t)
			if err != nil {
				return "", err
			}
			return prefix + name, nil
		}
		return "", nil
	}
}

// add records struct type t and the structs inside it, returning t's name.
func (o *orderTable) add(t reflect.Type) (string, error) {
	name := typeName(t)
	if other, ok := o.byName[name]; ok {
		if other != t {
			return "", fmt.Errorf("two types named %s: %v and %v", name, other, t)
		}
		return name, nil
	}
	o.byName[name] = t
	o.types[name] = nil // recursive types stop here
	var members []string
	for _, f := range typeFields(t) {
		ref, err := o.valueType(f.typ)
		if err != nil {
			return "", err
		}
		if strings.ContainsAny(f.name, " :\t") {
			return "", fmt.Errorf("%v: member %q cannot be written in the table", t, f.name)
		}
		if ref != "" {
			members = append(members, f.name+":"+ref)
		} else {
			members = append(members, f.name)
		}
	}
	o.types[name] = members
	return name, nil
}

// writeOrder writes the member-order table of kinds.
func writeOrder(out io.Writer, kinds []schema.GroupVersionKind) error {
	s := Scheme()
	types := s.AllKnownTypes()
	o := &orderTable{types: map[string][]string{}, byName: map[string]reflect.Type{}}
	bw := bufio.NewWriter(out)
	bw.WriteString(orderHeader)
	// metav1.Status too: every DELETE answers one (and every error is one).
	kinds = append(kinds[:len(kinds):len(kinds)], schema.GroupVersionKind{Version: "v1", Kind: "Status"})
	for _, gvk := range kinds {
		root, err := o.add(types[gvk])
		if err != nil {
			return fmt.Errorf("%v: %w", gvk, err)
		}
		fmt.Fprintf(bw, "kind\t%s\t%s\t%s\n", gvk.GroupVersion().String(), gvk.Kind, root)
	}
	names := make([]string, 0, len(o.types))
	for name := range o.types {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(bw, "type\t%s\t%s\n", name, strings.Join(o.types[name], " "))
	}
	return bw.Flush()
}
