/*
Copyright 2026 The espo-operator Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package controllers_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// scaleProfilesEnv names the folder into which the scale benchmark writes CPU
// profiles of the API server (apiserver.pprof) and of the manager (manager.pprof)
// over the seconds in which the 500 jobs are created and their pods appear; unset,
// it profiles nothing. Read them with "go tool pprof -top FILE".
const scaleProfilesEnv = "ESPO_SCALE_PROFILES"

// scaleProfileSeconds is how long each profile records.
const scaleProfileSeconds = 12

// scaleProfiles is the folder of $ESPO_SCALE_PROFILES, or "" when it is unset.
func scaleProfiles() string { return os.Getenv(scaleProfilesEnv) }

// profileAddr is a free local address for the manager's profiles when the benchmark
// records them, and "" when it does not.
func profileAddr(b *testing.B) string {
	if scaleProfiles() == "" {
		return ""
	}
	return freeLocalAddr(b)
}

// profileFlags are the manager's flags that serve its profiles on addr, none when
// addr is "".
func profileFlags(addr string) []string {
	if addr == "" {
		return nil
	}
	return []string{"--pprof-bind-address", addr}
}

// startProfiles starts recording the API server's and the manager's CPU profiles
// when $ESPO_SCALE_PROFILES is set, and returns a function that waits until both are
// written.
func startProfiles(b *testing.B, mgr *managerProcess) (wait func()) {
	dir := scaleProfiles()
	if dir == "" {
		return func() {}
	}
	apiClient, err := rest.HTTPClientFor(env.Config)
	if err != nil {
		b.Fatal(err)
	}
	query := "/debug/pprof/profile?seconds=" + strconv.Itoa(scaleProfileSeconds)
	done := make(chan error, 2)
	go func() {
		done <- saveProfile(apiClient, strings.TrimSuffix(env.Config.Host, "/")+query, filepath.Join(dir, "apiserver.pprof"))
	}()
	go func() {
		done <- saveProfile(http.DefaultClient, "http://"+mgr.pprofAddr+query, filepath.Join(dir, "manager.pprof"))
	}()
	return func() {
		for range 2 {
			select {
			case err := <-done:
				if err != nil {
					b.Errorf("recording a CPU profile: %v", err)
				}
			case <-time.After(2 * scaleProfileSeconds * time.Second):
				b.Errorf("a CPU profile was not written within %d s", 2*scaleProfileSeconds)
			}
		}
	}
}

// saveProfile GETs the profile at url into the file at path.
func saveProfile(c *http.Client, url, path string) error {
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
