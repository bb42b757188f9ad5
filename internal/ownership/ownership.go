// Package ownership holds the capability tokens that let dsh's own
// capabilities append the session event types they own.
//
// An event type's namespace is the part before its first "/" ("turn" in
// "turn/end"). The namespaces below belong to a capability: only a
// session.Writer made with a token that may write a namespace appends its
// events; Session.Append and a tool's Host.Append refuse them. The
// tokens live in an internal package on purpose: Go lets only packages of
// this module import it, so a plugin or tool that imports dsh's public
// packages can neither name a token nor forge one (the zero Token and nil
// may write nothing owned). A capability keeps its token to itself.
//
// The check is a byte search for "/", a switch on the namespace and a bit
// test, so it costs nothing measurable on the loop's hot path.
//
// [session.Writer]: https://pkg.go.dev/github.com/dshq/dsh/session#Writer
package ownership

// Namespace is an owned event namespace.
type Namespace uint8

// The owned namespaces.
const (
	Turn Namespace = iota
	Step
	User
	Assistant
	Tool
	Context
	Steering
	Prompt
	Approval
	Compact
	Subagent
	Hook
	Permission
	Checkpoint
	count
)

var names = [count]string{"turn", "step", "user", "assistant", "tool", "context", "steering", "prompt", "approval",
	"compact", "subagent", "hook", "permission", "checkpoint"}

// String is the namespace as it appears in event types.
func (n Namespace) String() string {
	if n < count {
		return names[n]
	}
	return "?"
}

// Token is the capability to append the events of some namespaces.
type Token struct {
	name string
	may  uint32
}

// Name says who holds the token ("the loop").
func (t *Token) Name() string {
	if t == nil {
		return "nobody"
	}
	return t.name
}

// May reports whether the token may append events of namespace n.
func (t *Token) May(n Namespace) bool { return t != nil && t.may&(1<<n) != 0 }

func token(name string, ns ...Namespace) *Token {
	t := &Token{name: name}
	for _, n := range ns {
		t.may |= 1 << n
	}
	return t
}

// The tokens. A namespace's owner is the first token listed in owners.
var (
	// Loop runs turns: it writes their boundaries, the prompt, the model's
	// stream and message, tool calls and results, steering, context and
	// approvals.
	Loop = token("the loop", Turn, Step, User, Assistant, Tool, Context, Steering, Prompt, Approval)
	// Compaction writes its own events and, for /compact on an idle agent,
	// the one-shot turn that holds them; the summary (user/message) and
	// pruned results (tool/result) replace parts of the surface.
	Compaction = token("compaction", Compact, Turn, User, Tool)
	// Subagents records subagent/start and subagent/end in the parent.
	Subagents = token("the subagent service", Subagent)
	// Hooks records hook/invoked and hook/result.
	Hooks = token("the hooks bridge", Hook)
	// Permissions records decisions, session rules and mode changes.
	Permissions = token("the permission checker", Permission)
	// Checkpoints records workspace checkpoints and rewinds and, for a
	// rewind of an idle session, the one-shot turn that holds it.
	Checkpoints = token("the checkpoint capability", Checkpoint, Turn)
)

// Fixtures may write every namespace. Only test fixtures that build whole
// logs hold it (store/storetest, tests); no production path does.
var Fixtures = &Token{name: "test fixtures", may: 1<<count - 1}

var owners = [count]*Token{
	Turn: Loop, Step: Loop, User: Loop, Assistant: Loop, Tool: Loop, Context: Loop, Steering: Loop, Prompt: Loop,
	Approval: Loop, Compact: Compaction, Subagent: Subagents, Hook: Hooks, Permission: Permissions,
	Checkpoint: Checkpoints,
}

// Owner is the capability that owns namespace n.
func Owner(n Namespace) *Token {
	if n < count {
		return owners[n]
	}
	return nil
}

// Of returns the owned namespace of an event type, if it has one.
func Of(typ string) (Namespace, bool) {
	ns := typ
	for i := 0; i < len(typ); i++ {
		if typ[i] == '/' {
			ns = typ[:i]
			break
		}
	}
	switch ns {
	case "turn":
		return Turn, true
	case "step":
		return Step, true
	case "user":
		return User, true
	case "assistant":
		return Assistant, true
	case "tool":
		return Tool, true
	case "context":
		return Context, true
	case "steering":
		return Steering, true
	case "prompt":
		return Prompt, true
	case "approval":
		return Approval, true
	case "compact":
		return Compact, true
	case "subagent":
		return Subagent, true
	case "hook":
		return Hook, true
	case "permission":
		return Permission, true
	case "checkpoint":
		return Checkpoint, true
	}
	return 0, false
}
