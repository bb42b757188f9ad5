package permission

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/dshq/dsh/tool"
)

// verdict is the decision on one part of a call (a call has several parts
// when it is a command line: each simple command, each redirection).
type verdict struct {
	behavior Behavior
	rule     *rule // nil: the mode or the workspace decided
	reason   string
	suggest  []string
	file     string // read, write, edit: the resolved file decided on
	// firm: the question holds even for a command a sandbox confines: what
	// it is about (a file that makes programs run on their own later,
	// outside any sandbox) is not the sandbox's to allow.
	firm bool
}

// decider decides one call.
type decider struct {
	c     *Checker
	mode  Mode
	rules [3][]*rule
	cwd   string
	call  tool.Call
	name  string // canonical tool name

	realCwd   string
	realRoots []string
	// realDirs caches the paths and directories this decision resolved:
	// a command line names many files in few directories. It lives for
	// one decision only, so a symbolic link changed later is seen.
	realDirs map[string]string
	realInfo map[string]os.FileInfo
	// placed caches, for the bash line being decided, where each path
	// argument may be.
	placed map[string][]string
}

// resolve is resolve(abs) for an absolute, clean path, resolving each
// directory once per decision.
func (d *decider) resolve(abs string) string {
	if r, ok := d.realDirs[abs]; ok {
		return r
	}
	if d.realDirs == nil {
		d.realDirs = make(map[string]string, 16)
		realCwd, _ := d.workspace() // cached by the checker
		d.realDirs[d.cwd] = realCwd
		if r, ok := d.realDirs[abs]; ok {
			return r
		}
	}
	r := d.resolveUncached(abs)
	d.realDirs[abs] = r
	return r
}

func (d *decider) resolveUncached(abs string) string {
	dir, base := filepath.Split(abs)
	if base == "" || dir == "" {
		return resolve(abs)
	}
	dir = filepath.Clean(dir)
	rd, ok := d.realDirs[dir]
	if !ok {
		rd = resolve(dir)
		d.realDirs[dir] = rd
	}
	real := filepath.Join(rd, base)
	fi, err := os.Lstat(real)
	if err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return resolve(real)
	}
	if d.realInfo == nil {
		d.realInfo = make(map[string]os.FileInfo, 16)
	}
	d.realInfo[real] = fi // nil: it does not exist
	return real
}

// lstat is os.Lstat of a path this decision resolved (nil when it does
// not exist), without a second system call.
func (d *decider) lstat(real string) os.FileInfo {
	if fi, ok := d.realInfo[real]; ok {
		return fi
	}
	fi, err := os.Lstat(real)
	if err != nil {
		return nil
	}
	return fi
}

func (d *decider) deny() []*rule  { return d.rules[2] }
func (d *decider) ask() []*rule   { return d.rules[1] }
func (d *decider) allow() []*rule { return d.rules[0] }

// internalTools touch only state the agent owns (its todo list, the
// background tasks it started), so they never need approval.
var internalTools = map[string]bool{toolTodoWrite: true, toolBashOut: true, toolBashKill: true}

func (d *decider) decide() verdict {
	if d.call.Args == nil && d.name != ExitPlanTool {
		// The registry refuses calls whose arguments are not JSON before
		// the tool runs; asking would only hide that error from the model.
		return verdict{behavior: Allow, reason: "the arguments are not valid JSON, so the tool will not run"}
	}
	if reg := d.c.reg.Load(); reg != nil && d.name != ExitPlanTool {
		if _, ok := reg.Get(d.call.Name); !ok {
			// The registry answers an unknown tool with the list of real
			// ones; asking the user about a call that cannot run would only
			// delay that answer.
			return verdict{behavior: Allow, reason: "no tool " + strconv.Quote(d.call.Name) + " is registered, so nothing will run"}
		}
	}
	switch {
	case d.name == ExitPlanTool:
		return d.exitPlan()
	case d.name == toolBash:
		return d.bash()
	case pathTools[d.name]:
		return d.file()
	case d.name == toolWebFetch:
		return d.fetch()
	}
	return d.other()
}

// firstRule returns the first rule of rs about this tool that ok accepts.
func (d *decider) firstRule(rs []*rule, tool string, ok func(*rule) bool) *rule {
	for _, r := range rs {
		if r.appliesTo(tool) && ok(r) {
			return r
		}
	}
	return nil
}

