package mcp

import (
	"context"
	"errors"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Resources: servers may offer data (files, records, schemas) as
// resources named by URI. dsh does not hand them to the model as tools;
// the user picks one (the terminal's @server:uri mention) and its content
// is attached to the message, as Claude Code does. Reading one is the
// user's own act, so no permission question is put.

// Resource is one resource a server lists.
type Resource struct {
	// Server is the server's name; URI names the resource on it.
	Server      string
	URI         string
	Name        string
	Title       string
	Description string
	MIMEType    string
	// Size is the content's size in bytes, when the server says (0:
	// unknown).
	Size int64
}

// ResourceContent is one part of a read resource: Text, or Blob (raw
// bytes, already decoded from base64).
type ResourceContent struct {
	URI      string
	MIMEType string
	Text     string
	Blob     []byte
}

// ResourceError is a server whose resources could not be listed.
type ResourceError struct {
	Server string
	Err    error
}

func (e *ResourceError) Error() string {
	return fmt.Sprintf("mcp: server %q: listing resources: %v", e.Server, e.Err)
}

func (e *ResourceError) Unwrap() error { return e.Err }

// maxResources bounds the resources listed from one server (the pages
// are followed until then).
const maxResources = 10_000

// Resources lists the resources of every connected server that advertises
// the resources capability, following the pages of resources/list. Servers
// not connected yet are not started for it (a lazy server lists its
// resources once something else started it). A server whose listing fails
// is reported in errs (and warned about, and shown by doctor), never
// silently left out; the others' resources are still returned.
func (m *Manager) Resources(ctx context.Context) (out []Resource, errs []error) {
	for _, s := range m.snapshot() {
		s.mu.Lock()
		c := s.conn
		if s.state != StateConnected {
			c = nil
		}
		s.mu.Unlock()
		if c == nil || !offersResources(c.sess) {
			continue
		}
		rs, err := s.listResources(ctx, c.sess)
		s.mu.Lock()
		s.resErr = err
		s.mu.Unlock()
		if err != nil {
			if ctx.Err() != nil {
				return out, append(errs, ctx.Err())
			}
			e := &ResourceError{Server: s.cfg.Name, Err: err}
			m.warn(e.Error())
			errs = append(errs, e)
			continue
		}
		out = append(out, rs...)
	}
	return out, errs
}

// offersResources reports whether the server advertised resources.
func offersResources(sess *sdk.ClientSession) bool {
	ir := sess.InitializeResult()
	return ir != nil && ir.Capabilities != nil && ir.Capabilities.Resources != nil
}

func (s *server) listResources(ctx context.Context, sess *sdk.ClientSession) ([]Resource, error) {
	ctx, cancel := context.WithTimeout(ctx, s.m.o.ConnectTimeout)
	defer cancel()
	var out []Resource
	for r, err := range sess.Resources(ctx, nil) {
		if err != nil {
			return out, err
		}
		if r == nil || r.URI == "" {
			continue
		}
		out = append(out, Resource{Server: s.cfg.Name, URI: r.URI, Name: r.Name, Title: r.Title,
			Description: r.Description, MIMEType: r.MIMEType, Size: r.Size})
		if len(out) == maxResources {
			s.m.warn(fmt.Sprintf("mcp: server %q lists more than %d resources; only the first %d are offered", s.cfg.Name, maxResources, maxResources))
			break
		}
	}
	return out, nil
}

// ReadResource reads one resource of the named server (starting the
// server if it is idle), within the call timeout.
func (m *Manager) ReadResource(ctx context.Context, serverName, uri string) ([]ResourceContent, error) {
	s := m.server(serverName)
	if s == nil {
		return nil, fmt.Errorf("mcp: no server %q", serverName)
	}
	timeout := s.cfg.Timeout()
	if timeout <= 0 {
		timeout = m.o.CallTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := s.session(ctx)
	if err != nil {
		return nil, fmt.Errorf("mcp: reading %s: %w", uri, err)
	}
	if !offersResources(c.sess) {
		return nil, fmt.Errorf("mcp: server %q offers no resources", serverName)
	}
	res, err := c.sess.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
	if err != nil {
		return nil, fmt.Errorf("mcp: server %q: reading %s: %w", serverName, uri, err)
	}
	if res == nil || len(res.Contents) == 0 {
		return nil, fmt.Errorf("mcp: server %q: %s has no content", serverName, uri)
	}
	out := make([]ResourceContent, 0, len(res.Contents))
	for _, rc := range res.Contents {
		if rc == nil {
			continue
		}
		out = append(out, ResourceContent{URI: rc.URI, MIMEType: rc.MIMEType, Text: rc.Text, Blob: rc.Blob})
	}
	if len(out) == 0 {
		return nil, errors.New("mcp: " + uri + " has no content")
	}
	return out, nil
}

// resourceError is why the server's last resources/list failed.
func (m *Manager) resourceError(name string) error {
	s := m.server(name)
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.resErr
}
