package docgen

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Lifecycles are the allowed first-level folders under docs/rfc, in the
// order the index lists them.
var Lifecycles = []string{"proposed", "implemented", "rejected"}

// Classes are the allowed second-level folders: a closed set, so a record's
// kind is never a matter of taste in naming.
var Classes = []string{"architecture", "bug-fix", "feature", "process", "simplification", "testing"}

// RequiredSections are the level-2 headings every record carries.
var RequiredSections = []string{"Context", "Decision", "Alternatives considered", "Consequences"}

// Index markers in docs/rfc/README.md. Everything between them is generated.
const (
	BeginIndex = "<!-- BEGIN GENERATED RFC INDEX: run `go generate ./docs/...`; do not edit by hand -->"
	EndIndex   = "<!-- END GENERATED RFC INDEX -->"
)

// Record is one design record, described by its path and first heading.
type Record struct {
	// Path is relative to the rfc directory, with forward slashes:
	// lifecycle/class/YYYY-MM-DD-topic.md.
	Path      string
	Lifecycle string
	Class     string
	Date      string
	Topic     string
	Title     string
}

// Problem is one violated documentation rule.
type Problem struct {
	Path string
	Msg  string
}

func (p Problem) String() string { return p.Path + ": " + p.Msg }

var recordName = regexp.MustCompile(`^(\d{4}-\d{2}-\d{2})-([a-z0-9]+(?:-[a-z0-9]+)*)\.md$`)

