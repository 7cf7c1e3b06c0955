//go:build !linux

package cni

import (
	"errors"
	"io/fs"
	"os"
)

// netnsGone says the namespace at path is gone: here, only that it does
// not exist (there are no network namespaces to find).
func netnsGone(path string) (bool, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return true, nil
	} else if err != nil {
		return false, err
	}
	return false, nil
}
