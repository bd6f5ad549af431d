package abi

import "testing"

func TestLegacyLayoutNamesAreUniqueAndFound(t *testing.T) {
	entries := LegacyLayout()
	if len(entries) == 0 {
		t.Fatal("LegacyLayout returned no entries")
	}
	seen := make(map[string]bool)
	for _, e := range entries {
		if seen[e.Name] {
			t.Errorf("duplicate entry %q", e.Name)
		}
		seen[e.Name] = true
		if v, ok := Lookup(e.Name); !ok || v != e.Value {
			t.Errorf("Lookup(%q) = %d, %v; want %d, true", e.Name, v, ok, e.Value)
		}
	}
	if _, ok := Lookup("sizeof(noSuchStruct)"); ok {
		t.Error("Lookup found an entry that does not exist")
	}
}

func TestLegacyLayoutReturnsACopy(t *testing.T) {
	LegacyLayout()[0].Value++
	if got, want := LegacyLayout()[0].Value, mustLookup(t, LegacyLayout()[0].Name); got != want {
		t.Errorf("modifying the returned slice changed the layout: %d != %d", got, want)
	}
}

func TestTriggerEncodeDecodeRoundTrip(t *testing.T) {
	in := TriggerFields{Type: 5, DstDataOffset: 0xfedcba98, SrcDataOffset: 0x12345678, DataSize: 0x9abcdef0, ConnID: 1023}
	if got := DecodeTrigger(EncodeTrigger(in)); got != in {
		t.Errorf("DecodeTrigger(EncodeTrigger(%+v)) = %+v", in, got)
	}
}

func mustLookup(t *testing.T, name string) uint64 {
	t.Helper()
	v, ok := Lookup(name)
	if !ok {
		t.Fatalf("no entry %q", name)
	}
	return v
}
