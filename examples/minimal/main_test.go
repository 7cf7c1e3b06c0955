package main

import (
	"os"
	"testing"
)

// asMainEnv, set in a test binary's environment, makes it minimal itself:
// TestMain runs main with the binary's arguments, so a test can run the
// program as another user without building it.
const asMainEnv = "MINIMAL_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}
