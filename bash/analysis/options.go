package analysis

import "strings"

// style is how a program reads its options.
type style uint8

const (
	// gnuStyle is getopt_long: clusters of short options (-ab), a short
	// option's value attached or in the next word (-ofile, -o file), long
	// options with "=value" or the next word, unambiguous abbreviations of
	// long options (--out for --output), and options anywhere among the
	// operands until "--" (unless the grammar stops at the first operand).
	gnuStyle style = iota
	// goStyle is Go's flag package (and the go command): one or two
	// dashes, no clusters, "=value" or the next word for a flag that takes
	// a value, options until the first operand or "--".
	goStyle
)

// grammar is what a program's option reader needs to know: which options
// take a value. Everything else about options is in [program].
type grammar struct {
	style style
	// valued are the short option letters that take a value (gnuStyle).
	valued string
	// optional are the short option letters whose value is optional, so
	// only an attached one counts (-t5, not -t 5).
	optional string
	// long are the long options (gnuStyle) or flags (goStyle) that take a
	// value, with their dashes: "--output", "-exec".
	long []string
	// stop: options end at the first operand (getopt's "+", the go
	// command's build flags, wrappers).
	stop bool
	// permute (goStyle): flags may also follow operands (go test).
	permute bool
}

// option is one option as a program reads it.
type option struct {
	// name is the option with its dashes: "-o", "--output" (the long
	// option an abbreviation stands for), "-exec". A short option in a
	// cluster has its own name (-u in -uo).
	name string
	// value is the option's value; has reports that it has one.
	value Word
	has   bool
}

// parsedArgs are a command's arguments read by its program's grammar.
type parsedArgs struct {
	opts     []option
	operands []Word
	// dynamic: a word known only at run time stands where an option may,
	// so the options are not known for sure.
	dynamic bool
}

// has reports whether any of the options is present (long ones also as
// abbreviations, resolved by read).
func (p *parsedArgs) has(names ...string) bool {
	for _, o := range p.opts {
		for _, n := range names {
			if o.name == n {
				return true
			}
		}
	}
	return false
}

// values returns the values of the options named.
func (p *parsedArgs) values(names ...string) []Word {
	var out []Word
	for _, o := range p.opts {
		if !o.has {
			continue
		}
		for _, n := range names {
			if o.name == n {
				out = append(out, o.value)
			}
		}
	}
	return out
}

// read reads words (the arguments, without the program name) by g.
func (g *grammar) read(words []Word) parsedArgs {
	p := parsedArgs{operands: make([]Word, 0, len(words))}
	for i := 0; i < len(words); i++ {
		w := words[i]
		v := w.Value
		switch {
		case w.Dynamic:
			if w.MayBeOption || strings.HasPrefix(v, "-") {
				p.dynamic = true
			}
			p.operands = append(p.operands, w)
			if g.stop && !p.dynamic {
				p.operands = append(p.operands, words[i+1:]...)
				return p
			}
			continue
		case v == "--":
			p.operands = append(p.operands, words[i+1:]...)
			return p
		case v == "-" || !strings.HasPrefix(v, "-"):
			if g.stop || g.style == goStyle && !g.permute {
				p.operands = append(p.operands, words[i:]...)
				return p
			}
			p.operands = append(p.operands, w)
			continue
		}
		next := func() (Word, bool) {
			if i+1 < len(words) {
				i++
				return words[i], true
			}
			return Word{}, false
		}
		if g.style == goStyle || strings.HasPrefix(v, "--") {
			name, val, eq := strings.Cut(v, "=")
			if g.style == goStyle && strings.HasPrefix(name, "--") {
				name = name[1:] // the flag package takes -x and --x alike
			}
			full, valued := g.longName(name)
			o := option{name: full}
			switch {
			case eq:
				o.value, o.has = litWord(val), true
				if w.Dynamic {
					o.value.Dynamic = true
				}
			case valued:
				o.value, o.has = next()
			}
			p.opts = append(p.opts, o)
			continue
		}
		// A cluster of short options: a letter that takes a value ends it,
		// with the rest of the word or the next word as the value.
		for j := 1; j < len(v); j++ {
			c := v[j]
			o := option{name: "-" + string(c)}
			switch {
			case strings.IndexByte(g.valued, c) >= 0:
				if rest := v[j+1:]; rest != "" {
					o.value, o.has = litWord(rest), true
				} else {
					o.value, o.has = next()
				}
				j = len(v)
			case strings.IndexByte(g.optional, c) >= 0:
				if rest := v[j+1:]; rest != "" {
					o.value, o.has = litWord(rest), true
				}
				j = len(v)
			}
			p.opts = append(p.opts, o)
		}
	}
	return p
}

// longName resolves a long option (or Go flag) as its program would: the
// exact name, or the one valued option it abbreviates (gnuStyle). It
// reports whether the option takes a value.
func (g *grammar) longName(name string) (string, bool) {
	for _, l := range g.long {
		if l == name {
			return l, true
		}
	}
	if g.style != gnuStyle || len(name) < 3 {
		return name, false
	}
	found := ""
	for _, l := range g.long {
		if strings.HasPrefix(l, name) {
			if found != "" {
				return name, true // ambiguous: the program refuses it; take the next word to be safe
			}
			found = l
		}
	}
	if found != "" {
		return found, true
	}
	return name, false
}

// given reports whether opt appears among the options as written or as an
// abbreviation GNU getopt_long (or git's parse-options) accepts: --no-ind
// is --no-index. Short options must match exactly.
func (p *parsedArgs) given(opts ...string) bool {
	for _, o := range p.opts {
		for _, want := range opts {
			if o.name == want || strings.HasPrefix(want, "--") && len(o.name) >= 3 && strings.HasPrefix(want, o.name) {
				return true
			}
		}
	}
	return false
}
