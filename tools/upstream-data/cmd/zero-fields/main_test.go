package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand"
	"os"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/randfill"
)

// The table is read back from its TSV text, so the tests check the file
// format the Rust side reads, not an in-memory structure.
var (
	tableOnce sync.Once
	tableText []byte
	tableErr  error
	table     map[schema.GroupVersionKind][]Row
)

func loadTable(t *testing.T) map[schema.GroupVersionKind][]Row {
	t.Helper()
	tableOnce.Do(func() {
		all, kinds, err := Table(NewWalker())
		if err != nil {
			tableErr = err
			return
		}
		var buf bytes.Buffer
		if err := write(&buf, all, kinds); err != nil {
			tableErr = err
			return
		}
		tableText = buf.Bytes()
		table, tableErr = parseTable(tableText)
	})
	if tableErr != nil {
		t.Fatal(tableErr)
	}
	return table
}

func parseTable(text []byte) (map[schema.GroupVersionKind][]Row, error) {
	out := map[schema.GroupVersionKind][]Row{}
	sc := bufio.NewScanner(bytes.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.Split(line, "\t")
		if len(cols) != 5 {
			return nil, fmt.Errorf("bad row %q", line)
		}
		group := cols[0]
		if group == "core" {
			group = ""
		}
		gvk := schema.GroupVersionKind{Group: group, Version: cols[1], Kind: cols[2]}
		out[gvk] = append(out[gvk], Row{Path: cols[3], Zero: cols[4]})
	}
	return out, sc.Err()
}

var segmentCache sync.Map // path -> []string

// segments splits a row path into field names and the "[]" / "{}" steps.
// The result is shared; callers must not modify it.
func segments(path string) []string {
	if v, ok := segmentCache.Load(path); ok {
		return v.([]string)
	}
	out := splitPath(path)
	segmentCache.Store(path, out)
	return out
}

func splitPath(path string) []string {
	var out []string
	for _, part := range strings.Split(path, ".") {
		var suffix []string
		for {
			if s, ok := strings.CutSuffix(part, "[]"); ok {
				part, suffix = s, append([]string{"[]"}, suffix...)
			} else if s, ok := strings.CutSuffix(part, "{}"); ok {
				part, suffix = s, append([]string{"{}"}, suffix...)
			} else {
				break
			}
		}
		out = append(out, part)
		out = append(out, suffix...)
	}
	return out
}

// apply is the tiny applier: for every row, in order, every parent object the
// path reaches gets the row's zero value where the field is absent or null
// (Go decodes null into a non-pointer as a no-op, leaving the zero value), or,
// for a token row, loses the field where its value is one the token drops. It
// returns the indexes of the rows that added or dropped something.
func apply(obj any, rows []Row) []int {
	var used []int
	for i, r := range rows {
		segs := segments(r.Path)
		parents := reach(obj, segs[:len(segs)-1])
		name := segs[len(segs)-1]
		for _, m := range parents {
			v, ok := m[name]
			switch {
			case isToken(r.Zero):
				if !ok || !drops(r.Zero, v) {
					continue
				}
				delete(m, name)
			case !ok || v == nil:
				m[name] = decode([]byte(r.Zero))
			default:
				continue
			}
			if len(used) == 0 || used[len(used)-1] != i {
				used = append(used, i)
			}
		}
	}
	return used
}

func isToken(zero string) bool {
	return zero == OmitEmpty || zero == OmitNil
}

// drops reports whether Go leaves out a member of value v that has a row
// with the given token.
func drops(token string, v any) bool {
	switch token {
	case OmitEmpty:
		return zeroish(v)
	case OmitNil:
		return v == nil
	}
	panic("not a token: " + token)
}

func decode(b []byte) any {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		panic(fmt.Sprintf("decode %s: %v", b, err))
	}
	return v
}