func anyArgs(r *rule) bool { return r.kind == kindAny || r.kind == kindMCPServer }

func ruleVerdict(b Behavior, r *rule, what string) verdict {
	verb := "allows "
	switch b {
	case Deny:
		verb = "denies "
	case Ask:
		verb = "requires approval for "
	}
	return verdict{behavior: b, rule: r, reason: "permission rule " + r.Text + " from " + r.Source + " " + verb + what}
}

// other decides tools without arguments rules understand: MCP and plugin
// tools, the web search, the todo list and background-task tools.
func (d *decider) other() verdict {
	what := "the " + d.call.Name + " call"
	if r := d.firstRule(d.deny(), d.name, anyArgs); r != nil {
		return ruleVerdict(Deny, r, what)
	}
	if r := d.firstRule(d.ask(), d.name, anyArgs); r != nil {
		return ruleVerdict(Ask, r, what)
	}
	if r := d.firstRule(d.allow(), d.name, anyArgs); r != nil {
		return ruleVerdict(Allow, r, what)
	}
	if internalTools[d.name] {
		return verdict{behavior: Allow, reason: d.call.Name + " only touches the agent's own state"}
	}
	suggest := []string{d.call.Name}
	if dn, ok := displayNames[d.name]; ok {
		suggest = []string{dn}
	}
	if d.name != toolWebSearch {
		if info, ok := d.info(); ok && info.ReadOnly {
			return verdict{behavior: Allow, reason: d.call.Name + " is read-only"}
		}
	}
	switch d.mode {
	case ModeBypass:
		return verdict{behavior: Allow, reason: "mode bypassPermissions allows " + what}
	case ModePlan:
		if d.name != toolWebSearch {
			return verdict{behavior: Deny, reason: fmt.Sprintf("plan mode: %s may change state, so it cannot run until the user approves a plan (present it with %s)", d.call.Name, ExitPlanTool)}
		}
	}
	return verdict{behavior: Ask, reason: fmt.Sprintf("%s is not allowed by any permission rule (mode %s)", d.call.Name, d.mode), suggest: suggest}
}

func (d *decider) info() (tool.Info, bool) {
	reg := d.c.reg.Load()
	if reg == nil {
		return tool.Info{}, false
	}
	t, ok := reg.Get(d.call.Name)
	if !ok {
		return tool.Info{}, false
	}
	return t.Info(), true
}

func (d *decider) exitPlan() verdict {
	if r := d.firstRule(d.deny(), d.name, anyArgs); r != nil {
		return ruleVerdict(Deny, r, "leaving plan mode")
	}
	if d.mode != ModePlan {
		return verdict{behavior: Deny, reason: fmt.Sprintf("%s is only for plan mode, and the mode is %s: go ahead with the task", ExitPlanTool, d.mode)}
	}
	// Always the user's call: no rule, mode or hook approves a plan.
	return verdict{behavior: Ask, reason: "the plan needs the user's approval to leave plan mode"}
}

// callArgs are the arguments rules look at. Decoding into a struct (one
// pass, no map) keeps a decision cheap; a field of the wrong type is left
// empty, and schema validation reports it before the tool runs.
type callArgs struct {
	FilePath *string `json:"file_path"`
	Path     *string `json:"path"`
	Command  string  `json:"command"`
	Workdir  string  `json:"workdir"`
	URL      string  `json:"url"`
	Pattern  string  `json:"pattern"`
}

func (d *decider) args() callArgs {
	var a callArgs
	_ = json.Unmarshal(d.call.Args, &a)
	return a
}

// workspace returns the resolved cwd and roots.
func (d *decider) workspace() (string, []string) {
	if d.realRoots == nil {
		d.realCwd = d.c.realDir(d.cwd)
		d.realRoots = append(d.realRoots, d.realCwd)
		for _, r := range d.c.roots {
			d.realRoots = append(d.realRoots, d.c.realDir(absPath(r, d.cwd)))
		}
	}
	return d.realCwd, d.realRoots
}

func (d *decider) inWorkspace(real string) bool {
	_, roots := d.workspace()
	for _, r := range roots {
		if within(real, r) {
			return true
		}
	}
	return false
}

func (d *decider) describeWorkspace() string {
	_, roots := d.workspace()
	return strings.Join(roots, ", ")
}

