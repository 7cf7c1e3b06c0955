package vm

import (
	"os"
	"path/filepath"
	"strings"
)

// withoutParam is the kernel command-line parameter that lists the modules
// the guest's init leaves out.
const withoutParam = "ipvskit_without"

// LeftOut returns, inside a guest booted with Config.Without, the modules
// its init left out, by name (e.g. "ip_vs_sh"); elsewhere none. It reads
// the running kernel's command line.
func LeftOut() ([]string, error) {
	b, err := os.ReadFile("/proc/cmdline")
	if err != nil {
		return nil, err
	}
	return leftOutFrom(string(b)), nil
}

func leftOutFrom(cmdline string) []string {
	var out []string
	for _, w := range strings.Fields(cmdline) {
		if v, ok := strings.CutPrefix(w, withoutParam+"="); ok {
			for _, m := range strings.Split(v, ",") {
				if m != "" {
					out = append(out, strings.ReplaceAll(m, "-", "_"))
				}
			}
		}
	}
	return out
}

// deps reads the kernel's modules.dep.
func (k Kernel) deps() (moduleDeps, error) {
	f, err := os.Open(filepath.Join(k.ModulesDir, "modules.dep"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseModulesDep(f)
}

// leaveOut checks without against the modules the guest loads (Modules)
// and returns them as the init script matches them.
func (k Kernel) leaveOut(without []string) ([]string, error) {
	d, err := k.deps()
	if err != nil {
		return nil, err
	}
	return d.leaveOut(Modules, without)
}
