package term

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"charm.land/lipgloss/v2"
)

// Syntax highlighting of fenced code blocks and diffs.
//
// dsh does not use chroma here, although it is the obvious library: Go runs
// every linked package's initialisation before main, and chroma's lexer and
// style registries parse their embedded XML at initialisation — 6 ms (lexers)
// and 6 ms (styles) at best on the test machine, on a start-up budget of 20 ms
// that dsh meets at 12 (docs/benchmarks.md). Nothing in Go defers a package's
// initialisation to first use, so chroma cannot be "loaded lazily" in
// process. What terminal readers of a code block need is much less than
// chroma's 250 state machines: keywords, strings, comments, numbers, calls and
// a few language shapes (keys in JSON and YAML, variables in shell, tags in
// markup). highlighter is a small table-driven scanner for that; its tables
// are built on the first code block, so start-up pays nothing.

// tokenKind classifies a span of code.
type tokenKind uint8

const (
	tokPlain tokenKind = iota
	tokKeyword
	tokType
	tokConstant // true, nil, None
	tokString
	tokNumber
	tokComment
	tokFunc     // an identifier followed by "("
	tokVariable // $VAR in shell, @decorators
	tokKey      // a JSON or YAML key, a TOML/INI key
	tokTag      // a markup tag name
	tokPunct    // operators and brackets
)

// lang describes how one language reads, as far as highlighting goes.
type lang struct {
	lineComments  []string
	blockComments [][2]string
	// quotes are the string delimiters; multiline ones may span lines
	// (Go's raw strings, JavaScript's templates, Python's triple quotes).
	quotes    string
	multiline string
	triple    bool // """ and ''' (Python)
	keywords  map[string]bool
	types     map[string]bool
	constants map[string]bool
	// fold matches keywords case-insensitively (SQL).
	fold bool
	// shell: $NAME and ${…} are variables; a word's "-flags" stay plain.
	shell bool
	// keys: "name": in JSON, name: in YAML, name = in TOML.
	keys byte
	// markup: <tag attr="v"> (HTML, XML).
	markup bool
	// dashIdent: identifiers may contain '-' (CSS, Lisp).
	dashIdent bool
}