// pathMatch matches a path rule against a file, lexically and resolved.
// Allow rules only see the resolved path, so a symlink inside an allowed
// directory cannot lend its permission to the file it points at; deny and
// ask rules see both spellings, so no spelling escapes them.
func (d *decider) pathMatch(r *rule, abs, real string, strict bool) bool {
	if r.kind == kindAny {
		return true
	}
	if r.kind != kindPath {
		return false
	}
	realCwd, _ := d.workspace()
	if r.path.matches(real, realCwd) {
		return true
	}
	return !strict && r.path.matches(abs, d.cwd)
}

type fileOp int

const (
	opRead fileOp = iota
	opWrite
)

// file decides read, write, edit, glob, grep and ls.
func (d *decider) file() verdict {
	a := d.args()
	key, first, second := "file_path", a.FilePath, a.Path
	dirTool := d.name == toolGlob || d.name == toolGrep || d.name == toolLS
	if dirTool {
		key, first, second = "path", a.Path, a.FilePath
	}
	raw := ""
	if first != nil {
		raw = *first
	} else if second != nil {
		raw = *second
	}
	if strings.TrimSpace(raw) == "" {
		if !dirTool {
			return verdict{behavior: Ask, reason: fmt.Sprintf("the %s call names no %s, so its path cannot be checked", d.call.Name, key)}
		}
		raw = d.cwd
	}
	op := opRead
	if d.name == toolWrite || d.name == toolEdit {
		op = opWrite
	}
	abs := absPath(raw, d.cwd)
	if d.name == toolGlob {
		abs = globRoot(abs, a.Pattern)
	}
	real := d.resolve(abs)
	v := d.path(d.name, op, abs, real, dirTool, false)
	if !dirTool {
		v.file = real
		if v.behavior != Deny {
			if why := d.linkedToDenied(d.name, real, nil); why != "" {
				return verdict{behavior: Deny, reason: why, file: real}
			}
		}
	}
	return v
}

// globRoot is the directory a glob really searches: the glob tool moves a
// pattern's literal leading directories into its root, so "/etc/*" or
// "../other/**" search there, not under path. The decision is about that
// directory.
func globRoot(root, pattern string) string {
	if pattern == "" || strings.HasPrefix(pattern, "~") {
		return root
	}
	base, _ := doublestar.SplitPattern(pattern)
	switch {
	case base == "." || base == "":
		return root
	case filepath.IsAbs(base):
		return filepath.Clean(base)
	}
	return filepath.Join(root, base)
}

// path decides one file access by tool (a pseudo tool "write" or "read"
// for shell redirections). uncertain marks a relative redirection after a
// cd: its real location is unknown, so only deny and ask rules may use the
// guess.
func (d *decider) path(tool string, op fileOp, abs, real string, dirTool, uncertain bool) verdict {
	verb := "read"
	if op == opWrite {
		verb = "write"
		if tool == toolEdit {
			verb = "edit"
		}
	}
	what := verb + " " + abs
	if r := d.firstRule(d.deny(), tool, func(r *rule) bool { return d.pathMatch(r, abs, real, false) }); r != nil {
		return ruleVerdict(Deny, r, what)
	}
	inside := !uncertain && d.inWorkspace(real)
	if dirTool && !inside {
		// A search outside the workspace could reach denied files below
		// the directory it names; let the user look at it.
		realCwd, _ := d.workspace()
		if r := d.firstRule(d.deny(), tool, func(r *rule) bool { return r.kind == kindPath && r.path.under(real, realCwd) }); r != nil {
			return verdict{behavior: Ask, rule: r, reason: fmt.Sprintf("%s searches %s, which contains files permission rule %s from %s denies", d.call.Name, abs, r.Text, r.Source)}
		}
	}
	if r := d.firstRule(d.ask(), tool, func(r *rule) bool { return d.pathMatch(r, abs, real, false) }); r != nil {
		return ruleVerdict(Ask, r, what)
	}
	if op == opWrite && d.mode == ModePlan {
		return verdict{behavior: Deny, reason: fmt.Sprintf("plan mode: file changes (%s) are not allowed until the user approves a plan (present it with %s)", what, ExitPlanTool)}
	}
	if op == opWrite {
		if v, ok := d.protectedWrite(abs, real, what); ok {
			return v
		}
	}
	if uncertain && d.mode == ModeBypass {
		// A relative path after a cd to somewhere known only at run time
		// may be any file: a deny or ask rule about such files must hold.
		if r := d.anyPathRule(tool); r != nil {
			return verdict{behavior: Ask, rule: r, reason: fmt.Sprintf("%s after changing directory to a place known only at run time: it may be a file permission rule %s from %s covers", what, r.Text, r.Source)}
		}
	}
	if !uncertain {
		if r := d.firstRule(d.allow(), tool, func(r *rule) bool { return d.pathMatch(r, abs, real, true) }); r != nil {
			return ruleVerdict(Allow, r, what)
		}
	}
	switch {
	case op == opRead && inside:
		return verdict{behavior: Allow, reason: "reads inside the workspace are allowed"}
	case d.mode == ModeBypass:
		return verdict{behavior: Allow, reason: "mode bypassPermissions allows " + what}
	case op == opWrite && inside && d.mode == ModeAcceptEdits:
		return verdict{behavior: Allow, reason: "mode acceptEdits allows edits inside the workspace"}
	}
	v := verdict{behavior: Ask}
	switch {
	case uncertain:
		v.reason = fmt.Sprintf("%s after changing directory: the file's location is not known in advance", what)
	case !inside:
		v.reason = fmt.Sprintf("%s: the path is outside the workspace (%s)", what, d.describeWorkspace())
	default:
		v.reason = fmt.Sprintf("%s needs approval in mode %s", what, d.mode)
	}
	if !uncertain {
		if op == opRead {
			dir := real
			if !dirTool {
				dir = filepath.Dir(real)
			}
			v.suggest = []string{"Read(/" + escapeGlob(dir) + "/**)"}
		} else {
			v.suggest = []string{"Edit(/" + escapeGlob(real) + ")"}
		}
	}
	return v
}

