package cli

import (
	"bytes"
	"encoding/csv"
	"strings"

	"github.com/spf13/pflag"
)

// listFlag is pflag's stringArray (split false: each use adds one value) or
// stringSlice (split true: each use adds its comma-separated values), the
// same in parsing, Type and String, but without their cost at registration:
// pflag formats a list flag's default through a new csv.Writer (a 4 KiB
// buffer) when the flag is defined, so dsh's thirty-odd list flags
// allocated 120 KB at every start, enough with the rest to push a start
// past the runtime's first heap goal and into a collection before the
// prompt (docs/benchmarks.md, start-up). TestListFlagMatchesPflag compares
// it with pflag's own.
type listFlag struct {
	p       *[]string
	split   bool
	changed bool
}

// stringArrayVar and stringSliceVar define list flags on fl with a nil
// default, as fl.StringArrayVar and fl.StringSliceVar would.
func stringArrayVar(fl *pflag.FlagSet, p *[]string, name, usage string) {
	*p = nil
	fl.Var(&listFlag{p: p}, name, usage)
}

func stringSliceVar(fl *pflag.FlagSet, p *[]string, name, usage string) {
	*p = nil
	fl.Var(&listFlag{p: p, split: true}, name, usage)
}

func (l *listFlag) Set(v string) error {
	vals := []string{v}
	if l.split {
		var err error
		if vals, err = readCSV(v); err != nil {
			return err
		}
	}
	if !l.changed {
		*l.p = vals
		l.changed = true
	} else {
		*l.p = append(*l.p, vals...)
	}
	return nil
}

func (l *listFlag) Type() string {
	if l.split {
		return "stringSlice"
	}
	return "stringArray"
}

// String is pflag's form, "[a,b]" with CSV quoting; an empty list, every
// flag's default, is formatted without a writer.
func (l *listFlag) String() string {
	if len(*l.p) == 0 {
		return "[]"
	}
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	_ = w.Write(*l.p) // a bytes.Buffer does not fail
	w.Flush()
	return "[" + strings.TrimSuffix(b.String(), "\n") + "]"
}

// Append, Replace and GetSlice make it a pflag.SliceValue, as pflag's are
// (shell completion and Cobra's flag helpers use them).
func (l *listFlag) Append(v string) error {
	*l.p = append(*l.p, v)
	return nil
}

func (l *listFlag) Replace(vals []string) error {
	*l.p = append([]string(nil), vals...)
	return nil
}

func (l *listFlag) GetSlice() []string { return append([]string{}, *l.p...) }

func readCSV(v string) ([]string, error) {
	if v == "" {
		return []string{}, nil
	}
	return csv.NewReader(strings.NewReader(v)).Read()
}
