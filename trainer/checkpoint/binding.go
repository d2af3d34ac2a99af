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

package checkpoint

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"sort"
	"strings"
)

// Binding is what a checkpoint belongs to: the run that wrote it and a digest of each
// part of the configuration that gives its state a meaning. A store resumes only a
// checkpoint whose binding has its own UID and the same digest for every part.
type Binding struct {
	// Run names the run for people ("namespace/name" of its job); it is not compared.
	Run string `json:"run,omitempty"`
	// UID identifies the run (its job's metadata.uid); "" for a run outside
	// Kubernetes, whose checkpoints are then told apart by their parts alone.
	UID string `json:"uid,omitempty"`
	// Parts maps each part's name to its digest (Digest.Sum).
	Parts map[string]string `json:"parts,omitempty"`
}

// admits returns nil when c belongs to b's run, else a *MismatchError that says why.
func (b Binding) admits(c *Checkpoint) error {
	if c.Binding == nil {
		return &MismatchError{Dir: c.Dir, Want: b}
	}
	e := &MismatchError{Dir: c.Dir, Written: c.Binding, Want: b,
		OtherRun: c.Binding.UID != b.UID, Parts: differingParts(c.Binding.Parts, b.Parts)}
	if !e.OtherRun && len(e.Parts) == 0 {
		return nil
	}
	return e
}

// differingParts lists, in name order, the parts whose digests differ between a and
// b, a part missing on one side included.
func differingParts(a, b map[string]string) []string {
	var names []string
	for name, d := range a {
		if b[name] != d {
			names = append(names, name)
		}
	}
	for name := range b {
		if _, ok := a[name]; !ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// MismatchError is Store.Latest's error when the newest intact checkpoint does not
// belong to the store's run.
type MismatchError struct {
	// Dir is the checkpoint's folder.
	Dir string
	// Written is the checkpoint's binding; nil when its manifest (version 1) has none.
	Written *Binding
	// Want is the store's binding.
	Want Binding
	// OtherRun is whether another run (another UID) wrote the checkpoint.
	OtherRun bool
	// Parts are the names of the parts whose digests differ, in name order.
	Parts []string
}

// Error names the checkpoint and what differs.
func (e *MismatchError) Error() string {
	if e.Written == nil {
		return fmt.Sprintf("checkpoint %s records no run and no digest of its spec (an earlier version wrote it), so nothing shows it belongs to this run", e.Dir)
	}
	var why []string
	if e.OtherRun {
		why = append(why, fmt.Sprintf("another run wrote it (%s; this is %s)", describeRun(*e.Written), describeRun(e.Want)))
	}
	if len(e.Parts) > 0 {
		why = append(why, "the spec differs in "+joinAnd(e.Parts))
	}
	return fmt.Sprintf("checkpoint %s belongs to another run: %s", e.Dir, strings.Join(why, "; "))
}

// describeRun names a binding's run: "job ns/name uid U", or a run outside Kubernetes.
func describeRun(b Binding) string {
	if b.UID == "" {
		return "a run outside Kubernetes"
	}
	if b.Run == "" {
		return "uid " + b.UID
	}
	return fmt.Sprintf("job %s uid %s", b.Run, b.UID)
}

// joinAnd joins words as a list: "a", "a and b", "a, b and c".
func joinAnd(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// Digest is a running SHA-256 of values in their JSON encoding (struct fields in
// order, map keys sorted: the same values give the same digest), for a Binding's
// parts.
type Digest struct {
	h   hash.Hash
	enc *json.Encoder
	err error
}

// NewDigest returns an empty digest.
func NewDigest() *Digest {
	h := sha256.New()
	return &Digest{h: h, enc: json.NewEncoder(h)}
}

// Add appends v's JSON encoding; the first value that does not encode is Sum's error.
func (d *Digest) Add(v any) *Digest {
	if d.err == nil {
		if err := d.enc.Encode(v); err != nil {
			d.err = fmt.Errorf("checkpoint: digesting %T: %w", v, err)
		}
	}
	return d
}

// Sum returns the hex SHA-256 of everything added.
func (d *Digest) Sum() (string, error) {
	if d.err != nil {
		return "", d.err
	}
	return hex.EncodeToString(d.h.Sum(nil)), nil
}
