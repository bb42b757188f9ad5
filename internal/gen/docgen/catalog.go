package docgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/permission"
	"github.com/dshq/dsh/prompt"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/subagent"
	"github.com/dshq/dsh/tool"
	"github.com/dshq/dsh/tools/bashtool"
	"github.com/dshq/dsh/tools/fstool"
	"github.com/dshq/dsh/tools/searchtool"
	"github.com/dshq/dsh/tools/task"
	"github.com/dshq/dsh/tools/todo"
	"github.com/dshq/dsh/tools/webtool"
	webproviders "github.com/dshq/dsh/web/providers"
	"github.com/dshq/dsh/web/search/exa"
)

// Owner is a struct whose exported fields are interception points.
type Owner struct {
	// Ctor is how a plugin reaches the struct.
	Ctor string
	// Value is a pointer to a freshly built instance.
	Value any
}

// Owners are the structs the catalog enumerates by reflection, in the
// order the catalog lists them. A point declared anywhere else is still
// found by the source scan (see [ScanPoints]) and listed separately.
func Owners() []Owner {
	return []Owner{
		{Ctor: "agent.NewRegistry().Hub", Value: agent.NewRegistry().Hub},
		{Ctor: "tool.NewRegistry()", Value: tool.NewRegistry()},
		{Ctor: "session.NewLive(nil)", Value: session.NewLive(nil)},
		{Ctor: "llm.NewService()", Value: llm.NewService()},
		{Ctor: "prompt.New()", Value: prompt.New()},
	}
}

// ToolSource is one package of built-in tools and how to build them for
// the catalog. Tools are built with default options and without their
// runtime dependencies: the catalog only reads Info.
type ToolSource struct {
	Pkg   string // directory, relative to the repository root
	Ctor  string
	Tools func() ([]tool.Tool, error)
}

// ToolSources lists the packages of built-in tools.
func ToolSources() []ToolSource {
	return []ToolSource{
		{Pkg: "tools/fstool", Ctor: "fstool.Tools(provider, tracker, fstool.Options{})",
			Tools: func() ([]tool.Tool, error) { return fstool.Tools(nil, nil, fstool.Options{}), nil }},
		{Pkg: "tools/bashtool", Ctor: "bashtool.Tools(executor, bashtool.Options{})",
			Tools: func() ([]tool.Tool, error) { return bashtool.Tools(nil, bashtool.Options{}), nil }},
		{Pkg: "tools/searchtool", Ctor: "searchtool.Tools(searchtool.Options{})",
			Tools: func() ([]tool.Tool, error) { return searchtool.Tools(searchtool.Options{}), nil }},
		{Pkg: "tools/todo", Ctor: "todo.New()",
			Tools: func() ([]tool.Tool, error) { return []tool.Tool{todo.New()}, nil }},
		{Pkg: "tools/task", Ctor: "task.Tool(name, provider, service, agents, definitions)",
			Tools: func() ([]tool.Tool, error) {
				svc := subagent.NewService(subagent.Options{})
				return []tool.Tool{task.Tool("task", "spawn", svc, nil, nil), task.Tool("fork", "fork", svc, nil, nil)}, nil
			}},
		{Pkg: "tools/webtool", Ctor: "webtool.Tools(svc, webtool.Options{})",
			Tools: func() ([]tool.Tool, error) {
				svc, err := webproviders.New(webproviders.Config{Exa: exa.Config{APIKey: "catalog"}}, func(string) string { return "" }, nil)
				if err != nil {
					return nil, err
				}
				defer svc.Close()
				return webtool.Tools(svc, webtool.Options{}), nil
			}},
		{Pkg: "permission", Ctor: "(*permission.Checker).Install(scope, registry, builder, hub)",
			Tools: registeredBy(func(scope *kernel.Scope, reg *tool.Registry) error {
				c, err := permission.New(permission.Config{})
				if err != nil {
					return err
				}
				return c.Install(scope, reg, nil, nil)
			})},
	}
}

