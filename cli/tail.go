package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
)

func newTailCmd(stdio IO, settingsFile *string) *cobra.Command {
	var (
		n      int
		follow bool
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "tail ID",
		Short: "print the last events of a session; --follow keeps printing them as they commit, from any process or host sharing the store",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, done, err := openStore(stdio, *settingsFile)
			if err != nil {
				return err
			}
			defer done()
			ctx := cmd.Context()
			id := session.ID(args[0])
			h, evs, err := c.Tail(ctx, id, n)
			if err != nil {
				return err
			}
			p := newLivePrinter(stdio.Out, asJSON)
			if !asJSON {
				fmt.Fprintf(stdio.Out, "session %s  (%s, created %s)\n\n", h.ID, h.Cwd, time.UnixMilli(h.CreatedAt).Format(time.RFC3339))
			}
			for _, e := range evs {
				if err := p.print(e); err != nil {
					return err
				}
			}
			if !follow {
				p.end()
				return nil
			}
			next := int64(0)
			if len(evs) > 0 {
				next = evs[len(evs)-1].Seq + 1
			} else if _, last, err := c.Tail(ctx, id, 1); err != nil {
				return err
			} else if len(last) > 0 {
				next = last[0].Seq + 1
			}
			err = c.Follow(ctx, id, next, p.print, store.FollowOptions{})
			p.end()
			if errors.Is(err, context.Canceled) {
				return nil // interrupted: the normal end of a follow
			}
			return err
		},
	}
	cmd.Flags().IntVarP(&n, "lines", "n", 20, "how many of the last events to print first")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing events as they are committed")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print each event as one JSON line (the export format)")
	return cmd
}

// livePrinter prints events as they arrive: streamed text as it streams,
// everything else as the transcript shows it.
type livePrinter struct {
	w         io.Writer
	enc       *json.Encoder
	streaming bool // text chunks printed since the last full event
}

func newLivePrinter(w io.Writer, asJSON bool) *livePrinter {
	p := &livePrinter{w: w}
	if asJSON {
		p.enc = json.NewEncoder(w)
	}
	return p
}

func (p *livePrinter) print(e session.Event) error {
	if p.enc != nil {
		return p.enc.Encode(e)
	}
	switch e.Type {
	case session.TypeAssistantChunk:
		c, err := session.Decode[session.AssistantChunk](e)
		if err == nil && c.Chunk.Type == llm.ChunkTextDelta && c.Chunk.Text != "" {
			_, err = io.WriteString(p.w, c.Chunk.Text)
			p.streaming = true
			return err
		}
		return nil
	case session.TypeAssistantMessage:
		if p.streaming {
			// Its text was streamed already.
			p.streaming = false
			_, err := io.WriteString(p.w, "\n\n")
			return err
		}
	}
	p.end()
	Transcript(p.w, []session.Event{e})
	return nil
}

// end finishes a line of streamed text.
func (p *livePrinter) end() {
	if p.streaming {
		fmt.Fprintln(p.w)
		p.streaming = false
	}
}