// fetch decides web_fetch by the URL's host.
func (d *decider) fetch() verdict {
	raw := d.args().URL
	u, err := url.Parse(raw)
	host := ""
	if err == nil {
		host = u.Hostname()
	}
	if host == "" {
		host = raw
	}
	what := "fetching " + raw
	ok := func(r *rule) bool { return r.matchHost(host) }
	if r := d.firstRule(d.deny(), d.name, ok); r != nil {
		return ruleVerdict(Deny, r, what)
	}
	if r := d.firstRule(d.ask(), d.name, ok); r != nil {
		return ruleVerdict(Ask, r, what)
	}
	if r := d.firstRule(d.allow(), d.name, ok); r != nil {
		return ruleVerdict(Allow, r, what)
	}
	if d.mode == ModeBypass {
		return verdict{behavior: Allow, reason: "mode bypassPermissions allows " + what}
	}
	v := verdict{behavior: Ask, reason: fmt.Sprintf("%s: %s is not allowed by any permission rule (mode %s)", what, host, d.mode)}
	if err == nil && u.Hostname() != "" {
		v.suggest = []string{"WebFetch(domain:" + strings.ToLower(u.Hostname()) + ")"}
	}
	return v
}

// combine merges the verdicts on the parts of one call: the strictest
// wins, and the reasons of every part with that behavior are kept so the
// user sees everything that needs approval in one question.
func combine(vs []verdict) verdict {
	if len(vs) == 0 {
		return verdict{behavior: Allow, reason: "the command line runs nothing"}
	}
	best := vs[0]
	for _, v := range vs[1:] {
		if v.behavior.strength() > best.behavior.strength() {
			best = v
		}
	}
	if best.behavior == Deny {
		return best
	}
	out := verdict{behavior: best.behavior}
	var reasons []string
	complete := true
	seen := map[string]bool{}
	for _, v := range vs {
		if v.behavior != best.behavior {
			continue
		}
		if out.rule == nil && v.rule != nil {
			out.rule = v.rule
		}
		out.firm = out.firm || v.firm
		if !seen[v.reason] {
			seen[v.reason] = true
			reasons = append(reasons, v.reason)
		}
		if len(v.suggest) == 0 {
			complete = false
		}
		for _, s := range v.suggest {
			if !seen["suggest:"+s] {
				seen["suggest:"+s] = true
				out.suggest = append(out.suggest, s)
			}
		}
	}
	if !complete {
		// Remembering part of what was asked would not make the call run
		// without asking next time; offer nothing rather than a half rule.
		out.suggest = nil
	}
	out.reason = strings.Join(reasons, "; ")
	return out
}

