package analysis

import (
	"strings"
	"testing"
)

// effective renders the reading of each command that says what it is.
func effective(l *Line) []string {
	var out []string
	for _, c := range l.Commands {
		if c.Effective == nil {
			out = append(out, "(inner)")
			continue
		}
		out = append(out, JoinWords(c.Effective.Words))
	}
	return out
}

func TestWrappersAreUnwrapped(t *testing.T) {
	for _, tt := range []struct {
		line, want string
		problem    bool
	}{
		{line: "sudo -u bob rm x", want: "sudo -u bob rm x"}, // privileged: the wrapper itself
		{line: "nohup rm x", want: "rm x"},
		{line: "timeout -s KILL 10 rm x", want: "rm x"},
		{line: "timeout 10", want: "timeout 10"},
		{line: "nice -n 5 rm x", want: "rm x"},
		{line: "nice -10 rm x", want: "rm x"},
		{line: "stdbuf -oL rm x", want: "rm x"},
		{line: "setsid rm x", want: "rm x"},
		{line: "ionice -c 3 rm x", want: "rm x"},
		{line: "ionice -p 1 2", want: "ionice -p 1 2"},
		{line: "command -v rm", want: "command -v rm"},
		{line: "command rm x", want: "rm x"},
		{line: "exec -a name rm x", want: "rm x"},
		{line: "env -u HOME X=1 rm x", want: "rm x"},
		{line: "command time -p rm x", want: "rm x"},
		{line: "xargs -n1 rm", want: "rm"},
		{line: "busybox rm x", want: "rm x"},
		{line: "timeout 5 nice env rm x", want: "rm x"},
		{line: "sudo -s rm x", want: "sudo -s rm x", problem: true},
		{line: "env PATH=/tmp rm x", want: "rm x", problem: true},
	} {
		l := Analyze(tt.line, "/home/u")
		got := effective(l)
		if len(got) != 1 || got[0] != tt.want {
			t.Errorf("%q: effective %q, want %q", tt.line, got, tt.want)
		}
		if (len(l.Problems) > 0) != tt.problem {
			t.Errorf("%q: problems %q", tt.line, l.Problems)
		}
		if l.Commands[0].Text != tt.line {
			t.Errorf("%q: text %q", tt.line, l.Commands[0].Text)
		}
	}
}

func TestRedirectionsAreFiles(t *testing.T) {
	l := Analyze(`cat < in.txt > out.txt 2>&1; echo x >> ~/log; echo y > "$F"`, "/home/u")
	var reads, writes []string
	for _, f := range l.Reads {
		reads = append(reads, f.Path)
	}
	for _, f := range l.Writes {
		writes = append(writes, f.Path)
	}
	if strings.Join(reads, ",") != "in.txt" || strings.Join(writes, ",") != "out.txt,/home/u/log" {
		t.Errorf("reads %q, writes %q", reads, writes)
	}
	if !l.DynamicWrite || len(l.Problems) != 1 {
		t.Errorf("a write to $F: dynamic %v, problems %q", l.DynamicWrite, l.Problems)
	}
}