// registeredBy collects the tools a plugin registers into an empty registry,
// for plugins that do not export their tools' constructors.
func registeredBy(install func(*kernel.Scope, *tool.Registry) error) func() ([]tool.Tool, error) {
	return func() ([]tool.Tool, error) {
		reg := tool.NewRegistry()
		scope := kernel.NewScope("catalog")
		defer scope.Close()
		if err := install(scope, reg); err != nil {
			return nil, err
		}
		var out []tool.Tool
		for _, info := range reg.Visible(nil) {
			t, _ := reg.Get(info.Name)
			out = append(out, t)
		}
		return out, nil
	}
}

// Point is one catalogued interception point.
type Point struct {
	Name   string // e.g. "tools/pre-execute"
	Mode   string // chain, serial, parallel or signal
	Owner  string // e.g. "tool.Registry"
	Field  string // e.g. "PreExecute"
	In     string // listener input type
	Out    string // chain output type, "" for the other modes
	Doc    string // first sentence of the field's doc comment
	Source string // file declaring the owner, relative to the root
}

var pathPrefix = regexp.MustCompile(`(?:[A-Za-z0-9_.~-]+/)+`)

// shortType drops import paths from a reflected type string:
// "*github.com/dshq/dsh/llm.Request" becomes "*llm.Request".
func shortType(s string) string { return pathPrefix.ReplaceAllString(s, "") }

// aliases maps the expansion of well-known type aliases back to their
// names, since reflection only sees what an alias stands for.
var aliases = map[string]string{
	shortType(reflect.TypeFor[llm.Stream]().String()): "llm.Stream",
}

// typeArgs returns the top-level type arguments of a generic type string.
func typeArgs(s string) []string {
	i := strings.IndexByte(s, '[')
	if i < 0 || !strings.HasSuffix(s, "]") {
		return nil
	}
	inner := s[i+1 : len(s)-1]
	var out []string
	depth, start := 0, 0
	for k, r := range inner {
		switch r {
		case '[', '(', '{':
			depth++
		case ']', ')', '}':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(inner[start:k]))
				start = k + 1
			}
		}
	}
	return append(out, strings.TrimSpace(inner[start:]))
}

func displayType(s string) string {
	s = shortType(s)
	if a, ok := aliases[s]; ok {
		return a
	}
	return s
}

// ReflectPoints enumerates the exported fields of every owner that
// implement [kernel.Point], in declaration order.
func ReflectPoints(root string) ([]Point, error) {
	var out []Point
	for _, o := range Owners() {
		v := reflect.ValueOf(o.Value)
		if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
			return nil, fmt.Errorf("docgen: owner %s is not a pointer to a struct", o.Ctor)
		}
		st := v.Elem().Type()
		owner := shortType(st.String())
		docs, err := readDocs(root, st.PkgPath(), st.Name())
		if err != nil {
			return nil, err
		}
		pkg := owner[:strings.IndexByte(owner, '.')+1]
		var ps []Point
		for i := range st.NumField() {
			f := st.Field(i)
			if !f.IsExported() {
				continue
			}
			p, ok := v.Elem().Field(i).Interface().(kernel.Point)
			if !ok || reflect.ValueOf(p).IsNil() {
				continue
			}
			args := typeArgs(f.Type.String())
			pt := Point{Name: p.PointName(), Mode: p.PointMode(), Owner: owner, Field: f.Name, Doc: docs.fields[f.Name], Source: docs.file}
			if len(args) > 0 {
				pt.In = displayType(args[0])
			}
			if len(args) > 1 {
				pt.Out = displayType(args[1])
			}
			ps = append(ps, pt)
		}
		// A field without a doc comment borrows the doc of its input type,
		// when that type belongs to the owner's package and is the input of
		// this point alone (a shared type describes none of them).
		inputs := map[string]int{}
		for _, p := range ps {
			inputs[p.In]++
		}
		for i, p := range ps {
			name, local := strings.CutPrefix(strings.TrimPrefix(p.In, "*"), pkg)
			if p.Doc == "" && local && inputs[p.In] == 1 {
				ps[i].Doc = docs.types[name]
			}
		}
		out = append(out, ps...)
	}
	return out, nil
}

