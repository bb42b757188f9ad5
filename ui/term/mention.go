package term

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/charmbracelet/x/ansi"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/search"
	"github.com/dshq/dsh/tool"
	"github.com/dshq/dsh/tools/fstool"
)

// @-mentions: typing @ and part of a path offers the working directory's
// files and directories (what a search sees: .gitignore and hidden names
// apply), ranked by a fuzzy match; tab takes the first. When the message is
// sent, each @path naming a file is read through the read tool (the
// permission layer, hooks and the read tool's size caps apply, and a read
// that needs approval asks) and attached after the message; a directory is
// attached as its listing.

// maxIndexed bounds the index of one directory tree.
const maxIndexed = 1_000_000

// mentionShown is how many suggestions show under the prompt.
const mentionShown = 6

// mentionIndex is the working directory's paths, listed once in the
// background on the first @ (never on the start path). Suggestions rank
// what is listed so far while the listing streams, so the first ones show
// long before a large tree is listed.
type mentionIndex struct {
	root string
	done chan struct{}
	err  error

	mu    sync.Mutex
	paths []string // directories end in "/"; only appended to
}

// mentionBatch is how many paths are listed between two progress calls.
const mentionBatch = 4096

// newMentionIndex starts the listing: progress is called after each
// batch of paths (and once more when the listing ends).
func newMentionIndex(ctx context.Context, root string, progress func()) *mentionIndex {
	ix := &mentionIndex{root: root, done: make(chan struct{})}
	go func() {
		batch := make([]string, 0, mentionBatch)
		n := 0
		flush := func(last bool) {
			ix.mu.Lock()
			ix.paths = append(ix.paths, batch...)
			ix.mu.Unlock()
			batch = batch[:0]
			if last {
				// done closes before the last call: the UI answers it by
				// asking ready(), and a listing still "not ready" then
				// would leave the prompt saying it is listing, with no
				// later wake-up.
				close(ix.done)
			}
			if progress != nil {
				progress()
			}
		}
		ix.err = search.Default.Paths(ctx, root, false, func(rel string, dir bool) bool {
			if dir {
				rel += "/"
			}
			batch = append(batch, rel)
			n++
			if len(batch) == mentionBatch {
				flush(false)
			}
			return n < maxIndexed
		})
		flush(true)
	}()
	return ix
}

// listed is what the listing found so far: a prefix of the final list
// (safe to read after the lock is released, since it is only appended to).
func (ix *mentionIndex) listed() []string {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.paths[:len(ix.paths):len(ix.paths)]
}

// ready reports whether the listing finished.
func (ix *mentionIndex) ready() bool {
	select {
	case <-ix.done:
		return true
	default:
		return false
	}
}

// scored is a candidate and its match score (higher is better).
type scored struct {
	path  string
	score int
}

// rankPaths returns the best n of paths for query: every query character
// must appear in order (case-insensitively); matches at the start of a path
// element, runs of consecutive characters and matches in the last element
// score higher, long paths lower. An empty query lists the top level.
func rankPaths(paths []string, query string, n int) []string {
	q := []byte(strings.ToLower(query))
	best := make([]scored, 0, n+1)
	worst := func() int { return best[len(best)-1].score }
	for _, p := range paths {
		if len(q) == 0 && strings.Contains(strings.TrimSuffix(p, "/"), "/") {
			continue
		}
		s, ok := fuzzyScore(p, q)
		if !ok || (len(best) == n && s <= worst()) {
			continue
		}
		best = insertBest(best, scored{p, s}, n)
	}
	return scoredPaths(best)
}

// insertBest puts c in best (sorted best first), keeping at most n.
func insertBest(best []scored, c scored, n int) []scored {
	if len(best) == n && n > 0 && c.score <= best[n-1].score {
		return best
	}
	i, _ := slices.BinarySearchFunc(best, c.score, func(e scored, s int) int {
		if e.score >= s {
			return -1
		}
		return 1
	})
	best = slices.Insert(best, i, c)
	if len(best) > n {
		best = best[:n]
	}
	return best
}

func scoredPaths(best []scored) []string {
	out := make([]string, len(best))
	for i, b := range best {
		out[i] = b.path
	}
	return out
}

