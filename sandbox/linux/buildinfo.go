package linux

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
)

// readBuildInfo reads the build information the Go linker writes into an
// ELF executable's .go.buildinfo section (the format of Go 1.18 and later:
// a 32-byte header whose flags say the version and module strings follow
// inline, each prefixed with its length as a uvarint).
//
// It stands in for debug/buildinfo.ReadFile, which links the readers of
// every object format Go knows (debug/elf, macho, pe, xcoff, plan9obj and
// dwarf) and their package initialisation into every dsh start (issue 25),
// to read one small section of one ELF file.
func readBuildInfo(path string) (*debug.BuildInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sec, err := elfSection(f, ".go.buildinfo")
	if err != nil {
		return nil, fmt.Errorf("build information: %w", err)
	}
	const magic = "\xff Go buildinf:"
	const headerSize, flagsOffset, flagsVersionInl = 32, 15, 0x2
	if len(sec) < headerSize || !bytes.HasPrefix(sec, []byte(magic)) {
		return nil, errors.New("build information: not a Go executable")
	}
	if sec[flagsOffset]&flagsVersionInl == 0 {
		return nil, errors.New("build information: written by a Go release before 1.18")
	}
	rest := sec[headerSize:]
	vers, rest, ok := uvarintString(rest)
	if !ok || vers == "" {
		return nil, errors.New("build information: no Go version")
	}
	mod, _, ok := uvarintString(rest)
	if !ok {
		return nil, errors.New("build information: truncated module information")
	}
	// The module information is framed by 16-byte sentinels the runtime
	// uses to find it; debug.ReadBuildInfo strips them the same way.
	if len(mod) >= 33 && mod[len(mod)-17] == '\n' {
		mod = mod[16 : len(mod)-16]
	} else {
		mod = ""
	}
	bi, err := debug.ParseBuildInfo(mod)
	if err != nil {
		return nil, fmt.Errorf("build information: %w", err)
	}
	bi.GoVersion = vers
	return bi, nil
}

// uvarintString splits a uvarint-length-prefixed string off b.
func uvarintString(b []byte) (string, []byte, bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return "", nil, false
	}
	return string(b[k : k+int(n)]), b[k+int(n):], true
}

// elfSection returns the contents of the section called name in the ELF
// file r (32- or 64-bit, either byte order). Sections over 1 MiB are
// refused: the build information is a few kilobytes.
func elfSection(r io.ReaderAt, name string) ([]byte, error) {
	var ident [16]byte
	if _, err := r.ReadAt(ident[:], 0); err != nil || string(ident[:4]) != "\x7fELF" {
		return nil, errors.New("not an ELF file")
	}
	var bo binary.ByteOrder
	switch ident[5] {
	case 1:
		bo = binary.LittleEndian
	case 2:
		bo = binary.BigEndian
	default:
		return nil, errors.New("ELF file of unknown byte order")
	}
	// Where the section header table sits, how big its entries are, how
	// many there are and which one names the others, and where in an
	// entry its name, offset and size are, for each class.
	var shoff uint64
	var shentsize, shnum, shstrndx uint16
	var nameAt, offAt, sizeAt int
	var word func([]byte) uint64
	switch ident[4] {
	case 1: // ELFCLASS32
		var h [52]byte
		if _, err := r.ReadAt(h[:], 0); err != nil {
			return nil, errors.New("truncated ELF header")
		}
		shoff = uint64(bo.Uint32(h[32:]))
		shentsize, shnum, shstrndx = bo.Uint16(h[46:]), bo.Uint16(h[48:]), bo.Uint16(h[50:])
		nameAt, offAt, sizeAt = 0, 16, 20
		word = func(b []byte) uint64 { return uint64(bo.Uint32(b)) }
	case 2: // ELFCLASS64
		var h [64]byte
		if _, err := r.ReadAt(h[:], 0); err != nil {
			return nil, errors.New("truncated ELF header")
		}
		shoff = bo.Uint64(h[40:])
		shentsize, shnum, shstrndx = bo.Uint16(h[58:]), bo.Uint16(h[60:]), bo.Uint16(h[62:])
		nameAt, offAt, sizeAt = 0, 24, 32
		word = bo.Uint64
	default:
		return nil, errors.New("ELF file of unknown class")
	}
	if int(shentsize) < sizeAt+8 || shnum == 0 || shstrndx >= shnum {
		return nil, errors.New("ELF file without usable section headers")
	}
	table := make([]byte, int(shentsize)*int(shnum))
	if _, err := r.ReadAt(table, int64(shoff)); err != nil {
		return nil, errors.New("truncated ELF section headers")
	}
	const limit = 1 << 20
	read := func(i uint16) ([]byte, error) {
		e := table[int(i)*int(shentsize):]
		off, size := word(e[offAt:]), word(e[sizeAt:])
		if size > limit {
			return nil, fmt.Errorf("ELF section of %d bytes", size)
		}
		b := make([]byte, size)
		if _, err := r.ReadAt(b, int64(off)); err != nil {
			return nil, errors.New("truncated ELF section")
		}
		return b, nil
	}
	names, err := read(shstrndx)
	if err != nil {
		return nil, err
	}
	for i := range shnum {
		at := uint64(bo.Uint32(table[int(i)*int(shentsize)+nameAt:]))
		if at >= uint64(len(names)) {
			continue
		}
		n, _, _ := bytes.Cut(names[at:], []byte{0})
		if string(n) == name {
			return read(i)
		}
	}
	return nil, fmt.Errorf("no %s section", name)
}