// pkgDocs is what the catalog reads from a package's source: the doc
// comments of one struct's fields, the file declaring that struct, and the
// doc comments of every type the package declares.
type pkgDocs struct {
	fields map[string]string
	file   string
	types  map[string]string
}

// readDocs parses the package at pkgPath for the docs of struct typ.
func readDocs(root, pkgPath, typ string) (*pkgDocs, error) {
	rel, ok := strings.CutPrefix(pkgPath, Module)
	if !ok {
		return nil, fmt.Errorf("docgen: %s is not in module %s", pkgPath, Module)
	}
	return readDirDocs(root, filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(rel, "/"))), typ)
}

// readDirDocs parses the package in dir for the docs of struct typ.
func readDirDocs(root, dir, typ string) (*pkgDocs, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	d := &pkgDocs{types: map[string]string{}}
	fset := token.NewFileSet()
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, s := range gd.Specs {
				ts := s.(*ast.TypeSpec)
				doc := ts.Doc.Text()
				if doc == "" && len(gd.Specs) == 1 {
					doc = gd.Doc.Text()
				}
				d.types[ts.Name.Name] = firstSentence(doc)
				sst, ok := ts.Type.(*ast.StructType)
				if ts.Name.Name != typ || !ok {
					continue
				}
				d.fields = map[string]string{}
				for _, fl := range sst.Fields.List {
					text := fl.Doc.Text()
					if text == "" {
						text = fl.Comment.Text()
					}
					for _, n := range fl.Names {
						d.fields[n.Name] = firstSentence(text)
					}
				}
				relFile, err := filepath.Rel(root, filepath.Join(dir, name))
				if err != nil {
					return nil, err
				}
				d.file = filepath.ToSlash(relFile)
			}
		}
	}
	if d.fields == nil {
		return nil, fmt.Errorf("docgen: struct type %s not found in %s", typ, dir)
	}
	return d, nil
}

func firstSentence(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '.' && s[i+1] == ' ' {
			return s[:i+1]
		}
	}
	return s
}

var constructors = map[string]string{
	"NewChain": "chain", "NewSerial": "serial", "NewParallel": "parallel", "NewSignal": "signal",
}

// ScanPoints finds every named point constructed in the repository's
// non-test sources (kernel.NewChain[…]("name") and its siblings), so points
// living outside the reflected owners are catalogued too. File paths are
// relative to root.
func ScanPoints(root string) ([]Point, error) {
	var out []Point
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor") {
				return fs.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !bytes.Contains(src, []byte("kernel.New")) {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, p, src, 0)
		if err != nil {
			return nil // a file another engineer is halfway through; the build reports it
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		pkg := f.Name.Name
		// Points built as fields of a struct literal (the usual shape) are
		// attributed to that struct and field, so their doc comments can be
		// found; any other construction is listed by package alone.
		fields := map[*ast.CallExpr][2]string{}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			id, ok := lit.Type.(*ast.Ident)
			if !ok {
				return true
			}
			for _, el := range lit.Elts {
				kv, ok := el.(*ast.KeyValueExpr)
				if !ok {
					continue
				}
				key, ok1 := kv.Key.(*ast.Ident)
				call, ok2 := kv.Value.(*ast.CallExpr)
				if ok1 && ok2 {
					fields[call] = [2]string{id.Name, key.Name}
				}
			}
			return true
		})
		var docs map[string]*pkgDocs
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			pt, ok := pointCall(pkg, call)
			if !ok {
				return true
			}
			pt.Owner, pt.Source = pkg, rel
			if of, ok := fields[call]; ok {
				pt.Owner, pt.Field = pkg+"."+of[0], of[1]
				if docs == nil {
					docs = map[string]*pkgDocs{}
				}
				d, seen := docs[of[0]]
				if !seen {
					d, _ = readDirDocs(root, filepath.Dir(p), of[0]) // nil when the type is not a plain struct
					docs[of[0]] = d
				}
				if d != nil {
					pt.Doc = d.fields[of[1]]
				}
			}
			out = append(out, pt)
			return true
		})
		return nil
	})
	return out, err
}

