package main

import (
	"bufio"
	"fmt"
	"io"
	"reflect"
	"sort"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const quantityCommand = "go run ./cmd/zero-fields -quantity-o ../../crates/registry/data/go-quantity-fields.tsv"

const quantityHeader = `# Fields of kube-apiserver 1.37's built-in kinds that hold a
# resource.Quantity. kube-apiserver decodes a request into Go types, and
# Quantity's MarshalJSON writes its canonical text (a string, whether the
# request had a string or a number: "1024Mi" is written "1Gi", 0.5 "500m"),
# so what it stores and serves is canonical.
# One row per field of every kind the zero-field table covers; path as
# there: a JSON field path from the object root, "[]" every item of an
# array, "{}" every value of a map (a ResourceList's quantities).
# Generated from k8s.io/api v0.37.2 (and apiextensions-apiserver,
# kube-aggregator v0.37.2) by tools/upstream-data:
#   cd tools/upstream-data && ` + quantityCommand + `
# Columns: group (core for the legacy group), version, kind, path.
`

var quantityType = reflect.TypeFor[resource.Quantity]()

// QuantityPaths returns the paths of t's fields (at any depth) that hold a
// resource.Quantity, sorted.
func QuantityPaths(t reflect.Type) []string {
	var paths []string
	quantityWalk(t, "", nil, &paths)
	sort.Strings(paths)
	return paths
}

func quantityWalk(t reflect.Type, path string, stack []reflect.Type, paths *[]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == quantityType {
		*paths = append(*paths, path)
		return
	}
	if hasCustomMarshaler(t) {
		return
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		quantityWalk(t.Elem(), path+"[]", stack, paths)
		return
	case reflect.Map:
		quantityWalk(t.Elem(), path+"{}", stack, paths)
		return
	case reflect.Struct:
	default:
		return
	}
	for _, s := range stack {
		if s == t {
			return // a recursive type (JSONSchemaProps) holds no quantity
		}
	}
	stack = append(stack, t)
	for _, f := range typeFields(t) {
		quantityWalk(f.typ, join(path, f.name), stack, paths)
	}
}

func writeQuantities(out io.Writer, kinds []schema.GroupVersionKind) error {
	s := Scheme()
	types := s.AllKnownTypes()
	bw := bufio.NewWriter(out)
	bw.WriteString(quantityHeader)
	for _, gvk := range kinds {
		for _, p := range QuantityPaths(types[gvk]) {
			fmt.Fprintf(bw, "%s\t%s\t%s\t%s\n", groupName(gvk.Group), gvk.Version, gvk.Kind, p)
		}
	}
	return bw.Flush()
}