// fuzzyScore matches the lower-case query q against path p: within the
// last element when it can (what people type is mostly a file's name),
// else across the whole path.
func fuzzyScore(p string, q []byte) (int, bool) {
	base := strings.LastIndexByte(strings.TrimSuffix(p, "/"), '/') + 1
	score, ok := matchFrom(p, q, base, base)
	if ok {
		score += 10
	} else if score, ok = matchFrom(p, q, 0, base); !ok {
		return 0, false
	}
	if len(q) > 0 && strings.Contains(strings.ToLower(p[base:]), string(q)) {
		score += 20
	}
	return score*16 - len(p), true
}

// matchFrom matches q in order against p from index from, greedily.
func matchFrom(p string, q []byte, from, base int) (int, bool) {
	score, qi, prev := 0, 0, -2
	for i := from; i < len(p) && qi < len(q); i++ {
		c := p[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != q[qi] {
			continue
		}
		score++
		if i == 0 || strings.IndexByte("/_-. ", p[i-1]) >= 0 {
			score += 8
		}
		if prev == i-1 {
			score += 5
		}
		if i >= base {
			score += 2
		}
		prev = i
		qi++
	}
	return score, qi == len(q)
}

// mentionWord is the @word the cursor ends, if any: its start in the
// buffer and the text after the @.
func (e *Editor) mentionWord() (start int, query string, ok bool) {
	i := e.pos
	for i > 0 && !unicode.IsSpace(e.buf[i-1]) {
		i--
	}
	if i == e.pos || e.buf[i] != '@' {
		return 0, "", false
	}
	return i, strings.TrimPrefix(string(e.buf[i+1:e.pos]), "\""), true
}

// replace puts s in place of the runes from start to the cursor.
func (e *Editor) replace(start int, s string) {
	rs := []rune(s)
	nb := make([]rune, 0, len(e.buf)-(e.pos-start)+len(rs))
	nb = append(nb, e.buf[:start]...)
	nb = append(nb, rs...)
	nb = append(nb, e.buf[e.pos:]...)
	e.buf = nb
	e.pos = start + len(rs)
}

// mentionToken is how a path is written after @ (quoted when it holds a
// space).
func mentionToken(p string) string {
	if strings.ContainsAny(p, " \t") {
		return `@"` + p + `"`
	}
	return "@" + p
}

// mentionSuggest refreshes the suggestions for the @word at the cursor:
// over what is listed so far while the listing runs.
func (u *ui) mentionSuggest() {
	_, q, ok := u.ed.mentionWord()
	if !ok || u.ed.Searching() {
		u.mentions, u.mentionFiles, u.mentionQuery, u.mentionSeen, u.mentionRanked = nil, nil, "", 0, false
		return
	}
	if u.mentionIx == nil || u.mentionIx.root != u.cwd() {
		u.mentionIx = newMentionIndex(u.ctx, u.cwd(), func() { u.q.push(mentionReady{}) })
		u.mentionRanked = false
	}
	u.listResources()
	paths := u.mentionIx.listed()
	if u.mentionRanked && u.mentionQuery == q && u.mentionSeen <= len(paths) {
		// The same query over a longer listing: the best of what was
		// ranked and of what is new is the best of all.
		if u.mentionSeen < len(paths) {
			u.mentionFiles = rankPaths(append(slices.Clone(u.mentionFiles), paths[u.mentionSeen:]...), q, mentionShown)
			u.mentionSeen = len(paths)
			u.mergeMentions(q)
		}
		return
	}
	u.mentionQuery, u.mentionSeen, u.mentionRanked = q, len(paths), true
	u.mentionFiles = rankPaths(paths, q, mentionShown)
	u.mergeMentions(q)
}

// mergeMentions are the best of the file suggestions and the MCP
// resources for q.
func (u *ui) mergeMentions(q string) {
	if len(u.resTokens) == 0 {
		u.mentions = u.mentionFiles
		return
	}
	best := rankResources(u.resTokens, u.mentionRes, q, mentionShown)
	lq := []byte(strings.ToLower(q))
	for _, f := range u.mentionFiles {
		if s, ok := fuzzyScore(f, lq); ok {
			best = insertBest(best, scored{f, s}, mentionShown)
		}
	}
	u.mentions = scoredPaths(best)
}

// mentionReady: the listing found more paths (or finished); the
// suggestions are ranked again.
type mentionReady struct{}

// mentionAccept completes the @word with the first suggestion: a file ends
// the word, a directory goes on completing inside it.
func (u *ui) mentionAccept() bool {
	start, _, ok := u.ed.mentionWord()
	if !ok || len(u.mentions) == 0 {
		return ok
	}
	p := u.mentions[0]
	tok := mentionToken(p)
	if !strings.HasSuffix(p, "/") || u.isResource(p) {
		tok += " "
	}
	u.ed.replace(start, tok)
	u.mentions, u.mentionRanked = nil, false
	u.mentionSuggest()
	return true
}

// mentionRows are the suggestions under the prompt.
func (u *ui) mentionRows(w int) []string {
	_, _, typing := u.ed.mentionWord()
	listing := typing && u.mentionIx != nil && !u.mentionIx.ready()
	if len(u.mentions) == 0 {
		switch {
		case listing:
			return []string{u.st.Dim(fmt.Sprintf("  listing files… (%d so far)", u.mentionSeen))}
		case typing && u.mentionIx != nil:
			return []string{u.st.Dim("  no matching file")}
		}
		return nil
	}
	rows := make([]string, 0, len(u.mentions)+1)
	for i, p := range u.mentions {
		line := "  " + sanitize(p)
		if i == 0 {
			line = u.st.Accent("› "+sanitize(p)) + u.st.Dim("  (tab)")
		}
		if r, ok := u.mentionRes[p]; ok {
			line += u.st.Dim("  " + sanitize(cmpOr(cmpOr(r.Title, r.Name), "MCP resource")))
		}
		rows = append(rows, ansi.Truncate(line, w, "…"))
	}
	if listing {
		rows = append(rows, u.st.Dim(fmt.Sprintf("  listing files… (%d so far)", u.mentionSeen)))
	}
	return rows
}

// mentionedPaths are the @paths in text that name existing files or
// directories under dir, in order, each once.
func mentionedPaths(text, dir string) []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range mentionWords(text) {
		if seen[p] {
			continue
		}
		if _, err := os.Stat(absIn(dir, p)); err != nil {
			continue // not a path: an e-mail, a handle, a resource
		}
		seen[p] = true
		out = append(out, p)
	}
	return out
}

