package sse

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

type got struct {
	Type, Data, ID string
	Retry          time.Duration
	Partial        bool
}

func readAll(t testing.TB, r io.Reader, max int) ([]got, error) {
	t.Helper()
	sr := NewReaderSize(r, max)
	var out []got
	for {
		ev, err := sr.Next()
		if err != nil {
			if err == io.EOF {
				return out, nil
			}
			return out, err
		}
		out = append(out, got{ev.Type, string(ev.Data), ev.ID, ev.Retry, ev.Partial})
	}
}

func TestReader(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []got
	}{
		{"single", "data: hello\n\n", []got{{Data: "hello"}}},
		{"no space", "data:hello\n\n", []got{{Data: "hello"}}},
		{"only one space stripped", "data:  two\n\n", []got{{Data: " two"}}},
		{"multi-line", "data: a\ndata: b\ndata:\n\n", []got{{Data: "a\nb\n"}}},
		{"empty data is an event", "data:\n\n", []got{{Data: ""}}},
		{"no data no event", "event: x\nid: 1\n\n", nil},
		{"comments", ": keep-alive\n\n:\ndata: x\n: mid\n\n", []got{{Data: "x"}}},
		{"event type", "event: message_start\ndata: {}\n\ndata: 2\n\n", []got{{Type: "message_start", Data: "{}"}, {Data: "2"}}},
		{"crlf", "event: a\r\ndata: 1\r\n\r\ndata: 2\r\n\r\n", []got{{Type: "a", Data: "1"}, {Data: "2"}}},
		{"cr only", "data: 1\rdata: 2\r\rdata: 3\r\r", []got{{Data: "1\n2"}, {Data: "3"}}},
		{"mixed endings", "data: 1\r\n\ndata: 2\n\r\n", []got{{Data: "1"}, {Data: "2"}}},
		{"id persists", "id: 7\ndata: a\n\ndata: b\n\nid\ndata: c\n\n", []got{{Data: "a", ID: "7"}, {Data: "b", ID: "7"}, {Data: "c"}}},
		{"id with NUL ignored", "id: 1\x002\ndata: a\n\n", []got{{Data: "a"}}},
		{"retry", "retry: 1500\ndata: a\n\nretry: x\ndata: b\n\n", []got{{Data: "a", Retry: 1500 * time.Millisecond}, {Data: "b", Retry: 1500 * time.Millisecond}}},
		{"field without colon", "data\n\n", []got{{Data: ""}}},
		{"unknown field", "foo: bar\ndata: x\n\n", []got{{Data: "x"}}},
		{"bom", "\xef\xbb\xbfdata: x\n\n", []got{{Data: "x"}}},
		{"trailing event without blank line", "data: a\n\ndata: [DONE]\n", []got{{Data: "a"}, {Data: "[DONE]"}}},
		{"unterminated last line", "data: a\n\ndata: {\"x\":", []got{{Data: "a"}, {Data: "{\"x\":", Partial: true}}},
		{"colon in value", "data: a: b\n\n", []got{{Data: "a: b"}}},
		{"utf8", "data: héllo 世界\n\n", []got{{Data: "héllo 世界"}}},
		{"empty stream", "", nil},
		{"only blank lines", "\n\n\r\n", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, mode := range []string{"whole", "byte", "half"} {
				var r io.Reader = strings.NewReader(tc.in)
				switch mode {
				case "byte":
					r = iotest.OneByteReader(r)
				case "half":
					r = iotest.HalfReader(r)
				}
				out, err := readAll(t, r, 0)
				if err != nil {
					t.Fatalf("%s: %v", mode, err)
				}
				if len(out) != len(tc.want) {
					t.Fatalf("%s: got %d events %+v, want %+v", mode, len(out), out, tc.want)
				}
				for i := range out {
					if out[i] != tc.want[i] {
						t.Errorf("%s: event %d = %+v, want %+v", mode, i, out[i], tc.want[i])
					}
				}
			}
		})
	}
}

func TestReaderLimits(t *testing.T) {
	long := "data: " + strings.Repeat("x", 100) + "\n\n"
	if _, err := readAll(t, strings.NewReader(long), 50); !errors.Is(err, ErrTooLong) {
		t.Fatalf("long line: err = %v, want ErrTooLong", err)
	}
	many := strings.Repeat("data: "+strings.Repeat("y", 20)+"\n", 10) + "\n"
	if _, err := readAll(t, strings.NewReader(many), 100); !errors.Is(err, ErrTooLong) {
		t.Fatalf("long event: err = %v, want ErrTooLong", err)
	}
	ok := "data: " + strings.Repeat("z", 44) + "\n\n" // line is exactly 50 bytes
	if out, err := readAll(t, strings.NewReader(ok), 50); err != nil || len(out) != 1 {
		t.Fatalf("line at the limit: %v %v", out, err)
	}
	// A large event well inside the default limit grows the buffer.
	big := "data: " + strings.Repeat("q", 200_000) + "\n\n"
	out, err := readAll(t, strings.NewReader(big), 0)
	if err != nil || len(out) != 1 || len(out[0].Data) != 200_000 {
		t.Fatalf("big event: %d events, %v", len(out), err)
	}
}

func TestReaderReadError(t *testing.T) {
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader("data: a\n\ndata: b"), iotest.ErrReader(boom))
	out, err := readAll(t, r, 0)
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	if len(out) != 1 || out[0].Data != "a" {
		t.Fatalf("events before the error = %+v", out)
	}
}

func TestReaderNoProgress(t *testing.T) {
	_, err := readAll(t, zeroReader{}, 0)
	if !errors.Is(err, io.ErrNoProgress) {
		t.Fatalf("err = %v", err)
	}
}

type zeroReader struct{}

func (zeroReader) Read([]byte) (int, error) { return 0, nil }

func TestReaderAllocs(t *testing.T) {
	var sb strings.Builder
	for i := 0; i < 1000; i++ {
		sb.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0}\n\n")
	}
	in := sb.String()
	allocs := testing.AllocsPerRun(5, func() {
		sr := NewReader(strings.NewReader(in))
		for {
			if _, err := sr.Next(); err != nil {
				break
			}
		}
	})
	if allocs > 10 {
		t.Fatalf("%v allocations for 1000 events", allocs)
	}
}

func FuzzReader(f *testing.F) {
	for _, s := range []string{
		"data: hello\n\n",
		"event: a\r\ndata: 1\r\ndata: 2\r\n\r\n",
		"data: 1\rdata: 2\r\r",
		": comment\nid: 3\nretry: 100\ndata\n\n",
		"\xef\xbb\xbfdata: x",
		"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n",
	} {
		f.Add([]byte(s), uint8(0))
	}
	f.Fuzz(func(t *testing.T, in []byte, chunk uint8) {
		var r io.Reader = strings.NewReader(string(in))
		if chunk%3 == 1 {
			r = iotest.OneByteReader(r)
		} else if chunk%3 == 2 {
			r = iotest.HalfReader(r)
		}
		sr := NewReaderSize(r, 64+int(chunk))
		for i := 0; ; i++ {
			ev, err := sr.Next()
			if err != nil {
				if err != io.EOF && !errors.Is(err, ErrTooLong) {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if len(ev.Data) > 64+int(chunk) {
				t.Fatalf("event of %d bytes exceeds the limit", len(ev.Data))
			}
			if i > len(in)+1 {
				t.Fatalf("more events than input bytes")
			}
		}
	})
}