func canonical(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

var types = Scheme().AllKnownTypes()

// compare decodes input into the Go type of gvk, encodes it again with
// encoding/json (what kube-apiserver does) and compares that with input plus
// rows. It returns the differences and the rows that added something.
func compare(gvk schema.GroupVersionKind, rows []Row, input []byte) ([]string, []int, error) {
	typ, found := types[gvk]
	if !found {
		return nil, nil, fmt.Errorf("%v not in scheme", gvk)
	}
	obj := reflect.New(typ).Interface()
	if err := json.Unmarshal(input, obj); err != nil {
		return nil, nil, fmt.Errorf("%v: unmarshal %s: %v", gvk, clip(string(input)), err)
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return nil, nil, fmt.Errorf("%v: marshal: %v", gvk, err)
	}
	got := decode(input)
	used := apply(got, rows)
	return diff("", decode(out), got), used, nil
}

// check reports a test error unless the rows of gvk turn input into what Go
// writes for it.
func check(t *testing.T, gvk schema.GroupVersionKind, input []byte) ([]int, bool) {
	t.Helper()
	d, used, err := compare(gvk, loadTable(t)[gvk], input)
	if err != nil {
		t.Fatal(err)
	}
	if len(d) > 0 {
		t.Errorf("%v: input\n%s\ndifferences: %s", gvk, clip(string(input)), strings.Join(d, "; "))
		return used, false
	}
	return used, true
}

func clip(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "..."
	}
	return s
}

func diff(path string, a, b any) []string {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		var out []string
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		var ks []string
		for k := range keys {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		for _, k := range ks {
			av, ain := am[k]
			bv, bin := bm[k]
			switch {
			case !ain:
				out = append(out, fmt.Sprintf("%s.%s only from rows (%s)", path, k, canonical(bv)))
			case !bin:
				out = append(out, fmt.Sprintf("%s.%s only from Go (%s)", path, k, canonical(av)))
			default:
				out = append(out, diff(path+"."+k, av, bv)...)
			}
		}
		return out
	}
	aa, aok := a.([]any)
	ba, bok := b.([]any)
	if aok && bok && len(aa) == len(ba) {
		var out []string
		for i := range aa {
			out = append(out, diff(fmt.Sprintf("%s[%d]", path, i), aa[i], ba[i])...)
		}
		return out
	}
	if canonical(a) != canonical(b) {
		return []string{fmt.Sprintf("%s: Go %s, rows %s", path, canonical(a), canonical(b))}
	}
	return nil
}

func gvk(group, version, kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: group, Version: version, Kind: kind}
}

// TestSanity: the minimal objects of the brief.
func TestSanity(t *testing.T) {
	template := `{"metadata":{"labels":{"app":"x"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`
	cases := []struct {
		gvk  schema.GroupVersionKind
		json string
	}{
		{gvk("", "v1", "Pod"), `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"default"},
			"spec":{"containers":[{"name":"c","image":"nginx"}]}}`},
		{gvk("apps", "v1", "Deployment"), `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},
			"spec":{"selector":{"matchLabels":{"app":"x"}},"template":` + template + `}}`},
		{gvk("", "v1", "Service"), `{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},
			"spec":{"selector":{"app":"x"},"ports":[{"port":80}]}}`},
		{gvk("", "v1", "ReplicationController"), `{"apiVersion":"v1","kind":"ReplicationController","metadata":{"name":"rc"},
			"spec":{"replicas":1,"selector":{"app":"x"},"template":` + template + `}}`},
		{gvk("batch", "v1", "Job"), `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j"},
			"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}`},
	}
	for _, c := range cases {
		used, _ := check(t, c.gvk, []byte(c.json))
		t.Logf("%v: %d rows added or dropped something", c.gvk, len(used))
	}
}

