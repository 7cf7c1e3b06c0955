package vm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Kernel is an extracted, depmod'ed Debian kernel package in the cache.
type Kernel struct {
	Package    string // e.g. linux-image-6.1.0-56-amd64
	Version    string // e.g. 6.1.0-56-amd64
	Vmlinuz    string // path of the kernel image
	ModulesDir string // path of lib/modules/<Version>
}

// metaPackage is the Debian package whose dependency names the current kernel.
const metaPackage = "linux-image-amd64"

var dependsLine = regexp.MustCompile(`(?m)^\s*Depends:\s*(linux-image-\S+)\s*$`)

// kernelPackageFrom picks the kernel package out of `apt-cache depends
// linux-image-amd64`.
func kernelPackageFrom(aptCacheDepends string) (string, error) {
	m := dependsLine.FindStringSubmatch(aptCacheDepends)
	if m == nil {
		return "", fmt.Errorf("apt-cache depends %s names no linux-image package (run apt-get update?)", metaPackage)
	}
	return m[1], nil
}

// EnsureKernel returns the cached kernel, fetching it first if the cache lacks
// the package linux-image-amd64 depends on today. When apt cannot say which
// package that is (no package lists, no network), the newest cached kernel is
// used.
func EnsureKernel(ctx context.Context, cacheDir string, logf func(string, ...any)) (Kernel, error) {
	out, err := exec.CommandContext(ctx, "apt-cache", "depends", metaPackage).Output()
	pkg, perr := kernelPackageFrom(string(out))
	if err != nil || perr != nil {
		if k, cerr := newestCachedKernel(cacheDir); cerr == nil {
			return k, nil
		}
		return Kernel{}, fmt.Errorf("vm: finding the kernel package: %w", errors.Join(err, perr))
	}
	dir := filepath.Join(cacheDir, "kernel", pkg)
	if k, err := loadKernel(pkg, dir); err == nil {
		return k, nil
	}
	logf("vm: fetching %s into %s", pkg, dir)
	if err := fetchKernel(ctx, cacheDir, pkg, dir); err != nil {
		return Kernel{}, err
	}
	return loadKernel(pkg, dir)
}

func fetchKernel(ctx context.Context, cacheDir, pkg, dir string) error {
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(cacheDir, "fetch-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	run := func(dir string, name string, args ...string) error {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("vm: %s %s: %w: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
		}
		return nil
	}
	if err := run(tmp, "apt-get", "download", pkg); err != nil {
		return err
	}
	debs, _ := filepath.Glob(filepath.Join(tmp, "*.deb"))
	if len(debs) != 1 {
		return fmt.Errorf("vm: apt-get download %s left %d .deb files", pkg, len(debs))
	}
	x := filepath.Join(tmp, "x")
	if err := run(tmp, "dpkg", "-x", debs[0], x); err != nil {
		return err
	}
	version, err := kernelVersionIn(x)
	if err != nil {
		return err
	}
	// Debian's package ships no modules.dep; depmod makes it for this tree.
	if err := run(tmp, "depmod", "-b", x, version); err != nil {
		return err
	}
	os.RemoveAll(dir)
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	return os.Rename(x, dir)
}

func kernelVersionIn(root string) (string, error) {
	images, _ := filepath.Glob(filepath.Join(root, "boot", "vmlinuz-*"))
	if len(images) != 1 {
		return "", fmt.Errorf("vm: want one boot/vmlinuz-* in %s, found %d", root, len(images))
	}
	return strings.TrimPrefix(filepath.Base(images[0]), "vmlinuz-"), nil
}

func loadKernel(pkg, dir string) (Kernel, error) {
	version, err := kernelVersionIn(dir)
	if err != nil {
		return Kernel{}, err
	}
	k := Kernel{
		Package:    pkg,
		Version:    version,
		Vmlinuz:    filepath.Join(dir, "boot", "vmlinuz-"+version),
		ModulesDir: filepath.Join(dir, "lib", "modules", version),
	}
	if _, err := os.Stat(filepath.Join(k.ModulesDir, "modules.dep")); err != nil {
		return Kernel{}, fmt.Errorf("vm: kernel in %s is not depmod'ed: %w", dir, err)
	}
	return k, nil
}

func newestCachedKernel(cacheDir string) (Kernel, error) {
	dirs, _ := filepath.Glob(filepath.Join(cacheDir, "kernel", "linux-image-*"))
	sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
	for _, d := range dirs {
		if k, err := loadKernel(filepath.Base(d), d); err == nil {
			return k, nil
		}
	}
	return Kernel{}, errors.New("vm: no kernel in the cache")
}

// EnsureInitramfs returns the path of the initramfs for k with Modules,
// building it if the cache has none for this kernel, module list, init script
// and busybox.
func EnsureInitramfs(k Kernel, cacheDir, busybox string) (string, error) {
	deps, err := k.deps()
	if err != nil {
		return "", err
	}
	order, err := deps.loadOrder(Modules)
	if err != nil {
		return "", fmt.Errorf("vm: kernel %s: %w", k.Version, err)
	}
	bb, err := os.ReadFile(busybox)
	if err != nil {
		return "", fmt.Errorf("vm: busybox (apt-get install busybox-static): %w", err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n%s\n", k.Version, strings.Join(order, " "), initScript)
	h.Write(bb)
	path := filepath.Join(cacheDir, "initramfs-"+hex.EncodeToString(h.Sum(nil))[:16]+".gz")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	tmp, err := os.CreateTemp(cacheDir, "initramfs-*.tmp")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if err := writeInitramfs(tmp, busybox, k.ModulesDir, order); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	return path, os.Rename(tmp.Name(), path)
}
