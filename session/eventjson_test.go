package session_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dshq/dsh/session"
)

// AppendJSON is what the SSE and WebSocket streams send and what the stores
// write; a client decoding it must get exactly the event json.Marshal would
// have given it, on one line.
func TestEventAppendJSONMatchesMarshal(t *testing.T) {
	op := session.ReplaceOp(3, 7)
	events := []session.Event{
		{Type: "assistant/chunk", Seq: 4, Time: 1700000000123, Data: json.RawMessage(`{"text":"a <b> & \"c\"\u2028"}`)},
		{Type: "tool/result", Seq: 12, Time: 1, Data: json.RawMessage("{\n  \"ok\": true,\r\n  \"n\": [1, 2]\n}"), SourceEventSeqs: []int64{9, 10}},
		{Type: "compact/summary", Seq: 20, Time: 2, Data: json.RawMessage(`"x"`), SurfaceOp: &op},
		{Type: "user/prompt", Seq: 0, Time: 3, Data: json.RawMessage(`{"text":"ünï"}`), SurfaceOp: &session.AppendOp},
		{Type: "odd \"type\" <x>", Seq: 1, Time: 4, Data: json.RawMessage(`null`)},
	}
	for _, e := range events {
		got, err := e.AppendJSON([]byte("prefix"))
		if err != nil {
			t.Fatalf("%s: %v", e.Type, err)
		}
		if !bytes.HasPrefix(got, []byte("prefix")) {
			t.Fatalf("%s: the buffer's contents were not kept: %q", e.Type, got)
		}
		got = got[len("prefix"):]
		if bytes.ContainsAny(got, "\n\r") {
			t.Errorf("%s: not one line: %q", e.Type, got)
		}
		want, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("%s: %q is not JSON: %v", e.Type, got, err)
		}
		if err := json.Unmarshal(want, &w); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(w, g); d != "" {
			t.Errorf("%s: AppendJSON decodes differently from json.Marshal (-marshal +append):\n%s", e.Type, d)
		}
		var back session.Event
		if err := json.Unmarshal(got, &back); err != nil || back.Seq != e.Seq || back.Type != e.Type {
			t.Errorf("%s: does not decode back into an event: %v %+v", e.Type, err, back)
		}
	}
}

// An empty, non-nil source list is written as [] (json.Marshal's omitempty
// drops it): the stores have always written it so, and reading it back
// keeps the list non-nil.
func TestEventAppendJSONKeepsAnEmptySourceList(t *testing.T) {
	got, err := session.Event{Type: "x", Seq: 1, Data: json.RawMessage(`{}`), SourceEventSeqs: []int64{}}.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"type":"x","seq":1,"time":0,"data":{},"sourceEventSeqs":[]}`; string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestEventAppendJSONRefusesNonJSONData(t *testing.T) {
	for _, data := range []json.RawMessage{nil, json.RawMessage(`{"a":`), json.RawMessage(`1 2`)} {
		buf, err := session.Event{Type: "x", Seq: 5, Data: data}.AppendJSON([]byte("kept"))
		if err == nil || !strings.Contains(err.Error(), "seq 5") {
			t.Errorf("data %q: err %v, want one naming the event", data, err)
		}
		if string(buf) != "kept" {
			t.Errorf("data %q: the buffer became %q", data, buf)
		}
	}
}