// TestApplierCatchesMissingRow: the comparison is not vacuous; leaving out
// any one row the sanity Pod needs makes it fail.
func TestApplierCatchesMissingRow(t *testing.T) {
	k := gvk("", "v1", "Pod")
	input := []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`)
	rows := loadTable(t)[k]
	_, used, err := compare(k, rows, input)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range used {
		fewer := append(append([]Row{}, rows[:i]...), rows[i+1:]...)
		d, _, _ := compare(k, fewer, input)
		if len(d) == 0 {
			t.Errorf("leaving out %v went unnoticed", rows[i])
		}
	}
}

// TestEveryKindMinimal: every kind with nothing but apiVersion and kind.
func TestEveryKindMinimal(t *testing.T) {
	tab := loadTable(t)
	kinds := Kinds(Scheme())
	if len(kinds) != len(tab) {
		// Kinds without any row are absent from the table; count them.
		t.Logf("%d kinds, %d with rows", len(kinds), len(tab))
	}
	for _, k := range kinds {
		apiVersion := k.GroupVersion().String()
		check(t, k, []byte(fmt.Sprintf(`{"apiVersion":%q,"kind":%q}`, apiVersion, k.Kind)))
	}
}

// randomJSON is a random object of kind k as encoding/json writes it.
func randomJSON(t *testing.T, k schema.GroupVersionKind, seed int64) any {
	t.Helper()
	obj := reflect.New(types[k]).Interface()
	newFiller(seed, k).Fill(obj)
	obj.(runtime.Object).GetObjectKind().SetGroupVersionKind(k)
	full, err := json.Marshal(obj)
	if err != nil {
		t.Fatalf("%v seed %d: marshal: %v", k, seed, err)
	}
	return decode(full)
}

// keepFor names the members prune must not drop at random for kind k.
func keepFor(k schema.GroupVersionKind) map[string]bool {
	if k.Group == "apiextensions.k8s.io" {
		// Validation requires x-kubernetes-validations[].rule; the table
		// leaves it out below the JSONSchemaProps recursion cut-off.
		return map[string]bool{"rule": true}
	}
	return nil
}

func randomCount() int {
	if testing.Short() {
		return 3
	}
	return 40
}

// TestRandomObjects: random objects of every kind, stripped of their
// zero-ish members and a third of the others, with empty values put back at
// a third of the omitempty fields (those Go drops, and behind pointers those
// it keeps), so that rows deep under arrays, maps and pointers are exercised
// in combination.
func TestRandomObjects(t *testing.T) {
	tab := loadTable(t)
	failures, objects, rowsUsed, rowsTotal := 0, 0, 0, 0
	for _, k := range Kinds(Scheme()) {
		usedRows := map[int]bool{}
		for i := 0; i < randomCount() && failures < 5; i++ {
			seed := int64(i + 1)
			r := rand.New(rand.NewSource(seed))
			input := prune(randomJSON(t, k, seed), r, keepFor(k))
			sprinkle(t, k, input, tab[k], r)
			used, ok := check(t, k, []byte(canonical(input)))
			if !ok {
				failures++
			}
			for _, u := range used {
				usedRows[u] = true
			}
			objects++
		}
		rowsUsed += len(usedRows)
		rowsTotal += len(tab[k])
	}
	t.Logf("%d random objects; %d of %d rows added or dropped something at least once", objects, rowsUsed, rowsTotal)
}

// TestEveryRow: each row on its own. For every row, a random object with the
// row's parent present (stripped of zero-ish members only) loses the row's
// field at every parent (every other row: gets null there instead), or for a
// token row gets there an empty value Go drops (and, in further inputs, each
// empty value behind a pointer Go keeps); Go must write exactly what the
// rows make of the input, and the row itself must be what adds or drops the
// field (unless its zero is null and the field was set to null; a kept value
// must not be dropped).
func TestEveryRow(t *testing.T) {
	tab := loadTable(t)
	tested, total, failures := 0, 0, 0
	var untested []string
	for _, k := range Kinds(Scheme()) {
		rows := tab[k]
		total += len(rows)
		// Smallest first: each row takes the first object that reaches
		// its parent, and the time goes into decoding and encoding it.
		type sized struct {
			obj  any
			size int
		}
		var objs []sized
		for i := 0; i < randomCount(); i++ {
			obj := prune(randomJSON(t, k, int64(i+1)), nil, nil)
			objs = append(objs, sized{obj, len(canonical(obj))})
		}
		slices.SortStableFunc(objs, func(a, b sized) int { return a.size - b.size })
		var pool []any
		for _, o := range objs {
			pool = append(pool, o.obj)
		}
		for j, r := range rows {
			segs := segments(r.Path)
			name := segs[len(segs)-1]
			// What to put at every parent, and whether the row must be
			// what changes it: zero rows lose the field (or get null
			// instead); token rows get an empty value Go drops (in turn
			// null, "", 0, false, [] or {}, whichever the type takes)
			// and, behind a pointer, each empty value Go keeps.
			type variant struct {
				value   *string // nil: delete the member
				mustUse bool
			}
			var variants []variant
			if isToken(r.Zero) {
				dropped, kept := emptyJSON(rowType(t, k, r.Path), r.Zero)
				variants = append(variants, variant{&dropped[j%len(dropped)], true})
				for i := range kept {
					variants = append(variants, variant{&kept[i], false})
				}
			} else if j%2 == 0 {
				variants = []variant{{nil, true}}
			} else {
				null := "null"
				variants = []variant{{&null, r.Zero != "null"}}
			}
			done := false
			for _, base := range pool {
				if len(reach(base, segs[:len(segs)-1])) == 0 {
					continue
				}
				for _, v := range variants {
					input := decode([]byte(canonical(base)))
					for _, p := range reach(input, segs[:len(segs)-1]) {
						if v.value == nil {
							delete(p, name)
						} else {
							p[name] = decode([]byte(*v.value))
						}
					}
					b := []byte(canonical(input))
					d, used, err := compare(k, rows, b)
					if err != nil {
						t.Fatal(err)
					}
					if len(d) > 0 {
						t.Errorf("%v row %s %s: input\n%s\ndifferences: %s", k, r.Path, r.Zero, clip(string(b)), strings.Join(d, "; "))
						failures++
					} else if v.mustUse && !slices.Contains(used, j) {
						t.Errorf("%v row %s %s: not used although its field was changed", k, r.Path, r.Zero)
						failures++
					} else if !v.mustUse && isToken(r.Zero) && slices.Contains(used, j) {
						t.Errorf("%v row %s %s: drops %s", k, r.Path, r.Zero, *v.value)
						failures++
					}
				}
				done = true
				break
			}
			if done {
				tested++
			} else {
				untested = append(untested, k.String()+" "+r.Path)
			}
			if failures > 10 {
				t.FailNow()
			}
		}
	}
	t.Logf("%d of %d rows tested on their own; no random object reached the parent of the others", tested, total)
	if testing.Verbose() {
		for _, u := range untested {
			t.Logf("untested: %s", u)
		}
	}
}

// reach returns the objects a parent path (row path segments) leads to.
func reach(obj any, segs []string) []map[string]any {
	parents := []any{obj}
	for _, s := range segs {
		var next []any
		for _, p := range parents {
			switch s {
			case "[]":
				if a, ok := p.([]any); ok {
					next = append(next, a...)
				}
			case "{}":
				if m, ok := p.(map[string]any); ok {
					// In key order, so that random choices per parent
					// repeat with the seed.
					for _, k := range slices.Sorted(maps.Keys(m)) {
						next = append(next, m[k])
					}
				}
			default:
				if m, ok := p.(map[string]any); ok {
					if v, ok := m[s]; ok {
						next = append(next, v)
					}
				}
			}
		}
		parents = next
	}
	var out []map[string]any
	for _, p := range parents {
		if m, ok := p.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// prune drops the object members that are null, "", 0, false, {} or [],
// innermost first, as a client that leaves out what it does not set, and a
// third of the others at random (unless r is nil), so that rows are needed
// under present parents. (sprinkle puts empty values back where Go drops
// them.) Members named in keep are only dropped when zero-ish.
func prune(v any, r *rand.Rand, keep map[string]bool) any {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			e := prune(x[k], r, keep)
			x[k] = e
			if zeroish(e) || r != nil && !keep[k] && r.Intn(3) == 0 {
				delete(x, k)
			}
		}
	case []any:
		for i, e := range x {
			x[i] = prune(e, r, keep)
		}
	}
	return v
}

func zeroish(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case bool:
		return !x
	case json.Number:
		f, err := strconv.ParseFloat(x.String(), 64)
		return err == nil && f == 0
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}

func newFiller(seed int64, k schema.GroupVersionKind) *randfill.Filler {
	depth := 24
	if k.Group == "apiextensions.k8s.io" {
		depth = 12 // JSONSchemaProps nests itself many ways
	}
	return randfill.NewWithSeed(seed).NilChance(0.25).NumElements(1, 2).MaxDepth(depth).Funcs(
		func(q *resource.Quantity, c randfill.Continue) {
			*q = *resource.NewQuantity(int64(c.Intn(1000)), resource.DecimalSI)
		},
		// IntOrString fills itself, but not behind a nil pointer (maxSurge
		// and maxUnavailable would always be nil).
		func(x *intstr.IntOrString, c randfill.Continue) {
			if c.Bool() {
				*x = intstr.FromInt32(c.Int31n(100))
			} else {
				*x = intstr.FromString(fmt.Sprintf("%d%%", c.Intn(100)))
			}
		},
		func(e *runtime.RawExtension, c randfill.Continue) {
			if c.Bool() {
				e.Raw = []byte(`{"apiVersion":"v1","kind":"Foo"}`)
			}
		},
		func(f *metav1.FieldsV1, c randfill.Continue) {
			f.Raw = []byte(`{"f:metadata":{}}`)
		},
		func(d *metav1.Duration, c randfill.Continue) {
			d.Duration = 0
		},
		func(j *apiextensionsv1.JSON, c randfill.Continue) { j.Raw = []byte(`{"a":1}`) },
		func(j *apiextensionsv1beta1.JSON, c randfill.Continue) { j.Raw = []byte(`{"a":1}`) },
		// CRD validation requires a non-empty rule; rows below the
		// JSONSchemaProps recursion cut-off (only rule) are not in the table.
		func(v *apiextensionsv1.ValidationRule, c randfill.Continue) {
			c.FillNoCustom(v)
			v.Rule = "self > 0"
		},
		func(v *apiextensionsv1beta1.ValidationRule, c randfill.Continue) {
			c.FillNoCustom(v)
			v.Rule = "self > 0"
		},
		// A Workload's composite pod group templates nest themselves; the
		// table's rows stop where the type recurs (as for JSONSchemaProps).
		func(v *schedulingv1alpha3.CompositePodGroupTemplate, c randfill.Continue) {
			c.FillNoCustom(v)
			v.CompositePodGroupTemplates = nil
		},
		func(v *schedulingv1beta1.CompositePodGroupTemplate, c randfill.Continue) {
			c.FillNoCustom(v)
			v.CompositePodGroupTemplates = nil
		},
	)
}

var rowTypes = map[string]reflect.Type{}

// rowType returns the Go type of the field row path names in kind k.
func rowType(t *testing.T, k schema.GroupVersionKind, path string) reflect.Type {
	t.Helper()
	key := k.String() + " " + path
	if typ, ok := rowTypes[key]; ok {
		return typ
	}
	typ := types[k]
	for _, s := range segments(path) {
		for typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		switch {
		case s == "[]" && (typ.Kind() == reflect.Slice || typ.Kind() == reflect.Array),
			s == "{}" && typ.Kind() == reflect.Map:
			typ = typ.Elem()
		case typ.Kind() == reflect.Struct:
			i := slices.IndexFunc(typeFields(typ), func(f jsonField) bool { return f.name == s })
			if i < 0 {
				t.Fatalf("%v %s: no field %s in %v", k, path, s, typ)
			}
			typ = typeFields(typ)[i].typ
		default:
			t.Fatalf("%v %s: %s in %v", k, path, s, typ)
		}
	}
	rowTypes[key] = typ
	return typ
}

// emptyJSON returns, for a field of type ft with a token row, the JSON values
// Go drops (null and, for omitempty, the empty values of ft's kind) and those
// it keeps (for a pointer, the empty values of what it points to).
func emptyJSON(ft reflect.Type, token string) (dropped, kept []string) {
	dropped = []string{"null"}
	switch token {
	case OmitEmpty:
		dropped = append(dropped, emptyOf(ft)...)
	case OmitNil:
		if ft.Kind() == reflect.Pointer {
			kept = emptyOf(ft.Elem())
		}
	}
	return dropped, kept
}

// emptyOf returns JSON values other than null that decode to the zero value
// of t ("", 0, false, a plain struct's {}) or an empty slice or map ([], {};
// also "" for []byte). For a type with its own marshaller: what its zero
// value marshals to, unless null (Quantity "0", IntOrString 0).
func emptyOf(t reflect.Type) []string {
	if hasCustomMarshaler(t) || hasCustomUnmarshaler(t) {
		b, err := json.Marshal(reflect.New(t).Interface())
		if err != nil || string(b) == "null" {
			return nil
		}
		return []string{string(b)}
	}
	switch k := t.Kind(); {
	case k == reflect.String:
		return []string{`""`}
	case k == reflect.Bool:
		return []string{"false"}
	case isScalar(k):
		return []string{"0"}
	case k == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
		return []string{`""`, "[]"}
	case k == reflect.Slice:
		return []string{"[]"}
	case k == reflect.Map, k == reflect.Struct:
		return []string{"{}"}
	}
	return nil
}

// sprinkle puts, at random, an empty value where a token row's field is
// absent (at a third of its parents): one Go drops (null, "", 0, false, [],
// {}) or, behind a pointer, one it keeps ({}, "", 0, false...). Rows are in
// path order, so a kept {} may get empty members of its own.
func sprinkle(t *testing.T, k schema.GroupVersionKind, obj any, rows []Row, r *rand.Rand) {
	t.Helper()
	for _, row := range rows {
		if !isToken(row.Zero) {
			continue
		}
		segs := segments(row.Path)
		name := segs[len(segs)-1]
		parents := reach(obj, segs[:len(segs)-1])
		if len(parents) == 0 {
			continue
		}
		dropped, kept := emptyJSON(rowType(t, k, row.Path), row.Zero)
		choices := append(dropped, kept...)
		for _, m := range parents {
			if _, ok := m[name]; ok || r.Intn(3) != 0 {
				continue
			}
			m[name] = decode([]byte(choices[r.Intn(len(choices))]))
		}
	}
}

// TestOmitted: members Go drops although the input had them, and members
// behind pointers it keeps, with exactly what Go writes.
func TestOmitted(t *testing.T) {
	cases := []struct {
		name string
		gvk  schema.GroupVersionKind
		in   string
		want string
	}{
		{"ConfigMap empty labels, annotations, data", gvk("", "v1", "ConfigMap"),
			`{"metadata":{"name":"e","labels":{},"annotations":{}},"data":{}}`,
			`{"metadata":{"name":"e"}}`},
		{"ConfigMap empty strings, lists and null pointers", gvk("", "v1", "ConfigMap"),
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"e","namespace":"","generateName":"","finalizers":[],
				"ownerReferences":[],"managedFields":[],"generation":0,"deletionTimestamp":null,"deletionGracePeriodSeconds":null},
				"binaryData":{},"immutable":null}`,
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"e"}}`},
		{"ConfigMap immutable false behind a pointer", gvk("", "v1", "ConfigMap"),
			`{"metadata":{"name":"e"},"immutable":false}`,
			`{"metadata":{"name":"e"},"immutable":false}`},
		{"Service empty selector and externalIPs", gvk("", "v1", "Service"),
			`{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},
				"spec":{"selector":{},"externalIPs":[],"ports":[{"port":80}]}}`,
			`{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},
				"spec":{"ports":[{"port":80,"targetPort":0}]},"status":{"loadBalancer":{}}}`},
		{"Pod container securityContext {} kept", gvk("", "v1", "Pod"),
			`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},
				"spec":{"containers":[{"name":"c","image":"nginx","securityContext":{},"args":[],"env":[]}]}}`,
			`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},
				"spec":{"containers":[{"name":"c","image":"nginx","resources":{},"securityContext":{}}]},"status":{}}`},
	}
	for _, c := range cases {
		typ := types[c.gvk]
		obj := reflect.New(typ).Interface()
		if err := json.Unmarshal([]byte(c.in), obj); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		out, err := json.Marshal(obj)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got, want := canonical(decode(out)), canonical(decode([]byte(c.want))); got != want {
			t.Errorf("%s: Go writes\n%s\nnot\n%s", c.name, got, want)
		}
		used, ok := check(t, c.gvk, []byte(c.in))
		if !ok {
			continue
		}
		// The rows that drop something are needed: without any one of
		// them the applier's result differs.
		rows := loadTable(t)[c.gvk]
		var dropping []string
		for _, i := range used {
			if !isToken(rows[i].Zero) {
				continue
			}
			dropping = append(dropping, rows[i].Path)
			fewer := append(append([]Row{}, rows[:i]...), rows[i+1:]...)
			if d, _, _ := compare(c.gvk, fewer, []byte(c.in)); len(d) == 0 {
				t.Errorf("%s: leaving out %v went unnoticed", c.name, rows[i])
			}
		}
		t.Logf("%s: dropped by %s", c.name, strings.Join(dropping, ", "))
	}
}

// TestFileUpToDate: the checked-in table is what the generator writes now.
func TestFileUpToDate(t *testing.T) {
	loadTable(t)
	const path = "../../../../crates/registry/data/go-zero-fields.tsv"
	have, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		t.Skipf("%s not found", path)
	}
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, tableText) {
		t.Errorf("%s is stale; regenerate it: %s", path, command)
	}
}

// TestOrderFileUpToDate: the checked-in member-order table is what the
// generator writes now. (That it is Go's order is checked on the Rust side:
// apimachinery's json_order tests write k8s.io/api's round-trip fixtures
// byte for byte with it.)
func TestOrderFileUpToDate(t *testing.T) {
	checkUpToDate(t, "../../../../crates/apimachinery/data/go-member-order.tsv", orderCommand,
		func(w io.Writer) error { return writeOrder(w, Kinds(Scheme())) })
}

// checkUpToDate reads the checked-in table at path, skipping when it is not
// there, and fails unless write writes it byte for byte now; it returns it.
func checkUpToDate(t *testing.T, path, command string, write func(io.Writer) error) []byte {
	t.Helper()
	have, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		t.Skipf("%s not found", path)
	}
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := write(&want); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, want.Bytes()) {
		t.Errorf("%s is stale; regenerate it: %s", path, command)
	}
	return have
}

// TestQuantityFileUpToDate: the checked-in quantity-field table is what the
// generator writes now, and it names the quantities everyone knows. (That
// kubext writes them as Go does is go/serialization's y-quantities.yaml.)
func TestQuantityFileUpToDate(t *testing.T) {
	const path = "../../../../crates/registry/data/go-quantity-fields.tsv"
	have := checkUpToDate(t, path, quantityCommand,
		func(w io.Writer) error { return writeQuantities(w, Kinds(Scheme())) })
	for _, row := range []string{
		"core\tv1\tPod\tspec.containers[].resources.limits{}\n",
		"core\tv1\tPersistentVolumeClaim\tstatus.capacity{}\n",
		"core\tv1\tNode\tstatus.allocatable{}\n",
		"core\tv1\tLimitRange\tspec.limits[].max{}\n",
		"storage.k8s.io\tv1\tCSIStorageCapacity\tcapacity\n",
	} {
		if !bytes.Contains(have, []byte(row)) {
			t.Errorf("%s lacks the row %q", path, row)
		}
	}
}
