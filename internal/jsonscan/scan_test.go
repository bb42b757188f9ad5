package jsonscan

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestScannerWalk(t *testing.T) {
	doc := []byte(` {"id":"x","choices":[{"index":0,"delta":{"content":"h\u00e9\n\"q\" \ud83d\ude00 caf\u00e9 日本","n":null},"finish_reason":null}],"usage":{"prompt_tokens":12,"f":1.5e2,"neg":-3},"k\u0065y":true} `)
	var s Scanner
	s.Reset(doc)
	if err := s.Enter('{'); err != nil {
		t.Fatal(err)
	}
	var content, escKey string
	var tokens, f, neg int
	for first := true; ; first = false {
		key, ok, err := s.NextKey(first)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		switch string(key) {
		case "choices":
			if err := s.Enter('['); err != nil {
				t.Fatal(err)
			}
			for f := true; ; f = false {
				ok, err := s.NextElem(f)
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					break
				}
				raw, err := s.Raw()
				if err != nil {
					t.Fatal(err)
				}
				var ch struct {
					Delta struct{ Content string } `json:"delta"`
				}
				if err := json.Unmarshal(raw, &ch); err != nil {
					t.Fatal(err)
				}
				var inner Scanner
				inner.Reset(raw)
				inner.Enter('{')
				for fi := true; ; fi = false {
					k, ok, _ := inner.NextKey(fi)
					if !ok {
						break
					}
					if string(k) != "delta" {
						inner.Skip()
						continue
					}
					inner.Enter('{')
					for fj := true; ; fj = false {
						k, ok, _ := inner.NextKey(fj)
						if !ok {
							break
						}
						if string(k) == "content" {
							content, _ = inner.OptString()
						} else {
							inner.Skip()
						}
					}
				}
				if content != ch.Delta.Content {
					t.Errorf("content %q, encoding/json says %q", content, ch.Delta.Content)
				}
			}
		case "usage":
			s.Enter('{')
			for f2 := true; ; f2 = false {
				k, ok, err := s.NextKey(f2)
				if err != nil || !ok {
					break
				}
				switch string(k) {
				case "prompt_tokens":
					tokens, _ = s.Int()
				case "f":
					f, _ = s.Int()
				case "neg":
					neg, _ = s.Int()
				}
			}
		case "key":
			escKey = "key"
			s.Skip()
		default:
			s.Skip()
		}
	}
	if err := s.End(); err != nil {
		t.Fatal(err)
	}
	if content != "hé\n\"q\" 😀 café 日本" || tokens != 12 || f != 150 || neg != -3 || escKey != "key" {
		t.Errorf("content %q tokens %d f %d neg %d key %q", content, tokens, f, neg, escKey)
	}
}

func FuzzScanner(f *testing.F) {
	for _, s := range []string{
		`{"a":[1,2.5,-3e4,true,false,null,"x\u00e9\ud800"]}`, `"\ud83d\ude00"`, `[]`, `{}`, `01`, `1.`, `"\x01"`,
		"\"\xff\xfe\"", `{"a" 1}`, `[1,]`, `{"a":1,}`, ` "tail" x`, `-`, `"\u12"`, `[[[[[]]]]]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var s Scanner
		s.Reset(data)
		err := s.Skip()
		if err == nil {
			err = s.End()
		}
		if valid := json.Valid(data); (err == nil) != valid {
			t.Fatalf("scanner err %v, json.Valid %v", err, valid)
		}
		var want string
		if json.Unmarshal(data, &want) == nil {
			s.Reset(data)
			got, err := s.OptString()
			if err != nil || got != want {
				t.Fatalf("String() = %q, %v; encoding/json %q", got, err, want)
			}
		}
		var wantN float64
		if json.Unmarshal(data, &wantN) == nil && wantN == float64(int64(wantN)) && wantN < 1<<50 && wantN > -(1<<50) {
			s.Reset(data)
			got, _, err := s.OptInt()
			if err != nil || got != int(wantN) {
				t.Fatalf("Int() = %d, %v; encoding/json %v", got, err, wantN)
			}
		}
	})
}

func TestObjectAndArrayWalk(t *testing.T) {
	var s Scanner
	s.Reset([]byte(`{"a":[1,2,3],"b":{"c":"x"},"skip":null}`))
	var sum int
	var c string
	err := s.Object(func(key []byte) error {
		switch string(key) {
		case "a":
			return s.Array(func() error {
				n, err := s.Int()
				sum += n
				return err
			})
		case "b":
			return s.Object(func(key []byte) (err error) {
				c, err = s.OptString()
				return err
			})
		}
		return s.Skip()
	})
	if err != nil || sum != 6 || c != "x" || s.End() != nil {
		t.Fatalf("sum %d c %q err %v", sum, c, err)
	}
	s.Reset([]byte(`{"a":1,"b":2}`))
	stop := errors.New("stop")
	calls := 0
	if err := s.Object(func([]byte) error { calls++; return stop }); err != stop || calls != 1 {
		t.Fatalf("walk must stop at fn's first error: %v after %d calls", err, calls)
	}
	s.Reset([]byte(`[1]`))
	if err := s.Object(func([]byte) error { return nil }); err == nil {
		t.Fatal("an array is not an object")
	}
}