// mentionWords are what follows each @ that starts a word of text (a
// quoted name whole; trailing punctuation dropped).
func mentionWords(text string) []string {
	var out []string
	for i := 0; i < len(text); i++ {
		if text[i] != '@' || (i > 0 && !unicode.IsSpace(rune(text[i-1]))) {
			continue
		}
		rest := text[i+1:]
		var p string
		if strings.HasPrefix(rest, `"`) {
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				continue
			}
			p = rest[1 : 1+end]
		} else {
			end := strings.IndexFunc(rest, unicode.IsSpace)
			if end < 0 {
				end = len(rest)
			}
			p = strings.TrimRight(rest[:end], ",;:!?)")
		}
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// mentionTag opens an attachment block; the transcript shows such blocks
// as a one-line note, never their content.
const mentionTag = "<mention path="

// maxListed is how many entries a mentioned directory's listing shows.
const maxListed = 200

// attachMentions reads what text mentions, through the agent's tools.
// Failed reads become warnings, not attachments; nothing is silently left
// out.
// An image the model cannot read refuses the whole message (err is a
// *refusal): sent without it, the message would not say what the user
// meant.
func attachMentions(ctx context.Context, reg *tool.Registry, host tool.Host, ap tool.Approver, dir, text string, images imagePolicy) (blocks []llm.Block, warnings []string, err error) {
	mentioned := mentionedPaths(text, dir)
	if !images.accept {
		var refused []string
		for _, p := range mentioned {
			if _, ok := imageType(absIn(dir, p)); ok {
				refused = append(refused, "@"+p)
			}
		}
		if len(refused) > 0 {
			return nil, nil, &refusal{fmt.Sprintf("not sent: %s does not read images (%s); switch with /model, or remove the image and send again",
				images.model, strings.Join(refused, ", "))}
		}
	}
	for n, p := range mentioned {
		abs := p
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(dir, p)
		}
		st, err := os.Stat(abs)
		if err != nil {
			continue
		}
		if mime, ok := imageType(abs); ok && st.Mode().IsRegular() {
			bs, warn := attachImage(ctx, reg, host, ap, n+1, p, abs, mime, st.Size())
			if warn != "" {
				warnings = append(warnings, warn)
			}
			blocks = append(blocks, bs...)
			continue
		}
		if st.IsDir() {
			ents, err := os.ReadDir(abs)
			if err != nil {
				warnings = append(warnings, fmt.Sprintf("@%s: %v", p, err))
				continue
			}
			var b strings.Builder
			for i, e := range ents {
				if i == maxListed {
					fmt.Fprintf(&b, "… and %d more\n", len(ents)-i)
					break
				}
				b.WriteString(e.Name())
				if e.IsDir() {
					b.WriteString("/")
				}
				b.WriteString("\n")
			}
			blocks = append(blocks, llm.Text(fmt.Sprintf("%s%q kind=\"directory\">\nThe user mentioned the directory %s; its entries:\n%s</mention>", mentionTag, p, p, b.String())))
			continue
		}
		args, _ := json.Marshal(map[string]string{"file_path": abs})
		out := reg.Execute(ctx, tool.Call{ID: llm.CallID(fmt.Sprintf("mention-%d", n+1)), Name: "read", Args: args, Raw: string(args), Host: host}, tool.ExecOptions{Approver: ap})
		content := llm.TextOf(out.Result.Content)
		switch {
		case out.Decision.Kind == tool.Deny:
			warnings = append(warnings, fmt.Sprintf("@%s not attached: %s", p, out.Decision.Reason))
			continue
		case out.Approval != nil && !out.Approval.Allow:
			warnings = append(warnings, fmt.Sprintf("@%s not attached: %s", p, out.Approval.Reason))
			continue
		case out.Result.IsError:
			warnings = append(warnings, fmt.Sprintf("@%s not attached: %s", p, strings.TrimPrefix(content, "Error: ")))
			continue
		}
		shown := 0 // the read tool numbers the lines it returns
		for l := range strings.SplitSeq(content, "\n") {
			if num, _, ok := strings.Cut(strings.TrimLeft(l, " "), "\t"); ok && num != "" && strings.Trim(num, "0123456789") == "" {
				shown++
			}
		}
		blocks = append(blocks, llm.Text(fmt.Sprintf("%s%q kind=\"file\" lines=\"%d\"%s>\nThe user mentioned %s; the read tool returned:\n%s\n</mention>", mentionTag, p, shown, readTotal(content), p, strings.TrimRight(content, "\n"))))
	}
	return blocks, warnings, nil
}

