// Package permission is dsh's permission layer: it decides, for every tool
// call, whether it runs, asks the user, or is refused, and says which rule
// (and which settings file) or which mode made that decision.
//
// # Modes
//
// The modes are the ones Claude Code users know:
//
//   - default: reads inside the workspace and read-only tools run; file
//     edits, commands and everything else ask unless a rule allows them.
//   - acceptEdits: file edits inside the workspace run too (write, edit,
//     and shell redirections to files).
//   - plan: nothing changes. File edits are refused; only commands known to
//     be read-only may run (still subject to rules: a read-only command
//     without an allow rule asks, as in default mode); other tools that
//     are not read-only are refused. A prompt section tells the model it
//     is planning, and the exit_plan_mode tool presents the plan: its call
//     always asks, and approving it returns to the mode before plan.
//   - bypassPermissions: everything runs that no deny or ask rule stops.
//     Explicit rules still hold in every mode: the mode only changes what
//     happens when no rule matches. Only the user may choose this mode; a
//     project's settings cannot (see [New] and [FromSettings]).
//
// Plan mode is never looser than default mode, and no mode lets anything
// past a deny rule.
//
// # Rules
//
// Rules come from settings (permissions.allow, .ask, .deny), flags, the
// session ("allow for this session" answers) and /permissions. When several
// match, deny beats ask and ask beats allow, whatever file they came from.
//
//	Bash                       any command
//	Bash(npm run test)         exactly this command
//	Bash(git diff:*)           commands whose words start with git diff
//	Bash(git diff *)           the same
//	Read(./src/**)             read, glob, grep and ls under src/ of the project
//	Edit(docs/**)              edit and write under docs/
//	Write(/abs/x)              write only; /abs and //abs are absolute
//	Read(~/.ssh/**)            under the home directory
//	WebFetch(domain:example.com), WebFetch(domain:*.example.com)
//	mcp__server__tool, mcp__server (all of its tools), mcp__server__*
//	todo_write, deploy         any other tool by name
//
// dsh's tool names (bash, read, write, edit, glob, grep, ls, web_fetch,
// web_search, todo_write) are aliases of the Claude names (Bash, Read,
// Write, Edit, Glob, Grep, LS, WebFetch, WebSearch, TodoWrite). Path
// patterns are doublestar globs; "x" and "./x" are relative to the project
// root (the session's cwd), and a pattern naming a directory covers what is
// inside it. Note that Claude Code reads "/x" as relative to the settings
// file; dsh reads it as absolute, like "//x". Every rule is parsed when the
// checker is built, and an invalid one is an error naming the rule and its
// file: a typo must not silently widen or narrow what the agent may do.
//
// # Command lines
//
// A bash call is decided on what package bash/analysis reads in it, never
// run or expanded. Every simple command it would run must be allowed for
// the line to run: the commands of pipelines, lists, subshells, command
// and process substitutions, function bodies, here-documents with
// expansions, the strings given to bash -c, eval, trap, su -c, watch and
// the like, and the commands programs run from their options (find -exec,
// xargs, ssh -o ProxyCommand, git -c core.pager, tar --to-command, go test
// -exec, …). Wrappers (sudo, env, timeout, nice, flock, setpriv, unshare,
// strace, …: one table) are unwrapped so the inner command is matched; a
// deny or ask rule is matched against every layer, while an allow rule
// must match the inner command, or the wrapper itself when privileges
// change (allowing rm does not allow sudo rm). The arguments of a program
// the analysis does not know may name a program it runs: a deny or ask
// rule matching them makes the line ask. Words are matched after quote
// removal: "r"'m' and \rm are rm.
//
// A word whose value is only known at run time (a parameter or command
// substitution, a glob or brace expansion) cannot satisfy an allow rule;
// when it might complete a deny rule, the line asks. Lines the analysis
// cannot vouch for ask: parse errors, command names computed at run time,
// eval of a non-literal, ${x@P}, assignments of variables that decide what
// runs (PATH, LD_PRELOAD, BASH_ENV, GIT_*, …), and arithmetic on variables
// (bash evaluates their values as code). A deny matching any simple
// command denies the whole line.
//
// A prefix rule (Bash(git diff:*)) allows its command with ordinary
// arguments in the workspace: options that run other programs or load
// code, files outside the workspace, running outside it, and run-time
// words where options stand still ask (see beyondRule).
//
// Redirections are file accesses decided like the read and write tools:
// writes (>, >>, &>, >|, <>, time -o) follow Edit and Write rules and the
// mode, reads (<, $(< f)) Read rules and the workspace; /dev/tcp and
// /dev/udp ask. The files a known program's arguments read and write
// (cp's destination, sed -i, sort -o, git diff --output, …) obey deny
// rules in every mode. cd, pushd and env -C are followed to every
// directory the line may then be in; after a cd to somewhere known only at
// run time, a relative path may be anywhere. Writes to files that make
// programs run code on their own (.git/, .envrc, .npmrc, shell startup
// files, agent settings: see protected.go) ask in every mode but
// bypassPermissions. Neutral builtins (cd, echo, printf, pwd, true, test,
// …) run without a rule but obey deny and ask rules.
//
// What this guarantees and what it leaves to the sandbox is in
// docs/shell-analysis.md.
//
// # Workspace
//
// The workspace is the session's cwd plus the additional directories.
// Paths are resolved through symlinks (the longest existing prefix, and
// dangling links to their targets) before the check, so a link inside the
// project does not lend the project's permissions to what it points at.
// Deny and ask rules match both the path as given and the resolved one;
// allow rules only the resolved one. A file with several names (hard
// links) is denied when another of its names is (identity.go), and the
// file tools confirm, once they have opened a file, that it is the one
// decided on ([Checker.ConfirmFile]).
//
// # Installation and records
//
// [Checker.Install] puts deny rules in the tool registry's guard point
// (final: nothing can overturn them) and everything else in a pre-execute
// listener that runs outermost and only tightens what inner listeners
// (hooks) decided. Each decision is recorded as a permission/decision
// session event just before the call's tool/call event, with the rule, its
// file and the mode, and tool.Decision.By names the decider
// (`permission:deny rule "Bash(rm:*)" from /p/.dsh/settings.json`,
// `permission:mode acceptEdits`). An ask carries the rules that would
// cover calls like it (tool.Decision.Suggestions, passed on in the
// approval request); the rules an answer accepted (tool.Approval.Rules:
// "allow for this session", an editor's "always reject") become
// permission/rule events in the root session's log, which [SessionRules]
// replays when a session is resumed or loaded.
//
// Trust in a project's own settings is kept by package
// permission/trust.
package permission