// pointCall recognizes kernel.NewChain[…]("name") and its siblings.
func pointCall(pkg string, call *ast.CallExpr) (Point, bool) {
	if len(call.Args) != 1 {
		return Point{}, false
	}
	var fun ast.Expr
	var targs []ast.Expr
	switch x := call.Fun.(type) {
	case *ast.IndexExpr:
		fun, targs = x.X, []ast.Expr{x.Index}
	case *ast.IndexListExpr:
		fun, targs = x.X, x.Indices
	default:
		return Point{}, false
	}
	sel, ok := fun.(*ast.SelectorExpr)
	if !ok {
		return Point{}, false
	}
	if id, ok := sel.X.(*ast.Ident); !ok || id.Name != "kernel" {
		return Point{}, false
	}
	mode, ok := constructors[sel.Sel.Name]
	if !ok {
		return Point{}, false
	}
	lit, ok := call.Args[0].(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return Point{}, false
	}
	name, err := strconv.Unquote(lit.Value)
	if err != nil || name == "" {
		return Point{}, false
	}
	pt := Point{Name: name, Mode: mode}
	if len(targs) > 0 {
		pt.In = exprType(pkg, targs[0])
	}
	if len(targs) > 1 {
		pt.Out = exprType(pkg, targs[1])
	}
	return pt, true
}

// exprType renders a type expression as seen from outside package pkg.
func exprType(pkg string, e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		if types.Universe.Lookup(x.Name) != nil {
			return x.Name
		}
		return pkg + "." + x.Name
	case *ast.SelectorExpr:
		if id, ok := x.X.(*ast.Ident); ok {
			return id.Name + "." + x.Sel.Name
		}
	case *ast.StarExpr:
		return "*" + exprType(pkg, x.X)
	case *ast.ArrayType:
		if x.Len == nil {
			return "[]" + exprType(pkg, x.Elt)
		}
	case *ast.MapType:
		return "map[" + exprType(pkg, x.Key) + "]" + exprType(pkg, x.Value)
	case *ast.StructType:
		if x.Fields == nil || len(x.Fields.List) == 0 {
			return "struct {}"
		}
	case *ast.IndexExpr:
		return exprType(pkg, x.X) + "[" + exprType(pkg, x.Index) + "]"
	case *ast.IndexListExpr:
		parts := make([]string, len(x.Indices))
		for i, ix := range x.Indices {
			parts[i] = exprType(pkg, ix)
		}
		return exprType(pkg, x.X) + "[" + strings.Join(parts, ",") + "]"
	}
	var b bytes.Buffer
	_ = formatNode(&b, e)
	return b.String()
}

