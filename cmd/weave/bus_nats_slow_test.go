//go:build slow

package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weavehq/weave/bus/bustest"
)

// TestSlowBusServeTwoProcessesOnNATS is TestBusServeTwoServersOnNATS with
// the built binary: the second `weave bus serve` is killed (SIGKILL), and
// its agent reconnects to the first without losing an event.
func TestSlowBusServeTwoProcessesOnNATS(t *testing.T) {
	bin := buildWeave(t)
	url := bustest.StartNATS(t).URL()
	dir := t.TempDir()
	start := func(sock string) *exec.Cmd {
		cmd := exec.Command(bin, "--dir", t.TempDir(), "bus", "serve", "--uds", sock)
		cmd.Env = append(os.Environ(), "WEAVE_BUS_URL="+url, "WEAVE_BUS_TOKEN=", "XDG_CONFIG_HOME="+t.TempDir())
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "uds") {
				go func() {
					for sc.Scan() {
					}
				}()
				return cmd
			}
		}
		t.Fatalf("%s bus serve --uds %s exited before listening", bin, sock)
		return nil
	}
	s1, s2 := filepath.Join(dir, "one.sock"), filepath.Join(dir, "two.sock")
	start(s1)
	second := start(s2)
	checkTwoServers(t, s1, s2, func() {
		if err := second.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = second.Wait()
	})
}