func words(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

var (
	langsOnce sync.Once
	langs     map[string]*lang
)

// languages builds the tables once, on the first code block.
func languages() map[string]*lang {
	langsOnce.Do(func() {
		cConsts := words("true false NULL nullptr")
		cTypes := words("int char void short long float double signed unsigned bool size_t ssize_t int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t uintptr_t FILE auto")
		c := &lang{lineComments: []string{"//"}, blockComments: [][2]string{{"/*", "*/"}}, quotes: `"'`,
			keywords: words("if else for while do switch case default break continue return goto struct union enum typedef static extern const volatile register inline sizeof #include #define #ifdef #ifndef #endif #if #else #elif #pragma class namespace template typename public private protected virtual override new delete this using try catch throw operator friend constexpr noexcept"),
			types:    cTypes, constants: cConsts}
		goL := &lang{lineComments: []string{"//"}, blockComments: [][2]string{{"/*", "*/"}}, quotes: "\"'`", multiline: "`",
			keywords:  words("break case chan const continue default defer else fallthrough for func go goto if import interface map package range return select struct switch type var"),
			types:     words("bool byte complex64 complex128 error float32 float64 int int8 int16 int32 int64 rune string uint uint8 uint16 uint32 uint64 uintptr any comparable"),
			constants: words("true false nil iota")}
		py := &lang{lineComments: []string{"#"}, quotes: `"'`, triple: true,
			keywords:  words("and as assert async await break class continue def del elif else except finally for from global if import in is lambda nonlocal not or pass raise return try while with yield match case print"),
			types:     words("int float str bytes bool list dict set tuple object type complex frozenset bytearray Exception"),
			constants: words("True False None self cls")}
		js := &lang{lineComments: []string{"//"}, blockComments: [][2]string{{"/*", "*/"}}, quotes: "\"'`", multiline: "`",
			keywords:  words("async await break case catch class const continue debugger default delete do else export extends finally for from function if import in instanceof let new of return static super switch this throw try typeof var void while with yield as implements interface type enum declare namespace readonly abstract public private protected keyof satisfies"),
			types:     words("string number boolean any unknown never object void bigint symbol Array Promise Map Set Record Partial"),
			constants: words("true false null undefined NaN Infinity")}
		rust := &lang{lineComments: []string{"//"}, blockComments: [][2]string{{"/*", "*/"}}, quotes: `"`,
			keywords:  words("as async await break const continue crate dyn else enum extern fn for if impl in let loop match mod move mut pub ref return self Self static struct super trait type unsafe use where while macro_rules"),
			types:     words("i8 i16 i32 i64 i128 isize u8 u16 u32 u64 u128 usize f32 f64 bool char str String Vec Option Result Box Rc Arc HashMap"),
			constants: words("true false None Some Ok Err")}
		java := &lang{lineComments: []string{"//"}, blockComments: [][2]string{{"/*", "*/"}}, quotes: `"'`,
			keywords:  words("abstract assert break case catch class const continue default do else enum extends final finally for goto if implements import instanceof interface native new package private protected public return static strictfp super switch synchronized this throw throws transient try volatile while var record sealed permits yield fun val when object companion data suspend override open internal lateinit namespace using async await readonly get set"),
			types:     words("boolean byte char double float int long short void String Object Integer List Map Unit Any Int Long Boolean string int bool"),
			constants: words("true false null")}
		rb := &lang{lineComments: []string{"#"}, quotes: `"'`,
			keywords:  words("alias and begin break case class def defined? do else elsif end ensure for if in module next not or redo rescue retry return self super then undef unless until when while yield require attr_accessor attr_reader"),
			constants: words("true false nil")}
		sh := &lang{lineComments: []string{"#"}, quotes: `"'`, multiline: `"'`, shell: true,
			keywords:  words("if then else elif fi case esac for while until do done in function select time return exit export local readonly declare unset shift break continue source alias set trap eval exec"),
			types:     words("echo cd ls cat grep sed awk find xargs git go make npm npx node python python3 pip docker kubectl curl wget tar chmod chown mkdir rm cp mv touch sudo apt apt-get printf test read"),
			constants: words("true false")}
		json := &lang{quotes: `"`, keys: '"', constants: words("true false null")}
		yaml := &lang{lineComments: []string{"#"}, quotes: `"'`, keys: ':', constants: words("true false null yes no on off ~")}
		toml := &lang{lineComments: []string{"#"}, quotes: `"'`, triple: true, keys: '=', constants: words("true false")}
		sql := &lang{lineComments: []string{"--"}, blockComments: [][2]string{{"/*", "*/"}}, quotes: `'"`, fold: true,
			keywords:  words("select from where and or not insert into values update set delete create table drop alter add index on join left right inner outer full cross group by order having limit offset as distinct union all case when then else end is null in exists like between primary key foreign references default unique begin commit rollback transaction with returning if view trigger grant revoke asc desc"),
			types:     words("int integer bigint smallint text varchar char boolean bool timestamp timestamptz date time real double numeric decimal serial bigserial json jsonb blob uuid"),
			constants: words("true false null")}
		html := &lang{blockComments: [][2]string{{"<!--", "-->"}}, quotes: `"'`, markup: true}
		css := &lang{blockComments: [][2]string{{"/*", "*/"}}, quotes: `"'`, dashIdent: true,
			keywords: words("@media @import @keyframes @font-face !important from to and not only")}
		lua := &lang{lineComments: []string{"--"}, quotes: `"'`,
			keywords:  words("and break do else elseif end for function goto if in local not or repeat return then until while"),
			constants: words("true false nil")}
		mk := &lang{lineComments: []string{"#"}, quotes: `"'`, shell: true,
			keywords: words("ifeq ifneq ifdef ifndef else endif include define endef export override .PHONY FROM RUN CMD ENTRYPOINT COPY ADD ENV ARG WORKDIR EXPOSE USER VOLUME LABEL AS")}
		php := &lang{lineComments: []string{"//", "#"}, blockComments: [][2]string{{"/*", "*/"}}, quotes: `"'`, shell: true,
			keywords:  words("abstract and array as break case catch class clone const continue declare default do echo else elseif empty endif endforeach endwhile extends final finally fn for foreach function global if implements include interface isset list match namespace new or print private protected public readonly require return static switch throw trait try unset use var while yield"),
			constants: words("true false null TRUE FALSE NULL")}
		langs = map[string]*lang{
			"go": goL, "golang": goL,
			"python": py, "py": py, "python3": py,
			"javascript": js, "js": js, "jsx": js, "mjs": js, "cjs": js, "typescript": js, "ts": js, "tsx": js,
			"rust": rust, "rs": rust,
			"c": c, "h": c, "cpp": c, "c++": c, "cc": c, "hpp": c, "cxx": c, "objc": c,
			"java": java, "kotlin": java, "kt": java, "scala": java, "csharp": java, "cs": java, "c#": java, "swift": java, "dart": java,
			"ruby": rb, "rb": rb,
			"sh": sh, "bash": sh, "shell": sh, "zsh": sh, "console": sh, "shellsession": sh, "fish": sh, "ksh": sh,
			"json": json, "jsonc": json, "json5": json, "jsonl": json,
			"yaml": yaml, "yml": yaml,
			"toml": toml, "ini": toml, "cfg": toml, "conf": toml,
			"sql": sql, "postgres": sql, "postgresql": sql, "mysql": sql, "sqlite": sql, "psql": sql,
			"html": html, "xml": html, "svg": html, "vue": html, "svelte": html,
			"css": css, "scss": css, "less": css,
			"lua":      lua,
			"makefile": mk, "make": mk, "dockerfile": mk, "docker": mk,
			"php": php,
		}
	})
	return langs
}

// lookupLang finds the language of a fence's info string ("go", "Go",
// "js title=x"); nil when unknown.
func lookupLang(info string) *lang {
	name, _, _ := strings.Cut(strings.TrimSpace(info), " ")
	name = strings.ToLower(strings.TrimPrefix(name, "."))
	if name == "" {
		return nil
	}
	return languages()[name]
}

// isDiffLang reports whether a fence's info string names a diff.
func isDiffLang(info string) bool {
	name, _, _ := strings.Cut(strings.TrimSpace(info), " ")
	switch strings.ToLower(name) {
	case "diff", "patch", "udiff":
		return true
	}
	return false
}

// codePalette paints token kinds; the zero value paints nothing.
type codePalette struct {
	paint [tokPunct + 1]paint
}

func newCodePalette(plain bool) codePalette {
	var p codePalette
	id := func(s string) string { return s }
	for i := range p.paint {
		p.paint[i] = id
	}
	if plain {
		return p
	}
	fg := func(c string) paint {
		s := lipgloss.NewStyle().Foreground(lipgloss.Color(c))
		return func(x string) string { return s.Render(x) }
	}
	p.paint[tokKeyword] = fg("170")
	p.paint[tokType] = fg("75")
	p.paint[tokConstant] = fg("209")
	p.paint[tokString] = fg("114")
	p.paint[tokNumber] = fg("209")
	cs := lipgloss.NewStyle().Foreground(lipgloss.Color("244")).Italic(true)
	p.paint[tokComment] = func(x string) string { return cs.Render(x) }
	p.paint[tokFunc] = fg("81")
	p.paint[tokVariable] = fg("179")
	p.paint[tokKey] = fg("75")
	p.paint[tokTag] = fg("170")
	p.paint[tokPunct] = fg("250")
	return p
}

// highlighter colours the lines of one code block; it carries state from
// line to line (an open block comment, a multi-line string).
type highlighter struct {
	l   *lang
	pal *codePalette
	// open is the delimiter of a comment or string the previous line left
	// open, with its kind.
	open     string
	openKind tokenKind
	markupIn bool // inside a tag (<a href=…>)
}

// line returns one line of code, coloured.
func (h *highlighter) line(s string) string {
	if h.l == nil {
		return s
	}
	var b strings.Builder
	emit := func(k tokenKind, t string) {
		if t == "" {
			return
		}
		if k == tokPlain {
			b.WriteString(t)
			return
		}
		b.WriteString(h.pal.paint[k](t))
	}
	i := 0
	if h.open != "" {
		end := strings.Index(s, h.open)
		if end < 0 {
			emit(h.openKind, s)
			return b.String()
		}
		emit(h.openKind, s[:end+len(h.open)])
		i = end + len(h.open)
		h.open = ""
	}
	l := h.l
	plainFrom := i
	flush := func(to int) {
		emit(tokPlain, s[plainFrom:to])
	}
	for i < len(s) {
		rest := s[i:]
		// Comments.
		if c, ok := hasAnyPrefix(rest, l.lineComments); ok && h.commentStart(s, i, c) {
			flush(i)
			emit(tokComment, rest)
			return b.String()
		}
		if bc, ok := blockStart(rest, l.blockComments); ok {
			flush(i)
			end := strings.Index(rest[len(bc[0]):], bc[1])
			if end < 0 {
				emit(tokComment, rest)
				h.open, h.openKind = bc[1], tokComment
				return b.String()
			}
			n := len(bc[0]) + end + len(bc[1])
			emit(tokComment, rest[:n])
			i += n
			plainFrom = i
			continue
		}
		c := s[i]
		// Markup tags.
		if l.markup {
			if c == '<' && i+1 < len(s) && (isIdentStart(rune(s[i+1])) || s[i+1] == '/' || s[i+1] == '!' || s[i+1] == '?') {
				flush(i)
				j := i + 1
				for j < len(s) && (s[j] == '/' || s[j] == '!' || s[j] == '?') {
					j++
				}
				k := j
				for k < len(s) && (isIdentByte(s[k]) || s[k] == '-' || s[k] == ':' || s[k] == '.') {
					k++
				}
				emit(tokPunct, s[i:j])
				emit(tokTag, s[j:k])
				h.markupIn = true
				i, plainFrom = k, k
				continue
			}
			if c == '>' && h.markupIn {
				flush(i)
				emit(tokPunct, ">")
				h.markupIn = false
				i++
				plainFrom = i
				continue
			}
			if !h.markupIn {
				i++
				continue
			}
		}
		// Strings.
		if strings.IndexByte(l.quotes, c) >= 0 {
			flush(i)
			q := string(c)
			if l.triple && strings.HasPrefix(rest, q+q+q) {
				q = q + q + q
			}
			j, closed := scanString(s, i+len(q), q, l.shell && c == '\'')
			kind := tokString
			if l.keys == '"' && closed && strings.HasPrefix(strings.TrimLeft(s[j:], " \t"), ":") {
				kind = tokKey
			}
			emit(kind, s[i:j])
			if !closed && (len(q) == 3 || strings.Contains(l.multiline, q)) {
				h.open, h.openKind = q, tokString
				return b.String()
			}
			i, plainFrom = j, j
			continue
		}
		// Shell variables.
		if l.shell && c == '$' && i+1 < len(s) {
			j := i + 1
			switch {
			case s[j] == '{':
				if e := strings.IndexByte(s[j:], '}'); e >= 0 {
					j += e + 1
				} else {
					j = len(s)
				}
			case s[j] == '(':
				j = i + 1 // $(…): the command inside reads as code
			default:
				for j < len(s) && (isIdentByte(s[j]) || (j == i+1 && strings.IndexByte("?#@*!$-0123456789", s[j]) >= 0)) {
					j++
					if j == i+2 && strings.IndexByte("?#@*!$-", s[i+1]) >= 0 {
						break
					}
				}
			}
			if j > i+1 {
				flush(i)
				emit(tokVariable, s[i:j])
				i, plainFrom = j, j
				continue
			}
		}
		// Numbers (not inside identifiers).
		if c >= '0' && c <= '9' && (i == 0 || !isIdentByte(s[i-1])) {
			flush(i)
			j := i + 1
			for j < len(s) && (isIdentByte(s[j]) || s[j] == '.' && j+1 < len(s) && s[j+1] >= '0' && s[j+1] <= '9') {
				j++
			}
			emit(tokNumber, s[i:j])
			i, plainFrom = j, j
			continue
		}
		// Identifiers and keywords.
		r, size := utf8.DecodeRuneInString(rest)
		wordStart := i == 0 || s[i-1] == ' ' || s[i-1] == '\t' || s[i-1] == '('
		if isIdentStart(r) || (c == '#' && i == strings.IndexFunc(s, notSpace)) || (c == '@' && wordStart && l.keywords != nil) || (c == '.' && wordStart && l.keys == 0 && l.shell) {
			j := i + size
			for j < len(s) {
				r2, n := utf8.DecodeRuneInString(s[j:])
				if !isIdentRune(r2) && !(l.dashIdent && r2 == '-') && !(r2 == '?' && j == i+size) {
					break
				}
				j += n
			}
			if j == i+size && (c == '#' || c == '@' || c == '.') {
				i++ // a lone sign
				continue
			}
			word := s[i:j]
			kind := h.classify(word, s, j)
			if kind != tokPlain {
				flush(i)
				emit(kind, word)
				plainFrom = j
			}
			i = j
			continue
		}
		if strings.IndexByte("{}[]()<>=!+-*/%&|^~:;,.?", c) >= 0 && !l.shell && l.keys == 0 {
			flush(i)
			emit(tokPunct, s[i:i+1])
			i++
			plainFrom = i
			continue
		}
		i += size
	}
	flush(len(s))
	return b.String()
}

// commentStart reports whether the comment marker c at i starts a comment
// (a shell "#" only at the start of a word: "$#" and "a#b" are not).
func (h *highlighter) commentStart(s string, i int, c string) bool {
	if c != "#" || !h.l.shell && h.l.keys == 0 {
		return true
	}
	return i == 0 || s[i-1] == ' ' || s[i-1] == '\t'
}

// classify names the kind of an identifier ending at j in s.
func (h *highlighter) classify(word, s string, j int) tokenKind {
	l := h.l
	key := word
	if l.fold {
		key = strings.ToLower(word)
	}
	switch {
	case l.keys == ':' || l.keys == '=':
		// YAML "name:" and TOML "name =" at the start of the line.
		if strings.TrimSpace(s[:j-len(word)]) == "" || strings.HasSuffix(strings.TrimSpace(s[:j-len(word)]), "-") {
			rest := strings.TrimLeft(s[j:], " \t")
			if strings.HasPrefix(rest, string(l.keys)) {
				return tokKey
			}
		}
	case l.markup:
		if h.markupIn {
			return tokKey // an attribute name
		}
		return tokPlain
	}
	switch {
	case l.keywords[key]:
		return tokKeyword
	case l.constants[key]:
		return tokConstant
	case l.types[key]:
		return tokType
	}
	if j < len(s) && s[j] == '(' && !l.shell {
		return tokFunc
	}
	if word[0] == '@' {
		return tokVariable // a decorator or annotation
	}
	return tokPlain
}

func hasAnyPrefix(s string, ps []string) (string, bool) {
	for _, p := range ps {
		if strings.HasPrefix(s, p) {
			return p, true
		}
	}
	return "", false
}

func blockStart(s string, bs [][2]string) ([2]string, bool) {
	for _, b := range bs {
		if strings.HasPrefix(s, b[0]) {
			return b, true
		}
	}
	return [2]string{}, false
}

// scanString returns the index after the closing quote q of a string whose
// body starts at i, and whether it closed on this line. raw strings (shell
// single quotes) have no escapes.
func scanString(s string, i int, q string, raw bool) (int, bool) {
	for i < len(s) {
		if s[i] == '\\' && !raw && q != "`" {
			i += 2
			continue
		}
		if strings.HasPrefix(s[i:], q) {
			return i + len(q), true
		}
		i++
	}
	return len(s), false
}

func isIdentStart(r rune) bool { return r == '_' || unicode.IsLetter(r) }
func isIdentRune(r rune) bool  { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }
func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}
func notSpace(r rune) bool { return r != ' ' && r != '\t' }

// diffLineStyle colours one line of a unified diff.
func diffLineStyle(line string, st Styles) string {
	switch {
	case strings.HasPrefix(line, "+++ "), strings.HasPrefix(line, "--- "),
		strings.HasPrefix(line, "diff "), strings.HasPrefix(line, "index "):
		return st.Bold(line)
	case strings.HasPrefix(line, "@@"):
		return st.Hunk(line)
	case strings.HasPrefix(line, "+"):
		return st.Add(line)
	case strings.HasPrefix(line, "-"):
		return st.Del(line)
	}
	return line
}
