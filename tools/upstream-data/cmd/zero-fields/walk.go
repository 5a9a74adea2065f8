package main

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// Row is one field of an object: Path is relative to the object root. Zero
// is either the JSON encoding/json writes for the field although the input
// JSON did not have it, or one of the tokens OmitEmpty and OmitNil for a
// field encoding/json leaves out when it is present but empty.
type Row struct {
	Path string
	Zero string
}

// The tokens of the zero column for fields Go drops although the input had
// them (omitempty, or omitzero, after decoding).
const (
	// OmitEmpty: a string, bool, number, slice or map (or a named type of
	// one) that Go drops when its decoded value is empty: the JSON value is
	// null, "", 0, false, [] or {}.
	OmitEmpty = "omitempty"
	// OmitNil: a pointer or interface (or, for omitzero, a slice or map)
	// that Go drops only when its JSON value is null.
	OmitNil = "omitnil"
)

// jsonField is a field as encoding/json sees it after embedding and name
// resolution (a copy of the rules of encoding/json's typeFields).
type jsonField struct {
	name      string
	index     []int
	typ       reflect.Type
	tagged    bool
	omitEmpty bool
	omitZero  bool
	// viaEmbeddedPointer: the field is promoted through an anonymous pointer
	// to a struct; encoding/json skips it while that pointer is nil.
	viaEmbeddedPointer bool
}

var (
	marshalerType       = reflect.TypeFor[json.Marshaler]()
	textMarshalerType   = reflect.TypeFor[encoding.TextMarshaler]()
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	isZeroerType        = reflect.TypeFor[interface{ IsZero() bool }]()
)

// hasCustomUnmarshaler reports whether encoding/json decodes into values of
// t (or *t) with an UnmarshalJSON or UnmarshalText method.
func hasCustomUnmarshaler(t reflect.Type) bool {
	for _, x := range []reflect.Type{t, reflect.PointerTo(t)} {
		if x.Implements(unmarshalerType) || x.Implements(textUnmarshalerType) {
			return true
		}
	}
	return false
}

// marshalsZeroAsNull reports whether t's zero value marshals as JSON null
// and only its zero value does (metav1.Time, metav1.MicroTime): omitzero on
// it then drops exactly the null values.
func marshalsZeroAsNull(t reflect.Type) bool {
	switch t.PkgPath() + "." + t.Name() {
	case "k8s.io/apimachinery/pkg/apis/meta/v1.Time", "k8s.io/apimachinery/pkg/apis/meta/v1.MicroTime":
		return true
	}
	return false
}

// hasIsZero reports whether omitzero asks values of t an IsZero method
// instead of comparing them with the zero value.
func hasIsZero(t reflect.Type) bool {
	return t.Implements(isZeroerType) || t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface && reflect.PointerTo(t).Implements(isZeroerType)
}

// hasCustomMarshaler reports whether encoding/json hands values of t (or of
// *t, as struct fields are addressable) to a MarshalJSON or MarshalText
// method instead of encoding them by kind.
func hasCustomMarshaler(t reflect.Type) bool {
	for _, x := range []reflect.Type{t, reflect.PointerTo(t)} {
		if x.Implements(marshalerType) || x.Implements(textMarshalerType) {
			return true
		}
	}
	return false
}

func parseTag(tag string) (string, string) {
	name, opts, _ := strings.Cut(tag, ",")
	return name, opts
}

func hasOption(opts, want string) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == want {
			return true
		}
	}
	return false
}

func isValidTag(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c > 0x7f):
			return false
		}
	}
	return true
}