// readTotal is the attribute saying that the read tool returned only the
// start of a longer file (its window or byte cap): of="N" with the file's
// line count when the tool knows it, of="more" when not; "" for a whole
// file. The transcript's note says so, so a capped attachment is not taken
// for the whole file.
func readTotal(content string) string {
	switch total, more := fstool.ParseFooter(content); {
	case !more:
		return ""
	case total > 0:
		return fmt.Sprintf(` of="%d"`, total)
	}
	return ` of="more"`
}

// absIn is p made absolute against dir.
func absIn(dir, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

// mentionNote is how the transcript shows an attachment block: its path
// and size, not its content.
func mentionNote(text string) (string, bool) {
	rest, ok := strings.CutPrefix(text, mentionTag)
	if !ok {
		return "", false
	}
	head, _, _ := strings.Cut(rest, "\n")
	var p string
	if _, err := fmt.Sscanf(head, "%q", &p); err != nil {
		p = head
	}
	if strings.Contains(head, `kind="directory"`) {
		return fmt.Sprintf("attached @%s (directory listing)", p), true
	}
	if strings.Contains(head, `kind="image"`) {
		return imageNote(p, head), true
	}
	if strings.Contains(head, `kind="binary"`) {
		return strings.Replace(imageNote(p, head), " (", " (binary ", 1), true
	}
	lines := 0
	if _, attr, ok := strings.Cut(head, ` lines="`); ok {
		_, _ = fmt.Sscanf(attr, "%d", &lines)
	}
	switch _, of, _ := strings.Cut(head, ` of="`); {
	case strings.HasPrefix(of, "more"):
		return fmt.Sprintf("attached @%s (the first %d %s; the file is longer)", p, lines, plural(lines, "line", "lines")), true
	case of != "":
		var total int
		_, _ = fmt.Sscanf(of, "%d", &total)
		return fmt.Sprintf("attached @%s (the first %d of %d lines)", p, lines, total), true
	}
	return fmt.Sprintf("attached @%s (%d %s)", p, lines, plural(lines, "line", "lines")), true
}

// splitMentions separates a prompt's typed blocks from its attachments,
// which are returned as notes.
func splitMentions(content []llm.Block) (typed []llm.Block, notes []string) {
	for _, b := range content {
		if b.Type == llm.BlockText {
			if n, ok := mentionNote(b.Text); ok {
				notes = append(notes, n)
				continue
			}
		}
		if b.Type == llm.BlockImage {
			continue // its header block is the note
		}
		typed = append(typed, b)
	}
	return typed, notes
}
