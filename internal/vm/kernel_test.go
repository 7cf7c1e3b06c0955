package vm

import "testing"

func TestKernelPackageFrom(t *testing.T) {
	got, err := kernelPackageFrom("linux-image-amd64\n  Depends: linux-image-6.1.0-56-amd64\n")
	if err != nil || got != "linux-image-6.1.0-56-amd64" {
		t.Fatalf("got %q, %v", got, err)
	}
	if _, err := kernelPackageFrom("linux-image-amd64\n"); err == nil {
		t.Fatal("no Depends line accepted")
	}
}