// typeFields returns the fields encoding/json encodes for struct type t, in
// encoding order.
func typeFields(t reflect.Type) []jsonField {
	type queued struct {
		typ        reflect.Type
		index      []int
		viaPointer bool
	}
	current := []queued{}
	next := []queued{{typ: t}}
	var count, nextCount map[reflect.Type]int
	visited := map[reflect.Type]bool{}
	var fields []jsonField

	for len(next) > 0 {
		current, next = next, current[:0]
		count, nextCount = nextCount, map[reflect.Type]int{}
		for _, f := range current {
			if visited[f.typ] {
				continue
			}
			visited[f.typ] = true
			for i := 0; i < f.typ.NumField(); i++ {
				sf := f.typ.Field(i)
				if sf.Anonymous {
					ft := sf.Type
					if ft.Kind() == reflect.Pointer {
						ft = ft.Elem()
					}
					if !sf.IsExported() && ft.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, opts := parseTag(tag)
				if !isValidTag(name) {
					name = ""
				}
				index := make([]int, len(f.index)+1)
				copy(index, f.index)
				index[len(f.index)] = i

				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if name != "" || !sf.Anonymous || ft.Kind() != reflect.Struct {
					tagged := name != ""
					if name == "" {
						name = sf.Name
					}
					fields = append(fields, jsonField{
						name:               name,
						index:              index,
						typ:                sf.Type,
						tagged:             tagged,
						omitEmpty:          hasOption(opts, "omitempty"),
						omitZero:           hasOption(opts, "omitzero"),
						viaEmbeddedPointer: f.viaPointer,
					})
					if count[f.typ] > 1 {
						// Same struct embedded twice at one level: both
						// copies annihilate each other.
						fields = append(fields, fields[len(fields)-1])
					}
					continue
				}
				nextCount[ft]++
				if nextCount[ft] == 1 {
					next = append(next, queued{
						typ:        ft,
						index:      index,
						viaPointer: f.viaPointer || sf.Type.Kind() == reflect.Pointer,
					})
				}
			}
		}
	}

	sort.SliceStable(fields, func(i, j int) bool {
		x := fields
		if x[i].name != x[j].name {
			return x[i].name < x[j].name
		}
		if len(x[i].index) != len(x[j].index) {
			return len(x[i].index) < len(x[j].index)
		}
		if x[i].tagged != x[j].tagged {
			return x[i].tagged
		}
		return lessIndex(x[i].index, x[j].index)
	})
	out := fields[:0:0]
	for advance, i := 0, 0; i < len(fields); i += advance {
		fi := fields[i]
		for advance = 1; i+advance < len(fields); advance++ {
			if fields[i+advance].name != fi.name {
				break
			}
		}
		if advance == 1 {
			out = append(out, fi)
			continue
		}
		if d, ok := dominantField(fields[i : i+advance]); ok {
			out = append(out, d)
		}
	}
	sort.Slice(out, func(i, j int) bool { return lessIndex(out[i].index, out[j].index) })
	return out
}

func lessIndex(a, b []int) bool {
	for k, x := range a {
		if k >= len(b) {
			return false
		}
		if x != b[k] {
			return x < b[k]
		}
	}
	return len(a) < len(b)
}

func dominantField(fields []jsonField) (jsonField, bool) {
	if len(fields) > 1 && len(fields[0].index) == len(fields[1].index) && fields[0].tagged == fields[1].tagged {
		return jsonField{}, false
	}
	return fields[0], true
}

// zeroObject marshals the zero value of struct type t and returns its
// top-level members: exactly the fields encoding/json writes for t when the
// input had none of them.
func zeroObject(t reflect.Type) (map[string]json.RawMessage, error) {
	b, err := json.Marshal(reflect.New(t).Interface())
	if err != nil {
		return nil, fmt.Errorf("marshal zero %v: %w", t, err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("zero %v is not an object (%s): %w", t, b, err)
	}
	return m, nil
}

// Walker computes the rows of struct types; it caches per-type results.
type Walker struct {
	// Notes collects observations worth reporting (custom marshallers,
	// omitzero fields, unusual omitempty fields, recursion cut-offs); keyed
	// to dedupe.
	Notes map[string]bool

	counts   map[reflect.Type]int
	counting map[reflect.Type]bool
}

func NewWalker() *Walker {
	return &Walker{
		Notes:    map[string]bool{},
		counts:   map[reflect.Type]int{},
		counting: map[reflect.Type]bool{},
	}
}

func (w *Walker) note(format string, args ...any) {
	w.Notes[fmt.Sprintf(format, args...)] = true
}

// Rows returns the rows for an object of (struct) type t, sorted by path so a
// parent precedes its children (a path is a prefix of its children's). The
// top-level apiVersion and kind (TypeMeta) are left out.
func (w *Walker) Rows(t reflect.Type) ([]Row, error) {
	var rows []Row
	if err := w.walk(t, "", nil, &rows); err != nil {
		return nil, err
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Path < rows[j].Path })
	for i := 1; i < len(rows); i++ {
		if rows[i].Path == rows[i-1].Path {
			return nil, fmt.Errorf("%v: two rows for %s (%s, %s)", t, rows[i].Path, rows[i-1].Zero, rows[i].Zero)
		}
	}
	return rows, nil
}

func isScalar(k reflect.Kind) bool {
	switch k {
	case reflect.String, reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// omitToken returns the token of the row for field f of struct t when Go
// drops f although the input had it ("" when it never does). A freshly
// decoded field is Go's zero value of its type exactly when its JSON value
// is null or the empty value of its kind ("", 0, false, [] or {} decode to
// an empty, non-nil slice or map), so:
//   - omitempty (empty: len 0, false, 0, nil) on a string, bool, number,
//     slice or map drops null and the empty values (OmitEmpty); on a pointer
//     or interface only null (OmitNil); a struct is never empty.
//   - omitzero (Go 1.24; the zero value) drops the same for strings, bools,
//     numbers, pointers and interfaces, but only a nil slice or map: null
//     (OmitNil). Both options: dropped when either holds.
//
// Fields whose dropping no token describes (omitzero on a struct or with an
// IsZero method, arrays) are an error, so that a new release with them is
// not listed wrongly.
func (w *Walker) omitToken(t reflect.Type, f jsonField) (string, error) {
	if !f.omitEmpty && !f.omitZero {
		return "", nil
	}
	ft := f.typ
	if f.omitZero && hasIsZero(ft) {
		// metav1.Time and MicroTime are zero exactly when their JSON is
		// null (their MarshalJSON writes null for the zero time).
		if marshalsZeroAsNull(ft) {
			return OmitNil, nil
		}
		return "", fmt.Errorf("%v.%s: omitzero on %v, which has an IsZero method", t, f.name, ft)
	}
	switch k := ft.Kind(); {
	case k == reflect.Pointer || k == reflect.Interface:
		if k == reflect.Pointer && ft.Elem().Kind() != reflect.Struct && !isScalar(ft.Elem().Kind()) {
			w.note("omitnil on a pointer to a %v: %v.%s (%v)", ft.Elem().Kind(), t, f.name, ft)
		}
		if k == reflect.Interface {
			w.note("omitnil on an interface: %v.%s (%v)", t, f.name, ft)
		}
		return OmitNil, nil
	case k == reflect.Struct:
		if f.omitZero {
			return "", fmt.Errorf("%v.%s: omitzero on struct %v (dropped when all its fields are zero)", t, f.name, ft)
		}
		return "", nil // omitempty never drops a struct
	case k == reflect.Array:
		if f.omitZero || ft.Len() == 0 {
			return "", fmt.Errorf("%v.%s: omitempty/omitzero on array %v", t, f.name, ft)
		}
		return "", nil // omitempty never drops an array of length > 0
	case isScalar(k) || k == reflect.Slice || k == reflect.Map:
		if hasCustomMarshaler(ft) || hasCustomUnmarshaler(ft) {
			// Go drops its empty values, but which JSON decodes to them is
			// the type's business.
			w.note("omitempty/omitzero field %v.%s of %v %v with its own (un)marshaller: no row", t, f.name, k, ft)
			return "", nil
		}
		if !f.omitEmpty && (k == reflect.Slice || k == reflect.Map) {
			return OmitNil, nil
		}
		return OmitEmpty, nil
	default:
		return "", fmt.Errorf("%v.%s: omitempty/omitzero on %v of kind %v", t, f.name, ft, k)
	}
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func (w *Walker) walk(t reflect.Type, path string, stack []reflect.Type, rows *[]Row) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if hasCustomMarshaler(t) {
		return nil
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return nil // []byte: a base64 string
		}
		return w.walk(t.Elem(), path+"[]", stack, rows)
	case reflect.Map:
		return w.walk(t.Elem(), path+"{}", stack, rows)
	case reflect.Struct:
	default:
		return nil
	}
	for _, s := range stack {
		if s == t {
			// A recursive type (JSONSchemaProps): the rows below this point
			// repeat those of the outer occurrence.
			if n, err := w.countRows(t); err != nil {
				return err
			} else if n > 0 {
				w.note("recursion cut at %s (%v): %d rows of the type are not repeated below it", path, t, n)
			}
			return nil
		}
	}
	stack = append(stack, t)

	zero, err := zeroObject(t)
	if err != nil {
		return err
	}
	fields := typeFields(t)
	seen := map[string]bool{}
	for _, f := range fields {
		if path == "" && (f.name == "apiVersion" || f.name == "kind") {
			continue
		}
		if f.omitZero {
			w.note("omitzero field %v.%s", t, f.name)
		}
		ft := f.typ
		if hasCustomMarshaler(ft) {
			et := ft
			for et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			b, err := json.Marshal(reflect.New(et).Interface())
			if err != nil {
				return fmt.Errorf("marshal zero %v: %w", et, err)
			}
			w.note("custom marshaller %v: its zero value marshals to %s", et, b)
		}
		if f.viaEmbeddedPointer {
			w.note("field %v.%s is promoted through an embedded pointer (skipped while it is nil)", t, f.name)
		}
		p := join(path, f.name)
		token, err := w.omitToken(t, f)
		if err != nil {
			return err
		}
		if token != "" {
			if _, ok := zero[f.name]; ok {
				return fmt.Errorf("%v.%s: %s, but its zero value is written", t, f.name, token)
			}
			*rows = append(*rows, Row{Path: p, Zero: token})
		}
		if raw, ok := zero[f.name]; ok {
			seen[f.name] = true
			z := string(raw)
			if ft.Kind() == reflect.Struct && !hasCustomMarshaler(ft) {
				if !bytes.HasPrefix(raw, []byte("{")) {
					return fmt.Errorf("%v.%s: struct field marshals to %s", t, f.name, raw)
				}
				z = "{}"
			}
			*rows = append(*rows, Row{Path: p, Zero: z})
		}
		if err := w.walk(ft, p, stack, rows); err != nil {
			return err
		}
	}
	for k := range zero {
		if !seen[k] && !(path == "" && (k == "apiVersion" || k == "kind")) {
			return fmt.Errorf("%v: encoding/json writes %q, which the field walk did not find", t, k)
		}
	}
	return nil
}

// countRows counts the rows an object of type t has (without cutting at t
// itself), to tell whether a recursion cut-off loses anything.
func (w *Walker) countRows(t reflect.Type) (int, error) {
	if n, ok := w.counts[t]; ok {
		return n, nil
	}
	if w.counting[t] {
		return 0, nil
	}
	w.counting[t] = true
	defer delete(w.counting, t)
	var rows []Row
	if err := w.walk(t, "", nil, &rows); err != nil {
		return 0, err
	}
	w.counts[t] = len(rows)
	return len(rows), nil
}
