package fetch

import (
	"bytes"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/htmlindex"
	"golang.org/x/text/encoding/unicode"
)

// kind is how a response body is handled.
type kind int

const (
	kindUnsupported kind = iota
	kindHTML
	kindMarkdown
	kindText
	kindJSON
)

// classify maps a media type (lower-case, no parameters) to a kind.
func classify(mt string) kind {
	switch {
	case mt == "text/html" || mt == "application/xhtml+xml":
		return kindHTML
	case mt == "text/markdown" || mt == "text/x-markdown":
		return kindMarkdown
	case mt == "application/json" || strings.HasSuffix(mt, "+json") || mt == "application/x-ndjson":
		return kindJSON
	case strings.HasPrefix(mt, "text/"),
		mt == "application/xml" || strings.HasSuffix(mt, "+xml"),
		mt == "application/javascript" || mt == "application/x-javascript" || mt == "application/ecmascript",
		mt == "application/x-sh" || mt == "application/x-yaml" || mt == "application/yaml" || mt == "application/toml",
		mt == "application/sql" || mt == "application/graphql":
		return kindText
	}
	return kindUnsupported
}

// mediaType returns the lower-cased media type and parameters of a
// Content-Type header; an unparseable header yields its part before ";".
func mediaType(ct string) (string, map[string]string) {
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil {
		mt, _, _ = strings.Cut(ct, ";")
		return strings.ToLower(strings.TrimSpace(mt)), nil
	}
	return strings.ToLower(mt), params
}

// sniff guesses the media type of an undeclared (or
// application/octet-stream) body from its first bytes.
func sniff(head []byte) string {
	mt, _ := mediaType(http.DetectContentType(head))
	if mt == "text/plain" {
		t := bytes.TrimSpace(head)
		if len(t) > 0 && (t[0] == '{' || t[0] == '[') {
			return "application/json"
		}
	}
	return mt
}

// decodeText converts body to UTF-8. The charset comes from the
// Content-Type parameter, then (for HTML) a byte-order mark or <meta>
// declaration, then a UTF-8 validity check, with windows-1252 as the last
// resort; labels follow the WHATWG Encoding Standard (so "iso-8859-1" is
// windows-1252). Undecodable bytes become U+FFFD; a UTF-8 BOM is dropped.
func decodeText(body []byte, contentType string, k kind) string {
	enc := pickEncoding(body, contentType, k)
	var out []byte
	if enc != nil && enc != unicode.UTF8 && enc != encoding.Nop {
		if b, err := enc.NewDecoder().Bytes(body); err == nil {
			out = b
		}
	}
	if out == nil {
		out = body
	}
	out = bytes.TrimPrefix(out, []byte("\uFEFF"))
	if !utf8.Valid(out) {
		return strings.ToValidUTF8(string(out), "\uFFFD")
	}
	return string(out)
}

func pickEncoding(body []byte, contentType string, k kind) encoding.Encoding {
	_, params := mediaType(contentType)
	if label := strings.TrimSpace(params["charset"]); label != "" {
		if enc, err := htmlindex.Get(label); err == nil {
			return enc
		}
	}
	if k == kindHTML {
		head := body
		if len(head) > 1024 {
			head = head[:1024]
		}
		// DetermineEncoding looks at the BOM, <meta charset> and UTF-8
		// validity (the Content-Type label was handled above).
		enc, name, _ := charset.DetermineEncoding(head, "text/html")
		if name == "windows-1252" && utf8.Valid(trimPartialRune(body)) {
			return unicode.UTF8
		}
		return enc
	}
	if bytes.HasPrefix(body, []byte{0xFE, 0xFF}) || bytes.HasPrefix(body, []byte{0xFF, 0xFE}) {
		return unicode.UTF16(unicode.BigEndian, unicode.UseBOM)
	}
	if k == kindJSON || utf8.Valid(trimPartialRune(body)) {
		return unicode.UTF8
	}
	enc, _ := htmlindex.Get("windows-1252")
	return enc
}

// trimPartialRune drops an incomplete UTF-8 sequence at the end of b (a
// body cut at the size limit may end in the middle of a character).
func trimPartialRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i > len(b)-utf8.UTFMax; i-- {
		c := b[i]
		if c < utf8.RuneSelf {
			break
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			break
		}
	}
	return b
}
