package cni

import (
	"errors"
	"io/fs"

	"golang.org/x/sys/unix"
)

// netnsGone says the namespace at path is gone: the path no longer exists,
// or is no longer a namespace (a runtime's bind mount undone, the file
// left behind).
func netnsGone(path string) (bool, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return true, nil
		}
		return false, err
	}
	return st.Type != unix.NSFS_MAGIC && st.Type != unix.PROC_SUPER_MAGIC, nil
}
