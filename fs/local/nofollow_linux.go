package local

import "golang.org/x/sys/unix"

func init() {
	openat2 = func(dir int, name string, flags int, mode uint32) (int, error) {
		return unix.Openat2(dir, name, &unix.OpenHow{
			Flags:   uint64(flags),
			Mode:    uint64(mode),
			Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		})
	}
}
