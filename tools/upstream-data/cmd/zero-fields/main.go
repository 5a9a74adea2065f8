// Command zero-fields writes go-zero-fields.tsv: for every built-in kind of
// kube-apiserver 1.37, the fields Go's encoding/json writes when they were
// absent from the input (non-omitempty fields and non-pointer structs), with
// the JSON it writes for them, and the fields it drops when they were present
// but empty (omitempty), with a token saying which values it drops.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	apiregistrationv1beta1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1beta1"
)

const command = "go run ./cmd/zero-fields -o ../../crates/registry/data/go-zero-fields.tsv"

const header = `# Fields kube-apiserver 1.37 writes although a request left them out, and
# fields it leaves out although a request had them. kube-apiserver decodes
# a request into Go types and encodes them with encoding/json, which
# - writes every field without omitempty (string "", number 0, bool false,
#   nil slice/map/pointer null) and every non-pointer struct, even with
#   omitempty (a plain struct as {}; a type with its own MarshalJSON as
#   what its zero value marshals to: metav1.Time and MicroTime null,
#   Quantity "0", IntOrString 0, RawExtension null);
# - drops a field with omitempty whose decoded value is empty: a string,
#   bool, number, slice or map (or a named type of one) that is "", false,
#   0 or of length 0, which null, "", false, 0, [] and {} all decode to;
#   a pointer or interface only when it is nil, which only null decodes to
#   (a pointer to {}, "" or 0 is written as such).
# One row per such field of every kind of k8s.io/client-go's scheme plus
# apiextensions.k8s.io and apiregistration.k8s.io (lists, *Options and
# meta/v1 kinds left out), given that its parent object is present. A member
# that is null in the input counts as absent (Go decodes null into a
# non-pointer as a no-op).
# path: JSON field path from the object root; "[]" is every item of an
# array, "{}" every value of a map; apiVersion and kind are left out. Rows
# of one kind are sorted by path, so a parent row precedes its children.
# zero: the JSON Go writes when the member is absent or null, or a token:
#   omitempty  Go drops the member when its value is null, "", 0, false,
#              [] or {} (a non-pointer string, bool, number, slice or map
#              with omitempty; none for types with their own marshaller);
#   omitnil    Go drops the member only when its value is null (a pointer
#              or interface with omitempty; other values are kept).
# A field has at most one row. JSONSchemaProps nests itself (properties{},
# patternProperties{}, definitions{}, allOf[], anyOf[], oneOf[], not); below
# a nested schema its rows are not repeated, although Go treats a nested
# schema like the outer one, and the schemas inside items,
# additionalProperties, additionalItems and dependencies{} (types with
# their own marshaller) have no rows.
# Generated from k8s.io/api v0.37.2 (and apiextensions-apiserver,
# kube-aggregator v0.37.2) by tools/upstream-data:
#   cd tools/upstream-data && ` + command + `
# Columns: group (core for the legacy group), version, kind, path, zero.
`

// Scheme holds every kind the table covers.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(apiextensionsv1beta1.AddToScheme(s))
	utilruntime.Must(apiregistrationv1.AddToScheme(s))
	utilruntime.Must(apiregistrationv1beta1.AddToScheme(s))
	return s
}

const metav1Pkg = "k8s.io/apimachinery/pkg/apis/meta/v1"

// Kinds returns the kinds of s the table covers, sorted.
func Kinds(s *runtime.Scheme) []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	for gvk, t := range s.AllKnownTypes() {
		switch {
		case gvk.Version == runtime.APIVersionInternal,
			t.PkgPath() == metav1Pkg, // WatchEvent, Status, *Options, APIGroup...
			strings.HasSuffix(gvk.Kind, "List"),
			strings.HasSuffix(gvk.Kind, "Options"),
			gvk.Kind == "WatchEvent":
			continue
		}
		out = append(out, gvk)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if groupName(a.Group) != groupName(b.Group) {
			return groupName(a.Group) < groupName(b.Group)
		}
		if a.Version != b.Version {
			return a.Version < b.Version
		}
		return a.Kind < b.Kind
	})
	return out
}

func groupName(g string) string {
	if g == "" {
		return "core"
	}
	return g
}

// Table returns the rows of every kind.
func Table(w *Walker) (map[schema.GroupVersionKind][]Row, []schema.GroupVersionKind, error) {
	s := Scheme()
	kinds := Kinds(s)
	all := map[schema.GroupVersionKind][]Row{}
	types := s.AllKnownTypes()
	for _, gvk := range kinds {
		rows, err := w.Rows(types[gvk])
		if err != nil {
			return nil, nil, fmt.Errorf("%v: %w", gvk, err)
		}
		all[gvk] = rows
	}
	return all, kinds, nil
}

func write(out io.Writer, all map[schema.GroupVersionKind][]Row, kinds []schema.GroupVersionKind) error {
	bw := bufio.NewWriter(out)
	bw.WriteString(header)
	for _, gvk := range kinds {
		for _, r := range all[gvk] {
			fmt.Fprintf(bw, "%s\t%s\t%s\t%s\t%s\n", groupName(gvk.Group), gvk.Version, gvk.Kind, r.Path, r.Zero)
		}
	}
	return bw.Flush()
}

func main() {
	output := flag.String("o", "", "write the table to this file instead of stdout")
	orderOutput := flag.String("order-o", "", "also write the member-order table (go-member-order.tsv) to this file")
	quantityOutput := flag.String("quantity-o", "", "also write the quantity-field table (go-quantity-fields.tsv) to this file")
	notes := flag.Bool("notes", false, "print observations (custom marshallers, omitzero, unusual omitempty fields, recursion cut-offs) to stderr")
	flag.Parse()

	w := NewWalker()
	all, kinds, err := Table(w)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if *notes {
		var ns []string
		for n := range w.Notes {
			ns = append(ns, n)
		}
		sort.Strings(ns)
		for _, n := range ns {
			fmt.Fprintln(os.Stderr, n)
		}
	}
	if *quantityOutput != "" {
		if err := writeFile(*quantityOutput, func(f io.Writer) error { return writeQuantities(f, kinds) }); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if *output == "" && *orderOutput == "" {
			return
		}
	}
	if *orderOutput != "" {
		if err := writeFile(*orderOutput, func(f io.Writer) error { return writeOrder(f, kinds) }); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if *output == "" {
			return
		}
	}
	if *output == "" {
		err = write(os.Stdout, all, kinds)
	} else {
		var f *os.File
		if f, err = os.Create(*output); err == nil {
			err = write(f, all, kinds)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// writeFile creates path and writes it with fill.
func writeFile(path string, fill func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = fill(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
