package testutil

import (
	"os/exec"
	"strconv"
)

func itoa(i int) string { return strconv.Itoa(i) }

func lookPath(name string) (string, error) { return exec.LookPath(name) }