// Catalog renders docs/catalog.md.
func Catalog(root string) ([]byte, error) {
	points, err := ReflectPoints(root)
	if err != nil {
		return nil, err
	}
	scanned, err := ScanPoints(root)
	if err != nil {
		return nil, err
	}
	known := map[string]bool{}
	for _, p := range points {
		known[p.Name] = true
	}
	var others []Point
	for _, p := range scanned {
		if !known[p.Name] {
			others = append(others, p)
			known[p.Name] = true
		}
	}
	slices.SortFunc(others, func(a, b Point) int { return strings.Compare(a.Name, b.Name) })

	var b strings.Builder
	b.WriteString("# Catalog: interception points and built-in tools\n\n")
	b.WriteString("<!-- Generated by internal/gen/catalog from the code's own registrations. Do not edit: run `go generate ./docs/...`. -->\n\n")
	b.WriteString("Every interception point and every built-in tool of dsh, read from the code itself: the points by reflection over the\n")
	b.WriteString("structs that own them (each point implements `kernel.Point`), the tools from their packages' constructors. A test in\n")
	b.WriteString("package docs fails when this file is stale. How the points fit together is told in [architecture.md](architecture.md).\n\n")
	b.WriteString("## Interception points\n\n")
	b.WriteString("Dispatch modes (see [kernel](../kernel/doc.go)):\n\n")
	b.WriteString("- **chain**: around-middleware; a listener gets the input and `next`, and may call it, wrap it or answer without it. The output column is what the chain returns.\n")
	b.WriteString("- **serial**: listeners run in order; the first error stops the run (`kernel.ErrStop` stops it without an error).\n")
	b.WriteString("- **parallel**: listeners run concurrently; the run waits for all and joins their errors.\n")
	b.WriteString("- **signal**: notification of a fact that already happened; listeners run in order on the emitting goroutine.\n")
	b.WriteString("\nThe purpose column is the first sentence of the field's doc comment or, when the field has none, of its input type's.\n")

	var owners []string
	byOwner := map[string][]Point{}
	ctor := map[string]string{}
	for i, p := range points {
		if _, ok := byOwner[p.Owner]; !ok {
			owners = append(owners, p.Owner)
		}
		byOwner[p.Owner] = append(byOwner[p.Owner], points[i])
	}
	for _, o := range Owners() {
		ctor[shortType(reflect.TypeOf(o.Value).Elem().String())] = o.Ctor
	}
	for _, o := range owners {
		ps := byOwner[o]
		fmt.Fprintf(&b, "\n### %s\n\n", o)
		fmt.Fprintf(&b, "Reached through `%s`; declared in [%s](../%s).\n\n", ctor[o], ps[0].Source, ps[0].Source)
		b.WriteString("| Point | Field | Mode | Input | Output | Purpose |\n|---|---|---|---|---|---|\n")
		for _, p := range ps {
			fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s | %s | %s |\n", p.Name, p.Field, p.Mode, code(p.In), code(p.Out), orDash(escapeCell(p.Doc)))
		}
	}
	if len(others) > 0 {
		b.WriteString("\n### Points declared elsewhere\n\n")
		b.WriteString("Found by scanning the sources for `kernel.New…(\"name\")` outside the structs above.\n\n")
		b.WriteString("| Point | Owner | Mode | Input | Output | Purpose | Declared in |\n|---|---|---|---|---|---|---|\n")
		for _, p := range others {
			owner := p.Owner
			if p.Field != "" {
				owner += "." + p.Field
			}
			fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s | %s | %s | [%s](../%s) |\n", p.Name, owner, p.Mode, code(p.In), code(p.Out), orDash(escapeCell(p.Doc)), p.Source, p.Source)
		}
	}

	if err := renderTools(&b); err != nil {
		return nil, err
	}
	return []byte(b.String()), nil
}