// ScanRecords walks rfcDir and returns every well-placed record, sorted by
// path, and the problems found: files or folders outside the
// lifecycle/class layout, misnamed records, impossible dates, records with
// no title, and one topic recorded twice.
func ScanRecords(rfcDir string) ([]Record, []Problem, error) {
	var recs []Record
	var probs []Problem
	err := filepath.WalkDir(rfcDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(rfcDir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		parts := strings.Split(rel, "/")
		switch {
		case len(parts) == 1:
			if d.IsDir() {
				if !slices.Contains(Lifecycles, parts[0]) {
					probs = append(probs, Problem{rel, "unknown lifecycle folder; allowed: " + strings.Join(Lifecycles, ", ")})
					return fs.SkipDir
				}
				return nil
			}
			if rel != "README.md" {
				probs = append(probs, Problem{rel, "only README.md may sit directly in docs/rfc; records go in lifecycle/class/"})
			}
			return nil
		case len(parts) == 2:
			if !d.IsDir() {
				probs = append(probs, Problem{rel, "a record must sit in a class folder: " + parts[0] + "/<class>/YYYY-MM-DD-topic.md"})
				return nil
			}
			if !slices.Contains(Classes, parts[1]) {
				probs = append(probs, Problem{rel, "unknown class folder; allowed: " + strings.Join(Classes, ", ")})
				return fs.SkipDir
			}
			return nil
		case len(parts) == 3 && !d.IsDir():
			r, msg := parseRecordPath(rfcDir, rel)
			if msg != "" {
				probs = append(probs, Problem{rel, msg})
				return nil
			}
			recs = append(recs, r)
			return nil
		default:
			probs = append(probs, Problem{rel, "too deep: records live exactly at lifecycle/class/YYYY-MM-DD-topic.md"})
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
	})
	if err != nil {
		return nil, nil, err
	}
	seen := map[string]string{}
	for _, r := range recs {
		if prev, ok := seen[r.Topic]; ok {
			probs = append(probs, Problem{r.Path, "topic " + r.Topic + " is also recorded at " + prev + "; move a record between lifecycles, never copy it"})
			continue
		}
		seen[r.Topic] = r.Path
	}
	slices.SortFunc(recs, func(a, b Record) int { return strings.Compare(a.Path, b.Path) })
	return recs, probs, nil
}

func parseRecordPath(rfcDir, rel string) (Record, string) {
	parts := strings.Split(rel, "/")
	m := recordName.FindStringSubmatch(parts[2])
	if m == nil {
		return Record{}, "record file names are YYYY-MM-DD-topic.md, topic in lowercase-kebab-case"
	}
	if _, err := time.Parse(time.DateOnly, m[1]); err != nil {
		return Record{}, "the date " + m[1] + " in the file name is not a calendar date"
	}
	b, err := os.ReadFile(filepath.Join(rfcDir, filepath.FromSlash(rel)))
	if err != nil {
		return Record{}, err.Error()
	}
	title := firstHeading(b)
	if title == "" {
		return Record{}, "no title: the first heading must be a level-1 heading (# Title)"
	}
	return Record{Path: rel, Lifecycle: parts[0], Class: parts[1], Date: m[1], Topic: m[2], Title: title}, ""
}

// firstHeading returns the text of the first heading outside code fences
// when it is a level-1 heading, else "".
func firstHeading(b []byte) string {
	hs := Headings(b)
	if len(hs) == 0 || hs[0].Level != 1 {
		return ""
	}
	return hs[0].Text
}

// LintRecord checks a record's body: a "Status:" line naming the lifecycle
// its folder says, and every required section.
func LintRecord(rfcDir string, r Record) []Problem {
	b, err := os.ReadFile(filepath.Join(rfcDir, filepath.FromSlash(r.Path)))
	if err != nil {
		return []Problem{{r.Path, err.Error()}}
	}
	var probs []Problem
	status := regexp.MustCompile(`(?m)^Status:\s*([A-Za-z-]+)`).FindSubmatch(b)
	switch {
	case status == nil:
		probs = append(probs, Problem{r.Path, `no "Status: ` + r.Lifecycle + `" line`})
	case !strings.EqualFold(string(status[1]), r.Lifecycle):
		probs = append(probs, Problem{r.Path, fmt.Sprintf("status says %q but the record sits in %s/", status[1], r.Lifecycle)})
	}
	have := map[string]bool{}
	for _, h := range Headings(b) {
		if h.Level == 2 {
			have[h.Text] = true
		}
	}
	for _, s := range RequiredSections {
		if !have[s] {
			probs = append(probs, Problem{r.Path, "missing section: ## " + s})
		}
	}
	return probs
}

// RenderIndex renders the generated part of docs/rfc/README.md, markers
// included: one table per lifecycle, rows ordered by class, date and topic.
func RenderIndex(recs []Record) string {
	var b strings.Builder
	b.WriteString(BeginIndex + "\n")
	counts := map[string]int{}
	for _, r := range recs {
		counts[r.Lifecycle]++
	}
	fmt.Fprintf(&b, "\n%d records: %d proposed, %d implemented, %d rejected.\n",
		len(recs), counts["proposed"], counts["implemented"], counts["rejected"])
	for _, lc := range Lifecycles {
		var rows []Record
		for _, r := range recs {
			if r.Lifecycle == lc {
				rows = append(rows, r)
			}
		}
		slices.SortFunc(rows, func(a, b Record) int {
			if c := strings.Compare(a.Class, b.Class); c != 0 {
				return c
			}
			if c := strings.Compare(a.Date, b.Date); c != 0 {
				return c
			}
			return strings.Compare(a.Topic, b.Topic)
		})
		fmt.Fprintf(&b, "\n### %s\n\n", strings.ToUpper(lc[:1])+lc[1:])
		if len(rows) == 0 {
			b.WriteString("None.\n")
			continue
		}
		b.WriteString("| Date | Class | Record |\n|---|---|---|\n")
		for _, r := range rows {
			fmt.Fprintf(&b, "| %s | %s | [%s](%s) |\n", r.Date, r.Class, escapeCell(r.Title), path.Clean(r.Path))
		}
	}
	b.WriteString("\n" + EndIndex)
	return b.String()
}

// UpdateIndex replaces the generated part of readme with the index of recs.
func UpdateIndex(readme []byte, recs []Record) ([]byte, error) {
	s := string(readme)
	i := strings.Index(s, BeginIndex)
	j := strings.Index(s, EndIndex)
	if i < 0 || j < 0 || j < i {
		return nil, fmt.Errorf("docgen: README.md lacks the index markers %q … %q", BeginIndex, EndIndex)
	}
	return []byte(s[:i] + RenderIndex(recs) + s[j+len(EndIndex):]), nil
}

// escapeCell makes text safe inside a Markdown table cell.
func escapeCell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.Join(strings.Fields(s), " ")
}
