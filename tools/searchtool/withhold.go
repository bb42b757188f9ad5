package searchtool

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"

	"github.com/dshq/dsh/search"
	"github.com/dshq/dsh/tool"
)

// The permission layer decides a search by the directory it names, so a
// grep of the project is allowed even when a rule denies reading one of its
// files. Options.Denied closes that gap: every file a result would show is
// checked, and the denied ones are left out. The engine applies the check
// (search's Withhold options) before it counts and caps, so withheld files
// take no place under head_limit or the glob and ls caps; the tools check
// the kept entries again, so an Engine that ignores Withhold cannot leak
// what it was told to hold back.
//
// What the model learns about withheld files: glob and ls say how many
// entries were left out (a count of names, never the names). grep says
// nothing: a count of withheld files with a match would tell the model
// whether a denied file contains a pattern, and a model could read a
// secret one guessed character at a time that way. Its description says
// that denied files are never searched, and the count is kept in the
// result's Meta (recorded in the log, not shown to the model).

// denied returns the call's check, or nil when nothing is withheld.
func (o Options) denied(ctx context.Context, call tool.Call) func(string) bool {
	if o.Denied == nil {
		return nil
	}
	return o.Denied(ctx, call)
}

// deniedNote is the sentence a description gains when results are
// filtered; descriptions without a filter are unchanged.
func deniedNote(opts Options, note string) string {
	if opts.Denied == nil {
		return ""
	}
	return " " + note
}

// withheldMeta records how many entries were withheld, for the log.
func withheldMeta(n int) json.RawMessage {
	if n == 0 {
		return nil
	}
	b, _ := json.Marshal(struct {
		Withheld int `json:"withheld"`
	}{n})
	return b
}

func abs(dir, rel string) string { return filepath.Join(dir, filepath.FromSlash(rel)) }

// sieveGrep drops the denied files the engine still reported and returns
// the number of files withheld in all.
func sieveGrep(res *search.GrepResult, denied func(string) bool) int {
	if denied == nil {
		return res.Withheld
	}
	kept := res.Files[:0]
	for _, f := range res.Files {
		if !denied(abs(res.Dir, f.Path)) {
			kept = append(kept, f)
			continue
		}
		res.Withheld++
		res.TotalFiles--
		res.TotalLines -= f.Count
		if res.Mode == search.Content {
			res.TotalEntries -= len(f.Lines)
		} else {
			res.TotalEntries--
		}
	}
	res.Files = kept
	return res.Withheld
}

// sieveGlob drops the denied files the engine still reported.
func sieveGlob(res *search.GlobResult, denied func(string) bool) int {
	if denied == nil {
		return res.Withheld
	}
	kept := res.Files[:0]
	for _, f := range res.Files {
		if denied(abs(res.Dir, f.Path)) {
			res.Withheld++
			res.Total--
			continue
		}
		kept = append(kept, f)
	}
	res.Files = kept
	return res.Withheld
}

// sieveList drops the denied entries the engine still reported, a
// directory with everything listed under it.
func sieveList(res *search.ListResult, denied func(string) bool) int {
	if denied == nil {
		return res.Withheld
	}
	kept := res.Entries[:0]
	gone := "" // the withheld directory whose entries follow, with a trailing "/"
	for _, e := range res.Entries {
		if gone != "" && strings.HasPrefix(e.Path, gone) {
			continue
		}
		gone = ""
		if denied(abs(res.Dir, e.Path)) {
			res.Withheld++
			if e.Dir {
				gone = e.Path + "/"
			}
			continue
		}
		kept = append(kept, e)
	}
	res.Entries = kept
	return res.Withheld
}