// ReadDenied reports whether a deny rule forbids reading path (relative
// paths are relative to cwd; "" means Config.Cwd) in a session's calls:
// the configured and runtime rules, the session's own and, for a subagent,
// its parents'. Read rules are the ones that count, and deny rules only: an
// ask rule does not withhold a file. For many paths of one search, use
// [Checker.ReadFilter], which resolves the rules and directories once.
func (c *Checker) ReadDenied(sessionID, cwd, path string) bool {
	denied := c.ReadFilter(sessionID, cwd, "")
	return denied != nil && denied(path)
}

// ReadFilter returns the check search tools apply to each file a result
// would show: the decision on a grep of the project cannot see which
// files the search will open, so the files a deny rule covers are left out
// of its results instead. The check reports whether a path (relative to
// cwd, or absolute) is denied to toolName (glob, grep, ls; "" for read):
// Read deny rules count for every tool, and rules written for toolName
// itself (Grep(secrets/**)) for that tool. Rules are matched as Decide
// matches them, against the path as named and as resolved through
// symbolic links.
//
// The rules in force are taken once, when ReadFilter is called; it returns
// nil when none could deny a path, which is the common case and costs the
// search nothing. The check may be called concurrently. It resolves each
// directory once and then only looks at whether the file itself is a
// symbolic link, so checking many files of one directory costs one lstat
// each.
func (c *Checker) ReadFilter(sessionID, cwd, toolName string) func(path string) bool {
	if cwd == "" {
		cwd = c.cwd
	}
	name := canonical(toolName)
	if name == "" {
		name = toolRead
	}
	_, rules := c.rulesFor(sessionID)
	var deny []*rule
	for _, r := range rules[Deny.strength()] {
		if (r.kind == kindPath || r.kind == kindAny) && (r.appliesTo(toolRead) || r.appliesTo(name)) {
			deny = append(deny, r)
		}
	}
	if len(deny) == 0 {
		return nil
	}
	d := &decider{c: c, cwd: filepath.Clean(cwd), name: name}
	d.rules[Deny.strength()] = deny
	realCwd, _ := d.workspace() // resolved now: the check runs concurrently
	files := &realFiles{}
	return func(path string) bool {
		abs := absPath(path, d.cwd)
		real, fi := files.resolve(abs)
		// Deny rules see both spellings of a path; when they are the same
		// (no symbolic link on the way), matching once is enough.
		once := abs == real && d.cwd == realCwd
		for _, r := range deny {
			if d.pathMatch(r, abs, real, once) {
				return true
			}
		}
		// A file with several names is denied when another one is.
		return fi != nil && fi.Mode().IsRegular() && d.identityDenied(name, real, statID(fi)) != ""
	}
}

// SearchFilter is [Checker.ReadFilter] for one tool call, the way Decide
// reads a call: the rules of the calling session (its host's), paths
// relative to its working directory (else Config.Cwd), the call's tool. It
// has the shape of searchtool.Options.Denied, which the app sets to it.
func (c *Checker) SearchFilter(_ context.Context, call tool.Call) func(path string) bool {
	sid, cwd := "", ""
	if call.Host != nil {
		sid, cwd = call.Host.SessionID(), call.Host.Cwd()
	}
	return c.ReadFilter(sid, cwd, call.Name)
}

// realFiles resolves the files of one search through symbolic links,
// resolving each directory once. It is per search, not per checker, so a
// walk of a large tree does not grow a cache that outlives it.
type realFiles struct {
	dirs sync.Map // directory → its realpath
}

// resolve is resolve(abs) for an absolute, clean path, with the directory
// part cached, and the file's lstat when it is not a symbolic link.
func (rf *realFiles) resolve(abs string) (string, os.FileInfo) {
	dir, base := filepath.Dir(abs), filepath.Base(abs)
	if dir == abs {
		return resolve(abs), nil // the filesystem root
	}
	realDir, ok := rf.dirs.Load(dir)
	if !ok {
		realDir, _ = rf.dirs.LoadOrStore(dir, resolve(dir))
	}
	real := filepath.Join(realDir.(string), base)
	fi, err := os.Lstat(real)
	if err != nil {
		return real, nil
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return resolve(real), nil
	}
	return real, fi
}
