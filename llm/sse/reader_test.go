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
	return readAllWith(t, r, max, bufferSize)
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

// Lines longer than the read buffer stream into the event's data: every
// input reads the same through a tiny buffer as through one that holds it
// whole, however the input is cut into reads.
func TestReaderLongLinesStream(t *testing.T) {
	inputs := []string{
		"data: " + strings.Repeat("a", 100) + "\n\n",
		"data:" + strings.Repeat("b", 100) + "\r\n\r\n",
		"data: x\ndata: " + strings.Repeat("c", 70) + "\rdata: y\r\r",
		"data:" + " " + strings.Repeat("d", 50) + "\n\n", // the space right after the buffer's end
		": " + strings.Repeat("comment ", 20) + "\ndata: after\n\n",
		strings.Repeat("n", 40) + ": unknown field\ndata: z\n\n",
		"data: " + strings.Repeat("e", 60) + "\ndata: tail\n\n",
		"data: " + strings.Repeat("f", 60), // cut off inside the long line
		"event: t\ndata: " + strings.Repeat("g", 60) + "\n\nevent: u\ndata: 2\n\n",
	}
	for i, in := range inputs {
		want, werr := readAllWith(t, strings.NewReader(in), 1<<20, 1<<20)
		for _, size := range []int{12, 13, 16, 33} {
			for _, mode := range []string{"whole", "byte", "half"} {
				var r io.Reader = strings.NewReader(in)
				switch mode {
				case "byte":
					r = iotest.OneByteReader(r)
				case "half":
					r = iotest.HalfReader(r)
				}
				got, err := readAllWith(t, r, 1<<20, size)
				if (err == nil) != (werr == nil) || len(got) != len(want) {
					t.Fatalf("input %d, buffer %d, %s: %+v %v; want %+v %v", i, size, mode, got, err, want, werr)
				}
				for j := range want {
					if got[j] != want[j] {
						t.Fatalf("input %d, buffer %d, %s: event %d = %+v, want %+v", i, size, mode, j, got[j], want[j])
					}
				}
			}
		}
	}
}

func readAllWith(t testing.TB, r io.Reader, max, size int) ([]got, error) {
	t.Helper()
	sr := newReader(r, max, size)
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

// Streamed lines are bounded like buffered ones, with an error that says
// what the limit is.
func TestReaderStreamedLimits(t *testing.T) {
	for name, in := range map[string]string{
		"data":         "data: " + strings.Repeat("x", 200) + "\n\n",
		"two lines":    "data: " + strings.Repeat("x", 60) + "\ndata: " + strings.Repeat("y", 60) + "\n\n",
		"comment":      ":" + strings.Repeat("c", 200) + "\n",
		"event name":   "event: " + strings.Repeat("e", 40) + "\n",
		"endless data": "data: " + strings.Repeat("z", 500),
	} {
		_, err := readAllWith(t, strings.NewReader(in), 100, 16)
		var tl *TooLongError
		if !errors.As(err, &tl) || !errors.Is(err, ErrTooLong) || tl.Limit != 100 || !strings.Contains(err.Error(), "size limit of 100 bytes") {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	if msg := (&TooLongError{Limit: DefaultMaxEventSize}).Error(); !strings.Contains(msg, "16 MiB") {
		t.Errorf("default limit reads %q", msg)
	}
}

// A huge event costs one copy, held only until the next event is asked
// for: the read buffer never grows, and the event's data is released.
func TestReaderHugeEventIsNotKept(t *testing.T) {
	huge := strings.Repeat("h", 10<<20)
	sr := NewReader(strings.NewReader("data: " + huge + "\n\ndata: small\n\n"))
	ev, err := sr.Next()
	if err != nil || len(ev.Data) != len(huge) {
		t.Fatalf("huge event: %d bytes, %v", len(ev.Data), err)
	}
	if cap(sr.buf) != bufferSize {
		t.Fatalf("the read buffer grew to %d bytes", cap(sr.buf))
	}
	ev, err = sr.Next()
	if err != nil || string(ev.Data) != "small" {
		t.Fatalf("next event %q, %v", ev.Data, err)
	}
	if cap(sr.data) > keepData {
		t.Fatalf("the huge event's %d bytes are still held", cap(sr.data))
	}
}

// Any input reads the same through a buffer too small for its lines as
// through one that holds them.
func FuzzReaderSmallBuffer(f *testing.F) {
	for _, s := range []string{
		"data: hello world, a long line\n\n",
		"event: a\r\ndata: 1234567890123\r\ndata: 2\r\n\r\n",
		"data:1234567890123\rdata: 2\r\r",
		": a comment longer than the buffer\nid: 3\nretry: 100\ndata\n\n",
		"\xef\xbb\xbfdata: xxxxxxxxxxxxxxxxxxxxxxx",
	} {
		f.Add([]byte(s), uint8(0))
	}
	f.Fuzz(func(t *testing.T, in []byte, chunk uint8) {
		read := func(size int) ([]got, error) {
			var r io.Reader = strings.NewReader(string(in))
			if chunk%2 == 1 {
				r = iotest.OneByteReader(r)
			}
			return readAllWith(t, r, 1<<20, size)
		}
		want, werr := read(1 << 20)
		got, err := read(16)
		if (err == nil) != (werr == nil) || len(got) != len(want) {
			// A field name longer than the small buffer is unknown to it;
			// only event/id/retry lines can differ, and only by being
			// refused or skipped.
			if werr == nil && err != nil && errors.Is(err, ErrTooLong) {
				return
			}
			t.Fatalf("small buffer: %+v %v; large: %+v %v", got, err, want, werr)
		}
		for j := range want {
			if got[j] != want[j] && !(got[j].Data == want[j].Data && got[j].Partial == want[j].Partial) {
				t.Fatalf("event %d: small buffer %+v, large %+v", j, got[j], want[j])
			}
		}
	})
}

// BenchmarkReaderHugeEvent reads one 10 MB event: B/op is what the reader
// allocates for it.
func BenchmarkReaderHugeEvent(b *testing.B) {
	in := "data: " + strings.Repeat("h", 10<<20) + "\n\ndata: small\n\n"
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		sr := NewReader(strings.NewReader(in))
		for {
			if _, err := sr.Next(); err != nil {
				break
			}
		}
	}
}
