package tpindex

import (
	"fmt"
	"reflect"
	"testing"
)

type key struct {
	name string
	p    int32
}

func TestIndex(t *testing.T) {
	x := New[key]()
	vals := map[key]*key{}
	add := func(name string, p int32) {
		k := key{name, p}
		v := &k
		x.Set(name, p, v)
		vals[k] = v
	}
	sorted := func() []key {
		var out []key
		x.Sorted(func(name string, p int32, v *key) {
			if *v != (key{name, p}) {
				t.Fatalf("%s/%d holds %v", name, p, *v)
			}
			out = append(out, key{name, p})
		})
		return out
	}
	add("b", 2)
	add("a", 0)
	add("b", 0)
	add("a", 5)
	if x.Len() != 4 || x.Get("b", 1) != nil || x.Get("b", 9) != nil || x.Get("b", -1) != nil || x.Get("c", 0) != nil {
		t.Fatal("absent partitions found, or a wrong count")
	}
	for k, v := range vals {
		if x.Get(k.name, k.p) != v {
			t.Fatalf("%v not found", k)
		}
	}
	if got, want := sorted(), []key{{"a", 0}, {"a", 5}, {"b", 0}, {"b", 2}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("sorted %v, want %v", got, want)
	}
	n := 0
	x.Each(func(*key) { n++ })
	if n != 4 {
		t.Fatalf("Each visited %d", n)
	}
	add("b", 2) // replaced: still one
	if x.Len() != 4 || x.Get("b", 2) != vals[key{"b", 2}] {
		t.Fatal("replacing a value")
	}
	if x.Remove("b", 1) != nil || x.Remove("c", 0) != nil || x.Len() != 4 {
		t.Fatal("removed an absent partition")
	}
	if x.Remove("a", 0) != vals[key{"a", 0}] || x.Remove("a", 5) == nil {
		t.Fatal("Remove returned the wrong value")
	}
	if _, ok := x.topics["a"]; ok || x.Len() != 2 {
		t.Fatal("a topic without values kept")
	}
	x.Set("b", 0, nil) // removes
	if got := sorted(); !reflect.DeepEqual(got, []key{{"b", 2}}) || x.Len() != 1 {
		t.Fatalf("after removal: %v", got)
	}
	add("a", 1) // a topic entered again
	if x.Get("a", 1) == nil || x.Get("a", 0) != nil || x.Len() != 2 {
		t.Fatal("re-entered topic")
	}

	// Huge partition numbers are held apart (no slice of that length),
	// negative ones not at all.
	add("b", 2_000_000_000)
	add("b", denseLimit)
	x.Set("b", -3, &key{"b", -3})
	if x.Len() != 4 || x.Get("b", -3) != nil || len(x.topics["b"].vals) > denseLimit {
		t.Fatalf("huge or negative partitions: len %d, slice %d", x.Len(), len(x.topics["b"].vals))
	}
	if got, want := sorted(), []key{{"a", 1}, {"b", 2}, {"b", denseLimit}, {"b", 2_000_000_000}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("sorted %v, want %v", got, want)
	}
	add("b", denseLimit) // replaced: still one
	if x.Len() != 4 || x.Remove("b", 2_000_000_000) == nil || x.Remove("b", denseLimit) == nil || x.Remove("b", 2) == nil {
		t.Fatal("huge partitions")
	}
	if _, ok := x.topics["b"]; ok || x.Len() != 1 {
		t.Fatal("a topic without values kept")
	}
}

// Looking up each of 100,000 partitions (100 topics of 1,000), as every
// pass at a broker's start does: the index against a map keyed by topic
// name and partition.
func BenchmarkLookups(b *testing.B) {
	x := New[key]()
	m := map[key]*key{}
	var keys []key
	for t := 0; t < 100; t++ {
		for p := int32(0); p < 1000; p++ {
			k := key{fmt.Sprintf("many-partitions-topic-%03d", t), p}
			v := &k
			x.Set(k.name, p, v)
			m[k] = v
			keys = append(keys, k)
		}
	}
	b.Run("index", func(b *testing.B) {
		for b.Loop() {
			for _, k := range keys {
				if x.Get(k.name, k.p) == nil {
					b.Fatal(k)
				}
			}
		}
	})
	b.Run("map", func(b *testing.B) {
		for b.Loop() {
			for _, k := range keys {
				if m[k] == nil {
					b.Fatal(k)
				}
			}
		}
	})
}