func code(s string) string {
	if s == "" {
		return "—"
	}
	return "`" + strings.ReplaceAll(s, "|", `\|`) + "`"
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

type builtTool struct {
	src  ToolSource
	t    tool.Tool
	info tool.Info
}

func renderTools(b *strings.Builder) error {
	var all []builtTool
	seen := map[string]string{}
	for _, src := range ToolSources() {
		tools, err := src.Tools()
		if err != nil {
			return fmt.Errorf("docgen: building the tools of %s: %w", src.Pkg, err)
		}
		for _, t := range tools {
			info := t.Info()
			if prev, dup := seen[info.Name]; dup {
				return fmt.Errorf("docgen: tool %q is built by both %s and %s", info.Name, prev, src.Pkg)
			}
			seen[info.Name] = src.Pkg
			all = append(all, builtTool{src: src, t: t, info: info})
		}
	}
	b.WriteString("\n## Built-in tools\n\n")
	b.WriteString("Model-facing tools shipped with dsh, as their constructors build them with default options. Read-only tools change\n")
	b.WriteString("nothing outside the session; concurrent tools may run together when every call of a step is concurrent (results are\n")
	b.WriteString("still recorded in call order). Presenters render calls and results for front-ends.\n\n")
	b.WriteString("| Tool | Package | Kind | Read-only | Concurrent | Presents |\n|---|---|---|---|---|---|\n")
	for _, bt := range all {
		var pres []string
		if _, ok := bt.t.(tool.CallPresenter); ok {
			pres = append(pres, "call")
		}
		if _, ok := bt.t.(tool.ResultPresenter); ok {
			pres = append(pres, "result")
		}
		fmt.Fprintf(b, "| [`%s`](#%s) | [%s](../%s) | %s | %s | %s | %s |\n", bt.info.Name, slug("`"+bt.info.Name+"`"),
			bt.src.Pkg, bt.src.Pkg, orDash(string(bt.info.Kind)), yesNo(bt.info.ReadOnly), yesNo(bt.info.Concurrent), orDash(strings.Join(pres, ", ")))
	}
	b.WriteString("\nConstructors:\n\n")
	for _, src := range ToolSources() {
		fmt.Fprintf(b, "- [%s](../%s): `%s`\n", src.Pkg, src.Pkg, src.Ctor)
	}
	for _, bt := range all {
		fmt.Fprintf(b, "\n### `%s`\n\n", bt.info.Name)
		params, err := paramRows(bt.info.Parameters)
		if err != nil {
			return fmt.Errorf("docgen: tool %q: %w", bt.info.Name, err)
		}
		if len(params) == 0 {
			b.WriteString("No parameters.\n")
		} else {
			b.WriteString("| Parameter | Type | Required | Description |\n|---|---|---|---|\n")
			for _, p := range params {
				fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", p.name, escapeCell(p.typ), yesNo(p.required), orDash(escapeCell(p.desc)))
			}
		}
		desc := strings.TrimSpace(bt.info.Description)
		fence := "```"
		for strings.Contains(desc, fence) {
			fence += "`"
		}
		fmt.Fprintf(b, "\nDescription, as the model reads it:\n\n%stext\n%s\n%s\n", fence, desc, fence)
	}
	return nil
}

func yesNo(v bool) string {
	if v {
		return "yes"
	}
	return "no"
}

type paramRow struct {
	name, typ, desc string
	required        bool
}

type propSchema struct {
	Type        json.RawMessage `json:"type"`
	Description string          `json:"description"`
	Enum        []any           `json:"enum"`
	Minimum     *float64        `json:"minimum"`
	Maximum     *float64        `json:"maximum"`
	Default     json.RawMessage `json:"default"`
	Items       *propSchema     `json:"items"`
}

// paramRows lists the top-level properties of a JSON Schema object in the
// order the schema declares them.
func paramRows(schema json.RawMessage) ([]paramRow, error) {
	if len(schema) == 0 {
		return nil, nil
	}
	var s struct {
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, err
	}
	if len(s.Properties) == 0 || string(s.Properties) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(s.Properties))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("properties is not an object")
	}
	var out []paramRow
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, _ := t.(string)
		var p propSchema
		if err := dec.Decode(&p); err != nil {
			return nil, fmt.Errorf("property %q: %w", name, err)
		}
		desc := p.Description
		if len(p.Default) > 0 {
			desc = strings.TrimSpace(desc + " Default: `" + string(p.Default) + "`.")
		}
		out = append(out, paramRow{name: name, typ: typeOf(p), desc: desc, required: slices.Contains(s.Required, name)})
	}
	return out, nil
}

func typeOf(p propSchema) string {
	var t string
	var one string
	var many []string
	switch {
	case json.Unmarshal(p.Type, &one) == nil:
		t = one
	case json.Unmarshal(p.Type, &many) == nil:
		t = strings.Join(many, " or ")
	default:
		t = "any"
	}
	if t == "array" && p.Items != nil {
		t = "array of " + typeOf(*p.Items)
	}
	num := func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
	switch {
	case p.Minimum != nil && p.Maximum != nil:
		t += fmt.Sprintf(" (%s–%s)", num(*p.Minimum), num(*p.Maximum))
	case p.Minimum != nil:
		t += " (≥ " + num(*p.Minimum) + ")"
	case p.Maximum != nil:
		t += " (≤ " + num(*p.Maximum) + ")"
	}
	if len(p.Enum) > 0 {
		vals := make([]string, len(p.Enum))
		for i, v := range p.Enum {
			j, _ := json.Marshal(v)
			vals[i] = "`" + string(j) + "`"
		}
		t += ": one of " + strings.Join(vals, ", ")
	}
	return t
}
